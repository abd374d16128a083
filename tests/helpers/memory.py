"""Read a tensor's elements two independent ways: through a view's raw address, and
through torch's own storage bookkeeping.

``raw_bytes(view)`` dereferences ``view.ptr`` with the view's shape, strides (elements)
and itemsize (bytes), as a C consumer of the handle would; it never asks torch anything.
``torch_bytes(t)`` asks torch for the same elements through ``t.untyped_storage()``,
``t.storage_offset()`` and ``t.stride()``, never touching a pointer. Equal byte strings
mean the view's address really is where torch keeps the data, not merely an equal number.

Both return one flat ``numpy.uint8`` array: the elements in C (row-major) index order,
each element's ``itemsize`` bytes in memory order. Byte comparison covers every dtype
(float8, bits, complex32, ...) whether or not numpy knows it, and is exact for NaN
patterns that a value comparison would call unequal.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np
import torch


def span_bytes(shape, strides, itemsize) -> int:
    """Bytes from the first element's address to one past the last reachable element.

    ``strides`` in elements (never negative in torch); 0 for a tensor with no elements.
    """
    if math.prod(shape) == 0:
        return 0
    return (sum((n - 1) * s for n, s in zip(shape, strides)) + 1) * itemsize


def raw_array(ptr: int, shape, strides, itemsize: int, dtype=None) -> np.ndarray:
    """A numpy array over raw memory at ``ptr`` (no copy, no ownership).

    ``strides`` in elements; ``dtype`` a numpy dtype of ``itemsize`` bytes, or None for
    opaque ``V<itemsize>`` elements. The memory must stay alive while the array is used:
    whoever calls this holds the object that owns it (a view holds its tensor).
    Raises ValueError for a dtype whose size is not ``itemsize``.
    """
    dt = np.dtype(f"V{itemsize}") if dtype is None else np.dtype(dtype)
    if dt.itemsize != itemsize:
        raise ValueError(f"numpy dtype {dt} has {dt.itemsize} bytes, the view says {itemsize}")
    span = span_bytes(shape, strides, itemsize)
    if span == 0:
        return np.empty(shape, dtype=dt)
    # span is a whole number of elements: (last offset + 1) * itemsize.
    base = np.frombuffer((ctypes.c_char * span).from_address(ptr), dtype=dt)
    return np.lib.stride_tricks.as_strided(
        base, shape=tuple(shape), strides=tuple(s * itemsize for s in strides),
        writeable=False)


def raw_bytes(view) -> np.ndarray:
    """The elements a view describes, read through ``view.ptr`` (flat uint8, C order)."""
    arr = raw_array(view.ptr, view.shape, view.strides, view.itemsize)
    return np.ascontiguousarray(arr).reshape(-1).view(np.uint8)


def torch_bytes(t: torch.Tensor) -> np.ndarray:
    """The elements of ``t`` as torch addresses them (flat uint8, C order).

    Built from torch's own bookkeeping: a uint8 tensor over ``t.untyped_storage()``,
    indexed with ``t.storage_offset()`` and ``t.stride()`` scaled by
    ``t.element_size()``; no pointer is read. Works for every dtype, since only uint8
    tensors are copied.
    """
    k = t.element_size()
    if t.numel() == 0:
        return np.empty(0, dtype=np.uint8)
    storage = t.untyped_storage()
    u8 = torch.empty(0, dtype=torch.uint8).set_(storage, 0, (storage.nbytes(),), (1,))
    # Size-1 dims do not move the address: drop them, so that the extra byte dim fits
    # within torch's 64-dim limit even for a 64-dim tensor.
    dims = [(n, s * k) for n, s in zip(t.shape, t.stride()) if n != 1]
    elems = u8.as_strided((*(n for n, _ in dims), k), (*(s for _, s in dims), 1),
                          t.storage_offset() * k)
    return elems.contiguous().numpy().reshape(-1).copy()


#: numpy dtypes for the torch dtypes numpy has an exact equivalent of.
NUMPY_DTYPES = {
    torch.bool: np.bool_,
    torch.uint8: np.uint8, torch.int8: np.int8,
    torch.int16: np.int16, torch.int32: np.int32, torch.int64: np.int64,
    torch.float16: np.float16, torch.float32: np.float32, torch.float64: np.float64,
    torch.complex64: np.complex64, torch.complex128: np.complex128,
    **{getattr(torch, f"uint{n}"): getattr(np, f"uint{n}") for n in (16, 32, 64)
       if hasattr(torch, f"uint{n}")},
}


def raw_values(view) -> list:
    """The view's elements as Python values (nested lists, like ``Tensor.tolist()``),
    read through ``view.ptr`` with numpy's dtype for ``view.dtype``.

    bfloat16 is read as its 16 raw bits shifted into a float32 (exact). Raises KeyError
    for a dtype numpy cannot interpret.
    """
    if view.dtype == torch.bfloat16:
        bits = raw_array(view.ptr, view.shape, view.strides, 2, np.uint16)
        return (bits.astype(np.uint32) << 16).view(np.float32).tolist()
    arr = raw_array(view.ptr, view.shape, view.strides, view.itemsize,
                    NUMPY_DTYPES[view.dtype])
    return arr.tolist()
