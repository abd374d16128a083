"""The pytest-benchmark scenarios ``python -P -m bench`` runs (``bench_*.py``, one group
per scenario, numbered as in the report) and their helpers (``workload``, ``launch``);
``fallback_ops_bench`` is scenario F, run by ``bench/fallback_ops_run.py`` alone."""
