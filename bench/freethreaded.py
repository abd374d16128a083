"""The Python-level figures on a free-threaded CPython beside a GIL build's.

Measure (default, ``measure``): in the running interpreter, with the seed's protocol
(``bench/protocol.py``), each path's view beside torch's own accessors, each path
natively (with and without a per-object critical section around handle + read), and
views from 1 and 2 threads; writes ``<out>/<stem>.json``. Report (``--report
A.json B.json ... --md OUT``): one table, a column per file, each column's ratio to the
first. ``--processes K`` measures in K fresh processes (each its own order seed) and
pools their rounds (``merge``). ``make bench-freethreaded`` runs both steps (``python -P
-m bench.freethreaded``); quote ratios: the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import platform
import statistics
import sys
import threading
import time

from bench import processes
from bench.native import torch_version

HERE = pathlib.Path(__file__).resolve().parent


def measure(args) -> dict:
    """Per-call cost, ns, in the running interpreter (interleaved rounds, GC off):

    - ``view_<path>(t)`` for each available path and ``view(t)`` (a 32x32 float32 CPU
      tensor), beside ``t.data_ptr()``, ``t.shape``, ``t.stride()`` and an empty Cython
      call (``_bridge._active_path()``);
    - natively (``_bridge._native_loop``): each path's gate + handle + metadata read (the
      gate includes the Python-level conj/neg check where torch_is_conj is missing, as on
      3.13t), handle + read alone, and handle + read inside a per-object critical section
      (``Py_BEGIN_CRITICAL_SECTION`` on the tensor: what a per-tensor lock would cost; a
      no-op with the GIL);
    - threads (``threads``): ``view_fallback`` and ``view_borrow`` with 1 and 2 threads,
      each on its own tensor, then one shared tensor (ns per view per thread).
    """
    from bench import protocol
    from bench import machine_info
    import torch

    import bridge
    from bridge import _bridge, _resolve, _select, _support

    paths = [p for p, info in bridge.available_paths().items() if info.available]
    t = torch.randn(32, 32)
    ns = {"t": t, "bridge": bridge, "_bridge": _bridge}
    contenders = [protocol.statement(f"view_{p}(t)", f"bridge.view_{p}(t)", ns)
                  for p in paths]
    contenders += [
        protocol.statement("view(t)", "bridge.view(t)", ns),
        protocol.statement("t.data_ptr()", "t.data_ptr()", ns),
        protocol.statement("t.shape", "t.shape", ns),
        protocol.statement("t.stride()", "t.stride()", ns),
        protocol.statement("empty Cython call", "_bridge._active_path()", ns),
    ]
    for p in paths:
        contenders.append(protocol.native(
            f"native {p}: gate + handle + read", lambda n, p=p: _bridge._native_loop(t, p, n)))
        contenders.append(protocol.native(
            f"native {p}: handle + read",
            lambda n, p=p: _bridge._native_loop(t, p, n, gate=False)))
        contenders.append(protocol.native(
            f"native {p}: handle + read in a critical section",
            lambda n, p=p: _bridge._native_loop(t, p, n, critical_section=True, gate=False)))
    for c in contenders:  # every contender must work before anything is timed
        c.run(1)
    rounds, calls, warmup = (3, 200, 100) if args.quick else (args.rounds or 30, args.calls, 2000)
    print(f"measuring {len(contenders)} contenders: {rounds} rounds x {calls} calls",
          file=sys.stderr, flush=True)
    samples = protocol.measure(contenders, rounds, calls, warmup)
    results = {c.name: {"median_ns": statistics.median(s), "min_ns": min(s),
                        "samples_ns": [round(x, 3) for x in s], "level": c.level}
               for c in contenders for s in [samples[c.name]]}  # the list's order
    info = bridge.available_paths()
    return {
        "label": args.label or _default_label(_support, torch),
        "python": platform.python_version(),
        "free_threaded": _support.free_threaded(),
        "gil_enabled": getattr(sys, "_is_gil_enabled", lambda: True)(),
        "torch": torch.__version__,
        "paths": {p: {"available": i.available, "origin": i.origin, "reason": i.reason}
                  for p, i in info.items()},
        "bit_check": ("torch_is_conj / torch_is_neg (C)" if
                      _resolve.IS_CONJ in _select.resolution().symbols else
                      "torch.Tensor.is_conj() / .is_neg() (Python)"),
        "protocol": {"rounds": rounds, "calls": calls, "warmup": warmup},
        "machine": machine_info.collect(),
        "results": results,
        "threads": threads(bridge, torch, [p for p in ("fallback", "borrow") if p in paths],
                           quick=args.quick),
    }


def threads(bridge, torch, paths, quick) -> dict:
    """``view_<path>`` throughput for each of ``paths``: {"view_<path>, own tensors" |
    "view_<path>, one shared tensor": {n: ns per view per thread}} for 1 and 2 threads
    (median of 3 runs)."""
    views = 2_000 if quick else 200_000
    out = {}
    for path in paths:
        view = getattr(bridge, f"view_{path}")
        for sharing in ("own tensors", "one shared tensor"):
            key = f"view_{path}, {sharing}"
            out[key] = {}
            for n in (1, 2):
                tensors = [torch.randn(32, 32)] * n if sharing != "own tensors" else \
                    [torch.randn(32, 32) for _ in range(n)]
                runs = []
                for _ in range(3):
                    barrier = threading.Barrier(n + 1)
                    elapsed = [0.0] * n

                    def work(i):
                        t = tensors[i]
                        barrier.wait()
                        t0 = time.perf_counter_ns()
                        for _ in range(views):
                            view(t)
                        elapsed[i] = time.perf_counter_ns() - t0

                    ths = [threading.Thread(target=work, args=(i,)) for i in range(n)]
                    for th in ths:
                        th.start()
                    barrier.wait()
                    for th in ths:
                        th.join()
                    runs.append(max(elapsed) / views)  # ns per view, per thread
                out[key][n] = statistics.median(runs)
    return out


def merge(runs: list[dict], seeds: list[str]) -> dict:
    """One ``measure`` result from several fresh processes' (the same contenders): per
    contender the rounds pooled in process order (``median_ns`` / ``min_ns`` over them,
    ``process_medians_ns`` each process's own); per thread count the median over
    processes (``threads_by_process``: each process's figure). Raises ``ValueError`` when
    the processes timed other contenders."""
    pooled_by = processes.pool_rounds([{n: x["samples_ns"] for n, x in r["results"].items()}
                                 for r in runs])
    merged = dict(runs[0])
    merged["results"] = {}
    for name, first in runs[0]["results"].items():
        pooled = pooled_by[name]
        merged["results"][name] = {
            "median_ns": statistics.median(pooled), "min_ns": min(pooled),
            "samples_ns": pooled, "level": first["level"],
            "process_medians_ns": [r["results"][name]["median_ns"] for r in runs]}
    merged["threads_by_process"] = {key: {n: [r["threads"][key][n] for r in runs]
                                          for n in per_n}
                                    for key, per_n in runs[0]["threads"].items()}
    merged["threads"] = {key: {n: statistics.median(v) for n, v in per_n.items()}
                         for key, per_n in merged["threads_by_process"].items()}
    merged["process_rounds"] = [len(next(iter(r["results"].values()))["samples_ns"])
                                for r in runs]
    merged["protocol"] = {**runs[0]["protocol"], "processes": len(runs),
                          "rounds_per_process": runs[0]["protocol"]["rounds"],
                          "rounds": sum(r["protocol"]["rounds"] for r in runs)}
    merged["processes"] = [{"order_seed": seed, "date_utc": r["machine"].get("date_utc"),
                            "load_average_at_start": r["machine"].get("load_average_at_start")}
                           for r, seed in zip(runs, seeds)]
    return merged


def _default_label(support, torch) -> str:
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}{'t' if support.free_threaded() else ''}"
    return f"{tag}-torch-{torch_version(torch)}"


def report(files, md_path) -> str:
    data = [json.loads(pathlib.Path(f).read_text()) for f in files]
    base = data[0]
    names = []
    for d in data:
        names += [n for n in d["results"] if n not in names]

    def head(d):
        build = "free-threaded" if d["free_threaded"] else "GIL"
        extra = ", shim_ext hidden" if d.get("shim_ext_hidden") else ""
        return f"CPython {d['python']} ({build}{extra}), torch {d['torch']}"

    lines = ["# Python-level cost on free-threaded CPython beside a GIL build", "",
             "Generated by `bench/freethreaded.py --report` (`make bench-freethreaded`); "
             "do not edit. Medians of the per-round samples (ns per call), pooled over a "
             "column's fresh processes where it has several, with the lowest and highest "
             "of the processes' own medians in parentheses; the ratio column divides by "
             f"the first column ({head(base)}). The machine is shared and noisy: read the "
             "ratios.", ""]
    lines.append("| | " + " | ".join(head(d) for d in data) + " | "
                 + " | ".join(f"ratio {i + 1}/1" for i in range(1, len(data))) + " |")
    lines.append("|---" * (1 + 2 * len(data) - 1) + "|")
    for name in names:
        cells, ratios = [], []
        for d in data[:]:
            r = d["results"].get(name)
            by = (r or {}).get("process_medians_ns")
            cells.append("-" if not r else f"{r['median_ns']:.1f}" + (
                f" ({min(by):.1f} .. {max(by):.1f})" if by else ""))
        b = base["results"].get(name)
        for d in data[1:]:
            r = d["results"].get(name)
            ratios.append(f"{r['median_ns'] / b['median_ns']:.2f}x" if r and b else "-")
        lines.append(f"| `{name}` | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    over = (", then the median over a column's processes" if any(
        "threads_by_process" in d for d in data) else "")
    lines += ["", f"Threads: ns per view per thread (median of 3 runs{over}) of `view_fallback` "
              "(the pointer trick) and `view_borrow`, with 1 and 2 threads; the 2/1 ratio is "
              "1.0 when two threads view as fast as one (they scale), 2.0 when they take "
              "turns; -: that path does not exist there.", "",
              "| | " + " | ".join(head(d) for d in data) + " |", "|---" * (1 + len(data)) + "|"]
    keys = []
    for d in data:
        keys += [k for k in d["threads"] if k not in keys]

    def per_thread(d, key, n):
        return d["threads"].get(key, {}).get(n)

    for key in keys:
        for n in ("1", "2"):
            cells = [f"{v:.1f}" if (v := per_thread(d, key, n)) else "-" for d in data]
            lines.append(f"| {key}, {n} thread{'s' if n == '2' else ''} | "
                         + " | ".join(cells) + " |")
        cells = [f"{per_thread(d, key, '2') / per_thread(d, key, '1'):.2f}"
                 if per_thread(d, key, "1") else "-" for d in data]
        lines.append(f"| {key}, ratio 2/1 | " + " | ".join(cells) + " |")
    borrow, trick = "view_borrow(t)", "view_fallback(t)"
    lines += ["", "Borrow beside the pointer trick (`view_borrow(t)` / `view_fallback(t)`): "
              "the medians, and the median of the per-round ratio (the two ran in the same "
              "rounds of the same process, so load common to both cancels), with the range "
              "of the processes' own median ratios:", ""]
    for d in data:
        b, f = d["results"].get(borrow), d["results"].get(trick)
        if not (b and f):
            lines.append(f"- {head(d)}: no borrow path here")
            continue
        ratios = [x / y for x, y in zip(b["samples_ns"], f["samples_ns"], strict=True)]
        proto = d["protocol"]
        counts = (d.get("process_rounds")
                  or ([proto["rounds_per_process"]] * proto["processes"]
                      if proto.get("processes") else [len(ratios)]))
        edges = [sum(counts[:i]) for i in range(len(counts) + 1)]
        by = [statistics.median(ratios[a:e]) for a, e in zip(edges[:-1], edges[1:])]
        lines.append(f"- {head(d)}: {b['median_ns']:.1f} ns / {f['median_ns']:.1f} ns; "
                     f"per round {statistics.median(ratios):.3f}x"
                     + (f" ({min(by):.3f}x .. {max(by):.3f}x over {len(by)} processes)"
                        if len(by) > 1 else ""))
    lines += ["", "Context:", ""]
    for d in data:
        m = d["machine"]
        avail = ", ".join(p for p, i in d["paths"].items() if i["available"])
        lines.append(f"- {head(d)}: paths {avail}; conj/neg check {d['bit_check']}; "
                     f"GIL enabled while measuring: {d['gil_enabled']}; protocol "
                     + (f"{d['protocol']['processes']} fresh processes x "
                        f"{d['protocol']['rounds_per_process']} rounds"
                        if d["protocol"].get("processes") else f"{d['protocol']['rounds']} rounds")
                     + f" x {d['protocol']['calls']:,} calls "
                     f"after {d['protocol']['warmup']:,}; {m['cpu_model']}, "
                     f"{m['cpu_count']} CPUs, load at start {m['load_average_at_start']}; "
                     f"Cython {m['cython']}; {m['date_utc']}")
    text = "\n".join(lines) + "\n"
    if md_path:
        pathlib.Path(md_path).write_text(text)
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=HERE / "results" / "freethreaded",
                        help="directory for the JSON (default bench/results/freethreaded)")
    parser.add_argument("--label", "--stem", dest="label",
                        help="file stem (default cp<ver>[t]-torch-<version>)")
    parser.add_argument("--calls", type=int, default=10_000, help="calls per round (default 10,000)")
    parser.add_argument("--quick", action="store_true", help="a few calls: checks the code runs")
    parser.add_argument("--report", nargs="+", metavar="JSON",
                        help="instead of measuring: tabulate these result files")
    parser.add_argument("--md", help="with --report: write the table here too")
    processes.add_process_options(parser, "30")
    args = parser.parse_args(argv)
    processes.check_process_options(parser, args)
    if args.report and args.processes > 1:
        parser.error("--report tabulates saved files; --processes is for measuring")
    if args.report:
        print(report(args.report, args.md))
        return 0
    if args.processes > 1:
        if not args.label:
            import torch

            from bridge import _support

            args.label = _default_label(_support, torch)
        argv = ["--calls", str(args.calls), *([f"--rounds={args.rounds}"] if args.rounds else [])]
        rc, paths, seeds = processes.fresh_processes("bench.freethreaded", args.processes,
                                               args.label, argv, args.order_seed)
        if rc:
            return rc
        result = merge([json.loads(p.read_text()) for p in paths], seeds)
        result["label"] = args.label
    else:
        result = measure(args)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{result['label']}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    if args.process_only:
        return 0
    for name, r in result["results"].items():
        print(f"{name:40s} {r['median_ns']:9.1f} ns (min {r['min_ns']:.1f})")
    for sharing, per_n in result["threads"].items():
        print(f"threads, {sharing}: " + ", ".join(f"{n}: {ns:.1f} ns/view/thread"
                                                   for n, ns in per_n.items()))
    print(f"written: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
