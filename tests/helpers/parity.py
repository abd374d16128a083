"""The parity check: every path that must run here views a tensor exactly as torch
reports it, identically to every other path, and its pointer reads torch's bytes.

The paths are taken from ``expected_paths()`` (what this torch must offer), not from the
bridge's own ``available_paths()``, so a path that silently went missing fails here
instead of being left out.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import bridge
from bridge import _bridge
from helpers.expect import expected_paths, torch_answer, view_fields
from helpers.memory import raw_bytes, torch_bytes

#: Each path's own view function, keyed by path name (none of them touches the global
#: path choice): the one map from a path to its function.
VIEWS = {"owned": bridge.view_owned, "borrow": bridge.view_borrow,
         "fallback": bridge.view_fallback}


def paths_here() -> list[str]:
    """The paths that must run on this torch, in ``bridge.PATHS`` order."""
    return [p for p in bridge.PATHS if expected_paths()[p]]


def all_fields(v) -> dict:
    """Every field of a view except ``path``: what must be identical across paths."""
    return {**view_fields(v), "dtype_code": v.dtype_code, "obj": id(v.obj)}


def assert_parity(t: torch.Tensor, read: bool = True) -> dict:
    """View ``t`` once on each path that must run here and check everything.

    Checks, per path: the view's fields equal ``torch_answer(t)`` (pointer with storage
    offset, shape, strides in elements, ndim, dtype, itemsize in bytes, device type and
    index); ``path`` names the path; ``obj is t``; the paths' views agree field by field
    (``dtype_code`` included); each path's counter went up by exactly one and the
    others' not at all; and, when ``read`` and ``t`` has elements, the bytes read through
    ``view.ptr`` equal the bytes torch addresses (``helpers.memory``).

    Returns ``{path: TensorView}``. Resets the path counters. Raises AssertionError
    naming the path and field that differ.
    """
    want = torch_answer(t)
    bridge.reset_path_counts()
    views = {}
    for p in paths_here():
        v = VIEWS[p](t)
        views[p] = v
        got = view_fields(v)
        bad = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
        assert not bad, f"{p}: (view, torch) differ: {bad}"
        assert v.path == p, (p, v.path)
        assert v.obj is t, f"{p}: view.obj is not the tensor"
    counts = bridge.path_counts()
    assert counts == {p: int(p in views) for p in counts}, counts
    fields = {p: all_fields(v) for p, v in views.items()}
    first = next(iter(fields.values()))
    for p, f in fields.items():
        assert f == first, f"paths disagree: {fields}"
    if read and t.numel():
        expected = torch_bytes(t)
        for p, v in views.items():
            got_bytes = raw_bytes(v)
            assert np.array_equal(got_bytes, expected), (
                f"{p}: bytes read through view.ptr differ from torch's "
                f"(first 16: {got_bytes[:16].tolist()} vs {expected[:16].tolist()})")
    return views


def assert_refused_alike(t, exc_type=BufferError) -> str:
    """Every path that must run here raises ``exc_type`` for ``t`` with the same message,
    and no path's counter moves. Returns the message."""
    bridge.reset_path_counts()
    messages = {}
    for p in paths_here():
        try:
            VIEWS[p](t)
        except exc_type as exc:
            messages[p] = str(exc)
        else:
            raise AssertionError(f"{p} made a view of a tensor every path must refuse")
    assert len(set(messages.values())) == 1, f"paths refuse with different messages: {messages}"
    assert set(bridge.path_counts().values()) == {0}, bridge.path_counts()
    return next(iter(messages.values()))


def refused_on_every_entry(t, path: str, pattern: str) -> str:
    """``t`` is refused with a BufferError matching ``pattern`` by ``path``'s own view
    function, by ``view`` after ``set_path(path)`` and by ``_native_loop``, with one
    message. Returns the message. Leaves ``path`` chosen (``conftest`` restores auto)."""
    with pytest.raises(BufferError) as direct:
        VIEWS[path](t)
    bridge.set_path(path)
    with pytest.raises(BufferError) as via_view:
        bridge.view(t)
    with pytest.raises(BufferError) as via_loop:
        _bridge._native_loop(t, path, 1)
    msg = str(direct.value)
    assert str(via_view.value) == str(via_loop.value) == msg
    assert re.search(pattern, msg), msg
    return msg
