"""The seed's benchmark protocol, reproduced on every available path.

A 32x32 float32 CPU tensor; after ``--warmup`` calls per path, ``--rounds`` rounds of
``--calls`` calls each; within a round the paths run one after another in an order that
rotates from round to round, so drift on this shared machine hits every path alike; the
garbage collector is off while timing (``timeit`` does that). Reports best / median /
stdev of the per-call time (ns) per path, and each path's difference to the fallback.
Results are printed and saved as JSON and markdown.

Run through ``make bench`` (or ``python -P bench/seed_protocol.py --help``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import platform
import statistics
import sys
import timeit


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (or platform.processor())."""
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def check_views(bridge, t, paths):
    """Each path's view must equal torch's own answer (checked outside the timed loops)."""
    for path in paths:
        with bridge.using_path(path):
            v = bridge.view(t)
        assert (v.ptr, v.shape, v.strides, v.dtype) == (
            t.data_ptr(), tuple(t.shape), t.stride(), t.dtype), f"{path} view is wrong: {v}"


def run(rounds: int, calls: int, warmup: int, progress=print) -> dict:
    import torch

    import bridge

    t = torch.randn(32, 32, dtype=torch.float32)
    available = bridge.available_paths()
    paths = [p for p in ("owned", "borrow", "fallback") if available[p].available]
    check_views(bridge, t, paths)
    fns = {"owned": bridge.view_owned, "borrow": bridge.view_borrow,
           "fallback": bridge.view_fallback}
    timers = {p: timeit.Timer("f(t)", globals={"f": fns[p], "t": t}) for p in paths}
    for p in paths:
        timers[p].timeit(warmup)
    samples = {p: [] for p in paths}
    for r in range(rounds):
        order = paths[r % len(paths):] + paths[:r % len(paths)]
        for p in order:
            samples[p].append(timers[p].timeit(calls) / calls * 1e9)
        progress(f"\rround {r + 1}/{rounds}", end="", flush=True)
    progress("", flush=True)
    stats = {p: {"best_ns": min(s), "median_ns": statistics.median(s),
                 "stdev_ns": statistics.stdev(s) if len(s) > 1 else 0.0, "samples_ns": s}
             for p, s in samples.items()}
    if "fallback" in stats:
        base = stats["fallback"]["best_ns"]
        for s in stats.values():
            s["vs_fallback_ns"] = s["best_ns"] - base
            s["vs_fallback_pct"] = 100.0 * (s["best_ns"] - base) / base
    import bridge._bridge as core

    return {
        "protocol": {"tensor": "32x32 float32 cpu", "rounds": rounds, "calls": calls,
                     "warmup": warmup, "order": "rotating per round", "gc": "disabled"},
        "machine": {"cpu": cpu_model(), "python": platform.python_version(),
                    "platform": platform.platform(), "torch": torch.__version__,
                    "compiler": core.COMPILER,
                    "date": datetime.datetime.now(datetime.timezone.utc).isoformat()},
        "unavailable": {p: i.reason for p, i in available.items() if not i.available},
        "paths": stats,
    }


def table(result: dict) -> str:
    """Markdown table: path, best, median, stdev, difference to the fallback."""
    rows = ["| path | best (ns) | median (ns) | stdev (ns) | vs fallback (ns) | vs fallback |",
            "|---|---:|---:|---:|---:|---:|"]
    for p, s in result["paths"].items():
        diff = (f"{s['vs_fallback_ns']:+.1f} | {s['vs_fallback_pct']:+.1f}%"
                if "vs_fallback_ns" in s else "n/a | n/a")
        rows.append(f"| {p} | {s['best_ns']:.1f} | {s['median_ns']:.1f} | "
                    f"{s['stdev_ns']:.1f} | {diff} |")
    for p, why in result["unavailable"].items():
        rows.append(f"| {p} | unavailable: {why} | | | | |")
    m, pr = result["machine"], result["protocol"]
    rows.append("")
    rows.append(f"torch {m['torch']}, Python {m['python']}, {m['cpu']}, {m['compiler']}; "
                f"{pr['rounds']} rounds x {pr['calls']} calls after {pr['warmup']} warm-up "
                f"calls, {m['date']}")
    return "\n".join(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30, help="outer rounds (default 30)")
    parser.add_argument("--calls", type=int, default=10_000,
                        help="calls per round and path (default 10000)")
    parser.add_argument("--warmup", type=int, default=2_000,
                        help="warm-up calls per path (default 2000)")
    parser.add_argument("--quick", action="store_true",
                        help="5 rounds x 1000 calls: checks the code runs, not a measurement")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("bench/results"),
                        help="directory for the JSON and markdown results")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.calls, args.warmup = 5, 1_000, 200
    result = run(args.rounds, args.calls, args.warmup)
    text = table(result)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"seed-protocol-torch-{result['machine']['torch'].split('+')[0]}"
    stem.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    stem.with_suffix(".md").write_text(text + "\n")
    print(f"saved {stem}.json and {stem}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
