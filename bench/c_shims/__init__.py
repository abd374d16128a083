"""Scenario F, the consumer that needs a handle: ATen ops called from C through torch's
generated fallback shims on tensors from Python, its input handles owned, owned with the
interpreter fix, or borrowed.

- ``c_shims.cpp``, ``to_pyobject.cpp``, ``consumer_build.py``, ``consumer.py``: the
  consumer (a CPython extension) and its build; ``Consumer(torch)`` loads it.
- ``scenario.py`` (with ``conftest.py``), ``run.py``: the timed run
  (``make bench-c-shims``); ``callgrind.py``: its instruction counts
  (``make callgrind-c-shims``); ``report.py``: both as markdown. The findings
  built on them, ``proposal/findings/c-shims.md``, are written by
  ``tests/findings/c_shims.py`` (``make findings-c-shims``).
"""
