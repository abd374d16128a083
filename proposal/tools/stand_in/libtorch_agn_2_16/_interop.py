"""``_interop`` of the patch's test extension, in ctypes over the prototype (``shim_ext``).

Each function mirrors the one of the same name in the patch's
``csrc/pyobject_interop_module.cpp``: the same C calls in the same order, the
same result tuple, and a ``RuntimeError`` carrying the shim's per-thread
message (``torch_exception_get_what_without_backtrace``) on failure.

Functions are called through ``ctypes.PyDLL``, which keeps the GIL held as a C
extension does; ``borrow_without_gil`` uses ``ctypes.CDLL``, which releases it.
"""

from __future__ import annotations

import ctypes
import gc
import functools
import pathlib

import torch

import shim_ext

_SUCCESS = 0
_HANDLE = ctypes.c_void_p


@functools.cache
def _libs() -> tuple[ctypes.PyDLL, ctypes.CDLL, ctypes.PyDLL]:
    """(shim with GIL held, shim with GIL released, libtorch_cpu), loaded once."""
    entry, _ = shim_ext.load()  # the entry points, their implementation registered
    shim_path = entry.__file__
    torch_cpu = pathlib.Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
    with_gil, without_gil, cpu = (ctypes.PyDLL(shim_path), ctypes.CDLL(shim_path),
                                  ctypes.PyDLL(str(torch_cpu)))
    for lib in (with_gil, without_gil):
        lib.torch_tensor_borrow_from_pyobject.argtypes = [ctypes.py_object,
                                                          ctypes.POINTER(_HANDLE)]
        lib.torch_tensor_borrow_from_pyobject.restype = ctypes.c_int32
    cpu.torch_exception_get_what_without_backtrace.restype = ctypes.c_char_p
    return with_gil, without_gil, cpu


def _raise_shim_error() -> None:
    message = _libs()[2].torch_exception_get_what_without_backtrace()
    raise RuntimeError(message.decode())


def _borrow(lib, obj) -> int:
    handle = _HANDLE()
    if lib.torch_tensor_borrow_from_pyobject(obj, ctypes.byref(handle)) != _SUCCESS:
        _raise_shim_error()
    return handle.value


def borrow_handle(obj) -> int:
    """The borrowed handle as an int (nothing to free)."""
    return _borrow(_libs()[0], obj)


def borrow_without_gil(obj) -> int:
    """Call the shim with the GIL released, which it must refuse."""
    return _borrow(_libs()[1], obj)


def borrow_metadata(obj) -> tuple:
    """(data_ptr, sizes, strides, storage_offset, dtype, device_type,
    device_index) read through the borrowed handle. Every ctypes read makes a Python
    object, so garbage collection is held off until the last field is read: the C
    module copies everything before it makes its first object, and this stand-in must
    not let a collection (and a ``__del__`` that changes the tensor) run in between."""
    shim, _, cpu = _libs()
    enabled = gc.isenabled()
    gc.disable()
    try:
        handle = _HANDLE(_borrow(shim, obj))
        data_ptr, dim = ctypes.c_void_p(), ctypes.c_int64()
        sizes, strides = ctypes.POINTER(ctypes.c_int64)(), ctypes.POINTER(ctypes.c_int64)()
        storage_offset = ctypes.c_int64()
        dtype, device_type, device_index = ctypes.c_int32(), ctypes.c_int32(), ctypes.c_int32()
        calls = [
            (cpu.aoti_torch_get_data_ptr, data_ptr),
            (cpu.aoti_torch_get_dim, dim),
            (cpu.aoti_torch_get_sizes, sizes),
            (cpu.aoti_torch_get_strides, strides),
            (cpu.aoti_torch_get_storage_offset, storage_offset),
            (cpu.aoti_torch_get_dtype, dtype),
            (cpu.aoti_torch_get_device_type, device_type),
            (cpu.aoti_torch_get_device_index, device_index),
        ]
        for function, out in calls:
            if function(handle, ctypes.byref(out)) != _SUCCESS:
                _raise_shim_error()
        n = dim.value
        return (
            data_ptr.value or 0,
            tuple(sizes[i] for i in range(n)),
            tuple(strides[i] for i in range(n)),
            storage_offset.value,
            dtype.value,
            device_type.value,
            device_index.value,
        )
    finally:
        if enabled:
            gc.enable()


def borrow_view(obj) -> tuple:
    """(dim, sizes, strides, is_conj, is_neg, dim of to_owned()): what the patch's module
    reads through torch::stable::BorrowedTensor, here through the same C functions
    (the prototype's torch_is_conj / torch_is_neg; aoti_torch_new_tensor_handle, then
    aoti_torch_delete_tensor_object for the owned copy)."""
    shim, _, cpu = _libs()
    _, sizes, strides, *_ = borrow_metadata(obj)
    handle = _HANDLE(_borrow(shim, obj))
    flags = []
    for name in ("torch_is_conj", "torch_is_neg"):
        out = ctypes.c_bool()
        if getattr(shim, name)(handle, ctypes.byref(out)) != _SUCCESS:
            _raise_shim_error()
        flags.append(out.value)
    owned, dim = _HANDLE(), ctypes.c_int64()
    if cpu.aoti_torch_new_tensor_handle(handle, ctypes.byref(owned)) != _SUCCESS:
        _raise_shim_error()
    try:
        if cpu.aoti_torch_get_dim(owned, ctypes.byref(dim)) != _SUCCESS:
            _raise_shim_error()
    finally:
        cpu.aoti_torch_delete_tensor_object(owned)
    return (len(sizes), sizes, strides, *flags, dim.value)


def _pointer_and_sizes(cpu, handle) -> tuple:
    """(data_ptr, sizes) read through ``handle``."""
    data_ptr, dim, sizes = ctypes.c_void_p(), ctypes.c_int64(), ctypes.POINTER(ctypes.c_int64)()
    for function, out in ((cpu.aoti_torch_get_data_ptr, data_ptr), (cpu.aoti_torch_get_dim, dim),
                          (cpu.aoti_torch_get_sizes, sizes)):
        if function(handle, ctypes.byref(out)) != _SUCCESS:
            _raise_shim_error()
    return data_ptr.value or 0, tuple(sizes[i] for i in range(dim.value))


def read_around_clone(obj, owned: bool) -> tuple:
    """((data_ptr, sizes) before, (data_ptr, sizes) after) read through one handle of
    ``obj`` around one operator call that takes it as its input (``aoti_torch_clone``,
    which a ``TorchDispatchMode`` active on this thread enters): the borrowed handle, or,
    when ``owned``, torch's owning one (``torch_tensor_from_pyobject``, 2.14+; before
    2.14, ``aoti_torch_new_tensor_handle`` of the borrowed one, the same heap copy of
    the ``at::Tensor``)."""
    shim, _, cpu = _libs()
    handle = _HANDLE(_borrow(shim, obj)) if not owned else _owned_handle(shim, cpu, obj)
    try:
        before = _pointer_and_sizes(cpu, handle)
        clone = _HANDLE()
        if cpu.aoti_torch_clone(handle, ctypes.byref(clone)) != _SUCCESS:
            _raise_shim_error()
        cpu.aoti_torch_delete_tensor_object(clone)
        after = _pointer_and_sizes(cpu, handle)
    finally:
        if owned:
            cpu.aoti_torch_delete_tensor_object(handle)
    return before, after


def _owned_handle(shim, cpu, obj) -> ctypes.c_void_p:
    """An owning handle of ``obj``, which the caller deletes."""
    handle = _HANDLE()
    if hasattr(cpu, "torch_tensor_from_pyobject"):
        cpu.torch_tensor_from_pyobject.argtypes = [ctypes.py_object, ctypes.POINTER(_HANDLE)]
        done = cpu.torch_tensor_from_pyobject(obj, ctypes.byref(handle))
    else:
        done = cpu.aoti_torch_new_tensor_handle(_HANDLE(_borrow(shim, obj)), ctypes.byref(handle))
    if done != _SUCCESS:
        _raise_shim_error()
    return handle
