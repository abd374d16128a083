"""The benchmark evidence, a package cut by role (``bench/README.md`` has the tree).

``python -P -m bench`` runs the suite (``__main__``). ``protocol`` is the timing protocol,
``routes`` the one record of every native route timed and counted, ``scenarios/`` the
pytest-benchmark scenarios, ``native/`` the compiled peers with their builders,
``report/`` the statistics, tables and chart rendered from the JSON. The package is
imported from the checkout through one ``.pth`` file that ``make`` writes into each
environment's site-packages, after site-packages on ``sys.path``, so the installed
``bridge`` always wins over the source tree's uncompiled one.
"""
