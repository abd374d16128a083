"""Run the benchmark suite and write its evidence: ``python -P -m bench`` (``make bench``).

Runs ``bench/scenarios/bench_*.py`` under pytest-benchmark (one group per scenario), then
``bench.report`` on its JSON: the terminal shows the headline, the goals and the machine;
pytest-benchmark's own tables go to a file. Files in ``--out`` (default the git-ignored
``bench/results/scratch/``; ``make bench-evidence`` writes ``bench/results/``):
``bench-torch-<v>.{json,md,svg,pytest-benchmark.txt}``, or ``gpu-<gpu>-torch-<v>.*`` with
``--device cuda`` (``--stem`` names them otherwise). ``--processes K`` runs the suite in K
fresh interpreters and pools their rounds (``bench.processes``). Run with
``-P`` from the repository root, so ``bridge`` is the built package, never the source tree.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

from bench.processes import (
    TABLES_SUFFIX,
    add_host_note,
    add_process_options,
    check_process_options,
    default_stem,
    pytest_benchmark_tables,
    run_processes,
    run_scenarios,
)

HERE = pathlib.Path(__file__).resolve().parent


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="every scenario briefly (CI): checks the code runs, no evidence")
    parser.add_argument("--out", type=pathlib.Path, default=HERE / "results" / "scratch",
                        help="directory for the JSON, markdown and chart (default the "
                        "git-ignored bench/results/scratch; `make bench-evidence` passes "
                        "bench/results, the committed evidence)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="where the scenarios' tensors live (default cpu)")
    parser.add_argument("--stem", help="file name stem instead of the default "
                        "(bench-torch-<v>, or gpu-<gpu>-torch-<v> with --device cuda)")
    add_process_options(parser, "the protocol's 30; quick: 3")
    parser.add_argument("--host-note", default=None,
                        help="a sentence about the machine that the report prints beside the "
                        "consumer's and the launch step's tables (JSON: evidence.host_note), "
                        "e.g. why it runs the torch it runs")
    parser.add_argument("pytest_args", nargs="*",
                        help="extra pytest arguments after --, e.g. -- -k native")
    args = parser.parse_args(argv)
    check_process_options(parser, args)

    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch.cuda.is_available() is false on this machine")
    from bench import report

    args.out.mkdir(parents=True, exist_ok=True)
    # Build the binding peers now, where their progress shows (pytest captures it); the
    # benchmark fixture then finds them built. A peer that cannot build is reported there.
    from bench.native import peers_bindings

    device = torch.device("cuda", 0) if args.device == "cuda" else torch.device("cpu")
    for b in peers_bindings.load_all(torch, device).values():
        print(f"peer {b.name}: " + (f"{b.info['version']}, {b.info['route']}" if b.available
                                    else f"unavailable ({b.info['unavailable']})"), flush=True)
    stem = args.stem or default_stem(torch, args.device)
    json_path, md_path, chart_path, tables_path = (
        args.out / f"{stem}{ext}" for ext in (".json", ".md", ".svg", TABLES_SUFFIX))
    # pytest-benchmark's own tables would print here, before the headline, each group's
    # ratios to its fastest row (a floor of a fraction of a ns in the native groups):
    # --benchmark-quiet keeps them off the terminal; they go to a file after the run.
    if args.processes > 1:
        rc = run_processes(args, stem, json_path)
    else:
        rc = run_scenarios(HERE / "scenarios", "bench_*.py", json_path, args)
    if rc != 0:
        print(f"benchmarks failed (pytest exit code {rc}); no report written", file=sys.stderr)
        return int(rc)
    if args.process_only:
        return 0
    if args.host_note:
        add_host_note(json_path, args.host_note)
    tables_written = pytest_benchmark_tables(json_path, tables_path, md_path)
    print()
    report.main([str(json_path), "--md", str(md_path), "--chart", str(chart_path), "--headline"])
    print("\nWritten:")
    for path, what in ((md_path, "the report: these tables and every section"),
                       (chart_path, "the chart"),
                       (json_path, "pytest-benchmark's JSON, per-round samples included"),
                       (tables_path, "pytest-benchmark's own tables" if tables_written else
                        "not written: pytest-benchmark compare failed (above)")):
        print(f"  {path}  ({what})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
