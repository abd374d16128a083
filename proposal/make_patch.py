"""Build proposal/patches/0001-*.patch with git, from a PyTorch base tree and shim_ext.

The patch is never edited by hand. This script copies the files it touches from
a PyTorch source tree (``--base``; default ``proposal/.upstream-base``, the
reconstruction described in its SOURCES.md) into a scratch git repository,
commits them, applies the change and runs ``git format-patch``. The code the
patch adds comes from the prototype, so the two cannot differ:

- ``torch/csrc/stable/c/shim.h``: the block between ``// BEGIN shim.h hunk`` and
  ``// END shim.h hunk`` of ``shim_ext/include/torch_borrow/shim.h``, byte for
  byte (into the existing 2.16 block when the base already has one);
- ``torch/csrc/PyObjectConversionPythonImpl.cpp``: the body of
  ``tensor_borrow_from_pyobject`` from ``shim_ext/borrow.cpp``, as a method of
  ``ConcretePyObjectConversion``;
- ``torch/csrc/shim_common.cpp``: the ``shim_common.cpp body`` block of
  ``shim_ext/borrow.cpp``, calling through the vtable instead of the prototype's
  direct call, with ``AOTI_TORCH_EXPORT`` as its neighbours have it;
- the vtable entry, the erroring no-op, ``TORCH_VERSION_2_16_0``, the docs note
  and the test extension from ``proposal/patch_src``.

Inserted C++ (except the header hunk) is formatted with clang-format and
PyTorch's .clang-format, on the inserted lines only. clang-format comes from
``$CLANG_FORMAT``, PATH, or the ``clang-format`` PyPI package.

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

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
SRC = HERE / "patch_src"
SHIM_H = ROOT / "shim_ext" / "include" / "torch_borrow" / "shim.h"
BORROW_CPP = ROOT / "shim_ext" / "borrow.cpp"

MODIFIED = [
    "torch/csrc/stable/c/shim.h",
    "torch/csrc/stable/version.h",
    "torch/csrc/PyObjectConversion.h",
    "torch/csrc/PyObjectConversion.cpp",
    "torch/csrc/PyObjectConversionPythonImpl.cpp",
    "torch/csrc/shim_common.cpp",
    "docs/source/notes/libtorch_stable_abi.md",
]
NEW = [
    "test/cpp_extensions/libtorch_agn_2_16_extension/setup.py",
    "test/cpp_extensions/libtorch_agn_2_16_extension/libtorch_agn_2_16/__init__.py",
    "test/cpp_extensions/libtorch_agn_2_16_extension/csrc/pyobject_interop_module.cpp",
    "test/cpp_extensions/test_libtorch_agnostic_pyobject_borrow.py",
]
VERSION_2_16 = "#define TORCH_VERSION_2_16_0 (((0ULL + 2) << 56) | ((0ULL + 16) << 48))\n"
BLOCK_END_2_16 = "#endif // TORCH_FEATURE_VERSION >= TORCH_VERSION_2_16_0\n"
BLOCK_END_2_15 = "#endif // TORCH_FEATURE_VERSION >= TORCH_VERSION_2_15_0\n"
# Reproducible commits: the patch must not change when nothing it holds changes.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "torch_tensor_borrow_from_pyobject proposal",
    "GIT_AUTHOR_EMAIL": "proposal@localhost",
    "GIT_AUTHOR_DATE": "2026-11-29T00:00:00+00:00",
    "GIT_COMMITTER_NAME": "torch_tensor_borrow_from_pyobject proposal",
    "GIT_COMMITTER_EMAIL": "proposal@localhost",
    "GIT_COMMITTER_DATE": "2026-11-29T00:00:00+00:00",
}
# The prototype calls the Python-side half directly; libtorch calls it through
# the vtable that libtorch_python registers.
PROTOTYPE_CALL = "torch_borrow::tensor_borrow_from_pyobject("
VTABLE_CALL = "torch::detail::getPyObjectConversionImpl().tensor_borrow_from_pyobject("

COMMIT_MESSAGE = """\
[stable ABI] Add torch_tensor_borrow_from_pyobject, torch_is_conj, torch_is_neg

torch_tensor_from_pyobject (2.14) returns a new reference: a heap-allocated
at::Tensor copy that the caller deletes with aoti_torch_delete_tensor_object.
Extensions that only read a tensor's metadata while they hold the Python
object (DLPack-style bridges such as cuda.core's StridedMemoryView) pay that
allocation and refcount traffic on every call, or compute the handle from
THPVariable's private layout instead.

torch_tensor_borrow_from_pyobject returns a borrowed reference: the address of
the at::Tensor inside the THPVariable, reached through a new
PyObjectConversionInterface method that returns const at::Tensor&. It is valid
while the Python object lives, always denotes the tensor that object holds
(t.data = ..., set_() and swap_tensors show through it), and is never deleted.
The object must be a torch.Tensor by real type (PyObject_TypeCheck against
THPVariableClass), so an object that fakes __class__ is refused rather than
read as a THPVariable. Errors (null argument, GIL not held, not a tensor,
undefined tensor) return AOTI_TORCH_FAILURE with the per-thread message.

torch_is_conj and torch_is_neg expose the conjugate and negative bits, which
the stable ABI cannot otherwise see: a metadata-only reader (owned or borrowed
handle alike) would read a lazy conj() or neg view's memory as its values.

All three go into a new 2.16 block of torch/csrc/stable/c/shim.h, tested by a
new libtorch_agn_2_16_extension (an abi3 _interop module, as in 2.15) and
test_libtorch_agnostic_pyobject_borrow.py, and documented in
docs/source/notes/libtorch_stable_abi.md.

Base: v2.15.0. The context lines come from torch/csrc/stable/c/shim.h,
torch/csrc/stable/version.h and torch/csrc/PyObjectConversion.h as shipped in
the torch 2.15.0 wheel; torch/csrc/shim_common.cpp from main at
033b6bf2ad80709e94ce0705fd0607432bb734ec (its 2.15 Python interop section);
torch/csrc/PyObjectConversionPythonImpl.cpp from
149ccf4d07ae870432f5c35d21c2a00ddbbe5822 (v2.15.0 adds is_tensor_pyobject
above the hunk, which then applies at an offset); docs from
0431c5b7403fc3a3b1a66ee1d2760aacd4d4d6ab. On main, where the 2.16 block and
libtorch_agn_2_16_extension already exist, the declarations go into that block
and the interop module into that extension.
"""


def between(text: str, begin: str, end: str) -> str:
    """The lines strictly between the marker lines ``begin`` and ``end``."""
    start = text.index(begin)
    start = text.index("\n", start) + 1
    return text[start:text.index(end, start)].rsplit("\n", 1)[0] + "\n"


def header_hunk() -> str:
    """The shim.h hunk exactly as shim_ext declares it."""
    return between(SHIM_H.read_text(), "// BEGIN shim.h hunk", "// END shim.h hunk")


def python_impl_body() -> str:
    """The body of the prototype's tensor_borrow_from_pyobject, without its braces."""
    block = between(BORROW_CPP.read_text(), "// BEGIN PyObjectConversionPythonImpl.cpp body",
                    "// END PyObjectConversionPythonImpl.cpp body")
    lines = block.splitlines(keepends=True)
    first = next(i for i, l in enumerate(lines) if l.rstrip().endswith("{"))
    last = max(i for i, l in enumerate(lines) if l.rstrip() == "}")
    return "".join(lines[first + 1:last])


def shim_common_block() -> str:
    """The prototype's extern "C" entry points, as shim_common.cpp holds them."""
    block = between(BORROW_CPP.read_text(), "// BEGIN shim_common.cpp body",
                    "// END shim_common.cpp body")
    if PROTOTYPE_CALL not in block:
        raise SystemExit(f"shim_ext/borrow.cpp no longer calls {PROTOTYPE_CALL!r}")
    block = block.replace(PROTOTYPE_CALL, VTABLE_CALL)
    return re.sub(r"^AOTITorchError ", "AOTI_TORCH_EXPORT AOTITorchError ", block, flags=re.M)


def insert_after(text: str, anchor: str, insertion: str) -> tuple[str, int]:
    """Insert after the first ``anchor``; return the text and the insertion's 1-based line."""
    at = text.index(anchor) + len(anchor)
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


def format_lines(clang_format: str, path: pathlib.Path, first: int, count: int) -> None:
    """clang-format lines first..first+count-1 of path in place (PyTorch's style)."""
    subprocess.run([clang_format, "-i", "--style=file", f"--lines={first}:{first + count - 1}",
                    str(path)], check=True)


def apply_change(tree: pathlib.Path, clang_format: str) -> None:
    """Edit the base files in ``tree`` and add the new ones."""
    shim = tree / "torch/csrc/stable/c/shim.h"
    text, hunk = shim.read_text(), header_hunk()
    if BLOCK_END_2_16 in text:  # main: the 2.16 block exists, add the declarations to it
        inner = hunk.split("\n#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_16_0\n", 1)[1]
        inner = inner.rsplit(BLOCK_END_2_16, 1)[0]
        text = text.replace(BLOCK_END_2_16, inner.lstrip("\n").join(["\n", BLOCK_END_2_16]), 1)
    else:
        text, _ = insert_after(text, BLOCK_END_2_15 + "\n", hunk + "\n")
    shim.write_text(text)

    version = tree / "torch/csrc/stable/version.h"
    text = version.read_text()
    if "TORCH_VERSION_2_16_0" not in text:
        line_2_15 = next(l for l in text.splitlines(keepends=True) if "TORCH_VERSION_2_15_0 (" in l)
        text, _ = insert_after(text, line_2_15, VERSION_2_16)
        version.write_text(text)

    header = tree / "torch/csrc/PyObjectConversion.h"
    text, _ = insert_after(header.read_text(),
                           "virtual at::Tensor tensor_from_pyobject(PyObject* obj) const = 0;\n",
                           (SRC / "snippets/PyObjectConversion.h.txt").read_text())
    header.write_text(text)

    noop = tree / "torch/csrc/PyObjectConversion.cpp"
    text = noop.read_text()
    anchor = "at::Tensor tensor_from_pyobject(PyObject* /*obj*/) const override {\n"
    anchor += "    TORCH_CHECK(false, kNoImplMsg);\n  }\n"
    text, _ = insert_after(text, anchor, (SRC / "snippets/PyObjectConversion.cpp.txt").read_text())
    noop.write_text(text)

    impl = tree / "torch/csrc/PyObjectConversionPythonImpl.cpp"
    text = impl.read_text()
    body = "".join("  " + l if l.strip() else l for l in python_impl_body().splitlines(keepends=True))
    method = ("\n  const at::Tensor& tensor_borrow_from_pyobject(PyObject* obj) const override {\n"
              + body + "  }\n")
    anchor = "    return THPVariable_Unpack(obj);\n  }\n"
    text, line = insert_after(text, anchor, method)
    impl.write_text(text)
    format_lines(clang_format, impl, line, method.count("\n"))

    common = tree / "torch/csrc/shim_common.cpp"
    text = common.read_text()
    block = shim_common_block() + "\n"
    anchor = "// Most other dtypes defined in"
    at = text.index(anchor)
    line = text[:at].count("\n") + 1
    common.write_text(text[:at] + block + text[at:])
    format_lines(clang_format, common, line, block.count("\n"))

    docs = tree / "docs/source/notes/libtorch_stable_abi.md"
    text = docs.read_text()
    text, _ = insert_after(text, "  `tensor_from_pyobject` (which errors on non-tensors)\n",
                           (SRC / "snippets/docs-bullet.md.txt").read_text())
    text, _ = insert_after(text, "may run without the GIL (for example a boxed `STABLE_TORCH_LIBRARY` kernel),\n"
                                 "acquire it first.\n",
                           (SRC / "snippets/docs-section.md.txt").read_text())
    docs.write_text(text)

    for rel in NEW:
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SRC / rel, tree / rel)


def git(tree: pathlib.Path, *args: str) -> str:
    """Run git in the scratch repository with the fixed identity and dates."""
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", "-C", str(tree), *args], check=True, env=env,
                          capture_output=True, text=True).stdout


def main(argv: list[str] | None = None) -> int:
    """Build the patch; print its path."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=pathlib.Path, default=HERE / ".upstream-base",
                        help="a PyTorch tree holding the files the patch modifies")
    parser.add_argument("--out", type=pathlib.Path, default=HERE / "patches")
    args = parser.parse_args(argv)
    clang_format = find_clang_format()

    with tempfile.TemporaryDirectory(prefix="torch-borrow-patch-") as scratch:
        tree = pathlib.Path(scratch)
        git(tree, "init", "-q", "-b", "base")
        for rel in MODIFIED:
            (tree / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(args.base / rel, tree / rel)
        shutil.copyfile(args.base / ".clang-format", tree / ".clang-format")
        git(tree, "add", "--", *MODIFIED, ".clang-format")
        git(tree, "commit", "-q", "-m", "base: the PyTorch files the patch touches")
        apply_change(tree, clang_format)
        git(tree, "add", "--", *MODIFIED, *NEW)
        subprocess.run(["git", "-C", str(tree), "commit", "-q", "-F", "-"], input=COMMIT_MESSAGE,
                       text=True, check=True, env={**os.environ, **GIT_ENV})
        args.out.mkdir(parents=True, exist_ok=True)
        for old in args.out.glob("0001-*.patch"):
            old.unlink()
        written = git(tree, "format-patch", "-1", "--zero-commit", "--no-signature",
                      "--full-index", "-o", str(args.out.resolve())).strip()
    print(written)
    return 0


if __name__ == "__main__":
    sys.exit(main())
