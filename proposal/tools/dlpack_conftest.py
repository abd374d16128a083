"""pytest hook file that ``make patch-check`` writes beside the patched ``test/test_dlpack.py``
(as ``conftest.py``; in neither the patch nor the base): the DLPack series' tests run
against the series' own code, not the torch 2.15.0 wheel's.

``$PATCHED_DLPACK_LIB`` names a library built from ``proposal/fixes/patched_dlpack.cpp``:
both structs' ``DLTensorFromPyObjectNoSync`` and ``ManagedTensorFromPyObjectNoSync`` cut
out of the patched ``Module.cpp``. Before any test imports torch's tables, each of the
wheel's two exchange tables (``torch._C._dlpack_exchange_api()`` and
``torch._C._const_dlpack_exchange_api()``) is copied, its
``dltensor_from_py_object_no_sync`` and ``managed_tensor_from_py_object_no_sync`` slots
replaced by the patched functions (every other slot stays the wheel's), and ``torch._C``
hands out capsules of the copies, as does ``torch.Tensor.__dlpack_c_exchange_api__``.
"""

from __future__ import annotations

import ctypes
import os

import torch

_LIB = ctypes.CDLL(os.environ["PATCHED_DLPACK_LIB"])
_LIB.patched_dlpack_slot.restype = ctypes.c_void_p
_LIB.patched_dlpack_slot.argtypes = [ctypes.c_int]
_LIB.patched_dlpack_managed_slot.restype = ctypes.c_void_p
_LIB.patched_dlpack_managed_slot.argtypes = [ctypes.c_int]
_LIB.patched_dlpack_managed_offset.restype = ctypes.c_size_t
_MANAGED_OFFSET = _LIB.patched_dlpack_managed_offset()
_LAYOUT = (ctypes.c_size_t * 2)()
_LIB.patched_dlpack_layout(_LAYOUT)
_OFFSET, _SIZE = _LAYOUT[0], _LAYOUT[1]
_NAME = b"dlpack_exchange_api"

_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_pointer.restype, _pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
_new = ctypes.pythonapi.PyCapsule_New
_new.restype, _new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

# The copies live as long as the process (the capsules point into them).
_TABLES = []


def _patched_capsule(wheel_capsule, read_only: int):
    table = (ctypes.c_char * _SIZE)()
    ctypes.memmove(table, _pointer(wheel_capsule, _NAME), _SIZE)
    ctypes.c_void_p.from_address(ctypes.addressof(table) + 8).value = None  # header.prev_api
    ctypes.c_void_p.from_address(ctypes.addressof(table) + _OFFSET).value = \
        _LIB.patched_dlpack_slot(read_only)
    ctypes.c_void_p.from_address(ctypes.addressof(table) + _MANAGED_OFFSET).value = \
        _LIB.patched_dlpack_managed_slot(read_only)
    _TABLES.append(table)
    return _new(ctypes.addressof(table), _NAME, None)


_WRITABLE = _patched_capsule(torch._C._dlpack_exchange_api(), 0)
# torch before 2.14 has no read-only table (pytorch/pytorch#188554): the writable one alone.
_READ_ONLY = (_patched_capsule(torch._C._const_dlpack_exchange_api(), 1)
              if hasattr(torch._C, "_const_dlpack_exchange_api") else None)
# to_dlpack and __dlpack__ (torch._C._to_dlpack, _to_dlpack_versioned), when the library
# has the series' own (patched_dlpack.cpp built with PATCHED_DLPACK_TO_DLPACK): a builtin
# function each, made by the library under the GIL (ctypes.PyDLL).
if hasattr(_LIB, "patched_dlpack_to_dlpack"):
    import torch.utils.dlpack

    _to_dlpack = ctypes.PyDLL(os.environ["PATCHED_DLPACK_LIB"]).patched_dlpack_to_dlpack
    _to_dlpack.restype, _to_dlpack.argtypes = ctypes.py_object, [ctypes.c_int]
    torch._C._to_dlpack = torch.utils.dlpack.to_dlpack = _to_dlpack(0)
    torch._C._to_dlpack_versioned = _to_dlpack(1)
torch._C._dlpack_exchange_api = lambda: _WRITABLE
if _READ_ONLY is not None:
    torch._C._const_dlpack_exchange_api = lambda: _READ_ONLY
torch.Tensor.__dlpack_c_exchange_api__ = _WRITABLE
