"""The prototype of ``torch_tensor_borrow_from_pyobject``, in the patches' shape.

Two cffi modules, built from ``borrow_build.py``:

- ``shim_ext._entry``: the stable C entry points (``torch_tensor_borrow_from_pyobject``,
  ``torch_is_conj``, ``torch_is_neg``) under their own names, so the bridge finds them
  with ``dlsym`` as it would in libtorch; it links libtorch only;
- ``shim_ext._borrow``: the ``THPVariable`` side, which the entry point reaches through a
  registered interface (a virtual call into another library, as libtorch reaches
  libtorch_python), and ``torch_borrow_direct_from_pyobject``, the same function without
  that indirection (a benchmark row).

Nothing is imported here; ``load()`` does the work. Import torch first: both modules link
against the libtorch that ``import torch`` loaded.
"""

from __future__ import annotations

_loaded = None


def load():
    """Import both modules and register ``_borrow``'s implementation with ``_entry``.

    Returns ``(_entry, _borrow)``; idempotent. Raises ImportError when a module is not
    built or does not load (the message says which), or when ``_borrow`` was built for
    another torch than the one imported (its ``THPVariable`` layout is that torch's:
    ``torch_borrow_built_for()``). Source: ``entry.cpp`` (``torch_borrow_set_impl``) and
    ``borrow.cpp`` (``torch_borrow_impl``).
    """
    global _loaded
    if _loaded is None:
        import sys

        from . import _borrow, _entry

        built_for = _borrow.ffi.string(_borrow.lib.torch_borrow_built_for()).decode()
        torch = sys.modules.get("torch")
        if torch is None or built_for != torch.__version__:
            running = f"torch {torch.__version__} is" if torch else "torch is not"
            raise ImportError(f"shim_ext was built for torch {built_for} but {running} "
                              "imported: import the torch it was built for, or rebuild it")
        _entry.lib.torch_borrow_set_impl(_borrow.lib.torch_borrow_impl())
        _loaded = (_entry, _borrow)
    return _loaded
