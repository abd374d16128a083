"""Run the benchmark suite and write its evidence: ``make bench`` / ``make bench-quick``.

Runs ``bench/bench_*.py`` under pytest-benchmark (one group per scenario, JSON out),
then ``report.py`` on that JSON, and prints the headline and goals tables last.
Files, per torch version (``<v>`` = torch's version without the local tag), in ``--out``
(default the git-ignored ``bench/results/scratch/``; the committed evidence in
``bench/results/`` is written only when asked, ``make bench-evidence``):
``<out>/bench-torch-<v>.json`` (pytest-benchmark's JSON, with the per-round samples
and the machine), ``<out>/bench-torch-<v>.md`` (the tables) and
``<out>/bench-torch-<v>.svg`` (the chart). Run with ``python -P`` from the repository
root, so ``bridge`` is the built package, never the source tree.

``--device cuda`` makes every scenario's tensors on ``cuda:0`` (``bench/gpu/run.sh`` on
the GPU machine) and names the files after the GPU:
``gpu-<gpu>-torch-<v>.{json,md,svg}``, ``<gpu>`` being the last word of its name,
lower-cased (``NVIDIA H200`` -> ``h200``). ``--stem`` overrides the name (e.g. the GPU
host's own CPU run, for comparison). The CPU default is unchanged.
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

    sys.path.insert(0, str(HERE))
    import report

    args.out.mkdir(parents=True, exist_ok=True)
    # Build the binding peers now, where their progress shows (pytest captures it); the
    # benchmark fixture then finds them built. A peer that cannot build is reported there.
    import peers_bindings

    device = torch.device("cuda", 0) if args.device == "cuda" else torch.device("cpu")
    for b in peers_bindings.load_all(torch, device).values():
        print(f"peer {b.name}: " + (f"{b.info['version']}, {b.info['route']}" if b.available
                                    else f"unavailable ({b.info['unavailable']})"), flush=True)
    stem = args.stem or default_stem(torch, args.device)
    json_path, md_path, chart_path = (args.out / f"{stem}.{ext}" for ext in ("json", "md", "svg"))
    rc = pytest.main([
        str(HERE), "-p", "no:cacheprovider", "-o", "python_files=bench_*.py",
        "-o", "python_functions=test_*", "-q", "-rs",
        f"--benchmark-json={json_path}", "--benchmark-columns=min,median,stddev,rounds",
        "--benchmark-sort=name", *(["--bench-quick"] if args.quick else []),
        *(["--bench-device", args.device] if args.device != "cpu" else []),
        *args.pytest_args])
    if rc != 0:
        print(f"benchmarks failed (pytest exit code {rc}); no report written", file=sys.stderr)
        return int(rc)
    report.main([str(json_path), "--md", str(md_path), "--chart", str(chart_path), "--headline"])
    print(f"\nsaved {json_path}, {md_path} and {chart_path}")
    return 0


def default_stem(torch, device: str) -> str:
    """``bench-torch-<v>`` on the CPU; ``gpu-<gpu>-torch-<v>`` for CUDA tensors."""
    version = torch.__version__.split("+")[0]
    if device == "cpu":
        return f"bench-torch-{version}"
    gpu = torch.cuda.get_device_name(0).split()[-1].lower()
    return f"gpu-{''.join(c for c in gpu if c.isalnum() or c in '-_.')}-torch-{version}"


if __name__ == "__main__":
    sys.exit(main())
