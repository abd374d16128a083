"""The covered set of the product under the suite, and its check against a baseline.

``make coverage`` runs the whole suite (tests/, tests/bench/ included) under coverage.py
(the Python of ``bridge`` and ``shim_ext``, branches on, child processes too) in an
environment whose bridge, shim_ext and consumer examples are compiled with ``--coverage``,
then this module turns coverage.py's JSON and gcovr's JSON (the C headers of
``bridge/`` and ``shim_ext/include/``, as compiled into the bridge and the consumer
examples) into one summary: per file, the covered lines and the branch outcomes taken
(Python: ``[from, to]`` arcs; C: ``[line, branch index]`` of gcov). Paths are relative to
a checkout (``bridge/...``, ``shim_ext/...``), so two checkouts' summaries compare.

With ``--baseline``, every covered line and branch outcome of the baseline must be
covered again: the missing ones are printed and the exit status is 1. That is how a
smaller suite shows it reaches what a larger one reached.

    python -P -m covered --python cov.json --c gcovr.json --out summary.json \\
        [--baseline tests/covered/BASELINE.json] [--label TEXT]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys



def product_path(path: str) -> str | None:
    """``.../site-packages/bridge/_resolve.py`` -> ``bridge/_resolve.py`` (the last
    ``bridge/`` or ``shim_ext/`` folder of the path); None for a file of neither."""
    m = None
    for m in re.finditer(r"(?:^|/)(?=(?:bridge|shim_ext)/)", path):
        pass
    if m is None:
        return None
    return path[m.end():]


def python_set(report: dict) -> dict:
    """coverage.py's ``coverage json`` report -> ``{file: {"lines", "branches"}}``."""
    out = {}
    for name, data in report["files"].items():
        rel = product_path(name)
        if rel is None:
            continue
        out[rel] = {"lines": sorted(data["executed_lines"]),
                    "branches": sorted(data.get("executed_branches", []))}
    return out


def c_set(report: dict) -> dict:
    """gcovr's ``--json`` report -> ``{header: {"lines", "branches"}}``, headers of
    ``bridge/`` and ``shim_ext/include/`` only, counts merged over the objects."""
    out: dict[str, dict[str, set]] = {}
    for f in report["files"]:
        rel = product_path(f["file"])
        if rel is None or not rel.endswith(".h"):
            continue
        entry = out.setdefault(rel, {"lines": set(), "branches": set()})
        for line in f["lines"]:
            n = line["line_number"]
            if line["count"] > 0:
                entry["lines"].add(n)
            for i, b in enumerate(line.get("branches", [])):
                if b["count"] > 0:
                    entry["branches"].add((n, i))
    return {k: {"lines": sorted(v["lines"]), "branches": sorted(map(list, v["branches"]))}
            for k, v in sorted(out.items())}


def totals(summary: dict) -> dict:
    """``{"python"|"c": {"files", "lines", "branches"}}``: counts of covered items."""
    return {part: {"files": len(files),
                   "lines": sum(len(v["lines"]) for v in files.values()),
                   "branches": sum(len(v["branches"]) for v in files.values())}
            for part, files in ((p, summary[p]) for p in ("python", "c"))}


def missing(baseline: dict, now: dict) -> list[str]:
    """Each line or branch outcome covered in ``baseline`` and not in ``now``, as text."""
    lost = []
    for part in ("python", "c"):
        for name, was in baseline[part].items():
            got = now[part].get(name, {"lines": [], "branches": []})
            for n in sorted(set(was["lines"]) - set(got["lines"])):
                lost.append(f"{part} {name}:{n} line")
            have = {tuple(b) for b in got["branches"]}
            for b in was["branches"]:
                if tuple(b) not in have:
                    lost.append(f"{part} {name}:{b[0]} branch {b[1]}")
    return lost


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m covered", description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", type=pathlib.Path, required=True,
                    help="coverage.py's JSON report (coverage json)")
    ap.add_argument("--c", type=pathlib.Path, required=True, help="gcovr's JSON report (--json)")
    ap.add_argument("--out", type=pathlib.Path, required=True, help="the summary to write")
    ap.add_argument("--label", default="", help="what was run, kept in the summary")
    ap.add_argument("--baseline", type=pathlib.Path,
                    help="a summary whose covered set must be contained in this one")
    args = ap.parse_args(argv)
    summary = {"label": args.label,
               "python": python_set(json.loads(args.python.read_text())),
               "c": c_set(json.loads(args.c.read_text()))}
    summary["totals"] = totals(summary)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=1) + "\n")
    for part, t in summary["totals"].items():
        print(f"{part}: {t['files']} files, {t['lines']} lines and {t['branches']} branch "
              f"outcomes covered")
    print(f"wrote {args.out}")
    if args.baseline is None:
        return 0
    base = json.loads(args.baseline.read_text())
    lost = missing(base, summary)
    for item in lost:
        print("not covered now:", item)
    print(f"against {args.baseline} ({base.get('label', '')}): "
          + (f"{len(lost)} covered items lost" if lost else "every covered item covered again"))
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
