"""Scenario F's tables (ATen ops through torch's generated C shims, input handles by
route), rendered from the JSON the runs wrote: nothing here times or counts anything.

``python -P -m bench.c_shims.report RESULT.json [--callgrind CG.json] [--md OUT.md]``
(``run.py`` calls it). ``RESULT.json`` is ``scenario.py``'s
pytest-benchmark JSON (per-round samples in ``extra_info["samples_ns"]``, the mode probe
and the autograd check under ``evidence.c_shims``); ``CG.json`` is
``callgrind.py``'s. ``instructions_md`` renders the latter alone (its own
``.md``). Paired statistics as ``bench.report``'s (``paired``, ``median_ci``): round ``r``
of the handles of a route and round ``r`` of the op ran back to back, so the share
``handles_r / op_r`` is taken per round; centre the median over rounds, interval a 95%
percentile bootstrap.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np


from bench.c_shims import consumer as cs  # noqa: E402
from bench import report as rp  # noqa: E402

LOOPS, CALLS = "F1", "F2"
ROUTE_WORDS = {"owned": "owned", "owned_fixed": "owned + interpreter fix", "borrow": "borrow",
               "borrow_fixed": "borrow + interpreter fix"}
#: the words of each route's baseline (``consumer.BASELINE``), for the tables
BASE_WORDS = {r: ROUTE_WORDS[b] for r, b in cs.BASELINE.items()}


class Run:
    """One scenario-F JSON, indexed: ``samples(group, op, size, name)`` (np.array of ns
    per call, round order) and ``evidence``."""

    def __init__(self, data: dict):
        self.data = data
        self.evidence = data.get("evidence", {})
        self.info = self.evidence.get("c_shims", {})
        self.by = {}
        for b in data["benchmarks"]:
            e = b["extra_info"]
            self.by[(b["group"].split(" ")[0], e["op"], e["size"], e["path"])] = b

    def samples(self, group, op, size, name):
        b = self.by.get((group, op, size, name))
        return None if b is None else np.asarray(b["extra_info"]["samples_ns"], dtype=float)

    def counts(self, group, op, size, name):
        """Rounds per fresh process of one row (``extra_info["process_rounds"]``, written
        by ``merge_runs``), or None for a run of one process."""
        b = self.by.get((group, op, size, name))
        return None if b is None else b["extra_info"].get("process_rounds")

    def by_process(self, values, group, op, size, name) -> list[float] | None:
        """Per process, the median of its own rounds of the per-round ``values`` (of row
        ``name`` and rows paired with it); None for a run of one process."""
        return rp.process_medians(values, self.counts(group, op, size, name))

    @property
    def device(self) -> str:
        return self.evidence.get("device", {}).get("type", "cpu")

    @property
    def quick(self) -> bool:
        return bool(self.evidence.get("protocol", {}).get("quick"))

    def routes(self) -> list[str]:
        return [r for r in cs.ROUTES if any(k[3] == f"handles:{r}" for k in self.by)]


def _ci(c, unit="ns", digits=1) -> str:
    centre, low, high = c
    if np.isnan(low):
        return f"{centre:.{digits}f}"
    return f"{centre:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def _pct(c) -> str:
    centre, low, high = (100 * x for x in c)
    if np.isnan(low):
        return f"{centre:.3g}%"
    return f"{centre:.3g}% [{low:.3g}, {high:.3g}]"


def _spread(values) -> str:
    """``"lo .. hi (k processes)"``, ns, of the processes' own medians; ``"one process"``
    without a split."""
    return rp.fmt_spread(values, "")


def _us(ns: float) -> str:
    return f"{ns / 1e3:.2f} us" if ns < 1e6 else f"{ns / 1e6:.2f} ms"


def figures(run: Run) -> dict:
    """Every figure of the loops group, as data: ``{op: {size: row}}``. ``row["op_ns"]``
    is the op alone (median, CI; ``op_sync_ns`` on CUDA: until the GPU ran it, the
    shares' denominator there); per route ``row["routes"][route]``: the whole call in C
    (``call``) and its paired difference to the borrow's (``minus_borrow``), per tensor
    argument and as a share of the op (per round), and the handles alone (``handles``,
    per argument, their share of the op, their difference to the borrow per argument).
    From several processes, ``*_by_process`` lists each process's own median of the
    per-argument differences (None from one)."""
    out = {}
    for op in cs.OPS:
        for size in (32, 1024):
            op_s = run.samples(LOOPS, op, size, "op")
            if op_s is None:
                continue
            sync_s = run.samples(LOOPS, op, size, "op_sync")
            denom = sync_s if sync_s is not None else op_s
            k = cs.ARITY[op]
            row = {"op_ns": rp.median_ci(op_s), "arity": k,
                   "op_sync_ns": None if sync_s is None else rp.median_ci(sync_s), "routes": {}}
            for route in run.routes():
                c = run.samples(LOOPS, op, size, f"ccall:{route}")
                h = run.samples(LOOPS, op, size, f"handles:{route}")
                if c is None or h is None:
                    continue
                r = {"call": rp.median_ci(c), "handles": rp.median_ci(h),
                     "handles_per_arg": rp.median_ci(h / k),
                     "handles_share": rp.median_ci(h / denom)}
                base = cs.BASELINE.get(route)
                cb = run.samples(LOOPS, op, size, f"ccall:{base}") if base else None
                hb = run.samples(LOOPS, op, size, f"handles:{base}") if base else None
                if cb is not None and hb is not None:
                    r["minus_borrow"] = rp.paired(c, cb)
                    r["minus_borrow_per_arg"] = rp.median_ci((c - cb) / k)
                    r["minus_borrow_share"] = rp.median_ci((c - cb) / denom)
                    r["handles_minus_borrow_per_arg"] = rp.median_ci((h - hb) / k)
                    name = f"ccall:{route}"
                    r["minus_borrow_per_arg_by_process"] = run.by_process(
                        (c - cb) / k, LOOPS, op, size, name)
                    r["handles_minus_borrow_per_arg_by_process"] = run.by_process(
                        (h - hb) / k, LOOPS, op, size, f"handles:{route}")
                row["routes"][route] = r
            out.setdefault(op, {})[size] = row
    return out


def loops_md(run: Run) -> str:
    figs = figures(run)
    cuda = run.device == "cuda"
    lines = ["## The whole call and the handles, against the op (native loops, ns)", "",
             "Per op and size: the op alone (its shim in C, handles borrowed once"
             + ("; on CUDA the host's time per call of a queued loop, and in brackets the "
                "wall time per op until the GPU ran them all, the shares' denominator" if cuda
                else "") +
             "); per route the whole call in C (handles, op, result handle deleted, handles "
             "released) and its difference to its baseline's whole call, paired per round: per "
             "call, per tensor argument, as a share of the op; then the handles alone (taken "
             "and, owned, deleted, for every tensor argument): per argument, their share of "
             "the op, their difference to the baseline's per argument. Baselines: "
             + "; ".join(f"{ROUTE_WORDS[r]}: {b}" for r, b in BASE_WORDS.items()) +
             ". Median over rounds [95% bootstrap interval]. The whole-call difference is "
             "what a consumer saves; it is smaller than the handles' where the op's kernel "
             "copies an input (`Consumer.call_loop` in `bench/c_shims/consumer.py` says "
             "why). \"Per process\": the lowest and highest of the fresh processes' own "
             "medians of the per-argument differences.", ""]
    lines += ["| op | size | tensors | op alone | route | whole call | minus baseline | per "
              "argument | per process: per argument | share of the op | handles alone, per "
              "argument | handles' share of the op | handles minus baseline, per argument | "
              "per process: handles per argument |",
              "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for op, sizes in figs.items():
        for size, row in sizes.items():
            op_t = _us(row["op_ns"][0])
            if row["op_sync_ns"] is not None:
                op_t += f" ({_us(row['op_sync_ns'][0])})"
            for i, (route, r) in enumerate(row["routes"].items()):
                lead = (f"| {op} | {size}x{size} | {row['arity']} | {op_t} |" if i == 0
                        else "| | | | |")
                diff = (f"{_ci(r['minus_borrow'])} | {_ci(r['minus_borrow_per_arg'])} | "
                        f"{_spread(r['minus_borrow_per_arg_by_process'])} | "
                        f"{_pct(r['minus_borrow_share'])} |" if "minus_borrow" in r
                        else " | | | |")
                lines.append(
                    f"{lead} {ROUTE_WORDS[route]} | {_us(r['call'][0])} | {diff} "
                    f"{_ci(r['handles_per_arg'])} | {_pct(r['handles_share'])} | "
                    + (f"{_ci(r['handles_minus_borrow_per_arg'])} | "
                       f"{_spread(r['handles_minus_borrow_per_arg_by_process'])} |"
                       if "handles_minus_borrow_per_arg" in r else " | |"))
    return "\n".join(lines) + "\n\n" + rp.processes_line(run) + "\n"


def calls_md(run: Run) -> str:
    lines = ["## The Python-level call, 32x32 (ns)", "",
             "`call(op, route, *tensors)` from Python (timeit-compiled, interleaved per op): "
             "handles, the op, the result's conversion, the call. Median over rounds [95% "
             "interval]; the difference to the route's baseline (as above) paired per round, "
             "also per tensor argument (with the range of the processes' own medians) and as "
             "a share of the baseline's call.", "",
             "| op | tensors | route | per call | minus baseline | per argument | per "
             "process: per argument | share of the baseline's call |",
             "|---|---:|---|---:|---:|---:|---:|---:|"]
    for op in cs.OPS:
        first = True
        for route in cs.ROUTES:
            s = run.samples(CALLS, op, 32, f"call:{route}")
            if s is None:
                continue
            lead = f"| {op} | {cs.ARITY[op]} |" if first else "| | |"
            first = False
            base = cs.BASELINE.get(route)
            b = run.samples(CALLS, op, 32, f"call:{base}") if base else None
            if b is not None:
                per_arg = (s - b) / cs.ARITY[op]
                spread = run.by_process(per_arg, CALLS, op, 32, f"call:{route}")
                tail = (f"{_ci(rp.paired(s, b))} | {_ci(rp.median_ci(per_arg))} | "
                        f"{_spread(spread)} | {_pct(rp.median_ci((s - b) / b))} |")
            else:
                tail = " | | | |"
            lines.append(f"{lead} {ROUTE_WORDS[route]} | {_ci(rp.median_ci(s))} | {tail}")
    return "\n".join(lines) + "\n\n" + rp.processes_line(run) + "\n"


def probe_md(info: dict) -> str:
    """The mode probe and the autograd check, per op."""
    lines = ["## What runs Python, and autograd", "",
             "Each op once through its shim (borrowed handles, 8x8 inputs) inside a "
             "`TorchDispatchMode` that records every aten overload it is asked to run; then "
             "once on inputs with `requires_grad=True`.", "",
             "| op | shim | header | torch equivalent | the mode saw | result requires_grad | "
             "result grad_fn |", "|---|---|---|---|---|---|---|"]
    shims = info.get("shims", {})
    for op in cs.OPS:
        if op not in info.get("probe", {}):
            continue
        seen = info["probe"][op]
        ag = info.get("autograd", {}).get(op, {})
        shim = ", ".join(sorted({s for s in shims.get(op, {}).values() if s}))
        lines.append(f"| {op} | `{shim}` | `{cs.HEADERS[op].format(dev='<dev>')}` | "
                     f"`{cs.TORCH_EQUIVALENT[op]}` | "
                     f"{', '.join(f'`{s}`' for s in seen) if seen else 'nothing'} | "
                     f"{ag.get('requires_grad')} | {ag.get('grad_fn')} |")
    return "\n".join(lines) + "\n"


def header_md(run: Run) -> list[str]:
    m = run.data.get("machine_info", {})
    bench = m.get("bench", {})
    info = run.info
    dev = run.evidence.get("device", {})
    lines = [f"# ATen ops through torch's generated C shims: input handles by route, "
             f"torch {run.data.get('machine_info', {}).get('bench', {}).get('torch', '?')}"
             f" ({run.device.upper()} tensors)", "",
             "Generated by `bench/c_shims/report.py` from the JSON beside this file "
             "(`bench/c_shims/run.py`, scenario F of `bench/c_shims/scenario.py`); "
             "nothing here is typed by hand.", ""]
    if run.quick:
        lines += ["**Quick run: a check that the code runs, not a measurement.**", ""]
    lines += [f"- Routes: " + "; ".join(f"**{ROUTE_WORDS[r]}**: {info.get('labels', {}).get(r)}"
                                        for r in cs.ROUTES if r in info.get("labels", {})),
              f"- Unavailable here: {info.get('unavailable') or 'nothing'}"
              + (f"; shims: {info['shim_unavailable']}" if info.get("shim_unavailable") else ""),
              f"- A new result handle becomes a Python tensor by {info.get('to_pyobject')}, "
              "then is deleted; `_out` ops write into a tensor the caller passes (borrowed "
              "like the inputs).",
              f"- Every route's result equals torch's own (`torch.equal`) at each size, checked "
              f"before timing: {sorted(info.get('checked', {}))}.",
              f"- Machine: {rp.cpu_line(bench) if bench else '?'}; Python {bench.get('python', '?')}"
              f"; torch intra-op threads {info.get('num_threads')}; load average at start / end "
              f"{bench.get('load_average_at_start')} / {bench.get('load_average_at_end')}."]
    if dev.get("type") == "cuda":
        lines.append(f"- GPU: {dev.get('name')} (compute capability {dev.get('capability')}, "
                     f"{dev.get('memory_gib')} GiB), torch CUDA {dev.get('torch_cuda')}, driver "
                     f"CUDA {dev.get('driver_cuda')}.")
    proto = run.evidence.get("protocol") or {}
    lines += [f"- Protocol: {rp.protocol_rounds(proto)}, interleaved; per round each handle loop "
              f"{proto.get('native_calls', 0) // 5} calls, the op as many calls as fill about "
              f"{20 if not run.quick else 2} ms (at least one), the Python calls likewise.", ""]
    return lines


def instructions_md(cg: dict, title: bool = True) -> str:
    """The instruction counts of ``callgrind.py``'s JSON, as markdown."""
    pc = cg["per_call"]
    lines = []
    if title:
        lines += [f"# Instruction counts: ATen ops through torch's generated C shims, torch "
                  f"{cg['torch']}", "",
                  "Generated by `bench/c_shims/callgrind.py`; nothing here is typed by hand. "
                  f"{cg['valgrind']}, CPython {cg['python']}, torch {cg['torch']} with "
                  f"{cg['num_threads']} intra-op thread; 32x32 float32 CPU tensors; "
                  f"instructions per call = (I(n2) - I(n1)) / (n2 - n1), n = {cg['n']}; the "
                  "repeat check (I(n1) twice) is 0 where the count is exact. No date: the same "
                  "binaries give the same file.", ""]
    lines += ["## Instructions per call (32x32 float32, CPU)", "",
              "Per op: the op's shim alone (handles borrowed once); per route the whole call "
              "in C (handles, op, result handle deleted, handles released) and its difference "
              "to the route's baseline ("
              + "; ".join(f"{ROUTE_WORDS[r]}: {b}" for r, b in BASE_WORDS.items()) +
              "), per call and per tensor argument; the handles alone per argument and "
              "their difference to the baseline's; the Python-level call and its difference. "
              "Repeat checks: handles, whole call, Python call.", "",
              "| op | tensors | op alone | route | whole call | minus baseline | per "
              "argument | handles alone, per argument | handles minus baseline, per argument | "
              "Python call | Python call minus baseline | repeat checks |",
              "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for op in cs.OPS:
        o = pc.get(f"op::{op}")
        if o is None:
            continue
        k = cg["arity"][op]
        first = True
        for route in cs.ROUTES:
            h, c = pc.get(f"handles:{route}:{op}"), pc.get(f"ccall:{route}:{op}")
            py = pc.get(f"call:{route}:{op}")
            if h is None or c is None:
                continue
            base = cs.BASELINE.get(route)
            hb, cb, pyb = (pc.get(f"{kind}:{base}:{op}") for kind in ("handles", "ccall", "call"))
            lead = f"| {op} | {k} | {o['per_call']:.0f} |" if first else "| | | |"
            first = False

            def d(a, b, per=1):
                return f"{(a['per_call'] - b['per_call']) / per:+.0f}" if a and b else ""

            reps = ", ".join(f"{x['repeat']:+d}" for x in (h, c, py) if x)
            lines.append(f"{lead} {ROUTE_WORDS[route]} | {c['per_call']:.0f} | {d(c, cb)} | "
                         f"{d(c, cb, k)} | {h['per_call'] / k:.0f} | {d(h, hb, k)} | "
                         f"{py['per_call'] if py else float('nan'):.0f} | {d(py, pyb)} | {reps} |")
    from bench import callgrind as cgm

    lines += ["", "## Where the instructions go, by part", "",
              "The handles alone and the whole call in C, per call, by `bench/callgrind.py`'s "
              "parts (its `OUTER_RULES` / `INNER_RULES`; the kernel's own work is mostly "
              "*other*). The *gil* and *pyobject* columns of the whole call show where the "
              "Python object's incref is paid: in the owned handle, or in the kernel's first "
              "copy of a borrowed input.", ""]
    lines += [f"- **{k}**: {v}" for k, v in cgm.PARTS.items()]
    lines += ["", "| op | route | what | " + " | ".join(cgm.PARTS) + " | total |",
              "|---|---|---|" + "---:|" * (len(cgm.PARTS) + 1)]
    for op in cs.OPS:
        rows = [("op alone", "", pc.get(f"op::{op}"))]
        for route in cs.ROUTES:
            rows += [(ROUTE_WORDS[route], "handles", pc.get(f"handles:{route}:{op}")),
                     (ROUTE_WORDS[route], "whole call", pc.get(f"ccall:{route}:{op}"))]
        for route, what, x in rows:
            if x is None or "parts" not in x:
                continue
            lines.append(f"| {op} | {route} | {what} | "
                         + " | ".join(f"{x['parts'].get(k, 0):.0f}" for k in cgm.PARTS)
                         + f" | {x['per_call']:.0f} |")
    return "\n".join(lines) + "\n"


def markdown(run: Run, cg: dict | None) -> str:
    parts = ["\n".join(header_md(run)), loops_md(run), calls_md(run), probe_md(run.info)]
    if cg is not None:
        parts.append(instructions_md(cg, title=False))
    return "\n".join(parts)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("json", type=pathlib.Path)
    parser.add_argument("--callgrind", type=pathlib.Path)
    parser.add_argument("--md", type=pathlib.Path)
    args = parser.parse_args(argv)
    run = Run(json.loads(args.json.read_text()))
    cg = json.loads(args.callgrind.read_text()) if args.callgrind else None
    text = markdown(run, cg)
    if args.md:
        args.md.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
