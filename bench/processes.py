"""The benchmark runners' shared machinery: several fresh processes pooled into one
JSON, the process options every runner takes, the default file stem, and
pytest-benchmark's own tables. ``python -P -m bench`` (``bench/__main__.py``) and the
side runners (``bench.c_shims.run``, ``bench.consumer_header``, ``bench.freethreaded``,
``bench.numba_cuda.run``) import it.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent


def add_host_note(json_path: pathlib.Path, note: str) -> None:
    """Store ``note`` as the JSON's ``evidence["host_note"]`` (the report prints it)."""
    import json

    data = json.loads(json_path.read_text())
    data.setdefault("evidence", {})["host_note"] = note
    json_path.write_text(json.dumps(data, indent=4))


def add_process_options(parser: argparse.ArgumentParser, rounds_default: str) -> None:
    """``--processes``, ``--rounds``, ``--order-seed`` and the children's hidden
    ``--process-only``: the options of every runner that takes its evidence from several
    fresh processes (``fresh_processes``)."""
    parser.add_argument("--processes", type=int, default=1,
                        help="fresh processes to take every measurement from (default 1); "
                        "their rounds are pooled and the spread between them reported")
    parser.add_argument("--rounds", type=int, default=None,
                        help=f"rounds per measurement and process (default {rounds_default})")
    parser.add_argument("--order-seed", default=None,
                        help="with --processes: the seeds' common prefix (default: random; "
                        "each process's seed is recorded in the merged JSON)")
    parser.add_argument("--process-only", action="store_true", help=argparse.SUPPRESS)


def check_process_options(parser: argparse.ArgumentParser, args) -> None:
    """Refuse ``--processes`` below 1, ``--rounds`` below 2 and several quick processes."""
    if args.processes < 1:
        parser.error("--processes must be at least 1")
    if args.rounds is not None and args.rounds < 2:
        parser.error("--rounds must be at least 2 (a paired interval needs two rounds)")
    if args.processes > 1 and getattr(args, "quick", False):
        parser.error("--quick runs one process (its numbers are not evidence)")


def run_scenarios(target: pathlib.Path, python_files: str, json_path: pathlib.Path, args,
                  rootdir: pathlib.Path | None = None) -> int:
    """Run pytest-benchmark scenarios in this process: ``target`` (a folder or a file),
    collecting ``python_files``, the JSON to ``json_path``, with the runners' options
    (``args.quick``, ``args.device``, ``args.rounds``, ``args.pytest_args``) passed as the
    scenarios' own (``bench/scenarios/conftest.py``). Returns pytest's exit code.
    pytest-benchmark's own tables stay off the terminal (``--benchmark-quiet``)."""
    import pytest

    return int(pytest.main([
        str(target), "-p", "no:cacheprovider", "--import-mode=importlib",
        "-o", f"python_files={python_files}", "-o", "python_functions=test_*",
        *(["--rootdir", str(rootdir)] if rootdir else []),
        "-q", "-rs", "--benchmark-quiet", f"--benchmark-json={json_path}",
        *(["--bench-quick"] if args.quick else []),
        *(["--bench-device", args.device] if args.device != "cpu" else []),
        *([f"--bench-rounds={args.rounds}"] if args.rounds else []),
        *args.pytest_args]))


#: Where ``run_processes`` keeps each process's JSON (git-ignored).
PROCESS_DIR = HERE.parent / "build" / "bench-processes"


def run_processes(args, stem: str, json_path: pathlib.Path, module: str = "bench",
                  extra: tuple[str, ...] = ()) -> int:
    """Run ``module``'s pytest-benchmark suite ``args.processes`` times, each in a fresh
    ``python -P -m <module> --process-only`` (``fresh_processes``; ``extra``: more of the
    children's options), then ``merge_runs`` their JSONs into ``json_path``. Returns the
    first failing exit code, else 0."""
    import json

    argv = ["--device", args.device, *extra,
            *([f"--rounds={args.rounds}"] if args.rounds else []),
            *(["--"] + args.pytest_args if args.pytest_args else [])]
    rc, paths, seeds = fresh_processes(module, args.processes, stem, argv, args.order_seed)
    if rc:
        return rc
    merged = merge_runs([json.loads(p.read_text()) for p in paths], seeds)
    json_path.write_text(json.dumps(merged, indent=4))
    print(f"\nmerged {len(paths)} processes into {json_path} (each: {paths[0].parent})",
          flush=True)
    return 0


def fresh_processes(module: str, count: int, stem: str, argv: list[str],
                    order_seed: str | None = None) -> tuple[int, list[pathlib.Path], list[str]]:
    """Run ``python -P -m <module> --process-only --out DIR --stem <stem>.p<k> <argv>``
    ``count`` times, one after another, each with ``BENCH_ORDER_SEED=<prefix>-<k>``.

    Each process has its own order seed (every measurement then starts its rotation from
    its own shuffled order, ``protocol.start_order``), so a report can give the spread
    between processes beside each median and interval. ``order_seed`` is the seeds'
    prefix (default random). ``DIR`` is ``build/bench-processes/<stem>/`` (git-ignored);
    the module writes ``<stem>.p<k>.json`` there. Returns ``(rc, json paths, seeds)``:
    ``rc`` the first failing exit code (the later processes are then not run), else 0."""
    import os
    import secrets
    import subprocess
    import time

    prefix = order_seed or secrets.token_hex(4)
    work = PROCESS_DIR / stem
    work.mkdir(parents=True, exist_ok=True)
    paths, seeds = [], []
    for k in range(count):
        seed = f"{prefix}-{k}"
        cmd = [sys.executable, "-P", "-m", module, "--process-only",
               "--out", str(work), "--stem", f"{stem}.p{k}", *argv]
        print(f"\n>>> {module}: process {k + 1} of {count} (order seed {seed}), "
              f"{time.strftime('%H:%M:%S')}", flush=True)
        done = subprocess.run(cmd, env={**os.environ, "BENCH_ORDER_SEED": seed})
        if done.returncode != 0:
            return done.returncode, paths, seeds
        paths.append(work / f"{stem}.p{k}.json")
        seeds.append(seed)
    return 0, paths, seeds


def merge_runs(runs: list[dict], seeds: list[str]) -> dict:
    """One pytest-benchmark JSON from several runs of the same suite.

    Every run must hold the same benchmarks (by ``fullname``). Per benchmark:
    ``extra_info["samples_ns"]`` and every other per-round list of the same length
    (``wall_ns``, ``gpu_ns``) are concatenated in run order, ``extra_info["process_rounds"]``
    lists each run's number of rounds, and ``stats`` are pytest-benchmark's own
    (``pytest_benchmark.stats.Stats``) over the pooled per-call times. The rest of a
    benchmark, ``machine_info`` and ``evidence`` are the first run's, with
    ``evidence["processes"]`` (per run: its order seed, from which every measurement's
    starting order follows, ``protocol.start_order``; its date; its load averages) and
    the protocol's ``processes`` / ``rounds_per_process`` added, and the last run's load
    at the end.
    Raises ``ValueError`` when the runs' benchmarks differ."""
    import copy

    from pytest_benchmark.stats import Stats

    names = [sorted(b["fullname"] for b in run["benchmarks"]) for run in runs]
    for k, n in enumerate(names[1:], 1):
        if n != names[0]:
            raise ValueError(f"process {k} measured other benchmarks than process 0: "
                             f"{sorted(set(n) ^ set(names[0]))}")
    merged = copy.deepcopy(runs[0])
    by_name = [{b["fullname"]: b for b in run["benchmarks"]} for run in runs]
    for b in merged["benchmarks"]:
        parts = [idx[b["fullname"]] for idx in by_name]
        extras = [p["extra_info"] for p in parts]
        rounds = [len(e["samples_ns"]) for e in extras]
        for key, value in extras[0].items():
            if isinstance(value, list) and all(
                    isinstance(e.get(key), list) and len(e[key]) == n
                    for e, n in zip(extras, rounds)):
                b["extra_info"][key] = [x for e in extras for x in e[key]]
        b["extra_info"]["process_rounds"] = rounds
        stats = Stats()
        for ns in b["extra_info"]["samples_ns"]:
            stats.update(ns * 1e-9)
        pooled = stats.as_dict()
        pooled["data"] = list(stats.data)
        pooled["iterations"] = b["stats"].get("iterations")
        b["stats"] = {k: pooled.get(k, v) for k, v in b["stats"].items()}
    ev = merged.setdefault("evidence", {})
    ev["processes"] = [{"order_seed": seed, "datetime": run.get("datetime"),
                        "load_average_at_start":
                            run["machine_info"].get("bench", {}).get("load_average_at_start"),
                        "load_average_at_end":
                            run["machine_info"].get("bench", {}).get("load_average_at_end")}
                       for run, seed in zip(runs, seeds)]
    protocol = ev.get("protocol") or {}
    protocol["rounds_per_process"] = protocol.get("rounds")
    protocol["processes"] = len(runs)
    protocol["rounds"] = (protocol["rounds_per_process"] or 0) * len(runs)
    ev["protocol"] = protocol
    bench = merged["machine_info"].setdefault("bench", {})
    bench["load_average_at_end"] = \
        runs[-1]["machine_info"].get("bench", {}).get("load_average_at_end")
    return merged


def pool_rounds(runs: list[dict[str, list]], what: str = "contenders") -> dict[str, list]:
    """``{name: rounds}`` of several processes as one: each name's per-round figures
    concatenated in process order, names in the first process's order. Raises
    ``ValueError`` when a process measured other ``what`` than the first."""
    names = set(runs[0])
    for k, r in enumerate(runs[1:], 1):
        if set(r) != names:
            raise ValueError(f"process {k} timed other {what} than process 0: "
                             f"{sorted(names ^ set(r))}")
    return {n: [x for r in runs for x in r[n]] for n in runs[0]}


#: pytest-benchmark's own tables of a run, beside its JSON.
TABLES_SUFFIX = ".pytest-benchmark.txt"


def pytest_benchmark_tables(json_path: pathlib.Path, out: pathlib.Path,
                            md_path: pathlib.Path) -> bool:
    """Write pytest-benchmark's own tables of ``json_path`` into ``out``, rendered by its
    ``pytest-benchmark compare`` (one table per group, cheapest first; False if it failed).

    Run in a scratch folder, so the command's storage folder (``.benchmarks``) is made
    there and no ``conftest.py`` of the caller's folder is imported."""
    import subprocess
    import tempfile
    import textwrap

    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run(
            [sys.executable, "-m", "pytest_benchmark", "--storage", f"file://{scratch}",
             "compare", str(json_path.resolve()), "--columns=min,median,stddev,iqr,rounds",
             "--sort=min", "--group-by=group", "--name=short"],
            cwd=scratch, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"pytest-benchmark compare failed ({done.returncode}): {done.stderr.strip()}",
              file=sys.stderr)
        return False
    out.write_text(textwrap.fill(
        f"pytest-benchmark's own tables of {json_path.name} (`pytest-benchmark compare`), per "
        "call. In parentheses: each figure's ratio to the best of its group, pytest-benchmark's "
        "own; a group's best may be a floor row of a fraction of a nanosecond. The paired "
        f"per-round ratios (x vs borrow) are in {md_path.name}.", 96) + "\n" + done.stdout)
    return True


def default_stem(torch, device: str) -> str:
    """``bench-torch-<v>`` on the CPU; ``gpu-<gpu>-torch-<v>`` for CUDA tensors."""
    version = torch.__version__.split("+")[0]
    if device == "cpu":
        return f"bench-torch-{version}"
    gpu = torch.cuda.get_device_name(0).split()[-1].lower()
    return f"gpu-{''.join(c for c in gpu if c.isalnum() or c in '-_.')}-torch-{version}"

