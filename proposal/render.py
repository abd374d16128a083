"""Fill the generated sections of proposal/RFC.md from the result files.

RFC.md holds no measured figure typed by hand. Each piece of evidence lives
between ``<!-- BEGIN generated: NAME -->`` and ``<!-- END generated: NAME -->``
and is replaced, on every run, by text built from the markdown tables of:

- ``bench/results/callgrind-torch-<version>.md`` (``make callgrind``), sections
  "Routes" and "Attribution": ``claim``, ``attribution``, ``routes``;
- ``bench/results/bench-torch-<version>.md`` (``make bench-evidence``), the
  timed runs on this machine: ``claim``, ``routes``, ``conj-route``,
  ``bench-setup``, ``bench-goals``, ``workload``; with
  ``proposal/sources/seed-benchmark.txt`` (a verbatim excerpt of the seed pull
  request) for ``seed-side-by-side``;
- ``bench/results/gpu-<gpu>-host-cpu-torch-<version>.md`` and
  ``bench/results/gpu-<gpu>-torch-<version>.md`` (``make gpu-bench``), the
  GPU host's CPU and its CUDA tensors: ``routes``, ``conj-route``, ``workload``,
  ``launch`` (the launch-bound step, CUDA only);
- every ``bench/results/bench-*torch-<version>.md`` and the GPU host's CPU report:
  ``goals-matrix`` (G1-G3 per interpreter);
- ``proposal/findings-torch-shim.md`` (``make survey``): ``findings``;
- ``proposal/findings-free-threaded.md`` (``make race-survey``) and
  ``bench/results/freethreaded/report-*.md`` (``make bench-freethreaded``):
  ``free-threaded``.

A missing file or section gives a placeholder that says what is missing and
which command makes it, so the RFC renders today and fills in when the results
land. ``--check`` exits 1 if RFC.md is not what rendering would produce.

Usage: ``python3 proposal/render.py [--results DIR] [--torch VERSION] [--check]``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
RFC = HERE / "RFC.md"
RESULTS = ROOT / "bench" / "results"
FINDINGS = HERE / "findings-torch-shim.md"
FREE_THREADED = HERE / "findings-free-threaded.md"
SEED = HERE / "sources" / "seed-benchmark.txt"
MARKER = re.compile(r"(<!-- BEGIN generated: ([\w-]+) -->\n)(.*?)(<!-- END generated: \2 -->)",
                    re.S)
SEED_LINE = re.compile(r"^\s*(shim|fallback): best=([\d.]+)ns median=([\d.]+)ns stdev=([\d.]+)ns",
                       re.M)
# Rows of the report's seed-protocol table, by the contender's leading words.
PATH_ROWS = {"owned": "view_owned(t)", "borrow": "view_borrow(t)", "fallback": "view_fallback(t)"}

# The routes (row names of bench/routes.py, the same in every result file).
OWNED = "owned: torch_tensor_from_pyobject + 7 getters + delete"
OWNED_FIX = "owned + interpreter fix"
DLPACK = "DLPack dltensor_from_py_object_no_sync"
DLPACK_FIX = "DLPack no_sync + interpreter fix"
DLPACK_BORROWED = "DLPack no_sync, borrowed reference + attached-thread check"
BORROW = "borrow: torch_tensor_borrow_from_pyobject + 7 getters"
TRICK = "pointer trick + 7 getters (private layout)"
H_OWNED = "owned handle alone + delete (part)"
H_OWNED_FIX = "owned handle alone + delete + interpreter fix (part)"
H_BORROW = "borrow handle alone (part)"
# The Attribution rows the RFC shows (the rest are in the linked file).
ATTRIBUTION_ROWS = (OWNED, OWNED_FIX, DLPACK, DLPACK_FIX, DLPACK_BORROWED, BORROW, TRICK,
                    H_OWNED, H_OWNED_FIX, H_BORROW)
UNAVAILABLE = "\u2014"  # the cell of a route a torch cannot run


def rel(path: pathlib.Path) -> str:
    """``path`` relative to the repository root, for citing it."""
    return os.path.relpath(path, ROOT)


def link(path: pathlib.Path) -> str:
    """A markdown link to ``path`` that works from proposal/RFC.md."""
    return f"[`{rel(path)}`]({os.path.relpath(path, HERE)})"


def placeholder(missing: str, command: str) -> str:
    return f"> _Not generated yet: {missing}. Run `{command}`, then `python3 proposal/render.py`._\n"


class Missing(Exception):
    """A source file or section is not there: the section becomes a placeholder."""

    def __init__(self, missing: str, command: str):
        super().__init__(missing)
        self.text = placeholder(missing, command)


def version_key(path: pathlib.Path) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", path.stem.rsplit("torch-", 1)[-1])[:3])


def newest(results: pathlib.Path, pattern: str, torch_version: str | None = None,
           exclude: str | None = None) -> pathlib.Path | None:
    """The committed file matching ``pattern`` for ``torch_version`` (default: the newest)."""
    found = [p for p in results.glob(pattern) if p.is_file()
             and not (exclude and re.search(exclude, p.name))]
    if torch_version:
        found = [p for p in found if p.stem.endswith(f"torch-{torch_version}")]
    return max(found, key=version_key) if found else None


def find_report(results: pathlib.Path, torch_version: str | None) -> pathlib.Path | None:
    """The committed bench report for ``torch_version`` (default: the newest torch reported)."""
    return newest(results, "bench-torch-*.md", torch_version)


def sections(report: str) -> tuple[str, dict[str, str]]:
    """(the text before the first ``## `` heading, {heading: body}) of a report."""
    parts = re.split(r"^## (.+)\n", report, flags=re.M)
    return parts[0], {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def section(path: pathlib.Path | None, head: str, command: str, what: str) -> str:
    """The body of the section of ``path`` whose heading starts with ``head``."""
    if path is None:
        raise Missing(f"no {what}", command)
    _, parts = sections(path.read_text())
    match = next((h for h in parts if h.startswith(head)), None)
    if match is None:
        raise Missing(f"`{rel(path)}` has no \"{head}\" section", command)
    return parts[match]


def tables(body: str) -> list[list[list[str]]]:
    """Every markdown table in ``body``: a list of rows (header first), cells stripped."""
    found, rows = [], []
    for line in body.splitlines() + [""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                rows.append(cells)
        elif rows:
            found.append(rows)
            rows = []
    return found


def by_name(table: list[list[str]]) -> dict[str, list[str]]:
    """{first cell: row} of a table's body rows."""
    return {row[0]: row for row in table[1:]}


def column(table: list[list[str]], start: str) -> int:
    """The index of the first header cell starting with ``start``."""
    for i, head in enumerate(table[0]):
        if head.startswith(start):
            return i
    raise KeyError(start)


def num(cell: str) -> float:
    return float(cell.replace(",", "").rstrip("x"))


def count(value: float) -> str:
    return f"{value:.0f}" if value == int(value) else f"{value:.1f}"


def preamble_item(path: pathlib.Path, key: str) -> str:
    """The text after ``- key:`` in a report's preamble bullets ('' if absent)."""
    head, _ = sections(path.read_text())
    m = re.search(rf"^- {key}: (.+)$", head, re.M)
    return m.group(1).strip() if m else ""


def versions(path: pathlib.Path) -> tuple[str, str]:
    """(Python version, torch version) that a report names in its preamble."""
    head, _ = sections(path.read_text())
    py = re.search(r"Python (\d+\.\d+\.\d+\S*?)[,;)]", head)
    torch = re.search(r"torch (\d+\.\d+\.\d+[\w.+]*)", head)
    return (py.group(1) if py else "?", torch.group(1) if torch else "?")


def machine(path: pathlib.Path) -> str:
    """A short name of the machine a report ran on: CPU model and CPU count."""
    text = preamble_item(path, "Machine")
    cpu = re.match(r"(.+?) \((?:GenuineIntel|AuthenticAMD|\w+ family)", text) or re.match(
        r"([^(,]+)", text)
    cpus = re.search(r"\((\d+) CPUs\)", text)
    name = cpu.group(1).strip() if cpu else "?"
    return f"{name}, {cpus.group(1)} CPUs" if cpus else name


def setup_line(path: pathlib.Path, label: str) -> str:
    py, torch = versions(path)
    return f"{label}: {machine(path)}, CPython {py}, torch {torch} ({link(path)})"


def source_line(report: pathlib.Path) -> str:
    data = report.with_suffix(".json")
    return f"_Source: {link(report)}, generated by `bench/report.py` from {link(data)}._\n\n"


# --- callgrind -------------------------------------------------------------------------------
def callgrind_routes(callgrind: pathlib.Path | None) -> list[list[str]]:
    body = section(callgrind, "Routes", "make callgrind", "`bench/results/callgrind-torch-*.md`")
    return tables(body)[0]


def instructions(table: list[list[str]]) -> dict[str, float]:
    col = column(table, "instructions per call")
    return {name: num(row[col]) for name, row in by_name(table).items()}


def timed_routes(report: pathlib.Path | None, command: str, what: str) -> list[list[str]]:
    return tables(section(report, "Routes", command, what))[0]


def need(values: dict[str, object], names, where: pathlib.Path | None, command: str) -> None:
    missing = [n for n in names if n not in values]
    if missing:
        raise Missing(f"{'`' + rel(where) + '`' if where else 'the routes table'} has no row "
                      f"\"{missing[0]}\"", command)


def render_claim(callgrind, report) -> str:
    """One or two sentences with the RFC's claim, from both Routes tables."""
    table = callgrind_routes(callgrind)
    ins = instructions(table)
    need(ins, (OWNED, OWNED_FIX, DLPACK, DLPACK_BORROWED, BORROW, TRICK, H_BORROW, H_OWNED_FIX),
         callgrind, "make callgrind")
    py, torch = versions(callgrind)
    what = re.search(r"^- What: `t` an? (.+? tensor)", sections(callgrind.read_text())[0], re.M)
    c = {name: count(v) for name, v in ins.items()}
    text = (f"On CPython {py} with torch {torch}, getting the metadata of one "
            f"{what.group(1) if what else 'tensor'} "
            f"costs **{c[OWNED]}** instructions per call through the owned shim "
            f"(`torch_tensor_from_pyobject` + 7 getters + delete) and **{c[OWNED_FIX]}** with the "
            f"interpreter fix; **{c[DLPACK]}** through DLPack's "
            f"`dltensor_from_py_object_no_sync` and **{c[DLPACK_BORROWED]}** with it taking a "
            f"borrowed reference (attached-thread check kept); **{c[BORROW]}** through the "
            f"proposed borrowed handle + 7 getters, against **{c[TRICK]}** for the private "
            f"pointer trick + 7 getters. The handle alone costs **{c[H_BORROW]}** borrowed "
            f"against **{c[H_OWNED_FIX]}** owned (+ delete) even with the interpreter fix "
            f"(callgrind, {link(callgrind)}).")
    timed = timed_routes(report, "make bench-evidence", "`bench/results/bench-torch-*.md`")
    rows = by_name(timed)
    need(rows, (OWNED, OWNED_FIX, DLPACK, DLPACK_BORROWED, BORROW, H_BORROW, H_OWNED_FIX),
         report, "make bench-evidence")
    col = column(timed, "paired ratio to pointer trick")
    ratio = {name: row[col].split(" [")[0] for name, row in rows.items()}
    tpy, ttorch = versions(report)
    text += (f" Timed in one interleaved run on {machine(report)} (CPython {tpy}, torch "
             f"{ttorch}, {link(report)}), these routes take {ratio[OWNED]}, {ratio[OWNED_FIX]}, "
             f"{ratio[DLPACK]}, {ratio[DLPACK_BORROWED]} and {ratio[BORROW]} the time of the "
             f"pointer trick + 7 getters, and the two handles alone {ratio[H_BORROW]} "
             f"(borrowed) and {ratio[H_OWNED_FIX]} (owned + delete + fix) (median paired "
             f"ratios).")
    return text + "\n"


def render_attribution(callgrind) -> str:
    """The Attribution rows that matter, all-zero parts dropped, with the parts' legend."""
    body = section(callgrind, "Attribution", "make callgrind",
                   "`bench/results/callgrind-torch-*.md`")
    table = tables(body)[0]
    rows = by_name(table)
    name = lambda route: route.removesuffix(" (part)")
    need(rows, [name(r) for r in ATTRIBUTION_ROWS], callgrind, "make callgrind")
    chosen = [rows[name(r)] for r in ATTRIBUTION_ROWS]
    keep = [0] + [i for i in range(1, len(table[0]))
                  if table[0][i] == "total" or any(num(r[i]) for r in chosen)]
    legend = dict(re.findall(r"^- \*\*(\w+)\*\*: (.+)$", body, re.M))
    py, torch = versions(callgrind)
    out = [f"_Instructions per call by part, CPython {py}, torch {torch}: {link(callgrind)}, "
           "section \"Attribution\" (every route, and the rules that assign each function to a "
           "part)._", ""]
    out.append("| " + " | ".join(table[0][i] for i in keep) + " |")
    out.append("|---" + "|---:" * (len(keep) - 1) + "|")
    out += ["| " + " | ".join(r[i] for i in keep) + " |" for r in chosen]
    out.append("")
    out.append("Parts: " + "; ".join(f"**{table[0][i]}**: {legend[table[0][i]]}"
                                     for i in keep[1:] if table[0][i] in legend) + ".")
    # The largest part of each route measured today, and what the interpreter fix moves.
    g, p, t = (column(table, "gil"), column(table, "pyobject"), column(table, "total"))
    parts = lambda r: {table[0][i]: num(rows[name(r)][i]) for i in keep[1:-1]}
    top = [(r, max(parts(r).items(), key=lambda kv: kv[1])) for r in (OWNED, DLPACK, H_OWNED)]
    out.append("")
    out.append("Largest part today: " + "; ".join(
        f"{name(r)}: **{part}**, {count(v)} of {rows[name(r)][t]}" for r, (part, v) in top)
        + f". With the interpreter fix, **gil** goes from {rows[OWNED][g]} to "
        f"{rows[OWNED_FIX][g]} and **pyobject** from {rows[OWNED][p]} to {rows[OWNED_FIX][p]} "
        "(owned route).")
    return "\n".join(out) + "\n"


# --- routes, instructions then time ----------------------------------------------------------
def render_routes(callgrind, report, gpu_host, others=()) -> str:
    """One table: instructions (callgrind), then on other interpreters (``others``: their
    callgrind files, e.g. CPython 3.13's), then time here and on the GPU host's CPU."""
    table = callgrind_routes(callgrind)
    ins = instructions(table)
    icol = column(table, "ratio to pointer trick")
    other_ins = {}
    for path in others:
        try:
            other_ins[versions(path)[0]] = instructions(callgrind_routes(path))
        except Missing:
            continue
    timed = {}
    for label, path in (("here", report), ("gpu", gpu_host)):
        if path is None:
            continue
        try:
            t = timed_routes(path, "make bench-evidence", "report")
        except Missing:
            continue
        timed[label] = (by_name(t), column(t, "median (ns)"), column(t, "paired ratio to pointer"))
    gpu_name = host_label(gpu_host) if gpu_host else "GPU host"
    more = "".join(f", CPython {py}: {link(path)}" for path in others
                   for py in [versions(path)[0]] if py in other_ins)
    out = [f"_Instructions (CPython {versions(callgrind)[0]}): {link(callgrind)}{more} "
           "(deterministic). Time, one interleaved run each, median and median paired ratio "
           "[95% CI]:_", ""]
    if "here" in timed:
        out.append(f"- {setup_line(report, 'here')}")
    else:
        out.append("- here: " + placeholder("no Routes section in `bench/results/bench-torch-*.md`",
                                            "make bench-evidence").strip())
    if "gpu" in timed:
        out.append(f"- {setup_line(gpu_host, gpu_name)}")
    else:
        out.append(f"- {gpu_name}: " + placeholder(
            "no `bench/results/gpu-*-host-cpu-torch-*.md` with a Routes section",
            "make gpu-bench").strip())
    out.append("")
    head = ["route", "status", "instructions", "/ pointer trick"]
    head += [f"instructions, CPython {py}" for py in other_ins]
    labels = {"here": "here", "gpu": gpu_name}
    for label in timed:
        head += [f"{labels[label]}: median (ns)", f"{labels[label]}: / pointer trick [95% CI]"]
    out.append("| " + " | ".join(head) + " |")
    out.append("|---|---|" + "---:|" * (len(head) - 2))
    unavailable = {}
    for row in table[1:]:
        cells = [row[0], row[1], count(ins[row[0]]), row[icol]]
        cells += [count(o[row[0]]) if row[0] in o else "not run" for o in other_ins.values()]
        for label, (rows, mcol, rcol) in timed.items():
            r = rows.get(row[0])
            if r is None:
                cells += ["not run", ""]
            elif r[2].startswith("unavailable"):
                cells += [UNAVAILABLE, ""]
                unavailable.setdefault(label, r[2])
            else:
                cells += [r[mcol], r[rcol]]
        out.append("| " + " | ".join(cells) + " |")
    for label, why in unavailable.items():
        py, torch = versions(gpu_host if label == "gpu" else report)
        out.append("")
        out.append(f"{UNAVAILABLE}: {why} (torch {torch}).")
    return "\n".join(out) + "\n"


def host_label(path: pathlib.Path) -> str:
    m = re.match(r"gpu-(\w+?)-host-cpu-torch-", path.name)
    return f"{m.group(1).upper()} host" if m else "GPU host"


def render_conj(report, gpu_host) -> str:
    """The conjugate bit through a borrowed handle: 0002's getter against the dispatcher."""
    out, rows_by, heads = [], {}, []
    for label, path in (("here", report), (host_label(gpu_host) if gpu_host else "", gpu_host)):
        if path is None:
            continue
        body = section(path, "2. Native per-call cost", "make bench-evidence", "report")
        found = [t for t in tables(body) if any(r[0].startswith("conj bit:") for r in t[1:])]
        if not found:
            raise Missing(f"`{rel(path)}` has no conj-bit table", "make bench-evidence")
        t = found[0]
        rows_by[label] = (by_name(t), column(t, "median (ns)"), column(t, "paired ratio"))
        heads.append((label, path))
    if not heads:
        raise Missing("no `bench/results/bench-torch-*.md`", "make bench-evidence")
    first = rows_by[heads[0][0]][0]
    out.append("_" + "; ".join(setup_line(p, l) for l, p in heads) + "._")
    out.append("")
    head = ["how a reader gets the conjugate bit of a borrowed handle"]
    for label, _ in heads:
        head += [f"{label}: median (ns)", f"{label}: / torch_is_conj [95% CI]"]
    out.append("| " + " | ".join(head) + " |")
    out.append("|---|" + "---:|" * (len(head) - 1))
    for name in first:
        cells = [name.removeprefix("conj bit: ")]
        for label, _ in heads:
            rows, m, r = rows_by[label]
            cells += [rows[name][m], rows[name][r]] if name in rows else ["not run", ""]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


# --- the seed, absolute deltas -----------------------------------------------------------------
def seed_figures(seed: pathlib.Path) -> dict[str, tuple[float, float]]:
    """{"shim"|"fallback": (best, median)} from the seed excerpt."""
    return {m.group(1): (float(m.group(2)), float(m.group(3)))
            for m in SEED_LINE.finditer(seed.read_text())}


def seed_setup(seed: pathlib.Path) -> str:
    """The seed's own words for its setup: the tensor and the environment."""
    text = seed.read_text()
    env = re.search(r"^Env: ([^;\n]+)", text, re.M)
    tensor = re.search(r"same tensor \(([^)]+)\)", text)
    return (f"cuda.core's tensor bridge (`StridedMemoryView`), {tensor.group(1) if tensor else '?'}"
            f" tensor; {env.group(1) if env else '?'}")


def consumer_rows(report: pathlib.Path | None) -> list[str]:
    """Rows for the seed's table from a report's section "6. The seed's consumer" (cuda.core's
    StridedMemoryView filled through each route): the routes that ran, minus the pointer
    trick. Empty when the report has no such section."""
    if report is None:
        return []
    _, parts = sections(report.read_text())
    body = next((b for h, b in parts.items() if h.startswith("6. The seed's consumer")), None)
    if not body or not tables(body):
        return []
    table = tables(body)[0]
    col = column(table, "minus pointer trick")
    py, torch = versions(report)
    tensor = "CUDA" if "CUDA tensors" in report.read_text().split("\n", 1)[0] else "CPU"
    setup = (f"the seed's consumer (cuda.core `StridedMemoryView`, filled by "
             f"`bench/cuda_core_consumer.pyx`), 32x32 float32 {tensor} tensor; CPython {py}, "
             f"torch {torch}, {machine(report)}")
    out = []
    for row in table[1:]:
        if row[1].startswith("unavailable") or row[0].startswith("cuda.core"):
            continue
        deltas = [x.strip() for x in row[col].split("/")]
        label = row[0].split(" (")[0] if not row[0].startswith("owned (2.14") else \
            "owned shim (" + row[0].split("(", 1)[1]
        out.append(f"| ours | {setup} | {label} | {row[1]} | {row[2]} | {deltas[0]} | "
                   f"{deltas[-1]} |")
    return out


def render_seed(report: pathlib.Path | None, seed: pathlib.Path,
                consumer: pathlib.Path | None = None) -> str:
    """The seed's figures beside ours, same protocol: each side minus its own fallback. With
    ``consumer`` (a report with section 6), the seed's own consumer's rows come first."""
    if not seed.exists():
        return placeholder(f"`{rel(seed)}` is missing", "see proposal/README.md")
    theirs = seed_figures(seed)
    lines = [f"_Seed: {link(seed)} (verbatim excerpt of the seed pull request). Ours: the "
             "report named below, section \"1. Seed protocol\". Same protocol, different "
             "machines, tensors and bridges: compare each side's difference to its own "
             "fallback, not the times._", "",
             "| side | setup | handle path | best (ns) | median (ns) | minus fallback, best (ns) | "
             "minus fallback, median (ns) |",
             "|---|---|---|---:|---:|---:|---:|"]
    shim, fb = theirs["shim"], theirs["fallback"]
    setup = seed_setup(seed)
    lines.append(f"| seed | {setup} | owned shim | {shim[0]:.1f} | {shim[1]:.1f} | "
                 f"{shim[0] - fb[0]:+.1f} | {shim[1] - fb[1]:+.1f} |")
    lines.append(f"| seed | {setup} | THPVariable offset (fallback) | {fb[0]:.1f} | {fb[1]:.1f} | "
                 "0 | 0 |")
    lines += consumer_rows(consumer)
    if report is None:
        lines.append("")
        lines.append(placeholder("no `bench/results/bench-torch-*.md`", "make bench-evidence"))
        return "\n".join(lines) + "\n"
    _, parts = sections(report.read_text())
    seed_section = next((body for head, body in parts.items() if "Seed protocol" in head), None)
    rows = {p: next((r for r in (tables(seed_section or "") or [[]])[0][1:]
                     if r[0].startswith(start)), None) for p, start in PATH_ROWS.items()}
    if not all(rows.values()):
        lines.append("")
        lines.append(placeholder(f"`{rel(report)}` has no seed-protocol table with owned, borrow "
                                 "and fallback rows", "make bench-evidence"))
        return "\n".join(lines) + "\n"
    best = {p: float(r[1]) for p, r in rows.items()}
    median = {p: float(r[2]) for p, r in rows.items()}
    headline = next((h for h in parts if h.startswith("Headline")), "")
    tensor = re.search(r"of an? (.+ tensor)$", headline)
    py, torch = versions(report)
    ours = (f"our bridge's `view_<path>(t)`, {tensor.group(1) if tensor else '?'}; "
            f"CPython {py}, torch {torch}, {machine(report)}")
    for path, label in (("owned", "owned shim"), ("borrow", "borrowed shim (proposed)"),
                        ("fallback", "THPVariable offset (fallback)")):
        lines.append(f"| ours | {ours} | {label} | {best[path]:.1f} | {median[path]:.1f} | "
                     f"{best[path] - best['fallback']:+.1f} | "
                     f"{median[path] - median['fallback']:+.1f} |")
    lines.append("")
    lines.append(source_line(report).rstrip() + (f" The seed's consumer: {link(consumer)}, "
                 "section \"6. The seed's consumer\"." if consumer_rows(consumer) else ""))
    return "\n".join(lines) + "\n"


# --- the decode step ---------------------------------------------------------------------------
def workload_row(path: pathlib.Path, label: str) -> list[str]:
    body = section(path, "5. Workload", "make bench-evidence", "report")
    step = re.search(r"\*\*(\d[\d,]*) kernel launches and (\d[\d,]*) tensors per decode step\*\*",
                     body)
    found = tables(body)
    if not step or len(found) < 2:
        raise Missing(f"`{rel(path)}` has no workload tables", "make bench-evidence")
    runs, savings = found[0], by_name(found[1])
    mcol, pcol = column(runs, "median (us"), column(runs, "median per op")
    decode = next((r for r in runs[1:] if r[0].startswith("one real decode step")), None)
    if decode is None:
        raise Missing(f"`{rel(path)}` has no decode-step row", "make bench-evidence")
    threads = re.search(r"\((\d+) torch threads\)", body)

    def saving(name):
        row = savings.get(name)
        return (row[1].replace(" us", ""), row[2]) if row else (UNAVAILABLE, UNAVAILABLE)

    owned, borrow = saving("owned - borrow"), saving("borrow - fallback")
    py, torch = versions(path)
    return [label, f"CPython {py}, torch {torch}", step.group(1), step.group(2),
            f"{decode[mcol]} ({threads.group(1) if threads else '?'} threads)",
            f"{num(decode[pcol]) / 1000:.1f}", owned[0], owned[1], borrow[0], borrow[1]]


def render_workload(report, gpu_host, gpu_cuda) -> str:
    rows, sources = [], []
    for label, path in (("here, CPU tensors", report),
                        (f"{host_label(gpu_host)}, CPU tensors" if gpu_host else "", gpu_host),
                        (f"{host_label(gpu_host) if gpu_host else 'GPU host'}, CUDA tensors",
                         gpu_cuda)):
        if path is None:
            continue
        rows.append(workload_row(path, label))
        sources.append(link(path))
    if not rows:
        raise Missing("no `bench/results/bench-torch-*.md`", "make bench-evidence")
    head = ["setup", "versions", "launches / step", "tensors / step", "decode step, median (us)",
            "step time per launch (us)", "owned - borrow per launch (ns) [95% CI]",
            "owned - borrow, share of the step", "borrow - fallback per launch (ns) [95% CI]",
            "borrow - fallback, share of the step"]
    out = ["_Section \"5. Workload\" of " + ", ".join(sources) + ": a per-launch saving is the "
           "per-1,000-ops difference divided by 1,000; the share is the per-round difference "
           f"over the step, median [95% CI]. {UNAVAILABLE}: no owned shim on that torch._", "",
           "| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out) + "\n"



# --- the goals per interpreter, and the launch-bound GPU step --------------------------------
GOAL_KEYS = ("G1", "G2", "G3")


def goals_row(path: pathlib.Path) -> dict[str, tuple[str, str, str]]:
    """{G1..G3: (instructions cell, time cell, status)} of a report's Goals table."""
    found = tables(section(path, "Goals", "make bench-evidence", "report"))
    if not found:
        raise Missing(f"`{rel(path)}` has no goals table", "make bench-evidence")
    table = found[0]
    icol, tcol, scol = column(table, "instructions"), column(table, "time"), column(table, "status")
    out = {}
    for row in table[1:]:
        key = row[0].split(":")[0]
        if key in GOAL_KEYS:
            out[key] = (re.sub(r" \(CPython [^)]*\)", "", row[icol]), row[tcol].split(" [")[0],
                        row[scol])
    return out


def render_goals_matrix(results: pathlib.Path, report, gpu_host) -> str:
    """G1-G3 in both units for every interpreter with committed evidence: this machine's
    CPython 3.11 and 3.13 reports (torch 2.15) and the GPU host's CPU report."""
    runs = []
    if report is not None:
        runs.append(("here", report))
        tag = versions(report)[1].split("+")[0]
        runs += [("here", p) for p in sorted(results.glob(f"bench-cp*-torch-{tag}.md"))]
    if gpu_host is not None:
        runs.append((host_label(gpu_host), gpu_host))
    if not runs:
        raise Missing("no `bench/results/bench-torch-*.md`", "make bench-evidence")
    what = {"G1": "view(t) + reading ptr, shape, strides, dtype, device / the five-tuple",
            "G2": "view_borrow(t) / t.data_ptr()",
            "G3": "native borrow + batched read / pointer trick + getters"}
    head = ["goal"] + [f"CPython {versions(p)[0]}, {where}: instructions / time"
                       for where, p in runs]
    rows = {k: [f"{k}: {what[k]}"] for k in GOAL_KEYS}
    for _, path in runs:
        cells = goals_row(path)
        for k in GOAL_KEYS:
            instr, time, status = cells.get(k, (UNAVAILABLE, UNAVAILABLE, ""))
            instr = UNAVAILABLE if instr.startswith("not counted") else instr
            rows[k].append(f"{instr} / {time} ({status})")
    out = ["_Goals tables of " + ", ".join(link(p) for _, p in runs) + "; instructions from "
           f"`make callgrind` (none on the GPU host, which has no valgrind: {UNAVAILABLE}), "
           "time the median of per-round ratios of one interleaved run._", "",
           "| " + " | ".join(head) + " |", "|---|" + "---|" * (len(head) - 1)]
    out += ["| " + " | ".join(rows[k]) + " |" for k in GOAL_KEYS]
    return "\n".join(out) + "\n"


def render_launch(gpu_cuda) -> str:
    """Section "7. A launch-bound GPU step" of the GPU report, per N: the GPU time and the
    verdict, and each route's host time, launches per second, bridging share and ratio to
    borrow."""
    body = section(gpu_cuda, "7. A launch-bound", "make gpu-bench",
                   "`bench/results/gpu-*-torch-*.md`")
    blocks = re.findall(r"\*\*N = (\d+)\*\* tensor arguments? per launch\. GPU time per launch "
                        r"([\d.]+) us \(median over rounds\); host time of the launch alone "
                        r"([\d.]+) us: ([\w-]+)", body)
    found = tables(body)
    if not blocks or len(found) != len(blocks):
        raise Missing(f"`{rel(gpu_cuda)}` has no launch-bound tables", "make gpu-bench")
    head = ["N", "GPU time per launch (us)", "route", "host time per launch (us)",
            "launches/s", "bridging share of the host time [95% CI]", "host time vs borrow"]
    out = [f"_Section \"7. A launch-bound GPU step\" of {link(gpu_cuda)} "
           f"({setup_line(gpu_cuda, 'CUDA tensors').split(' (')[0]})._", "",
           "| " + " | ".join(head) + " |", "|---:|---:|---|---:|---:|---:|---:|"]
    for (n, gpu, alone, bound), table in zip(blocks, found):
        h, r, share, vs = (column(table, "host per launch"), column(table, "launches/s"),
                           column(table, "bridging share"), column(table, "host time vs"))
        for i, row in enumerate(table[1:]):
            first = [n, f"{gpu} ({bound})"] if i == 0 else ["", ""]
            out.append("| " + " | ".join(first + [row[0], row[h], row[r], row[share],
                                                   row[vs].split(" [")[0]]) + " |")
    return "\n".join(out) + "\n"

# --- the hostile-input survey, short -------------------------------------------------------------
VERDICT = re.compile(r"^\*\*([\w ]+?)\*\*")
NAMED = ("crash", "crashed", "forged", "garbage")  # verdicts whose inputs the table names


def render_findings(findings: pathlib.Path) -> str:
    if not findings.exists():
        raise Missing(f"`{rel(findings)}` is missing", "make survey")
    head, parts = sections(findings.read_text())
    when = re.search(r"on (\d{4}-\d\d-\d\d): (.+?)\. Do not edit", head)
    out = [f"_Summary of {link(findings)} (`make survey`"
           + (f", {when.group(1)}: {when.group(2)}" if when else "") + "): per class of input, "
           "the verdicts of torch's own functions; the file has every input, verdict and a "
           "minimal reproduction._", ""]
    wrote_head = False
    for heading, body in parts.items():
        found = tables(body)
        if heading in ("Summary", "Minimal reproductions") or not found:
            continue
        table = found[0]
        if not wrote_head:
            out.append("| inputs | n | " + " | ".join(table[0][1:]) + " |")
            out.append("|---|---:|" + "---|" * (len(table[0]) - 1))
            wrote_head = True
        rows = [r for r in table[1:] if not r[0].startswith("for contrast")]
        cells = []
        for i in range(1, len(table[0])):
            tally: dict[str, list[str]] = {}
            for r in rows:
                m = VERDICT.match(r[i]) if i < len(r) else None
                # The input's name (and, in the DLPack table, the function's before it).
                names = re.findall(r"`([^`]+)`", r[0].split(":")[0])
                tally.setdefault(m.group(1) if m else "?", []).append(
                    f"`{names[-1]}`" + (f" in `{names[0]}`" if len(names) > 1 else "")
                    if names else "")
            cells.append(", ".join(
                f"{len(names)} **{v}**" + (" (" + ", ".join(names) + ")"
                                           if v in NAMED else "")
                for v, names in sorted(tally.items(), key=lambda kv: -len(kv[1]))))
        label = heading.removeprefix("torch's ")
        out.append(f"| {label} | {len(rows)} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


# --- free-threaded CPython ---------------------------------------------------------------------
def render_free_threaded(findings: pathlib.Path, results: pathlib.Path) -> str:
    if not findings.exists():
        raise Missing(f"`{rel(findings)}` is missing", "make race-survey")
    _, parts = sections(findings.read_text())
    out = [f"_From {link(findings)} (`make race-survey`): readers against one mutating thread, "
           "per build; a crashed child is counted._", ""]
    for build, body in parts.items():
        if not build.startswith("CPython"):
            continue
        found = tables(body)
        facts = by_name(found[0])
        paths = "; ".join(f"{p}: {facts[f'path `{p}`'][1]}" for p in ("owned", "borrow", "fallback")
                          if f"path `{p}`" in facts)
        races = next(t for t in found if t[0][0].startswith("reader"))
        locked = next((t for t in found[found.index(races) + 1:]
                       if t[0][0].startswith("reader")), None)
        crashed, mixed, cells = [], [], 0
        for row in races[1:]:
            if row[0] == "no reader":
                continue
            for head, cell in zip(races[0][1:], row[1:]):
                if head == "no mutator" or not cell:
                    continue
                cells += 1
                c = re.search(r"crashed (\d+/\d+)", cell)
                if c:
                    crashed.append(f"{row[0]} under {head} ({c.group(1)})")
                m = re.search(r"([\d,]+) mixed", cell)
                if m and num(m.group(1)) > 0:
                    mixed.append(f"{row[0]} under {head}")
        out.append(f"**{build}**")
        out.append("")
        out.append(f"- paths: {paths}.")
        out.append(f"- unlocked mutation, crashed children: "
                   + (", ".join(crashed) if crashed else "none") + ".")
        out.append(f"- unlocked mutation, mixed reads in {len(mixed)} of {cells} reader x mutation "
                   "cells" + (": " + ", ".join(mixed) if mixed else "") + ".")
        if locked:
            total = sum(num(re.search(r"([\d,]+) mixed", c).group(1))
                        for r in locked[1:] for c in r[1:] if "mixed" in c)
            readers = ", ".join(r[0] for r in locked[1:])
            out.append(f"- one `threading.Lock` around reads and mutations: {count(total)} mixed "
                       f"reads, no crash, readers {readers}.")
        out.append("")
    report = newest(results / "freethreaded", "report-*.md")
    if report is not None:
        ctx = re.findall(r"^- (CPython [^:]+): paths ([^;]+);", report.read_text(), re.M)
        if ctx:
            out.append(f"Timed paths per build ({link(report)}, `make bench-freethreaded`): "
                       + "; ".join(f"{b}: {p}" for b, p in ctx) + ".")
    return "\n".join(out).rstrip("\n") + "\n"


# --- the report's own sections -------------------------------------------------------------------
def render_report_section(report, head: str) -> str:
    body = section(report, head, "make bench-evidence", "`bench/results/bench-torch-*.md`")
    text = fix_images(body, report).strip("\n")
    return source_line(report) + text + "\n"


def fix_images(text: str, report: pathlib.Path) -> str:
    """Make the report's relative image links resolve from proposal/."""
    def repl(m):
        target = report.parent / m.group(2)
        return f"![{m.group(1)}]({os.path.relpath(target, HERE)})"
    return re.sub(r"!\[([^\]]*)\]\(([^)]+)\)", repl, text)


def render_all(results: pathlib.Path, torch_version: str | None) -> dict[str, str]:
    """Every generated section's new text, by marker name."""
    report = find_report(results, torch_version)
    callgrind = newest(results, "callgrind-torch-*.md",
                       versions(report)[1].split("+")[0] if report else torch_version)
    gpu_host = newest(results, "gpu-*-host-cpu-torch-*.md")
    gpu_cuda = newest(results, "gpu-*-torch-*.md", exclude=r"-host-cpu-")
    builders = {
        "claim": lambda: render_claim(callgrind, report),
        "attribution": lambda: render_attribution(callgrind),
        "routes": lambda: render_routes(callgrind, report, gpu_host, sorted(
            p for p in results.glob(f"callgrind-cp*-torch-{versions(callgrind)[1].split('+')[0]}.md")
            if p.is_file()) if callgrind else ()),
        "conj-route": lambda: render_conj(report, gpu_host),
        "bench-goals": lambda: render_report_section(report, "Goals"),
        "workload": lambda: render_workload(report, gpu_host, gpu_cuda),
        "goals-matrix": lambda: render_goals_matrix(results, report, gpu_host),
        "launch": lambda: render_launch(gpu_cuda),
        "findings": lambda: render_findings(FINDINGS),
        "free-threaded": lambda: render_free_threaded(FREE_THREADED, results),
    }
    out: dict[str, str] = {"seed-side-by-side": render_seed(report, SEED, gpu_cuda)}
    for name, build in builders.items():
        try:
            out[name] = build()
        except Missing as missing:
            out[name] = missing.text
    if report is None:
        out["bench-setup"] = placeholder(f"no `{rel(results)}/bench-torch-*.md`",
                                         "make bench-evidence")
    else:
        preamble, _ = sections(report.read_text())
        setup = "\n".join(l for l in preamble.splitlines() if l.startswith("- "))
        out["bench-setup"] = source_line(report) + setup + "\n"
    return out


def render(text: str, generated: dict[str, str]) -> str:
    """``text`` with every known marker's content replaced."""
    def repl(m):
        name = m.group(2)
        if name not in generated:
            raise SystemExit(f"RFC.md has an unknown generated section {name!r}")
        body = generated[name].rstrip("\n") + "\n"
        return m.group(1) + body + m.group(4)
    return MARKER.sub(repl, text)


def main(argv: list[str] | None = None) -> int:
    """Render RFC.md in place (or, with --check, report whether it is current)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rfc", type=pathlib.Path, default=RFC,
                        help="the RFC to fill in place (default proposal/RFC.md)")
    parser.add_argument("--results", type=pathlib.Path, default=RESULTS,
                        help="folder of the result files (default bench/results)")
    parser.add_argument("--torch", dest="torch_version", help="which torch's report (default newest)")
    parser.add_argument("--check", action="store_true", help="exit 1 if RFC.md is stale")
    args = parser.parse_args(argv)
    old = args.rfc.read_text()
    new = render(old, render_all(args.results, args.torch_version))
    if args.check:
        if new != old:
            print(f"{rel(args.rfc)} is stale: run python3 proposal/render.py", file=sys.stderr)
            return 1
        return 0
    args.rfc.write_text(new)
    print(f"rendered {rel(args.rfc)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
