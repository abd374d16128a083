"""The DLPack series' own code and its test cases on this machine's torch, on every device
type ``test/test_dlpack.py`` instantiates here (CPU, and CUDA where a GPU is).

``make patch-check`` (step 8) runs the series' cases on the CPU against the torch 2.15.0
wheel; this runs the same cases wherever the machine has a GPU and whichever torch it has
(2.10 or newer: the exchange API). The series (``patches/dlpack/``) is applied with
``git apply`` to the two base files it changes (``third_party/pytorch/``:
``torch/csrc/Module.cpp`` and ``test/test_dlpack.py``), its functions are cut out of the
patched ``Module.cpp`` and compiled against the installed torch
(``patch_check.build_patched_dlpack``), and every case the series adds
(``make_patch.DLPACK_TESTS``) is run by pytest with ``dlpack_conftest.py`` beside it.

A torch without the read-only exchange table (pytorch/pytorch#188554, before 2.14) has
the writable table only: there the cases' ``_exchange_apis()`` helper is narrowed to that
table (``WRITABLE_ONLY``: the only edits this makes to the cases; each is printed), so
those runs cover the writable table's two functions and ``to_dlpack`` / ``__dlpack__``,
not the read-only table's.

Usage, from the repository root: ``python -P proposal/tools/dlpack_device_check.py``
(``--keep DIR`` keeps the tree, the library and pytest's output). Exit status 0 when every
case passed on every device type, 1 otherwise.
"""

from __future__ import annotations

import argparse
import collections
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_patch  # noqa: E402
import patch_check  # noqa: E402

BASE = HERE.parent / "third_party" / "pytorch"
FILES = (make_patch.MODULE_CPP, make_patch.TEST_DLPACK)
#: the cases' code that reads both tables, and what it becomes without the read-only one:
#: the helper, and the managed case's read-only flag per table
WRITABLE_ONLY = {
    "return (torch._C._dlpack_exchange_api(), torch._C._const_dlpack_exchange_api())":
        "return (torch._C._dlpack_exchange_api(),)",
    "zip(_exchange_apis(), (0, 1), strict=True)": "zip(_exchange_apis(), (0,), strict=True)",
}


def patched_tree(work: pathlib.Path) -> pathlib.Path:
    """A git tree of the two base files with every DLPack patch applied, in order."""
    tree = work / "tree"
    for rel in FILES:
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(BASE / rel, tree / rel)
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    for patch in patch_check.DLPACK_PATCHES:
        subprocess.run(["git", "-C", str(tree), "apply", *[f"--include={f}" for f in FILES],
                        str(patch)], check=True)
        print(f"applied {patch.parent.name}/{patch.name}")
    return tree


def narrow_to_writable(tree: pathlib.Path) -> bool:
    """Where torch has no read-only exchange table, the cases' helper returns the writable
    one alone; True when the edit was made."""
    import torch

    if hasattr(torch._C, "_const_dlpack_exchange_api"):
        return False
    test = tree / make_patch.TEST_DLPACK
    text = test.read_text()
    for both, writable in WRITABLE_ONLY.items():
        if both not in text:
            raise SystemExit(f"{make_patch.TEST_DLPACK}: no `{both}` to narrow")
        text = text.replace(both, writable)
        print(f"torch {torch.__version__} has no read-only exchange table: the cases' "
              f"`{both}` narrowed to `{writable}`")
    test.write_text(text)
    return True


def run_cases(tree: pathlib.Path, lib: pathlib.Path, cases: list[str], log: pathlib.Path) -> dict:
    """``{device type: {case: outcome}}`` of pytest's run of ``cases``."""
    test_dir = (tree / make_patch.TEST_DLPACK).parent
    shutil.copyfile(HERE / "dlpack_conftest.py", test_dir / "conftest.py")
    done = subprocess.run([sys.executable, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-rA", pathlib.Path(make_patch.TEST_DLPACK).name,
                           "-k", " or ".join(cases)],
                          cwd=test_dir, env={**os.environ, "PATCHED_DLPACK_LIB": str(lib)},
                          capture_output=True, text=True)
    log.write_text(done.stdout + done.stderr)
    got = collections.defaultdict(dict)
    for outcome, case, device in re.findall(
            r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) \S+::\w+::(\w+?)_(cpu|cuda)\b",
            done.stdout, flags=re.M):
        got[device][case] = outcome
    return got


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=pathlib.Path,
                        help="keep the patched tree, the library and pytest's output here")
    args = parser.parse_args(argv)
    import torch

    work = args.keep or pathlib.Path(tempfile.mkdtemp(prefix="dlpack-device-"))
    work.mkdir(parents=True, exist_ok=True)
    cuda = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    print(f"torch {torch.__version__}, Python {sys.version.split()[0]}, CUDA device: {cuda}")
    tree = patched_tree(work)
    narrow_to_writable(tree)
    lib = patch_check.build_patched_dlpack(tree, work, "dlpack/0001-0004")
    cases = [c for p in sorted(make_patch.DLPACK_TESTS) for c in make_patch.DLPACK_TESTS[p]]
    got = run_cases(tree, lib, cases, work / "pytest.log")
    expected = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    ok = True
    for device in expected:
        for case in cases:
            outcome = got.get(device, {}).get(case, "not run")
            ok &= outcome == "PASSED"
            print(f"{device:4} {case}: {outcome}")
    print(("every case passed on " if ok else "NOT every case passed on ") + ", ".join(expected)
          + ("" if ok else f" (pytest's output: {work / 'pytest.log'})"))
    if not args.keep and ok:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
