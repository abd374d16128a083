"""Parity: every path views every dtype, layout and kind of tensor exactly as torch does.

The claim under test is "the borrowed handle is a drop-in replacement": for each case,
the views made through ``torch_tensor_borrow_from_pyobject`` (borrow), torch's owned
``torch_tensor_from_pyobject`` (owned, 2.14+) and the ``THPVariable`` offset (fallback,
2.10+) equal torch's own accessors and each other field by field, and the bytes read
through each view's pointer are the bytes torch addresses. Each test runs every path
that must exist on this torch (``helpers.parity.paths_here``), not only the chosen one.
"""

from __future__ import annotations

import ctypes
import warnings

import numpy as np
import pytest
import torch

import bridge
from helpers.cases import (LAYOUTS, REFUSED, VIEWABLE, cpu_allocation_error, dtype_layout_cases,
                           dtype_name, filled, refusal_kind, torch_dtypes)
from helpers.expect import torch_answer, view_fields
from helpers.memory import NUMPY_DTYPES, raw_values
from helpers.parity import VIEWS, assert_parity, assert_refused_alike, paths_here


def _allocatable(dtype):
    why = cpu_allocation_error(dtype)
    if why is not None:
        pytest.skip(f"torch {torch.__version__} cannot allocate {dtype} on the CPU: {why}")


# --- dtypes x layouts ----------------------------------------------------------------------
def test_every_torch_dtype_is_classified():
    """The enumeration found torch's dtypes and splits them into viewable and refused."""
    names = {dtype_name(d) for d in torch_dtypes()}
    assert {"float32", "bfloat16", "complex32", "bool", "uint64", "float8_e4m3fn",
            "qint8", "int4"} <= names, names
    assert set(VIEWABLE) | set(REFUSED) == set(torch_dtypes())
    assert not set(VIEWABLE) & set(REFUSED)


@pytest.mark.parametrize("dtype, layout", dtype_layout_cases(VIEWABLE))
def test_dtype_layout_parity(dtype, layout):
    _allocatable(dtype)
    t = layout.build(dtype)
    assert t.dtype == dtype  # the builder kept the dtype it was asked for
    assert_parity(t)


#: Each layout after itself and after its neighbours, each order: a view freed after one
#: read is the next read's (views are recycled), so the second read fills a view whose
#: tuples were made for the first (the same sizes and strides, another dimension room,
#: or the same room with other values).
LAYOUT_PAIRS = [pytest.param(a, b, id=f"{a.name}-then-{b.name}")
                for x, y in zip(LAYOUTS, LAYOUTS[1:]) for a, b in ((x, y), (y, x))] + [
                pytest.param(x, x, id=f"{x.name}-then-{x.name}") for x in LAYOUTS]


@pytest.mark.parametrize("first, then", LAYOUT_PAIRS)
def test_a_recycled_view_reads_the_next_layout(first, then):
    """Through the per-path functions, and through ``bridge.view`` on each path (its own
    copy of the read), each second read into a view the first one left."""
    t = then.build(torch.float64)
    for p in paths_here():
        assert_parity(first.build(torch.float32))
        bridge.set_path(p)
        v = bridge.view(t)
        assert (v.path, view_fields(v)) == (p, torch_answer(t))
        del v
    assert_parity(first.build(torch.float32))
    assert_parity(t)


def _same_rank_cases():
    """Tensors of nine dimensions (a view's second inline room) that end a read early:
    elements but no memory (refused), and no elements, with and without storage data."""
    freed = torch.zeros(64)[16:32].view(2, 2, 2, 2, 1, 1, 1, 1, 1)
    freed.untyped_storage().resize_(0)
    return {"elements-no-memory": freed,
            "no-elements": torch.zeros(64)[16:16].view(0, 1, 1, 1, 1, 1, 1, 1, 1),
            "no-elements-no-storage-data":
                torch.empty(0, 5)[:, 2:].view(0, 1, 1, 1, 1, 1, 1, 1, 3)}


@pytest.mark.parametrize("case", ["elements-no-memory", "no-elements",
                                  "no-elements-no-storage-data"])
def test_a_recycled_view_of_the_same_rank_ends_early_alike(case):
    """Into a view whose tuples a nine-dimensional read made (the read that keeps them when
    the values match), a tensor that ends the read early is refused, or viewed, exactly
    as into a fresh view."""
    t = _same_rank_cases()[case]
    for p in paths_here():
        assert_parity(filled((2, 2, 2, 2, 1, 1, 1, 1, 1), torch.float32))
        if case == "elements-no-memory":
            with pytest.raises(BufferError, match="elements but its storage holds no memory"):
                VIEWS[p](t)
        else:
            assert view_fields(VIEWS[p](t)) == torch_answer(t), p


@pytest.mark.parametrize("dtype", REFUSED, ids=dtype_name)
def test_refused_dtypes_get_the_same_error_on_every_path(dtype):
    _allocatable(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.empty(3, dtype=dtype)
    msg = assert_refused_alike(t)
    assert str(dtype) in msg, msg
    if refusal_kind(dtype) == "quantized":
        assert "quantized" in msg and "dequantize()" in msg, msg
    else:
        assert "sub-byte" in msg and "itemsize" in msg, msg


@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8, torch.qint32], ids=dtype_name)
def test_quantized_tensors_from_quantize_per_tensor_are_refused(dtype):
    q = torch.quantize_per_tensor(torch.linspace(-1, 1, 6), 0.1, 3, dtype)
    assert "dequantize()" in assert_refused_alike(q)
    qc = torch.quantize_per_channel(torch.randn(2, 3), torch.tensor([0.1, 0.2]),
                                    torch.tensor([0, 1]), 0, dtype)
    assert "dequantize()" in assert_refused_alike(qc)


# --- values through the pointer ----------------------------------------------------------------
#: Layouts whose values are checked as numbers too: contiguous, strided, offset.
VALUE_LAYOUTS = {
    "contiguous": lambda t: t,
    "transposed": lambda t: t.t(),
    "stepped": lambda t: t[1::2, ::3],
    "offset": lambda t: t[2:, 1:],
    "expanded": lambda t: t[:1].expand(3, 12),
    "0-d-offset": lambda t: t[3, 5],
}


@pytest.mark.parametrize("make", VALUE_LAYOUTS.values(), ids=VALUE_LAYOUTS.keys())
@pytest.mark.parametrize("dtype", [*NUMPY_DTYPES, torch.bfloat16], ids=dtype_name)
def test_values_read_through_the_pointer(dtype, make):
    """numpy reads the elements at view.ptr with the view's shape and strides: they are
    torch's values (``tolist()``), not only the same address."""
    base = (torch.arange(60, dtype=torch.float64) * 0.5 - 7).reshape(5, 12)
    if dtype == torch.bool:
        base = base.remainder(3) > 1
    elif dtype.is_complex:
        base = torch.complex(base, -base)
    t = make(base.to(dtype))
    for p, v in assert_parity(t).items():
        assert raw_values(v) == t.tolist(), p


# --- kinds of tensor ---------------------------------------------------------------------------
class MyTensor(torch.Tensor):
    """A user subclass with no behaviour of its own."""


class LoggingTensor(torch.Tensor):
    """A user subclass that routes every torch call through __torch_function__."""

    calls = 0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls += 1
        return super().__torch_function__(func, types, args, kwargs or {})


def _leaf():
    return torch.randn(3, 4, requires_grad=True)


KINDS = {
    "requires-grad-leaf": _leaf,
    "requires-grad-non-leaf": lambda: _leaf() * 2,
    "non-leaf-view": lambda: (_leaf() + 1)[1:, ::2],
    "detached": lambda: _leaf().detach(),
    "parameter": lambda: torch.nn.Parameter(torch.randn(4, 5)),
    "parameter-data": lambda: torch.nn.Parameter(torch.randn(4, 5)).data,
    "grad": lambda: _grad_of(_leaf()),
    "subclass": lambda: filled((3, 4), torch.float32).as_subclass(MyTensor),
    "subclass-transposed": lambda: filled((3, 4), torch.int16).as_subclass(MyTensor).t(),
    "torch-function-subclass": lambda: filled((2, 3), torch.float64).as_subclass(LoggingTensor),
    "parameter-of-subclass": lambda: torch.nn.Parameter(torch.randn(2, 2).as_subclass(MyTensor)),
    "no-grad": lambda: _in_no_grad(),
    "complex-real": lambda: filled((3, 4), torch.complex64).real,
    "complex-imag-offset": lambda: filled((3, 4), torch.complex128).imag,
    "view-as-real": lambda: torch.view_as_real(filled((3, 4), torch.complex64)),
    "view-as-complex": lambda: torch.view_as_complex(filled((3, 4, 2), torch.float32)),
    "dtype-reinterpreted": lambda: filled((3, 8), torch.float64).view(torch.uint8)[:, 3:],
    "resolved-conj": lambda: filled((3,), torch.complex64).conj().resolve_conj(),
    "set-to-empty": lambda: filled((3,), torch.float32).set_(),
    "storage-of-another-dtype": lambda: torch.empty(0, dtype=torch.int16).set_(
        filled((10,), torch.float64).untyped_storage(), 3, (2, 5), (1, 2)),
}


def _grad_of(x):
    (x * x).sum().backward()
    return x.grad


def _in_no_grad():
    with torch.no_grad():
        return _leaf() * 3


@pytest.mark.parametrize("make", KINDS.values(), ids=KINDS.keys())
def test_kind_parity(make):
    t = make()
    views = assert_parity(t)
    assert all(type(v.obj) is type(t) for v in views.values())


def test_torch_function_subclass_is_not_consulted_by_the_view():
    """The view reads the TensorImpl: it never dispatches through __torch_function__."""
    t = filled((2, 3), torch.float64).as_subclass(LoggingTensor)
    before = LoggingTensor.calls
    for p in paths_here():
        VIEWS[p](t)
    assert LoggingTensor.calls == before


def test_inference_mode_tensors():
    with torch.inference_mode():
        inside = filled((4, 6), torch.float32)[1:, ::2]
        assert inside.is_inference()
        assert_parity(inside)  # viewed inside the mode
    assert_parity(inside)  # and outside it
    assert_parity(inside.t())


def test_resized_in_place_then_viewed():
    t = filled((2, 3), torch.int32)
    t.resize_(4, 5)  # grows: reallocates the storage
    t.copy_(filled((4, 5), torch.int32, seed=3))
    assert_parity(t)
    t.resize_(3, 2)  # shrinks: same storage, new sizes and strides
    assert_parity(t)
    t.resize_(0)
    assert_parity(t)


def test_view_taken_before_a_resize_keeps_its_sizes():
    """Sizes and strides are copied at creation, not read through the TensorImpl later."""
    for p in paths_here():
        t = filled((2, 3, 4), torch.float32)
        v = VIEWS[p](t)
        t.resize_(5, 7).t_()
        assert (v.shape, v.strides, v.ndim) == ((2, 3, 4), (12, 4, 1), 3), p
        assert (tuple(t.shape), t.stride()) == ((7, 5), (1, 7))
        assert view_fields(VIEWS[p](t)) == torch_answer(t), p


def test_shape_read_lazily_still_has_creation_sizes():
    """``shape`` is built on first access: accessing it only after the resize must still
    give the sizes at creation (the view copied them into its own buffer, inline and
    on the heap alike)."""
    for p in paths_here():
        for shape in ((2, 3), tuple([1] * 12)):
            t = torch.zeros(shape)
            v = VIEWS[p](t)
            t.resize_(9, 9, 9)
            assert v.shape == shape and v.strides == torch.zeros(shape).stride(), p


def test_sizes_and_strides_beyond_32_bits():
    """Sizes past 2**32 (expanded, nothing allocated) and strides past 2**31 survive
    every path as 64-bit integers."""
    huge = filled((3,), torch.int64).expand(2**33 + 5, 3)
    views = assert_parity(huge, read=False)  # 2**34 elements: too many to read them all
    for p, v in views.items():
        assert v.shape == (2**33 + 5, 3) and v.strides == (0, 1), p
    wide = filled((1,), torch.uint8).as_strided((1, 1), (2**31 + 7, 2**40))
    assert_parity(wide)


# --- memory torch does not own ---------------------------------------------------------------
NUMPY_ARRAYS = {
    "contiguous": lambda: np.arange(24, dtype=np.float32).reshape(4, 6),
    "stepped": lambda: np.arange(48, dtype=np.int64).reshape(6, 8)[1::2, ::3],
    "fortran-order": lambda: np.asfortranarray(np.arange(12, dtype=np.int16).reshape(3, 4)),
    "offset": lambda: np.arange(30, dtype=np.float64)[7:],
    "0-d": lambda: np.array(3.5),
    "stride-0": lambda: np.lib.stride_tricks.as_strided(np.arange(4, dtype=np.uint8),
                                                        shape=(3, 4), strides=(0, 1)),
    "bool": lambda: np.arange(10) % 3 == 0,
    "complex": lambda: (np.arange(6) + 1j * np.arange(6)).astype(np.complex64)[::2],
}


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


@pytest.mark.parametrize("make", NUMPY_ARRAYS.values(), ids=NUMPY_ARRAYS.keys())
def test_from_numpy(make):
    a = make()
    t = torch.from_numpy(a)
    for p, v in assert_parity(t).items():
        assert v.ptr == _address(a), p  # numpy's own address, not only torch's
        assert v.strides == tuple(s // a.itemsize for s in a.strides), p
        assert raw_values(v) == a.tolist(), p


@pytest.mark.parametrize("make", NUMPY_ARRAYS.values(), ids=NUMPY_ARRAYS.keys())
def test_from_dlpack_of_numpy(make):
    a = make()
    t = torch.from_dlpack(a)
    for p, v in assert_parity(t).items():
        assert v.ptr == _address(a), p


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.float32, torch.float64,
                                   torch.complex64, torch.bfloat16], ids=dtype_name)
def test_frombuffer(dtype):
    """Tensors over a bytearray: the pointer is the buffer's address plus the byte
    offset asked for (an unaligned one included)."""
    k = dtype.itemsize
    buf = bytearray(bytes((i * 37 + 5) % 256 for i in range(16 * k)))
    address = ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))
    whole = torch.frombuffer(buf, dtype=dtype)
    part = torch.frombuffer(buf, dtype=dtype, count=5, offset=3 * k)
    unaligned = torch.frombuffer(buf, dtype=dtype, count=6, offset=1)
    strided = torch.frombuffer(buf, dtype=dtype, count=12, offset=k).reshape(3, 4).t()
    for t, start in ((whole, 0), (part, 3 * k), (unaligned, 1), (strided, k)):
        for p, v in assert_parity(t).items():
            assert v.ptr == address + start, p


# --- the dispatching entry point ----------------------------------------------------------------
@pytest.mark.parametrize("layout", LAYOUTS[::4], ids=lambda layout: layout.name)
def test_view_follows_set_path(layout):
    """``bridge.view`` under each ``set_path`` equals that path's own view function."""
    t = layout.build(torch.float32)
    for p in paths_here():
        bridge.set_path(p)
        bridge.reset_path_counts()
        v = bridge.view(t)
        assert v.path == p
        assert bridge.path_counts() == {q: int(q == p) for q in bridge.PATHS}
        assert view_fields(v) == view_fields(VIEWS[p](t)) == torch_answer(t)


# --- the checks themselves can fail --------------------------------------------------------------
def test_the_byte_check_catches_a_pointer_off_by_one_element():
    """A view whose pointer is one element off, or whose strides are swapped, reads other
    bytes than torch's: the parity check's memory comparison is not vacuous."""
    from types import SimpleNamespace

    from helpers.memory import raw_bytes, torch_bytes

    for dtype in (torch.bool, torch.uint8, torch.float8_e5m2, torch.float32, torch.complex128):
        t = filled((3, 4), dtype)[1:, 1:]
        v = VIEWS[paths_here()[0]](t)
        fake = dict(ptr=v.ptr, shape=v.shape, strides=v.strides, itemsize=v.itemsize)
        assert np.array_equal(raw_bytes(SimpleNamespace(**fake)), torch_bytes(t))
        for change in ({"ptr": v.ptr + v.itemsize}, {"strides": v.strides[::-1]}):
            wrong = SimpleNamespace(**{**fake, **change})
            assert not np.array_equal(raw_bytes(wrong), torch_bytes(t)), (dtype, change)
