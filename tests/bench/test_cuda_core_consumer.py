"""The seed's consumer on every path (``bench/native/cuda_core_consumer.pyx``): a real
cuda.core ``StridedMemoryView`` filled through each route of
``cuda_core_consumer.ROUTES`` (owned, 2.14's owned built for this torch, owned + the
interpreter fix, the borrow, the pointer trick, torch's DLPack ``no_sync`` and the fixed
one) is equal field by field (ptr, shape, strides, dtype, device, readonly, the object it
keeps alive) to the view cuda.core itself makes (``StridedMemoryView.from_dlpack(t,
-1)``), on every dtype; where cuda.core's own view fails, every route fails too. CPU
tensors here, CUDA ones too where ``torch.cuda.is_available()``. Skipped only where
cuda-core is not installed; where it is, a consumer that cannot be built is a failure.
"""

from __future__ import annotations

import gc
import sys
import warnings

import pytest
import torch

from helpers.cases import LAYOUTS, dtype_name, filled, torch_dtypes

from bench.native import cuda_core_consumer
from helpers.expect import TORCH as _TORCH_VERSION

if cuda_core_consumer.cuda_core_version() is None:
    pytest.skip("cuda-core is not installed (the bench extra installs it)",
                allow_module_level=True)

OURS = ("owned", "owned_prototype", "owned_fixed", "borrow", "pointer", "dlpack",
        "dlpack_fixed")
DLPACK = ("dlpack", "dlpack_fixed")
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
TORCH_RELEASE = _TORCH_VERSION.release[:2]


@pytest.fixture(scope="module")
def consumer():
    return cuda_core_consumer.Consumer(torch)


def ours(consumer):
    return [r for r in OURS if consumer.available[r]]


def fields_or_error(view, t):
    """The view's public fields, or ``("error", exception type)`` where making the view
    or reading a field raises."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return cuda_core_consumer.fields(view(t))
    except Exception as exc:  # cuda.core's own refusals vary by dtype: compare them
        return ("error", type(exc).__name__, str(exc))


#: the exception types a refusal may take, cuda.core's and ours alike
REFUSALS = {"TypeError", "BufferError", "ValueError", "RuntimeError", "NotImplementedError"}


def assert_same_as_cuda_core(consumer, t):
    want = fields_or_error(consumer.viewer("cuda_core"), t)
    for route in ours(consumer):
        got = fields_or_error(consumer.viewer(route), t)
        if isinstance(want, tuple):
            assert isinstance(got, tuple), (
                f"{route}: cuda.core refuses {t.dtype} ({want[1]}: {want[2]}) but "
                f"{route} returned {got}")
            # a refusal, not a bug: cuda.core's own refusal kinds (its two paths differ)
            assert got[1] in REFUSALS, f"{route} failed with {got[1]}: {got[2]}"
        else:
            assert got == want, f"{route} differs from cuda.core's own view: {got} != {want}"
    return want


def test_every_route_is_available_here(consumer):
    """borrow and pointer on every torch the bridge runs on; the prototype everywhere;
    torch's own owned shim from 2.14 on (both owned rows run there)."""
    assert consumer.available["cuda_core"], consumer.reasons.get("cuda_core")
    for route in ("owned_prototype", "borrow", "pointer"):
        assert consumer.available[route], consumer.reasons.get(route)
    assert consumer.available["owned"] == (TORCH_RELEASE >= (2, 14)), consumer.reasons
    release = _TORCH_VERSION.public
    assert consumer.labels["owned_prototype"] == (
        f"owned (2.14's implementation, built for torch {release})")
    # The fixed routes: the interpreter fix on the owned route torch has (its own from
    # 2.14, else the prototype), DLPack's exchange API from 2.10 on.
    assert consumer.available["owned_fixed"], consumer.reasons.get("owned_fixed")
    assert consumer.fixed_base == ("owned" if TORCH_RELEASE >= (2, 14) else "owned_prototype")
    assert consumer.labels["owned_fixed"].endswith(consumer.labels[consumer.fixed_base])
    for route in DLPACK:
        assert consumer.available[route] == (TORCH_RELEASE >= (2, 10)), consumer.reasons


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", torch_dtypes(), ids=dtype_name)
def test_every_dtype_matches_cuda_core(consumer, dtype, device):
    """The dtypes of cuda.core's tensor bridge table (``AOTI_DTYPES``): equal to cuda.core's
    own view, or refused by both. Every other dtype: refused by every route with the
    error cuda.core's AOTI bridge raises ("Unsupported AOTI dtype code"), whatever
    cuda.core's DLPack path makes of it (it views torch.int1..int7 as 8-bit integers); the
    DLPack routes make of them what DLPack says, as cuda.core's DLPack path does."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = filled((3, 5), dtype).to(device)[1:, ::2]
    except Exception as exc:
        pytest.skip(f"torch cannot make a {device} {dtype} tensor here: {exc}")
    if dtype_name(dtype) in cuda_core_consumer.AOTI_DTYPES:
        assert_same_as_cuda_core(consumer, t)
        return
    for route in ours(consumer):
        got = fields_or_error(consumer.viewer(route), t)
        if route in DLPACK:
            # The DLPack routes see the DLPack dtype torch reports (as cuda.core's own
            # DLPack path does: torch.int1..int7 as int8): refused, or the tensor's own
            # memory, shape, strides and element size.
            assert isinstance(got, tuple) and got[1] in REFUSALS or (
                not isinstance(got, tuple) and got["ptr"] == t.data_ptr()
                and got["shape"] == tuple(t.shape) and got["strides"] == t.stride()
                and got["dtype"].itemsize == t.element_size()), (route, got)
            continue
        assert got[:2] == ("error", "TypeError") and "Unsupported AOTI dtype code" in got[2], (
            route, got)


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda lay: lay.name)
@pytest.mark.parametrize("dtype", [torch.float32, torch.uint8, torch.complex128],
                         ids=dtype_name)
def test_every_layout_matches_cuda_core(consumer, layout, dtype):
    t = layout.build(dtype)
    want = assert_same_as_cuda_core(consumer, t)
    assert not isinstance(want, tuple), f"cuda.core refused {layout.name}: {want}"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("build", [
    lambda: torch.randn(32, 32, device="cuda"),
    lambda: torch.randn(6, 8, device="cuda")[1::2, ::3],
    lambda: torch.randn(3, 4, device="cuda").t(),
    lambda: torch.zeros((), device="cuda", dtype=torch.float16),
    lambda: torch.zeros(0, 4, device="cuda", dtype=torch.int64),
], ids=["32x32", "sliced", "transposed", "0-d-half", "empty-int64"])
def test_cuda_layouts_match_cuda_core(consumer, build):
    t = build()
    want = assert_same_as_cuda_core(consumer, t)
    assert not isinstance(want, tuple), want
    assert want["device_id"] == t.device.index and want["is_device_accessible"]


@pytest.mark.parametrize("route", OURS)
def test_the_view_keeps_the_tensor_alive(consumer, route):
    if not consumer.available[route]:
        pytest.skip(consumer.reasons[route])
    t = torch.arange(12.0).reshape(3, 4)
    before = sys.getrefcount(t)
    v = consumer.viewer(route)(t)
    after = sys.getrefcount(t)
    assert after == before + 1
    assert v.exporting_obj is t
    ptr, alive = t.data_ptr(), t
    del t, alive
    gc.collect()
    assert v.exporting_obj.data_ptr() == v.ptr == ptr
    assert v.exporting_obj.sum().item() == 66.0


@pytest.mark.parametrize("route", OURS)
def test_no_reference_leaks(consumer, route):
    """10,000 views made and dropped: the Python refcount, the TensorImpl's and the
    StorageImpl's use counts are unchanged (the owned handle is deleted every time)."""
    if not consumer.available[route]:
        pytest.skip(consumer.reasons[route])
    t = torch.randn(4, 4)

    def counts():
        return (sys.getrefcount(t), t._use_count(),
                torch._C._storage_Use_Count(t.untyped_storage()._cdata))

    view = consumer.viewer(route)
    before = counts()
    for _ in range(10_000):
        view(t)
    assert counts() == before


@pytest.mark.parametrize("route", OURS)
@pytest.mark.parametrize("obj", [None, 3, "tensor", torch.UntypedStorage(4)],
                         ids=["None", "int", "str", "UntypedStorage"])
def test_non_tensors_are_refused(consumer, route, obj):
    if not consumer.available[route]:
        pytest.skip(consumer.reasons[route])
    with pytest.raises((TypeError, RuntimeError)):
        consumer.viewer(route)(obj)


def test_real_and_prototype_owned_agree(consumer):
    """On 2.14+ torch's own shim and the prototype return the same fields on every dtype
    and layout above (and so the same as cuda.core); here directly against each other."""
    if not consumer.available["owned"]:
        pytest.skip(consumer.reasons["owned"])
    for dtype in torch_dtypes():
        try:
            t = filled((4, 6), dtype)[1:, 1::2]
        except Exception:  # dtypes torch cannot allocate here
            continue
        assert (fields_or_error(consumer.viewer("owned"), t)
                == fields_or_error(consumer.viewer("owned_prototype"), t)), dtype


def test_prototype_error_message(consumer):
    with pytest.raises(RuntimeError, match="owned_prototype_tensor_from_pyobject failed"):
        consumer.viewer("owned_prototype")(object())
    assert consumer.prototype_error() == (
        "torch_tensor_from_pyobject: expected torch.Tensor, got object")


def test_the_fix_is_installed_only_around_the_timed_loop(consumer):
    """``timed("owned_fixed")``: the bare owned view and a context that installs the patch's
    incref / decref for its block, torch's vtable back afterwards (and after an error);
    ``viewer("owned_fixed")`` installs it for each call."""
    fixes = consumer.fixes
    torch_vtable = fixes.vtable_address()
    view, context = consumer.timed("owned_fixed")
    t = torch.randn(5, 7)[::2]
    want = cuda_core_consumer.fields(consumer.viewer(consumer.fixed_base)(t))
    with context():
        assert fixes.installed_code() == "patch"
        assert fixes.vtable_address() != torch_vtable
        assert cuda_core_consumer.fields(view(t)) == want
    assert fixes.installed_code() is None and fixes.vtable_address() == torch_vtable
    with pytest.raises((TypeError, RuntimeError)):
        with context():
            view(object())
    assert fixes.installed_code() is None and fixes.vtable_address() == torch_vtable
    assert cuda_core_consumer.fields(consumer.viewer("owned_fixed")(t)) == want
    assert fixes.installed_code() is None
    for route in ("borrow", "pointer", "dlpack", "dlpack_fixed"):
        f, ctx = consumer.timed(route)
        with ctx():
            assert fixes.installed_code() is None
        assert f is consumer.viewer(route)


@pytest.mark.parametrize("route", DLPACK)
def test_dlpack_routes_refuse_non_tensors(consumer, route):
    """torch's own slot refuses through pybind11's caster (a RuntimeError); the fixed one
    (the DLPack patches' own function) by its real-type check, a RuntimeError naming the
    type, and it refuses a conjugate view (BufferError) that torch's exports as plain data."""
    if not consumer.available[route]:
        pytest.skip(consumer.reasons[route])
    if route == "dlpack_fixed":
        with pytest.raises(RuntimeError, match="expected a torch.Tensor, got object"):
            consumer.viewer(route)(object())
        with pytest.raises(BufferError, match="conjugate bit"):
            consumer.viewer(route)(torch.randn(3, dtype=torch.complex64).conj())
    else:
        with pytest.raises((TypeError, RuntimeError)):
            consumer.viewer(route)(object())
    # a subclass of torch.Tensor is a real tensor: both routes take it
    class Sub(torch.Tensor):
        pass

    t = torch.arange(6.0).reshape(2, 3).as_subclass(Sub)
    got = cuda_core_consumer.fields(consumer.viewer(route)(t))
    assert got["ptr"] == t.data_ptr() and got["shape"] == (2, 3)
