"""The report's tables and sections, each rendered from ``Results``: the headline, the
goals, the routes, the seed comparison, the consumers, bindings, scaling and workload."""

from __future__ import annotations

import pathlib
import re
from dataclasses import dataclass

import numpy as np

from bench.report.results import (
    BORROW_HANDLE, CONSUMER, FALLBACK_HANDLE, LABELS, LAUNCH, LAUNCHER, NATIVE, NDIM, NTENS,
    PARTS, PEERS, ROUTES, Results, SEED, WORK, entry, label,
)
from bench.report.stats import fmt_ci, fmt_x, median_ci, ns, paired, verdict
from bridge import PATHS


# The binding libraries' pairs (bench/native/peers_bindings.py): (library, empty call, tensor call).
# Our bridge's own pair (the empty METH_O call, view_borrow) is the first row for scale.
BINDINGS = (("torch-borrow-bridge (ours)", "empty", "borrow"),
            ("nanobind", "nanobind_empty", "nanobind_ndarray"),
            ("apache-tvm-ffi", "tvm_ffi_empty", "tvm_ffi_tensor"))


def group_table(r: Results, group: str, names, ref: str | None, unit_div=1.0, unit="ns"):
    """Rows: contender, best, median, stdev (pytest-benchmark), paired ratio to ``ref``."""
    head = f"| contender | best ({unit}) | median ({unit}) | stdev ({unit}) |"
    sep = "|---|---:|---:|---:|"
    if ref:
        head += f" paired ratio to {ref} [95% CI] |"
        sep += "---:|"
    rows = [head, sep]
    ref_s = r.samples(*entry(group, ref)) if ref else None
    for item in names:
        g, name = entry(group, item)
        b = r.get(g, name)
        if b is None:
            why = r.evidence.get("unavailable", {}).get(name) or r.evidence.get(
                "unavailable", {}).get(name.split("_")[-1], "not measured")
            rows.append(f"| {label(r, g, name)} | unavailable: {why} | | |" +
                        (" |" if ref else ""))
            continue
        row = (f"| {label(r, g, name)} | {ns(b, 'min') / unit_div:.1f} | "
               f"{ns(b, 'median') / unit_div:.1f} | {ns(b, 'stddev') / unit_div:.1f} |")
        if ref:
            row += (" 1 |" if item == ref or ref_s is None else
                    f" {fmt_ci(paired(r.samples(g, name), ref_s, 'ratio'))} |")
        rows.append(row)
    return "\n".join(rows)


SEED_EXCERPT = pathlib.Path(__file__).resolve().parent.parent.parent / "proposal" / "sources" / \
    "seed-benchmark.txt"


SEED_LINE = re.compile(r"^\s*(shim|fallback): best=([\d.]+)ns median=([\d.]+)ns", re.M)


def seed_comparison(r: Results, excerpt: pathlib.Path = SEED_EXCERPT) -> str:
    """The seed's figures beside this run's seed-protocol rows, labelled for what differs.

    The seed's best and median per path come from ``excerpt`` (the verbatim excerpt of
    the seed pull request, ``proposal/sources/seed-benchmark.txt``), never typed here;
    its environment is quoted from the excerpt's ``Env:`` and ``Same env`` lines. Both
    sides get the difference to, and the ratio to, their own fallback, on the best and
    on the median: a difference or ratio travels between machines better than a time.
    """
    if not excerpt.is_file():
        return f"(The seed's excerpt `{excerpt.name}` is not in this checkout: no comparison.)"
    text = excerpt.read_text()
    theirs = {m.group(1): (float(m.group(2)), float(m.group(3))) for m in SEED_LINE.finditer(text)}
    env = [l.split(";")[0].strip().rstrip(":") for l in text.splitlines()
           if l.startswith(("Env:", "Same env"))]
    ours = {p: r.get(SEED, p) for p in PATHS}
    where = "CPU" if not r.cuda else f"CUDA ({r.device.get('name')})"
    lines = [
        "**What differs from the seed's figures.** The seed measured under this protocol a "
        "32x32 float32 **CUDA tensor through cuda.core's `StridedMemoryView`** (its AOTI "
        "tensor bridge, toggled between the owned shim and the THPVariable offset) **on an "
        "RTX 6000 Ada host**; this run measures a 32x32 float32 "
        f"**{where} tensor through our bridge's `view_<path>(t)` on the machine above**. "
        "A view through cuda.core does far more than ours, so the times do not compare; "
        "each side's difference to, and ratio to, its own fallback do. The seed's words "
        f"(`{excerpt.relative_to(excerpt.parents[2])}`): "
        + "; ".join(f"\"{l}\"" for l in env) + ".", "",
        "| run | path | best (ns) | median (ns) | minus fallback, best / median (ns) | "
        "ratio to fallback, best / median |", "|---|---|---:|---:|---:|---:|"]

    def row(run, label, best, median, fb):
        return (f"| {run} | {label} | {best:.1f} | {median:.1f} | {best - fb[0]:+.1f} / "
                f"{median - fb[1]:+.1f} | {best / fb[0]:.3f}x / {median / fb[1]:.3f}x |")

    if "shim" in theirs and "fallback" in theirs:
        fb = theirs["fallback"]
        run = "seed: CUDA tensor, cuda.core, RTX 6000 Ada host"
        lines.append(row(run, "owned shim", *theirs["shim"], fb))
        lines.append(row(run, "THPVariable offset (fallback)", *fb, fb))
    if ours["fallback"] is not None:
        fb = (ns(ours["fallback"], "min"), ns(ours["fallback"], "median"))
        run = f"this run: {where} tensor, our bridge, this machine"
        for p, label in (("owned", "owned shim"), ("borrow", "borrowed shim (proposed)"),
                         ("fallback", "THPVariable offset (fallback)")):
            if ours[p] is not None:
                lines.append(row(run, label, ns(ours[p], "min"), ns(ours[p], "median"), fb))
    return "\n".join(lines)


CONSUMER_ROUTES = ("owned", "owned_prototype", "owned_fixed", "borrow", "pointer", "dlpack",
                   "dlpack_fixed", "cuda_core")


def consumer_section(r: Results, excerpt: pathlib.Path = SEED_EXCERPT) -> str:
    """Section 6: cuda.core's ``StridedMemoryView`` filled via each route (the seed's own
    consumer), each route's absolute difference to the pointer trick and its ratio (best,
    median, and the paired per-round median with its interval), beside the seed's own
    figures (read from ``excerpt``) with each side's setup."""
    pointer = r.get(CONSUMER, "pointer")
    facts = r.evidence.get("consumer") or {}
    labels = facts.get("labels") or {}
    if pointer is None:
        why = (r.evidence.get("unavailable", {}).get("consumer")
               or (facts.get("unavailable") or {}).get("pointer") or "not measured")
        return f"(Not measured in this run: {why}.)"
    where = r.device_label()
    p_best, p_med = ns(pointer, "min"), ns(pointer, "median")
    p_s = r.samples(CONSUMER, "pointer")
    lines = [
        "cuda.core's `StridedMemoryView`, filled field by field as cuda.core's own tensor "
        "bridge fills it (`bench/native/cuda_core_consumer.pyx`, built against the installed "
        f"cuda-core {facts.get('cuda_core_version', '?')}'s `.pxd`), from each route's "
        "handle; each view checked equal to cuda.core's own before timing. "
        f"32x32 float32 {where} tensor, `f(t)` per call, interleaved rounds.", "",
        "| route | best (ns) | median (ns) | minus pointer trick, best / median (ns) | "
        "ratio to pointer trick, best / median | paired per-round difference [95% CI] | "
        "paired ratio [95% CI] | x vs borrow [95% CI] | x vs borrow, per process |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    borrow_s = r.samples(CONSUMER, "borrow")
    for name in CONSUMER_ROUTES:
        b = r.get(CONSUMER, name)
        label = (b["extra_info"].get("label") if b else None) or labels.get(name, name)
        if b is None:
            why = (facts.get("unavailable") or {}).get(name, "not measured")
            lines.append(f"| {label} | unavailable: {why} | | | | | | | |")
            continue
        best, med, s = ns(b, "min"), ns(b, "median"), r.samples(CONSUMER, name)
        diff = "0" if name == "pointer" else fmt_ci(paired(s, p_s, "diff"), " ns")
        ratio = "1" if name == "pointer" else fmt_ci(paired(s, p_s, "ratio"))
        vs, spread = consumer_vs_borrow(r, name, s, borrow_s)
        lines.append(f"| {label} | {best:.1f} | {med:.1f} | {best - p_best:+.1f} / "
                     f"{med - p_med:+.1f} | {best / p_best:.3f}x / {med / p_med:.3f}x | "
                     f"{diff} | {ratio} | {vs} | {spread} |")
    lines += ["", processes_line(r)]
    stand_in = owned_stand_in(r)
    if stand_in:
        lines += ["", stand_in]
    if excerpt.is_file():
        text = excerpt.read_text()
        theirs = {m.group(1): (float(m.group(2)), float(m.group(3)))
                  for m in SEED_LINE.finditer(text)}
        env = [l.split(";")[0].strip().rstrip(":") for l in text.splitlines()
               if l.startswith(("Env:", "Same env"))]
        if "shim" in theirs and "fallback" in theirs:
            (sb, sm), (fb, fm) = theirs["shim"], theirs["fallback"]
            lines += ["", "The seed's figures, same protocol (its words, "
                      f"`{excerpt.relative_to(excerpt.parents[2])}`: "
                      + "; ".join(f"\"{l}\"" for l in env) + "):", "",
                      "| side | setup | owned shim minus pointer trick, best / median (ns) | "
                      "ratio, best / median |", "|---|---|---:|---:|",
                      f"| seed | CUDA tensor, cuda.core's own bridge toggled shim / fallback "
                      f"(`_set_use_shim`), RTX 6000 Ada host | {sb - fb:+.1f} / {sm - fm:+.1f} | "
                      f"{sb / fb:.3f}x / {sm / fm:.3f}x |"]
            for name in ("owned", "owned_prototype", "borrow"):
                b = r.get(CONSUMER, name)
                if b is None:
                    continue
                label = b["extra_info"].get("label") or name
                best, med = ns(b, "min"), ns(b, "median")
                lines.append(f"| this run: {label} | {where} tensor, cuda.core "
                             f"{facts.get('cuda_core_version', '?')}'s view filled by "
                             f"`cuda_core_consumer.pyx`, this machine | {best - p_best:+.1f} / "
                             f"{med - p_med:+.1f} | {best / p_best:.3f}x / {med / p_med:.3f}x |")
            lines += ["", "The seed's fallback is cuda.core's `pyobj_to_aten_handle`, the "
                      "same offset as our pointer trick; its absolute times include "
                      "cuda.core's `from_dlpack` routing, ours a direct call of the filling "
                      "function, so only the differences and ratios compare, and only "
                      "between runs of the same device type."]
    cc = facts.get("cuda_core") or {}
    if cc.get("path"):
        lines += ["", f"cuda.core's own `{cc.get('call')}` took its {cc['path']} path "
                  "here (observed)."]
    return "\n".join(lines)


LAUNCH_ROUTES = ("ints", "data_ptr", "bridge_view", "owned", "owned_prototype", "owned_fixed",
                 "borrow", "pointer", "dlpack", "dlpack_fixed", "cuda_core")


def consumer_vs_borrow(r: Results, name: str, s, borrow_s) -> tuple[str, str]:
    """Cells ``x vs borrow [95% CI]`` (pooled rounds) and its range over processes, for
    the consumer's route ``name`` (``s``: its samples; ``borrow_s``: the borrow's)."""
    if name == "borrow":
        return "1", "1"
    if borrow_s is None:
        return "", ""
    return (fmt_ci(paired(s, borrow_s, "ratio")),
            fmt_spread(per_process(r, CONSUMER, name, "borrow", "ratio"), "x"))


def launch_section(r: Results) -> str:
    """Section 7: the launch-bound GPU step. Per N (tensor arguments per launch) and
    route: host time per launch, launches per second (from the wall time, the stream
    drained), the bridging per launch (route minus ``ints``, paired by round) and its
    share of the host time, and the route against borrow; the kernel's GPU time per
    launch back to back and the verdict launch-bound / GPU-bound; beside it the decode
    step's bridging share (section 5)."""
    facts = r.evidence.get("launch")
    if not facts:
        why = r.evidence.get("unavailable", {}).get(
            "launch", "this run's JSON has no launch-bound step (it needs CUDA tensors: "
                      "`python -P -m bench --device cuda`)")
        return f"(Not measured in this run: {why}.)"
    lines = [
        f"A CUDA kernel (`{facts['kernel']}`; grid {facts['grid']}, block {facts['block']}, "
        f"compiled by cuda.core's `Program` for {facts['arch']}) launched in a loop through "
        "`cuda.core.launch`, each launch bridging its N 32x32 float32 CUDA tensors first "
        "(`launch(s, config, kernel, f(x0).ptr, ...)`; `bench/scenarios/launch.py`). Every route was "
        "checked by one launch on zeroed tensors (each element then 1.0). Host time: the "
        "Python loop; launches/s: from the wall time until the stream ran them all; GPU "
        f"time: the kernel alone, {facts['gpu_burst']} launches queued back to back behind a "
        "spin kernel, between CUDA events. Bridging: the route minus `ints` (the pointers "
        "read once, outside the loop), paired by round, and that as a share of the route's "
        "host time; for the consumer's routes it includes the `StridedMemoryView` each "
        "builds per tensor (the bridge's own view, `bridge.view_borrow(x).ptr`, builds none).",
        ""]
    for n in facts["arities"]:
        base = r.samples(LAUNCH, "ints", arity=n)
        if base is None:
            continue
        borrow = r.samples(LAUNCH, "borrow", arity=n)
        gpu = np.asarray(r.get(LAUNCH, "ints", arity=n)["extra_info"]["gpu_ns"], dtype=float)
        host0, gpu0 = float(np.median(base)), float(np.median(gpu))
        bound = ("launch-bound: the host's launch alone takes longer than the kernel"
                 if host0 > gpu0 else "GPU-bound: the kernel takes longer than the host's launch")
        lines += [f"**N = {n}** tensor argument{'s' if n > 1 else ''} per launch. GPU time per "
                  f"launch {gpu0 / 1e3:.2f} us (median over rounds); host time of the launch "
                  f"alone {host0 / 1e3:.2f} us: {bound}.", "",
                  "| route | host per launch, median (us) | launches/s (median) | bridging "
                  "per launch [95% CI] (ns) | bridging share of host time [95% CI] | host "
                  "time vs borrow [95% CI] | per process: host per launch (us); vs borrow |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for name in LAUNCH_ROUTES:
            b = r.get(LAUNCH, name, arity=n)
            if b is None:
                continue
            s = r.samples(LAUNCH, name, arity=n)
            wall = np.asarray(b["extra_info"]["wall_ns"], dtype=float)
            rate = f"{1e9 / float(np.median(wall)):,.0f}"
            if name == "ints":
                diff = share = "0"
            elif float(np.median(s)) <= gpu0:  # the host waited on the GPU: not its cost
                diff = fmt_ci(paired(s, base, "diff"), " ns")
                share = "GPU-bound: not a host cost"
            else:
                diff = fmt_ci(paired(s, base, "diff"), " ns")
                q = median_ci((s - base) / s * 100.0)
                share = (f"{q[0]:.1f}%" if np.isnan(q[1])
                         else f"{q[0]:.1f}% [{q[1]:.1f}, {q[2]:.1f}]")
            vs = ("1" if name == "borrow" else "" if borrow is None
                  else fmt_ci(paired(s, borrow, "ratio")))
            lines.append(f"| {b['extra_info'].get('label', name)} | {ns(b, 'median') / 1e3:.2f}"
                         f" | {rate} | {diff} | {share} | {vs} | "
                         f"{launch_spread(r, name, n, borrow is not None)} |")
        lines.append("")
    lines += [processes_line(r), ""]
    stand_in = owned_stand_in(r)
    if stand_in:
        lines += [stand_in, ""]
    step = r.samples(WORK, "decode_step")
    if step is not None:
        shares = []
        for name in PATHS:
            s = r.samples(WORK, name)
            if s is not None:
                shares.append(f"{LABELS.get(name, name)} {float(np.median(s / step * 100)):.2f}%")
        lines.append("Beside it, the eager decode step of section 5 (same run): bridging every "
                     "tensor of a step is " + ", ".join(shares) + " of the step's time.")
    return "\n".join(lines).rstrip()


def protocol_rounds(p: dict) -> str:
    """The footer's rounds: ``"30 rounds"``, or ``"150 rounds (5 fresh processes x 30)"``."""
    if (p.get("processes") or 1) > 1:
        return (f"{p.get('rounds')} rounds ({p['processes']} fresh processes x "
                f"{p.get('rounds_per_process')}, each its own order)")
    return f"{p.get('rounds')} rounds"


def owned_stand_in(r: Results) -> str:
    """The run's host note (``python -m bench --host-note``), and which owned shim the
    consumer's owned rows are when this torch has none of its own (from the run's JSON:
    the consumer's labels and reasons); "" when there is neither."""
    facts = r.evidence.get("consumer") or {}
    labels, why = facts.get("labels") or {}, facts.get("unavailable") or {}
    note = r.evidence.get("host_note")
    note = f"_{note.rstrip('.')}._ " if note else ""
    if "owned" not in why or "owned_prototype" in why:
        return note.rstrip()
    fixed = (f" \"{labels['owned_fixed']}\" is that build with the interpreter fix."
             if "owned_fixed" in labels and "owned_fixed" not in why else "")
    return note + (f"_torch {r.machine.get('torch')}: {why['owned']}; the owned shim that stands in "
            f"is \"{labels.get('owned_prototype')}\" (`bench/native/owned_prototype.cpp`).{fixed}_")


def launch_spread(r: Results, name: str, arity: int, have_borrow: bool) -> str:
    """The launch table's per-process cell: the range over processes of the route's median
    host time per launch (us) and of its paired ratio to the borrow."""
    host = per_process(r, LAUNCH, name, None, "value", arity=arity)
    cell = fmt_spread(None if host is None else [h / 1e3 for h in host], " us", ".2f")
    if have_borrow and name != "borrow":
        cell += "; " + fmt_spread(per_process(r, LAUNCH, name, "borrow", "ratio",
                                              arity=arity), "x")
    return cell


# --- between processes -------------------------------------------------------------------------
#: The row each group's per-process ratios are taken against (the first one it has).
PROCESS_REFS = ("borrow", "route_borrow_getters", "borrow_getters", "handle_borrow")


#: The ``extra_info`` keys that tell apart the rows of one path in one group.
ROW_KEYS = ("ndim", "ntensors", "arity")


def process_count(r: Results) -> int:
    """How many fresh processes this JSON's rounds came from (1 without ``--processes``)."""
    return int((r.evidence.get("protocol") or {}).get("processes") or 1)


def per_process(r: Results, group: str, name: str, ref: str | None, kind: str,
                **params) -> list[float] | None:
    """Per process, the median over its own rounds of ``name``'s samples (``kind``
    ``"value"``, ns), or of its per-round ``"ratio"`` / ``"diff"`` against ``ref`` in the
    same rounds. None when a row is missing or the JSON is of one process."""
    b = r.get(group, name, **params)
    counts = b and b["extra_info"].get("process_rounds")
    if not counts or len(counts) < 2:
        return None
    s = r.samples(group, name, **params)
    if ref is not None:
        base = r.samples(group, ref, **params)
        if base is None or len(base) != len(s):
            return None
        s = s / base if kind == "ratio" else s - base
    return process_medians(s, counts)


def process_medians(values, counts) -> list[float] | None:
    """The median of each process's own stretch of ``values`` (per-round figures pooled
    in process order, ``counts`` rounds each: ``extra_info["process_rounds"]``); None
    without a split of at least two processes or when the lengths disagree."""
    if not counts or len(counts) < 2 or len(values) != sum(counts):
        return None
    edges = np.cumsum([0] + list(counts))
    return [float(np.median(values[a:e])) for a, e in zip(edges[:-1], edges[1:])]


def fmt_spread(values: list[float] | None, unit: str, spec: str | None = None) -> str:
    """``"lo .. hi unit (k processes)"``; ``"one process"`` when there is no split."""
    if values is None:
        return "one process"
    spec = spec or (".3f" if unit == "x" else ".1f")
    return f"{min(values):{spec}}{unit} .. {max(values):{spec}}{unit} ({len(values)} processes)"


def processes_line(r: Results) -> str:
    """One sentence: how many processes and rounds each table's figures pool."""
    p = r.evidence.get("protocol") or {}
    k = process_count(r)
    if k < 2:
        return ("_One process: the intervals are of its rounds only (run-to-run spread not "
                "measured; the evidence runs, `make bench-evidence` and "
                "`make bench-c-shims`, take five processes)._")
    seeds = ", ".join(x.get("order_seed", "?") for x in r.evidence.get("processes", []))
    return (f"_Pooled from {k} fresh processes x {p.get('rounds_per_process')} rounds each, "
            f"the contenders' starting order shuffled per process (order seeds {seeds}); "
            "medians and 95% intervals over the pooled rounds, pairs within a round; "
            "\"per process\": the lowest and highest of the processes' own medians._")


def processes_section(r: Results) -> str:
    """Every timed table's rows, each with its pooled median and the range of the
    processes' own medians, and its paired ratio to the group's borrow row (pooled, with
    its interval, and the range over processes): the spread between processes beside each
    median and interval of the sections above."""
    if process_count(r) < 2:
        return processes_line(r)
    lines = [processes_line(r), "",
             "| group | contender | median (ns) | per process: median (ns) | x vs borrow "
             "[95% CI] | per process: x vs borrow |", "|---|---|---:|---:|---:|---:|"]
    seen = []
    for b in r.data["benchmarks"]:
        if b["group"] not in seen:
            seen.append(b["group"])
    for group in seen:
        rows = [b for b in r.data["benchmarks"] if b["group"] == group]
        key = group.split(" ")[0]
        paths = {b["extra_info"].get("path") for b in rows}
        ref = next((x for x in PROCESS_REFS if x in paths), None)
        for b in rows:
            name = b["extra_info"].get("path")
            params = {k: b["extra_info"][k] for k in ROW_KEYS if k in b["extra_info"]}
            what = name + "".join(f", {k}={v}" for k, v in params.items())
            med = per_process(r, key, name, None, "value", **params)
            vs = spread = ""
            if ref is not None and name != ref and r.get(key, ref, **params) is not None:
                vs = fmt_ci(paired(r.samples(key, name, **params),
                                   r.samples(key, ref, **params), "ratio"))
                spread = fmt_spread(per_process(r, key, name, ref, "ratio", **params), "x")
            lines.append(f"| {key} | {what} | {ns(b, 'median'):.1f} | "
                         f"{fmt_spread(med, '')} | {vs} | {spread} |")
    return "\n".join(lines)


#: The goals timed here: (key, numerator, denominator, target), each a (group, name) of
#: this run. Their instruction counts come from callgrind's JSON beside the report
#: (``bench/callgrind.py``, the same keys G1-G3 and the targets it states per CPython).
TIME_GOALS = (
    ("G1", (PEERS, "view_read"), (PEERS, "python_attrs"), 0.50),
    ("G2", (PEERS, "borrow"), (PEERS, "data_ptr"), None),  # an instruction goal; time beside
    ("G3", (NATIVE, "borrow"), (NATIVE, "fallback"), 0.75),
)


GOAL_WHAT = {
    "G1": "view(t) + reading ptr, shape, strides, dtype, device / the hand-written five-tuple",
    "G2": "view_borrow(t) / t.data_ptr()",
    "G3": "native: borrow + getters / pointer trick + getters",
}


def instruction_goals(r: Results) -> dict:
    """``{goal key: callgrind's goal row}`` from the JSON beside the report, or {}."""
    return {g["goal"]: g for g in r.instructions.get("goals", [])}


def goals(r: Results):
    """The goal rows: (goal, instructions, time, target, status). A quick run judges none."""
    out = []

    def have(*keys):
        return all(r.get(g, n) is not None for g, n in keys)

    counted = instruction_goals(r)
    py = r.instructions.get("python")
    for key, num, den, time_target in TIME_GOALS:
        ig = counted.get(key)
        if ig and ig.get("ratio") is not None:
            instr = f"{ig['ratio']:.3f}x (CPython {py})"
            instr_status = ig["status"]
            instr_target = f"<= {ig['target']:.2f}x instructions"
        else:
            instr, instr_status, instr_target = "not counted (`make callgrind`)", None, ""
        if have(num, den):
            c = paired(r.samples(*num), r.samples(*den), "ratio")
            time = fmt_ci(c, "x")
            time_status = (verdict(c, time_target) if time_target is not None else "reported")
        else:
            time, time_status = "not measured here", None
        targets = "; ".join(t for t in (instr_target, f"<= {time_target:.2f}x time"
                                        if time_target is not None else "") if t)
        if r.quick:
            status = "not judged (quick run)"
        else:
            status = "; ".join(f"{unit} {st}" for unit, st in (("instructions", instr_status),
                                                              ("time", time_status)) if st)
        out.append((f"{key}: {GOAL_WHAT[key]}", instr, time, targets, status))
    if have(BORROW_HANDLE, FALLBACK_HANDLE, (PARTS, "gil_check")):
        c = paired(r.samples(*BORROW_HANDLE), r.samples(*FALLBACK_HANDLE))
        g = r.get(PARTS, "gil_check")
        out.append(("borrow handle alone - fallback handle alone, native", "",
                    f"{fmt_ci(c, ' ns')}; PyGILState_Check alone (the borrow's test before "
                    f"CPython 3.12): {ns(g, 'median'):.1f} ns "
                    f"(median)", "reported beside the GIL check", "reported"))
    for group, label in ((NATIVE, "native"), (SEED, "Python level (seed protocol)")):
        if have((group, "owned"), (group, "borrow")):
            c = paired(r.samples(group, "owned"), r.samples(group, "borrow"))
            q = paired(r.samples(group, "owned"), r.samples(group, "borrow"), "ratio")
            out.append((f"owned - borrow, {label}", "", f"{fmt_ci(c, ' ns')}; {fmt_ci(q, 'x')}",
                        "reported", "reported"))
    return out


def goals_table(r):
    rows = ["| goal | instructions (callgrind) | time: median of per-round ratios [95% "
            "bootstrap CI] | target | status |", "|---|---|---|---|---|"]
    rows += [f"| {g} | {i} | {m} | {t} | {s} |" for g, i, m, t, s in goals(r)]
    return "\n".join(rows)


def routes_table(r: Results) -> str:
    """Every route from the Python object to the metadata (``bench/routes.py``), timed in
    one interleaved native run: best / median / stdev, and the paired ratio to the
    pointer trick + getters (today's unstable route) and to borrow + batched."""
    from bench import routes

    refs = ("fallback_getters", "borrow_batched")
    ref_s = {k: r.samples(ROUTES, "route_" + k) for k in refs}
    rows = ["| route | status | best (ns) | median (ns) | stdev (ns) | paired ratio to pointer "
            "trick + getters [95% CI] | paired ratio to borrow + batched [95% CI] |",
            "|---|---|---:|---:|---:|---:|---:|"]
    for route in routes.ROUTES:
        name = "route_" + route.name
        label = route.label + (" (part)" if route.part else "")
        b = r.get(ROUTES, name)
        if b is None:
            why = r.evidence.get("unavailable", {}).get(name, "not measured")
            rows.append(f"| {label} | {route.status} | unavailable: {why} | | | | |")
            continue
        cells = [" 1 " if k == route.name else
                 (f" {fmt_ci(paired(r.samples(ROUTES, name), ref_s[k], 'ratio'))} "
                  if ref_s[k] is not None else " ") for k in refs]
        rows.append(f"| {label} | {route.status} | {ns(b, 'min'):.1f} | {ns(b, 'median'):.1f} | "
                    f"{ns(b, 'stddev'):.1f} |" + "|".join(cells) + "|")
    return "\n".join(rows)


# The headline's rows, also the chart's: every Python-level way to one view of the tensor
# (section 3's interleaved run) and every native route of section 2 (its interleaved run),
# each against the borrow of the same run.
PY_HEADLINE = ("borrow", "fallback", "owned", "empty", "data_ptr", "python_attrs", "view_read",
               "to_dlpack", "dunder_dlpack", "cuda_core", "nanobind_ndarray", "tvm_ffi_tensor")


NATIVE_HEADLINE = ("borrow", "fallback", "owned", (ROUTES, "route_dlpack_no_sync"),
                   (ROUTES, "route_dlpack_managed"), "typecheck")


@dataclass
class Row:
    """One contender of a headline table (and of the chart)."""

    name: str
    label: str
    bench: dict | None  # None: not measured in this run
    why: str = ""  # why not measured
    samples: np.ndarray | None = None
    vs_borrow: tuple | None = None  # paired ratio to the borrow of the same run, or None

    @property
    def is_borrow(self) -> bool:
        return self.name == "borrow"


def headline_rows(r: Results, group: str, names) -> list[Row]:
    """``names`` of ``group`` as rows, measured ones by median (cheapest first), then the
    unavailable ones with their reason; each with its per-round ratio to ``borrow``."""
    ref = r.samples(group, "borrow")
    rows, missing = [], []
    for item in names:
        g, name = entry(group, item)
        b = r.get(g, name)
        if b is None:
            why = r.evidence.get("unavailable", {}).get(name, "not measured")
            missing.append(Row(name, label(r, g, name), None, why))
            continue
        s = r.samples(g, name)
        vs = None if ref is None else (1.0, float("nan"), float("nan")) if name == "borrow" \
            else paired(s, ref, "ratio")
        rows.append(Row(name, label(r, g, name), b, samples=s, vs_borrow=vs))
    return sorted(rows, key=lambda row: ns(row.bench, "median")) + missing


def python_group(r: Results) -> str:
    """Section 3's run (the paths beside the peers), or the seed run's where a partial run
    (``python -m bench -- -k seed``) has no peers."""
    return PEERS if any(r.get(PEERS, n) for n in r.peer_names(PY_HEADLINE)) else SEED


def md_table(head: list[str], rows: list[list[str]], right: list[bool]) -> str:
    """A markdown table padded to its columns, so it also reads in a terminal."""
    widths = [max(len(row[i]) for row in [head] + rows) for i in range(len(head))]

    def line(row):
        return "| " + " | ".join(c.rjust(w) if ra else c.ljust(w)
                                 for c, w, ra in zip(row, widths, right)) + " |"

    sep = "|" + "|".join("-" * (w + 1) + ":" if ra else "-" * (w + 2)
                         for w, ra in zip(widths, right)) + "|"
    return "\n".join([line(head), sep] + [line(row) for row in rows])


def vs_borrow_cell(row: Row, have_borrow: bool) -> str:
    if row.is_borrow:
        return "1 (reference)"
    if not have_borrow:
        return "no borrow in this run"
    return fmt_x(row.vs_borrow)


def headline_table(r: Results, group: str, names) -> str:
    rows = headline_rows(r, group, names)
    have_borrow = r.get(group, "borrow") is not None
    body = []
    for row in rows:
        name = f"**{row.label}**" if row.is_borrow else row.label
        if row.bench is None:
            body.append([name, f"unavailable: {row.why}", "", ""])
            continue
        body.append([name, f"{ns(row.bench, 'median'):.1f}", f"{ns(row.bench, 'min'):.1f}",
                     vs_borrow_cell(row, have_borrow)])
    return md_table(["contender", "median (ns)", "best (ns)",
                     "x vs borrow [95% CI]"], body,
                    [False, True, True, True])


def headline_title(r: Results) -> str:
    """The headline's heading: what one row times."""
    return f"Headline: one view of a 32x32 float32 {'CUDA' if r.cuda else 'CPU'} tensor"


def quick_banner(r: Results) -> str:
    """The line a quick run's report, terminal output and chart open with ('' otherwise)."""
    return ("**Quick run: not judged.** `make bench-quick` runs every scenario briefly, to "
            "check that the code runs; its figures are not a measurement." if r.quick else "")


def headline(r: Results) -> str:
    """The two tables ``make bench`` prints first: one 32x32 float32 view, every way, this
    run; Python-level and native apart, each row against the borrow of its own run."""
    py = python_group(r)
    which = "section 3" if py == PEERS else "section 1, the seed protocol"
    k = process_count(r)
    run = "One interleaved run" if k == 1 else f"Interleaved rounds pooled from {k} fresh processes"
    return "\n".join([
        "### Python level: `f(t)` called from Python, ns per call", "",
        f"{run} ({which}). x vs borrow: the median over rounds of the row's "
        "time / `view_borrow(t)`'s in the same round, with its 95% bootstrap interval.", "",
        headline_table(r, py, r.peer_names(PY_HEADLINE) if py == PEERS else
                       ("borrow", "fallback", "owned")), "",
        "### Native C loop: the same metadata read in C, no Python call, ns per call", "",
        f"{run} (section 2); x vs borrow: as above, against borrow + getters "
        "(one stable-ABI call per field).", "",
        headline_table(r, NATIVE, NATIVE_HEADLINE)])


def bindings_table(r: Results) -> str:
    """Each binding library's call with one tensor beside its own empty call (same
    interleaved run as the peers): the per-round difference is the tensor's conversion
    (and the reads a view makes); the last column compares the tensor call with a
    ``view_borrow(t)`` of the same round."""
    head = ["Each library's function taking the tensor (and reading data pointer, ndim, "
            "sizes, strides, dtype and device, like a view) beside an empty function of the "
            "same library: the paired difference is what receiving the tensor costs in that "
            "library. First row: our bridge's `view_borrow(t)` beside an empty METH_O call.",
            "", "| library | empty call, median (ns) | tensor call, median (ns) | "
            "tensor - empty, paired (ns) [95% CI] | tensor / empty, paired [95% CI] | "
            "tensor call / view_borrow(t), paired [95% CI] |",
            "|---|---:|---:|---:|---:|---:|"]
    borrow = r.samples(PEERS, "borrow")
    rows = []
    for library, empty, tensor in BINDINGS:
        be, bt = r.get(PEERS, empty), r.get(PEERS, tensor)
        if be is None or bt is None:
            why = r.evidence.get("unavailable", {}).get(tensor, "not measured")
            rows.append(f"| {library} | unavailable: {why} | | | | |")
            continue
        se, st = r.samples(PEERS, empty), r.samples(PEERS, tensor)
        vs_borrow = ("1" if tensor == "borrow" else "no view_borrow in this run"
                     if borrow is None else fmt_ci(paired(st, borrow, "ratio"), "x"))
        rows.append(f"| {library} | {ns(be, 'median'):.1f} | {ns(bt, 'median'):.1f} | "
                    f"{fmt_ci(paired(st, se), ' ns')} | {fmt_ci(paired(st, se, 'ratio'), 'x')} | "
                    f"{vs_borrow} |")
    notes = []
    for key, info in r.evidence.get("bindings", {}).items():
        if "unavailable" in info:
            continue
        notes.append(f"- {info.get('distribution', key)} {info.get('version')}: argument `{info.get('argument')}`, "
                     f"built by {info.get('build')}; the tensor arrived through "
                     f"{info.get('route')}.")
    return "\n".join(head + rows + ([""] + notes if notes else []))


def scaling_tables(r: Results) -> str:
    paths = [p for p in PATHS if r.get(NDIM, p, ndim=0)]
    out = ["| ndim | " + " | ".join(f"{p} median (ns)" for p in paths) +
           " | borrow - fallback [95% CI] |",
           "|---:|" + "---:|" * (len(paths) + 1)]
    for d in range(17):
        bs = [r.get(NDIM, p, ndim=d) for p in paths]
        if any(b is None for b in bs):
            continue
        cell = ""
        if "borrow" in paths and "fallback" in paths:
            cell = fmt_ci(paired(r.samples(NDIM, "borrow", ndim=d),
                                 r.samples(NDIM, "fallback", ndim=d)), " ns")
        out.append(f"| {d} | " + " | ".join(f"{ns(b, 'median'):.1f}" for b in bs) +
                   f" | {cell} |")
    out += ["", "| N tensors | " + " | ".join(f"{p}: per launch / per tensor (ns)" for p in paths)
            + " | owned - borrow per launch [95% CI] |",
            "|---:|" + "---:|" * (len(paths) + 1)]
    for n in (1, 3, 8, 14):
        bs = [r.get(NTENS, p, ntensors=n) for p in paths]
        if any(b is None for b in bs):
            continue
        cell = ""
        if "owned" in paths and "borrow" in paths:
            cell = fmt_ci(paired(r.samples(NTENS, "owned", ntensors=n),
                                 r.samples(NTENS, "borrow", ntensors=n)), " ns")
        out.append(f"| {n} | " + " | ".join(
            f"{ns(b, 'median'):.0f} / {ns(b, 'median') / n:.1f}" for b in bs) + f" | {cell} |")
    return "\n".join(out + launcher_table(r))


def launcher_table(r: Results) -> list[str]:
    """Group 4c (``bench/launcher_workload.py``): per k, the launch's view side and the
    hand-written side per tensor, and their paired ratio with its interval."""
    from bench import launcher_workload as lw

    rows = []
    for k in lw.KS:
        view, hand = r.get(LAUNCHER, "launch_view", ntensors=k), r.get(LAUNCHER, "launch_hand",
                                                                       ntensors=k)
        if view is None or hand is None:
            continue
        ratio = paired(r.samples(LAUNCHER, "launch_view", ntensors=k),
                       r.samples(LAUNCHER, "launch_hand", ntensors=k), kind="ratio")
        rows.append(f"| {k} | {ns(view, 'median') / k:.1f} | {ns(hand, 'median') / k:.1f} | "
                    f"{fmt_ci(ratio)} |")
    if not rows:
        return []
    return ["", "A launcher's workload (`bench/launcher_workload.py`: k tensors of distinct "
            "shapes per call, six attributes of each view read, the last call's views alive; "
            f"the anchor reads `{lw.FIVE}` of the same tensors and keeps them, as the view "
            "side keeps its views):", "",
            "| k tensors | view + six attributes, per tensor (ns) | hand-written five reads, "
            "per tensor (ns) | view / hand [95% CI] |", "|---:|---:|---:|---:|", *rows]


def workload_table(r: Results) -> str:
    w = r.evidence.get("workload")
    if not w:
        return "(not measured)"
    ops = w["ops_per_step"]
    out = [f"{w['layers']} x TransformerDecoderLayer(d_model={w['d_model']}, nhead={w['nhead']}, "
           f"dim_feedforward={w['dim_feedforward']}), {w['params']:,} parameters, one new token "
           f"against a memory of {w['memory_len']}: **{ops} kernel launches and "
           f"{w['tensors_per_step']} tensors per decode step** (view-only ops excluded; "
           f"dropped tensors: {w['dropped_tensors'] or 'none'}). The bridging rows time only "
           "the bridging of those tensors; the decode step row times the step itself "
           f"({w.get('torch_threads', '?')} torch threads), in the same interleaved rounds.", "",
           "| contender | best (us/step) | median (us/step) | stdev (us/step) | median per op (ns) |",
           "|---|---:|---:|---:|---:|"]
    for name in ("empty", *PATHS, "decode_step"):
        b = r.get(WORK, name)
        if b is None:
            continue
        label = ("one real decode step (the model's eager forward, same run)"
                 if name == "decode_step" else f"bridging: {LABELS.get(name, name)}")
        out.append(f"| {label} | {ns(b, 'min') / 1e3:.1f} | "
                   f"{ns(b, 'median') / 1e3:.1f} | {ns(b, 'stddev') / 1e3:.1f} | "
                   f"{ns(b, 'median') / ops:.0f} |")
    step = r.samples(WORK, "decode_step")
    out += ["", "| saving | per 1,000 ops: per-round difference, median [95% CI] | per step, "
            "as a share of the step: per-round (difference / step), median [95% CI] |",
            "|---|---:|---:|"]
    for a, b in (("owned", "borrow"), ("borrow", "fallback"), ("owned", "fallback")):
        if r.get(WORK, a) is None or r.get(WORK, b) is None:
            continue
        sa, sb = r.samples(WORK, a), r.samples(WORK, b)
        c = paired(sa, sb)
        scale = 1000.0 / ops / 1e3  # ns per step -> us per 1,000 ops
        share = "not measured"
        if step is not None:
            q = median_ci((sa - sb) / step * 100.0)
            share = (f"{q[0]:+.3f}%" if np.isnan(q[1]) else
                     f"{q[0]:+.3f}% [{q[1]:+.3f}, {q[2]:+.3f}]")
        out.append(f"| {a} - {b} | {c[0] * scale:+.1f} us [{c[1] * scale:+.1f}, "
                   f"{c[2] * scale:+.1f}] | {share} |")
    top = list(w["ops_by_name"].items())[:8]
    out += ["", "Most frequent ops per step: " + ", ".join(f"`{k}` x{v}" for k, v in top) + "."]
    return "\n".join(out)
