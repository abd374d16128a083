"""Scenario F, the consumer that needs a handle: ATen ops called from C through torch's
generated C shims on tensors from Python, its input handles owned, owned with the
interpreter fix, or borrowed. The C shims are the ``aoti_torch_<dev>_*`` functions of
``torch/csrc/inductor/aoti_torch/generated/c_shim_<dev>.h``, which torchgen generates for
the ops of its own fallback list (``inductor_fallback_ops`` in ``torchgen/aoti/fallback_ops.py``),
and the ``aoti_torch_aten_*`` ones of ``c_shim_aten.h`` (its ``aten_shimified_ops``).

- ``c_shims.cpp``, ``to_pyobject.cpp``, ``consumer_build.py``, ``consumer.py``: the
  consumer (a CPython extension) and its build; ``Consumer(torch)`` loads it.
- ``scenario.py`` (with ``conftest.py``), ``run.py``: the timed run
  (``make bench-c-shims``); ``callgrind.py``: its instruction counts
  (``make callgrind-c-shims``); ``report.py``: both as markdown. The findings
  built on them, ``proposal/findings/c-shims.md``, are written by
  ``tests/findings/c_shims.py`` (``make findings-c-shims``).
"""
