"""A view's ``shape`` and ``strides`` tuples and its ``ptr`` int: made on first read, kept
by the view, and kept by a freed view on the freelist (GIL builds) for the next view
made from it, which returns them again only where its sizes and strides (its address)
are the same values.

Every test makes views of tensors of different dimensions and values in sequence, each
freed before the next is made (so the next one is the same object, refilled), and
asserts each view's tuples and address against torch's own ``t.shape`` / ``t.stride()`` /
``t.data_ptr()``. Reuse is
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
#: sizes with other strides, the same values under another ndim, 0-d, empty, the most
#: dimensions a view compares by a copy (6), by its tuples' items (7 to 16) and more than
#: it stores inline (17), large sizes and strides (not small ints; over 2**30: not one
#: digit of CPython's ints).
def _tensors():
    base = torch.randn(4, 4)
    big = torch.empty(3, 1000)
    seven = torch.randn(2, 1, 3, 1, 2, 1, 2)
    huge = seven.as_strided(seven.shape, (12, 2**40, 4, 2**41, 2, 2**35, 1))
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
        torch.randn(2, 1, 3, 1, 2, 1),        # 6 dims: the most compared by a copy
        seven,                                # 7: compared by the tuples' items
        seven.transpose(0, 6),
        huge,                                 # strides of several digits
        seven.as_strided(seven.shape, (12, 2**40 + 1, 4, 2**41, 2, 2**35, 1)),
        huge,
        torch.randn(2, 1, 3, 1, 2, 1, 2, 1),  # 8 dims
        torch.randn(2, 1, 3, 1, 2, 1, 2, 1, 2),  # 9
        torch.randn(2, 1, 3, 1, 2, 1, 2, 1, 2).transpose(0, 8),
        torch.randn((2,) * 16),               # 16: the most stored inline
        torch.randn((2,) * 16).transpose(3, 9),
        torch.randn((2,) * 17),               # 17: beyond inline
        torch.randn((2,) * 16),               # back to 16 after a heap view
        torch.randn(2, 1, 3, 1, 2, 1, 2, 1),  # back to 8
        big,
        big.t(),
        big[:, ::7],
        torch.randn(32, 32),
    ]


def _check(v, t):
    assert v.shape == tuple(t.shape)
    assert v.strides == t.stride()
    assert v.ndim == t.dim()
    assert v.ptr == t.data_ptr()
    # Read twice: the second read is the kept tuple (int), still right.
    assert v.shape == tuple(t.shape) and v.strides == t.stride()
    assert v.ptr == t.data_ptr()


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


@pytest.mark.parametrize("shape", [(6, 5), (2, 1, 3, 1, 2, 1, 2), (2,) * 16],
                         ids=["2 dims", "7 dims", "16 dims"])
def test_the_same_values_give_the_same_tuples_on_a_gil_build(view_on, shape):
    a, b = torch.randn(shape), torch.randn(shape)
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


def test_a_0d_view_reads_the_empty_tuple_and_leaves_the_kept_tuples(view_on):
    """A 0-d tensor's shape and strides are ``()``, read without the check; the tuples a
    freed view kept stay with it, so a view of the earlier values after it gets them
    again (GIL build), and one of other values gets its own."""
    a, b = torch.randn(6, 5), torch.randn(6, 5)
    v = view_on(a)
    shape, strides = v.shape, v.strides
    del v
    for scalar in (torch.tensor(3.0), torch.tensor(7, dtype=torch.int64)[()]):
        z = view_on(scalar)
        assert z.shape == () == tuple(scalar.shape) and z.strides == () == scalar.stride()
        assert z.ptr == scalar.data_ptr() and z.device_index == scalar.get_device() == -1
        del z
    w = view_on(b)
    assert (w.shape is shape and w.strides is strides) != FREE_THREADED
    _check(w, b)
    del w
    x = view_on(a.t())
    _check(x, a.t())
    assert shape == (6, 5) and strides == (5, 1)  # held by the caller, unchanged


def test_the_same_address_gives_the_same_int_on_a_gil_build(view_on):
    t = torch.randn(6, 5)
    v = view_on(t)
    ptr = v.ptr
    assert ptr == t.data_ptr() > 2**30  # not a small int, nor one digit of CPython's
    assert (v.ptr is ptr) != FREE_THREADED  # kept by the view, with a GIL
    del v
    w = view_on(t)  # the freed view, refilled
    assert w.ptr == ptr and (w.ptr is ptr) != FREE_THREADED
    del w
    for other in (t[1:], t.clone(), torch.randn(6, 5)[:, 1:]):  # other addresses
        x = view_on(other)
        assert x.ptr == other.data_ptr() != ptr and x.ptr is not ptr
        del x
    assert ptr == t.data_ptr()  # held by the caller, unchanged


def test_a_tensor_changed_in_place_between_views(view_on):
    t = torch.randn(4, 4)
    v = view_on(t)
    _check(v, t)
    del v
    for size in ((4, 4), (2, 8), (16,), (4, 4), (1, 2, 8), (1000, 1000), (3,)):
        t.resize_(size)  # 1000 x 1000 moves the data: another address
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


def test_a_narrow_fill_between_leaves_no_wide_tuples(view_on):
    """Tuples of a 9 to 16 dimensional tensor are made from the whole of a view's inline
    room; a view of a narrow tensor made from the same freed view in between (its tuples
    never read) writes half of that room, so the next wide view must not take the wide
    tuples back because its values equal the room's: here C differs from A only in the
    four strides the narrow view B wrote over, with the values B wrote."""
    a = torch.randn((2,) * 10)
    b = torch.randn(3, 5)
    stride_c = a.stride()[:6] + (3, 5, 5, 1)  # B's sizes and strides, where B wrote them
    c = torch.randn(1024).as_strided((2,) * 10, stride_c)
    v = view_on(a)
    assert v.shape == tuple(a.shape) and v.strides == a.stride()
    del v
    w = view_on(b)  # no tuple read
    del w
    x = view_on(c)
    _check(x, c)


def test_a_wide_fill_between_leaves_no_narrow_tuples(view_on):
    """Tuples of a narrow tensor are made from one half of a view's inline room; a view
    of a 10-dimensional tensor made from the same freed view in between (its tuples never
    read) writes over both halves, so the next narrow view must not take the narrow
    tuples back because its values equal what the wide view left in that half. Which
    half the narrow tuples came from depends on the view's history, so each of the two
    possible leftovers is tried, from either half."""
    a = torch.randn(3, 5)
    b = torch.randn((2,) * 10)  # sizes 2 x 10, strides 512 .. 1
    store = torch.randn(32)
    leftovers = [store.as_strided((8, 4), (2, 1)),  # b's strides 8, 4, 2, 1 (second half)
                 store.as_strided((2, 2), (2, 2))]  # b's sizes (first half)
    for _ in range(2):
        for c in leftovers:
            v = view_on(a)
            assert v.shape == (3, 5) and v.strides == (5, 1)
            del v
            w = view_on(b)  # no tuple read
            del w
            x = view_on(c)
            _check(x, c)
            del x
