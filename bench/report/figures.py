"""The figures the RFC cites, computed from one run's raw samples and written into that
run's JSON under ``"figures"`` (``python -P -m bench.report``, which ``make bench`` runs).

Every value comes from the per-round samples (``extra_info["samples_ns"]``, or
``wall_ns`` for the launch step), never from a rendered table or a rounded value, with
the report's own statistics (``paired``: medians of per-round ratios and their 95%
percentile-bootstrap intervals, fixed seed), so a reader of the JSON gets the report's
numbers exactly. ``KEYS`` documents the layout.
"""

from __future__ import annotations

import numpy as np

from bench.report import results, stats, tables

#: The layout of ``data["figures"]``; each ``[m, lo, hi]`` is a median of per-round ratios
#: (``x_*``, ``*_over_*``, ``time_ratio``) or differences (``*_ns``) and its 95% interval.
FIGURE_KEYS = (
    "schema",
    "rows.<group>.<name>[,ndim=|,ntensors=|,arity=<n>].{label,median_ns,min_ns,stddev_ns,"
    "rounds,calls_per_round[,wall_median_ns]}",
    "routes.<route>.{label,status,part,median_ns,x_vs_fallback_getters,x_vs_borrow_getters}",
    "headline.{python,native}.<name>.{label,median_ns,min_ns,x_vs_borrow}",
    "goals.<G1|G2|G3>.{what,time_ratio,time_target}",
    "owned_minus_borrow_ns.{native,python}",
    "handles.{borrow_minus_fallback_ns,gil_check_median_ns}",
    "conj.{getter_ns,dispatcher_ns,dispatcher_over_getter}",
)
SCHEMA = 1


def _ci(c) -> list[float | None]:
    """``[centre, low, high]`` with NaN (no interval) as None, for JSON."""
    return [None if np.isnan(x) else float(x) for x in c]


def _samples(b) -> np.ndarray | None:
    s = b["extra_info"].get("samples_ns") or b["extra_info"].get("wall_ns")
    return None if s is None else np.asarray(s, dtype=float)


def figures(r) -> dict:
    """``data["figures"]`` for ``r`` (a ``bench.report.Results``): see ``FIGURE_KEYS``."""
    from bench import routes as routes_mod

    out: dict = {"schema": SCHEMA, "rows": {}, "routes": {}, "headline": {}, "goals": {},
                 "owned_minus_borrow_ns": {}, "handles": {}, "conj": {}}
    for b in r.data["benchmarks"]:
        group = b["group"].split(" ")[0]
        path = b["extra_info"].get("path")
        name = path or b.get("param") or b["name"]
        # Rows of one path told apart by a parameter (tensors per launch, ndim, arity).
        key = name + "".join(f",{k}={b['extra_info'][k]}" for k in tables.ROW_KEYS
                             if k in b["extra_info"])
        s = _samples(b)
        out["rows"].setdefault(group, {})[key] = {
            "label": results.label(r, group, name) if path else name,
            "median_ns": None if s is None else float(np.median(s)),
            "min_ns": stats.ns(b, "min"), "stddev_ns": stats.ns(b, "stddev"),
            "rounds": b["stats"].get("rounds"),
            "calls_per_round": b["extra_info"].get("calls_per_round")}
        if b["extra_info"].get("wall_ns"):  # the launch step: until the stream ran them all
            out["rows"][group][key]["wall_median_ns"] = float(np.median(b["extra_info"]["wall_ns"]))
    refs = {k: r.samples(results.ROUTES, "route_" + k) for k in ("fallback_getters", "borrow_getters")}
    for route in routes_mod.ROUTES:
        s = r.samples(results.ROUTES, "route_" + route.name)
        if s is None:
            continue
        out["routes"][route.name] = {
            "label": route.label, "status": route.status, "part": route.part,
            "median_ns": float(np.median(s)),
            **{f"x_vs_{k}": (_ci(stats.paired(s, ref, "ratio")) if ref is not None else None)
               for k, ref in refs.items()}}
    py = tables.python_group(r)
    for level, rows in (("python", tables.headline_rows(r, py, r.peer_names(tables.PY_HEADLINE)
                                                    if py == results.PEERS else
                                                    ("borrow", "fallback", "owned"))),
                        ("native", tables.headline_rows(r, results.NATIVE, tables.NATIVE_HEADLINE))):
        out["headline"][level] = {
            row.name: {"label": row.label, "median_ns": stats.ns(row.bench, "median"),
                       "min_ns": stats.ns(row.bench, "min"),
                       "x_vs_borrow": None if row.vs_borrow is None else _ci(row.vs_borrow)}
            for row in rows if row.bench is not None}
    for key, num, den, target in tables.TIME_GOALS:
        a, b = r.samples(*num), r.samples(*den)
        if a is not None and b is not None:
            out["goals"][key] = {"what": tables.GOAL_WHAT[key], "time_target": target,
                                 "time_ratio": _ci(stats.paired(a, b, "ratio"))}
    for group, level in ((results.NATIVE, "native"), (results.SEED, "python")):
        a, b = r.samples(group, "owned"), r.samples(group, "borrow")
        if a is not None and b is not None:
            out["owned_minus_borrow_ns"][level] = _ci(stats.paired(a, b))
    a, b = r.samples(*results.BORROW_HANDLE), r.samples(*results.FALLBACK_HANDLE)
    if a is not None and b is not None:
        out["handles"]["borrow_minus_fallback_ns"] = _ci(stats.paired(a, b))
    g = r.samples(results.PARTS, "gil_check")
    if g is not None:
        out["handles"]["gil_check_median_ns"] = float(np.median(g))
    g, d = r.samples(results.PARTS, "conj_getter"), r.samples(results.PARTS, "conj_dispatcher")
    if g is not None and d is not None:
        out["conj"] = {"getter_ns": float(np.median(g)), "dispatcher_ns": float(np.median(d)),
                       "dispatcher_over_getter": _ci(stats.paired(d, g, "ratio"))}
    return out
