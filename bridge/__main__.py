"""Command line: ``python -m bridge info [--json]``."""

from __future__ import annotations

import argparse
import json
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bridge",
        description="Diagnostics of the tensor bridge: which paths run on this torch, and why.")
    sub = parser.add_subparsers(dest="command")
    info = sub.add_parser("info", help="torch, Python, compiler, each path's availability "
                                       "and symbol origin, the fallback's offset check")
    info.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = parser.parse_args(argv)
    if args.command is None:  # `python -m bridge` alone: the report
        args = parser.parse_args(["info", *(argv or [])])

    from bridge import _info

    report = _info.report()
    print(json.dumps(report, indent=2) if args.json else _info.format_report(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
