"""The benchmark scenarios' options, fixtures and JSON hooks (``bench/scenarios/conftest.py``)
for ``scenario.py``, which runs from this folder."""

from bench.scenarios.conftest import *  # noqa: F401,F403 (pytest reads them off this module)
