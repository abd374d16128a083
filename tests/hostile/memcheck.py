"""Run a bridge workload under valgrind memcheck; count the errors in our code.

``python tests/hostile/memcheck.py --python .venv/torch-2.15.0/bin/python`` runs
``--workload`` (a few thousand views on every path, plus every hostile case of the
catalogue through every path) under ``valgrind --tool=memcheck`` with
``PYTHONMALLOC=malloc`` (so valgrind sees every allocation), writes valgrind's XML, and
reports each error kind. An error is *ours* when a frame of its stack lies in
``bridge/_bridge*.so`` or ``shim_ext/_borrow*.so`` / ``_entry*.so``; CPython's and torch's own noise is
counted apart, not hidden (``valgrind.supp`` silences only the known CPython and
libgomp patterns). Exits 1 if any error other than a leak record is ours. Leak records
are reported, not judged: at exit CPython never frees module-level objects (valgrind
lists about 110 "possibly lost" blocks from our modules' init code, tens of thousands
from CPython's and torch's), and per-call leaks are ``tests/bridge/test_lifetime.py``'s
job (use counts, refcounts and RSS over 1,000,000 views).
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
OURS = ("_bridge", "_borrow", "_entry")
WORKLOAD = f"""
import sys, warnings
warnings.simplefilter("ignore")
import torch, bridge
from helpers.expect import expected_paths, torch_answer, view_fields
from hostile import cases
paths = [p for p, ok in expected_paths().items() if ok]
t = torch.randn(4, 6)[1:, ::2]
for p in paths:
    view = getattr(bridge, "view_" + p)
    for _ in range(2000):
        assert view_fields(view(t)) == torch_answer(t)
    bridge._bridge._native_loop(torch.zeros([2] * 9), p, 1000)
def consume(obj, truth):
    for p in paths:
        try:
            v = getattr(bridge, "view_" + p)(obj)
            v.shape, v.strides, repr(v)
        except Exception:  # any clean Python error; memcheck judges the memory
            pass
for case in cases.CASES:
    try:
        case.run(torch, consume)
    except cases.CaseUnavailable:
        pass
print("workload done", torch.__version__, paths)
"""


def ours(error):
    """Whether a valgrind <error> has a frame in one of our extension modules."""
    return any(any(tag in (obj.text or "") for tag in OURS)
               for obj in error.iter("obj"))


def main(argv=None):
    """Run the workload under memcheck and print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="the torch environment's python")
    parser.add_argument("--xml", default=None, help="keep valgrind's XML here")
    args = parser.parse_args(argv)
    xml = args.xml or tempfile.mktemp(suffix=".xml", prefix="memcheck-")
    cmd = ["valgrind", "--tool=memcheck", "--error-limit=no", "--num-callers=40",
           f"--suppressions={os.path.join(HERE, 'valgrind.supp')}",
           "--xml=yes", f"--xml-file={xml}",
           args.python, "-P", "-c", WORKLOAD]
    # tests/ on the child's path: the workload imports helpers and hostile.
    env = dict(os.environ, PYTHONMALLOC="malloc", PYTHONPATH=os.pathsep.join(
        p for p in (os.path.dirname(HERE), os.environ.get("PYTHONPATH")) if p))
    print("running:", " ".join(cmd[:-1]), "<workload>", flush=True)
    proc = subprocess.run(cmd, env=env, text=True, capture_output=True)
    print(proc.stdout.strip())
    if proc.returncode != 0 or "workload done" not in proc.stdout:
        print(proc.stderr[-3000:])
        print(f"memcheck: the workload failed (exit {proc.returncode})")
        return 1
    root = ET.parse(xml).getroot()
    kinds_ours, kinds_other = collections.Counter(), collections.Counter()
    examples = []
    for error in root.iter("error"):
        kind = error.findtext("kind")
        if ours(error):
            kinds_ours[kind] += 1
            if not kind.startswith("Leak_"):
                examples.append(ET.tostring(error, encoding="unicode")[:2000])
        else:
            kinds_other[kind] += 1
    invalid = sum(n for k, n in kinds_ours.items() if k.startswith("Invalid"))
    judged = {k: n for k, n in kinds_ours.items() if not k.startswith("Leak_")}
    print(f"memcheck: {sum(judged.values())} errors in our modules "
          f"({invalid} invalid reads/writes): {judged or 'none'}")
    print(f"memcheck: at-exit leak records with a frame in our modules (not judged): "
          f"{ {k: n for k, n in kinds_ours.items() if k.startswith('Leak_')} }")
    print(f"memcheck: {sum(kinds_other.values())} errors elsewhere (CPython, torch): "
          f"{dict(kinds_other) or 'none'}")
    for example in examples[:3]:
        print(example)
    if not args.xml:
        os.unlink(xml)
    return 1 if judged else 0


if __name__ == "__main__":
    sys.exit(main())
