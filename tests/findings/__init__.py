"""The generators of ``proposal/findings/``, one module per file written, each run as
``python -P -m findings.<name>`` with ``tests/`` on ``PYTHONPATH`` (the Makefile's
``survey``, ``race-survey`` and ``findings-c-shims``).

``torch_shim_survey`` and ``race_survey`` feed ``hostile``'s catalogue and child
processes to torch and the bridge; ``c_shims`` renders the benchmark's committed
JSON with ``bench.c_shims``. What each runs: ``README.md`` here.
"""
