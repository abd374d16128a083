"""The covered set of the product under the suite, and its check against a baseline.

``make coverage`` runs the whole suite (tests/, tests/bench/ included) under coverage.py
(the Python of ``bridge`` and ``shim_ext``, branches on, child processes too) in an
environment whose bridge and consumer examples are compiled with ``--coverage``, then
this module turns coverage.py's JSON and gcov's (``gcov --json-format`` of each ``.gcda``
found: the C headers of ``bridge/`` and ``shim_ext/include/``, as compiled into the
bridge and the consumer examples) into one summary: per file, the covered lines and the
branch outcomes taken (Python: ``[from, to]`` arcs; C: ``[translation unit, line, branch
index]``: gcc numbers a line's branches per unit, so one unit's are not another's).
Paths are relative to a checkout (``bridge/...``, ``shim_ext/...``), so two checkouts'
summaries compare.

With ``--baseline``, every covered line and branch outcome of the baseline must be
covered again: the missing ones are printed and the exit status is 1. That is how a
smaller suite shows it reaches what a larger one reached.

    python -P -m covered --python cov.json --gcov-dir DIR [DIR ...] --out summary.json \\
        [--baseline tests/covered/BASELINE.json] [--label TEXT]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import subprocess
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


def gcov_reports(folders) -> list[dict]:
    """``gcov --json-format --stdout --branch-probabilities`` of every ``.gcda`` under
    ``folders`` (gcov reads the notes beside each; the sources themselves are not
    needed)."""
    reports = []
    for gcda in sorted(p for folder in folders for p in pathlib.Path(folder).rglob("*.gcda")):
        done = subprocess.run(["gcov", "--json-format", "--stdout", "--branch-probabilities",
                               str(gcda)], capture_output=True, text=True, check=True)
        reports += [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return reports


def c_set(reports: list[dict]) -> dict:
    """gcov's JSON reports -> ``{header: {"lines", "branches"}}`` for the headers of
    ``bridge/`` and ``shim_ext/include/``; a branch is ``[unit, line, index]``, its unit
    the unit's main source (``bridge/_bridge.c``, ``shim_ext/examples/consumer.c``)."""
    out: dict[str, dict[str, set]] = {}
    for report in reports:
        units = [product_path(f["file"]) for f in report["files"]
                 if f["file"].endswith((".c", ".cc", ".cpp"))]
        units = [u for u in units if u is not None]
        unit = units[0] if len(units) == 1 else pathlib.Path(report["data_file"]).name
        for f in report["files"]:
            rel = product_path(f["file"])
            if rel is None or not rel.endswith(".h"):
                continue
            entry = out.setdefault(rel, {"lines": set(), "branches": set()})
            for line in f["lines"]:
                n = line["line_number"]
                if line["count"] > 0:
                    entry["lines"].add(n)
                for i, b in enumerate(line["branches"]):
                    if b["count"] > 0:
                        entry["branches"].add((unit, n, i))
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
                    lost.append(f"{part} {name}: branch {b}")
    return lost


def dumps(summary: dict) -> str:
    """The summary as JSON with one line per file (a diff shows which file changed)."""
    parts = []
    for part in ("python", "c"):
        rows = ",\n".join(f"  {json.dumps(name)}: {json.dumps(v, separators=(',', ':'))}"
                          for name, v in summary[part].items())
        parts.append(f'"{part}": {{\n{rows}\n}}')
    head = ", ".join(f"{json.dumps(k)}: {json.dumps(summary[k])}" for k in ("label", "totals"))
    return "{" + head + ",\n" + ",\n".join(parts) + "}\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m covered", description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", type=pathlib.Path, required=True,
                    help="coverage.py's JSON report (coverage json)")
    ap.add_argument("--gcov-dir", type=pathlib.Path, nargs="+", required=True,
                    help="folders searched for .gcda files (the builds made with --coverage)")
    ap.add_argument("--out", type=pathlib.Path, required=True, help="the summary to write")
    ap.add_argument("--label", default="", help="what was run, kept in the summary")
    ap.add_argument("--baseline", type=pathlib.Path,
                    help="a summary whose covered set must be contained in this one")
    args = ap.parse_args(argv)
    summary = {"label": args.label,
               "python": python_set(json.loads(args.python.read_text())),
               "c": c_set(gcov_reports(args.gcov_dir))}
    summary["totals"] = totals(summary)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(dumps(summary))
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
