"""The consumer built on ``torch_borrow/consumer.h``, measured beside the hand-written reads.

``python -P -m bench.consumer_header --out bench/results`` counts instructions
(``count``), ``--time`` times (``time_it``), four Python-level statements on a 32x32
float32 tensor (a CUDA one with ``--device cuda``), each compiled by ``timeit``:
``five_tuple`` (``(t.data_ptr(), t.shape, t.stride(), t.dtype, t.device)``), ``view_read``
(``bridge.view(t)`` and the same fields from the view), ``header_c`` (``read(t)`` of
``shim_ext/examples/consumer.c``: ``torch_borrow_read`` with every check, the metadata
kept in C) and ``header_tuples`` (its ``view(t)``: the read as Python tuples); ``--time
--processes K`` times them in K fresh processes and pools the rounds. Files:
``callgrind-consumer-[<tag>]torch-<v>.{json,md}``, ``time-consumer-...-<device>.*``.

Beside them, one ``read(t)`` per route of the header (``ROUTES``: the prototype, torch's
owned shim with and without shim_ext's C check, the DLPack exchange route; each built
from ``bench/native/consumer_route.c`` into a module of its own, since the header's
state is per translation unit) and torch's DLPack exchange API alone (``dlread``,
unchecked), in both the count and the timed rows. ``--init`` measures the first read
(the resolution plus one read) per route in fresh processes:
``init-consumer-[<tag>]torch-<v>.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
STATEMENTS = {
    "five_tuple": "(t.data_ptr(), t.shape, t.stride(), t.dtype, t.device)",
    "view_read": "v = view(t); (v.ptr, v.shape, v.strides, v.dtype, v.device_type, "
                 "v.device_index)",
    "header_c": "read(t)",
    "header_tuples": "cview(t)",
}
LABELS = {
    "five_tuple": "hand-written five reads",
    "view_read": "bridge.view + its fields",
    "header_c": "consumer.h read, metadata kept in C",
    "header_tuples": "consumer.h read, returned as tuples",
}
#: One read per route of the header (``bench/native/consumer_route.c``, one module per
#: route, so that they interleave) and torch's DLPack exchange API alone beside them:
#: name -> (route, shim_ext loaded). A route this torch lacks is left out (and said so).
ROUTES = {
    "prototype": ("prototype", True),
    "owned": ("owned", True),
    "owned_noshim": ("owned", False),
    "dlpack": ("dlpack", False),
}
ROUTE_LABELS = {
    "prototype": "route prototype: shim_ext's borrow, C checks",
    "owned": "route owned: torch_tensor_from_pyobject + shim_ext's C check",
    "owned_noshim": "route owned without shim_ext: + the type check, the flags through "
                    "torch's dispatcher",
    "dlpack": "route dlpack without shim_ext: exchange API + Python-level checks",
    "dlpack_exchange": "torch's DLPack exchange API alone (unchecked)",
}
#: The rotations: each route's read and the exchange API alone over ROTATION distinct
#: tensors of one dtype in one C loop (``read_all`` / ``dlread_all``): no state kept per
#: tensor helps, and the conj check's cost shows for a complex dtype. name -> dtype.
ROTATION = 64
ROTATIONS = {"f32": "float32", "c64": "complex64"}
#: (numerator, denominator, target): instructions (per read, for a rotation); a goal
#: whose route this torch lacks is left out.
TARGETS = (("header_c", "five_tuple", 0.15),
           *((f"route_owned_noshim_{r}", f"dlpack_exchange_{r}", 2.6) for r in ROTATIONS))


def all_statements(taken: dict, rotations: bool = True) -> dict:
    """STATEMENTS, then ``route_<name>`` (``read(t)`` of that route's module) for each
    route in ``taken``, and ``dlpack_exchange``; with ``rotations``, the same over each of
    ROTATIONS' lists (``route_<name>_<r>``, ``dlpack_exchange_<r>``: ROTATION reads a
    call)."""
    out = dict(STATEMENTS)
    for name in taken:
        out[f"route_{name}"] = f"r_{name}(t)"
    out["dlpack_exchange"] = "dlread(t)"
    for r in ROTATIONS if rotations else ():
        for name in taken:
            out[f"route_{name}_{r}"] = f"r_all_{name}(ts_{r})"
        out[f"dlpack_exchange_{r}"] = f"dlread_all(ts_{r})"
    return out


def reads_per_call(name: str) -> int:
    """How many tensors one call of statement ``name`` reads (a rotation: ROTATION)."""
    return ROTATION if name.rsplit("_", 1)[-1] in ROTATIONS else 1


def calls(name: str, n: int) -> int:
    """The calls of statement ``name`` counted for ``n`` reads (a rotation's call reads
    ROTATION tensors: n // ROTATION calls, so every row counts about n reads)."""
    return max(1, n // reads_per_call(name))


def all_labels(statements: dict) -> dict:
    def label(k):
        base, _, r = k.rpartition("_")
        if r in ROTATIONS:
            return (f"{label(base)}, per read over {ROTATION} distinct {ROTATIONS[r]} "
                    f"tensors")
        return LABELS.get(k) or ROUTE_LABELS[k.removeprefix("route_")]
    return {k: label(k) for k in statements}


def _stem(prefix: str, torch_version: str, python: tuple) -> str:
    tag = "" if python[:2] == (3, 11) else f"cp{python[0]}{python[1]}-"
    return f"{prefix}-{tag}torch-{torch_version.split('+')[0]}"


def _namespace(device: str):
    """``(torch, {name: object})`` for the statements, the consumer built fresh."""
    import importlib.util

    import torch

    import bridge

    spec = importlib.util.spec_from_file_location("consumer_build",
                                                  ROOT / "shim_ext" / "examples" / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    out = pathlib.Path(tempfile.mkdtemp(prefix="consumer-header-"))
    build.build("consumer.c", out)
    from bench.native import load_extension

    c = load_extension("borrow_consumer_c", out)

    t = torch.randn(32, 32, dtype=torch.float32, device=device)
    got = c.view(t)
    assert got[:3] == (t.data_ptr(), (32, 32), (32, 1)), got
    assert c.read(t) is None
    assert bridge.view(t).ptr == t.data_ptr()
    ns = {"t": t, "view": bridge.view, "read": c.read, "cview": c.view}
    taken, missing = {}, {}
    for name, (route, shim) in ROUTES.items():
        mod = route_module(name, out)
        got = mod.setup(route, shim_ext=shim)
        if got != route:
            missing[name] = f"this torch has no {route} route here"
            continue
        neg = torch._neg_view(torch.ones(3))
        try:  # the checked read: a negative view refused, the tensor read
            mod.read(neg)
            raise AssertionError(f"route {name} read a negative view")
        except BufferError:
            pass
        assert mod.read(t) is None
        ns[f"r_{name}"] = mod.read
        ns[f"r_all_{name}"] = mod.read_all
        taken[name] = route
    ns["dlread"] = mod.dlread
    ns["dlread_all"] = mod.dlread_all
    assert mod.dlread(t) is None
    for r, dtype in ROTATIONS.items():  # distinct shapes and memory, read once each first
        ns[f"ts_{r}"] = [torch.randn(2 + i % 7, 3 + i // 7, dtype=getattr(torch, dtype),
                                     device=device) for i in range(ROTATION)]
        for name in taken:
            assert ns[f"r_all_{name}"](ns[f"ts_{r}"]) is None
    _namespace.taken, _namespace.missing = taken, missing
    return torch, c, ns


def route_module(name: str, out: pathlib.Path):
    """``bench/native/consumer_route.c`` built as module ``consumer_route_<name>`` in
    ``out`` (the header from the checkout), loaded."""
    import sysconfig

    from bench.native import load_extension

    mod = f"consumer_route_{name}"
    so = out / (mod + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-O2", "-fPIC", "-shared",
                    "-fvisibility=hidden", "-Wall", "-Wextra", "-Werror", f"-DMODULE={mod}",
                    "-I" + sysconfig.get_paths()["include"],
                    "-I" + str(ROOT / "shim_ext" / "include"),
                    str(HERE / "native" / "consumer_route.c"), "-o", str(so), "-ldl"],
                   check=True, capture_output=True, text=True)
    return load_extension(mod, out)


def child(args) -> int:
    """Under valgrind: each statement n1, n2, n1 times (a rotation: :func:`calls`), one
    dump each (``bench.callgrind.count_statements``)."""
    import timeit
    torch, c, ns = _namespace(args.device)
    import bridge
    from bench import callgrind
    from bench.native import peers_native

    peers = peers_native.NativePeers(torch, bridge)
    statements = all_statements(_namespace.taken)
    timers = {name: timeit.Timer(stmt, globals=ns) for name, stmt in statements.items()}
    if peers.callgrind("start") != 1:
        print("not under valgrind, or peers_native lacks <valgrind/callgrind.h>", file=sys.stderr)
        return 2
    peers.callgrind("zero")
    callgrind.count_statements(args, peers, [], timers, lengths={
        name: (calls(name, args.n1), calls(name, args.n2)) for name in timers})
    pathlib.Path(args.plan).write_text(json.dumps({
        "torch": torch.__version__, "python": sys.version.split()[0],
        "python_full": sys.version, "route": c.route(), "n1": args.n1, "n2": args.n2,
        "device": args.device, "statements": statements,
        "routes_missing": _namespace.missing}))
    return 0


def count(args) -> int:
    """Instructions per call: one valgrind process (``--tool=callgrind``, collection off
    at start) runs each statement ``n1``, ``n2`` and ``n1`` times with collection toggled
    on around the loop (``peers_native``'s client requests, as ``bench/callgrind.py``
    counts); per call is ``(I(n2) - I(n1)) / (n2 - n1)``, and the two ``n1`` counts must
    agree. Writes the JSON and markdown with the ratio to the five reads and the target."""
    from bench import callgrind

    work = pathlib.Path(tempfile.mkdtemp(prefix="cg-consumer-"))
    plan_file = work / "plan.json"
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
           "--dump-instr=no", f"--callgrind-out-file={work / 'callgrind.out'}",
           sys.executable, "-P", str(pathlib.Path(__file__).resolve()), "--child",
           "--plan", str(plan_file), "--n1", str(args.n1), "--n2", str(args.n2),
           "--device", args.device]
    print("counting under callgrind (a few minutes: torch imports under valgrind)...",
          flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or not plan_file.exists():
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        return 1
    plan = json.loads(plan_file.read_text())
    dumps = callgrind.read_dumps(work, "callgrind.out")
    per_call, repeat = {}, {}
    statements = plan["statements"]
    labels = all_labels(statements)
    for name in statements:
        n1, n2 = calls(name, args.n1), calls(name, args.n2)
        a, b, a2 = (dumps[f"py:{name}||{n}|{k}"][1] for k, n in enumerate((n1, n2, n1)))
        per_call[name] = (b - a2) / (n2 - n1) / reads_per_call(name)
        repeat[name] = a2 - a
    goals = [{"numerator": num, "denominator": den, "target": target,
              "ratio": round(per_call[num] / per_call[den], 4),
              "status": "met" if per_call[num] / per_call[den] <= target else "missed"}
             for num, den, target in TARGETS if num in per_call and den in per_call]
    result = {**plan, "instructions_per_call": per_call, "repeat_check": repeat,
              "goals": goals, "labels": labels, "valgrind": callgrind.valgrind_version()}
    stem = _stem("callgrind-consumer", plan["torch"], sys.version_info)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n")
    lines = [f"# Instructions per call: a consumer on torch_borrow/consumer.h, torch "
             f"{plan['torch']}, CPython {plan['python']}", "",
             f"- Route: `{plan['route']}`; tensor: 32x32 float32 {plan['device']}; "
             f"{result['valgrind']}, collection toggled around each `timeit` loop, "
             f"n = {args.n1} / {args.n2} / {args.n1} (`bench/consumer_header.py`)", "",
             "| statement | what | instructions per call | ratio to the five reads | "
             "repeat check |", "|---|---|---:|---:|---:|"]
    for name, stmt in statements.items():
        if reads_per_call(name) != 1:
            continue  # the rotations: per read, in their own tables below
        lines.append(f"| `{stmt}` | {labels[name]} | {per_call[name]:.1f} | "
                     f"{per_call[name] / per_call['five_tuple']:.3f}x | {repeat[name]} |")
    for suffix in ("", *(f"_{r}" for r in ROTATIONS)):
        anchor = f"dlpack_exchange{suffix}"
        if anchor not in per_call:
            continue
        lines += ["", "| route | instructions per read | beside the DLPack exchange API alone "
                  f"({per_call[anchor]:.1f}) |", "|---|---:|---:|"]
        for name in statements:
            if name.startswith("route_") and name.endswith(suffix) and (
                    suffix or reads_per_call(name) == 1):
                lines.append(f"| {labels[name]} | {per_call[name]:.1f} | "
                             f"{per_call[name] - per_call[anchor]:+.1f} "
                             f"({per_call[name] / per_call[anchor]:.2f}x) |")
    for name, why in plan.get("routes_missing", {}).items():
        lines.append(f"\n- `{name}` not measured: {why}")
    lines += ["", "| goal | ratio | target | status |", "|---|---:|---:|---|"]
    for g in goals:
        lines.append(f"| {labels[g['numerator']]} / {labels[g['denominator']]} | "
                     f"{g['ratio']:.3f}x | <= {g['target']:.2f}x | {g['status']} |")
    (args.out / f"{stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def time_it(args) -> int:
    """The four statements interleaved (``protocol.measure``: warm-up, GC off, rounds in
    rotating order), in this process or, with ``--processes K``, in K fresh ones (each its
    own order seed; ``bench.processes.fresh_processes``), their rounds pooled. Writes
    ``time-consumer-...-<device>.{json,md}``: ``ns_per_call`` ``{statement: [ns per call,
    per round]}`` (``process_rounds``: rounds per process), and renders ``time_md``."""
    import torch

    from bench import processes

    stem = args.stem or (_stem("time-consumer", torch.__version__, sys.version_info)
                         + f"-{args.device}")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.processes > 1:
        argv = ["--no-count", "--time", "--device", args.device, "--calls", str(args.calls),
                "--warmup", str(args.warmup), *([f"--rounds={args.rounds}"] if args.rounds
                                               else [])]
        rc, paths, seeds = processes.fresh_processes("bench.consumer_header", args.processes, stem,
                                               argv, args.order_seed)
        if rc:
            return rc
        result = merge_times([json.loads(p.read_text()) for p in paths], seeds)
    else:
        result = time_one(args)
    (args.out / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n")
    if args.process_only:
        return 0
    text = time_md(result)
    (args.out / f"{stem}.md").write_text(text)
    print(text)
    return 0


def time_one(args) -> dict:
    """One process's rounds: the JSON ``time_it`` writes, before any merge."""
    from bench import protocol

    torch, c, ns = _namespace(args.device)
    statements = all_statements(_namespace.taken, rotations=False)
    contenders = [protocol.statement(name, stmt, ns) for name, stmt in statements.items()]
    rounds = args.rounds or 30
    samples = protocol.measure(contenders, rounds, args.calls, args.warmup)
    return {"torch": torch.__version__, "python": sys.version.split()[0],
            "device": args.device, "route": c.route(), "rounds": rounds,
            "calls": args.calls, "warmup": args.warmup, "statements": statements,
            "labels": all_labels(statements), "ns_per_call": samples,
            "process_rounds": [rounds], "routes_missing": _namespace.missing,
            "order_seed": os.environ.get(protocol.ORDER_SEED_ENV)}


def merge_times(runs: list[dict], seeds: list[str]) -> dict:
    """One ``time_one`` result from several processes' (same statements): per statement
    the rounds concatenated in process order, ``process_rounds`` each process's count,
    ``processes`` the seeds. Raises ``ValueError`` when the statements differ."""
    from bench import processes

    merged = dict(runs[0])
    merged["ns_per_call"] = processes.pool_rounds([r["ns_per_call"] for r in runs], "statements")
    merged["process_rounds"] = [len(r["ns_per_call"]["view_read"]) for r in runs]
    merged["rounds"] = sum(merged["process_rounds"])
    merged["processes"] = [{"order_seed": seed} for seed in seeds]
    merged.pop("order_seed", None)
    return merged


def time_md(result: dict) -> str:
    """The timed statements as markdown: per statement the best and median ns per call
    (pooled rounds) and the range of the processes' own medians; the paired per-round
    ratios of ``header_c`` and ``header_tuples`` to ``view_read``, median [95% bootstrap
    interval] and their range over processes (``bench.report``'s statistics)."""
    import numpy as np

    from bench import report as rp

    counts = result.get("process_rounds") or [result["rounds"]]
    ns_per = {k: np.asarray(v, dtype=float) for k, v in result["ns_per_call"].items()}
    k = len(counts)
    where = (f"{k} fresh processes x {counts[0]} interleaved rounds each, the statements' "
             "starting order shuffled per process" if k > 1
             else f"{result['rounds']} interleaved rounds in one process")
    lines = [f"# Time per call: a consumer on torch_borrow/consumer.h, torch "
             f"{result['torch']}, CPython {result['python']}, {result['device']}", "",
             f"{where}; a round is {result['calls']} calls, after {result['warmup']} "
             f"warm-up calls (`bench/consumer_header.py --time`); route `{result['route']}`. "
             "Per process: the lowest and highest of the processes' own medians.", "",
             "| statement | what | best ns | median ns | per process: median ns |",
             "|---|---|---:|---:|---:|"]
    for name, stmt in result["statements"].items():
        s = ns_per[name]
        lines.append(f"| `{stmt}` | {result['labels'][name]} | {s.min():.1f} | "
                     f"{np.median(s):.1f} | "
                     f"{rp.fmt_spread(rp.process_medians(s, counts), '')} |")
    lines += ["", f"| paired per round | x vs {result['labels']['view_read']} [95% CI] | "
              "per process |", "|---|---:|---:|"]
    for num in ("header_c", "header_tuples"):
        ratio = ns_per[num] / ns_per["view_read"]
        lines.append(f"| {result['labels'][num]} | {rp.fmt_ci(rp.median_ci(ratio))} | "
                     f"{rp.fmt_spread(rp.process_medians(ratio, counts), 'x')} |")
    if "dlpack_exchange" in ns_per:
        lines += ["", "| paired per round | x vs the DLPack exchange API alone [95% CI] | "
                  "per process |", "|---|---:|---:|"]
        for num in result["statements"]:
            if not num.startswith("route_"):
                continue
            ratio = ns_per[num] / ns_per["dlpack_exchange"]
            lines.append(f"| {result['labels'][num]} | {rp.fmt_ci(rp.median_ci(ratio))} | "
                         f"{rp.fmt_spread(rp.process_medians(ratio, counts), 'x')} |")
    for name, why in result.get("routes_missing", {}).items():
        lines.append(f"\n- `{name}` not measured: {why}")
    return "\n".join(lines) + "\n"


#: The first read in a fresh process: ``setup`` (the resolution, torch_borrow_init_route)
#: and one ``read``; argv: module folder, route or "", shim_ext "1"/"0", state.
INIT_CHILD = """
import json, sys, time
if sys.argv[4] == "absent":
    sys.modules["shim_ext"] = None  # its import fails, as where it is not installed
import torch
from pathlib import Path
from bench.native import load_extension
mod = load_extension("consumer_route_init", Path(sys.argv[1]))
t = torch.randn(32, 32)
t0 = time.perf_counter_ns()
route = mod.setup(sys.argv[2] or None, shim_ext=sys.argv[3] == "1")
if route is None:  # this torch has no such route
    print(json.dumps({"route": None}))
    sys.exit(0)
mod.read(t)
t1 = time.perf_counter_ns()
print(json.dumps({"route": route, "first_read_ms": (t1 - t0) / 1e6,
                  "init_ms": mod.init_seconds() * 1e3}))
"""
#: name -> (route or "", shim_ext loaded, shim_ext state)
INIT_CASES = {
    "auto, shim_ext present": ("", True, "present"),
    "auto, shim_ext absent": ("", True, "absent"),
    **{f"{name} (forced)": (route, shim, "present") for name, (route, shim) in ROUTES.items()},
}


def init_cost(args) -> int:
    """The first read's cost (the resolution plus one read, wall clock) per route, each
    in ``args.processes`` fresh processes (default 5); writes
    ``init-consumer-[<tag>]torch-<v>.{json,md}``: per case the route taken, the median,
    lowest and highest ms, and the header's own torch_borrow_init_seconds."""
    import statistics

    import torch

    out = pathlib.Path(tempfile.mkdtemp(prefix="consumer-init-"))
    route_module("init", out)
    k = max(args.processes, 5)
    cases = {}
    for name, (route, shim, state) in INIT_CASES.items():
        runs = []
        for _ in range(k):
            proc = subprocess.run([sys.executable, "-P", "-c", INIT_CHILD, str(out), route,
                                   "1" if shim else "0", state],
                                  capture_output=True, text=True, timeout=300)
            if proc.returncode != 0:
                sys.stderr.write(proc.stdout[-2000:] + proc.stderr[-2000:])
                return 1
            runs.append(json.loads(proc.stdout.splitlines()[-1]))
        taken = {r["route"] for r in runs}
        cases[name] = {"route": sorted(taken, key=str), "runs": runs}
    stem = _stem("init-consumer", torch.__version__, sys.version_info)
    result = {"torch": torch.__version__, "python": sys.version.split()[0],
              "processes": k, "cases": cases}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n")
    lines = [f"# The first read's cost: a consumer on torch_borrow/consumer.h, torch "
             f"{result['torch']}, CPython {result['python']}", "",
             f"Each case in {k} fresh processes (`bench/consumer_header.py --init`): after "
             "`import torch`, the resolution (`torch_borrow_init_route`) and one read of a "
             "32x32 float32 tensor, wall clock; `init` is the header's own "
             "`torch_borrow_init_seconds()`. Later reads cost what "
             "`callgrind-consumer-*.md` and `time-consumer-*.md` give.", "",
             "| case | route | first read, median ms | lowest - highest ms | init, median ms |",
             "|---|---|---:|---:|---:|"]
    for name, case in cases.items():
        if case["route"] == [None]:
            lines.append(f"| {name} | none on this torch | | | |")
            continue
        first = [r["first_read_ms"] for r in case["runs"]]
        init = [r["init_ms"] for r in case["runs"]]
        route = ", ".join(str(r) for r in case["route"])
        lines.append(f"| {name} | `{route}` | {statistics.median(first):.2f} | "
                     f"{min(first):.2f} - {max(first):.2f} | {statistics.median(init):.2f} |")
    (args.out / f"{stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=HERE / "results" / "scratch")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--time", action="store_true", help="time the statements too")
    parser.add_argument("--init", action="store_true",
                        help="the first read's cost per route, in fresh processes (only)")
    parser.add_argument("--no-count", action="store_true", help="skip the callgrind count")
    parser.add_argument("--n1", type=int, default=1_000)
    parser.add_argument("--n2", type=int, default=11_000)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--warmup", type=int, default=2_000)
    parser.add_argument("--stem", help="--time: the file name stem instead of "
                        "time-consumer-[<tag>]torch-<v>-<device>")
    from bench import processes

    processes.add_process_options(parser, "30")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--plan", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    processes.check_process_options(parser, args)
    if args.processes > 1 and not args.time:
        parser.error("--processes takes the --time rows from fresh processes; the "
                     "instruction count needs one (callgrind's counts do not move)")
    if args.child:
        return child(args)
    if args.init:
        return init_cost(args)
    rc = 0
    if not args.no_count:
        if shutil.which("valgrind") is None:
            parser.error("valgrind is not on PATH: apt-get install valgrind (or --no-count)")
        rc = count(args)
    if args.time and rc == 0:
        rc = time_it(args)
    return rc


if __name__ == "__main__":
    sys.exit(main())
