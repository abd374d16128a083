"""Turn a benchmark JSON (pytest-benchmark's ``--benchmark-json``) into the RFC's tables
and chart.

Usage: ``python -P bench/report.py RESULT.json [--md OUT.md] [--chart OUT.svg|OUT.png]``
(``bench/run.py`` calls it after the benchmarks). Nothing here times anything: every
figure comes from the JSON. Per contender the best / median / stdev are
pytest-benchmark's own stats (per call; ns unless a table says otherwise). The paired
statistics use the per-round samples (``extra_info["samples_ns"]``, in round order):
round ``r`` of two contenders ran back to back in the same interleaved round, so the
per-round difference (and ratio) cancels load common to both. Their centre is the
median of the per-round values; the 95% interval is a percentile bootstrap of that
median (``scipy.stats.bootstrap``, 9,999 resamples, fixed seed, so a report is
reproducible from its JSON).

Beside the goals: the seed's own figures (read from ``proposal/sources/seed-benchmark.txt``)
next to this run's seed-protocol rows, labelled for what differs; each binding library's
tensor call minus its empty call (``bindings_table``); each workload saving as a share of
the real decode step of the same rounds; the CPU's model and clock in the machine line.

Goals (reported, never asserted): borrow + batched against the pointer trick +
getters natively; owned - borrow with its interval; a borrow view no dearer than one
``t.data_ptr()``. DLPack is not a goal but a route: the routes table
(``routes_table``, rows from ``bench/routes.py``) shows it beside every other route,
torch's own and with each internal fix. A goal is *met* when its whole interval is on the right
side, *missed* when it is all on the wrong side, *undecided* otherwise.

The headline (what ``make bench`` prints, and the report's first section) is two tables,
the Python level (section 3's interleaved run: the bridge's three paths beside the peers)
and the native C loop (section 2's: each path with the batched read and with the getters,
beside DLPack), each row with its per-round ratio to the borrow of the same run ("x vs
borrow"). The chart has the same rows under the same labels, as box plots of the
per-round samples on linear scales from 0, the borrow highlighted; the Python-level rows
over ``OWN_SCALE`` times the borrow get a panel of their own, so owned against borrow stays
visible. A quick run (``make bench-quick``) says so on the report, the terminal output, the
chart's title and every goal ("not judged (quick run)").

A run with CUDA tensors (``bench/run.py --device cuda``; the JSON's
``evidence.device.type == "cuda"``) gets the same tables, titled with the GPU, plus the
``t.__cuda_array_interface__`` peer; a CPU run's report is unchanged.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys
from dataclasses import dataclass

import numpy as np


# Groups by the number that starts their name (bench_*.py set the names).
SEED, NATIVE, PARTS, ROUTES, PEERS, NDIM, NTENS, WORK = "1", "2", "2b", "2c", "3", "4a", "4b", "5"
#: The parts of a view that are routes' parts (``bench/routes.py``), timed once there.
OWNED_HANDLE, BORROW_HANDLE, FALLBACK_HANDLE, GETTERS7 = (
    (ROUTES, "route_" + n) for n in ("owned_handle", "borrow_handle", "fallback_handle", "getters7"))
CONSUMER = "6"  # the seed's consumer: cuda.core StridedMemoryView via each route (bench_consumer.py)
LAUNCH = "7"  # the launch-bound GPU step: N bridged tensors per kernel launch (bench_launch.py)


# --- reading -----------------------------------------------------------------------------
#: Rows of runs made before each native loop was timed once: a route's loop was also
#: timed under another name in groups 2 / 2b. Read under the route's name, found under
#: the old one in such a run.
RECORDED_BEFORE = {
    (ROUTES, "route_dlpack_no_sync"): (NATIVE, "dlpack_dltensor"),
    (ROUTES, "route_dlpack_managed"): (NATIVE, "dlpack_managed"),
    (ROUTES, "route_owned_handle"): (PARTS, "handle_owned"),
    (ROUTES, "route_borrow_handle"): (PARTS, "handle_borrow"),
    (ROUTES, "route_fallback_handle"): (PARTS, "handle_fallback"),
    (ROUTES, "route_getters7"): (PARTS, "getters7"),
    (ROUTES, "route_borrow_batched"): (PARTS, "meta_borrow"),
    (ROUTES, "route_borrow_one_call"): (PARTS, "meta_from_pyobject"),
}


class Results:
    """The JSON, indexed: ``get(group_prefix, name)`` -> the benchmark dict or None."""

    def __init__(self, data: dict):
        self.data = data
        self.by = {}
        for b in data["benchmarks"]:
            key = (b["group"].split(" ")[0], b["extra_info"].get("path"))
            self.by.setdefault(key, []).append(b)
        self.machine = data["machine_info"].get("bench", {})
        self.evidence = data.get("evidence", {})
        self.device = self.evidence.get("device", {"type": "cpu"})
        self.cuda = self.device.get("type") == "cuda"
        self.quick = bool((self.evidence.get("protocol") or {}).get("quick"))
        #: callgrind's JSON for the same torch and interpreter, when the caller found one
        self.instructions: dict = {}

    def device_label(self) -> str:
        """``"CPU"``, or ``"CUDA (NVIDIA H200)"``: where the timed tensors lived."""
        return f"CUDA ({self.device.get('name')})" if self.cuda else "CPU"

    def peer_names(self, names: tuple) -> tuple:
        """``names``, plus the CUDA-only peer on a CUDA run."""
        return names + ("cuda_array_interface",) if self.cuda else names

    def get(self, group: str, name: str, **params):
        for key in ((group, name), RECORDED_BEFORE.get((group, name))):
            for b in self.by.get(key, []):
                if all(b["extra_info"].get(k) == v for k, v in params.items()):
                    return b
        return None

    def samples(self, group, name, **params):
        b = self.get(group, name, **params)
        return None if b is None else np.asarray(b["extra_info"]["samples_ns"], dtype=float)


def ns(b, stat: str) -> float:
    """pytest-benchmark's stat (seconds per call) in ns."""
    return b["stats"][stat] * 1e9


# --- paired statistics ----------------------------------------------------------------------
def paired(a, b, kind: str = "diff", confidence: float = 0.95):
    """Median over rounds of ``a_r - b_r`` (kind ``"diff"``, ns) or ``a_r / b_r``
    (``"ratio"``), with a percentile-bootstrap ``confidence`` interval of that median.
    Returns ``(centre, low, high)``; the interval is (nan, nan) with fewer than 3 rounds."""
    return median_ci(a - b if kind == "diff" else a / b, confidence)


def median_ci(values, confidence: float = 0.95):
    """``(median, low, high)`` of per-round ``values``, the interval a percentile bootstrap
    of the median (fixed seed); (nan, nan) with fewer than 3 rounds or no spread."""
    from scipy import stats

    centre = float(np.median(values))
    if len(values) < 3 or np.ptp(values) == 0:
        return centre, float("nan"), float("nan")
    res = stats.bootstrap((values,), np.median, confidence_level=confidence,
                          n_resamples=9_999, method="percentile",
                          rng=np.random.default_rng(20261129))
    return centre, float(res.confidence_interval.low), float(res.confidence_interval.high)


def fmt_ci(c, unit=""):
    centre, low, high = c
    if np.isnan(low):
        return f"{centre:+.2f}{unit} [no interval]" if unit == " ns" else f"{centre:.3f}{unit}"
    if unit == " ns":
        return f"{centre:+.2f} ns [{low:+.2f}, {high:+.2f}]"
    return f"{centre:.3f}x [{low:.3f}, {high:.3f}]"


def verdict(c, limit, better="below"):
    """'met' / 'missed' / 'undecided' for an interval against ``limit``."""
    centre, low, high = c
    if np.isnan(low):
        low = high = centre
        suffix = " (no interval)"
    else:
        suffix = ""
    if better == "below":
        return ("met" if high <= limit else "missed" if low > limit else "undecided") + suffix
    return ("met" if low >= limit else "missed" if high < limit else "undecided") + suffix


# --- tables ------------------------------------------------------------------------------------
LABELS = {
    "owned": "view_owned(t): torch_tensor_from_pyobject + delete",
    "borrow": "view_borrow(t): torch_tensor_borrow_from_pyobject",
    "fallback": "view_fallback(t): THPVariable offset",
    "empty": "empty METH_O C call (floor)",
    "data_ptr": "t.data_ptr()",
    "python_attrs": "t.data_ptr(), t.shape, t.stride(), t.dtype, t.device",
    "view_read": "v = bridge.view(t); v.ptr, v.shape, v.strides, v.dtype, v.device_type/index",
    # bench/consumer_header.py: shim_ext/examples/consumer.c on torch_borrow/consumer.h
    "header_c": "consumer.h: torch_borrow_read(t, &m), every check, metadata kept in C",
    "header_tuples": "consumer.h: the same read, returned as Python tuples",
    "to_dlpack": "torch.utils.dlpack.to_dlpack(t)",
    "dunder_dlpack": "t.__dlpack__()",
    "cuda_core": "cuda.core StridedMemoryView",
    "cuda_array_interface": "t.__cuda_array_interface__",
    "dlpack_dltensor": "DLPack dltensor_from_py_object_no_sync",
    "dlpack_managed": "DLPack managed_tensor_from_py_object_no_sync + deleter",
    "typecheck": "real-type check alone (floor)",
    "handle_owned": "handle alone: torch_tensor_from_pyobject + delete",
    "handle_borrow": "handle alone: torch_tensor_borrow_from_pyobject",
    "handle_fallback": "handle alone: (char*)obj + sizeof(PyObject)",
    "getters7": "seven aoti_torch_get_* alone",
    "conj_getter": "conj bit: torch_is_conj (patch 0002)",
    "conj_dispatcher": "conj bit: new owning handle + torch_call_dispatcher(aten::is_conj)",
    "gil_check": "PyGILState_Check() alone",
    "handle_borrow_direct": "handle alone: the same, its implementation called directly (no vtable)",
    "meta_offset": "batched (withdrawn): (char*)obj + sizeof(PyObject) + torch_tensor_get_metadata",
    "meta_borrow": "batched: torch_tensor_borrow_from_pyobject + torch_tensor_get_metadata",
    "meta_from_pyobject": "batched: torch_tensor_borrow_metadata_from_pyobject (one call)",
    "nanobind_empty": "nanobind: empty() (no argument)",
    "nanobind_ndarray": "nanobind: f(t), one nb::ndarray<>",
    "tvm_ffi_empty": "tvm-ffi: empty() (no argument)",
    "tvm_ffi_tensor": "tvm-ffi: f(t), one TensorView",
}

# The native loop's rows (``bench_native.py``): the bridge's ``_native_loop`` on each path,
# reading with one stable-ABI getter per field after the metadata-policy check.
NATIVE_LABELS = {
    "owned": "owned: torch_tensor_from_pyobject + getters + delete",
    "borrow": "borrow: torch_tensor_borrow_from_pyobject + getters",
    "fallback": "pointer trick (THPVariable offset) + getters",
}


def label(r: "Results", group: str, name: str) -> str:
    """The human label of contender ``name`` of ``group``: the tables' and the chart's.
    The label recorded with the result (``extra_info["label"]``) where the run has one."""
    b = r.get(group, name)
    if b is not None and b["extra_info"].get("label"):
        return b["extra_info"]["label"]
    if name.startswith("route_"):
        from bench import routes

        route = routes.BY_NAME.get(name.removeprefix("route_"))
        if route is not None:
            return route.label + (" (part)" if route.part else "")
    if group == NATIVE and name in NATIVE_LABELS:
        return NATIVE_LABELS[name]
    return LABELS.get(name, name)


# The binding libraries' pairs (bench/native/peers_bindings.py): (library, empty call, tensor call).
# Our bridge's own pair (the empty METH_O call, view_borrow) is the first row for scale.
BINDINGS = (("torch-borrow-bridge (ours)", "empty", "borrow"),
            ("nanobind", "nanobind_empty", "nanobind_ndarray"),
            ("apache-tvm-ffi", "tvm_ffi_empty", "tvm_ffi_tensor"))


def entry(group: str, item) -> tuple[str, str]:
    """``(group, name)`` of a table entry: a name of ``group``, or a ``(group, name)``
    pair from another group of the same interleaved run."""
    return item if isinstance(item, tuple) else (group, item)


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
    ours = {p: r.get(SEED, p) for p in ("owned", "borrow", "fallback")}
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
        "bridge fills it (`bench/cuda_core_consumer.pyx`, built against the installed "
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
                      "`bench/run.py --device cuda`)")
        return f"(Not measured in this run: {why}.)"
    lines = [
        f"A CUDA kernel (`{facts['kernel']}`; grid {facts['grid']}, block {facts['block']}, "
        f"compiled by cuda.core's `Program` for {facts['arch']}) launched in a loop through "
        "`cuda.core.launch`, each launch bridging its N 32x32 float32 CUDA tensors first "
        "(`launch(s, config, kernel, f(x0).ptr, ...)`; `bench/launch.py`). Every route was "
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
        for name in ("owned", "borrow", "fallback"):
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
    """The run's host note (``bench/run.py --host-note``), and which owned shim the
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
            f"is \"{labels.get('owned_prototype')}\" (`bench/owned_prototype.cpp`).{fixed}_")


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
    edges = np.cumsum([0] + list(counts))
    return [float(np.median(s[a:e])) for a, e in zip(edges[:-1], edges[1:])]


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
                "measured; `make bench-evidence` takes five processes)._")
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
    (``run.py -- -k seed``) has no peers."""
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


def fmt_x(c) -> str:
    """A ratio and its interval, to the digits a glance needs (2 decimals, 1 from 10x)."""
    digits = 1 if c[0] >= 10 else 2 if c[0] >= 0.1 else 3
    if np.isnan(c[1]):
        return f"{c[0]:.{digits}f}x"
    return f"{c[0]:.{digits}f}x [{c[1]:.{digits}f}, {c[2]:.{digits}f}]"


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
    return "\n".join([
        "### Python level: `f(t)` called from Python, ns per call", "",
        f"One interleaved run ({which}). x vs borrow: the median over rounds of the row's "
        "time / `view_borrow(t)`'s in the same round, with its 95% bootstrap interval.", "",
        headline_table(r, py, r.peer_names(PY_HEADLINE) if py == PEERS else
                       ("borrow", "fallback", "owned")), "",
        "### Native C loop: the same metadata read in C, no Python call, ns per call", "",
        "One interleaved run (section 2); x vs borrow: as above, against borrow + getters "
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
    paths = [p for p in ("owned", "borrow", "fallback") if r.get(NDIM, p, ndim=0)]
    out = ["| ndim | " + " | ".join(f"{p} median (ns)" for p in paths) +
           " | borrow - fallback [95% CI] |",
           "|---:|" + "---:|" * (len(paths) + 1)]
    for d in range(9):
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
    return "\n".join(out)


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
    for name in ("empty", "owned", "borrow", "fallback", "decode_step"):
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
             "Generated by `bench/report.py` from the pytest-benchmark JSON beside this file; "
             "nothing here is typed by hand.", "", footer(r), "",
             f"## {headline_title(r)}", "", headline(r), "",
             "## Goals", "", goals_table(r), ""]
    if chart_name:
        parts += [f"![{CHART_ALT}]({chart_name})", ""]
    parts += ["## 1. Seed protocol (Python level)", "",
              group_table(r, SEED, ("owned", "borrow", "fallback"), "fallback"), "",
              seed_comparison(r), "",
              "## 2. Native per-call cost (C loops)", "",
              group_table(r, NATIVE, ("owned", "borrow", "fallback",
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
              "each internal fix, in one interleaved run (`bench/routes.py`; the `*_fixed` "
              "rows run torch's own functions with `bench/native/internal_fixes.cpp`'s interpreter "
              "fix installed for their loop only: the patch's own incref / decref, built from "
              "the patch against torch 2.15 with a stand-in for main's SafeGilScopedAcquire, "
              "not a build of main; the `*_fixed_emulation` rows the earlier hand-written "
              "emulation). Instruction counts of the same routes: "
              "`make callgrind`.", "",
              routes_table(r), "",
              "## 3. Peers (Python level)", "",
              group_table(r, PEERS, r.peer_names(
                  ("empty", "owned", "borrow", "fallback", "data_ptr", "python_attrs", "view_read",
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
    if not panels:  # a run of some scenarios only (run.py -- -k ...)
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
        parser.error(f"{args.json} does not exist: run `make bench` (or bench/run.py) first")
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
