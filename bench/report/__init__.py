"""The report: a benchmark JSON (pytest-benchmark's ``--benchmark-json``) into the
tables, the chart and the figures the RFC cites, nothing timed here.

``python -P -m bench.report RUN.json [--md RUN.md] [--chart RUN.svg|.png] [--headline]``
(``python -P -m bench`` runs it after the benchmarks). ``results`` reads the JSON (rows,
per-round samples, labels), ``stats`` holds the paired statistics (medians of per-round
differences and ratios, percentile-bootstrap intervals, fixed seed), ``tables`` and
``chart`` render them, ``figures`` writes the cited figures back into the JSON. Goals
are reported, never asserted: *met* when the whole interval is on the right side of the
target, *missed* when all of it is on the wrong side, *undecided* otherwise.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

from bridge import PATHS
from bench.report.stats import (  # noqa: F401 (the report's names, one namespace)
    fmt_ci,
    fmt_x,
    median_ci,
    ns,
    paired,
    verdict,
)
from bench.report.results import (  # noqa: F401 (the report's names, one namespace)
    BORROW_HANDLE,
    CONSUMER,
    FALLBACK_HANDLE,
    GETTERS7,
    LABELS,
    LAUNCH,
    NATIVE,
    NDIM,
    NTENS,
    OWNED_HANDLE,
    PARTS,
    PEERS,
    RECORDED_BEFORE,
    ROUTES,
    Results,
    SEED,
    WORK,
    entry,
    label,
)
from bench.report.tables import (  # noqa: F401 (the report's names, one namespace)
    BINDINGS,
    CONSUMER_ROUTES,
    GOAL_WHAT,
    LAUNCH_ROUTES,
    NATIVE_HEADLINE,
    PROCESS_REFS,
    PY_HEADLINE,
    ROW_KEYS,
    Row,
    SEED_EXCERPT,
    SEED_LINE,
    TIME_GOALS,
    bindings_table,
    consumer_section,
    consumer_vs_borrow,
    fmt_spread,
    goals,
    goals_table,
    group_table,
    headline,
    headline_rows,
    headline_table,
    headline_title,
    instruction_goals,
    launch_section,
    launch_spread,
    md_table,
    owned_stand_in,
    per_process,
    process_count,
    process_medians,
    processes_line,
    processes_section,
    protocol_rounds,
    python_group,
    quick_banner,
    routes_table,
    scaling_tables,
    seed_comparison,
    vs_borrow_cell,
    workload_table,
)
from bench.report.chart import (  # noqa: F401 (the report's names, one namespace)
    CHART_ALT,
    OWN_SCALE,
    chart,
    chart_panels,
    chart_title,
    whisker_end,
)


def cpu_line(m: dict) -> str:
    """``<model> (<vendor> family F model M stepping S), <MHz> MHz (/proc/cpuinfo), <min>-<max>
    MHz (lscpu), <hypervisor> guest``: the model and clock ``machine_info`` recorded (each
    part only where the machine told it)."""
    c = m.get("cpu_clock")
    if not c:  # a result recorded before the clock was
        return str(m.get("cpu_model"))
    ident = " ".join(f"{k} {c[k]}" for k in ("family", "model", "stepping") if c.get(k))
    ident = f" ({c.get('vendor') or ''} {ident})".replace("( ", "(") if ident else ""
    clock = f"{c['mhz']:.0f} MHz (/proc/cpuinfo)" if c.get("mhz") else "clock unknown"
    clock += (f", {c['min_mhz']:.0f}-{c['max_mhz']:.0f} MHz (lscpu)" if c.get("max_mhz") and
              c.get("min_mhz") else f", max {c['max_mhz']:.0f} MHz (lscpu)" if c.get("max_mhz")
              else "; no cpufreq range exposed")
    guest = f", {c['hypervisor']} guest" if c.get("hypervisor") else ""
    return f"{m.get('cpu_model')}{ident}, {clock}{guest}"


def footer(r: Results) -> str:
    m, ev = r.machine, r.evidence
    p = ev.get("protocol") or {}
    cc = ev.get("cuda_core", {})
    cc_line = (f"cuda.core {cc.get('version')}: {cc.get('call')} took the **{cc.get('path')}** "
               f"path on this torch" if cc.get("path") else
               f"cuda.core: {cc.get('unavailable', 'not measured')}")
    dl = ev.get("dlpack_exchange_api", {})
    gpu = []
    if r.cuda:
        d = r.device
        gpu = [f"- Tensors on **cuda:{d.get('index')}, {d.get('name')}** (compute capability "
               f"{d.get('capability')}, {d.get('multiprocessors')} multiprocessors, "
               f"{d.get('memory_gib')} GiB; {d.get('device_count')} GPU(s) visible); torch built "
               f"for CUDA {d.get('torch_cuda')}, driver supports CUDA {d.get('driver_cuda')}."]
    return "\n".join(gpu + [
        f"- Machine: {cpu_line(m)} ({m.get('cpu_count')} CPUs), load average "
        f"{m.get('load_average_at_start')} at start, {m.get('load_average_at_end')} at end; "
        f"{m.get('platform')}.",
        f"- Python {m.get('python')}, torch {m.get('torch')}, bridge built by "
        f"{m.get('bridge_compiler')}, native peer loops by {ev.get('native_compiler')}; "
        f"pytest-benchmark {m.get('pytest_benchmark')}; {m.get('date_utc')}.",
        f"- Protocol: {protocol_rounds(p)}; Python level {p.get('calls')} calls per round "
        f"after {p.get('warmup')} warm-up; native {p.get('native_calls')} calls per round "
        f"after {p.get('native_warmup')}; contenders interleaved round by round (rotating), "
        f"gc off{'; QUICK MODE: not a measurement' if p.get('quick') else ''}.",
        f"- DLPackExchangeAPI version {dl.get('version')}; {cc_line}.",
    ])


def markdown(r: Results, chart_name: str | None) -> str:
    title = f"# Benchmark evidence: torch {r.machine.get('torch')}"
    if r.cuda:
        title += f", CUDA tensors on {r.device.get('name')}"
    parts = [title, ""] + ([quick_banner(r), ""] if r.quick else []) + [
             "Generated by `bench/report/` from the pytest-benchmark JSON beside this file; "
             "nothing here is typed by hand.", "", footer(r), "",
             f"## {headline_title(r)}", "", headline(r), "",
             "## Goals", "", goals_table(r), ""]
    if chart_name:
        parts += [f"![{CHART_ALT}]({chart_name})", ""]
    parts += ["## 1. Seed protocol (Python level)", "",
              group_table(r, SEED, PATHS, "fallback"), "",
              seed_comparison(r), "",
              "## 2. Native per-call cost (C loops)", "",
              group_table(r, NATIVE, (*PATHS,
                                      (ROUTES, "route_dlpack_no_sync"),
                                      (ROUTES, "route_dlpack_managed"), "typecheck"), "borrow"),
              "", "Parts (same interleaved run):", "",
              group_table(r, PARTS, (OWNED_HANDLE, BORROW_HANDLE, "handle_borrow_direct",
                                     FALLBACK_HANDLE, GETTERS7, "gil_check"), None), "",
              "The conjugate bit through a borrowed handle, the proposed getter against the "
              "stable route that exists today (same interleaved run):", "",
              group_table(r, PARTS, ("conj_getter", "conj_dispatcher"), "conj_getter"), "",
              "The prototype's batched metadata read (not proposed), its two forms (same interleaved run), "
              "beside the seven getters alone:", "",
              group_table(r, PARTS, ("meta_offset", (ROUTES, "route_borrow_batched"),
                                     (ROUTES, "route_borrow_one_call"), GETTERS7),
                          (ROUTES, "route_borrow_batched")), "",
              "## Routes", "",
              "Every route a native consumer has from a Python tensor to its metadata (data "
              "pointer, ndim, sizes, strides, dtype, device type and index), today and after "
              "each internal fix, timed in interleaved rounds (`bench/routes.py`; the `*_fixed` "
              "rows run torch's own functions with `proposal/fixes/internal_fixes.cpp`'s interpreter "
              "fix installed for their loop only: the patch's own incref / decref, built from "
              "the patch against torch 2.15 and #189128's SafeGilScopedAcquire (verbatim from "
              "pytorch/pytorch 02d90f32's torch/csrc/Exceptions.h), not a build of main; the `*_fixed_emulation` rows the earlier hand-written "
              "emulation). Instruction counts of the same routes: "
              "`make callgrind`.", "",
              routes_table(r), "",
              "## 3. Peers (Python level)", "",
              group_table(r, PEERS, r.peer_names(
                  ("empty", *PATHS, "data_ptr", "python_attrs", "view_read",
                   "to_dlpack", "dunder_dlpack", "cuda_core", "nanobind_empty",
                   "nanobind_ndarray", "tvm_ffi_empty", "tvm_ffi_tensor")), "borrow"), "",
              "### The binding libraries: what receiving one tensor costs", "",
              bindings_table(r), "",
              "## 4. Scaling (Python level, medians)", "", scaling_tables(r), "",
              "## 5. Workload: a transformer decode step", "", workload_table(r), "",
              "## 6. The seed's consumer", "", consumer_section(r), "",
              "## 7. A launch-bound GPU step", "", launch_section(r), "",
              "## 8. Between processes", "", processes_section(r), ""]
    return "\n".join(parts)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("json", type=pathlib.Path, help="pytest-benchmark --benchmark-json file")
    parser.add_argument("--md", type=pathlib.Path, help="write the markdown report here")
    parser.add_argument("--chart", type=pathlib.Path, help="write the chart here (.svg/.png)")
    parser.add_argument("--instructions", type=pathlib.Path,
                        help="callgrind's JSON for the goals' instruction column (default: "
                        "callgrind-<same stem>.json beside the benchmark JSON, if there)")
    parser.add_argument("--headline", action="store_true",
                        help="print the headline and goals tables")
    args = parser.parse_args(argv)
    if not args.json.is_file():
        parser.error(f"{args.json} does not exist: run `make bench` (or python -P -m bench) first")
    r = Results(json.loads(args.json.read_text()))
    counts = args.instructions or args.json.with_name(
        args.json.name.replace("bench-", "callgrind-", 1))
    if counts.is_file() and counts != args.json:
        r.instructions = json.loads(counts.read_text())
    if args.chart:
        chart(r, args.chart)
    if args.md:
        args.md.write_text(markdown(r, args.chart.name if args.chart else None) + "\n")
        # The figures the RFC cites, beside the samples they come from (bench/report/figures.py).
        from bench.report.figures import figures

        r.data["figures"] = figures(r)
        args.json.write_text(json.dumps(r.data, indent=4) + "\n")
    if args.headline or not args.md:
        print(terminal(r))
    return 0


def terminal(r: Results) -> str:
    """What ``make bench`` prints at its end: the headline, the goals, the machine."""
    m = r.machine
    where = f", {r.device_label()} tensors" if r.cuda else ""
    return "\n".join(([quick_banner(r), ""] if r.quick else []) + [
        f"## {headline_title(r)} (torch {m.get('torch')}, Python {m.get('python')}{where})", "",
        headline(r), "", "## Goals", "", goals_table(r), "", footer(r)])


if __name__ == "__main__":
    sys.exit(main())
