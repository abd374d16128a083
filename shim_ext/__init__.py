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
    built or does not load (the message says which). Source: ``entry.cpp``
    (``torch_borrow_set_impl``) and ``borrow.cpp`` (``torch_borrow_impl``).
    """
    global _loaded
    if _loaded is None:
        from . import _borrow, _entry

        _entry.lib.torch_borrow_set_impl(_borrow.lib.torch_borrow_impl())
        _loaded = (_entry, _borrow)
    return _loaded
