"""A view's ``shape`` and ``strides`` tuples: made on first read, kept by the view, and
kept by a freed view on the freelist (GIL builds) for the next view made from it, which
returns them again only where its sizes and strides are the same values.

Every test makes views of tensors of different dimensions and values in sequence, each
freed before the next is made (so the next one is the same object, refilled), and
asserts each view's tuples against torch's own ``t.shape`` / ``t.stride()``. Reuse is
asserted where it must happen (same values, GIL build: the very tuple objects) and must
not (other values: a fresh tuple, the old one untouched for whoever still holds it).
"""

import gc
import threading

import pytest
import torch

import bridge
from bridge import _support

FREE_THREADED = _support.free_threaded()

#: tensors whose sizes / strides collide in every way the check must tell apart: the same
#: sizes with other strides, the same values under another ndim, 0-d, empty, more
#: dimensions than a view stores inline (8), large sizes and strides (not small ints).
def _tensors():
    base = torch.randn(4, 4)
    big = torch.empty(3, 1000)
    return [
        torch.randn(32, 32),
        torch.randn(32, 32),                  # same values: tuples reused
        base,
        base.t(),                             # same sizes, other strides
        base[:, :2],                          # other sizes, same strides
        torch.randn(4),
        torch.randn(4, 1),                    # the 1-d values again, as a prefix
        torch.tensor(3.0),                    # 0-d: empty tuples
        torch.randn(0, 5),                    # no elements
        torch.randn(2, 1, 3, 1, 2, 1, 2, 1),  # 8 dims: the most stored inline
        torch.randn(2, 1, 3, 1, 2, 1, 2, 1, 2),  # 9: beyond inline
        torch.randn(2, 1, 3, 1, 2, 1, 2, 1, 2).transpose(0, 8),
        torch.randn(2, 1, 3, 1, 2, 1, 2, 1),  # back to 8 after a heap view
        big,
        big.t(),
        big[:, ::7],
        torch.randn(32, 32),
    ]


def _check(v, t):
    assert v.shape == tuple(t.shape)
    assert v.strides == t.stride()
    assert v.ndim == t.dim()
    # Read twice: the second read is the kept tuple, still right.
    assert v.shape == tuple(t.shape) and v.strides == t.stride()


@pytest.fixture(autouse=True)
def _no_gc():
    # A collection between two views could free other views onto the freelist first.
    was = gc.isenabled()
    gc.disable()
    yield
    if was:
        gc.enable()


@pytest.mark.parametrize("order", ["shape first", "strides first", "shape only",
                                   "strides only"])
def test_refilled_views_report_their_own_tensor(view_on, order):
    seq = _tensors()
    for _ in range(3):  # the sequence again: each view refilled from the one before
        for t in seq:
            v = view_on(t)
            if order == "shape first":
                _check(v, t)
            elif order == "strides first":
                assert v.strides == t.stride()
                assert v.shape == tuple(t.shape)
            elif order == "shape only":
                assert v.shape == tuple(t.shape)
            else:
                assert v.strides == t.stride()
            del v
        # and every pair in both orders, reading only the first's shape or strides
        for a, b in zip(seq, seq[1:] + seq[:1]):
            v = view_on(a)
            assert (v.shape if order != "strides only" else v.strides) is not None
            del v
            v = view_on(b)
            _check(v, b)
            del v


def test_the_same_values_give_the_same_tuples_on_a_gil_build(view_on):
    a, b = torch.randn(6, 5), torch.randn(6, 5)
    v = view_on(a)
    shape, strides = v.shape, v.strides
    del v
    w = view_on(b)
    if FREE_THREADED:  # no freelist there: every view is a new object, its tuples new
        assert w.shape == shape and w.shape is not shape
    else:
        assert w.shape is shape and w.strides is strides
    _check(w, b)


def test_other_values_give_new_tuples_and_leave_the_old_ones(view_on):
    a = torch.randn(6, 5)
    v = view_on(a)
    shape, strides = v.shape, v.strides
    del v
    for t in (a.t(), a[:3], a.unsqueeze(0), torch.randn(6, 5, 1)):
        w = view_on(t)
        assert w.shape is not shape or w.strides is not strides
        _check(w, t)
        del w
        assert shape == (6, 5) and strides == (5, 1)  # held by the caller, unchanged


def test_a_tensor_changed_in_place_between_views(view_on):
    t = torch.randn(4, 4)
    v = view_on(t)
    _check(v, t)
    del v
    for size in ((4, 4), (2, 8), (16,), (4, 4), (1, 2, 8)):
        t.resize_(size)
        v = view_on(t)
        _check(v, t)
        del v


def test_a_refused_view_between_leaves_no_stale_tuples(view_on):
    good = torch.randn(3, 7)
    refused = [torch.tensor([1 + 2j, 3j]).conj(),  # refused after the dims are copied
               torch.eye(3).to_sparse(), torch.empty(7, 3, device="meta")]
    for bad in refused:
        v = view_on(good)
        _check(v, good)
        del v
        with pytest.raises(BufferError):
            view_on(bad)
        other = torch.randn(7, 3)
        v = view_on(other)
        _check(v, other)
        del v


def test_views_read_by_many_threads_report_their_own_tensor(view_on):
    """Threads each making views of tensors of other shapes in turn, and all reading
    one shared, unread view at once (on a free-threaded build its first read races)."""
    shapes = [(2, 3), (3, 2), (6,), (1, 6), (2, 3, 1), (5, 5)]
    tensors = [torch.randn(s) for s in shapes]
    rounds = 300
    shared = [(view_on(tensors[i % len(tensors)]), tensors[i % len(tensors)])
              for i in range(rounds)]
    errors = []
    barrier = threading.Barrier(len(shapes))

    def work(k):
        try:
            for i in range(rounds):
                t = tensors[(k + i) % len(tensors)]
                barrier.wait()
                sv, st = shared[i]
                first = sv.strides if k % 2 else sv.shape
                assert sv.shape == tuple(st.shape) and sv.strides == st.stride()
                assert first == (st.stride() if k % 2 else tuple(st.shape))
                v = view_on(t)
                _check(v, t)
                del v
        except Exception as exc:  # reported below
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(shapes))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[0]
    for sv, st in shared:  # every shared view read once per thread, one tuple each
        assert sv.shape is sv.shape and sv.strides is sv.strides
