"""`make patch-check`: the patches as a PyTorch maintainer would meet them, built for real.

Eight steps, each printed as it runs (the first failure ends the run with exit
status 1): assemble the base and `git am` the series in landing order, regenerate
the patches byte for byte, compile, `nm`, run the patches' own tests, upstream's
stable-shim linters, PyTorch's linters on what the series adds, and the DLPack
series. What each step does and proves: proposal/README.md, "What `make
patch-check` does".

Usage: ``python -P proposal/tools/patch_check.py [--work DIR] [--keep]`` with the
interpreter of the torch 2.15.0 environment (pyproject's ``patch`` extra
installed: clang-format, flake8, ruff, expecttest, pytest; and clang-tidy
17.0.1; the Makefile's ``patch-check`` target installs both).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import filecmp
import hashlib
import importlib.util
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile

HERE = pathlib.Path(__file__).resolve().parent  # proposal/tools/
PROPOSAL = HERE.parent
ROOT = PROPOSAL.parent
sys.path.insert(0, str(HERE))
# The checkout after site-packages, for the fixes (proposal.fixes), as the environment's
# .pth puts it when run from the checkout's root: from anywhere else too.
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

import make_patch  # noqa: E402
import upstream_base  # noqa: E402
from proposal.fixes import patched_interpreter  # noqa: E402

PATCHES = sorted((PROPOSAL / "patches").glob("000*.patch"))
# Patches built on a touched file as an open pull request's branch has it (BASE.toml's
# [[pr_variant]] rows; make_patch.py writes them into patches/<name>/): 0001 on
# #189128's PyInterpreter.cpp, beside 0001 on main's.
PR_VARIANTS = {row["name"]: row for row in upstream_base.load_manifest().get("pr_variant", [])}


def pr_variant_patches(name: str) -> list[pathlib.Path]:
    return sorted((PROPOSAL / "patches" / name).glob("000*.patch"))
LIBTORCH_SOURCES = ["torch/csrc/shim_common.cpp", "torch/csrc/PyObjectConversion.cpp",
                    "torch/csrc/PyObjectConversionPythonImpl.cpp"]
STABLE_HEADERS = ["torch/csrc/stable/pyobject.h", "torch/csrc/stable/tensor.h"]
PY_INTERPRETER = "torch/csrc/PyInterpreter.cpp"  # patch 0001
TENSOR_IMPL_H = make_patch.TENSOR_IMPL_H  # dlpack/0004's accessor, which 0003 calls
# The C functions the series adds to shim_common.cpp, with the patch that adds each.
NEW_SYMBOLS = {"torch_is_conj": "0002", "torch_is_neg": "0002",
               "torch_tensor_borrow_from_pyobject": "0003"}
# The patches that must apply alone on the base (the borrow applies on conj/neg).
ALONE = ["0001", "0002"]
# The prototype's batched read (bench/native/batched_read.cpp, a measured route): no patch defines it.
WITHDRAWN_SYMBOLS = ["torch_tensor_get_metadata", "torch_tensor_borrow_metadata_from_pyobject"]
INTEROP_SRC = "test/cpp_extensions/libtorch_agn_2_16_extension/csrc/pyobject_interop_module.cpp"
PATCH_TEST = "test/cpp_extensions/test_libtorch_agnostic_pyobject_borrow.py"
TARGET_2_16 = "0x0210000000000000"
HEADERONLY_VERSION_2_16 = """\
#pragma once
// What main's build generates from version.txt (2.16.0a0) with
// tools/setup_helpers/gen_version_header.py; written by proposal/tools/patch_check.py.
#define TORCH_VERSION_MAJOR 2
#define TORCH_VERSION_MINOR 16
#define TORCH_VERSION_PATCH 0
#define TORCH_VERSION_ABI_TAG 0
#define TORCH_VERSION "2.16.0"
#define TORCH_ABI_VERSION ( \\
  ((0ULL + TORCH_VERSION_MAJOR) << 56) | \\
  ((0ULL + TORCH_VERSION_MINOR) << 48) | \\
  ((0ULL + TORCH_VERSION_PATCH) << 40) | \\
  ((0ULL + TORCH_VERSION_ABI_TAG) << 0))
"""


class CheckFailed(Exception):
    """One step's failure, with what to look at."""


def step(title: str) -> None:
    print(f"\n=== {title}", flush=True)


# Commands that need nothing from each other (compiles, clang-tidy runs) are started
# ahead, one per core; run() of the same command then takes the started one's result, so
# the steps still print, and fail, in their order.
_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1)
_AHEAD: dict[tuple, concurrent.futures.Future] = {}


def _key(cmd, cwd, env) -> tuple:
    return (tuple(map(str, cmd)), str(cwd), None if env is None else tuple(sorted(env.items())))


def start(cmd: list[str], cwd: pathlib.Path | None = None, env: dict | None = None) -> None:
    """Start ``cmd`` now, in the pool (unless the same command is started and not taken
    yet); a later ``run`` of the same command (same ``cwd`` and ``env``) waits for it
    instead of running it again."""
    key = _key(cmd, cwd, env)
    if key not in _AHEAD:
        _AHEAD[key] = _POOL.submit(subprocess.run, cmd, cwd=cwd, env=env,
                                   capture_output=True, text=True)


def run(cmd: list[str], cwd: pathlib.Path | None = None, env: dict | None = None,
        check: bool = True) -> subprocess.CompletedProcess:
    """Run a command (or take the result of the same one ``start``ed earlier), capturing
    its output; raise CheckFailed with that output on failure."""
    ahead = _AHEAD.pop(_key(cmd, cwd, env), None)
    done = (ahead.result() if ahead is not None else
            subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True))
    if check and done.returncode != 0:
        raise CheckFailed(f"{' '.join(cmd[:3])} ... exited {done.returncode}\n"
                          f"{done.stdout[-4000:]}{done.stderr[-4000:]}")
    return done


def git(repo: pathlib.Path, *args: str) -> str:
    return run(["git", "-C", str(repo), *args], env={**os.environ, **make_patch.GIT_ENV}).stdout


def git_am(tree: pathlib.Path, patch: pathlib.Path) -> subprocess.CompletedProcess:
    """``git am`` one patch onto ``tree`` with the series' identity and dates; the result
    is returned, not checked (a patch that does not apply is a finding)."""
    return run(["git", "-C", str(tree), "am", "-q", "--keep-non-patch",
                "--whitespace=error-all", str(patch)],
               env={**os.environ, **make_patch.GIT_ENV}, check=False)


def apply_patches(work: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """Base repository and a clone of it with the patches applied by git am."""
    base = work / "base"
    upstream_base.assemble(base)
    git(base, "init", "-q", "-b", "main")
    git(base, "add", "-A")
    git(base, "commit", "-q", "-m", "base")
    tree = work / "patched"
    run(["git", "clone", "-q", str(base), str(tree)])
    # 0003 calls TensorImpl::has_custom_metadata(), which the DLPack series adds and which
    # lands before it: the tree's header first becomes what that series makes of it.
    (accessor,) = [p for p in DLPACK_PATCHES if f"+++ b/{TENSOR_IMPL_H}\n" in p.read_text()]
    done = run(["git", "-C", str(tree), "apply", f"--include={TENSOR_IMPL_H}", str(accessor)],
               check=False)
    if done.returncode != 0:
        raise CheckFailed(f"dlpack/{accessor.name}: its {TENSOR_IMPL_H} does not apply: "
                          f"{done.stderr}")
    git(tree, "commit", "-q", "-am", f"{TENSOR_IMPL_H} as dlpack/{accessor.name[:4]} leaves it")
    print(f"applied dlpack/{accessor.name}'s {TENSOR_IMPL_H} (the accessor 0003 calls)")
    for patch in PATCHES:
        git(tree, "am", "-q", "--keep-non-patch", "--whitespace=error-all", str(patch))
        print(f"applied {patch.name}")
    return base, tree


def pr_variant_base(name: str, work: pathlib.Path) -> pathlib.Path:
    """``work/base-<name>``: the base with the PR variant's file as stored, committed."""
    row, data = upstream_base.pr_variant_bytes(name)
    base = work / f"base-{name}"
    upstream_base.assemble(base)
    (base / row["path"]).write_bytes(data)
    git(base, "init", "-q", "-b", "main")
    git(base, "add", "-A")
    git(base, "commit", "-q", "-m", f"base with {row['path']} as {row['pr']}'s branch has it")
    return base


def added_lines(patch: pathlib.Path, rel: str) -> list[str]:
    """The lines ``patch`` adds to ``rel``, in order."""
    diff = patch.read_text().split(f"+++ b/{rel}\n", 1)[1].split("\ndiff --git", 1)[0]
    return [line[1:] for line in diff.splitlines() if line.startswith("+")]


def apply_pr_variants(work: pathlib.Path) -> dict[str, pathlib.Path]:
    """Each PR variant's patches by git am on the base with that variant's file; says
    whether main's patch applies there and the variant's on main (each is meant to apply
    only to its own file), and checks that both add the same lines to it. Returns
    ``{name: patched tree}``."""
    trees = {}
    for name, row in PR_VARIANTS.items():
        base = pr_variant_base(name, work)
        tree = work / f"patched-{name}"
        run(["git", "clone", "-q", str(base), str(tree)])
        variant_patches = pr_variant_patches(name)
        if [p.name[:4] for p in variant_patches] != row["patches"]:
            raise CheckFailed(f"patches/{name}/ holds {[p.name for p in variant_patches]}, "
                              f"BASE.toml names {row['patches']}")
        for patch in variant_patches:
            if git_am(tree, patch).returncode != 0:
                raise CheckFailed(f"{name}/{patch.name} does not apply to {row['path']} as "
                                  f"{row['pr']}'s branch has it ({row['commit'][:8]})")
            main_patch = next(p for p in PATCHES if p.name[:4] == patch.name[:4])
            same = added_lines(patch, row["path"]) == added_lines(main_patch, row["path"])
            if not same:
                raise CheckFailed(f"{name}/{patch.name} and {main_patch.name} add different "
                                  f"lines to {row['path']}")
            cross = work / f"cross-{name}-{patch.name[:4]}"
            run(["git", "clone", "-q", str(base), str(cross)])
            main_on_variant = git_am(cross, main_patch).returncode == 0
            cross_main = work / f"cross-main-{patch.name[:4]}"
            run(["git", "clone", "-q", str(work / "base"), str(cross_main)])
            variant_on_main = git_am(cross_main, patch).returncode == 0
            print(f"applied {name}/{patch.name} on {row['path']} as {row['pr']}'s branch has it "
                  f"(pytorch/pytorch {row['commit'][:8]}, {row['holds']}); it adds to that file "
                  f"the same lines as {main_patch.name[:4]} adds to main's; "
                  f"{main_patch.name[:4]} (main's) applies there: {main_on_variant}; "
                  f"{name}/{patch.name[:4]} applies to main's: {variant_on_main}")
        trees[name] = tree
    return trees


def version_lint_counts(tree: pathlib.Path) -> tuple[int, bool]:
    """At the tree's HEAD: the version linter's messages on shim.h (it judges the lines
    HEAD~1..HEAD adds), and whether the usage linter writes the registry as it is."""
    lint_out = run([sys.executable, "tools/linter/adapters/stable_shim_version_linter.py",
                    "torch/csrc/stable/c/shim.h"], cwd=tree).stdout
    messages = sum(1 for line in lint_out.splitlines() if line.strip())
    written = [tree / make_patch.VERSIONS_TXT, tree / make_patch.EXPORTS_SYMS]
    committed = [path.read_bytes() for path in written]
    make_patch.run_usage_linter_writer(tree)
    same = [path.read_bytes() for path in written] == committed
    for path, data in zip(written, committed):
        path.write_bytes(data)
    return messages, same


def check_order(base: pathlib.Path, work: pathlib.Path) -> None:
    """The landing order: each patch on the base plus the ones before it, and the
    interpreter fix and conj/neg each alone on the base; the version linters after
    every step. Also says whether the borrow applies alone (it is not meant to)."""
    def stack(name: str, patches: list[pathlib.Path]) -> pathlib.Path | None:
        tree = work / f"order-{name}"
        run(["git", "clone", "-q", str(base), str(tree)])
        for patch in patches:
            if git_am(tree, patch).returncode != 0:
                return None
            messages, same = version_lint_counts(tree)
            if messages or not same:
                raise CheckFailed(f"{name}: after {patch.name[:4]} the version linter reports "
                                  f"{messages} messages; registry as the usage linter writes "
                                  f"it: {same}")
        return tree

    by_number = {p.name[:4]: p for p in PATCHES}
    for i, patch in enumerate(PATCHES):
        names = "+".join(p.name[:4] for p in PATCHES[:i + 1])
        if stack(names, PATCHES[:i + 1]) is None:
            raise CheckFailed(f"{patch.name} does not apply on the base plus {names}")
        print(f"base + {names}: git am applies; version linter 0 messages and the registry "
              "as the usage linter writes it, after each patch")
    for number in ALONE:
        if stack(f"{number}-alone", [by_number[number]]) is None:
            raise CheckFailed(f"{by_number[number].name} does not apply alone on the base")
        print(f"base + {number} alone: git am applies; version linter 0 messages, registry "
              "as the usage linter writes it")
    rest = [n for n in by_number if n not in ALONE]
    for number in rest:
        alone = stack(f"{number}-alone", [by_number[number]]) is not None
        print(f"base + {number} alone: " + ("applies (not required)" if alone else
              "does not apply, as expected: its shim.h and registry lines follow 0002's"))


def check_reproducible(base: pathlib.Path, work: pathlib.Path) -> None:
    out = work / "regenerated"
    run([sys.executable, str(HERE / "make_patch.py"), "--base", str(base), "--out", str(out)])
    names = sorted(p.name for p in out.glob("000*.patch"))
    if names != [p.name for p in PATCHES]:
        raise CheckFailed(f"make_patch.py writes {names}, proposal/patches/ holds "
                          f"{[p.name for p in PATCHES]}")
    for patch in PATCHES:
        again = out / patch.name
        if not again.exists() or not filecmp.cmp(patch, again, shallow=False):
            raise CheckFailed(f"make_patch.py does not reproduce {patch.name} byte for byte "
                              f"(diff {patch} {again})")
        print(f"{patch.name}: regenerated byte for byte")
    for name in PR_VARIANTS:
        for patch in pr_variant_patches(name):
            again = out / name / patch.name
            if not again.exists() or not filecmp.cmp(patch, again, shallow=False):
                raise CheckFailed(f"make_patch.py does not reproduce {name}/{patch.name} byte "
                                  f"for byte (diff {patch} {again})")
            print(f"{name}/{patch.name}: regenerated byte for byte")


def check_variants(work: pathlib.Path) -> None:
    """The series on each stored variant of main's 2.16 block (BASE.toml's ``variant``
    rows): make_patch.py must find every anchor once, git am must apply the result, and
    the version linter must pass at each patch. Also says whether the committed patches
    apply there as they are."""
    for row in upstream_base.load_manifest().get("variant", []):
        commit = row["commit"]
        data = (upstream_base.UPSTREAM / "variants" / commit / row["path"]).read_bytes()
        if hashlib.sha256(data).hexdigest() != row["sha256"]:
            raise CheckFailed(f"variant {row['path']} at {commit[:9]}: sha256 differs from BASE.toml")
        base = work / f"variant-{commit[:9]}"
        upstream_base.assemble(base)
        (base / row["path"]).write_bytes(data)
        # The registry as the usage linter writes it for that header, so the variant
        # base is one coherent tree.
        make_patch.run_usage_linter_writer(base)
        out = work / f"variant-{commit[:9]}-patches"
        done = run([sys.executable, str(HERE / "make_patch.py"), "--base", str(base),
                    "--out", str(out)], check=False)
        if done.returncode != 0:
            raise CheckFailed(f"make_patch.py cannot build the series on {row['path']} at "
                              f"{commit[:9]}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        git(base, "init", "-q", "-b", "main")
        git(base, "add", "-A")
        git(base, "commit", "-q", "-m", f"variant {commit[:9]}")
        committed = work / f"variant-{commit[:9]}-committed"
        run(["git", "clone", "-q", str(base), str(committed)])
        refused = next((patch.name[:4] for patch in PATCHES if run(
            ["git", "-C", str(committed), "am", "-q", "--keep-non-patch", str(patch)],
            env={**os.environ, **make_patch.GIT_ENV}, check=False).returncode != 0), None)
        tree = work / f"variant-{commit[:9]}-patched"
        run(["git", "clone", "-q", str(base), str(tree)])
        counts = []
        for patch in sorted(out.glob("000*.patch")):
            git(tree, "am", "-q", "--keep-non-patch", "--whitespace=error-all", str(patch))
            lint_out = run([sys.executable, "tools/linter/adapters/stable_shim_version_linter.py",
                            "torch/csrc/stable/c/shim.h"], cwd=tree).stdout
            counts.append(sum(1 for line in lint_out.splitlines() if line.strip()))
        if any(counts):
            raise CheckFailed(f"on the variant at {commit[:9]} the version linter reports "
                              f"{counts} messages after each patch")
        where = ""
        if "last_2_16" in row:
            shim = (tree / row["path"]).read_text()
            block = shim[shim.index("#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_16_0"):]
            if block.index("torch_tensor_borrow_from_pyobject(") < block.index(row["last_2_16"]):
                raise CheckFailed(f"on the variant at {commit[:9]} the declarations are not "
                                  "at the end of the 2.16 block")
            where = f"; the new declarations follow {row['last_2_16']}, the end of that block"
        applies = ("the committed series applies there as is" if refused is None else
                   f"the committed {refused} does not apply there as is (its context is "
                   f"{make_patch_base()}): regenerate with make_patch.py")
        print(f"variant {row['path']} at {commit[:9]} ({row['holds']}): make_patch.py finds "
              f"every anchor, git am applies its series, version linter 0 messages at each "
              f"patch{where}; {applies}")


def make_patch_base() -> str:
    return "main " + upstream_base.load_manifest()["main_commit"][:9]


def compile_flags(tree: pathlib.Path, overlay: pathlib.Path) -> list[str]:
    import torch
    import torch.utils.cpp_extension as cpp_extension

    include = [str(tree), str(overlay), *cpp_extension.include_paths()]
    return ["-std=c++20", "-fPIC", "-O1", "-Wall", "-Wno-unused-function",
            f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
            *[f"-I{p}" for p in include], f"-I{sysconfig.get_paths()['include']}"]


# The newest stored PyObjectConversionPythonImpl.cpp (149ccf4d) predates the
# is_tensor_pyobject method of v2.15.0's interface: its class is abstract
# against main's header. That one error is the base's gap, not the patch's.
KNOWN_BASE_GAP = re.compile(r"is_tensor_pyobject\(PyObject\*\) const")


def base_gap_only(stderr: str) -> bool:
    """Whether the only compile error is ConcretePyObjectConversion missing is_tensor_pyobject."""
    errors = re.findall(r"error: (.*)", stderr)
    pure = re.findall(r"note: +.(virtual .*)'", stderr.replace("\u2019", "'"))
    return (bool(errors) and all("abstract type" in e for e in errors)
            and bool(pure) and all(KNOWN_BASE_GAP.search(p) for p in pure))


def compile_command(source: pathlib.Path, obj: pathlib.Path, flags: list[str]) -> list[str]:
    return ["g++", *flags, "-c", str(source), "-o", str(obj)]


def compile_one(source: pathlib.Path, obj: pathlib.Path, flags: list[str]) -> bool:
    """Compile ``source``; True when it stops at the base's one known gap (no object written)."""
    done = run(compile_command(source, obj, flags), check=False)
    if done.returncode != 0 and base_gap_only(done.stderr):
        print(f"compiled {source.name} up to one error of the base, not the patch: the stored "
              "copy (149ccf4d) lacks is_tensor_pyobject, which v2.15.0's interface declares")
        return True
    if done.returncode != 0:
        missing = sorted(set(re.findall(r"fatal error: (\S+): No such file", done.stderr)))
        if missing:
            raise CheckFailed(f"{source.name}: internal headers missing from the wheel: "
                              + ", ".join(missing))
        raise CheckFailed(f"{source.name} does not compile:\n{done.stderr[-6000:]}")
    print(f"compiled {source.name}")
    return False


# What the test library (step 5) needs and the stored PyObjectConversionPythonImpl.cpp
# lacks: main's is_tensor_pyobject (2.15), a pure virtual method of v2.15.0's
# interface, without which the class is abstract (no patch calls it: the borrow makes
# its own attached-thread and type checks). No stored copy of the file has it, so this
# script supplies a stand-in, in neither the patch nor the base, written after
# v2.15.0's compiled method (libtorch_python.so disassembled: PyGILState_Check, then
# the null check, then THPVariableClass and PyType_IsSubtype).
PYTHON_IMPL_ANCHOR = "};\n\n// Registered once when libtorch_python is loaded"
SUPPLIED_IS_TENSOR_PYOBJECT = """
  // Supplied by proposal/tools/patch_check.py (not in the patch, not in the stored
  // base): a stand-in for main's is_tensor_pyobject, which the stored copy
  // predates, as v2.15.0's compiled method behaves.
  bool is_tensor_pyobject(PyObject* obj) const override {
    TORCH_CHECK(PyGILState_Check(), "is_tensor_pyobject requires the GIL");
    TORCH_CHECK(obj != nullptr, "is_tensor_pyobject: obj is null");
    return THPVariableClass != nullptr &&
        PyObject_TypeCheck(obj, reinterpret_cast<PyTypeObject*>(THPVariableClass));
  }
"""


def compile_python_impl_supplied(source: pathlib.Path, obj: pathlib.Path,
                                 flags: list[str]) -> None:
    """The patched PythonImpl with the supplied is_tensor_pyobject, for the test library."""
    text = source.read_text()
    if text.count(PYTHON_IMPL_ANCHOR) != 1:
        raise CheckFailed(f"{source.name}: no single end of ConcretePyObjectConversion")
    supplied = obj.parent / "supplied" / source.name
    supplied.parent.mkdir(parents=True, exist_ok=True)
    supplied.write_text(text.replace(PYTHON_IMPL_ANCHOR,
                                     SUPPLIED_IS_TENSOR_PYOBJECT + PYTHON_IMPL_ANCHOR))
    done = run(["g++", *flags, "-c", str(supplied), "-o", str(obj)], check=False)
    if done.returncode != 0:
        raise CheckFailed(f"{source.name} with the supplied is_tensor_pyobject does not "
                          f"compile:\n{done.stderr[-6000:]}")
    print(f"compiled {source.name} for the test library with one method supplied: "
          "is_tensor_pyobject, which v2.15.0's interface declares pure virtual and the stored "
          "copy (149ccf4d) predates (no patch calls it): a stand-in written after v2.15.0's "
          "compiled method (GIL check, null check, real type); everything else as patched")


# The stored PyInterpreter.cpp (02d90f32) takes torch::detail::SafeGilScopedAcquire,
# which torch/csrc/Exceptions.h defines at that commit and v2.15.0's headers lack: each
# use is one error on the declaration and one on the `if (!gil)` after it. Those are
# the base's gap, not the patch's; any other error fails the check. The file is then
# compiled with the class as 02d90f32 defines it (BASE.toml's [[excerpt]], verbatim),
# put into torch::detail ahead of the file.
SAFE_GIL_USE = "torch::detail::SafeGilScopedAcquire gil;"
SAFE_GIL_ERRORS = ("'SafeGilScopedAcquire' is not a member of 'torch::detail'",
                   "'gil' was not declared in this scope")
EXCERPT = "SafeGilScopedAcquire"


def safe_gil_header(work: pathlib.Path) -> pathlib.Path:
    """``work/safe_gil_main.h``: #189128's SafeGilScopedAcquire (the excerpt, checked against
    BASE.toml's SHA-256) inside ``torch::detail``, after the headers it needs."""
    (row,) = [r for r in upstream_base.load_manifest().get("excerpt", []) if r["name"] == EXCERPT]
    data = (PROPOSAL / "third_party" / "pytorch" / row["file"]).read_bytes()
    if hashlib.sha256(data).hexdigest() != row["sha256"]:
        raise CheckFailed(f"third_party/pytorch/{row['file']}: sha256 differs from BASE.toml's")
    header = work / "safe_gil_main.h"
    header.write_text(
        "#pragma once\n"
        f"// Written by proposal/tools/patch_check.py: torch::detail::SafeGilScopedAcquire as\n"
        f"// {row['path']} at pytorch/pytorch {row['commit']} defines it (verbatim\n"
        f"// below, from proposal/third_party/pytorch/{row['file']}).\n"
        "#include <optional>\n#include <c10/util/Logging.h>\n#include <pybind11/pybind11.h>\n"
        "#include <torch/csrc/python_headers.h>\n#include <torch/csrc/utils/pythoncapi_compat.h>\n"
        "namespace torch::detail {\n" + data.decode() + "} // namespace torch::detail\n")
    return header


def compile_errors(stderr: str) -> list[tuple[str, int, str]]:
    """(file, line, message) of every error gcc reports, quotes made ASCII."""
    plain = stderr.replace("\u2018", "'").replace("\u2019", "'")
    return [(pathlib.Path(f).name, int(line), message) for f, line, message in
            re.findall(r"^(.*?):(\d+):\d+: (?:fatal )?error: (.*)$", plain, flags=re.M)]


def safe_gil_gap(source: pathlib.Path, stderr: str) -> list[int] | None:
    """The lines of the SafeGilScopedAcquire uses, if they are exactly gcc's errors; else None."""
    uses = [n for n, line in enumerate(source.read_text().splitlines(), 1)
            if line.strip() == SAFE_GIL_USE]
    expected = sorted((source.name, n + i, message) for n in uses
                      for i, message in enumerate(SAFE_GIL_ERRORS))
    return uses if uses and sorted(compile_errors(stderr)) == expected else None


def calls_in(objdump: str, function: str) -> list[str]:
    """The symbols ``function``'s relocations name, in address order (``objdump -dr -C``)."""
    body = re.search(rf"^[0-9a-f]+ <[^>\n]*::{re.escape(function)}>:\n(.*?)(?=^[0-9a-f]+ <|\Z)",
                     objdump, flags=re.M | re.S)
    if body is None:
        raise CheckFailed(f"PyInterpreter.o: no {function} in the disassembly")
    return [re.sub(r"[-+]0x[0-9a-f]+$", "", target)
            for target in re.findall(r"\sR_\w+\s+(\S.*)$", body.group(1), flags=re.M)]


# What the attached-thread test (THPUtils_hasAttachedThreadState, inlined) calls: the
# unchecked thread-state read (pythoncapi_compat.h names _PyThreadState_UncheckedGet
# PyThreadState_GetUnchecked before 3.13).
THREAD_STATE_READ = ("PyThreadState_GetUnchecked", "_PyThreadState_UncheckedGet")


def check_fast_path(obj: pathlib.Path, label: str = "0001") -> None:
    """incref / decref read the thread state (and, before CPython 3.12, this thread's own
    state) and test Py_IsFinalizing before any GIL acquisition, and never call
    PyGILState_Check."""
    listing = run(["objdump", "-dr", "-C", "--no-show-raw-insn", str(obj)]).stdout
    for name in ("incref", "decref"):
        calls = calls_in(listing, f"ConcretePyInterpreterVTable::{name}(_object*) const")
        acquire = next((i for i, c in enumerate(calls)
                        if "SafeGilScopedAcquire::SafeGilScopedAcquire" in c
                        or "gil_scoped_acquire" in c or c in ("PyGILState_Ensure",
                                                              "PyEval_AcquireThread",
                                                              "PyEval_RestoreThread")),
                        None)
        read = next((i for i, c in enumerate(calls) if c in THREAD_STATE_READ), None)
        own = next((i for i, c in enumerate(calls) if c == "PyGILState_GetThisThreadState"), None)
        finalizing = next((i for i, c in enumerate(calls) if c.endswith("Py_IsFinalizing")), None)
        # Address order: the thread-state reads come before the acquisition. The
        # Py_IsFinalizing call may be laid out after it (gcc puts the fast path's
        # return out of line); it must be there, and PyGILState_Check must not.
        exact = own is not None and read < own if sys.version_info < (3, 12) else True
        if (acquire is None or read is None or finalizing is None or not exact
                or not read < acquire or "PyGILState_Check" in calls):
            raise CheckFailed(f"PyInterpreter.o: {name} does not read the thread state "
                              "(and, before 3.12, this thread's own) before acquiring the GIL "
                              f"and test Py_IsFinalizing, or calls PyGILState_Check: {calls}")
        shown = list(dict.fromkeys(c.split("(")[0] for c in calls))
        print(f"objdump {obj.name} ({label}): {name} calls {', '.join(shown)}, in address "
              "order (the thread-state reads before the acquisition; no PyGILState_Check)")


def compile_py_interpreter(tree: pathlib.Path, work: pathlib.Path, flags: list[str],
                           variant: str | None = None) -> None:
    """Patch 0001's PyInterpreter.cpp (``variant``: a PR variant's tree, else main's):
    compiled, or, where the file takes #189128's SafeGilScopedAcquire, up to that known
    gap and then with #189128's class."""
    label = "0001" if variant is None else f"{variant}/0001"
    source = tree / PY_INTERPRETER
    obj = work / ("PyInterpreter.o" if variant is None else f"PyInterpreter-{variant}.o")
    commit = next(row["commit"] for row in upstream_base.load_manifest()["file"]
                  if row["path"] == PY_INTERPRETER)[:8]
    done = run(compile_command(source, obj, flags), check=False)
    if done.returncode == 0:
        print(f"compiled {source.name} ({label}) against v2.15.0's headers: no error")
    else:
        uses = safe_gil_gap(source, done.stderr)
        if uses is None:
            raise CheckFailed(f"{source.name} ({label}) does not compile, and not only for "
                              f"the base's SafeGilScopedAcquire:\n{done.stderr[-6000:]}")
        print(f"compiled {source.name} ({label}) up to the base's one gap, not the patch's: its "
              f"{2 * len(uses)} errors are the {len(uses)} uses of "
              f"torch::detail::SafeGilScopedAcquire (lines {', '.join(map(str, uses))}), which "
              f"the stored copy ({commit}) takes from #189128's torch/csrc/Exceptions.h and "
              "v2.15.0's headers do not declare")
        header = safe_gil_header(work)
        done = run(["g++", *flags, "-include", str(header), "-c", str(source), "-o", str(obj)],
                   check=False)
        if done.returncode != 0:
            raise CheckFailed(f"{source.name} ({label}) does not compile with #189128's "
                              f"SafeGilScopedAcquire:\n{done.stderr[-6000:]}")
        print(f"compiled {source.name} ({label}) with #189128's SafeGilScopedAcquire "
              "(Exceptions.h at 02d90f32, verbatim): no error")
    check_fast_path(obj, label)


# 0003's C++ view type must make the misuse the borrow's contract forbids a compile
# error: a borrowed handle wrapped in an owning torch::stable::Tensor (which would
# delete a pointer into a Python object), or taken out as a raw handle.
BORROW_MISUSE = {
    "wrapped in torch::stable::Tensor":
        "torch::stable::Tensor f(void* o) {\n"
        "  return torch::stable::Tensor(torch::stable::tensor_borrow_from_pyobject(o));\n}\n",
    "taken as a raw AtenTensorHandle":
        "AtenTensorHandle f(void* o) {\n"
        "  return torch::stable::tensor_borrow_from_pyobject(o);\n}\n",
    "copied (to outlive its statement)":
        "void f(void* o) {\n  const auto view = torch::stable::tensor_borrow_from_pyobject(o);\n"
        "  auto copy = view;\n  (void)copy;\n}\n",
}


def check_borrow_misuse_does_not_compile(work: pathlib.Path, flags: list[str]) -> None:
    """Each BORROW_MISUSE snippet fails to compile, with a type error; the same file
    with a correct use compiles (so a missing header cannot pass for a refusal)."""
    head = "".join(f"#include <{h}>\n" for h in STABLE_HEADERS)
    ok = work / "borrow_use.cpp"
    ok.write_text(head + "int64_t f(void* o) {\n"
                  "  return torch::stable::tensor_borrow_from_pyobject(o).to_owned().dim();\n}\n")
    done = run(["g++", *flags, "-fsyntax-only", str(ok)], check=False)
    if done.returncode != 0:
        raise CheckFailed(f"a correct use of BorrowedTensor does not compile:\n{done.stderr[-4000:]}")
    for what, body in BORROW_MISUSE.items():
        source = work / "borrow_misuse.cpp"
        source.write_text(head + body)
        done = run(["g++", *flags, "-fsyntax-only", str(source)], check=False)
        errors = compile_errors(done.stderr)
        if done.returncode == 0 or not errors or any(f != source.name for f, _, _ in errors):
            raise CheckFailed(f"0003: a BorrowedTensor {what} compiles, or fails elsewhere:\n"
                              f"{done.stderr[-4000:]}")
        print(f"0003: a BorrowedTensor {what} does not compile, as required "
              f"({errors[0][2][:100]})")


def libtorch_flags(tree: pathlib.Path, work: pathlib.Path) -> list[str]:
    """The flags of ``tree``'s libtorch units at feature version 2.16 (the overlay's
    version.h written into ``work``)."""
    overlay = work / "overlay"
    (overlay / "torch/headeronly").mkdir(parents=True)
    (overlay / "torch/headeronly/version.h").write_text(HEADERONLY_VERSION_2_16)
    return compile_flags(tree, overlay)


def compile_libtorch_sources(tree: pathlib.Path, work: pathlib.Path,
                             flags: list[str] | None = None
                             ) -> tuple[list[pathlib.Path], list[str]]:
    """Compile LIBTORCH_SOURCES of ``tree`` into ``work`` at feature version 2.16 (the
    base's PythonImpl gap supplied where it stops there; ``flags``: ``libtorch_flags``'s,
    made here if not given); return the objects and flags."""
    flags = libtorch_flags(tree, work) if flags is None else flags
    objects = []
    for rel in LIBTORCH_SOURCES:  # at once, one per core
        start(compile_command(tree / rel, work / (pathlib.Path(rel).stem + ".o"), flags))
    for rel in LIBTORCH_SOURCES:
        obj = work / (pathlib.Path(rel).stem + ".o")
        if compile_one(tree / rel, obj, flags):
            compile_python_impl_supplied(tree / rel, obj, flags)
        objects.append(obj)
    return objects, flags


def compile_libtorch(tree: pathlib.Path, work: pathlib.Path,
                     variant_trees: dict[str, pathlib.Path]) -> list[pathlib.Path]:
    """Compile the touched libtorch sources and stable headers, and each PR variant's
    PyInterpreter.cpp; return the objects."""
    flags = libtorch_flags(tree, work)
    headers_tu = work / "stable_headers.cpp"
    headers_tu.write_text("".join(f"#include <{h}>\n" for h in STABLE_HEADERS)
                          + "void use(torch::stable::Tensor t) { (void)t.is_conj(); (void)t.is_neg(); }\n"
                          + "int64_t borrow(void* o) { return torch::stable::tensor_borrow_from_pyobject(o).dim(); }\n")
    # The accessor 0003 calls (dlpack/0004's), from the patched c10/core/TensorImpl.h (the
    # tree comes first on the include path, so every unit here is compiled against it too).
    impl_tu = work / "tensor_impl_accessor.cpp"
    impl_tu.write_text("#include <c10/core/TensorImpl.h>\n"
                       "bool custom(const c10::TensorImpl& impl) {\n"
                       "  return impl.has_custom_metadata();\n}\n")
    v2_16 = flags + [f"-DTORCH_TARGET_VERSION={TARGET_2_16}"]
    # every unit below at once, one per core, the longest first
    start(compile_command(tree / PY_INTERPRETER, work / "PyInterpreter.o", flags))
    for rel in LIBTORCH_SOURCES:
        start(compile_command(tree / rel, work / (pathlib.Path(rel).stem + ".o"), flags))
    start(compile_command(headers_tu, work / "stable_headers.o", v2_16))
    start(compile_command(impl_tu, work / "tensor_impl_accessor.o", flags))
    objects, _ = compile_libtorch_sources(tree, work, flags)
    compile_one(headers_tu, work / "stable_headers.o", v2_16)
    check_borrow_misuse_does_not_compile(work, v2_16)
    compile_one(impl_tu, work / "tensor_impl_accessor.o", flags)
    print(f"  ({impl_tu.name}: c10::TensorImpl::has_custom_metadata() of the patched "
          f"{TENSOR_IMPL_H}, which every unit above includes in place of the wheel's)")
    compile_py_interpreter(tree, work, flags)
    for name, variant_tree in variant_trees.items():
        compile_py_interpreter(variant_tree, work,
                               [f"-I{variant_tree}" if f == f"-I{tree}" else f for f in flags],
                               variant=name)
    return objects


def check_symbols(objects: list[pathlib.Path]) -> None:
    """The new functions are defined, unmangled, in shim_common.o."""
    listing = run(["nm", "--defined-only", str(objects[0])]).stdout
    for name, patch in NEW_SYMBOLS.items():
        line = next((l for l in listing.splitlines() if l.endswith(f" T {name}")), None)
        if line is None:
            mangled = [l for l in listing.splitlines() if name in l]
            raise CheckFailed(f"{name} is not a defined C symbol of shim_common.o: {mangled}")
        print(f"nm shim_common.o: {line} ({patch})")
    withdrawn = [l for l in listing.splitlines() for name in WITHDRAWN_SYMBOLS if name in l]
    if withdrawn:
        raise CheckFailed(f"shim_common.o defines the withdrawn batched read: {withdrawn}")
    print(f"nm shim_common.o: no {' / '.join(WITHDRAWN_SYMBOLS)} (the batched read, "
          "bench/native/batched_read.cpp's measured route, is in no patch)")
    demangled = run(["nm", "-C", "--defined-only", str(objects[1])]).stdout
    print("nm -C PyObjectConversion.o: " + next(
        l for l in demangled.splitlines() if "tensor_borrow_from_pyobject" in l).strip())


# Step 5's libraries. The test library holds the patched translation units as libtorch
# and libtorch_python would (shim_common.o, PyObjectConversion.o,
# PyObjectConversionPythonImpl.o), linked -Bsymbolic so that its own references
# (the shim entry point to getPyObjectConversionImpl, the registration to
# setPyObjectConversionImpl) bind to its own definitions, never to libtorch 2.15's
# copies of the same names, and -z now so that an unresolved symbol fails at load.
# The no-op library is the libtorch half alone: a process where nothing registered.
TEST_LIBRARY = "libtorch_patched.so"
NOOP_LIBRARY = "libtorch_patched_noop.so"
EXTENSION = "test/cpp_extensions/libtorch_agn_2_16_extension"
# 0002's test is one test of upstream's test_libtorch_agnostic.py (its id once
# instantiated for the CPU); 0003's is a file of its own.
PATCH_TESTS = [make_patch.CONJ_NEG_TEST_ID, PATCH_TEST]
# The patches' tests run through this runner, in a fresh process: test_libtorch_agnostic.py's
# class imports libtorch_agn_2_9 / 2_10 in setUpClass (and would build them), which this
# check does not build: empty stand-in packages (argv[1]) take their place, and only the
# series' tests are selected. Its version gates read torch.__version__, which the runner
# reports as the patched tree's version.txt (argv[2]): the 2.15 wheel runs the patched
# translation units, which are 2.16's. install_cpp_extension is not run: the test modules
# are the ones this check built (site/); a failed import is raised as it is.
TEST_RUNNER = """\
import pathlib, sys
stand_ins, version = sys.argv[1:3]
import torch
import torch.testing._internal.common_utils as common_utils
torch.__version__ = torch.torch_version.TorchVersion(version)
sys.path.append(stand_ins)
def install_cpp_extension(extension_root):
    raise RuntimeError(f"install_cpp_extension({pathlib.Path(extension_root).name}) is not "
                       f"run by this check; the import before it: {sys.exc_info()[1]!r}")
common_utils.install_cpp_extension = install_cpp_extension
import pytest
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[3:]]))
"""
STAND_INS = ("libtorch_agn_2_9", "libtorch_agn_2_10")


def runner_command(tree: pathlib.Path, work: pathlib.Path, args: list[str]) -> list[str]:
    """TEST_RUNNER's command line: the stand-in packages (written into ``work``), the tree's
    version.txt, then pytest's ``args``."""
    stand_ins = work / "stand-ins"
    for name in STAND_INS:
        (stand_ins / name).mkdir(parents=True, exist_ok=True)
        (stand_ins / name / "__init__.py").write_text(
            f'"""A stand-in for {name}: patch_check builds no such extension."""\n')
    version = (tree / "version.txt").read_text().strip()
    return [sys.executable, "-P", "-c", TEST_RUNNER, str(stand_ins), version, *args]
# The test package's __init__: upstream's loads the extension's modules the same way
# (importing torch first, which loads libtorch_python). Written by this script.
TEST_PACKAGE_INIT = """\
import torch

# _interop is an importable module, linked against the test library first, which
# registers its PythonImpl when loaded. (The extension's _C holds no test of the
# series: it is not built here.)
from . import _interop  # noqa: E402
"""


def link_library(objects: list[pathlib.Path], out: pathlib.Path, libs: list[str],
                 symbols=NEW_SYMBOLS) -> None:
    import torch.utils.cpp_extension as cpp_extension

    paths = cpp_extension.library_paths()
    done = run(["g++", "-shared", "-Wl,-Bsymbolic", "-Wl,-z,now", f"-Wl,-soname,{out.name}",
                *map(str, objects), *[f"-L{p}" for p in paths],
                *[f"-Wl,-rpath,{p}" for p in paths], *[f"-l{lib}" for lib in libs],
                "-o", str(out)], check=False)
    if done.returncode != 0:
        raise CheckFailed(f"{out.name} does not link:\n{done.stderr[-6000:]}")
    dynamic = run(["readelf", "-d", str(out)]).stdout
    if "SYMBOLIC" not in dynamic:
        raise CheckFailed(f"{out.name} is not linked -Bsymbolic")
    exported = run(["nm", "-D", "--defined-only", str(out)]).stdout
    missing = [n for n in symbols if f" T {n}\n" not in exported]
    if missing:
        raise CheckFailed(f"{out.name} does not export {missing}")


def build_test_libraries(work: pathlib.Path, objects: list[pathlib.Path]) -> pathlib.Path:
    """The test library and the no-op library; return the directory holding them."""
    libdir = work / "lib"
    libdir.mkdir()
    shim_common, conversion, python_impl = objects
    link_library([shim_common, conversion, python_impl], libdir / TEST_LIBRARY,
                 ["torch_python", "torch", "torch_cpu", "c10"])
    print(f"linked lib/{TEST_LIBRARY}: shim_common.o + PyObjectConversion.o + "
          "PyObjectConversionPythonImpl.o, as patched; -Bsymbolic (its own references bind "
          "to its own definitions, not to libtorch 2.15's copies of the same names), "
          "-z now; links libtorch_python, libtorch, libtorch_cpu, c10 of the wheel")
    link_library([shim_common, conversion], libdir / NOOP_LIBRARY, ["torch", "torch_cpu", "c10"])
    print(f"linked lib/{NOOP_LIBRARY}: shim_common.o + PyObjectConversion.o only (libtorch's "
          "half: nothing registers an implementation)")
    return libdir


# The patched gtest (test/cpp/shim/test_pyobject_conversion.cpp), built and run against
# the no-op library: a binary that links libtorch's half only, as upstream's does. GoogleTest
# comes from Debian's libgtest-dev (the Makefile's patch-check target installs it, pinned).
GTEST_SRC = "test/cpp/shim/test_pyobject_conversion.cpp"
GTEST_HEADER = pathlib.Path("/usr/include/gtest/gtest.h")
GTEST_BORROW = "TorchPyObjectConversion.BorrowNoopErrorsWithoutLibtorchPython"


def run_noop_gtest(tree: pathlib.Path, work: pathlib.Path, libdir: pathlib.Path) -> None:
    """Build the patched gtest against the no-op library and run it."""
    import torch.utils.cpp_extension as cpp_extension

    if not GTEST_HEADER.exists():
        raise CheckFailed(f"GoogleTest not found ({GTEST_HEADER}): apt-get install "
                          "libgtest-dev (make patch-check does)")
    paths = cpp_extension.library_paths()
    binary = work / "test_pyobject_conversion"
    done = run(["g++", *compile_flags(tree, work / "overlay"), str(tree / GTEST_SRC),
                "-o", str(binary), f"-L{libdir}", f"-Wl,-rpath,{libdir}", f"-l:{NOOP_LIBRARY}",
                *[f"-L{p}" for p in paths], *[f"-Wl,-rpath,{p}" for p in paths],
                "-ltorch", "-ltorch_cpu", "-lc10", "-lgtest", "-lgtest_main", "-pthread"],
               check=False)
    if done.returncode != 0:
        raise CheckFailed(f"the gtest does not build:\n{done.stderr[-6000:]}")
    logs = work / "ld-debug-gtest"
    logs.mkdir()
    done = run([str(binary)], env={**os.environ, "LD_DEBUG": "bindings",
                                   "LD_DEBUG_OUTPUT": str(logs / "ld")}, check=False)
    summary = [l for l in done.stdout.splitlines() if l.startswith(("[  PASSED  ]", "[  FAILED  ]"))]
    if done.returncode != 0 or f"[       OK ] {GTEST_BORROW}" not in done.stdout:
        raise CheckFailed(f"the patched gtest failed:\n{done.stdout[-4000:]}{done.stderr[-2000:]}")
    bound = {pathlib.Path(target).name for log in logs.glob("ld.*")
             for source, target, symbol in BINDING.findall(log.read_text(errors="replace"))
             if symbol == "torch_tensor_borrow_from_pyobject"}
    if bound != {NOOP_LIBRARY}:
        raise CheckFailed(f"the gtest bound torch_tensor_borrow_from_pyobject to {bound}")
    print(f"executed the patched gtest {pathlib.Path(GTEST_SRC).name} against {NOOP_LIBRARY} "
          f"(no libtorch_python): {summary[0] if summary else done.stdout[-200:]} "
          f"({GTEST_BORROW} among them; torch_tensor_borrow_from_pyobject bound to "
          f"{NOOP_LIBRARY})")


def build_test_modules(tree: pathlib.Path, work: pathlib.Path, libdir: pathlib.Path) -> pathlib.Path:
    """libtorch_agn_2_16's _interop (0002's conj/neg functions, 0003's borrow ones),
    linked against the test library first; return the site directory."""
    import torch.utils.cpp_extension as cpp_extension

    package = work / "site" / "libtorch_agn_2_16"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(TEST_PACKAGE_INIT)
    flags = compile_flags(tree, work / "overlay") + [f"-DTORCH_TARGET_VERSION={TARGET_2_16}",
                                                     "-DPy_LIMITED_API=0x030a0000"]
    paths = cpp_extension.library_paths()
    for name, source, extra in (("_interop", INTEROP_SRC, []),):
        out = package / f"{name}.so"
        done = run(["g++", *flags, *extra, "-shared", str(tree / source), "-o", str(out),
                    f"-L{libdir}", f"-Wl,-rpath,{libdir}", f"-l:{TEST_LIBRARY}",
                    *[f"-L{p}" for p in paths], *[f"-Wl,-rpath,{p}" for p in paths],
                    "-ltorch", "-ltorch_cpu", "-lc10"], check=False)
        if done.returncode != 0:
            raise CheckFailed(f"libtorch_agn_2_16.{name} does not build:\n{done.stderr[-6000:]}")
        print(f"built site/libtorch_agn_2_16/{name}.so from {pathlib.Path(source).name} (abi3, "
              f"TORCH_TARGET_VERSION {TARGET_2_16}), linked to lib/{TEST_LIBRARY} first")
    return package.parent


BINDING = re.compile(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: normal symbol `([^']+)'")


def check_bindings(ld_debug: list[pathlib.Path], site: pathlib.Path, symbols=NEW_SYMBOLS) -> None:
    """The test modules' calls of the new functions went to the test library, and the
    prototype (shim_ext) was never loaded."""
    bound: dict[str, set[str]] = {}
    prototype = []
    for log in ld_debug:
        text = log.read_text(errors="replace")
        prototype += [line for line in text.splitlines() if "shim_ext" in line][:1]
        for source, target, symbol in BINDING.findall(text):
            if pathlib.Path(source).parent == site / "libtorch_agn_2_16":
                bound.setdefault(symbol, set()).add(pathlib.Path(target).name)
    if prototype:
        raise CheckFailed(f"the prototype was loaded during the patch's tests: {prototype[0]}")
    for name in symbols:
        if bound.get(name) != {TEST_LIBRARY}:
            raise CheckFailed(f"{name}: the test modules bound it to {bound.get(name)}, "
                              f"not only to {TEST_LIBRARY}")
    ours = sorted(s for s, targets in bound.items() if targets == {TEST_LIBRARY})
    print(f"LD_DEBUG=bindings: the test modules bound {', '.join(ours)} to {TEST_LIBRARY} "
          "and nowhere else; shim_ext (the prototype) was never loaded")


def run_patch_tests(tree: pathlib.Path, site: pathlib.Path, work: pathlib.Path,
                    tests=PATCH_TESTS, symbols=NEW_SYMBOLS) -> None:
    """The patch's Python tests against the test modules, under LD_DEBUG=bindings."""
    logs = work / "ld-debug"
    logs.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "LD_DEBUG": "bindings",
           "LD_DEBUG_OUTPUT": str(logs / "ld")}
    done = run(runner_command(tree, work, ["-rA", *[str(tree / t) for t in tests]]),
               cwd=tree, env=env, check=False)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-2000:]
    ran = re.findall(r"^(PASSED|FAILED|ERROR|SKIPPED) \S+?([^/\s]+\.py::\S+)", done.stdout,
                     flags=re.M)
    print(f"executed-patch test ({', '.join(pathlib.Path(t).name for t in tests)}, "
          f"against lib/{TEST_LIBRARY}): {summary}")
    for outcome, name in ran:
        print(f"  {outcome} {name}")
    if any(outcome != "PASSED" for outcome, _ in ran):
        raise CheckFailed(f"the patch's Python tests did not all pass:\n{done.stdout[-6000:]}")
    if done.returncode != 0:
        raise CheckFailed(f"the patch's Python tests failed:\n{done.stdout[-6000:]}"
                          f"{done.stderr[-2000:]}")
    check_bindings(sorted(logs.glob("ld.*")), site, symbols)


# 0002 built and tested on its own: the tree of the base plus 0002 alone (step 1b's),
# its touched translation units compiled and linked into a test library, its _interop
# module built against it, and its own test run.
CONJ_NEG_SYMBOLS = {name: patch for name, patch in NEW_SYMBOLS.items() if patch == "0002"}
CONJ_NEG_TEST = make_patch.CONJ_NEG_TEST_ID


def check_conj_neg_alone(work: pathlib.Path) -> None:
    """Compile, link and test 0002 applied alone on the base."""
    tree, alone = work / "order-0002-alone", work / "alone-0002"
    alone.mkdir()
    objects, _ = compile_libtorch_sources(tree, alone)
    libdir = alone / "lib"
    libdir.mkdir()
    link_library(objects, libdir / TEST_LIBRARY, ["torch_python", "torch", "torch_cpu", "c10"],
                 CONJ_NEG_SYMBOLS)
    site = build_test_modules(tree, alone, libdir)
    run_patch_tests(tree, site, alone, [CONJ_NEG_TEST], CONJ_NEG_SYMBOLS)
    print("0002 alone on the base: compiled, linked, its _interop module built and its own "
          "test passed")
    # The negative controls: each patch's Python test where its patch is not.
    expect_test_fails(work / "patched" / PATCH_TEST, site, alone / "negative-0003",
                      "against 0002 alone (no 0003; its _interop module, which 0003 extends)")
    base_lib = alone / "base-lib"
    base_lib.mkdir()
    print("the base's translation units, for 0002's negative control:")
    objects, _ = compile_libtorch_sources(work / "base", base_lib)
    (base_lib / "lib").mkdir()
    link_library(objects, base_lib / "lib" / TEST_LIBRARY,
                 ["torch_python", "torch", "torch_cpu", "c10"], {})
    base_site = build_test_modules(tree, base_lib, base_lib / "lib")
    test_file, _, test_id = CONJ_NEG_TEST.partition("::")
    expect_test_fails(tree / test_file, base_site, alone / "negative-0002",
                      "against the base's translation units (no 0002; 0002's _interop module "
                      "built against 0002's headers and linked to a library of the base's)",
                      runner=(tree, f"::{test_id}"))


def expect_test_fails(test: pathlib.Path, site: pathlib.Path, test_dir: pathlib.Path,
                      where: str, runner: tuple[pathlib.Path, str] | None = None) -> None:
    """A patch's Python test, copied into ``test_dir`` and run with ``site`` (the test
    modules) where its patch is not: every test in it must fail or error. With ``runner``
    ``(tree, selection)``: through TEST_RUNNER (the tree's version), the tests ``selection``
    (``::Class::test``) names only."""
    test_dir.mkdir()
    shutil.copyfile(test, test_dir / test.name)
    args = ["-rA", test.name + (runner[1] if runner else "")]
    command = (runner_command(runner[0], test_dir, args) if runner else
               [sys.executable, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", *args])
    done = run(command, cwd=test_dir, env={**os.environ, "PYTHONPATH": str(site)}, check=False)
    lines = done.stdout.strip().splitlines()
    summary = lines[-1] if lines else done.stderr[-2000:]
    passed = re.findall(r"^PASSED \S+::(\w+)", done.stdout, flags=re.M)
    failed = re.findall(r"^(?:FAILED|ERROR) \S+::(\w+)", done.stdout, flags=re.M)
    if done.returncode == 0 or passed or not failed:
        raise CheckFailed(f"{test.name} {where} does not fail as it must (passed: {passed}):"
                          f"\n{done.stdout[-4000:]}{done.stderr[-2000:]}")
    first = re.search(r"^E\s+(\w+(?:Error|Exception): .*)$", done.stdout, flags=re.M)
    reason = first.group(1).replace(f"{site}/", "") if first else "none shown"
    print(f"negative control: {test.name} {where}: {summary}; none passed "
          f"(the first error: {reason[:200]})")


# 0001's test (test/test_pyinterpreter_threads.py, in PyTorch's form) against the torch
# 2.15 wheel, each run in a fresh process: with torch's own incref / decref (2.15: always
# the GIL); with each series' patched methods installed into the interpreter's vtable
# (proposal/fixes/internal_fixes.py, code "patch": the methods cut out of that series'
# patched file, compiled against torch 2.15 and, for #189128's series, #189128's
# SafeGilScopedAcquire; PATCHED_INTERPRETER_SERIES picks the series, each built into a
# folder of its own); and with a negative control (a fast path testing
# PyGILState_Check(), code "gil-state-check"), which must fail the subinterpreter case:
# so the test can fail. Then the fast path counted: the test build counts every guard
# the slow path constructs (#189128's class, or pybind11's gil_scoped_acquire in main's
# series), and copies on an attached thread must construct none while copies on a
# detached one construct one per incref / decref; the same count on a build whose
# attached-thread test answers no (PATCHED_INTERPRETER_CONTROL=no-fast-path) must show
# guards on the attached thread too, so the count can fail.
INTERPRETER_TEST = "test/test_pyinterpreter_threads.py"
INTERPRETER_TEST_SUBINTERPRETER = "test_copies_wait_for_the_gil_once_a_subinterpreter_exists"
FIXES_MODULE = """\
import pathlib, sys
checkout, module_dir = sys.argv[1:3]
sys.path.append(checkout)  # proposal.fixes; the cwd is the patched tree
import torch
from proposal import toolchain
from proposal.fixes import internal_fixes, internal_fixes_build
if module_dir != "-":
    internal_fixes._module = lambda version: toolchain.built_module(
        internal_fixes_build, pathlib.Path(module_dir))
"""
INSTALL_AND_TEST = FIXES_MODULE + """\
import pytest
code = sys.argv[3]
if code != "torch":
    fixes = internal_fixes.InternalFixes(torch)
    assert fixes._lib.fixes_interpreter_install(fixes.CODES[code]) == 0, code
    assert fixes.installed_code() == code
    print("installed:", code, fixes.patch_name)
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[4:]]))
"""
FAST_PATH_COUNT = FIXES_MODULE + """\
import json
fixes = internal_fixes.InternalFixes(torch)
n, out = 1000, {"patch": fixes.patch_name}
t = torch.randn(8)
assert t._use_count() == 1  # each copy takes incref on 1 -> 2 and decref on 2 -> 1
with fixes.interpreter_fix("patch"):
    for where, attach in (("attached", True), ("detached", False)):
        before = fixes.guard_counts()["constructed"]
        fixes.copy_here(t, n, attach=attach)
        out[where] = fixes.guard_counts()["constructed"] - before
print(json.dumps(out))
"""
FAST_PATH_COPIES = 1000


def build_fixes_modules(work: pathlib.Path, builds: dict[str, tuple[str, str]]) -> None:
    """Build ``_bench_internal_fixes`` into ``work/<name>`` for each ``name: (series,
    control)``, two at a time (each build compiles three C++ files)."""
    pending = []
    for name, (series, control) in builds.items():
        env = {**os.environ, "PATCHED_INTERPRETER_SERIES": series,
               "PATCHED_INTERPRETER_CONTROL": control}
        pending.append((name, subprocess.Popen(
            [sys.executable, "-P", "-c", FIXES_MODULE + "internal_fixes.InternalFixes(torch)\n",
             str(ROOT), str(work / name)], env=env, cwd=ROOT, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)))
        if len(pending) == 2 or name == list(builds)[-1]:
            for built, proc in pending:
                output, _ = proc.communicate()
                if proc.returncode != 0:
                    raise CheckFailed(f"building the fixes module {built} failed:\n{output[-4000:]}")
            pending = []


def run_interpreter_fix_test(tree: pathlib.Path, work: pathlib.Path,
                             variant_trees: dict[str, pathlib.Path]) -> None:
    """0001's own test with torch's methods, each series' patched methods and the
    negative control; then the fast path counted, with its own negative control."""
    env = {**os.environ, "TORCH_EXTENSIONS_DIR": str(work / "torch_extensions")}
    series = {"main": tree, **variant_trees}
    # #189128's series is what the benchmarks build (PATCHED_INTERPRETER_SERIES unset):
    # its module is theirs, in the checkout's build folder ("-"); the others in work/.
    builds = {f"fixes-{name}": (name, "") for name in series}
    builds["fixes-main-no-fast-path"] = ("main", "no-fast-path")
    where = {build: "-" if how == (patched_interpreter.DEFAULT_SERIES, "") else str(work / build)
             for build, how in builds.items()}
    build_fixes_modules(work, {b: how for b, how in builds.items() if where[b] != "-"})
    label = {"torch": "torch 2.15's own incref / decref",
             "gil-state-check": "negative control (fast path on PyGILState_Check)"}
    runs = [("torch", "main", True)] + [("patch", name, True) for name in series] + [
        ("gil-state-check", "main", False)]
    for code, name, must_pass in runs:
        what = label.get(code, f"the patch's incref / decref installed ({name}: "
                               f"{(series[name] / INTERPRETER_TEST).relative_to(work)})")
        test = str(series[name] / INTERPRETER_TEST)
        done = run([sys.executable, "-P", "-c", INSTALL_AND_TEST, str(ROOT),
                    where[f"fixes-{name}"], code, test, "-rA"],
                   cwd=series[name], env=env, check=False)
        lines = done.stdout.strip().splitlines()
        summary = lines[-1] if lines else done.stderr[-2000:]
        failed = [l.split("::")[-1] for l in lines if l.startswith("FAILED")]
        passed = sorted(l.split("::")[-1] for l in lines if l.startswith("PASSED"))
        print(f"{pathlib.Path(INTERPRETER_TEST).name} with {what}: {summary}")
        if code == "torch":
            print(f"  passed: {', '.join(passed)}")
        if must_pass and done.returncode != 0:
            raise CheckFailed(f"{INTERPRETER_TEST} failed with {what}:\n"
                              f"{done.stdout[-6000:]}{done.stderr[-2000:]}")
        if not must_pass and not any(INTERPRETER_TEST_SUBINTERPRETER in f for f in failed):
            raise CheckFailed(f"{INTERPRETER_TEST} did not fail with {what}, so it cannot "
                              f"show the hole it tests:\n{done.stdout[-4000:]}")
    n, counted = FAST_PATH_COPIES, {}
    for name in [*builds]:
        done = run([sys.executable, "-P", "-c", FAST_PATH_COUNT, str(ROOT), where[name]],
                   cwd=ROOT, check=False)
        if done.returncode != 0:
            raise CheckFailed(f"the fast-path count with {name} did not run:\n{done.stderr[-3000:]}")
        got = counted[name] = json.loads(done.stdout.strip().splitlines()[-1])
        control = name.endswith("no-fast-path")
        series_name, control_name = builds[name]
        print(f"fast path counted ({name}: {series_name}'s {got['patch'][:4]}"
              f"{', ' + control_name if control_name else ''}): {n} copies on an attached thread "
              f"constructed {got['attached']} slow-path guards, {n} on a detached thread "
              f"{got['detached']}" + (" (negative control: the attached-thread test answers "
                                      "no)" if control else ""))
        if got["detached"] != 2 * n:
            raise CheckFailed(f"{name}: the slow path's guards are not counted "
                              f"({got['detached']} for {n} detached copies, not {2 * n})")
        if control and got["attached"] == 0:
            raise CheckFailed(f"{name}: the count shows no guard without the fast path, "
                              "so it cannot show that the fast path is taken")
        if not control and got["attached"] != 0:
            raise CheckFailed(f"{name}: copies on an attached thread constructed "
                              f"{got['attached']} guards: the fast path is not taken")
    print(f"negative control: the fast-path count fails without the patch's fast path "
          f"({counted['fixes-main-no-fast-path']['attached']} guards for {n} attached copies; "
          f"the patched builds: " + ", ".join(f"{k} {v['attached']}" for k, v in counted.items()
                                              if not k.endswith("no-fast-path")) + ")")


# 0001's entry of PyTorch's instruction-count benchmarks (benchmarks/instruction_counts/
# definitions/standard.py, "Python bindings" / "Tensor argument"): its statement counted with
# torch.utils.benchmark.Timer(...).collect_callgrind() against the torch 2.15 wheel, in the
# Timer's own child process (under valgrind), once with torch's own incref / decref and once
# per series with the patch's, which the Timer's setup installs into the interpreter's vtable
# in that child (fixes/internal_fixes.py; setup is not counted). Its setup is the entry's
# TrivialSetup (definitions/setup.py at pytorch/pytorch 0fae359f: TRIVIAL_2D).
ENTRY_SETUP = "x = torch.ones((4, 4))"
CALLGRIND_NUMBER = 100
INSTALL_IN_TIMER = """\
import pathlib, sys
sys.path.append({checkout!r})
from proposal import toolchain
from proposal.fixes import internal_fixes, internal_fixes_build
if {module_dir!r} != "-":
    internal_fixes._module = lambda version: toolchain.built_module(
        internal_fixes_build, pathlib.Path({module_dir!r}))
_fixes = internal_fixes.InternalFixes(torch)
assert _fixes._lib.fixes_interpreter_install(_fixes.CODES["patch"]) == 0
"""
COUNT_ENTRY = """\
import json, sys
import torch
from torch.utils.benchmark import Timer
stmt, setup, number = sys.argv[1], sys.argv[2], int(sys.argv[3])
stats = Timer(stmt, setup=setup).collect_callgrind(number=number, collect_baseline=False)
print(json.dumps({"per_call": stats.counts(denoise=True) / number}))
"""


def count_instruction_entry(tree: pathlib.Path, work: pathlib.Path,
                            variant_trees: dict[str, pathlib.Path]) -> None:
    """0001's instruction_counts entry, counted without and with each series' patch."""
    added = added_lines(PATCHES[0], make_patch.INSTRUCTION_COUNTS)
    (stmt,) = re.findall(r'^\s+r"(.+)",$', "\n".join(added), flags=re.M)
    if shutil.which("valgrind") is None:
        raise CheckFailed("valgrind is not installed (apt-get install valgrind)")
    # The Timer's child runs `python` from PATH: this interpreter's, so its torch is this one.
    env = {**os.environ, "PATH": f"{pathlib.Path(sys.executable).parent}:{os.environ['PATH']}"}
    where = {"main": str(work / "fixes-main"), **{name: "-" if name ==
             patched_interpreter.DEFAULT_SERIES else str(work / f"fixes-{name}")
             for name in variant_trees}}
    runs = [("torch 2.15's own incref / decref", ENTRY_SETUP)] + [
        (f"the patch's incref / decref ({name})",
         INSTALL_IN_TIMER.format(checkout=str(ROOT), module_dir=module_dir) + ENTRY_SETUP)
        for name, module_dir in where.items()]
    # One process per count, all at once (each spends most of its time importing torch
    # under valgrind); each Timer runs its statement in a child process of its own.
    procs = [(label, subprocess.Popen(
        [sys.executable, "-c", COUNT_ENTRY, stmt, setup, str(CALLGRIND_NUMBER)], cwd=ROOT,
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for label, setup in runs]
    for label, proc in procs:
        out, err = proc.communicate()
        if proc.returncode != 0:
            raise CheckFailed(f"collect_callgrind of {stmt!r} with {label} failed:\n"
                              f"{out[-3000:]}{err[-3000:]}")
        per_call = json.loads(out.strip().splitlines()[-1])["per_call"]
        print(f"instruction_counts entry {stmt!r} (setup {ENTRY_SETUP!r}), "
              f"Timer.collect_callgrind(number={CALLGRIND_NUMBER}) in its own child process, "
              f"with {label}: {per_call:.1f} instructions per call (denoised)")


def lint(tree: pathlib.Path, linter: str, files: list[str]) -> None:
    done = run([sys.executable, f"tools/linter/adapters/{linter}", *files], cwd=tree)
    messages = [json.loads(l) for l in done.stdout.splitlines() if l.strip()]
    print(f"{linter} {' '.join(files)}: {len(messages)} lint messages")
    for message in messages:
        print(f"  {message['path']}:{message['line']}: {message['name']}")
    if messages:
        raise CheckFailed(f"{linter} reports {len(messages)} problems")


def run_linters(tree: pathlib.Path) -> None:
    """Upstream's two stable-shim linters, as lintrunner runs them on the changed files."""
    # The version linter judges the lines added by the last commit (HEAD~1..HEAD):
    # run it with each patch on top.
    for patch in reversed(PATCHES):
        head = git(tree, "log", "-1", "--format=%h %s").strip()
        print(f"at {head}:")
        lint(tree, "stable_shim_version_linter.py", ["torch/csrc/stable/c/shim.h"])
        git(tree, "checkout", "-q", "-f", "--detach", "HEAD~1")
    git(tree, "checkout", "-q", "-f", "main")
    versions = tree / make_patch.VERSIONS_TXT
    patched = versions.read_bytes()
    lint(tree, "stable_shim_usage_linter.py",
         ["torch/csrc/stable/pyobject.h", "torch/csrc/stable/tensor_struct.h"])
    # Its command line also rewrites the registry from its default header list, which
    # lacks shim_mps.h; make_patch.VERSIONED_HEADERS adds it (that list reproduces
    # main's file on the base). Regenerate with it and compare with the patch's copy.
    versions.write_bytes(b"")
    make_patch.run_usage_linter_writer(tree)
    if versions.read_bytes() != patched:
        raise CheckFailed("shim_function_versions.txt differs from what the usage linter "
                          "writes for the patched headers: the patch's copy is stale")
    print(f"{make_patch.VERSIONS_TXT}: as the usage linter writes it for the patched headers")
    check_exports(tree)
    base = git(tree, "show", f"HEAD~{len(PATCHES)}:{make_patch.VERSIONS_TXT}")
    git(tree, "checkout", "-q", "--detach", f"HEAD~{len(PATCHES)}")
    make_patch.run_usage_linter_writer(tree)
    same = versions.read_text() == base
    git(tree, "checkout", "-q", "-f", "main")
    if not same:
        raise CheckFailed("on the base, the usage linter does not reproduce main's "
                          "shim_function_versions.txt: the base is not one coherent tree")
    print(f"{make_patch.VERSIONS_TXT}: on the base, reproduced byte for byte (the base is coherent)")


def check_exports(tree: pathlib.Path) -> None:
    """The export list (libtorch_stable_exports.syms) as the usage linter's writer writes it
    from the patched headers, the same functions as the registry; each new C function in it."""
    exports = tree / make_patch.EXPORTS_SYMS
    patched = exports.read_bytes()
    exports.write_bytes(b"")
    make_patch.run_usage_linter_writer(tree)
    if exports.read_bytes() != patched:
        raise CheckFailed(f"{make_patch.EXPORTS_SYMS} differs from what the usage linter's "
                          "writer writes for the patched headers: the patch's copy is stale")
    missing = [name for name in NEW_SYMBOLS if f"    {name};\n" not in patched.decode()]
    if missing:
        raise CheckFailed(f"{make_patch.EXPORTS_SYMS} does not list {missing}")
    print(f"{make_patch.EXPORTS_SYMS}: as the usage linter's writer (2d089436) writes it for "
          f"the patched headers; it lists {', '.join(NEW_SYMBOLS)}")


CPP_SUFFIXES = (".h", ".hpp", ".cpp", ".cc")


def added_ranges(tree: pathlib.Path, rel: str) -> list[tuple[int, int]]:
    """The 1-based line ranges the series adds to ``rel`` (``git diff -U0`` on the base)."""
    diff = git(tree, "diff", "-U0", f"HEAD~{len(PATCHES)}", "HEAD", "--", rel)
    ranges = []
    for start, count in re.findall(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@", diff, flags=re.M):
        n = 1 if count == "" else int(count)
        if n:
            ranges.append((int(start), int(start) + n - 1))
    return ranges


def touched_files(tree: pathlib.Path) -> list[str]:
    return git(tree, "diff", "--name-only", f"HEAD~{len(PATCHES)}", "HEAD").split()


def lint_clang_format(tree: pathlib.Path) -> int:
    """clang-format --dry-run on the added lines of every C++ file; the number of messages."""
    clang_format = make_patch.find_clang_format()
    version = run([clang_format, "--version"]).stdout.strip()
    total = 0
    for rel in touched_files(tree):
        if not rel.endswith(CPP_SUFFIXES):
            continue
        ranges = added_ranges(tree, rel)
        done = run([clang_format, "--dry-run", "--style=file",
                    *[f"--lines={a}:{b}" for a, b in ranges], rel], cwd=tree, check=False)
        messages = re.findall(r"^(\S+?):(\d+):\d+: (?:warning|error): (.*)$", done.stderr, flags=re.M)
        lines = sum(b - a + 1 for a, b in ranges)
        print(f"clang-format {rel} ({lines} added lines): {len(messages)} lint messages")
        for path, line, message in messages:
            print(f"  {path}:{line}: {message}")
        total += len(messages)
    print(f"  ({version}, PyTorch's .clang-format)")
    return total


def lint_python(tree: pathlib.Path) -> int:
    """flake8 and ruff with PyTorch's settings on every touched Python file."""
    files = [rel for rel in touched_files(tree) if rel.endswith(".py")]
    bindir = pathlib.Path(sys.executable).parent
    total = 0
    for name, cmd in (
            ("flake8", [str(bindir / "flake8"), "--config=.flake8"]),
            ("ruff", [str(bindir / "ruff"), "check", "--config=pyproject.toml", "--no-cache",
                      "--format=text"])):
        done = run([*cmd, *files], cwd=tree, check=False)
        messages = [l for l in done.stdout.splitlines()
                    if re.match(r"^\S+:\d+:\d+: ", l)]
        if done.returncode not in (0, 1) or (done.returncode == 1 and not messages):
            raise CheckFailed(f"{name} did not run:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        version = " ".join(run([cmd[0], "--version"]).stdout.split())
        ours = [m for m in messages if on_added_line(tree, m)]
        print(f"{name} {' '.join(files)}: {len(ours)} lint messages on the series' lines "
              f"({version})")
        for message in ours:
            print(f"  {message}")
        for message in messages:
            if message not in ours:
                print(f"  on a base line, not the series': {message}")
        total += len(ours)
    return total


def on_added_line(tree: pathlib.Path, message: str) -> bool:
    """Whether a ``path:line:col: ...`` message falls on a line the series adds."""
    rel, line = message.split(":")[:2]
    return any(a <= int(line) <= b for a, b in added_ranges(tree, rel))


# clang-tidy, pinned: 17.0.1 reads PyTorch's .clang-tidy as it is (23.1.4 refuses its
# AnalyzeTemporaryDtors key). The PyPI wheel's launcher imports pkg_resources, so the
# binary it ships is called directly. The Makefile's patch-check target installs it.
CLANG_TIDY_VERSION = "17.0.1"
# The translation units PyTorch's CLANGTIDY linter would take (torch/csrc/**), each with
# the extra compiler arguments its compilation in step 3 needed. stable_headers.cpp
# (step 3's TU including pyobject.h and tensor.h at target 2.16) brings the stable
# headers; shim.h and PyObjectConversion.h come in through shim_common.cpp.
TIDY_HEADER_TU = "stable_headers.cpp"
# What the linter leaves out, and what this run cannot reach; printed with the results.
CLANG_TIDY_NOT_REACHED = (
    "clang-tidy could not check: the test modules (test/**, outside CLANGTIDY's "
    "include_patterns, as upstream); code under a macro this build does not define "
    "(USE_CUDA, _WIN32, ...); main's own compile_commands.json (not available: the flags "
    "are step 3's, against the wheel's headers). PyObjectConversionPythonImpl.cpp is "
    "checked as patched, so the base's one compile error (is_tensor_pyobject) shows as a "
    "clang-diagnostic-error on a base line; PyInterpreter.cpp is main's "
    "(pybind11::gil_scoped_acquire; #189128's variant adds the same lines). clang-diagnostic-missing-prototypes needs the "
    "warning on: -Wmissing-prototypes is passed. HeaderFilterRegex names repository-"
    "relative paths; the patched tree's torch/csrc/ and c10/core/TensorImpl.h are "
    "passed as the header filter.")


def find_clang_tidy() -> str:
    """The pinned clang-tidy binary (``$CLANG_TIDY`` or the PyPI wheel's), or exit."""
    candidates = [os.environ.get("CLANG_TIDY")]
    spec = importlib.util.find_spec("clang_tidy")
    if spec is not None and spec.origin:
        candidates.append(str(pathlib.Path(spec.origin).parent / "data" / "bin" / "clang-tidy"))
    for candidate in candidates:
        if candidate and pathlib.Path(candidate).exists():
            version = run([candidate, "--version"]).stdout
            if f"version {CLANG_TIDY_VERSION}" not in version:
                raise CheckFailed(f"{candidate} is not clang-tidy {CLANG_TIDY_VERSION}: {version}")
            return candidate
    raise CheckFailed(f"clang-tidy {CLANG_TIDY_VERSION} not found: `pip install "
                      f"clang-tidy=={CLANG_TIDY_VERSION}` (make patch-check does)")


# Findings on the series' lines that are known, open, and fixed outside this directory;
# each is printed with its reason and does not fail the check. (file, check): reason.
TIDY_OPEN: dict[tuple[str, str], str] = {}
TIDY_DIAGNOSTIC = re.compile(r"^(/\S+?):(\d+):\d+: (?:error|warning): (.*) \[([\w,.-]+)\]$", re.M)


def lint_clang_tidy(tree: pathlib.Path, work: pathlib.Path) -> int:
    """clang-tidy with PyTorch's .clang-tidy files on the touched libtorch translation
    units; the number of diagnostics on lines the series adds."""
    clang_tidy = find_clang_tidy()
    flags = compile_flags(tree, work / "overlay")
    units = [(tree / rel, []) for rel in LIBTORCH_SOURCES]
    units.append((work / TIDY_HEADER_TU, [f"-DTORCH_TARGET_VERSION={TARGET_2_16}"]))
    units.append((tree / PY_INTERPRETER, []))  # main's: pybind11's guard, no #189128 class
    # torch/csrc/** as lintrunner's CLANGTIDY takes it, and 0003's c10/core/TensorImpl.h.
    header_filter = f"^{re.escape(str(tree))}/(torch/csrc/.*|{re.escape(TENSOR_IMPL_H)})"
    total, opened = 0, set()

    def command(source, extra):
        return [clang_tidy, f"--header-filter={header_filter}",
                "--extra-arg=-Wmissing-prototypes", str(source), "--", *flags, *extra]

    for source, extra in reversed(units):  # PyInterpreter.cpp, the longest by far, first
        start(command(source, extra), cwd=tree)
    for source, extra in units:
        done = run(command(source, extra), cwd=tree, check=False)
        if not re.search(r"^\d+ warnings?(?: and \d+ errors?)? generated\.$",
                         done.stdout + done.stderr, flags=re.M) and done.returncode != 0:
            raise CheckFailed(f"clang-tidy did not run on {source.name}:\n{done.stderr[-3000:]}")
        ours, known, base = [], [], {}
        for path, line, message, checks in TIDY_DIAGNOSTIC.findall(done.stdout):
            check = checks.split(",")[0]
            try:
                rel = str(pathlib.Path(path).relative_to(tree))
            except ValueError:
                base[check] = base.get(check, 0) + 1  # step 3's helper TU, not the series
                continue
            if not any(a <= int(line) <= b for a, b in added_ranges(tree, rel)):
                base[check] = base.get(check, 0) + 1
            elif (rel, check) in TIDY_OPEN:
                opened.add((rel, check))
                known.append(f"{rel}:{line}: {message} [{check}]: {TIDY_OPEN[rel, check]}")
            else:
                ours.append(f"{rel}:{line}: {message} [{check}]")
        print(f"clang-tidy {source.name}: {len(ours)} lint messages on the series' lines")
        for message in ours:
            print(f"  {message}")
        for message in known:
            print(f"  open, named in TIDY_OPEN (not counted): {message}")
        if base:
            print("  on lines the series does not add: "
                  + ", ".join(f"{n} {c}" for c, n in sorted(base.items())))
        total += len(ours)
    for key in sorted(set(TIDY_OPEN) - opened):
        print(f"  TIDY_OPEN {key} matched nothing: remove it from proposal/tools/patch_check.py")
    print(f"  (clang-tidy {CLANG_TIDY_VERSION}, PyTorch's .clang-tidy and "
          "torch/csrc/stable/.clang-tidy, WarningsAsErrors '*')")
    print(CLANG_TIDY_NOT_REACHED)
    return total


def run_style_linters(tree: pathlib.Path, work: pathlib.Path) -> None:
    """Step 7: clang-format, flake8, ruff and clang-tidy; zero messages on the series' lines."""
    total = lint_clang_format(tree) + lint_python(tree) + lint_clang_tidy(tree, work)
    if total:
        raise CheckFailed(f"the style linters report {total} problems")


def describe_run() -> str:
    """Where this run is: the repository's commit, torch, CPython, g++, the date (UTC)."""
    import datetime
    import platform

    import torch

    commit = run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                 check=False).stdout.strip() or "unknown"
    dirty = run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "proposal",
                 "shim_ext", ":!proposal/patch-check.log"],  # written by this run
                check=False).stdout.strip()
    gxx = run(["g++", "--version"], check=False).stdout.splitlines()[:1]
    return (f"make patch-check at {commit}{' (with uncommitted changes)' if dirty else ''}, "
            f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC: torch "
            f"{torch.__version__} wheel, CPython {platform.python_version()} "
            f"({platform.machine()}), {gxx[0] if gxx else 'g++ unknown'}; no PyTorch build")


# --- 8. the DLPack series (patches/dlpack/) ---------------------------------------------------
# The DLPack fix is a series of its own on torch/csrc/Module.cpp, which no file of the
# stable-ABI series touches. Each of its patches must stand alone: applied on the base
# plus the DLPack patches before it (the first alone on the base), its functions cut out
# of the patched file and compiled against the torch 2.15.0 wheel's headers, its own
# test/test_dlpack.py cases (and its predecessors') passing against that code, and no
# style-lint message on its lines. Then the whole proposal in its landing order
# (make_patch.LANDING_ORDER). Module.cpp is not compiled whole: it needs libtorch_python's
# internal headers, and the fork's copy the base comes from has an unrelated defect
# (BASE.toml); what is compiled and run is the functions the series changes.
DLPACK_PATCHES = sorted((PROPOSAL / "patches" / "dlpack").glob("000*.patch"))
PATCHED_DLPACK_CPP = PROPOSAL / "fixes" / "patched_dlpack.cpp"


def _load_patched_dlpack():
    """proposal/fixes/patched_dlpack.py, which cuts the series' functions out of a patched
    ``Module.cpp``."""
    from proposal.fixes import patched_dlpack

    return patched_dlpack


def dlpack_stack(base: pathlib.Path, work: pathlib.Path, name: str,
                 patches: list[pathlib.Path]) -> pathlib.Path:
    """A clone of the base with ``patches`` applied by git am; raises CheckFailed if one
    does not apply."""
    tree = work / f"dlpack-{name}"
    run(["git", "clone", "-q", str(base), str(tree)])
    for patch in patches:
        done = git_am(tree, patch)
        if done.returncode != 0:
            raise CheckFailed(f"{name}: {patch.parent.name}/{patch.name} does not apply:\n"
                              f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return tree


def build_patched_dlpack(tree: pathlib.Path, work: pathlib.Path, name: str) -> pathlib.Path:
    """The tree's patched DLPack functions, cut out and linked into a library; its path."""
    import torch.utils.cpp_extension as cpp_extension

    cutter = _load_patched_dlpack()
    patched = (tree / make_patch.MODULE_CPP).read_text()
    generated = work / f"dlpack-{name}-cut"
    got = cutter.write_include(generated, patched, f"{make_patch.MODULE_CPP} ({name})",
                               to_dlpack=True)
    # The tree's c10/core/TensorImpl.h (the series' accessor, inline) before the wheel's;
    # a tree of the changed files alone gets the installed header with the series' hunks.
    if (tree / TENSOR_IMPL_H).exists():
        (generated / TENSOR_IMPL_H).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tree / TENSOR_IMPL_H, generated / TENSOR_IMPL_H)
        header = f"the tree's {TENSOR_IMPL_H} first"
    else:
        written = cutter.write_tensor_impl(generated, DLPACK_PATCHES)
        header = f"the series' {TENSOR_IMPL_H} hunk applied to this torch's" if written else ""
    lib = generated / "libpatched_dlpack.so"
    paths = cpp_extension.library_paths()
    flags = ["-std=c++20", "-fPIC", "-O1", "-Wall", "-Wno-unused-function",
             "-DPATCHED_DLPACK_TO_DLPACK",
             f"-D_GLIBCXX_USE_CXX11_ABI={int(__import__('torch')._C._GLIBCXX_USE_CXX11_ABI)}",
             f"-I{generated}", *[f"-I{p}" for p in cpp_extension.include_paths()],
             f"-I{sysconfig.get_paths()['include']}"]
    done = run(["g++", *flags, "-shared", str(PATCHED_DLPACK_CPP), *[f"-L{p}" for p in paths],
                *[f"-Wl,-rpath,{p}" for p in paths], "-ltorch_python", "-ltorch_cpu", "-ltorch",
                "-lc10", "-o", str(lib)], check=False)
    if done.returncode != 0:
        raise CheckFailed(f"{name}: the cut-out DLPack functions do not compile:\n"
                          f"{done.stderr[-6000:]}")
    pieces = ", ".join(f"{n} (line {line})" for n, line, _ in got["pieces"])
    version = __import__("torch").__version__.split("+")[0]
    print(f"{name}: cut out of the patched {make_patch.MODULE_CPP} and compiled against the "
          f"torch {version} wheel's headers" + (f" ({header})" if header else "") + f": {pieces}")
    return lib


def run_dlpack_tests(tree: pathlib.Path, lib: pathlib.Path, name: str, tests: list[str]) -> None:
    """The named test/test_dlpack.py cases against ``lib``'s functions (conftest supplied)."""
    test_dir = tree / pathlib.Path(make_patch.TEST_DLPACK).parent
    shutil.copyfile(HERE / "dlpack_conftest.py", test_dir / "conftest.py")
    env = {**os.environ, "PATCHED_DLPACK_LIB": str(lib)}
    done = run([sys.executable, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA",
                pathlib.Path(make_patch.TEST_DLPACK).name, "-k", " or ".join(tests)],
               cwd=test_dir, env=env, check=False)
    (test_dir / "conftest.py").unlink()
    passed = re.findall(r"^PASSED \S+::\w+::(\w+?)_(?:cpu|cuda)\b", done.stdout, flags=re.M)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:]
    if done.returncode != 0 or sorted(set(passed)) != sorted(tests):
        raise CheckFailed(f"{name}: test/test_dlpack.py's cases {tests} against the patched "
                          f"functions: {summary}\n{done.stdout[-5000:]}{done.stderr[-2000:]}")
    print(f"{name}: test/test_dlpack.py {', '.join(tests)}: {summary} (against the cut-out "
          "functions, through copies of the wheel's two exchange tables: "
          "proposal/tools/dlpack_conftest.py, supplied, in neither the patch nor the base)")


def expect_dlpack_tests_fail(tree: pathlib.Path, lib: pathlib.Path, name: str,
                             later: pathlib.Path, tests: list[str], apply: bool = True) -> None:
    """The next patch's cases, added to this tree's test file (already there when not
    ``apply``), must fail against this stack's functions: each case tests what its own
    patch changes."""
    test_file = tree / make_patch.TEST_DLPACK
    original = test_file.read_text()
    added = run(["git", "-C", str(tree), "apply", "--include=" + make_patch.TEST_DLPACK,
                 str(later)], check=False) if apply else None
    if added is not None and added.returncode != 0:
        raise CheckFailed(f"{name}: {later.name}'s test cases do not apply here: {added.stderr}")
    test_dir = test_file.parent
    shutil.copyfile(HERE / "dlpack_conftest.py", test_dir / "conftest.py")
    done = run([sys.executable, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA",
                test_file.name, "-k", " or ".join(tests)],
               cwd=test_dir, env={**os.environ, "PATCHED_DLPACK_LIB": str(lib)}, check=False)
    (test_dir / "conftest.py").unlink()
    test_file.write_text(original)
    failed = set(re.findall(r"^FAILED \S+::\w+::(\w+?)_(?:cpu|cuda)\b", done.stdout, flags=re.M))
    if failed != set(tests):
        raise CheckFailed(f"{name}: {later.name[:4]}'s cases {tests} do not all fail without it "
                          f"(failed: {sorted(failed)}):\n{done.stdout[-3000:]}")
    print(f"{name}: dlpack/{later.name[:4]}'s cases fail here"
          + (", without it," if apply else "") + " as they must: " + ", ".join(sorted(failed)))


# dlpack/0001's cases that must fail without it, against the torch 2.15.0 wheel's own
# exchange functions; the others guard what it must not change and pass there too.
DLPACK_0001_FAILS_ON_WHEEL = ["test_dlpack_exchange_api_refuses_what_is_not_a_tensor",
                              "test_dlpack_exchange_api_managed_refuses_what_is_not_a_tensor"]


def expect_dlpack_tests_fail_on_wheel(tree: pathlib.Path, name: str, tests: list[str]) -> None:
    """dlpack/0001's cases, each in a process of its own, against the wheel's own
    ``dltensor_from_py_object_no_sync`` (no conftest: no patched slot): those in
    DLPACK_0001_FAILS_ON_WHEEL must fail (today they crash), the rest are reported."""
    test_dir = tree / pathlib.Path(make_patch.TEST_DLPACK).parent
    outcomes = []
    for test in tests:
        done = run([sys.executable, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA",
                    pathlib.Path(make_patch.TEST_DLPACK).name, "-k", test],
                   cwd=test_dir, env=os.environ.copy(), check=False)
        passed = re.search(rf"^PASSED \S+::\w+::{test}_(?:cpu|cuda)\b", done.stdout, flags=re.M)
        if done.returncode < 0:
            outcome = f"the process killed by {signal.Signals(-done.returncode).name}"
        elif passed and done.returncode == 0:
            outcome = "passed"
        else:
            lines = done.stdout.strip().splitlines()
            outcome = f"exit status {done.returncode}: {lines[-1] if lines else ''}"
        if test in DLPACK_0001_FAILS_ON_WHEEL and (passed or done.returncode == 0):
            raise CheckFailed(f"{name}: {test} passes against the wheel's own functions, "
                              f"without dlpack/0001:\n{done.stdout[-3000:]}")
        outcomes.append(f"{test}: {outcome}")
    print(f"negative control: {name}'s cases against the torch 2.15.0 wheel's own exchange "
          f"functions (no dlpack/0001): {'; '.join(outcomes)} (must fail: "
          f"{', '.join(DLPACK_0001_FAILS_ON_WHEEL)})")


# dlpack/0004's rule and the one it replaces (the Python key alone, all Module.cpp could
# test without the accessor); the case only the accessor catches.
ACCESSOR_RULE = "tensor.unsafeGetTensorImpl()->has_custom_metadata()"
PYTHON_KEY_RULE = "tensor.unsafeGetTensorImpl()->is_python_dispatch()"
ACCESSOR_ONLY_CASE = "test_dlpack_exchange_api_holds_python_device_tensors"


def expect_python_key_rule_misses(tree: pathlib.Path, work: pathlib.Path, name: str) -> None:
    """The series with dlpack/0004's rule put back to the Python key alone must fail the
    dispatch_device=True case (exact torch.Tensor and Parameter have no Python key) and
    still pass the Python-sizes one: the accessor is what catches the first."""
    cut = work / "dlpack-python-key-rule"
    run(["git", "clone", "-q", str(tree), str(cut)])
    module = cut / make_patch.MODULE_CPP
    text = module.read_text()
    if text.count(ACCESSOR_RULE) != 1:
        raise CheckFailed(f"{name}: expected dlpack/0004's rule `{ACCESSOR_RULE}` once")
    module.write_text(text.replace(ACCESSOR_RULE, PYTHON_KEY_RULE))
    lib = build_patched_dlpack(cut, work, "dlpack-python-key-rule")
    sizes = [t for t in make_patch.DLPACK_TESTS["0004"] if t != ACCESSOR_ONLY_CASE]
    run_dlpack_tests(cut, lib, f"{name} with the Python-key rule", sizes)
    expect_dlpack_tests_fail(cut, lib, f"{name} with the Python-key rule", DLPACK_PATCHES[-1],
                             [ACCESSOR_ONLY_CASE], apply=False)


def lint_dlpack(tree: pathlib.Path, name: str, count: int) -> None:
    """clang-format on the Module.cpp and TensorImpl.h lines, flake8 and ruff on the
    test_dlpack.py lines that the last ``count`` commits add: zero messages."""
    def ranges(rel):
        diff = git(tree, "diff", "-U0", f"HEAD~{count}", "HEAD", "--", rel)
        return [(int(a), int(a) + (1 if n == "" else int(n)) - 1) for a, n in
                re.findall(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@", diff, flags=re.M) if n != "0"]

    clang_format = make_patch.find_clang_format()
    messages, cpp_lines = [], {}
    for rel in (make_patch.MODULE_CPP, TENSOR_IMPL_H):
        cpp = ranges(rel)
        if not cpp:
            continue
        cpp_lines[rel] = sum(b - a + 1 for a, b in cpp)
        done = run([clang_format, "--dry-run", "--style=file",
                    *[f"--lines={a}:{b}" for a, b in cpp], rel], cwd=tree, check=False)
        messages += re.findall(r"^\S+?:\d+:\d+: (?:warning|error): .*$", done.stderr, flags=re.M)
    py = ranges(make_patch.TEST_DLPACK)
    bindir = pathlib.Path(sys.executable).parent
    for tool, cmd in (("flake8", [str(bindir / "flake8"), "--config=.flake8"]),
                      ("ruff", [str(bindir / "ruff"), "check", "--config=pyproject.toml",
                                "--no-cache", "--format=text"])):
        out = run([*cmd, make_patch.TEST_DLPACK], cwd=tree, check=False).stdout
        for line in out.splitlines():
            found = re.match(r"^\S+?:(\d+):\d+: ", line)
            if found and any(a <= int(found.group(1)) <= b for a, b in py):
                messages.append(f"{tool}: {line}")
    print(f"{name}: clang-format on "
          + " and ".join(f"{n} added lines of {rel}" for rel, n in cpp_lines.items())
          + f", flake8 and ruff on {sum(b - a + 1 for a, b in py)} added lines of "
          f"{make_patch.TEST_DLPACK}: {len(messages)} lint messages")
    for message in messages:
        print(f"  {message}")
    if messages:
        raise CheckFailed(f"{name}: {len(messages)} style-lint messages on the added lines")


def tidy_dlpack(generated: pathlib.Path, tree: pathlib.Path) -> None:
    """clang-tidy (pinned, PyTorch's .clang-tidy) on the cut-out DLPack functions: one
    translation unit, the harness (``patched_dlpack.cpp``) with the cut-out pieces written
    into it in place of its ``#include`` (clang-tidy filters out what an included file
    holds); zero diagnostics on the pieces' lines."""
    import torch.utils.cpp_extension as cpp_extension

    shutil.copyfile(tree / ".clang-tidy", generated / ".clang-tidy")
    harness = PATCHED_DLPACK_CPP.read_text()
    include = f'#include "{_load_patched_dlpack().INCLUDE_NAME}"\n'
    if harness.count(include) != 1:
        raise CheckFailed(f"{PATCHED_DLPACK_CPP.name} does not include the cut-out pieces once")
    pieces = (generated / _load_patched_dlpack().INCLUDE_NAME).read_text()
    first = harness[:harness.index(include)].count("\n") + 1
    last = first + pieces.count("\n") - 1
    unit = generated / "patched_dlpack_tidy.cpp"
    unit.write_text(harness.replace(include, pieces))
    done = run([find_clang_tidy(), "--extra-arg=-Wmissing-prototypes", str(unit), "--",
                "-std=c++20", "-DPATCHED_DLPACK_TO_DLPACK",
                f"-D_GLIBCXX_USE_CXX11_ABI={int(__import__('torch')._C._GLIBCXX_USE_CXX11_ABI)}",
                f"-I{generated}", *[f"-I{p}" for p in cpp_extension.include_paths()],
                f"-I{sysconfig.get_paths()['include']}"], cwd=generated, check=False)
    found = re.findall(r"^(.*?):(\d+):\d+: (?:error|warning): (.*) \[([\w,.-]+)\]$",
                       done.stdout, flags=re.M)
    if not re.search(r"warnings? generated", done.stdout + done.stderr) and done.returncode != 0:
        raise CheckFailed(f"clang-tidy did not run on the cut-out DLPack unit:\n{done.stderr[-3000:]}")
    ours = [f"line {line} of the unit: {message} [{check}]" for path, line, message, check in found
            if path.endswith(unit.name) and first <= int(line) <= last]
    print(f"clang-tidy {CLANG_TIDY_VERSION} on the cut-out DLPack functions (PyTorch's "
          f".clang-tidy): {len(ours)} lint messages on their lines"
          + (f"; {len(found) - len(ours)} on the harness's or torch's headers' lines, not the "
             "series'" if len(found) > len(ours) else ""))
    for message in ours:
        print(f"  {message}")
    if ours:
        raise CheckFailed(f"clang-tidy: {len(ours)} diagnostics on the DLPack series' lines")


def check_dlpack(base: pathlib.Path, work: pathlib.Path) -> None:
    """Step 8: each DLPack patch alone on its predecessors (applies, compiles, its tests
    pass, lint-clean), reproducible, and the whole proposal in its landing order."""
    if [p.name[:4] for p in DLPACK_PATCHES] != [n for n, _, _ in make_patch.DLPACK_SERIES]:
        raise CheckFailed(f"proposal/patches/dlpack/ holds {[p.name for p in DLPACK_PATCHES]}")
    regenerated = sorted((work / "regenerated" / "dlpack").glob("000*.patch"))
    if [p.name for p in regenerated] != [p.name for p in DLPACK_PATCHES] or not all(
            filecmp.cmp(a, b, shallow=False) for a, b in zip(regenerated, DLPACK_PATCHES)):
        raise CheckFailed("make_patch.py does not reproduce proposal/patches/dlpack/ byte for byte")
    print(f"dlpack/{', dlpack/'.join(p.name[:4] for p in DLPACK_PATCHES)}: regenerated byte for byte")
    for i, patch in enumerate(DLPACK_PATCHES):
        name = "dlpack " + "+".join(p.name[:4] for p in DLPACK_PATCHES[:i + 1])
        tree = dlpack_stack(base, work, name.replace(" ", "-").replace("+", "-"),
                            DLPACK_PATCHES[:i + 1])
        print(f"{name}: git am applies on the base" + (" alone" if i == 0 else ""))
        lib = build_patched_dlpack(tree, work, name.replace(" ", "-").replace("+", "-"))
        tests = [t for p in DLPACK_PATCHES[:i + 1] for t in make_patch.DLPACK_TESTS[p.name[:4]]]
        run_dlpack_tests(tree, lib, name, tests)
        if i == 0:
            expect_dlpack_tests_fail_on_wheel(tree, name, tests)
        if i + 1 < len(DLPACK_PATCHES):
            later = DLPACK_PATCHES[i + 1]
            if make_patch.DLPACK_TESTS[later.name[:4]]:
                expect_dlpack_tests_fail(tree, lib, name, later,
                                         make_patch.DLPACK_TESTS[later.name[:4]])
            else:
                print(f"{name}: dlpack/{later.name[:4]} adds no case (it must change no "
                      "behaviour: the cases before it are its tests)")
        lint_dlpack(tree, name, i + 1)
    expect_python_key_rule_misses(tree, work, name)
    tidy_dlpack(lib.parent, tree)
    by_key = {("", p.name[:4]): p for p in PATCHES}
    by_key.update({("dlpack", p.name[:4]): p for p in DLPACK_PATCHES})
    order = [by_key[key] for key in make_patch.LANDING_ORDER]
    tree = dlpack_stack(base, work, "landing-order", order)
    messages, same = version_lint_counts(tree)
    if messages or not same:
        raise CheckFailed(f"landing order: the version linter reports {messages} messages; "
                          f"registry as the usage linter writes it: {same}")
    print("landing order " + ", ".join(f"{s + '/' if s else ''}{n}" for s, n in
                                       make_patch.LANDING_ORDER)
          + ": git am applies each on the ones before it; version linter 0 messages and the "
          "registry as the usage linter writes it at the end")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=pathlib.Path, help="scratch directory (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = parser.parse_args(argv)
    work = args.work or pathlib.Path(tempfile.mkdtemp(prefix="patch-check-"))
    if args.work and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    print(describe_run(), flush=True)
    try:
        step("1. apply the patches to the reconstructed base (git am)")
        base, tree = apply_patches(work)
        variant_trees = apply_pr_variants(work)
        step("1b. the landing order: each patch on its predecessors, 0001 and 0002 alone "
             "on the base, the version linters after each step")
        check_order(base, work)
        step("2. regenerate the patches, and build them on the stored variants of main's "
             "2.16 block")
        check_reproducible(work / "base", work)
        check_variants(work)
        step("3. compile the touched C++ at feature version 2.16 (g++ -std=c++20)")
        objects = compile_libtorch(tree, work, variant_trees)
        step("4. symbols")
        check_symbols(objects)
        step("5. the patches' own code, executed: a test library of the patched translation "
             "units, the test modules, the patches' Python tests; 0001's test with its code "
             "installed into torch 2.15; 0002 built and tested alone")
        libdir = build_test_libraries(work, objects)
        run_noop_gtest(tree, work, libdir)
        site = build_test_modules(tree, work, libdir)
        run_patch_tests(tree, site, work)
        run_interpreter_fix_test(tree, work, variant_trees)
        count_instruction_entry(tree, work, variant_trees)
        check_conj_neg_alone(work)
        step("6. upstream's stable-shim linters")
        run_linters(tree)
        step("7. style lint of what the series adds (clang-format, flake8, ruff, clang-tidy)")
        run_style_linters(tree, work)
        step("8. the DLPack series (patches/dlpack/): each patch on its predecessors, its "
             "functions cut out and run, its tests, lint; the landing order")
        check_dlpack(base, work)
    except CheckFailed as failure:
        print(f"\npatch-check FAILED: {failure}", flush=True)
        return 1
    finally:
        if not args.keep and not args.work:
            shutil.rmtree(work, ignore_errors=True)
    print("\npatch-check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
