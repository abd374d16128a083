"""Storage extent and memory: a view never describes bytes its storage does not hold.

Two refusals, each on every path and entry point (``view_<path>``, ``view`` after
``set_path``, ``_native_loop``) with one message and no path counter moved. No memory:
torch reports ``base + storage_offset * itemsize`` without checking the base, so a tensor
with elements is refused when that base is 0, whatever the offset (beyond 2**32 bytes
too), dtype, strides or how the memory went (``helpers.no_memory`` builds and checks
them); one without elements is viewed, pointer 0 as torch says. Past the end: elements
reaching past the storage's nbytes (``untyped_storage().resize_(n)``) are refused with
both byte counts.
"""

from __future__ import annotations

import pytest
import torch

import bridge
from bridge import _bridge
from helpers.cases import VIEWABLE, cpu_allocation_error, dtype_name
from helpers.no_memory import (BUILDERS, assert_refused_everywhere, fabricated_address, freed,
                                placeholder, printable_without_memory)
from helpers.expect import torch_answer, view_fields
from helpers.parity import (assert_parity, assert_refused_alike, paths_here,
                            refused_on_every_entry)

# A failing test is reported, never a crash in the report's repr() of its tensor.
pytestmark = pytest.mark.usefixtures(printable_without_memory.__name__)


def _allocatable(dtype):
    why = cpu_allocation_error(dtype)
    if why is not None:
        pytest.skip(f"torch {torch.__version__} cannot allocate {dtype} on the CPU: {why}")


# --- no memory -----------------------------------------------------------------------------
def test_float32_view_at_offset_16_of_an_empty_storage():
    flat = torch.zeros(64)
    p = flat[16:32].view(4, 4)  # a view at storage offset 16
    flat.untyped_storage().resize_(0)  # the storage now holds no memory
    assert fabricated_address(p) == 0x40  # torch's own answer: 16 x 4 bytes past 0
    assert_refused_everywhere(p)


def test_offset_zero_says_the_pointer_is_null():
    t = torch.zeros(3, 4)
    t.untyped_storage().resize_(0)
    assert fabricated_address(t) == 0
    assert_refused_everywhere(t)


# --- offsets, up to and beyond 2**32 bytes ---------------------------------------------------
#: Storage offsets in bytes. ``freed`` allocates the offset before freeing it, so it
#: takes the small ones; ``placeholder`` allocates nothing and takes them all.
SMALL_OFFSETS = [0, 8, 64, 4096, 2**20]
LARGE_OFFSETS = [2**31 - 8, 2**31, 2**32 - 8, 2**32, 2**32 + 8, 2**33, 2**40, 2**48]
OFFSET_DTYPES = [torch.uint8, torch.int16, torch.float32, torch.float64, torch.complex128]


OFFSET_CASES = [pytest.param(freed, b, id=f"freed-{b}") for b in SMALL_OFFSETS] + [
    pytest.param(placeholder, b, id=f"placeholder-{b}") for b in SMALL_OFFSETS + LARGE_OFFSETS]


@pytest.mark.parametrize("dtype", OFFSET_DTYPES, ids=dtype_name)
@pytest.mark.parametrize("build, offset_bytes", OFFSET_CASES)
def test_offsets(build, offset_bytes, dtype):
    offset = offset_bytes // dtype.itemsize
    t = build((3, 5), (5, 1), offset, dtype)
    assert t.storage_offset() == offset
    assert fabricated_address(t) == offset * dtype.itemsize
    assert_refused_everywhere(t)


# --- every dtype ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", VIEWABLE, ids=dtype_name)
@pytest.mark.parametrize("build, offset", [(freed, 16), (placeholder, 2**33 + 3)],
                         ids=["freed-offset-16", "placeholder-offset-2**33+3"])
def test_every_viewable_dtype(build, offset, dtype):
    _allocatable(dtype)
    t = build((2, 3), (3, 1), offset, dtype)
    fabricated_address(t)
    assert_refused_everywhere(t)


# --- strides ------------------------------------------------------------------------------
#: (shape, strides in elements): the layouts of the parity catalogue, by geometry.
STRIDES = {
    "0-d": ((), ()),
    "1-element": ((1,), (1,)),
    "contiguous": ((4, 5), (5, 1)),
    "transposed": ((5, 4), (1, 5)),
    "stepped": ((3, 3), (16, 3)),
    "expanded-stride-0": ((4, 6), (1, 0)),
    "all-stride-0": ((3, 2, 2), (0, 0, 0)),
    "overlapping": ((4, 3), (2, 1)),
    "channels-last": ((2, 3, 4, 5), (60, 1, 15, 3)),
    "9-dims": ((2, 1, 2, 1, 1, 2, 1, 1, 1), (8, 8, 4, 4, 4, 2, 2, 2, 1)),
    "40-dims": (tuple([1] * 39 + [2]), tuple([2] * 39 + [1])),
    "strides-beyond-2**31": ((2, 2), (2**31 + 7, 2**32 + 1)),
}


#: freed allocates the span before freeing it: only the small layouts.
STRIDE_CASES = [pytest.param(build, offset, layout, id=f"{name}-{kind}")
                for name, layout in STRIDES.items()
                for kind, build, offset in (("freed-offset-0", freed, 0),
                                            ("freed-offset-7", freed, 7),
                                            ("placeholder-offset-2**40", placeholder, 2**40))
                if build is placeholder or max(layout[1], default=0) <= 2**20]


@pytest.mark.parametrize("build, offset, layout", STRIDE_CASES)
def test_strides(build, offset, layout):
    shape, strides = layout
    t = build(shape, strides, offset, torch.float32)
    assert (tuple(t.shape), t.stride()) == (shape, strides)
    fabricated_address(t)
    assert_refused_everywhere(t)


# --- tensors without elements stay viewable ------------------------------------------------------
@pytest.mark.parametrize("offset", [0, 16, 2**33, 2**40])
@pytest.mark.parametrize("layout", [((0,), (1,)), ((3, 0, 4), (4, 4, 1)), ((0, 5), (1, 0))],
                         ids=["0", "3x0x4", "0x5-stride-0"])
@pytest.mark.parametrize("build", BUILDERS.values(), ids=BUILDERS.keys())
def test_zero_elements_stay_viewable(build, layout, offset):
    shape, strides = layout
    t = build(shape, strides, offset, torch.float64)
    assert t.numel() == 0 and t.storage_offset() == offset and t.data_ptr() == 0
    for p, v in assert_parity(t).items():  # pointer 0, shape, strides: torch's answers
        assert v.ptr == 0 and v.shape == shape and v.strides == strides, p
    for p in paths_here():
        bridge.set_path(p)
        assert bridge.view(t).ptr == 0
        _bridge._native_loop(t, p, 1)  # raises what view would


# --- the refusal follows the storage, both ways -------------------------------------------------
def test_storage_given_memory_again_is_viewable_again():
    base = torch.arange(64, dtype=torch.float32)
    t = base[16:32].view(4, 4).t()
    storage = base.untyped_storage()
    nbytes = storage.nbytes()
    storage.resize_(0)
    assert_refused_everywhere(t)
    storage.resize_(nbytes)  # new memory (its bytes undefined), same storage object
    base.copy_(torch.arange(64, dtype=torch.float32))
    assert t.data_ptr() == storage.data_ptr() + 16 * 4
    views = assert_parity(t)  # reads the bytes through each view's pointer
    assert all(v.ptr == t.data_ptr() for v in views.values())


def test_real_memory_at_a_large_offset_is_viewed():
    """The check refuses a null base, not a large offset: a real 4 MiB allocation viewed
    near its end is viewed on every path, its bytes read through the pointer."""
    base = torch.arange(2**20, dtype=torch.int32)
    t = base[2**20 - 12:].view(3, 4)[:, 1::2]
    assert t.storage_offset() * t.element_size() >= 2**22 - 48
    assert_parity(t)


def test_every_tensor_sharing_the_storage_is_refused():
    """One storage freed through one tensor: every view of it, whatever its offset, type
    or autograd state, is refused (a Parameter takes the type gate's fast path)."""
    base = torch.randn(10, 8)
    sharing = {
        "base": base,
        "row": base[3],
        "column": base[:, 5],
        "parameter-at-offset": torch.nn.Parameter(base[2:4]),
        "requires-grad-leaf-view": base.detach()[5:].requires_grad_(),
        "set-on-the-storage": torch.empty(0, dtype=torch.int16).set_(
            base.untyped_storage(), 7, (3, 2), (1, 3)),
        "subclass": base[1:].as_subclass(_Plain),
    }
    base.untyped_storage().resize_(0)
    for name, t in sharing.items():
        assert t.untyped_storage().nbytes() == 0, name
        fabricated_address(t)
        assert_refused_everywhere(t)


class _Plain(torch.Tensor):
    """A subclass with no behaviour of its own (the type gate's subtype branch)."""


def test_parameter_freed_in_place_like_fsdp():
    """FSDP frees a parameter's memory between uses by resizing its storage to 0 and
    gives it back before the next use: refused in between, viewed afterwards."""
    p = torch.nn.Parameter(torch.randn(4, 8))
    nbytes = p.untyped_storage().nbytes()
    p.untyped_storage().resize_(0)
    assert_refused_everywhere(p)
    p.untyped_storage().resize_(nbytes)
    with torch.no_grad():
        p.copy_(torch.randn(4, 8))
    assert_parity(p)


# --- placeholders made by torch itself ------------------------------------------------------------
FUNCTIONAL_VIEWS = {
    "argument": lambda x: x,
    "offset-1": lambda x: x[1:],
    "offset-and-step": lambda x: x[3::2],
    "select": lambda x: x.view(4, 3)[2],
    "transposed-offset": lambda x: x.view(4, 3)[1:].t(),
}


@pytest.mark.parametrize("make", FUNCTIONAL_VIEWS.values(), ids=FUNCTIONAL_VIEWS.keys())
def test_inside_functionalize(make):
    """``torch.func.functionalize`` hands its function tensors over a placeholder storage
    (a null base; torch's data_ptr() is storage_offset x itemsize) inside a
    FunctionalTensorWrapper, whose sizes, strides and device the C++ subclass computes:
    refused for that (its metadata is not plain C++ state) on every path, before any
    getter could report the fabricated address."""
    seen = []

    def fn(x):
        t = make(x)
        fabricated_address(t)
        seen.append(assert_refused_alike(t))
        return x + 1

    torch.func.functionalize(fn)(torch.arange(12.0))
    assert len(seen) == 1
    assert seen[0].startswith("this Tensor's sizes and strides are computed by a TensorImpl "
                              "subclass (functionalized, "), seen[0]


# --- elements past the storage's end ----------------------------------------------------------
PAST = r"^the tensor's elements reach past the end of its storage: storage offset \d+ "


def _shrunk(make, keep_bytes):
    t = make()
    t.untyped_storage().resize_(keep_bytes)
    return t


#: (tensor maker over a fresh 64-float storage, bytes the storage keeps). Each reaches
#: past what is kept by at least one byte.
SHRUNK = {
    "offset-view": (lambda: torch.zeros(64)[16:32].view(4, 4), 32),
    "one-byte-short": (lambda: torch.zeros(64, dtype=torch.uint8)[1:], 63),
    "whole-tensor": (lambda: torch.zeros(8, 8), 64 * 4 - 4),
    "transposed": (lambda: torch.zeros(8, 8).t(), 200),
    "stepped": (lambda: torch.zeros(64)[::9], 64 * 4 - 1),
    "expanded-stride-0": (lambda: torch.zeros(64)[60:61].expand(5, 3), 60 * 4 + 3),
    "0-d-at-offset": (lambda: torch.zeros(64)[63], 63 * 4),
    "9-dims": (lambda: torch.zeros([2] * 9, dtype=torch.float16), 1000),
    "parameter": (lambda: torch.nn.Parameter(torch.zeros(4, 8)), 64),
    "subclass": (lambda: torch.zeros(64)[8:].as_subclass(_Plain), 100),
}


@pytest.mark.parametrize("make, keep", SHRUNK.values(), ids=SHRUNK.keys())
def test_shrunk_storage_is_refused(make, keep, path):
    t = _shrunk(make, keep)
    assert t.untyped_storage().nbytes() == keep
    extent = (t.storage_offset() + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
              + 1) * t.element_size()
    assert t.numel() and extent > keep  # the premise: torch describes bytes past the end
    bridge.reset_path_counts()
    msg = refused_on_every_entry(t, path, PAST)
    assert f"reach byte {extent}, but the storage holds {keep} bytes" in msg, msg
    assert "resize_()" in msg
    assert set(bridge.path_counts().values()) == {0}


#: Tensors that fit their storage exactly, or hold no elements: viewed.
FITTING = {
    "exact-fit": (lambda: torch.arange(64.0)[16:32].view(4, 4), 128),
    "expanded-stride-0-fits": (lambda: torch.arange(64.0)[:1].expand(7, 9), 4),
    "stepped-fits": (lambda: torch.arange(64.0)[::9], 64 * 4),
    "zero-elements-at-offset": (lambda: torch.zeros(64)[40:40].view(0, 4), 16),
}


@pytest.mark.parametrize("make, keep", FITTING.values(), ids=FITTING.keys())
def test_tensors_inside_their_storage_are_viewed(make, keep):
    t = _shrunk(make, keep)
    assert_parity(t, read=t.numel() > 0)


def test_storage_grown_back_is_viewed_again(path, view_on):
    base = torch.arange(64.0)
    t = base[16:32].view(4, 4).t()
    base.untyped_storage().resize_(64)
    refused_on_every_entry(t, path, PAST)
    base.untyped_storage().resize_(256)
    base.copy_(torch.arange(64.0))
    assert view_fields(view_on(t)) == torch_answer(t)
