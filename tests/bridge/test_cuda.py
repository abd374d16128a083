"""Parity with CUDA tensors: every path views device memory exactly as torch does.

``test_parity.py``'s claim on the GPU: each path's view of a CUDA tensor reports torch's
``data_ptr()``, shape, strides, dtype, itemsize, device ``"cuda"`` and index, and the
paths agree field by field. The pointer is checked through the CUDA driver (``ctypes``
on ``libcuda.so.1``, no Python CUDA binding): ``cuPointerGetAttribute`` says it is device
memory on the reported GPU, and ``cuMemcpyDtoH`` of the bytes the view spans equals the
elements torch reads through its own bookkeeping. Skipped only where
``torch.cuda.is_available()`` is false; the device-index-1 tests need a second GPU
(``bench/gpu/run.sh --two-gpu``).
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
import torch

import bridge
from helpers.cases import LAYOUTS, REFUSED, VIEWABLE, dtype_name, filled
from helpers.expect import TORCH, expected_paths
from helpers.memory import raw_array, span_bytes
from helpers.no_memory import (assert_refused_everywhere, fabricated_address, freed,
                                placeholder, printable_without_memory)
from helpers.parity import VIEWS, assert_parity, assert_refused_alike, paths_here

if not torch.cuda.is_available():
    # One skip for the module, not one per case: nothing here can run without a device.
    pytest.skip("no CUDA device here (torch.cuda.is_available() is false)",
                allow_module_level=True)

# CUDA driver API enums (cuda.h): CUpointer_attribute and CUmemorytype.
CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2
CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
CU_MEMORYTYPE_DEVICE = 2


# --- the driver, through ctypes ----------------------------------------------------------
_LIBCUDA = None


def libcuda():
    """``libcuda.so.1`` with the two entry points used here typed (loaded once)."""
    global _LIBCUDA
    if _LIBCUDA is None:
        lib = ctypes.CDLL("libcuda.so.1")
        lib.cuMemcpyDtoH_v2.argtypes = (ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t)
        lib.cuMemcpyDtoH_v2.restype = ctypes.c_int
        lib.cuPointerGetAttribute.argtypes = (ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64)
        lib.cuPointerGetAttribute.restype = ctypes.c_int
        _LIBCUDA = lib
    return _LIBCUDA


def _check(rc: int, what: str) -> None:
    assert rc == 0, f"{what} failed: CUresult {rc}"


def pointer_attribute(ptr: int, attribute: int) -> int:
    """``cuPointerGetAttribute`` for an int-valued attribute of device address ``ptr``."""
    out = ctypes.c_int(-1)
    _check(libcuda().cuPointerGetAttribute(ctypes.byref(out), attribute, ptr),
           f"cuPointerGetAttribute({attribute}, {ptr:#x})")
    return out.value


def device_raw_bytes(view, device: torch.device) -> np.ndarray:
    """The elements a CUDA view describes, read through ``view.ptr`` by the driver.

    Copies the view's span (first element to one past the last reachable one) from
    device memory to a host buffer with ``cuMemcpyDtoH``, then reads it with the view's
    shape, strides (elements) and itemsize (bytes). Flat uint8, C order, like
    ``helpers.memory.raw_bytes``. ``device`` only picks the current CUDA context (a
    unified address names its own device).
    """
    span = span_bytes(view.shape, view.strides, view.itemsize)
    if span == 0:
        return np.empty(0, dtype=np.uint8)
    host = np.empty(span, dtype=np.uint8)
    with torch.cuda.device(device):
        torch.cuda.synchronize()  # the kernels that filled the tensor have finished
        _check(libcuda().cuMemcpyDtoH_v2(host.ctypes.data, view.ptr, span),
               f"cuMemcpyDtoH({view.ptr:#x}, {span} bytes)")
    arr = raw_array(host.ctypes.data, view.shape, view.strides, view.itemsize)
    # Copy out: ``arr`` borrows ``host``'s memory without a reference to it (and
    # ascontiguousarray returns it uncopied when contiguous), so the result must not
    # outlive ``host``, which is freed on return.
    return np.array(arr, order="C", copy=True).reshape(-1).view(np.uint8)


def device_torch_bytes(t: torch.Tensor) -> np.ndarray:
    """The elements of CUDA tensor ``t`` as torch addresses them (flat uint8, C order).

    ``helpers.memory.torch_bytes`` on the device: a uint8 tensor over
    ``t.untyped_storage()`` indexed with ``storage_offset()`` and ``stride()`` scaled by
    ``element_size()``, gathered on the GPU and copied back by torch. No pointer is read.
    """
    k = t.element_size()
    if t.numel() == 0:
        return np.empty(0, dtype=np.uint8)
    storage = t.untyped_storage()
    u8 = torch.empty(0, dtype=torch.uint8, device=t.device).set_(
        storage, 0, (storage.nbytes(),), (1,))
    dims = [(n, s * k) for n, s in zip(t.shape, t.stride()) if n != 1]
    elems = u8.as_strided((*(n for n, _ in dims), k), (*(s for _, s in dims), 1),
                          t.storage_offset() * k)
    return elems.contiguous().cpu().numpy().reshape(-1).copy()


def assert_cuda_parity(t: torch.Tensor) -> dict:
    """``assert_parity`` for a CUDA tensor, then the driver's checks on every view.

    Metadata, path names, ``obj``, per-path counters and cross-path agreement come from
    ``helpers.parity.assert_parity`` (without its host-memory read); then, per path,
    the device type is ``"cuda"``, the index is ``t.device.index``, the driver places
    the address in device memory of that GPU (when the tensor has elements: a zero-size
    tensor may have no allocation), and the bytes read through ``view.ptr`` equal
    torch's. Returns ``{path: TensorView}``.
    """
    assert t.is_cuda, t.device
    views = assert_parity(t, read=False)
    expected = device_torch_bytes(t) if t.numel() else None
    for p, v in views.items():
        assert (v.device_type, v.device_index) == ("cuda", t.device.index), (p, v)
        if not t.numel():
            continue
        assert pointer_attribute(v.ptr, CU_POINTER_ATTRIBUTE_MEMORY_TYPE) == \
            CU_MEMORYTYPE_DEVICE, f"{p}: {v.ptr:#x} is not device memory"
        assert pointer_attribute(v.ptr, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) == \
            t.device.index, f"{p}: {v.ptr:#x} is not on cuda:{t.device.index}"
        got = device_raw_bytes(v, t.device)
        assert np.array_equal(got, expected), (
            f"{p}: bytes read through view.ptr differ from torch's "
            f"(first 16: {got[:16].tolist()} vs {expected[:16].tolist()})")
    return views


# --- building CUDA tensors -----------------------------------------------------------------
def to_device_same_layout(t: torch.Tensor, device) -> torch.Tensor:
    """A CUDA tensor with ``t``'s bytes, dtype, storage offset, shape and strides.

    The CPU storage is copied byte for byte (as uint8, which every device supports),
    then a tensor of ``t.dtype`` is set on the device storage with ``t``'s geometry: any
    layout of ``helpers.cases.LAYOUTS`` (overlapping, stride-0, 63 dims, ...) exists on
    the GPU exactly as on the CPU, for every dtype, whatever copy kernels torch has.
    """
    storage = t.untyped_storage()
    u8 = torch.empty(0, dtype=torch.uint8).set_(storage, 0, (storage.nbytes(),), (1,))
    dev = u8.to(device)
    return torch.empty(0, dtype=t.dtype, device=device).set_(
        dev.untyped_storage(), t.storage_offset(), tuple(t.shape), t.stride())


def filled_cuda(shape, dtype, device="cuda", seed=0) -> torch.Tensor:
    """``helpers.cases.filled`` on the device (contiguous, same byte pattern)."""
    return to_device_same_layout(filled(shape, dtype, seed), device)


def _cpu_layout(layout, dtype):
    try:
        return layout.build(dtype)
    except Exception as exc:  # torch's own refusal for this dtype on the CPU, verbatim
        pytest.skip(f"torch {torch.__version__} cannot build {layout.name} of {dtype}: "
                    f"{type(exc).__name__}: {exc}")


# --- availability: what this torch must offer, also on a GPU machine ------------------------
def test_cuda_is_what_torch_reports():
    """The device under test is a real CUDA device (the skip condition is not stale)."""
    assert torch.cuda.device_count() >= 1
    t = torch.empty(4, device="cuda")
    assert (t.device.type, t.device.index) == ("cuda", torch.cuda.current_device())


def test_available_paths_are_this_torchs():
    got = {p: info.available for p, info in bridge.available_paths().items()}
    assert got == expected_paths(), got


def test_owned_is_unavailable_before_2_14_and_says_why():
    """torch < 2.14 (the GPU machine has 2.11) exports no ``torch_tensor_from_pyobject``:
    owned is unavailable, with a reason, and ``view_owned`` refuses a CUDA tensor;
    on 2.14+ it is available and views it."""
    info = bridge.available_paths()["owned"]
    t = torch.zeros(3, device="cuda")
    if TORCH.release < (2, 14):
        assert not info.available
        assert "torch_tensor_from_pyobject" in info.reason, info.reason
        with pytest.raises(bridge.PathUnavailableError):
            bridge.view_owned(t)
    else:
        assert info.available, info.reason
        assert bridge.view_owned(t).ptr == t.data_ptr()


# --- parity: every viewable dtype x every layout, mirrored on the GPU ------------------------
@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda lay: lay.name)
@pytest.mark.parametrize("dtype", VIEWABLE, ids=dtype_name)
def test_parity_dtype_layout_on_cuda(dtype, layout):
    t = to_device_same_layout(_cpu_layout(layout, dtype), "cuda")
    assert_cuda_parity(t)


@pytest.mark.parametrize("dtype", REFUSED, ids=dtype_name)
def test_refused_dtypes_are_refused_on_cuda(dtype):
    try:
        t = torch.empty(4, dtype=dtype, device="cuda")
    except Exception as exc:  # torch's own answer: no such CUDA tensor to refuse
        pytest.skip(f"torch {torch.__version__} cannot allocate {dtype} on CUDA: "
                    f"{type(exc).__name__}: {exc}")
    assert_refused_alike(t)


# --- real CUDA views, made by torch's own view ops on the device -----------------------------
#: dtypes with arithmetic on CUDA in every supported torch: one per element size.
ARITH_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64,
                torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool,
                torch.complex64]

CUDA_VIEWS = {
    "contiguous-2d": lambda b: b,
    "transposed": lambda b: b.t(),
    "sliced-with-steps": lambda b: b[1::2, ::3],
    "storage-offset": lambda b: b[2:, 1:],
    "select-row": lambda b: b[3],
    "select-column": lambda b: b[:, 5],
    "narrow": lambda b: b.narrow(0, 5, 2),
    "expanded-stride-0": lambda b: b[:, :1].expand(8, 4),
    "unsqueeze-permute": lambda b: b.reshape(2, 4, 12).permute(2, 0, 1),
    "channels-last": lambda b: b.reshape(1, 2, 4, 12).contiguous(
        memory_format=torch.channels_last),
    "as-strided-overlapping": lambda b: b.as_strided((4, 3), (2, 1), 5),
    "diagonal": lambda b: b.diagonal(1),
    "zero-size-slice": lambda b: b[:, 3:3],
    "zero-size-new": lambda b: torch.empty(0, 5, dtype=b.dtype, device=b.device),
    "0-d": lambda b: b[2, 2],
}


def _base(dtype, device="cuda"):
    """An 8x12 tensor of distinct values made on the device by torch's own kernels."""
    x = torch.arange(96, device=device).reshape(8, 12)
    if dtype == torch.bool:
        return x % 3 == 0
    return (x % 120 - 60).to(dtype) if dtype.is_signed or dtype.is_floating_point or \
        dtype.is_complex else (x % 251).to(dtype)


@pytest.mark.parametrize("make", CUDA_VIEWS.values(), ids=CUDA_VIEWS.keys())
@pytest.mark.parametrize("dtype", ARITH_DTYPES, ids=dtype_name)
def test_parity_of_views_made_on_cuda(dtype, make):
    base = _base(dtype)
    t = make(base)
    views = assert_cuda_parity(t)
    shares = t.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
    for v in views.values():
        if shares and t.numel():
            # A view of base: its address is base's plus torch's storage offset, in bytes.
            assert v.ptr - base.data_ptr() == t.storage_offset() * t.element_size(), (
                v.ptr, base.data_ptr(), t.storage_offset())
        if t.numel() and dtype != torch.bfloat16:  # the interface has no bfloat16 typestr
            assert v.ptr == t.__cuda_array_interface__["data"][0]
    # Values, not only bytes: the pointer read back as this dtype equals torch's values.
    if t.numel() and dtype not in (torch.bfloat16,):
        v = views["borrow"]
        raw = device_raw_bytes(v, t.device).view(
            np.dtype(t.cpu().numpy().dtype)).reshape(tuple(t.shape))
        np.testing.assert_array_equal(raw, t.cpu().numpy())


def test_conjugate_and_negative_cuda_views_are_refused():
    z = torch.randn(4, dtype=torch.complex64, device="cuda")
    assert "resolve_conj" in assert_refused_alike(z.conj())
    assert "resolve_neg" in assert_refused_alike(z.conj().imag)


def test_view_follows_the_tensor_not_the_current_device():
    """A view reports the tensor's device, whatever device is current."""
    t = filled_cuda((3, 5), torch.float32, "cuda:0")
    with torch.cuda.device(torch.cuda.device_count() - 1):
        views = assert_cuda_parity(t)
    assert {v.device_index for v in views.values()} == {0}


# --- CUDA tensors whose storage holds no memory ---------------------------------------------
# A CUDA storage resized to 0 bytes (what FSDP does to parameters) or a placeholder with a
# null base: torch's data pointer is storage offset x itemsize, an address no allocation
# has; every path refuses it. helpers.no_memory builds them on the device; its fixture
# keeps a failing test's report from printing (reading) such a tensor.
without_memory = pytest.mark.usefixtures(printable_without_memory.__name__)
NO_MEMORY_DTYPES = [torch.uint8, torch.bfloat16, torch.float32, torch.float64,
                    torch.complex128]
NO_MEMORY_OFFSETS = ([pytest.param(freed, b, id=f"freed-{b}") for b in (0, 64, 2**20)]
                     + [pytest.param(placeholder, b, id=f"placeholder-{b}")
                        for b in (0, 64, 2**32 - 8, 2**32, 2**32 + 8, 2**40)])


@without_memory
@pytest.mark.parametrize("dtype", NO_MEMORY_DTYPES, ids=dtype_name)
@pytest.mark.parametrize("build, offset_bytes", NO_MEMORY_OFFSETS)
def test_cuda_storage_without_memory_is_refused(build, offset_bytes, dtype):
    offset = offset_bytes // dtype.itemsize
    t = build((3, 5), (5, 1), offset, dtype, "cuda")
    assert t.is_cuda and t.storage_offset() == offset
    assert fabricated_address(t) == offset * dtype.itemsize
    assert_refused_everywhere(t)


@without_memory
@pytest.mark.parametrize("layout", [((5, 4), (1, 5)), ((4, 6), (1, 0)), ((), ()),
                                    ((2, 3, 4, 5), (60, 1, 15, 3)),
                                    ((2, 1, 2, 1, 1, 2, 1, 1, 1), (8, 8, 4, 4, 4, 2, 2, 2, 1))],
                         ids=["transposed", "stride-0", "0-d", "channels-last", "9-dims"])
@pytest.mark.parametrize("build, offset", [(freed, 7), (placeholder, 2**33 + 1)],
                         ids=["freed-offset-7", "placeholder-offset-2**33+1"])
def test_cuda_strides_without_memory_are_refused(build, offset, layout):
    shape, strides = layout
    t = build(shape, strides, offset, torch.float16, "cuda")
    fabricated_address(t)
    assert_refused_everywhere(t)


@without_memory
def test_cuda_view_at_offset_16_of_an_empty_storage_then_real_memory_again():
    """A float32 view at storage offset 16 on the device: refused while the storage holds
    no memory, viewed (and read through the driver) once it has memory again."""
    flat = torch.arange(64, dtype=torch.float32, device="cuda")
    p = flat[16:32].view(4, 4)
    storage = flat.untyped_storage()
    nbytes = storage.nbytes()
    storage.resize_(0)
    assert fabricated_address(p) == 0x40
    assert_refused_everywhere(p)
    storage.resize_(nbytes)
    flat.copy_(torch.arange(64, dtype=torch.float32, device="cuda"))
    for v in assert_cuda_parity(p).values():
        assert v.ptr == storage.data_ptr() + 16 * 4


@without_memory
def test_cuda_parameter_freed_like_fsdp():
    param = torch.nn.Parameter(torch.randn(8, 16, device="cuda"))
    shard = torch.nn.Parameter(param.detach()[2:6])  # a parameter at storage offset 32
    nbytes = param.untyped_storage().nbytes()
    param.untyped_storage().resize_(0)
    for t in (param, shard):
        fabricated_address(t)
        assert_refused_everywhere(t)
    param.untyped_storage().resize_(nbytes)
    assert_cuda_parity(shard)


@without_memory
def test_cuda_freed_allocation_beyond_4_gib():
    """A real device allocation past 2**32 bytes, viewed near its end and freed: the
    offset torch adds to the null base is that large too."""
    need = 2**32 + 2**20
    if torch.cuda.mem_get_info()[0] < 2 * need:
        pytest.skip(f"less than {2 * need} bytes free on this GPU")
    t = freed((4, 4), (4, 1), (2**32 + 64) // 4, torch.float32, "cuda")
    assert fabricated_address(t) == 2**32 + 64
    assert_refused_everywhere(t)


@pytest.mark.parametrize("offset", [0, 16, 2**40])
@pytest.mark.parametrize("build", [freed, placeholder], ids=["freed", "placeholder"])
def test_cuda_zero_elements_without_memory_are_viewed(build, offset):
    t = build((3, 0), (1, 3), offset, torch.float32, "cuda")
    assert t.numel() == 0 and t.data_ptr() == 0
    for v in assert_cuda_parity(t).values():
        assert v.ptr == 0 and v.shape == (3, 0)


# --- device index 1 (two GPUs) ---------------------------------------------------------------
needs_two = pytest.mark.skipif(torch.cuda.is_available() and torch.cuda.device_count() < 2,
                               reason="one CUDA device here; device index 1 needs two")


@needs_two
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.uint8],
                         ids=dtype_name)
@pytest.mark.parametrize("make", ["contiguous-2d", "transposed", "storage-offset",
                                  "sliced-with-steps", "zero-size-new"])
def test_parity_on_device_index_1(dtype, make):
    base = _base(dtype, "cuda:1")
    t = CUDA_VIEWS[make](base)
    assert t.device == torch.device("cuda:1")
    with torch.cuda.device(0):  # the current device is not the tensor's
        views = assert_cuda_parity(t)
    assert {v.device_index for v in views.values()} == {1}


@needs_two
def test_same_storage_on_two_devices_views_differ():
    """Equal layouts on cuda:0 and cuda:1 give views that differ in index and pointer."""
    a = filled_cuda((4, 4), torch.float32, "cuda:0")
    b = filled_cuda((4, 4), torch.float32, "cuda:1")
    for p in paths_here():
        va, vb = VIEWS[p](a), VIEWS[p](b)
        assert (va.device_index, vb.device_index) == (0, 1)
        assert va.ptr == a.data_ptr() and vb.ptr == b.data_ptr() and va.ptr != vb.ptr


@needs_two
@without_memory
@pytest.mark.parametrize("build, offset", [(freed, 16), (placeholder, 2**33)],
                         ids=["freed-offset-16", "placeholder-offset-2**33"])
def test_storage_without_memory_on_device_index_1_is_refused(build, offset):
    t = build((4, 4), (1, 4), offset, torch.float32, "cuda:1")
    assert t.device == torch.device("cuda:1")
    with torch.cuda.device(0):
        fabricated_address(t)
        assert_refused_everywhere(t)


# --- the round-3 fault classes on CUDA tensors ------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float16, torch.float32], ids=dtype_name)
def test_cuda_view_past_a_shrunk_storage_is_refused(dtype):
    """A CUDA view at storage offset 8 whose storage was shrunk under it
    (``untyped_storage().resize_(n)``): its elements reach past the allocation; every path
    and reader refuses it with the same BufferError, and viewing it again after the
    storage grows back is exact."""
    flat = filled_cuda((64,), dtype)
    view = flat[8:24].view(4, 4)
    nbytes = flat.untyped_storage().nbytes()
    flat.untyped_storage().resize_(12 * dtype.itemsize)
    message = assert_refused_alike(view)
    assert "reach past the end of its storage" in message, message
    flat.untyped_storage().resize_(nbytes)
    assert_cuda_parity(view)


def test_cuda_dispatch_subclass_hidden_by_a_metaclass_is_refused():
    """A CUDA wrapper subclass whose metaclass hides ``__torch_dispatch__``: decided by the
    TensorImpl's Python dispatch key, on the device as on the CPU."""
    from hostile import cases as hostile_cases

    try:
        t = hostile_cases.dispatch_hidden_by_metaclass(torch)
        t = t.cuda() if not t.is_cuda else t
    except Exception as exc:  # noqa: BLE001 (torch may not move such a subclass)
        pytest.skip(f"torch cannot make that subclass on CUDA: {type(exc).__name__}: {exc}")
    if not t.is_cuda:
        pytest.skip("the subclass stayed on the CPU")
    assert_refused_alike(t)


def test_cuda_device_name_is_torchs():
    """The device type name a view reports for a CUDA tensor is torch's own."""
    t = filled_cuda((2, 3), torch.float32)
    for p in paths_here():
        assert VIEWS[p](t).device_type == t.device.type == "cuda"
