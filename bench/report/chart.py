"""The chart: the headline's rows as box plots of their per-round samples (matplotlib),
the borrow highlighted, on linear scales from 0."""

from __future__ import annotations

import pathlib

import numpy as np

from bench.report.results import NATIVE, PEERS, Results
from bench.report.stats import fmt_x, ns
from bench.report.tables import (
    NATIVE_HEADLINE, PY_HEADLINE, Row, headline_rows, headline_title, python_group,
)


#: The chart's alt text in the report (and so in the RFC).
CHART_ALT = "the headline's rows: per-round samples, borrow highlighted"


#: Python-level rows whose median is more than this many times view_borrow(t)'s get a panel
#: of their own, so the linear scale of the others still shows owned against borrow.
OWN_SCALE = 10


def chart_panels(r: Results) -> list[tuple[str, list[Row], Row | None, list[Row]]]:
    """The chart's panels, each ``(title, rows, borrow, missing)``, rows as in the headline
    tables (measured ones only, cheapest first): the native C loop, the Python level, and
    the Python-level rows over ``OWN_SCALE`` x the borrow's median on their own linear
    scale; ``borrow`` is the row of that level's borrow (in another panel for the last);
    ``missing``, the level's rows this run did not measure."""
    py_group = python_group(r)
    py_all = headline_rows(r, py_group, r.peer_names(PY_HEADLINE) if py_group == PEERS
                           else ("borrow", "fallback", "owned"))
    nat_all = headline_rows(r, NATIVE, NATIVE_HEADLINE)
    py = [row for row in py_all if row.bench is not None]
    nat = [row for row in nat_all if row.bench is not None]
    py_borrow = next((row for row in py if row.is_borrow), None)
    nat_borrow = next((row for row in nat if row.is_borrow), None)
    limit = OWN_SCALE * ns(py_borrow.bench, "median") if py_borrow else float("inf")
    near = [row for row in py if ns(row.bench, "median") <= limit]
    far = [row for row in py if ns(row.bench, "median") > limit]
    panels = [("Native C loop: the same metadata read in C", nat, nat_borrow,
               [row for row in nat_all if row.bench is None]),
              ("Python level: f(t) called from Python", near, py_borrow,
               [row for row in py_all if row.bench is None])]
    if far:
        panels.append((f"Python level, over {OWN_SCALE}x view_borrow(t): on a scale of their "
                       "own", far, py_borrow, []))
    return panels


def whisker_end(samples) -> float:
    """Where a box plot's upper whisker ends: the largest sample within 1.5 IQR of Q3."""
    q1, q3 = np.percentile(samples, [25, 75])
    return float(np.max(samples[samples <= q3 + 1.5 * (q3 - q1)]))


def chart_title(r: Results) -> str:
    """The chart's title: what a row times, where, how to read a box; a quick run's first."""
    m = r.machine
    what = headline_title(r).removeprefix("Headline: ")
    what = what[0].upper() + what[1:] + (f" on {r.device.get('name')}" if r.cuda else "")
    title = (f"{what}: torch {m.get('torch')}, Python {m.get('python')}, "
             f"{m.get('cpu_model')}\nbox: quartiles of the per-round samples, whiskers 1.5 "
             "IQR (a round past the scale is cut); contenders interleaved round by round\n"
             "dashed: the borrow's median; right: the median and the per-round ratio to the "
             "borrow")
    return ("QUICK RUN: not a measurement, not judged\n" + title) if r.quick else title


def chart(r: Results, path: pathlib.Path) -> None:
    """Box plots of the per-round samples of the headline's rows, one panel per table (the
    costliest Python-level peers on a panel of their own), linear scales from 0, the
    borrow highlighted with its median as a dashed line; each row says its median and its
    per-round ratio to the borrow, as the tables do."""
    import textwrap

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "torch-borrow-bench"  # stable ids across runs
    panels = [panel for panel in chart_panels(r) if panel[1]]
    if not panels:  # a run of some scenarios only (python -m bench -- -k ...)
        panels = [("not measured in this run", [], None, [])]
    heights = [max(len(rows), 1) + 1.2 for _, rows, _, _ in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, 0.36 * sum(heights) + 1.2),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    highlight, plain = "#1f77b4", "#d0d0d0"
    new_mpl = tuple(int(x) for x in matplotlib.__version__.split(".")[:2]) >= (3, 10)
    for ax, (title, rows, borrow, missing) in zip(axes[:, 0], panels):
        ax.set_title(title, fontsize=10, loc="left")
        ax.set_xlabel(textwrap.fill("ns per call" + (
            "; not in this run (the tables say why): " + "; ".join(row.label for row in missing)
            if missing else ""), 120), fontsize=8)
        if not rows:
            ax.text(0.5, 0.5, "not measured in this run", ha="center", va="center",
                    transform=ax.transAxes)
            ax.set_axis_off()
            continue
        rows = rows[::-1]  # cheapest at the top, as in the tables
        data = [row.samples for row in rows]
        labels = [textwrap.fill(row.label, 58) for row in rows]
        orient = {"orientation": "horizontal"} if new_mpl else {"vert": False}
        box = ax.boxplot(data, widths=0.6, patch_artist=True, showfliers=True,
                         medianprops={"color": "black"},
                         flierprops={"markersize": 3, "markeredgecolor": "#777777"}, **orient)
        ax.set_yticks(range(1, len(rows) + 1), labels, fontsize=8)
        for patch, tick, row in zip(box["boxes"], ax.get_yticklabels(), rows):
            patch.set_facecolor(highlight if row.is_borrow else plain)
            if row.is_borrow:
                ax.axhspan(rows.index(row) + 0.55, rows.index(row) + 1.45, color=highlight,
                           alpha=0.08, linewidth=0)
                tick.set_fontweight("bold")
                tick.set_color(highlight)
        # the scale ends past the longest whisker, at most twice the largest median: a stray
        # round beyond is cut, so it cannot squash the others (the tables have every figure)
        ax.set_xlim(0, 1.08 * min(max(whisker_end(row.samples) for row in rows),
                                  2 * max(ns(row.bench, "median") for row in rows)))
        if borrow is not None:
            ax.axvline(ns(borrow.bench, "median"), color=highlight, linestyle="--",
                       linewidth=1)
        for y, row in enumerate(rows, start=1):  # a column right of the panel, as a table
            ratio = ("borrow" if row.is_borrow else "" if row.vs_borrow is None
                     else f"{fmt_x(row.vs_borrow).split(' ')[0]} vs borrow")
            ax.text(1.01, y, f"{ns(row.bench, 'median'):.1f} ns" + (f", {ratio}" if ratio
                                                                    else ""),
                    transform=ax.get_yaxis_transform(), va="center", fontsize=8,
                    color=highlight if row.is_borrow else "black",
                    fontweight="bold" if row.is_borrow else "normal")
        ax.grid(axis="x", alpha=0.3)
    title = chart_title(r)
    fig.suptitle(title, fontsize=9, x=0.01, ha="left",
                 color="#c0392b" if r.quick else "black")
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)
