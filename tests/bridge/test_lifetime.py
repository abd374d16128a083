"""Lifetime and leaks: a view keeps its tensor (and so its memory) alive, and making or
refusing views leaks nothing on any path.

Three counters catch a leak. ``torch.Tensor._use_count()`` (private; torch 2.13-2.15) is
the TensorImpl's intrusive refcount: an owned handle never deleted shows as +1 per call
(the owned path makes one per view and must delete it, on error paths too; the borrow and
fallback never make one). ``sys.getrefcount`` catches a leaked Python reference. Resident
memory, with a generous bound, catches anything else (1,000,000 leaked 8-byte boxes are at
least 16 MiB with malloc's overhead, over the bound).
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import tracemalloc
import warnings
import weakref

import numpy as np
import pytest
import torch

import bridge
from bridge import _bridge, _resolve
from helpers.cases import filled
from helpers.expect import expected_paths, torch_answer, view_fields
from helpers.memory import raw_bytes, torch_bytes

N_VIEWS = 100_000
#: The slow tests' count: enough for resident memory to show a leak of 8 bytes a call.
MILLION = 1_000_000
#: torch builds a C++ backtrace for every exception a getter throws (about 1 ms here):
#: fewer calls, still exact, since the use count would be off by one per leaked handle.
THROWING = 1_000
RSS_BOUND = 8 << 20  # bytes: generous; a leak of 8 bytes per call is 8 MB over 1M calls


def _rss() -> int:
    """Resident memory of this process, in bytes (``/proc/self/statm``)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def counts(t) -> tuple[int, int]:
    """(Python refcount of ``t``, its TensorImpl's use count)."""
    return sys.getrefcount(t), t._use_count()


def test_use_count_accessor_counts_tensorimpl_references():
    """``_use_count`` exists here and rises when C++ holds another reference to the same
    TensorImpl (autograd saving ``x`` for backward), so a leaked handle would show."""
    assert callable(getattr(torch.Tensor, "_use_count", None)), torch.__version__
    x = torch.ones(3, requires_grad=True)
    alone = x._use_count()
    y = x * x  # saves x (the same TensorImpl) for backward
    assert x._use_count() > alone
    del y
    assert x._use_count() == alone


def test_owned_handle_is_counted_while_it_lives():
    """The use count sees an owned handle, so the refusal tests below can fail."""
    if not expected_paths()["owned"]:
        pytest.skip("torch_tensor_from_pyobject is not exported by this torch "
                    "(its absence is asserted in test_availability)")
    syms = _resolve.resolve(_bridge.PYOBJECT_SIZE).symbols
    owned = ctypes.PYFUNCTYPE(ctypes.c_int32, ctypes.py_object,
                              ctypes.POINTER(ctypes.c_void_p))(syms[_resolve.OWNED].address)
    delete = ctypes.PYFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(syms[_resolve.DELETE].address)
    t = torch.ones(3)
    before = t._use_count()
    h = ctypes.c_void_p()
    assert owned(t, ctypes.byref(h)) == 0
    assert t._use_count() == before + 1
    assert delete(h) == 0
    assert t._use_count() == before


# --- a view keeps its tensor alive -----------------------------------------------------------------
def _plain():
    t = filled((64,), torch.float64)
    return t, [t]


def _slice_of_a_base():
    base = filled((40, 8), torch.int32, seed=5)
    return base[3::4, 1:7], [base]


def _from_numpy():
    a = np.arange(48, dtype=np.int64).reshape(6, 8) * 7 - 100
    t = torch.from_numpy(a)[1:, ::3]
    return t, [a]


def _from_buffer():
    buf = bytearray(bytes((i * 11 + 3) % 256 for i in range(256)))
    return torch.frombuffer(buf, dtype=torch.int16, count=100, offset=6), [buf]


OWNERS = {"plain": _plain, "slice-of-a-base": _slice_of_a_base, "from-numpy": _from_numpy,
          "from-buffer": _from_buffer}


@pytest.mark.parametrize("make", OWNERS.values(), ids=OWNERS.keys())
def test_view_keeps_its_tensor_and_memory_alive(view_on, make):
    t, owners = make()
    expected = torch_bytes(t)
    ref = weakref.ref(t)
    v = view_on(t)
    del t, owners, make  # the view is now the only way to the memory
    gc.collect()
    # Reuse the allocator's free memory: freed data would be overwritten here.
    churn = [torch.zeros(512, dtype=torch.float64) for _ in range(64)]
    churn += [np.zeros(512) for _ in range(64)] + [bytearray(256) for _ in range(64)]
    assert ref() is v.obj
    assert np.array_equal(raw_bytes(v), expected)
    del v
    gc.collect()
    assert ref() is None, "the view did not let go of its tensor"
    del churn


# --- what changes a tensor's storage under a view (README's list) --------------------------------
def _swap_tensors(t):
    torch.utils.swap_tensors(t, torch.arange(6.0, 12.0, dtype=torch.float64))


def _send_to_another_process(t):
    # What multiprocessing does to a tensor it sends (the parent pickles it into the
    # queue's pipe): torch's reduction moves the storage to shared memory first.
    queue = torch.multiprocessing.get_context("spawn").SimpleQueue()
    try:
        queue.put(t)
    finally:
        queue.close()


STORAGE_CHANGES = {
    "set_": lambda t: t.set_(torch.arange(8.0, dtype=torch.float64).untyped_storage()),
    "resize_": lambda t: t.resize_(4096),
    "data-assignment": lambda t: setattr(t, "data", torch.arange(6.0, dtype=torch.float64)),
    "swap_tensors": _swap_tensors,
    "storage-resize_": lambda t: t.untyped_storage().resize_(4096 * 8),
    "share_memory_": lambda t: t.share_memory_(),
    "sent-to-another-process": _send_to_another_process,
}


@pytest.mark.parametrize("change", STORAGE_CHANGES.values(), ids=STORAGE_CHANGES.keys())
def test_storage_changes_leave_a_view_pointing_at_old_memory(view_on, change):
    """Each operation gives the tensor other memory while a view of it lives (new memory
    is taken before the old is let go, so the addresses differ): the view keeps the old
    address, and viewing the tensor again gives torch's new answer."""
    t = torch.arange(6.0, dtype=torch.float64)
    v = view_on(t)
    before = t.data_ptr()
    change(t)
    assert v.obj is t and v.ptr == before != t.data_ptr()
    assert view_fields(view_on(t)) == torch_answer(t)


# --- no leaks ---------------------------------------------------------------------------------------
def test_many_views_leave_refcount_and_use_count_unchanged(view_on, path):
    t = torch.randn(8, 8)
    gc.collect()
    before = counts(t)
    bridge.reset_path_counts()
    for _ in range(N_VIEWS):
        view_on(t)
    gc.collect()
    assert counts(t) == before, f"{path}: (refcount, use count) {before} -> {counts(t)}"
    assert bridge.path_counts() == {p: (N_VIEWS if p == path else 0) for p in bridge.PATHS}


@pytest.mark.slow
def test_a_million_views_keep_resident_memory_flat(view_on, path):
    t = torch.randn(32, 32)
    for _ in range(10_000):  # warm up: free lists, caches
        view_on(t)
    before, rss = counts(t), _rss()
    for _ in range(MILLION):
        view_on(t)
    assert counts(t) == before
    assert _rss() - rss < RSS_BOUND, f"{path}: RSS grew by {(_rss() - rss) >> 10} KiB"


def test_live_views_hold_python_references_not_tensorimpl_references(view_on, path):
    """Each live view holds one reference to the Python tensor and none to the
    TensorImpl (the owned path's handle is already deleted)."""
    t = torch.randn(4).as_subclass(torch.nn.Parameter)
    refcount, use = counts(t)
    views = [view_on(t) for _ in range(1000)]
    assert counts(t) == (refcount + 1000, use), path
    del views
    assert counts(t) == (refcount, use), path


def _freed_at_offset():
    """Refused at the last check, after every getter ran (owned: with a live handle)."""
    flat = torch.zeros(64)
    view = flat[16:32].view(4, 4)
    flat.untyped_storage().resize_(0)
    return view


def _nested():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nested tensors are a prototype
        return torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])


#: Tensors refused at different points: the layout check right after the handle
#: (sparse), the device check (meta), a getter that throws (nested), the flag checks
#: after every getter (conj, neg), the last check (storage without memory).
REFUSED_TENSORS = {
    "conjugate-bit": lambda: torch.randn(3, dtype=torch.complex64).conj(),
    "negative-bit": lambda: torch.randn(3, dtype=torch.complex64).conj().imag,
    "quantized": lambda: torch.quantize_per_tensor(torch.ones(3), 0.5, 0, torch.qint8),
    "sub-byte": lambda: torch.empty(3, dtype=torch.uint4),
    "sparse": lambda: torch.eye(3).to_sparse(),
    "storage-without-memory": _freed_at_offset,
    "meta": lambda: torch.empty(2, device="meta"),
    "nested": _nested,
}


@pytest.mark.parametrize("make", REFUSED_TENSORS.values(), ids=REFUSED_TENSORS.keys())
def test_refusals_leave_refcount_and_use_count_unchanged(view_on, path, make):
    """A refusal after the handle was made (owned: deleted on the error path too) leaks
    nothing (references, use count, resident memory), and counts no view."""
    t = make()
    # The borrow refuses custom metadata (sparse, nested) with a TORCH_CHECK, so a C++
    # exception too; the other paths refuse sparse before any handle exists.
    throws = make is _nested or (path == "borrow" and make is REFUSED_TENSORS["sparse"])
    calls = THROWING if throws else N_VIEWS // 5
    gc.collect()
    before, rss = counts(t), _rss()
    bridge.reset_path_counts()
    refused = 0
    for _ in range(calls):
        try:
            view_on(t)
        except BufferError:
            refused += 1
    gc.collect()
    assert refused == calls
    assert counts(t) == before, f"{path}: (refcount, use count) {before} -> {counts(t)}"
    assert _rss() - rss < RSS_BOUND
    assert set(bridge.path_counts().values()) == {0}


def test_native_loop_leaves_refcount_and_use_count_unchanged(path):
    t = torch.randn(8, 8)
    before = counts(t)
    assert _bridge._native_loop(t, path, N_VIEWS) > 0
    assert counts(t) == before, f"{path}: (refcount, use count) {before} -> {counts(t)}"


@pytest.mark.slow
def test_a_million_native_reads_keep_resident_memory_flat(path):
    t = torch.randn((9, 2) + (1,) * _bridge.VIEW_INLINE_DIMS)  # more than a view's inline
    _bridge._native_loop(t, path, 10_000)
    before, rss = counts(t), _rss()
    _bridge._native_loop(t, path, MILLION)
    assert counts(t) == before
    assert _rss() - rss < RSS_BOUND


def test_a_view_allocates_its_object_and_nothing_more(view_on, path):
    """A live view of a tensor of up to ``VIEW_INLINE_DIMS`` dimensions is one object of
    ``TensorView.__basicsize__`` bytes plus CPython's GC header (its shape and strides
    tuples are made on first read), so 10,000 live views cost no more than that each, by
    tracemalloc's count."""
    t = torch.randn(32, 32)
    keep = [None] * 10_000
    view_on(t)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(len(keep)):
            keep[i] = view_on(t)
        per_view = (tracemalloc.get_traced_memory()[0] - before) / len(keep)
    finally:
        tracemalloc.stop()
    gc_header = 16  # PyGC_Head: two pointers, on every build this suite runs
    bound = bridge.TensorView.__basicsize__ + gc_header
    assert per_view <= bound + 1, (per_view, bound)
    assert keep[-1].shape == tuple(t.shape)  # the tuples are still made on demand


def test_a_view_is_a_snapshot_across_re_resolution(view_on, path):
    """A view's fields are fixed at creation, like its sizes: re-resolving the bridge
    (``_select._resolve_again``, the fault-injection hook) must not change the dtype,
    itemsize or device of views already made."""
    from bridge import _select

    t = torch.ones(3, dtype=torch.float16)
    v = view_on(t)
    def fields():
        out = []
        for name in ("dtype", "itemsize", "device_type", "device_index"):
            try:
                out.append(getattr(v, name))
            except Exception as exc:  # recorded, so the assertion shows what broke
                out.append(f"{name} raised {exc!r}")
        return out

    want = fields()
    try:
        _select._resolve_again(hide={"<torch>"})  # every table is cleared
        got = fields()
    finally:
        _select._resolve_again()
    assert want == [torch.float16, 2, "cpu", -1], want
    assert got == want, f"{path}: {want} -> {got}"
