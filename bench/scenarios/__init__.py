"""The pytest-benchmark scenarios ``python -P -m bench`` runs (``bench_*.py``, one group
per scenario, numbered as in the report) and their helpers (``workload``, ``launch``);
scenario F, which needs a handle, has a folder of its own: ``bench/c_shims/``."""
