"""Build proposal/patches/000{1,2,3}-*.patch with git, from the PyTorch base and shim_ext.

Copies the assembled base (``--base``; default ``proposal/.upstream-base``, written
by ``tools/upstream_base.py``) into a scratch git repository, applies each change,
regenerates ``shim_function_versions.txt`` with PyTorch's own usage linter and runs
``git format-patch``; the DLPack series (``patches/dlpack/``) likewise, on
``torch/csrc/Module.cpp``. The patches are never edited by hand, and the code they add
is the prototype's (proposal/README.md: the landing order, ``LANDING_ORDER``, and
where each patch's code comes from).

Inserted C++ (except the header blocks) is formatted with clang-format and
PyTorch's root ``.clang-format`` (part of the base), on the inserted lines only. clang-format
comes from ``$CLANG_FORMAT``, PATH, or the ``clang-format`` PyPI package.

Usage: ``python3 proposal/tools/make_patch.py [--base DIR] [--out DIR]``.
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

HERE = pathlib.Path(__file__).resolve().parent  # proposal/tools/
PROPOSAL = HERE.parent
ROOT = PROPOSAL.parent
SRC = PROPOSAL / "patch_src"
SNIPPETS = SRC / "snippets"
SHIM_H = ROOT / "shim_ext" / "include" / "torch_borrow" / "prototype" / "shim.h"
PYOBJECT_H = ROOT / "shim_ext" / "include" / "torch_borrow" / "prototype" / "pyobject.h"
BORROW_CPP = ROOT / "shim_ext" / "borrow.cpp"
ENTRY_CPP = ROOT / "shim_ext" / "entry.cpp"
BLOCK_END_2_16 = "#endif // TORCH_FEATURE_VERSION >= TORCH_VERSION_2_16_0\n"
VERSIONS_TXT = "torch/csrc/stable/c/shim_function_versions.txt"
USAGE_LINTER = "tools/linter/adapters/stable_shim_usage_linter.py"
# The author line is the submitter's: until one sends the series, it says so.
# (.invalid is reserved, RFC 2606: no mail can reach it.)
AUTHOR_PLACEHOLDER = ("SUBMITTER NAME (placeholder)",
                      "submitter@example.invalid")
# Reproducible commits: a patch must not change when nothing it holds changes.
GIT_ENV = {
    "GIT_AUTHOR_NAME": AUTHOR_PLACEHOLDER[0],
    "GIT_AUTHOR_EMAIL": AUTHOR_PLACEHOLDER[1],
    "GIT_AUTHOR_DATE": "2026-11-30T00:00:00+00:00",
    "GIT_COMMITTER_NAME": AUTHOR_PLACEHOLDER[0],
    "GIT_COMMITTER_EMAIL": AUTHOR_PLACEHOLDER[1],
    "GIT_COMMITTER_DATE": "2026-11-30T00:00:00+00:00",
}
# The prototype's entry point reaches its Python-side half through its own
# registered interface; libtorch's reaches libtorch_python's through upstream's.
PROTOTYPE_CALL = "torch_borrow::detail::getBorrowConversionImpl()"
VTABLE_CALL = "torch::detail::getPyObjectConversionImpl()"
# The shim_ext markers of each stable-ABI patch, by what it adds (numbers move
# when the series is reordered).
BORROW_MARK, CONJ_NEG_MARK = "borrow", "conj-neg"
TENSOR_IMPL_H = "c10/core/TensorImpl.h"
# Prototype spelling -> main's, in the PythonImpl body.
PROTOTYPE_SPELLINGS = {
    "torch_borrow::detail::has_custom_metadata(*tensor.unsafeGetTensorImpl())":
        "tensor.unsafeGetTensorImpl()->has_custom_metadata()",
    "torch_borrow_thread_is_attached()": "THPUtils_hasAttachedThreadState()",
}
# The one attached-thread test: shim_ext's C header holds it (C99 and C++); the
# patch's C++ header takes the same lines with these C++ spellings.
THREAD_STATE_H = ROOT / "shim_ext" / "include" / "torch_borrow" / "thread_state.h"
ATTACHED_H = "torch/csrc/utils/attached_thread_state.h"
ATTACHED_SPELLINGS = {
    "static inline int torch_borrow_thread_is_attached(void) {":
        "inline bool THPUtils_hasAttachedThreadState() {",
    "    return 0;\n": "    return false;\n",
    "  return tstate ? 1 : 0;\n": "  return tstate != nullptr;\n",
}


def between(text: str, begin: str, end: str) -> str:
    """The lines strictly between the marker lines ``begin`` and ``end``."""
    start = text.index(begin)
    start = text.index("\n", start) + 1
    return text[start:text.index(end, start)].rsplit("\n", 1)[0] + "\n"


def header_block(mark: str) -> str:
    """The shim.h declarations of the patch marked ``mark`` (``BORROW_MARK``,
    ``CONJ_NEG_MARK``), as shim_ext declares them."""
    return between(SHIM_H.read_text(), f"// BEGIN shim.h {mark}", f"// END shim.h {mark}")


def pyobject_block() -> str:
    """The pyobject.h block of the borrow patch (``BorrowedTensor``), as shim_ext defines it."""
    return between(PYOBJECT_H.read_text(), "// BEGIN pyobject.h borrow", "// END pyobject.h borrow")


def prototype_impl_body() -> str:
    """The body of the prototype's tensor_borrow_from_pyobject, without its braces."""
    block = between(BORROW_CPP.read_text(), "// BEGIN PyObjectConversionPythonImpl.cpp body",
                    "// END PyObjectConversionPythonImpl.cpp body")
    lines = block.splitlines(keepends=True)
    first = next(i for i, l in enumerate(lines) if l.rstrip().endswith("{"))
    last = max(i for i, l in enumerate(lines) if l.rstrip() == "}")
    return "".join(lines[first + 1:last])


def python_impl_body() -> str:
    """The method body the patch adds: the prototype's, in main's spellings."""
    return respell(prototype_impl_body(), PROTOTYPE_SPELLINGS, BORROW_CPP)


def respell(text: str, spellings: dict[str, str], source: pathlib.Path) -> str:
    """``text`` with each key of ``spellings`` (which must occur exactly once) replaced."""
    for old, new in spellings.items():
        if text.count(old) != 1:
            raise SystemExit(f"{source.relative_to(ROOT)}: {old!r} occurs {text.count(old)} times")
        text = text.replace(old, new)
    return text


def attached_header() -> str:
    """The header 0001 adds: shim_ext's attached-thread test in C++ spellings."""
    function = between(THREAD_STATE_H.read_text(), "/* BEGIN attached_thread_state */",
                       "/* END attached_thread_state */")
    return ("#pragma once\n\n#include <torch/csrc/python_headers.h>\n"
            "#include <torch/csrc/utils/pythoncapi_compat.h>\n\n"
            + respell(function.strip("\n") + "\n", ATTACHED_SPELLINGS, THREAD_STATE_H))


def shim_common_block(patch: str) -> str:
    """The prototype's extern "C" entry points of ``patch``, as shim_common.cpp holds them."""
    block = between(ENTRY_CPP.read_text(), f"// BEGIN shim_common.cpp {patch}",
                    f"// END shim_common.cpp {patch}")
    if patch == BORROW_MARK and PROTOTYPE_CALL not in block:
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

    def write(self, rel: str, text: str) -> None:
        """Write a new file ``rel`` with ``text``."""
        (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (self.root / rel).write_text(text)

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
    """Call the linter's get_shim_functions / write_shim_function_versions in ``root``, and
    write the export list from the same functions (``EXPORTS_SYMS``, ``exports_writer``)."""
    code = ("import sys; sys.path.insert(0, '.');"
            "from pathlib import Path;"
            "from tools.linter.adapters import stable_shim_usage_linter as lint;"
            f"functions = lint.get_shim_functions({VERSIONED_HEADERS!r});"
            f"lint.write_shim_function_versions(functions, {VERSIONS_TXT!r});"
            f"exec(compile({exports_writer()!r}, {EXPORTS_WRITER!r}, 'exec'));"
            f"{EXPORTS_WRITER}(functions, {EXPORTS_SYMS!r})")
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True, capture_output=True)


# The stable export list, which the usage linter writes from the same functions as
# shim_function_versions.txt (pytorch/pytorch 2d089436's linter: "same main() keeps .txt
# and .syms in lockstep"). The base's copy of the linter has no such writer, so the
# writer is BASE.toml's [[excerpt]] of it, cut verbatim, called with the functions the
# base's linter finds.
EXPORTS_SYMS = "torch/csrc/stable/c/libtorch_stable_exports.syms"
EXPORTS_WRITER = "write_shim_function_dynamic_list"


def exports_writer() -> str:
    """The [[excerpt]] ``EXPORTS_WRITER``'s source, checked against its SHA-256."""
    import hashlib

    with (PROPOSAL / "third_party" / "pytorch" / "BASE.toml").open("rb") as f:
        (row,) = [r for r in tomllib.load(f).get("excerpt", []) if r["name"] == EXPORTS_WRITER]
    data = (PROPOSAL / "third_party" / "pytorch" / row["file"]).read_bytes()
    if hashlib.sha256(data).hexdigest() != row["sha256"]:
        raise SystemExit(f"{row['file']}: sha256 differs from BASE.toml's [[excerpt]]")
    return data.decode()


# What the TensorImpl accessor reads: c10::TensorImpl's own policy bit-fields
# (refresh_*_policy() folds the C++ custom_* and the Python python_custom_*
# bits into them, symbolic sizes included) and the Python dispatch key.
TENSOR_IMPL_ANCHOR = "    return key_set_.has_all(c10::python_ks);\n  }\n"
HAS_CUSTOM_METADATA = """
  // Whether a metadata getter (sizes, strides, dim, numel, device, layout) may
  // leave this TensorImpl's own fields: the Python dispatch key, or a
  // non-default sizes/strides, device or layout policy, C++ or Python.
  bool has_custom_metadata() const {
    return is_python_dispatch() ||
        sizes_strides_policy_ !=
        static_cast<uint8_t>(SizesStridesPolicy::Default) ||
        device_policy_ || layout_policy_;
  }
"""
INTEROP = "test/cpp_extensions/libtorch_agn_2_16_extension/csrc/pyobject_interop_module.cpp"


def apply_interpreter_fix(tree: Tree) -> None:
    """The PyInterpreter incref/decref fast path for a thread with an attached thread state,
    its header and its test."""
    rel = "torch/csrc/PyInterpreter.cpp"
    tree.write(ATTACHED_H, attached_header())
    tree.edit(rel, "#include <torch/csrc/THP.h>\n",
              f"#include <{ATTACHED_H}>\n")
    tree.edit(rel, "  // PyObjects stored in them.\n  if (!Py_IsInitialized())\n    return;\n",
              (SNIPPETS / "PyInterpreter-decref.cpp.txt").read_text(), fmt=True)
    tree.edit(rel, "void ConcretePyInterpreterVTable::incref(PyObject* pyobj) const {\n"
              "  if (!Py_IsInitialized())\n    return;\n",
              (SNIPPETS / "PyInterpreter-incref.cpp.txt").read_text(), fmt=True)
    for new_file in NEW_INTERPRETER_FIX:
        tree.add(new_file)
    # An entry of PyTorch's instruction-count benchmarks for the path the fix changes.
    tree.edit(INSTRUCTION_COUNTS, '    "Misc": {\n',
              (SNIPPETS / "instruction_counts-standard.py.txt").read_text(), before=True)


def apply_conj_neg(tree: Tree) -> None:
    """torch_is_conj / torch_is_neg, the Tensor methods, the _interop test module and the docs."""
    tree.edit("torch/csrc/stable/c/shim.h", BLOCK_END_2_16, header_block(CONJ_NEG_MARK) + "\n",
              before=True)
    tree.edit("torch/csrc/shim_common.cpp", "\n// Python interop conversions.",
              "\n" + shim_common_block(CONJ_NEG_MARK), before=True, fmt=True)
    tree.edit("torch/csrc/stable/tensor_struct.h",
              "    return has_storage;\n  }\n#endif // TORCH_FEATURE_VERSION >= TORCH_VERSION_2_14_0\n",
              (SNIPPETS / "tensor_struct.h.txt").read_text())
    tree.edit("docs/source/notes/libtorch_stable_abi.md", "\n## Migrating your kernel to the LibTorch",
              (SNIPPETS / "docs-conj-neg.md.txt").read_text(), before=True)
    for rel in NEW_CONJ_NEG:
        tree.add(rel)
    # The test, in the stable ABI's end-to-end test file (upstream's test/cpp/shim/README.md
    # and torch/csrc/stable/REVIEW.md): setUpClass builds the 2.16 extension as it builds
    # the 2.10 one, and the test joins the end of the class.
    tree.edit(AGNOSTIC_TEST, AGNOSTIC_SETUP_ANCHOR,
              (SNIPPETS / "test_libtorch_agnostic-setup.py.txt").read_text())
    tree.edit(AGNOSTIC_TEST, AGNOSTIC_CLASS_END,
              "\n" + (SNIPPETS / "test_libtorch_agnostic-conj-neg.py.txt").read_text()
              .rstrip("\n"), before=True)
    setup = "test/cpp_extensions/libtorch_agn_2_16_extension/setup.py"
    end = "            extra_link_args=[],\n        )\n    ]\n"
    tree.replace(setup, end, end.replace("        )\n    ]\n", "        ),\n")
                 + (SNIPPETS / "setup.py.txt").read_text() + "    ]\n")
    tree.regenerate_versions()


def apply_borrow(tree: Tree) -> None:
    """torch_tensor_borrow_from_pyobject, the vtable method, helper, docs and tests (on
    top of conj/neg; its metadata rule is TensorImpl's accessor, which DLPack 0004 adds)."""
    tree.edit("torch/csrc/stable/c/shim.h", BLOCK_END_2_16, header_block(BORROW_MARK) + "\n",
              before=True)
    tree.edit("torch/csrc/stable/pyobject.h", "HIDDEN_NAMESPACE_END(torch, stable)",
              pyobject_block() + "\n", before=True)
    tree.edit("torch/csrc/PyObjectConversion.h",
              "  virtual PyObject* device_to_pyobject(const at::Device& device) const = 0;\n",
              (SNIPPETS / "PyObjectConversion.h.txt").read_text())
    tree.edit("torch/csrc/PyObjectConversion.cpp", "};\n\nconst NoopPyObjectConversion noop_impl;",
              (SNIPPETS / "PyObjectConversion.cpp.txt").read_text(), before=True)
    tree.edit("torch/csrc/PyObjectConversionPythonImpl.cpp",
              "#include <torch/csrc/python_headers.h>\n", f"#include <{ATTACHED_H}>\n")
    body = "".join("  " + l if l.strip() else l for l in python_impl_body().splitlines(keepends=True))
    method = ("\n  const at::Tensor& tensor_borrow_from_pyobject(PyObject* obj) const override {\n"
              + body + "  }\n")
    tree.edit("torch/csrc/PyObjectConversionPythonImpl.cpp",
              "};\n\n// Registered once when libtorch_python is loaded", method, before=True, fmt=True)
    tree.edit("torch/csrc/shim_common.cpp", "// Most other dtypes defined in",
              shim_common_block(BORROW_MARK) + "\n", before=True, fmt=True)
    tree.edit("docs/source/notes/libtorch_stable_abi.md",
              "  `tensor_from_pyobject` (which errors on non-tensors)\n",
              (SNIPPETS / "docs-bullet.md.txt").read_text())
    tree.edit("docs/source/notes/libtorch_stable_abi.md", "\n## Migrating your kernel to the LibTorch",
              (SNIPPETS / "docs-section.md.txt").read_text(), before=True)
    tree.edit("test/cpp/shim/test_pyobject_conversion.cpp", "TEST(TorchPyObjectConversion, DtypeNoop",
              (SNIPPETS / "test_pyobject_conversion.cpp.txt").read_text(), before=True)
    tree.edit(INTEROP, "#include <torch/csrc/stable/tensor.h>\n", "\n#include <vector>\n")
    tree.edit(INTEROP, "PyMethodDef methods[] = {\n",
              (SNIPPETS / "interop-borrow-functions.cpp.txt").read_text(), before=True)
    tree.edit(INTEROP, "    {nullptr, nullptr, 0, nullptr}};\n",
              (SNIPPETS / "interop-borrow-methods.cpp.txt").read_text(), before=True)
    for rel in NEW_BORROW:
        tree.add(rel)
    tree.regenerate_versions()


# --- the DLPack series (patches/dlpack/): torch/csrc/Module.cpp's exchange API ----------------
# 0001 adds the real-type check (DLPackCheckTensor) to all four exchange functions, both
# structs' dltensor_from_py_object_no_sync and managed_tensor_from_py_object_no_sync
# (TorchDLPackExchangeAPI and the read-only TorchConstDLPackExchangeAPI); 0002 routes both
# dltensor functions through one borrowing helper and has the managed ones take their copy
# without the caster; 0003 and 0004 change only that helper,
# so every later step covers both structs by construction.
DLPACK_SRC = SRC / "dlpack"
MODULE_CPP = "torch/csrc/Module.cpp"
TEST_DLPACK = "test/test_dlpack.py"
DLPACK_STRUCT = "struct TorchDLPackExchangeAPI : public DLPackExchangeAPI {\n"
# Today's cast (the base), in all four functions: pybind11's caster, whose THPVariable_Check
# falls back to isinstance(), then its owning copy.
DLPACK_CAST = "      at::Tensor tensor = handle.cast<at::Tensor>();\n"
DLPACK_CHECK = """\
      if (!DLPackCheckTensor(handle.ptr())) {
        return -1;
      }
"""
# The two dltensor bodies after 0001: the check, the caster's owning copy, then the fill.
DLPACK_BODY = """\
    try {
      // Use handle (non-owning) to avoid unnecessary refcount operations
      py::handle handle(static_cast<PyObject*>(py_obj));
""" + DLPACK_CHECK + DLPACK_CAST + """\
      at::toDLPackNonOwning(tensor, out);
      return 0;
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
      return -1;
    }
"""
CONST_DLPACK_BODY = """\
    try {
      py::handle handle(static_cast<PyObject*>(py_obj));
""" + DLPACK_CHECK + DLPACK_CAST + """\
      at::toDLPackNonOwning(tensor, out, /*read_only=*/true);
      return 0;
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
      return -1;
    }
"""
DLPACK_CALL = """\
    return DLTensorFromPyObjectNonOwning(
        static_cast<PyObject*>(py_obj), out, /*read_only=*/{read_only});
"""
# managed_tensor_from_py_object_no_sync (both structs) after 0001, and after 0002: it keeps
# an owning copy (the DLManagedTensorVersioned it returns owns one by design), taken from the
# THPVariable directly, since the check has already done what the caster's check does.
MANAGED_CAST = """\
      py::handle handle(static_cast<PyObject*>(py_obj));
      if (!DLPackCheckTensor(handle.ptr())) {
        return -1;
      }
""" + DLPACK_CAST
MANAGED_UNPACKED = """\
      PyObject* obj = static_cast<PyObject*>(py_obj);
      if (!DLPackCheckTensor(obj)) {
        return -1;
      }
      at::Tensor tensor = THPVariable_Unpack(obj); // owned: *out holds it
"""
# _to_dlpack / _to_dlpack_versioned (THPModule_toDLPackImpl): the tensor after the copy or
# move the caller may ask for; and the anonymous namespace that opens before its capsule
# destructor, before which the refusal helper goes.
TO_DLPACK_COPY = "  auto src = at::maybeCopyTensor(data, optional_dl_device, copy);\n"
DLPACK_CAPSULE_NAMESPACE = "namespace {\n\ntemplate <class T>\nvoid DLPack_Capsule_Destructor("
DLPACK_BORROWED = "    const at::Tensor& tensor = THPVariable_Unpack(obj);\n"
DLPACK_FILL = "    at::toDLPackNonOwning(tensor, out, read_only);\n    return 0;\n"
TEST_HELPERS_ANCHOR = "\n\nclass TestTorchDlPack(TestCase):\n"
TEST_CASES_ANCHOR = "\n\ninstantiate_device_type_tests(TestTorchDlPack, globals())\n"


def add_dlpack_tests(tree: Tree, snippet: str) -> None:
    """The cases of ``patch_src/dlpack/<snippet>`` at the end of TestTorchDlPack."""
    tree.edit(TEST_DLPACK, TEST_CASES_ANCHOR, "\n" + (DLPACK_SRC / snippet)
              .read_text().rstrip("\n"), before=True)


def apply_dlpack_check(tree: Tree) -> None:
    """DLPack 0001: the real-type check in all four exchange functions (both structs'
    dltensor and managed functions; each keeps its caster and its copy), and the tests."""
    tree.edit(MODULE_CPP, DLPACK_STRUCT, (DLPACK_SRC / "check.cpp.txt").read_text(),
              before=True, fmt=True)
    path = tree.root / MODULE_CPP
    text = path.read_text()
    if text.count(DLPACK_CAST) != 4:
        raise SystemExit(f"{MODULE_CPP}: expected the four exchange functions' casts, found "
                         f"{text.count(DLPACK_CAST)}")
    path.write_text(text.replace(DLPACK_CAST, DLPACK_CHECK + DLPACK_CAST))
    tree.edit(TEST_DLPACK, TEST_HELPERS_ANCHOR, "\n\n" + (DLPACK_SRC / "test-helpers.py.txt")
              .read_text().rstrip("\n"), before=True)
    add_dlpack_tests(tree, "test-check.py.txt")


def apply_dlpack_borrow(tree: Tree) -> None:
    """DLPack 0002: both dltensor functions borrow (one helper, THPVariable_Unpack) instead
    of the caster's copy; the managed functions keep an owning copy, taken by
    THPVariable_Unpack after the check instead of through the caster. No new case: 0001's
    cases are what it must not change."""
    tree.edit(MODULE_CPP, DLPACK_STRUCT, (DLPACK_SRC / "borrow.cpp.txt").read_text(),
              before=True, fmt=True)
    tree.replace(MODULE_CPP, DLPACK_BODY, DLPACK_CALL.format(read_only="false"))
    tree.replace(MODULE_CPP, CONST_DLPACK_BODY, DLPACK_CALL.format(read_only="true"))
    path = tree.root / MODULE_CPP
    text = path.read_text()
    if text.count(MANAGED_CAST) != 2:
        raise SystemExit(f"{MODULE_CPP}: expected the two managed functions' checked casts, "
                         f"found {text.count(MANAGED_CAST)}")
    path.write_text(text.replace(MANAGED_CAST, MANAGED_UNPACKED))


def refuse(indent: str, tensor: str, fail: str) -> str:
    """The lines that refuse ``tensor`` when DLPackRefusal names a reason, at ``indent``,
    returning ``fail``."""
    return (f"{indent}if (const char* refusal = DLPackRefusal({tensor})) {{\n"
            f"{indent}  PyErr_SetString(PyExc_BufferError, refusal);\n"
            f"{indent}  return {fail};\n{indent}}}\n")


def apply_dlpack_conj_neg(tree: Tree) -> None:
    """DLPack 0003: refuse conjugate and negative views (BufferError) in every export of
    Module.cpp: _to_dlpack / _to_dlpack_versioned (to_dlpack, __dlpack__; after the copy
    the caller may ask for, which resolves the view) and the four exchange functions,
    through one helper; and the tests, one per export path."""
    tree.edit(MODULE_CPP, DLPACK_CAPSULE_NAMESPACE, (DLPACK_SRC / "conj-neg.cpp.txt")
              .read_text(), before=True, fmt=True)
    tree.edit(MODULE_CPP, TO_DLPACK_COPY, refuse("  ", "src", "nullptr"))
    tree.edit(MODULE_CPP, DLPACK_BORROWED, refuse("    ", "tensor", "-1"))
    path = tree.root / MODULE_CPP
    text = path.read_text()
    owned = MANAGED_UNPACKED.splitlines(keepends=True)[-1]
    if text.count(owned) != 2:
        raise SystemExit(f"{MODULE_CPP}: expected the two managed functions' copies, found "
                         f"{text.count(owned)}")
    path.write_text(text.replace(owned, owned + refuse("      ", "tensor", "-1")))
    add_dlpack_tests(tree, "test-conj-neg.py.txt")


def apply_dlpack_python_pin(tree: Tree) -> None:
    """DLPack 0004: TensorImpl's public accessor for every custom metadata policy, and an
    owning reference kept while the getters may run Python (a tensor it names), and the
    tests."""
    tree.edit(TENSOR_IMPL_H, TENSOR_IMPL_ANCHOR, HAS_CUSTOM_METADATA, fmt=True)
    tree.edit(MODULE_CPP, DLPACK_FILL, (DLPACK_SRC / "python-pin.cpp.txt").read_text(),
              before=True, fmt=True)
    add_dlpack_tests(tree, "test-python-pin.py.txt")


# The DLPack series in its own order: the first alone on the base, each later one on the
# ones before it. DLPACK_TESTS: the test/test_dlpack.py cases each patch adds (the borrow
# adds none: it must change no behaviour, which 0001's cases hold it to).
DLPACK_SERIES = (("0001", "DLPack real-type check", apply_dlpack_check),
                 ("0002", "DLPack borrow", apply_dlpack_borrow),
                 ("0003", "DLPack conj/neg", apply_dlpack_conj_neg),
                 ("0004", "DLPack Python-run getters", apply_dlpack_python_pin))
DLPACK_TESTS = {"0001": ["test_dlpack_exchange_api_dltensor",
                         "test_dlpack_exchange_api_managed_tensor",
                         "test_dlpack_exchange_api_refuses_what_is_not_a_tensor",
                         "test_dlpack_exchange_api_managed_refuses_what_is_not_a_tensor"],
                "0002": [],
                "0003": ["test_dlpack_exchange_api_refuses_conj_and_neg_views",
                         "test_dlpack_exchange_api_managed_refuses_conj_and_neg_views",
                         "test_to_dlpack_refuses_conj_and_neg_views",
                         "test_dlpack_refuses_neg_views"],
                "0004": ["test_dlpack_exchange_api_holds_python_sizes_tensors",
                         "test_dlpack_exchange_api_holds_python_device_tensors"]}
# Where the whole proposal lands (proposal/README.md and the RFC say the same): the
# interpreter fix, the DLPack series, conj/neg; the borrow held. (series folder, number).
LANDING_ORDER = (("", "0001"), ("dlpack", "0001"), ("dlpack", "0002"), ("dlpack", "0003"),
                 ("dlpack", "0004"), ("", "0002"), ("", "0003"))


def dlpack_commit_message(patch: str) -> str:
    """The commit message of DLPack ``patch``: its text, then where Module.cpp comes from."""
    with (PROPOSAL / "third_party" / "pytorch" / "BASE.toml").open("rb") as f:
        manifest = tomllib.load(f)
    row = next(r for r in manifest["file"] if r["path"] == MODULE_CPP)
    text = (DLPACK_SRC / f"{patch}-message.txt").read_text()
    return text + (f"\nBase: {MODULE_CPP} as {row['repository']} {row['commit']} holds it "
                   "(a fork's copy of main, see BASE.toml)\n")


def write_series(base: pathlib.Path, out: pathlib.Path, series, message, clang_format: str,
                 prefix: str) -> str:
    """Build ``series`` (``(patch, _, apply)`` triples) on a scratch copy of ``base``, one
    commit each with ``message(patch)``, and write them into ``out`` by ``git
    format-patch`` (its old ``000*.patch`` files replaced); returns the paths written,
    one a line. Raises ``subprocess.CalledProcessError`` when a git step fails."""
    with tempfile.TemporaryDirectory(prefix=prefix) as scratch:
        root = pathlib.Path(scratch)
        shutil.copytree(base, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git"))
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "base: the PyTorch files the patches touch or need")
        tree = Tree(root, clang_format)
        for patch, _, apply in series:
            apply(tree)
            git(root, "add", "-A")
            git(root, "commit", "-q", "-F", "-", stdin=message(patch))
        out.mkdir(parents=True, exist_ok=True)
        for old in out.glob("000*.patch"):
            old.unlink()
        return git(root, "format-patch", f"-{len(series)}", "--zero-commit",
                   "--no-signature", "--full-index", "-o", str(out.resolve())).strip()


def write_dlpack_series(base: pathlib.Path, out: pathlib.Path, clang_format: str) -> str:
    """Build the DLPack series on ``base`` into ``out`` (its 000*.patch replaced); returns
    the paths written, one a line."""
    return write_series(base, out, DLPACK_SERIES, dlpack_commit_message, clang_format,
                        "torch-dlpack-patch-")


# The series, in landing order: each patch's number, what it is, and the function
# that writes it into the tree.
SERIES = (("0001", "interpreter fix", apply_interpreter_fix),
          ("0002", "conj/neg", apply_conj_neg),
          ("0003", "borrow", apply_borrow))
# The numbers of the first cut (borrow, conj/neg, interpreter fix), for the table
# in proposal/README.md.
FIRST_CUT = {"0001": "0003", "0002": "0002", "0003": "0001"}

# Test files placed as upstream places them (libtorch_agn_2_15_extension's
# pyobject_interop_module.cpp is the precedent for an importable _interop module);
# 0002's test joins test_libtorch_agnostic.py's class, 0003's (held) stays a sibling file.
NEW_INTERPRETER_FIX = [
    "test/test_pyinterpreter_threads.py",
]
# benchmarks/instruction_counts (PyTorch's callgrind benchmarks): 0001 adds an entry whose
# statement passes a Tensor to a pybind11 function (BASE.toml: the stored copy).
INSTRUCTION_COUNTS = "benchmarks/instruction_counts/definitions/standard.py"
NEW_CONJ_NEG = [
    INTEROP,
]
# 0002's test goes into upstream's own file (BASE.toml: the newest stored copy).
AGNOSTIC_TEST = "test/cpp_extensions/test_libtorch_agnostic.py"
AGNOSTIC_SETUP_ANCHOR = ('            print(f"Skipping 2.10 extension (running on PyTorch '
                         '{torch.__version__})")\n')
AGNOSTIC_CLASS_END = "\n\n\ninstantiate_device_type_tests(TestLibtorchAgnostic, globals()"
# The test 0002 adds to the class, and its id once instantiated for the CPU.
CONJ_NEG_TEST_ID = (f"{AGNOSTIC_TEST}::TestLibtorchAgnosticCPU::"
                    "test_is_conj_and_is_neg_cpu")
NEW_BORROW = [
    "test/cpp_extensions/test_libtorch_agnostic_pyobject_borrow.py",
]


def git(tree: pathlib.Path, *args: str, stdin: str | None = None) -> str:
    """Run git in the scratch repository with the fixed identity and dates."""
    return subprocess.run(["git", "-C", str(tree), *args], check=True, input=stdin, text=True,
                          env={**os.environ, **GIT_ENV}, capture_output=True).stdout


def commit_message(patch: str) -> str:
    """The commit message of ``patch``: its text, then what the base is, named once.

    The base is assembled (files from several commits and the torch 2.15.0
    wheel's headers), so the line says so; each file's own commit, source and
    SHA-256 stay in ``third_party/pytorch/BASE.toml``.
    """
    with (PROPOSAL / "third_party" / "pytorch" / "BASE.toml").open("rb") as f:
        manifest = tomllib.load(f)
    text = (SRC / f"{patch}-message.txt").read_text()
    if any(apply is apply_interpreter_fix for number, _, apply in SERIES if number == patch):
        row = next(r for r in manifest["file"] if r["path"] == "torch/csrc/PyInterpreter.cpp")
        return text + (f"\nBase: {row['path']} as main has it: pytorch/pytorch "
                       f"{row['commit']} without {row['pr']}'s lines (see BASE.toml)\n")
    return text + (f"\nBase: assembled, see BASE.toml (pytorch/pytorch main at "
                   f"{manifest['main_commit']} for the stable-shim files)\n")


def pr_variant_message(row: dict):
    """The commit message of a patch built on ``row``'s PR variant: its own text
    (``patch_src/<name>/<patch>-message.txt``), then where the file comes from."""
    def message(patch: str) -> str:
        text = (SRC / row["name"] / f"{patch}-message.txt").read_text()
        return text + (f"\nBase: {row['path']} as {row['pr']}'s branch has it, pytorch/pytorch "
                       f"{row['commit']} (stored open; see BASE.toml's [[pr_variant]])\n")
    return message


def write_pr_variants(base: pathlib.Path, out: pathlib.Path, clang_format: str) -> str:
    """Each BASE.toml ``[[pr_variant]]``: its patches built on ``base`` with the variant's
    file as stored (the PR's lines included), into ``out/<name>/``; returns the paths
    written, one a line."""
    with (PROPOSAL / "third_party" / "pytorch" / "BASE.toml").open("rb") as f:
        rows = tomllib.load(f).get("pr_variant", [])
    written = []
    for row in rows:
        with tempfile.TemporaryDirectory(prefix="torch-pr-variant-") as scratch:
            variant = pathlib.Path(scratch)
            shutil.copytree(base, variant, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns(".git"))
            shutil.copyfile(PROPOSAL / "third_party" / "pytorch" / row["path"],
                            variant / row["path"])
            series = [s for s in SERIES if s[0] in row["patches"]]
            written.append(write_series(variant, out / row["name"], series,
                                        pr_variant_message(row), clang_format,
                                        f"torch-{row['name']}-patch-"))
    return "\n".join(written)


def main(argv: list[str] | None = None) -> int:
    """Build the series; print the patches' paths."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=pathlib.Path, default=PROPOSAL / ".upstream-base",
                        help="the assembled PyTorch base (proposal/tools/upstream_base.py)")
    parser.add_argument("--out", type=pathlib.Path, default=PROPOSAL / "patches")
    args = parser.parse_args(argv)
    if not (args.base / "torch/csrc/shim_common.cpp").exists():
        raise SystemExit(f"no base tree at {args.base}: run proposal/tools/upstream_base.py first")
    clang_format = find_clang_format()
    print(write_series(args.base, args.out, SERIES, commit_message, clang_format,
                       "torch-borrow-patch-"))
    print(write_dlpack_series(args.base, args.out / "dlpack", clang_format))
    print(write_pr_variants(args.base, args.out, clang_format))
    return 0


if __name__ == "__main__":
    sys.exit(main())
