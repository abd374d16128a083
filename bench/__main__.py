"""Run the benchmark suite and write its evidence: ``make bench`` / ``make bench-quick``.

Runs ``bench/bench_*.py`` under pytest-benchmark (one group per scenario, JSON out),
then ``report.py`` on that JSON. The terminal shows pytest's progress, then the headline
(Python level and native C loop, each row against the borrow), the goals and the machine,
then the files written; pytest-benchmark's own tables go to a file, not the terminal.
Files, per torch version (``<v>`` = torch's version without the local tag), in ``--out``
(default the git-ignored ``bench/results/scratch/``; the committed evidence in
``bench/results/`` is written only when asked, ``make bench-evidence``):
``<out>/bench-torch-<v>.json`` (pytest-benchmark's JSON, with the per-round samples
and the machine), ``<out>/bench-torch-<v>.md`` (the tables), ``<out>/bench-torch-<v>.svg``
(the chart) and ``<out>/bench-torch-<v>.pytest-benchmark.txt`` (pytest-benchmark's own
tables of the JSON, by ``pytest-benchmark compare``). Run with ``python -P`` from the
repository root, so ``bridge`` is the built package, never the source tree.

``--device cuda`` makes every scenario's tensors on ``cuda:0`` (``bench/gpu/run.sh`` on
the GPU machine) and names the files after the GPU: ``gpu-<gpu>-torch-<v>.*``,
``<gpu>`` being the last word of its name, lower-cased (``NVIDIA H200`` -> ``h200``).
``--stem`` overrides the name (e.g. the GPU host's own CPU run, for comparison). The CPU
default is unchanged.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

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
    parser.add_argument("pytest_args", nargs="*",
                        help="extra pytest arguments after --, e.g. -- -k native")
    args = parser.parse_args(argv)

    import pytest
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
    rc = pytest.main([
        str(HERE / "scenarios"), "-p", "no:cacheprovider", "--import-mode=importlib",
        "-o", "python_files=bench_*.py",
        "-o", "python_functions=test_*", "-q", "-rs", "--benchmark-quiet",
        f"--benchmark-json={json_path}", *(["--bench-quick"] if args.quick else []),
        *(["--bench-device", args.device] if args.device != "cpu" else []),
        *args.pytest_args])
    if rc != 0:
        print(f"benchmarks failed (pytest exit code {rc}); no report written", file=sys.stderr)
        return int(rc)
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


if __name__ == "__main__":
    sys.exit(main())
