"""Run scenario F (``scenario.py``: ATen ops through torch's generated C shims,
their input handles by route) and write its evidence: ``make bench-c-shims``.

pytest-benchmark on ``scenario.py`` alone (this folder's ``conftest.py``, the
scenarios' own: ``--quick``, ``--device``, ``--rounds``), JSON out, then ``bench.c_shims.report`` on it
(with the instruction counts of ``callgrind.py`` when ``--callgrind`` names
their JSON). ``--processes K`` runs it in K fresh interpreters, each its own order seed, and
pools their rounds (``bench.processes.fresh_processes`` / ``merge_runs``, as ``python -m
bench`` does). Files in ``--out`` (default the git-ignored ``bench/results/scratch/``):
``<stem>.json`` (pytest-benchmark's, per-round samples and the mode probe included) and
``<stem>.md``; ``<stem>`` is ``c-shims-torch-<v>`` (CPU) or
``c-shims-gpu-<gpu>-torch-<v>`` (``--device cuda``). Run with ``python -P`` from the
repository root.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys

from bench import processes
from bench.native import torch_version

HERE = pathlib.Path(__file__).resolve().parent


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="briefly: checks the code runs")
    parser.add_argument("--out", type=pathlib.Path, default=HERE.parent / "results" / "scratch")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--stem", help="file name stem instead of the default")
    parser.add_argument("--callgrind", type=pathlib.Path,
                        help="callgrind.py's JSON, for the instruction columns")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch's intra-op threads (default 1: on a small shared machine "
                        "an idle pool's spinning and a busy neighbour make a 2-thread op "
                        "stall for milliseconds; 0 leaves torch's default)")
    processes.add_process_options(parser, "the protocol's 30; quick: 3")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments after --")
    args = parser.parse_args(argv)
    processes.check_process_options(parser, args)

    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch.cuda.is_available() is false on this machine")
    from bench.c_shims import scenario as c_shims_scenario
    from bench.c_shims import report as c_shims_report

    if args.threads:
        os.environ[c_shims_scenario.THREADS_ENV] = str(args.threads)

    version = torch_version(torch)
    if args.stem:
        stem = args.stem
    elif args.device == "cuda":
        stem = "c-shims-" + processes.default_stem(torch, "cuda")
    else:
        stem = f"c-shims-torch-{version}"
    args.out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = args.out / f"{stem}.json", args.out / f"{stem}.md"
    if args.processes > 1:
        rc = processes.run_processes(args, stem, json_path, module="bench.c_shims.run",
                               extra=("--threads", str(args.threads)))
    else:
        rc = processes.run_scenarios(HERE / "scenario.py", "scenario.py", json_path, args,
                                     rootdir=HERE)
    if rc != 0:
        print(f"benchmarks failed (pytest exit code {rc}); no report written", file=sys.stderr)
        return int(rc)
    if args.process_only:
        return 0
    report_args = [str(json_path), "--md", str(md_path)]
    if args.callgrind:
        report_args += ["--callgrind", str(args.callgrind)]
    c_shims_report.main(report_args)
    print(f"\nWritten:\n  {md_path}\n  {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
