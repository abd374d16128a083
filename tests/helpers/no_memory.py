"""Tensors whose storage holds no memory, built on any device, dtype, offset and strides.

torch's data pointer (``TensorImpl::data()``, c10/core/TensorImpl.h) is the storage's base
plus ``itemsize * storage_offset`` bytes, unchecked, so such a tensor reports a small
address nobody allocated. ``freed`` frees a real storage with ``untyped_storage().
resize_(0)`` (as FSDP does; small offsets only); ``placeholder`` uses torch's private
``_construct_storage_from_data_pointer(0, device, nbytes)`` (2.11-2.15; any offset,
nothing allocated). Nothing here reads the elements, and nothing may: repr() would read
address ``storage_offset * itemsize``, so tests that build them use the
``printable_without_memory`` fixture.
"""

from __future__ import annotations

import math

import pytest
import torch

import bridge
from bridge import _bridge
from helpers.parity import assert_refused_alike, paths_here

#: How the bridge's refusal of such a tensor begins, on every path.
KIND = "the tensor has elements but its storage holds no memory"


def span_elements(shape, strides) -> int:
    """Elements from the first to one past the last reachable one (0 without elements)."""
    if math.prod(shape) == 0:
        return 0
    return sum((n - 1) * s for n, s in zip(shape, strides)) + 1


def _device(device) -> torch.device:
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:  # storages need a concrete index
        device = torch.device("cuda", torch.cuda.current_device())
    return device


def freed(shape, strides, offset: int, dtype: torch.dtype, device="cpu") -> torch.Tensor:
    """A tensor of ``shape`` / ``strides`` (elements) at storage ``offset`` (elements)
    whose storage held ``(offset + span) * itemsize`` bytes and was then resized to 0.
    Without elements it needs no bytes (torch never grows a storage for those), so any
    offset is cheap there."""
    device = _device(device)
    span = span_elements(shape, strides)
    nbytes = (offset + span) * dtype.itemsize if span else 0
    storage = torch.UntypedStorage(nbytes, device=device)
    t = torch.empty(0, dtype=dtype, device=device).set_(storage, offset, shape, strides)
    t.untyped_storage().resize_(0)
    return t


def placeholder(shape, strides, offset: int, dtype: torch.dtype, device="cpu") -> torch.Tensor:
    """A tensor of ``shape`` / ``strides`` at storage ``offset`` (elements, any size) over
    a storage whose base is null and which claims just the bytes the tensor spans."""
    device = _device(device)
    nbytes = (offset + span_elements(shape, strides)) * dtype.itemsize
    storage = torch._C._construct_storage_from_data_pointer(0, device, nbytes)
    return torch.empty(0, dtype=dtype, device=device).set_(storage, offset, shape, strides)


BUILDERS = {"freed": freed, "placeholder": placeholder}


def fabricated_address(t: torch.Tensor) -> int:
    """torch's own data pointer for ``t``, after checking that ``t`` is of the kind: it has
    elements, and the pointer is exactly ``storage_offset * itemsize`` (a null base).
    Raises AssertionError otherwise (the premise of a test built on it is false)."""
    assert t.numel() > 0, "a tensor without elements is viewable: not of the kind"
    ptr = t.data_ptr()
    assert ptr == t.storage_offset() * t.element_size(), (
        f"torch {torch.__version__} reports data_ptr {ptr:#x} for storage offset "
        f"{t.storage_offset()} x {t.element_size()} bytes: the base is not null")
    return ptr


def holds_no_memory(t: torch.Tensor) -> bool:
    """Whether ``t`` has elements and torch's data pointer is ``storage_offset * itemsize``
    (a null base). Reads metadata only; False where torch cannot say."""
    try:
        return t.numel() > 0 and t.data_ptr() == t.storage_offset() * t.element_size()
    except Exception:  # no data pointer at all (functorch wrappers): not this kind
        return False


@pytest.fixture
def printable_without_memory(monkeypatch):
    """While the test runs and its report is written, ``repr()`` of a tensor without
    memory prints its metadata instead of reading its elements at the fabricated address
    (a segfault that would hide the failure being reported)."""
    real = torch.Tensor.__repr__

    def metadata_only(self, *args, **kwargs):
        if holds_no_memory(self):
            return (f"<{type(self).__name__} without memory: shape {tuple(self.shape)}, "
                    f"strides {self.stride()}, storage offset {self.storage_offset()}, "
                    f"{self.dtype}, {self.device}>")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "__repr__", metadata_only)


def assert_refused_everywhere(t: torch.Tensor) -> str:
    """``t`` is refused with one BufferError message by every path's view function, by
    ``view`` under each ``set_path``, and by ``_native_loop``; no counter moves. The
    message names the kind and, for a non-null pointer, torch's fabricated address and
    the storage offset. Returns the message."""
    ptr = t.data_ptr()
    msg = assert_refused_alike(t)
    bridge.reset_path_counts()
    for p in paths_here():
        bridge.set_path(p)
        with pytest.raises(BufferError) as via_view:
            bridge.view(t)
        with pytest.raises(BufferError) as via_loop:
            _bridge._native_loop(t, p, 1)
        assert str(via_view.value) == str(via_loop.value) == msg, p
    bridge.set_path("auto")
    assert set(bridge.path_counts().values()) == {0}, bridge.path_counts()
    assert msg.startswith(KIND + " ("), msg
    assert "resize_(0)" in msg and "functionalized" in msg, msg
    if ptr:
        assert f"data_ptr() reports {ptr:#x}, which is storage offset " \
               f"{t.storage_offset()} x {t.element_size()} bytes past address 0" in msg, msg
    else:
        assert "its data pointer is null" in msg, msg
    return msg
