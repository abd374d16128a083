"""A kernel launcher's use of the bridge, as statements ``bench/callgrind.py`` counts.

Two series beside the single-tensor statements:

- *launch k*: one call views k CPU tensors of distinct shapes (1 to 4 dimensions) and
  reads six attributes of each view, while the previous call's views are still alive (a
  launcher that keeps its arguments until the next launch); its anchor is the same
  launcher reading the hand-written five (``data_ptr()``, ``shape``, ``stride()``,
  ``dtype``, ``device``) of the same tensors and keeping them, its arguments, the same
  way (a list per call, replacing the last call's), so that the two differ only in what
  a launch reads. Reported per tensor, beside the launch alone (the anchor's loop and
  argument list, reading nothing: what both sides pay) and the ratio of what remains.
- *dims d*: ``view_borrow(t)`` and a view's six attributes for one tensor of d dimensions
  (every size 2), d = 0 to 16: the cost per dimension, and any step in it.

Each statement is ``timeit`` source over the names ``namespace`` returns.
"""

from __future__ import annotations

#: tensors per launch
KS = (1, 3, 8, 26)
#: the six-attribute read's goal on this workload: at most this ratio to the
#: hand-written reads at each k of GOAL_KS (k = 26 is reported beside them)
GOAL_RATIO = 0.55
GOAL_KS = (1, 3, 8)
#: dimensions of the dims series
DIMS = tuple(range(17))
#: the six attributes a launcher reads of a view ``v``
SIX = "(v.ptr, v.shape, v.strides, v.dtype, v.device_type, v.device_index)"
#: the hand-written five reads of a tensor ``t``
FIVE = "(t.data_ptr(), t.shape, t.stride(), t.dtype, t.device)"


def launch_shapes(k: int) -> list[tuple[int, ...]]:
    """The k shapes of one launch (elements): tensor i has ``i % 4 + 1`` dimensions, its
    first size ``i + 2`` and the others 3, so no two share a shape."""
    return [(i + 2,) + (3,) * (i % 4) for i in range(k)]


def statements(ks=KS, dims=DIMS) -> dict[str, tuple[str, int]]:
    """``{name: (timeit source, tensors per call)}``: ``launch_view_<k>``,
    ``launch_hand_<k>`` and ``launch_bare_<k>`` (the anchor less its reads) per k,
    ``dims_view_borrow_<d>`` and ``dims_view_read_<d>`` per d."""
    out = {}
    for k in ks:
        # The views of this call replace the last call's once all are made (held<k>[0]),
        # so k views are alive beside the k new ones, as in a launcher holding its
        # arguments; the anchor holds its arguments, the tensors, alike (kept<k>[0]): the
        # list's cost, a large share of a call at k = 1, is the launcher's, not the
        # view's. A loop, not a comprehension, so that neither side pays a frame.
        out[f"launch_view_{k}"] = (f"views = []\nfor t in ts{k}:\n    v = view(t)\n"
                                   f"    views.append(v)\n    {SIX}\nheld{k}[0] = views", k)
        out[f"launch_hand_{k}"] = (f"args = []\nfor t in ts{k}:\n    args.append(t)\n"
                                   f"    {FIVE}\nkept{k}[0] = args", k)
        out[f"launch_bare_{k}"] = (f"args = []\nfor t in ts{k}:\n    args.append(t)\n"
                                   f"kept{k}[0] = args", k)
    for d in dims:
        out[f"dims_view_borrow_{d}"] = (f"view_borrow(td{d})", 1)
        out[f"dims_view_read_{d}"] = (f"v = view(td{d}); {SIX}", 1)
    return out


def namespace(torch, bridge, ks=KS, dims=DIMS) -> dict:
    """The globals the statements run in: ``ts<k>`` (the k tensors), ``held<k>`` (a list
    holding the views the last call made), ``kept<k>`` (the anchor's: the tensors it
    launched with), ``td<d>`` (a float32 tensor of d dimensions of size 2), ``view`` and
    ``view_borrow``."""
    ns = {"view": bridge.view, "view_borrow": bridge.view_borrow}
    for k in ks:
        ns[f"ts{k}"] = [torch.zeros(s, dtype=torch.float32) for s in launch_shapes(k)]
        ns[f"held{k}"] = [[]]
        ns[f"kept{k}"] = [[]]
    for d in dims:
        ns[f"td{d}"] = torch.zeros((2,) * d, dtype=torch.float32)
    return ns


def launch_rows(per_call: dict, ks=KS) -> list[dict]:
    """Per k, from ``{"py:<name>": instructions per call}``: the view's and the anchor's
    instructions per tensor and their ratio; the launch alone per tensor (``bare``) and
    the ratio of what each side adds to it (``reads_ratio``), None where the bare launch
    was not counted. Rows whose statements were not counted are left out."""
    rows = []
    for k in ks:
        view, hand = per_call.get(f"py:launch_view_{k}"), per_call.get(f"py:launch_hand_{k}")
        if view is None or not hand:
            continue
        ratio = view / hand
        bare = per_call.get(f"py:launch_bare_{k}")
        reads = None if bare is None or hand <= bare else (view - bare) / (hand - bare)
        rows.append({"k": k, "view": view / k, "hand": hand / k, "ratio": ratio,
                     "status": ("met" if ratio <= GOAL_RATIO else "missed") if k in GOAL_KS
                     else "reported",
                     "bare": None if bare is None else bare / k, "reads_ratio": reads})
    return rows


def dims_rows(per_call: dict, dims=DIMS) -> list[dict]:
    """Per d: ``view_borrow`` and the six-attribute read, instructions per call, and each
    one's step from d - 1 (None for the first d)."""
    rows, prev = [], None
    for d in dims:
        borrow = per_call.get(f"py:dims_view_borrow_{d}")
        read = per_call.get(f"py:dims_view_read_{d}")
        if borrow is None or read is None:
            continue
        rows.append({"d": d, "view_borrow": borrow, "view_read": read,
                     "borrow_step": None if prev is None else borrow - prev["view_borrow"],
                     "read_step": None if prev is None else read - prev["view_read"]})
        prev = rows[-1]
    return rows


def slope_check(rows: list[dict], key: str, low=range(1, 9), factor=2.0) -> dict:
    """Whether each step of ``key`` (``"view_borrow"`` or ``"view_read"``) from d = 9 on
    stays within ``factor`` times the mean step over ``low`` (d = 1 to 8):
    ``{"slope", "bound", "worst_d", "worst_step", "ok"}``; None values where the series
    lacks the dims."""
    by_d = {r["d"]: r for r in rows}
    lows = [d for d in low if d in by_d and d - 1 in by_d]
    if not lows:
        return {"slope": None, "bound": None, "worst_d": None, "worst_step": None, "ok": None}
    slope = (by_d[lows[-1]][key] - by_d[lows[0] - 1][key]) / len(lows)
    bound = factor * max(slope, 1.0)
    step = key.split("_")[-1] + "_step"  # borrow_step, read_step
    high = [r for r in rows if r["d"] > max(low) and r[step] is not None]
    worst = max(high, key=lambda r: r[step], default=None)
    return {"slope": slope, "bound": bound,
            "worst_d": worst["d"] if worst else None,
            "worst_step": worst[step] if worst else None,
            "ok": None if worst is None else worst[step] <= bound}
