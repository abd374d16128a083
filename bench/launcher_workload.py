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
- *launch k of d dimensions*: the same launch with every tensor of d dimensions (d of
  ``LAUNCH_DIMS``; sizes distinct, as above), each against both anchors a launcher
  writes: ``t.device`` (the five above) and ``t.get_device()`` (an int, what a CUDA
  launcher asks; cheaper than building the device object). The goal holds for every
  shape and against either anchor.
- *dims d*: ``view_borrow(t)`` and a view's six attributes for one tensor of d dimensions
  (every size 2), d = 0 to 16: the cost per dimension, and any step in it.

The launch statements are counted in several fresh processes, each with its own string
hash seed (``bench/callgrind.py``): a ratio is reported with its range over them, and the
goal is met where every process's ratio is within ``GOAL_BAR``.

Each statement is ``timeit`` source over the names ``namespace`` returns.
"""

from __future__ import annotations

#: tensors per launch
KS = (1, 3, 8, 26)
#: the six-attribute read's goal on this workload: at most this ratio to the
#: hand-written reads at each k of GOAL_KS (k = 26 is reported beside them)
GOAL_RATIO = 0.55
GOAL_KS = (1, 3, 8)
#: what every process's ratio must stay within: the goal less 2%, a margin wider than the
#: counts of torch's bindings move between processes (10 to 25 instructions of ~5,000)
GOAL_BAR = round(GOAL_RATIO * 0.98, 3)
#: the dimensions of the launches of one ndim (beside the launches of mixed shapes)
LAUNCH_DIMS = (0, 1, 4, 8)
#: dimensions of the dims series
DIMS = tuple(range(17))
#: the six attributes a launcher reads of a view ``v``
SIX = "(v.ptr, v.shape, v.strides, v.dtype, v.device_type, v.device_index)"
#: the hand-written five reads of a tensor ``t``
FIVE = "(t.data_ptr(), t.shape, t.stride(), t.dtype, t.device)"
#: the same five with the device as a CUDA launcher reads it: its index as an int
FIVE_GET_DEVICE = "(t.data_ptr(), t.shape, t.stride(), t.dtype, t.get_device())"
#: the anchors: name -> the hand-written reads
ANCHORS = {"device": FIVE, "get_device": FIVE_GET_DEVICE}
#: the shapes of a launch: "mixed" (``launch_shapes``) or d dimensions (``dims_shapes``)
SHAPES = ("mixed",) + tuple(f"d{d}" for d in LAUNCH_DIMS)


def launch_shapes(k: int) -> list[tuple[int, ...]]:
    """The k shapes of one launch (elements): tensor i has ``i % 4 + 1`` dimensions, its
    first size ``i + 2`` and the others 3, so no two share a shape."""
    return [(i + 2,) + (3,) * (i % 4) for i in range(k)]


def dims_shapes(k: int, d: int) -> list[tuple[int, ...]]:
    """The k shapes of one launch of d-dimensional tensors: tensor i has its first size
    ``i + 2`` and the others 2 (all ``()`` for d = 0)."""
    return [((i + 2,) + (2,) * (d - 1)) if d else () for i in range(k)]


def name(side: str, k: int, shape: str = "mixed", anchor: str = "device") -> str:
    """A launch statement's name: ``launch_<side>_<k>`` for the mixed shapes and the
    ``t.device`` anchor (the names the timed benchmark uses too), else
    ``launch_<side>[_get_device]_<shape>_<k>``; ``side``: view, hand or bare."""
    side = f"{side}_get_device" if side == "hand" and anchor == "get_device" else side
    return f"launch_{side}_{k}" if shape == "mixed" else f"launch_{side}_{shape}_{k}"


def _launch(side: str, ts: str, keep: str, reads: str) -> str:
    """One launch's source: a loop over the tensors ``ts`` keeping a list of what it made
    in ``keep[0]``: the views (``side`` view, reading ``SIX``), or the tensors themselves
    as the arguments (hand: reading ``reads``; bare: reading nothing)."""
    if side == "view":
        return (f"views = []\nfor t in {ts}:\n    v = view(t)\n    views.append(v)\n"
                f"    {SIX}\n{keep}[0] = views")
    body = f"    {reads}\n" if side == "hand" else ""
    return f"args = []\nfor t in {ts}:\n    args.append(t)\n{body}{keep}[0] = args"


def statements(ks=KS, dims=DIMS, shapes=("mixed",),
               anchors=("device",)) -> dict[str, tuple[str, int]]:
    """``{name: (timeit source, tensors per call)}``: per shape of ``shapes`` (of
    ``SHAPES``) and k, the view's launch and the anchor's (``name``: ``launch_view_<k>``,
    ``launch_hand_<k>``, ... for the mixed shapes) for each anchor of ``anchors`` (of
    ``ANCHORS``), and for the mixed shapes the launch alone (``launch_bare_<k>``: the
    anchor less its reads, the same for every shape); ``dims_view_borrow_<d>`` and
    ``dims_view_read_<d>`` per d. The defaults are the timed benchmark's set.

    The views of a call replace the last call's once all are made (``held``), so k views
    are alive beside the k new ones, as in a launcher holding its arguments; the anchor
    holds its arguments, the tensors, alike (``kept``): the list's cost, a large share of
    a call at k = 1, is the launcher's, not the view's. A loop, not a comprehension, so
    that neither side pays a frame."""
    out = {}
    for shape in shapes:
        for k in ks:
            ts = f"ts{k}" if shape == "mixed" else f"ts{k}_{shape}"
            tag = ts[2:]
            out[name("view", k, shape)] = (_launch("view", ts, f"held{tag}", SIX), k)
            for anchor in anchors:
                out[name("hand", k, shape, anchor)] = (
                    _launch("hand", ts, f"kept{tag}", ANCHORS[anchor]), k)
            if shape == "mixed":
                out[name("bare", k)] = (_launch("bare", ts, f"kept{tag}", ""), k)
    for d in dims:
        out[f"dims_view_borrow_{d}"] = (f"view_borrow(td{d})", 1)
        out[f"dims_view_read_{d}"] = (f"v = view(td{d}); {SIX}", 1)
    return out


def namespace(torch, bridge, ks=KS, dims=DIMS, shapes=("mixed",)) -> dict:
    """The globals the statements run in: ``ts<k>`` (the k tensors of the mixed shapes),
    ``ts<k>_<shape>`` (of another shape of ``shapes``), ``held<k>[_<shape>]`` (a list
    holding the views the last call made), ``kept<k>[_<shape>]`` (the anchor's: the
    tensors it launched with), ``td<d>`` (a float32 tensor of d dimensions of size 2),
    ``view`` and ``view_borrow``."""
    ns = {"view": bridge.view, "view_borrow": bridge.view_borrow}
    for shape in shapes:
        for k in ks:
            tag = f"{k}" if shape == "mixed" else f"{k}_{shape}"
            made = launch_shapes(k) if shape == "mixed" else dims_shapes(k, int(shape[1:]))
            ns[f"ts{tag}"] = [torch.zeros(s, dtype=torch.float32) for s in made]
            ns[f"held{tag}"] = [[]]
            ns[f"kept{tag}"] = [[]]
    for d in dims:
        ns[f"td{d}"] = torch.zeros((2,) * d, dtype=torch.float32)
    return ns


def launch_rows(processes, ks=KS) -> list[dict]:
    """Per shape of ``SHAPES``, anchor of ``ANCHORS`` and k, from each process's
    ``{"py:<name>": instructions per call}`` (a list, the first process's figures shown;
    one dict: one process): the view's and the anchor's instructions per tensor and their
    ratio, the ratio's least and largest over the processes and the instructions the view
    would have to shed for every process to be within ``GOAL_BAR`` (``shed``, 0 where it
    is); for the mixed shapes the launch alone per tensor (``bare``) and the ratio of what
    each side adds to it (``reads_ratio``), None where the bare launch was not counted.
    Status at the goal's ks: *met* (every process within ``GOAL_BAR``), *within the goal*
    (every process within ``GOAL_RATIO``, not the margin) or *missed*; *reported* at other
    ks. Rows whose statements were not counted are left out."""
    if isinstance(processes, dict):
        processes = [processes]
    first, rows = processes[0], []
    for shape in SHAPES:
        for anchor in ANCHORS:
            for k in ks:
                v, h = f"py:{name('view', k, shape)}", f"py:{name('hand', k, shape, anchor)}"
                view, hand = first.get(v), first.get(h)
                if view is None or not hand:
                    continue
                counted = [p for p in processes if p.get(v) is not None and p.get(h)]
                ratios = [p[v] / p[h] for p in counted]
                shed = max(max(p[v] - GOAL_BAR * p[h] for p in counted) / k, 0.0)
                worst = max(ratios)
                status = ("reported" if k not in GOAL_KS else "met" if worst <= GOAL_BAR
                          else "within the goal" if worst <= GOAL_RATIO else "missed")
                bare = first.get(f"py:{name('bare', k)}") if shape == "mixed" else None
                reads = None if bare is None or hand <= bare else (view - bare) / (hand - bare)
                rows.append({"shape": shape, "anchor": anchor, "k": k, "view": view / k,
                             "hand": hand / k, "ratio": view / hand, "ratio_min": min(ratios),
                             "ratio_max": worst, "processes": len(ratios), "shed": shed,
                             "status": status, "bare": None if bare is None else bare / k,
                             "reads_ratio": reads})
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
