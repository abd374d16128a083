"""Correctness checks made outside every timed loop: a benchmark of a wrong answer
is worthless, so each contender's answer is compared with torch's own first."""

from __future__ import annotations

from bridge import PATHS

VIEWERS = PATHS


def viewer(bridge, path: str):
    """The bridge's single-path view function for ``path`` (no global state)."""
    return {"owned": bridge.view_owned, "borrow": bridge.view_borrow,
            "fallback": bridge.view_fallback}[path]


def check_view(v, t) -> None:
    """Raise AssertionError unless view ``v`` describes tensor ``t`` exactly (pointer with
    storage offset, shape, strides in elements, dtype, device type and index)."""
    index = t.device.index if t.device.index is not None else -1
    got = (v.ptr, v.shape, v.strides, v.dtype, v.device_type, v.device_index)
    want = (t.data_ptr(), tuple(t.shape), t.stride(), t.dtype, t.device.type, index)
    assert got == want, f"{v.path} view is wrong: {got} != {want}"


def check_paths(bridge, tensors, paths) -> None:
    """Check every path's view of every tensor."""
    for p in paths:
        f = viewer(bridge, p)
        for t in tensors:
            check_view(f(t), t)
