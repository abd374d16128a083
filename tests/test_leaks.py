"""Leaks: a million views leave the tensor's refcount, its TensorImpl's use count and
the process's resident memory where they were.

``Tensor._use_count()`` (torch's private accessor, present on 2.13 to 2.15) is the
TensorImpl's intrusive refcount: an owned handle that is never deleted shows up there
as +1 per call. The refcount (``sys.getrefcount``) catches a leaked Python reference
(the owned shim may incref the wrapper). RSS, with a generous bound, catches leaks of
anything else (a view's heap-allocated shape, a handle's ``at::Tensor`` box: 1,000,000
leaked 8-byte boxes are at least 16 MiB with malloc's overhead, over the bound).

The owned path must delete its handle even when a check after the handle was made
fails: sparse tensors (refused by the layout check), conjugate views (refused after
every getter ran) and nested tensors (a getter throws) are fed to it repeatedly.
"""

import os
import sys
import warnings

import pytest
import torch

import bridge
from bridge import _bridge
from helpers.expect import expected_paths

AVAILABLE = [p for p in bridge.PATHS if expected_paths()[p]]
VIEWS = 1_000_000
FAILING = 100_000
#: torch builds a C++ backtrace for every exception a getter throws (about 1 ms here):
#: fewer calls, still exact, since the use count would be off by one per leaked handle.
FAILING_THROWING = 1_000
RSS_BOUND = 8 << 20  # bytes: generous; a leak per call is 8 MB at least over 1M calls


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _state(t):
    return sys.getrefcount(t), t._use_count()


def test_use_count_accessor_exists():
    t = torch.ones(1)
    assert t._use_count() == 1
    alias = t.detach()  # shares nothing but the storage: a new TensorImpl
    assert t._use_count() == 1
    del alias


@pytest.mark.slow
@pytest.mark.parametrize("path", AVAILABLE)
def test_a_million_views_leak_nothing(path):
    view = getattr(bridge, f"view_{path}")
    t = torch.randn(32, 32)
    for _ in range(10_000):  # warm up: free lists, caches
        view(t)
    before, rss = _state(t), _rss()
    for _ in range(VIEWS):
        view(t)
    assert _state(t) == before
    assert _rss() - rss < RSS_BOUND, f"RSS grew by {(_rss() - rss) >> 10} KiB"


@pytest.mark.slow
@pytest.mark.parametrize("path", AVAILABLE)
def test_a_million_native_reads_leak_nothing(path):
    t = torch.randn(9, 2, 1, 1, 1, 1, 1, 1, 1, 1)  # more dimensions than stored inline
    _bridge._native_loop(t, path, 10_000)
    before, rss = _state(t), _rss()
    _bridge._native_loop(t, path, VIEWS)
    assert _state(t) == before
    assert _rss() - rss < RSS_BOUND


def _failing_inputs():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    return {  # input, calls
        "sparse (layout check, right after the handle)": (torch.eye(3).to_sparse(), FAILING),
        "conj (flag check, after every getter)": (torch.tensor([1 + 2j]).conj(), FAILING),
        "nested (a getter throws)": (nested, FAILING_THROWING),
        "meta (device check)": (torch.empty(2, device="meta"), FAILING),
    }


@pytest.mark.parametrize("path", AVAILABLE)
@pytest.mark.parametrize("what", list(_failing_inputs()))
def test_failing_views_release_what_they_took(path, what):
    t, calls = _failing_inputs()[what]
    view = getattr(bridge, f"view_{path}")
    with pytest.raises(BufferError):
        view(t)
    before, rss = _state(t), _rss()
    for _ in range(calls):
        try:
            view(t)
        except BufferError:
            pass
    assert _state(t) == before, f"{path} on {what}: (refcount, use count) went from {before}"
    assert _rss() - rss < RSS_BOUND


def test_owned_handle_is_counted_while_it_lives():
    """The use count does see an owned handle: the failing-view tests above can fail."""
    if "owned" not in AVAILABLE:
        pytest.skip("torch_tensor_from_pyobject is not exported by this torch "
                    "(its absence is asserted in test_availability)")
    import ctypes

    from bridge import _resolve
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


@pytest.mark.parametrize("path", AVAILABLE)
def test_a_view_allocates_its_object_and_nothing_more(path):
    """Memory per view, measured: a live view of a tensor of up to ``INLINE_DIMS``
    dimensions is one object of ``TensorView.__basicsize__`` bytes plus CPython's GC
    header (its shape and strides tuples are made on first read, not at creation), so
    10,000 live views cost no more than that each, by tracemalloc's count."""
    import tracemalloc

    view = getattr(bridge, f"view_{path}")
    t = torch.randn(32, 32)
    keep = [None] * 10_000
    view(t)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(len(keep)):
            keep[i] = view(t)
        per_view = (tracemalloc.get_traced_memory()[0] - before) / len(keep)
    finally:
        tracemalloc.stop()
    gc_header = 16  # PyGC_Head: two pointers, on every build this suite runs
    bound = bridge.TensorView.__basicsize__ + gc_header
    assert per_view <= bound + 1, (per_view, bound)
    assert keep[-1].shape == tuple(t.shape)  # the tuples are still made on demand
