"""Stand-in for the patch's ``libtorch_agn_2_16`` test extension.

The patch's extension is a C++ module built against a PyTorch that has
``torch_tensor_borrow_from_pyobject``; no released torch has it, so
``tests/proposal/test_patches.py`` runs the patch's Python test against this package
instead: the same ``_interop`` functions, written with ctypes over the
prototype shim that ``shim_ext._borrow`` exports (the bodies the patch adds).
"""

from . import _interop

__all__ = ["_interop"]
