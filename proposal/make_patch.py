"""Build proposal/patches/000{1,2,3}-*.patch with git, from the PyTorch base and shim_ext.

The patches are never edited by hand. This script copies the base tree
(``--base``; default ``proposal/.upstream-base``, assembled by
``proposal/upstream_base.py`` from ``proposal/upstream/BASE.toml``) into a
scratch git repository, commits it, applies each change, runs PyTorch's own
``stable_shim_usage_linter.py`` to regenerate ``shim_function_versions.txt``
exactly as upstream's lint does, commits, and runs ``git format-patch``. The
code the patches add comes from the prototype, so the two cannot differ:

0001 ``torch_tensor_borrow_from_pyobject``:
- ``torch/csrc/stable/c/shim.h``: the ``shim.h 0001`` block of
  ``shim_ext/include/torch_borrow/shim.h``, byte for byte, at the end of main's
  2.16 block;
- ``torch/csrc/stable/pyobject.h``: the ``pyobject.h 0001`` block of
  ``shim_ext/include/torch_borrow/pyobject.h`` (``tensor_borrow_from_pyobject``,
  returning the raw borrowed ``AtenTensorHandle``: no new wrapper type);
- ``torch/csrc/PyObjectConversion{.h,.cpp}``: the vtable method, appended at the
  end of the interface, and its erroring no-op;
- ``torch/csrc/PyObjectConversionPythonImpl.cpp``: the body of the prototype's
  ``tensor_borrow_from_pyobject`` (``shim_ext/borrow.cpp``) as a method, with
  2.15's real-type check and ``tensor_from_pyobject``'s messages, no helper;
- ``torch/csrc/shim_common.cpp``: the ``shim_common.cpp 0001`` block of
  ``shim_ext/borrow.cpp``, calling through the vtable, at the end of the Python
  interop section;
- the docs note, the no-op gtest, and the interop test module + Python test in
  ``libtorch_agn_2_16_extension`` (``proposal/patch_src``).

0002 ``torch_is_conj`` / ``torch_is_neg``: the ``shim.h 0002`` and
``shim_common.cpp 0002`` blocks (after ``torch_has_storage``), the
``torch::stable::Tensor::is_conj()/is_neg()`` methods (after ``has_storage()``,
as that 2.14 getter came), an op test in ``libtorch_agn_2_16_extension`` with
explicit wrappers in its ``ops.py`` (not through the ``__getattr__`` proxy, which
not every stored ``ops.py`` has), and the docs.

0003, a companion change outside the stable ABI: ``torch/csrc/PyInterpreter.cpp``'s
``ConcretePyInterpreterVTable::incref`` / ``decref`` skip the GIL acquisition when the
calling thread has an attached thread state (``PyGILState_Check()``) and Python is not
finalizing; every other thread takes the existing path. The inserted lines are
``patch_src/snippets/PyInterpreter-{decref,incref}.cpp.txt``, placed right after each
method's ``Py_IsInitialized()`` check.

The prototype's batched metadata read (``torch_tensor_get_metadata`` /
``torch_tensor_borrow_metadata_from_pyobject``, ``TorchTensorMetadata``: the
``prototype-only: batched read`` blocks of shim_ext's ``shim.h`` and ``entry.cpp``) was
withdrawn from the series: with the DLPack no-copy fix (``patch_src/sketches/dlpack-no-copy.md``),
torch's ``dltensor_from_py_object_no_sync`` costs about what the borrow plus the batched read
cost (``bench/results/callgrind-torch-2.15.0.md``, Routes and Attribution), so no new
metadata struct is proposed. shim_ext keeps the blocks: measured, not proposed.

Inserted C++ (except the header blocks) is formatted with clang-format and
PyTorch's root ``.clang-format`` (part of the base), on the inserted lines only. clang-format
comes from ``$CLANG_FORMAT``, PATH, or the ``clang-format`` PyPI package.

Usage: ``python3 proposal/make_patch.py [--base DIR] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
SRC = HERE / "patch_src"
SNIPPETS = SRC / "snippets"
SHIM_H = ROOT / "shim_ext" / "include" / "torch_borrow" / "shim.h"
PYOBJECT_H = ROOT / "shim_ext" / "include" / "torch_borrow" / "pyobject.h"
BORROW_CPP = ROOT / "shim_ext" / "borrow.cpp"
ENTRY_CPP = ROOT / "shim_ext" / "entry.cpp"
BLOCK_END_2_16 = "#endif // TORCH_FEATURE_VERSION >= TORCH_VERSION_2_16_0\n"
VERSIONS_TXT = "torch/csrc/stable/c/shim_function_versions.txt"
USAGE_LINTER = "tools/linter/adapters/stable_shim_usage_linter.py"
# Reproducible commits: a patch must not change when nothing it holds changes.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "torch_tensor_borrow_from_pyobject proposal",
    "GIT_AUTHOR_EMAIL": "proposal@localhost",
    "GIT_AUTHOR_DATE": "2026-11-30T00:00:00+00:00",
    "GIT_COMMITTER_NAME": "torch_tensor_borrow_from_pyobject proposal",
    "GIT_COMMITTER_EMAIL": "proposal@localhost",
    "GIT_COMMITTER_DATE": "2026-11-30T00:00:00+00:00",
}
# The prototype's entry point reaches its Python-side half through its own
# registered interface; libtorch's reaches libtorch_python's through upstream's.
PROTOTYPE_CALL = "torch_borrow::detail::getBorrowConversionImpl()"
VTABLE_CALL = "torch::detail::getPyObjectConversionImpl()"


def between(text: str, begin: str, end: str) -> str:
    """The lines strictly between the marker lines ``begin`` and ``end``."""
    start = text.index(begin)
    start = text.index("\n", start) + 1
    return text[start:text.index(end, start)].rsplit("\n", 1)[0] + "\n"


def header_block(patch: str) -> str:
    """The shim.h declarations of patch ``patch`` ("0001", "0002"), as shim_ext declares them."""
    return between(SHIM_H.read_text(), f"// BEGIN shim.h {patch}", f"// END shim.h {patch}")


def pyobject_block() -> str:
    """The pyobject.h helper of patch 0001, as shim_ext defines it."""
    return between(PYOBJECT_H.read_text(), "// BEGIN pyobject.h 0001", "// END pyobject.h 0001")


def python_impl_body() -> str:
    """The body of the prototype's tensor_borrow_from_pyobject, without its braces."""
    block = between(BORROW_CPP.read_text(), "// BEGIN PyObjectConversionPythonImpl.cpp body",
                    "// END PyObjectConversionPythonImpl.cpp body")
    lines = block.splitlines(keepends=True)
    first = next(i for i, l in enumerate(lines) if l.rstrip().endswith("{"))
    last = max(i for i, l in enumerate(lines) if l.rstrip() == "}")
    return "".join(lines[first + 1:last])


def shim_common_block(patch: str) -> str:
    """The prototype's extern "C" entry points of ``patch``, as shim_common.cpp holds them."""
    block = between(ENTRY_CPP.read_text(), f"// BEGIN shim_common.cpp {patch}",
                    f"// END shim_common.cpp {patch}")
    if patch == "0001" and PROTOTYPE_CALL not in block:
        raise SystemExit(f"shim_ext/entry.cpp no longer calls {PROTOTYPE_CALL!r}")
    block = block.replace(PROTOTYPE_CALL, VTABLE_CALL)
    return re.sub(r"^AOTITorchError ", "AOTI_TORCH_EXPORT AOTITorchError ", block, flags=re.M)


def insert_after(text: str, anchor: str, insertion: str) -> tuple[str, int]:
    """Insert after the first ``anchor``; return the text and the insertion's 1-based line."""
    at = text.index(anchor) + len(anchor)
    return text[:at] + insertion + text[at:], text[:at].count("\n") + 1


def insert_before(text: str, anchor: str, insertion: str) -> tuple[str, int]:
    """Insert before the first ``anchor``; return the text and the insertion's 1-based line."""
    at = text.index(anchor)
    return text[:at] + insertion + text[at:], text[:at].count("\n") + 1


def find_clang_format() -> str:
    """The clang-format executable, or exit saying how to get one."""
    candidates = [os.environ.get("CLANG_FORMAT"), shutil.which("clang-format")]
    try:
        import clang_format  # the PyPI wheel ships the binary

        candidates.append(str(pathlib.Path(clang_format.__file__).parent / "data" / "bin" / "clang-format"))
    except ImportError:
        pass
    for candidate in candidates:
        if candidate and pathlib.Path(candidate).exists():
            return candidate
    raise SystemExit("clang-format not found: set CLANG_FORMAT, or `pip install clang-format`")


class Tree:
    """The scratch PyTorch tree a patch is written into."""

    def __init__(self, root: pathlib.Path, clang_format: str):
        self.root, self.clang_format = root, clang_format

    def edit(self, rel: str, anchor: str, insertion: str, *, before: bool = False,
             fmt: bool = False) -> None:
        """Insert ``insertion`` after (or before) ``anchor`` in ``rel``; clang-format it if ``fmt``."""
        path = self.root / rel
        text = path.read_text()
        if text.count(anchor) != 1:
            raise SystemExit(f"{rel}: the anchor {anchor[:60]!r} occurs {text.count(anchor)} times")
        text, line = (insert_before if before else insert_after)(text, anchor, insertion)
        path.write_text(text)
        if fmt:
            subprocess.run([self.clang_format, "-i", "--style=file",
                            f"--lines={line}:{line + insertion.count(chr(10)) - 1}", str(path)],
                           check=True)

    def replace(self, rel: str, old: str, new: str) -> None:
        """Replace the one occurrence of ``old`` in ``rel``."""
        path = self.root / rel
        text = path.read_text()
        if text.count(old) != 1:
            raise SystemExit(f"{rel}: {old[:60]!r} occurs {text.count(old)} times")
        path.write_text(text.replace(old, new))

    def append(self, rel: str, text: str) -> None:
        """Append ``text`` to ``rel``."""
        path = self.root / rel
        path.write_text(path.read_text() + text)

    def add(self, rel: str) -> None:
        """Add a new file from proposal/patch_src."""
        (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SRC / rel, self.root / rel)

    def regenerate_versions(self) -> None:
        """Rewrite shim_function_versions.txt with upstream's stable_shim_usage_linter."""
        run_usage_linter_writer(self.root)


# The headers whose versioned declarations shim_function_versions.txt lists. The
# stored stable_shim_usage_linter.py reads the first seven by default; main's
# file also lists shim_mps.h's (stable/c/shim.h includes it), so it is named
# here: on the base, this list reproduces main's file byte for byte
# (make patch-check checks that).
VERSIONED_HEADERS = [
    "torch/csrc/stable/c/shim.h",
    "torch/csrc/inductor/aoti_torch/c/shim.h",
    "torch/csrc/inductor/aoti_torch/c/shim_mps.h",
    *[f"torch/csrc/inductor/aoti_torch/generated/c_shim_{d}.h"
      for d in ("aten", "cpu", "cuda", "mps", "xpu")],
]


def run_usage_linter_writer(root: pathlib.Path) -> None:
    """Call the linter's get_shim_functions / write_shim_function_versions in ``root``."""
    code = ("import sys; sys.path.insert(0, '.');"
            "from tools.linter.adapters import stable_shim_usage_linter as lint;"
            f"lint.write_shim_function_versions(lint.get_shim_functions({VERSIONED_HEADERS!r}),"
            f" {VERSIONS_TXT!r})")
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True, capture_output=True)


def apply_0001(tree: Tree) -> None:
    """torch_tensor_borrow_from_pyobject, its vtable method, helper, docs and tests."""
    tree.edit("torch/csrc/stable/c/shim.h", BLOCK_END_2_16, header_block("0001") + "\n",
              before=True)
    tree.edit("torch/csrc/stable/pyobject.h", "HIDDEN_NAMESPACE_END(torch, stable)",
              pyobject_block() + "\n", before=True)
    tree.edit("torch/csrc/PyObjectConversion.h",
              "  virtual PyObject* device_to_pyobject(const at::Device& device) const = 0;\n",
              (SNIPPETS / "PyObjectConversion.h.txt").read_text())
    tree.edit("torch/csrc/PyObjectConversion.cpp", "};\n\nconst NoopPyObjectConversion noop_impl;",
              (SNIPPETS / "PyObjectConversion.cpp.txt").read_text(), before=True)
    body = "".join("  " + l if l.strip() else l for l in python_impl_body().splitlines(keepends=True))
    method = ("\n  const at::Tensor& tensor_borrow_from_pyobject(PyObject* obj) const override {\n"
              + body + "  }\n")
    tree.edit("torch/csrc/PyObjectConversionPythonImpl.cpp",
              "};\n\n// Registered once when libtorch_python is loaded", method, before=True, fmt=True)
    tree.edit("torch/csrc/shim_common.cpp", "// Most other dtypes defined in",
              shim_common_block("0001") + "\n", before=True, fmt=True)
    tree.edit("docs/source/notes/libtorch_stable_abi.md",
              "  `tensor_from_pyobject` (which errors on non-tensors)\n",
              (SNIPPETS / "docs-bullet.md.txt").read_text())
    tree.edit("docs/source/notes/libtorch_stable_abi.md", "\n## Migrating your kernel to the LibTorch",
              (SNIPPETS / "docs-section.md.txt").read_text(), before=True)
    tree.edit("test/cpp/shim/test_pyobject_conversion.cpp", "TEST(TorchPyObjectConversion, DtypeNoop",
              (SNIPPETS / "test_pyobject_conversion.cpp.txt").read_text(), before=True)
    for rel in NEW_0001:
        tree.add(rel)
    setup = "test/cpp_extensions/libtorch_agn_2_16_extension/setup.py"
    end = "            extra_link_args=[],\n        )\n    ]\n"
    tree.replace(setup, end, end.replace("        )\n    ]\n", "        ),\n")
                 + (SNIPPETS / "setup.py.txt").read_text() + "    ]\n")
    tree.regenerate_versions()


def apply_0002(tree: Tree) -> None:
    """torch_is_conj / torch_is_neg, the Tensor methods, the op test and the docs."""
    tree.edit("torch/csrc/stable/c/shim.h", BLOCK_END_2_16, header_block("0002") + "\n",
              before=True)
    tree.edit("torch/csrc/shim_common.cpp", "\n// Python interop conversions.",
              "\n" + shim_common_block("0002"), before=True, fmt=True)
    tree.edit("torch/csrc/stable/tensor_struct.h",
              "    return has_storage;\n  }\n#endif // TORCH_FEATURE_VERSION >= TORCH_VERSION_2_14_0\n",
              (SNIPPETS / "tensor_struct.h.txt").read_text())
    tree.edit("docs/source/notes/libtorch_stable_abi.md", "\n## Migrating your kernel to the LibTorch",
              (SNIPPETS / "docs-conj-neg.md.txt").read_text(), before=True)
    # Explicit wrappers, as the package's own ops are wrapped; not the __getattr__
    # proxy, which not every stored ops.py of the extension has: where it is, the
    # wrappers go before it (the end of the explicit ones), else at the end.
    ops = "test/cpp_extensions/libtorch_agn_2_16_extension/libtorch_agn_2_16/ops.py"
    wrappers = (SNIPPETS / "ops.py.txt").read_text()
    if "\ndef __getattr__(name):\n" in (tree.root / ops).read_text():
        tree.edit(ops, "def __getattr__(name):\n", wrappers, before=True)
    else:
        tree.append(ops, "\n\n" + wrappers.rstrip("\n") + "\n")
    for rel in NEW_0002:
        tree.add(rel)
    tree.regenerate_versions()


def apply_0003(tree: Tree) -> None:
    """The PyInterpreter incref/decref fast path for a thread with an attached thread state."""
    rel = "torch/csrc/PyInterpreter.cpp"
    tree.edit(rel, "struct ConcretePyInterpreterVTable final\n",
              (SNIPPETS / "PyInterpreter-attached.cpp.txt").read_text(), before=True, fmt=True)
    tree.edit(rel, "  // PyObjects stored in them.\n  if (!Py_IsInitialized())\n    return;\n",
              (SNIPPETS / "PyInterpreter-decref.cpp.txt").read_text(), fmt=True)
    tree.edit(rel, "void ConcretePyInterpreterVTable::incref(PyObject* pyobj) const {\n"
              "  if (!Py_IsInitialized())\n    return;\n",
              (SNIPPETS / "PyInterpreter-incref.cpp.txt").read_text(), fmt=True)


# The series, in order: each patch's name and the function that writes it into the tree.
SERIES = (("0001", apply_0001), ("0002", apply_0002), ("0003", apply_0003))

# Test files placed as upstream places them (libtorch_agn_2_15_extension's
# pyobject_interop_module.cpp is the precedent for an importable _interop module).
NEW_0001 = [
    "test/cpp_extensions/libtorch_agn_2_16_extension/csrc/pyobject_interop_module.cpp",
    "test/cpp_extensions/test_libtorch_agnostic_pyobject_borrow.py",
]
NEW_0002 = [
    "test/cpp_extensions/libtorch_agn_2_16_extension/csrc/my_is_conj_neg.cpp",
    "test/cpp_extensions/test_libtorch_agnostic_conj_neg.py",
]


def git(tree: pathlib.Path, *args: str, stdin: str | None = None) -> str:
    """Run git in the scratch repository with the fixed identity and dates."""
    return subprocess.run(["git", "-C", str(tree), *args], check=True, input=stdin, text=True,
                          env={**os.environ, **GIT_ENV}, capture_output=True).stdout


def commit_message(patch: str) -> str:
    """The commit message of ``patch``: its text, then the base commit, named once.

    Each file's own commit, source and SHA-256 stay in ``upstream/BASE.toml``:
    that is provenance for this repository, not for the message PyTorch reads.
    """
    with (HERE / "upstream" / "BASE.toml").open("rb") as f:
        manifest = tomllib.load(f)
    text = (SRC / f"{patch}-message.txt").read_text()
    return text + f"\nBase: pytorch/pytorch main at {manifest['main_commit']}\n"


def main(argv: list[str] | None = None) -> int:
    """Build the series; print the patches' paths."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=pathlib.Path, default=HERE / ".upstream-base",
                        help="the assembled PyTorch base (proposal/upstream_base.py)")
    parser.add_argument("--out", type=pathlib.Path, default=HERE / "patches")
    args = parser.parse_args(argv)
    if not (args.base / "torch/csrc/shim_common.cpp").exists():
        raise SystemExit(f"no base tree at {args.base}: run proposal/upstream_base.py first")
    clang_format = find_clang_format()

    with tempfile.TemporaryDirectory(prefix="torch-borrow-patch-") as scratch:
        root = pathlib.Path(scratch)
        shutil.copytree(args.base, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git"))
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "base: the PyTorch files the patches touch or need")
        tree = Tree(root, clang_format)
        for patch, apply in SERIES:
            apply(tree)
            git(root, "add", "-A")
            git(root, "commit", "-q", "-F", "-", stdin=commit_message(patch))
        args.out.mkdir(parents=True, exist_ok=True)
        for old in args.out.glob("000*.patch"):
            old.unlink()
        written = git(root, "format-patch", f"-{len(SERIES)}", "--zero-commit", "--no-signature",
                      "--full-index", "-o", str(args.out.resolve())).strip()
    print(written)
    return 0


if __name__ == "__main__":
    sys.exit(main())
