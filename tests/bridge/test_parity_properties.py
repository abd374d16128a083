"""Property-based parity: random shapes, strides, storage offsets, dtypes and chains of
view operations; every generated tensor is viewed identically by every path and as
torch reports it, and its bytes read through each pointer are torch's.

Example counts are chosen so the module takes seconds per torch version on a 2-core
machine (``make test`` runs it on three versions).
"""

from __future__ import annotations

import math

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.cases import VIEWABLE, cpu_allocation_error, filled
from helpers.parity import assert_parity

#: Dtypes to draw from: every viewable dtype torch can allocate on the CPU here.
DTYPES = [d for d in VIEWABLE if cpu_allocation_error(d) is None]

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

dtypes = st.sampled_from(DTYPES)


@st.composite
def strided_tensors(draw):
    """``as_strided`` over a patterned storage: any sizes (0 included), any strides
    (0 and overlapping included) and any storage offset."""
    dtype = draw(dtypes)
    ndim = draw(st.integers(0, 6))
    shape = draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim))
    strides = draw(st.lists(st.integers(0, 7), min_size=ndim, max_size=ndim))
    offset = draw(st.integers(0, 9))
    reach = sum((n - 1) * s for n, s in zip(shape, strides)) if math.prod(shape) else 0
    base = filled((offset + reach + 1,), dtype, seed=draw(st.integers(0, 250)))
    return base.as_strided(shape, strides, offset)


@settings(max_examples=500, **SETTINGS)
@given(strided_tensors())
def test_random_as_strided_tensors_agree(t):
    assert_parity(t)


def _apply(draw, t):
    """One view operation chosen by hypothesis, valid for ``t``'s current shape."""
    ops = ["unsqueeze", "permute"]
    if t.dim() >= 1:
        ops += ["slice", "select", "narrow", "expand", "unfold"]
    if t.dim() >= 2:
        ops += ["transpose", "diagonal"]
    if t.dim() == 4:
        ops += ["channels_last"]
    op = draw(st.sampled_from(ops))
    dim = draw(st.integers(0, max(t.dim() - 1, 0)))
    n = t.shape[dim] if t.dim() else 1
    if op == "unsqueeze":
        return t.unsqueeze(draw(st.integers(0, t.dim())))
    if op == "permute":
        return t.permute(tuple(draw(st.permutations(range(t.dim())))))
    if op == "slice":
        start = draw(st.integers(0, n))
        step = draw(st.integers(1, 4))
        return t[(slice(None),) * dim + (slice(start, None, step),)]
    if op == "select":
        return t.select(dim, draw(st.integers(0, n - 1))) if n else t
    if op == "narrow":
        start = draw(st.integers(0, n))
        return t.narrow(dim, start, draw(st.integers(0, n - start)))
    if op == "expand":
        if n != 1:
            return t.unsqueeze(dim).expand(*t.shape[:dim], draw(st.integers(0, 3)), *t.shape[dim:])
        return t.expand(*t.shape[:dim], draw(st.integers(0, 3)), *t.shape[dim + 1:])
    if op == "unfold":
        size = draw(st.integers(0, n))
        return t.unfold(dim, size, draw(st.integers(1, 3)))
    if op == "transpose":
        return t.transpose(dim, draw(st.integers(0, t.dim() - 1)))
    if op == "diagonal":
        other = draw(st.integers(0, t.dim() - 1).filter(lambda d: d != dim))
        return t.diagonal(draw(st.integers(-2, 2)), dim, other)
    return t.contiguous(memory_format=torch.channels_last)


@st.composite
def view_chains(draw):
    """A patterned contiguous tensor, then up to six view operations in a row."""
    dtype = draw(dtypes)
    shape = draw(st.lists(st.integers(1, 5), min_size=1, max_size=4))
    t = filled(tuple(shape), dtype, seed=draw(st.integers(0, 250)))
    for _ in range(draw(st.integers(1, 6))):
        t = _apply(draw, t)
    return t


@settings(max_examples=300, **SETTINGS)
@given(view_chains())
def test_random_view_chains_agree(t):
    assert_parity(t)


@st.composite
def many_dim_tensors(draw):
    """9 to 64 dimensions (past the eight of one of a view's inline rooms: its one room
    of 16, then a heap), sizes 1 or 2 with at most ten 2s, randomly permuted, one
    dimension sliced with a step."""
    dtype = draw(dtypes)
    ndim = draw(st.integers(9, 64))
    twos = set(draw(st.lists(st.integers(0, ndim - 1), max_size=10)))
    t = filled(tuple(2 if i in twos else 1 for i in range(ndim)), dtype,
               seed=draw(st.integers(0, 250)))
    t = t.permute(*draw(st.permutations(range(ndim))))
    dim = draw(st.integers(0, ndim - 1))
    return t[(slice(None),) * dim + (slice(draw(st.integers(0, 1)), None, 2),)]


@settings(max_examples=120, **SETTINGS)
@given(many_dim_tensors())
def test_random_many_dim_tensors_agree(t):
    assert t.dim() >= 9
    assert_parity(t)
