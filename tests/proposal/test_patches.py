"""The upstream patches (proposal/patches/) against what can be checked in the test suite.

- they are git format-patch files on the base proposal/third_party/pytorch/BASE.toml names;
- the code they add is the prototype's code (shim_ext), so the two cannot drift apart;
- 0001's Python test passes when run against the prototype shim through a ctypes
  stand-in (proposal/tools/run_patch_test.py), and fails against a shim that gets the
  contract wrong.

`make patch-check` (proposal/tools/patch_check.py, run in CI) goes further: it applies the
patches to the assembled base, regenerates them byte for byte, compiles the touched
C++ at feature version 2.16, checks the symbols' C linkage with nm, builds the test
module for real and runs upstream's linters.
"""

from __future__ import annotations

import importlib.util
import gc
import itertools
import pathlib
import re
import subprocess
import sys
import tomllib
import types

import pytest
import torch
from helpers.paths import ROOT

PROPOSAL = ROOT / "proposal"
PATCHES = sorted((PROPOSAL / "patches").glob("000*.patch"))
ENTRY_CPP = ROOT / "shim_ext" / "entry.cpp"
SHIM_H = ROOT / "shim_ext" / "include" / "torch_borrow" / "prototype" / "shim.h"
# The series in landing order: the interpreter fix (a companion change inside
# libtorch_python's PyInterpreter, no new ABI), then the two stable-ABI patches.
INTERPRETER, CONJ_NEG, BORROW = "0001", "0002", "0003"
STABLE_ABI = [CONJ_NEG, BORROW]
PY_INTERPRETER = "torch/csrc/PyInterpreter.cpp"
# The batched metadata read is in no patch and not in shim_ext: bench/native/batched_read.cpp
# holds it, as a measured route.
BATCHED_READ = ROOT / "bench" / "native" / "batched_read.cpp"
WITHDRAWN_NAMES = ("TorchTensorMetadata", "torch_tensor_get_metadata",
                   "torch_tensor_borrow_metadata_from_pyobject", "borrow_metadata_batched")


def _load(name: str):
    """proposal/tools/<name>.py, loaded from its file (the folder is not a package)."""
    spec = importlib.util.spec_from_file_location(name.replace("/", "_"),
                                                  PROPOSAL / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_patch = _load("make_patch")
run_patch_test = _load("run_patch_test")
# shim_ext's BEGIN/END markers name each stable-ABI patch by what it adds.
MARK = {CONJ_NEG: make_patch.CONJ_NEG_MARK, BORROW: make_patch.BORROW_MARK}


def _stand_in_unavailable() -> str | None:
    """Why the patch's Python test cannot run here, or None: its ctypes stand-in calls
    shim_ext's functions and torch's per-thread message getter."""
    from bridge import _resolve, _select

    if _resolve.WHAT not in _select.resolution().symbols:
        return (f"torch {torch.__version__} exports no {_resolve.WHAT} (2.13+), which the "
                f"patch's test reads")
    return None


needs_stand_in = pytest.mark.skipif(_stand_in_unavailable() is not None,
                                    reason=str(_stand_in_unavailable()))


@pytest.fixture(scope="module")
def patches() -> dict[str, str]:
    assert [p.name[:4] for p in PATCHES] == [INTERPRETER, *STABLE_ABI], PATCHES
    return {p.name[:4]: p.read_text() for p in PATCHES}


@pytest.fixture(scope="module")
def patch_text(patches) -> str:
    return patches[BORROW]


def file_section(patch: str, path: str) -> str:
    """The diff section of one file in the patch."""
    start = patch.index(f"diff --git a/{path} b/{path}\n")
    end = patch.find("\ndiff --git ", start + 1)
    return patch[start:] if end < 0 else patch[start:end + 1]


def added_lines(patch: str, path: str) -> str:
    """The lines the patch adds to ``path``, joined (hunk by hunk, in order)."""
    body = file_section(patch, path).split("\n@@", 1)[1]
    return "".join(line[1:] + "\n" for line in body.splitlines()
                   if line.startswith("+") and not line.startswith("+++"))


def removed_lines(patch: str, path: str) -> list[str]:
    body = file_section(patch, path).split("\n@@", 1)[1]
    return [line for line in body.splitlines() if line.startswith("-") and not line.startswith("---")]


def normalized(code: str) -> str:
    """C++ with comment markers and all whitespace removed: comment text and every
    token kept, line breaks and indentation (which clang-format changes) dropped."""
    return "".join(re.sub(r"//+", " ", code).split())


def prototype_shim_common(mark: str) -> str:
    """The prototype's extern "C" block of marker ``mark``, as libtorch would hold it."""
    block = make_patch.between(ENTRY_CPP.read_text(), f"// BEGIN shim_common.cpp {mark}",
                               f"// END shim_common.cpp {mark}")
    return block.replace(make_patch.PROTOTYPE_CALL, make_patch.VTABLE_CALL)


def patch_shim_common(text: str) -> str:
    return added_lines(text, "torch/csrc/shim_common.cpp").replace("AOTI_TORCH_EXPORT ", "")


def method_body(cpp: str) -> str:
    """The statements of the first function in ``cpp``, without signature and braces."""
    lines = cpp.splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.rstrip().endswith("{"))
    last = max(i for i, line in enumerate(lines) if line.strip() == "}")
    return "".join(lines[first + 1:last])


# --- the patches are what they say ------------------------------------------------------------

def test_patches_are_a_three_commit_series_in_landing_order(patches):
    """The interpreter fix first, conj/neg, the borrow last; each commit holds only itself."""
    assert ("\nSubject: [PATCH 1/3] Skip the GIL acquisition in PyInterpreter incref/decref\n"
            " when the thread is attached\n") in patches[INTERPRETER]
    assert "\nSubject: [PATCH 2/3] [stable ABI] Add torch_is_conj and torch_is_neg\n" in patches[CONJ_NEG]
    assert "\nSubject: [PATCH 3/3] [stable ABI] Add torch_tensor_borrow_from_pyobject\n" in patches[BORROW]
    for text in patches.values():
        assert text.startswith("From 0000000000000000000000000000000000000000 ")
    # Nothing of the borrow rides in conj/neg, and the borrow adds nothing of conj/neg
    # (its shim.h and registry hunks have conj/neg's lines as context only).
    assert "borrow" not in patches[CONJ_NEG].split("\n---\n", 1)[1]
    # (BorrowedTensor's is_conj() / is_neg() call conj/neg's functions: a use, not a copy.)
    for path in re.findall(r"^diff --git a/(\S+) b/", patches[BORROW], flags=re.M):
        if path != "torch/csrc/stable/pyobject.h":
            assert "torch_is_conj" not in added_lines(patches[BORROW], path), path
    assert "torch_is_conj(" in file_section(patches[BORROW], "torch/csrc/stable/c/shim.h")


def test_author_is_an_explicit_placeholder(patches):
    name, email = make_patch.AUTHOR_PLACEHOLDER
    for text in patches.values():
        assert f'From: "{name}" <{email}>' in text
        assert email.endswith(".invalid") and "placeholder" in name
        assert "localhost" not in text


def test_commit_messages_are_in_pytorchs_style(patches):
    """A summary, the motivation, a Test Plan that says what ran and where, then apart
    what a PyTorch build must still show; what the base is, once; no per-file
    provenance (BASE.toml keeps it), no repeated lines, no path of this repository."""
    with (PROPOSAL / "third_party" / "pytorch" / "BASE.toml").open("rb") as f:
        manifest = tomllib.load(f)
    for name, text in patches.items():
        message = text.split("\n---\n", 1)[0].split("\n\n", 1)[1]
        assert "\nTest Plan:\nWhat ran (Linux x86-64, g++ 12.2, CPython 3.11.7, the torch 2.15.0 " \
            "wheel; the\nRFC's companion repository, `make patch-check`, whose output it " \
            "commits as\npatch-check.log; no PyTorch build):\n" in message, name
        assert "\n\nWhat only a PyTorch build and CI can show:\n" in message, name
        # No run that did not happen: a PyTorch test file is named only after that line.
        ran = message.split("What only a PyTorch build", 1)[0]
        assert "test/test_torch.py" not in ran and "test_autograd" not in ran, name
        base_line = (f"Base: assembled, see BASE.toml (pytorch/pytorch main at "
                     f"{manifest['main_commit']} for the stable-shim files)")
        # The interpreter fix touches one file, whose base line names it and its commit.
        (interpreter,) = [r for r in manifest["file"] if r["path"] == PY_INTERPRETER]
        if name == INTERPRETER:
            base_line = (f"Base: {PY_INTERPRETER} as main has it: pytorch/pytorch "
                         f"{interpreter['commit']} without {interpreter['pr']}'s lines "
                         "(see BASE.toml)")
        assert message.rstrip().endswith(base_line), name
        message = message.rstrip()[:-len(base_line)]
        if name != INTERPRETER:
            assert text.count(manifest["main_commit"]) == 1, name
        for row in manifest["file"]:
            if row["commit"] != manifest["main_commit"] and not (
                    name == INTERPRETER and row is interpreter):
                assert row["commit"] not in text, (name, row["path"])
        assert "unknown" not in message and "proposal/" not in message, name
        assert "BASE.toml" not in message and "shim_ext" not in message, name
        lines = [line for line in message.splitlines() if line.strip()]
        assert len(lines) == len(set(lines)), name


def test_upstream_lines_are_only_added_to(patches):
    """Nothing upstream is removed or changed, except the one line closing setup.py's list."""
    for text in patches.values():
        for path in re.findall(r"^diff --git a/(\S+) b/", text, flags=re.M):
            removed = removed_lines(text, path)
            if path.endswith("libtorch_agn_2_16_extension/setup.py"):
                assert removed == ["-        )"], removed
            else:
                assert removed == [], (path, removed)


def test_declarations_join_mains_2_16_block(patches):
    for name in STABLE_ABI:
        text = patches[name]
        added = added_lines(text, "torch/csrc/stable/c/shim.h")
        # No new block: the declarations go into main's existing 2.16 block.
        assert "#if TORCH_FEATURE_VERSION" not in added
        # One blank line between declarations (clang-format's MaxEmptyLinesToKeep: 1).
        assert added.strip("\n") == make_patch.header_block(MARK[name]).strip("\n")
        assert "\n\n\n" not in file_section(text, "torch/csrc/stable/c/shim.h").replace("\n+", "\n")
        hunk = file_section(text, "torch/csrc/stable/c/shim.h")
        assert "#endif // TORCH_FEATURE_VERSION >= TORCH_VERSION_2_16_0" in hunk.split("\n@@", 1)[1]
    assert "AtenTensorHandle* ret); // returns borrowed reference" in \
        make_patch.header_block(make_patch.BORROW_MARK)


def test_header_comment_names_every_api_that_takes_ownership():
    comment = make_patch.header_block(make_patch.BORROW_MARK)
    for api in ("aoti_torch_delete_tensor_object", "aoti_torch_assign_tensors",
                "torch::stable::Tensor", "StableIValue", "torch_call_dispatcher", "StableList"):
        assert api in comment, api
    # As short as its neighbours: the details live in the docs note.
    assert sum(1 for line in comment.splitlines() if line.startswith("//")) <= 12
    assert all(len(line) <= 80 for line in comment.splitlines())


def test_the_contract_is_minimal():
    """An attached thread state, py_obj alive, no Python run by the caller between the
    borrow and the handle's last use, failure = AOTI_TORCH_FAILURE with *ret unchanged,
    and the rule on metadata. Nothing frozen: no message prefix, no CPython primitive,
    no promise that a call without the GIL is refused, no storage paragraph, no set_()
    grouped with replacing the tensor."""
    comment = " ".join(make_patch.header_block(make_patch.BORROW_MARK).replace("//", " ").split())
    for phrase in ("The caller has an attached thread state and keeps py_obj alive",
                   "Fails (AOTI_TORCH_FAILURE, *ret unchanged)",
                   "metadata is not plain C++ state (the Python dispatch key; sizes, strides, "
                   "device or layout computed by a subclass or in Python)",
                   "if the caller runs no Python between the borrow and the handle's last use, "
                   "the stable getters on the handle run none either",
                   "It may be passed as an input of one operator call; borrow again after it "
                   "returns",
                   "torch::stable::Tensor::get()"):
        assert phrase in comment, phrase
    docs = " ".join((PROPOSAL / "patch_src" / "snippets" / "docs-section.md.txt").read_text().split())
    contract = docs.split("#### Data pointers of tensors without memory", 1)[0]
    for phrase in ("has an attached thread state", "keeps the Python object alive",
                   "is valid until something may run Python code or change the tensor",
                   "It may be passed as an input of one operator call",
                   "borrow again after it returns", "the operator call: it may enter a "
                   "`TorchDispatchMode`", "a garbage collection may run a `__del__`",
                   "without an attached one the borrow fails (\"no attached thread state\")",
                   "releasing the GIL", "a mutation in another thread",
                   "`Py_BEGIN_CRITICAL_SECTION(py_obj)`",
                   "(`AOTI_TORCH_FAILURE`, `*ret` unchanged)",
                   "The thread state is checked in every build, also once a subinterpreter "
                   "exists",
                   "`torch/csrc/inductor/aoti_torch/c/macros.h`",
                   '"Returns a borrowed reference to the underlying AtenTensorHandle"',
                   "`torch/csrc/stable/tensor_struct.h`", "`aoti_torch_assign_tensors`",
                   "`StableIValue`", "`torch_call_dispatcher`", "`StableList`"):
        assert phrase in contract, phrase
    for frozen in ("PyGILState_Check", "PyThreadState_GetUnchecked", "storage",
                   "torch_tensor_borrow_from_pyobject:", "always denotes"):
        assert frozen not in comment and frozen not in contract, frozen
    # The storage paragraph is a note of its own, about every handle.
    assert "This holds for every handle, owned or borrowed" in docs


def test_patch_tests_do_not_freeze_the_representation(patch_text):
    """No assertion on the handle's value: not equal across calls, not kept across
    swap_tensors (the contract leaves both unspecified)."""
    source = run_patch_test.new_file_from_patch(patch_text, run_patch_test.TEST_PATH)
    assert "borrow_handle" in source
    assert not re.search(r"assert\w*\([^\n]*borrow_handle", source)
    assert "handle = self.interop.borrow_handle" not in source


def test_every_error_message_names_the_function(patches):
    """Each TORCH_CHECK message the series adds starts with the C function the caller called."""
    cases = [(BORROW, "torch/csrc/shim_common.cpp", ("torch_tensor_borrow_from_pyobject",)),
             (BORROW, "torch/csrc/PyObjectConversionPythonImpl.cpp",
              ("torch_tensor_borrow_from_pyobject",)),
             (CONJ_NEG, "torch/csrc/shim_common.cpp", ("torch_is_conj", "torch_is_neg"))]
    for patch, path, names in cases:
        added = added_lines(patches[patch], path)
        messages = re.findall(r'TORCH_CHECK\(\s*[^;]*?,\s*"([^"]*)"', added)
        assert messages, (patch, path)
        for message in messages:
            assert message.startswith(names), (patch, path, message)


def test_registry_lists_the_new_functions_at_2_16(patches):
    assert added_lines(patches[BORROW], make_patch.VERSIONS_TXT) == \
        "torch_tensor_borrow_from_pyobject: TORCH_VERSION_2_16_0\n"
    assert added_lines(patches[CONJ_NEG], make_patch.VERSIONS_TXT) == \
        "torch_is_conj: TORCH_VERSION_2_16_0\ntorch_is_neg: TORCH_VERSION_2_16_0\n"


def test_batched_read_is_in_no_patch(patches):
    """The batched read lives in bench/ (a measured route); shim_ext and the patches
    hold none of it, and no marker in shim_ext names a block no patch takes."""
    assert "TorchTensorMetadata" in BATCHED_READ.read_text()
    for path in (SHIM_H, ENTRY_CPP):
        assert not any(name in path.read_text() for name in WITHDRAWN_NAMES), path.name
        marks = set(re.findall(r"^// (?:BEGIN|END) \S+ (\S+)$", path.read_text(), flags=re.M))
        assert marks == set(MARK.values()), (path.name, marks)
    for name, text in patches.items():
        for withdrawn in WITHDRAWN_NAMES:
            assert withdrawn not in text, (name, withdrawn)
    messages = sorted(m.name for m in (PROPOSAL / "patch_src").glob("*-message.txt"))
    assert messages == [f"{p.name[:4]}-message.txt" for p in PATCHES]
    assert not list((PROPOSAL / "patch_src" / "snippets").glob("*batched*"))


def test_pyobject_helper_returns_a_view_that_cannot_be_wrapped(patch_text):
    """The C++ helper returns torch::stable::BorrowedTensor: getters only, no destructor,
    not copyable, no member that hands out the handle (so no Tensor can be made from it:
    make patch-check compiles each misuse and requires the error), and to_owned()."""
    added = added_lines(patch_text, "torch/csrc/stable/pyobject.h")
    assert added == make_patch.pyobject_block() + "\n"
    assert "inline BorrowedTensor tensor_borrow_from_pyobject(void* py_obj) {" in added
    view = added[added.index("class BorrowedTensor {"):added.index("};\n", added.index(
        "class BorrowedTensor {"))]
    assert "~BorrowedTensor" not in view and "operator " not in view.replace("operator=", "")
    assert "BorrowedTensor(const BorrowedTensor&) = delete;" in view
    assert "AtenTensorHandle get()" not in view and "return ath_;" not in view
    assert "Tensor to_owned() const {" in view


# --- 0003: the PyInterpreter companion change ------------------------------------------------

# The interpreter fix's two series: on main's PyInterpreter.cpp (pybind11's guard, as
# v2.15.0), and on #189128's branch (stored as 02d90f32: SafeGilScopedAcquire).
INTERPRETER_SERIES = {"main": "  pybind11::gil_scoped_acquire gil;\n",
                      "pr-189128": "  torch::detail::SafeGilScopedAcquire gil;\n"}


def interpreter_base(series: str) -> str:
    """The base PyInterpreter.cpp of ``series``, as upstream_base.py assembles main's
    (the vendored copy without #189128's lines) or as stored (#189128's)."""
    stored = (PROPOSAL / "third_party" / "pytorch" / PY_INTERPRETER).read_text()
    if series == "pr-189128":
        return stored
    manifest = tomllib.loads((PROPOSAL / "third_party" / "pytorch" / "BASE.toml").read_text())
    (row,) = [r for r in manifest["file"] if r["path"] == PY_INTERPRETER]
    for edit in row["without"]:
        assert stored.count(edit["old"]) == edit["count"]
        stored = stored.replace(edit["old"], edit["new"])
    return stored


def interpreter_patch(series: str) -> str:
    folder = PROPOSAL / "patches" / ("" if series == "main" else series)
    (patch,) = [p for p in folder.glob("000*.patch") if f"+++ b/{PY_INTERPRETER}\n" in p.read_text()]
    return patch.read_text()


def _patched_py_interpreter(patch: str, tmp_path: pathlib.Path,
                            series: str = "main") -> tuple[str, str]:
    """The series' base PyInterpreter.cpp, and the same file with the interpreter fix
    applied alone (git apply)."""
    base = interpreter_base(series)
    (tmp_path / PY_INTERPRETER).parent.mkdir(parents=True)
    (tmp_path / PY_INTERPRETER).write_text(base)
    (tmp_path / "0001.patch").write_text(patch)
    # (the benchmark entry's file is not written here: its hunk is left out)
    subprocess.run(["git", "apply", f"--exclude={make_patch.INSTRUCTION_COUNTS}", "0001.patch"],
                   cwd=tmp_path, check=True, capture_output=True)
    return base, (tmp_path / PY_INTERPRETER).read_text()


def method(cpp: str, name: str) -> str:
    """The definition of ConcretePyInterpreterVTable::``name``, up to its closing brace."""
    start = re.search(rf"^\w+ ConcretePyInterpreterVTable::{name}\(", cpp, flags=re.M).start()
    return cpp[start:cpp.index("\n}\n", start) + 3]


def test_interpreter_fix_touches_only_py_interpreter_and_adds_the_snippets(patches):
    """PyInterpreter.cpp gains the header's include and the two snippets; the patch adds
    the header (shim_ext's one attached-thread test in C++ spellings) and its test."""
    assert re.findall(r"^diff --git a/(\S+) b/", patches[INTERPRETER], flags=re.M) == [
        make_patch.INSTRUCTION_COUNTS, "test/test_pyinterpreter_threads.py", PY_INTERPRETER,
        make_patch.ATTACHED_H]
    assert added_lines(patches[INTERPRETER], make_patch.INSTRUCTION_COUNTS) == (
        PROPOSAL / "patch_src" / "snippets" / "instruction_counts-standard.py.txt").read_text()
    snippets = [(PROPOSAL / "patch_src" / "snippets" / f"PyInterpreter-{m}.cpp.txt").read_text()
                for m in ("decref", "incref")]
    assert normalized(added_lines(patches[INTERPRETER], PY_INTERPRETER)) == normalized(
        f"#include <{make_patch.ATTACHED_H}>\n" + "".join(snippets))
    assert added_lines(patches[INTERPRETER], make_patch.ATTACHED_H) == make_patch.attached_header()
    assert added_lines(patches[INTERPRETER], "test/test_pyinterpreter_threads.py") == (
        PROPOSAL / "patch_src" / "test" / "test_pyinterpreter_threads.py").read_text()


def test_the_attached_thread_test_has_one_spelling_per_cpython():
    """The patch's header and shim_ext's differ only in the C / C++ spellings make_patch.py
    names; neither asks PyGILState_Check(), which a subinterpreter turns into yes."""
    ours = (ROOT / "shim_ext" / "include" / "torch_borrow" / "thread_state.h").read_text()
    theirs = make_patch.attached_header()
    for c_spelling, cpp_spelling in make_patch.ATTACHED_SPELLINGS.items():
        assert ours.count(c_spelling) == 1 and theirs.count(cpp_spelling) == 1
    for text in (ours, theirs):
        code = "\n".join(line for line in text.splitlines()
                         if not line.lstrip().startswith(("//", "/*", "*")))
        assert "PyGILState_Check" not in code
        assert "PyThreadState_GetUnchecked()" in code
        assert "PyGILState_GetThisThreadState()" in code


@pytest.mark.parametrize("series", sorted(INTERPRETER_SERIES))
def test_interpreter_fix_fast_path_comes_before_the_acquisition(series, tmp_path):
    """On both series' files: the fast path right before that file's guard; the same
    lines added; main's patch is patches/0001, #189128's patches/pr-189128/0001."""
    patch = interpreter_patch(series)
    assert added_lines(patch, PY_INTERPRETER) == added_lines(interpreter_patch("main"),
                                                             PY_INTERPRETER)
    base, patched = _patched_py_interpreter(patch, tmp_path, series)
    guard = INTERPRETER_SERIES[series].strip()
    for name in ("incref", "decref", "try_incref", "refcnt"):  # the refcount methods' guard
        assert guard in method(base, name) and all(
            other.strip() not in method(base, name) for other in INTERPRETER_SERIES.values()
            if other.strip() != guard), (series, name)
    for name, op in (("incref", "Py_INCREF(pyobj);"), ("decref", "Py_DECREF(pyobj);")):
        body = method(patched, name)
        initialized = body.index("if (!Py_IsInitialized())")
        fast = body.index("if (THPUtils_hasAttachedThreadState() && !Py_IsFinalizing()) {\n    " + op +
                          "\n    return;\n  }")
        assert initialized < fast < body.index(guard), name
        assert body.count(op) == 2, name  # the fast path's and the slow path's
    # try_incref and refcnt, which no at::Tensor copy reaches, are untouched.
    for name in ("try_incref", "refcnt"):
        assert method(patched, name) == method(base, name)
        assert "PyGILState_Check" not in method(patched, name)


def test_interpreter_fix_message_has_a_test_plan_and_no_figures(patches):
    message = patches[INTERPRETER].split("\n---\n", 1)[0]
    assert "\nTest Plan:\n" in message
    assert "SafeGilScopedAcquire" in message and "Py_GIL_DISABLED" in message
    assert not re.search(r"\d\s*(?:instructions|ns|%)|\d\.\d+x\b", message)


# --- the DLPack series (patches/dlpack/, on torch/csrc/Module.cpp) ---------------------------
DLPACK = sorted((PROPOSAL / "patches" / "dlpack").glob("000*.patch"))
MODULE_CPP = "torch/csrc/Module.cpp"


def test_dlpack_series_is_four_patches_on_module_cpp_and_its_tests():
    """A series of its own, the crash fix first: four commits, each touching Module.cpp
    (and, but for the borrow, PyTorch's test_dlpack.py); none of the stable-ABI series'
    files, but for the TensorImpl accessor the last one adds (the borrow calls it too)."""
    assert [p.name[:4] for p in DLPACK] == ["0001", "0002", "0003", "0004"]
    subjects = ["Check the real type in the exchange functions",
                "Borrow the tensor in dltensor_from_py_object_no_sync",
                "Refuse conjugate and negative views in every DLPack export",
                "Hold a reference while the export"]
    for i, (patch, subject) in enumerate(zip(DLPACK, subjects), 1):
        text = patch.read_text()
        assert f"Subject: [PATCH {i}/4] [DLPack] {subject}" in text.replace("\n ", " "), patch.name
        files = re.findall(r"^diff --git a/(\S+) ", text, flags=re.M)
        expected = [MODULE_CPP] if not make_patch.DLPACK_TESTS[patch.name[:4]] else \
            ["test/test_dlpack.py", MODULE_CPP]
        if patch is DLPACK[-1]:  # the accessor its rule and the borrow's call
            expected = [make_patch.TENSOR_IMPL_H, *expected]
        assert sorted(files) == expected, (patch.name, files)
        assert "\nTest Plan:\n" in text
        assert not re.search(r"\d\s*(?:instructions|ns\b|%)|\d\.\d+x\b", text.split("---\n")[0])


def test_dlpack_accessor_reads_every_policy_bit():
    """dlpack/0004's TensorImpl::has_custom_metadata(): the Python key and the three folded
    policy fields, C++ and Python; its rule calls it."""
    text = DLPACK[-1].read_text()
    accessor = added_lines(text, make_patch.TENSOR_IMPL_H)
    assert "  bool has_custom_metadata() const {" in accessor
    for member in ("is_python_dispatch()", "sizes_strides_policy_", "device_policy_",
                   "layout_policy_"):
        assert member in accessor, member
    assert "if (tensor.unsafeGetTensorImpl()->has_custom_metadata()) {" in \
        added_lines(text, MODULE_CPP)


def test_dlpack_series_changes_both_structs_through_one_helper():
    """0001 puts the real-type check into all four exchange functions and changes nothing
    else; 0002 routes both structs' DLTensorFromPyObjectNoSync through one borrowing helper
    (the managed functions keep an owning copy, without the caster); 0003 refuses conj /
    neg in every export of the file; 0004 copies only for a tensor whose getters may run
    Python (TensorImpl::has_custom_metadata(), which it adds)."""
    check, borrow, conj_neg, pin = (added_lines(p.read_text(), MODULE_CPP) for p in DLPACK)
    assert "PyObject_TypeCheck(" in check
    assert check.count("if (!DLPackCheckTensor(handle.ptr())) {") == 4
    assert not removed_lines(DLPACK[0].read_text(), MODULE_CPP)  # the check only adds
    assert "THPVariable_Unpack(obj)" not in check
    assert borrow.count("return DLTensorFromPyObjectNonOwning(") == 2
    assert "/*read_only=*/false);" in borrow and "/*read_only=*/true);" in borrow
    assert "const at::Tensor& tensor = THPVariable_Unpack(obj);" in borrow
    assert borrow.count("if (!DLPackCheckTensor(obj)) {") == 3
    assert borrow.count("at::Tensor tensor = THPVariable_Unpack(obj); // owned") == 2
    assert "handle.cast<at::Tensor>()" not in borrow
    removed = removed_lines(DLPACK[1].read_text(), MODULE_CPP)
    assert sum("handle.cast<at::Tensor>()" in line for line in removed) == 4
    assert "PyExc_BufferError" in conj_neg and "is_conj()" in conj_neg and "is_neg()" in conj_neg
    # every export of the file asks the one helper: _to_dlpack(_versioned), the borrowed
    # DLTensor and both managed functions
    assert conj_neg.count("if (const char* refusal = DLPackRefusal(") == 4
    assert "DLPackRefusal(src)" in conj_neg
    assert "BC-breaking note (module: bc-breaking):" in DLPACK[2].read_text()
    assert "has_custom_metadata()" in pin and "const at::Tensor owned = tensor;" in pin
    # the bits are refused before the export, with __dlpack__'s own words for conj
    message = "Can't export tensors with the conjugate bit set"
    assert message in conj_neg
    with pytest.raises(BufferError, match=re.escape(message)):
        torch.randn(2, dtype=torch.complex64).conj().__dlpack__()


def test_dlpack_tests_sit_beside_pytorchs_own():
    """The cases go into PyTorch's test/test_dlpack.py, in its TestTorchDlPack class,
    named as make_patch.DLPACK_TESTS lists them (what make patch-check runs per patch)."""
    for patch in DLPACK:
        if not make_patch.DLPACK_TESTS[patch.name[:4]]:
            continue
        added = added_lines(patch.read_text(), "test/test_dlpack.py")
        for name in make_patch.DLPACK_TESTS[patch.name[:4]]:
            assert f"    def {name}(self" in added, (patch.name, name)
    section = file_section(DLPACK[0].read_text(), "test/test_dlpack.py")
    assert " class TestTorchDlPack(TestCase):" in section


def test_the_landing_order_is_stated_where_the_ask_is():
    """Interpreter fix, the DLPack series, conj/neg; the borrow held: make_patch's order,
    the README and the RFC say the same."""
    assert make_patch.LANDING_ORDER == (("", "0001"), ("dlpack", "0001"), ("dlpack", "0002"),
                                        ("dlpack", "0003"), ("dlpack", "0004"), ("", "0002"),
                                        ("", "0003"))
    for doc in ("README.md", "RFC.md"):
        text = (PROPOSAL / doc).read_text()
        assert "patches/dlpack/" in text, doc
        assert "sketch" not in text.lower(), doc


def test_vendored_copies_match_the_manifest():
    """Every vendored file under proposal/third_party/pytorch/ has the SHA-256 BASE.toml records."""
    import hashlib

    with (PROPOSAL / "third_party" / "pytorch" / "BASE.toml").open("rb") as f:
        manifest = tomllib.load(f)
    rows = [row for row in manifest["file"]
            if row["source"] in ("vendored", "vendored-without-pr", "usage-linter-exports")]
    assert PY_INTERPRETER in {row["path"] for row in rows}
    for row in rows:
        data = (PROPOSAL / "third_party" / "pytorch" / row["path"]).read_bytes()
        # vendored-without-pr: the copy as stored; the assembled file drops the PR's lines;
        # usage-linter-exports: the copy as stored; the assembled file is the writer's.
        want = row["sha256"] if row["source"] == "vendored" else row["stored_sha256"]
        assert hashlib.sha256(data).hexdigest() == want, row["path"]
    for row in manifest.get("pr_variant", []):
        data = (PROPOSAL / "third_party" / "pytorch" / row["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == row["sha256"], row["name"]


# --- the patches and the prototype are the same code ------------------------------------------

def python_impl_method(patch_text: str) -> str:
    added = added_lines(patch_text, "torch/csrc/PyObjectConversionPythonImpl.cpp")
    signature = "  const at::Tensor& tensor_borrow_from_pyobject(PyObject* obj) const override {"
    assert signature in added
    return added[added.index(signature):]


def test_python_impl_method_is_the_prototype_function(patch_text):
    assert normalized(method_body(python_impl_method(patch_text))) == \
        normalized(make_patch.python_impl_body())
    # No helper rides along: the method and the attached-thread header's include are all
    # the patch adds to the file. Its thread test is the interpreter fix's header (not the
    # class's is_tensor_pyobject, whose PyGILState_Check() a subinterpreter turns into
    # yes), its type check the real type, and its metadata rule TensorImpl's accessor,
    # which the same patch adds.
    added = added_lines(patch_text, "torch/csrc/PyObjectConversionPythonImpl.cpp")
    include = f"#include <{make_patch.ATTACHED_H}>\n"
    assert added.startswith(include)
    assert added[len(include):].lstrip("\n").startswith(
        "  const at::Tensor& tensor_borrow_from_pyobject(")
    assert "THPUtils_hasAttachedThreadState()," in added
    assert "is_tensor_pyobject(" not in added
    code = "\n".join(line for line in added.splitlines() if not line.lstrip().startswith("//"))
    for copied in ("THPVariable_Check(", "PyGILState_Check(", "torch_borrow"):
        assert copied not in code, copied
    assert "!tensor.unsafeGetTensorImpl()->has_custom_metadata()," in added
    assert '"torch_tensor_borrow_from_pyobject: expected torch.Tensor, got ",' in added
    # The accessor is the DLPack series' (it lands first), not this patch's.
    assert f"diff --git a/{make_patch.TENSOR_IMPL_H} " not in patch_text


def test_the_prototype_spellings_are_what_the_patch_replaces():
    """Every prototype spelling make_patch.py replaces is in the prototype's body once."""
    body = make_patch.prototype_impl_body()
    for prototype in make_patch.PROTOTYPE_SPELLINGS:
        assert body.count(prototype) == 1, prototype
    assert "PyObject_TypeCheck(" in body and "THPVariableClass != nullptr" in body


@pytest.mark.parametrize("name", STABLE_ABI)
def test_shim_common_entry_points_are_the_prototype_ones(patches, name):
    assert normalized(patch_shim_common(patches[name])) == \
        normalized(prototype_shim_common(MARK[name]))


def test_the_drift_check_sees_a_one_token_change(patch_text):
    changed = prototype_shim_common(make_patch.BORROW_MARK).replace(
        '"torch_tensor_borrow_from_pyobject: ret must not be null"', '"ret may be null"', 1)
    assert changed != prototype_shim_common(make_patch.BORROW_MARK)
    assert normalized(patch_shim_common(patch_text)) != normalized(changed)
    body = make_patch.python_impl_body().replace("tensor.defined()", "true", 1)
    assert body != make_patch.python_impl_body()
    assert normalized(method_body(python_impl_method(patch_text))) != normalized(body)


def test_vtable_method_is_appended_at_the_end_of_the_interface(patch_text):
    section = file_section(patch_text, "torch/csrc/PyObjectConversion.h")
    header = added_lines(patch_text, "torch/csrc/PyObjectConversion.h")
    assert "virtual const at::Tensor& tensor_borrow_from_pyobject(\n      PyObject* obj) const = 0;" \
        in header
    # The hunk's context: the last method before, the end of the struct after.
    assert " virtual PyObject* device_to_pyobject(const at::Device& device) const = 0;\n+" in section
    assert section.split("const = 0;\n", 2)[-1].startswith(" };\n")
    noop = added_lines(patch_text, "torch/csrc/PyObjectConversion.cpp")
    assert "tensor_borrow_from_pyobject(" in noop and "TORCH_CHECK(false, kNoImplMsg);" in noop


def test_const_cast_carries_upstreams_nolint(patch_text):
    added = added_lines(patch_text, "torch/csrc/shim_common.cpp")
    lines = added.splitlines()
    i = next(i for i, line in enumerate(lines) if "const_cast" in line or "tensor_pointer_to_tensor_handle(" in line)
    assert lines[i - 1].strip() == "// NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast)"


def test_the_patches_regenerate_identically(tmp_path):
    """make_patch.py on the assembled base gives the committed files (torch 2.15.0 only:
    the base takes headers from that wheel; `make patch-check` runs this in CI)."""
    upstream_base = _load("upstream_base")
    manifest = upstream_base.load_manifest()
    if torch.version.git_version != manifest["wheel_commit"]:
        pytest.skip(f"the base's headers come from the torch {manifest['wheel_version']} wheel")
    try:
        make_patch.find_clang_format()
    except SystemExit:
        pytest.skip("clang-format is not installed (make patch-check installs it)")
    upstream_base.assemble(tmp_path / "base")
    subprocess.run([sys.executable, str(PROPOSAL / "tools" / "make_patch.py"), "--base", str(tmp_path / "base"),
                    "--out", str(tmp_path / "out")], check=True, capture_output=True)
    for patch in PATCHES:
        assert (tmp_path / "out" / patch.name).read_bytes() == patch.read_bytes()
    for patch in DLPACK:
        assert (tmp_path / "out" / "dlpack" / patch.name).read_bytes() == patch.read_bytes()
    # The landing order: the interpreter fix and conj/neg each apply alone on the base;
    # the borrow applies on top of conj/neg, not alone.
    alone = {patch.name[:4]: subprocess.run(
        ["git", "apply", "--check", str(patch)], cwd=tmp_path / "base",
        capture_output=True).returncode == 0 for patch in PATCHES}
    assert alone == {INTERPRETER: True, CONJ_NEG: True, BORROW: False}, alone


# --- (c) the patch's Python test, run against the prototype ------------------------------------

@needs_stand_in
def test_patch_test_passes_against_the_prototype():
    done = subprocess.run([sys.executable, "-P", str(PROPOSAL / "tools" / "run_patch_test.py"), "-v"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    tests = (PROPOSAL / "patch_src" / "test" / "cpp_extensions" /
             "test_libtorch_agnostic_pyobject_borrow.py").read_text().count("def test_")
    assert re.search(rf"Ran {tests} tests", done.stderr), done.stderr
    assert torch.__version__ in done.stdout


def _run_patch_test_against(interop: types.ModuleType, patch_text: str) -> "unittest.TestResult":
    import unittest

    run_patch_test.load_common_utils()
    package = types.ModuleType("libtorch_agn_2_16")
    package._interop = interop
    saved = sys.modules.get("libtorch_agn_2_16")
    sys.modules["libtorch_agn_2_16"] = package
    try:
        namespace: dict = {"__name__": "patch_test"}
        source = run_patch_test.new_file_from_patch(patch_text, run_patch_test.TEST_PATH)
        exec(compile(source, run_patch_test.TEST_PATH, "exec"), namespace)
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(
            namespace["TestLibtorchAgnosticPyObjectBorrow"])
        result = unittest.TestResult()
        suite.run(result)
        return result
    finally:
        if saved is None:
            sys.modules.pop("libtorch_agn_2_16", None)
        else:
            sys.modules["libtorch_agn_2_16"] = saved


@needs_stand_in
def test_patch_test_fails_against_a_shim_that_breaks_the_contract(patch_text):
    """A shim that trusts isinstance(), takes a reference per call (as an owned copy
    that is never freed would), lends tensors whose metadata may run Python and serves
    a stale snapshot after the tensor is replaced must fail the patch's test: the test
    is not one that always passes. (A new handle value per call breaks no contract: the
    test does not look.)"""
    real = _load("stand_in/libtorch_agn_2_16/_interop")  # what the broken one wraps
    broken = types.ModuleType("broken_interop")
    fresh, kept = itertools.count(1), []
    snapshots = {}

    def borrow_handle(obj):
        if not isinstance(obj, torch.Tensor):
            return real.borrow_handle(obj)
        kept.append(obj)  # a reference taken and never given back
        return next(fresh)

    def borrow_metadata(obj):
        kept.append(obj)  # keeps id(obj) unique while the snapshot is served
        return snapshots.setdefault(id(obj), real.borrow_metadata(obj))

    broken.borrow_handle, broken.borrow_metadata = borrow_handle, borrow_metadata
    broken.borrow_view, broken.read_around_clone = real.borrow_view, real.read_around_clone
    result = _run_patch_test_against(broken, patch_text)
    failed = {test.id().rsplit(".", 1)[1] for test, _ in result.failures + result.errors}
    assert failed == {"test_non_tensors_are_refused_by_real_type",
                      "test_tensors_whose_metadata_may_run_python_are_refused",
                      "test_borrow_takes_no_reference", "test_a_new_borrow_reads_the_replaced_tensor"}


@needs_stand_in
def test_patch_test_fails_against_a_reader_that_lets_python_run_mid_read(patch_text):
    """A reader that makes Python objects (so lets a collection run) between reading the
    sizes and the strides, as the module once did, fails the regression test and only it."""
    real = _load("stand_in/libtorch_agn_2_16/_interop")  # what the broken one wraps
    broken = types.ModuleType("mixed_interop")

    def borrow_metadata(obj):
        enabled = gc.isenabled()
        gc.disable()  # one collection exactly, where the old module let one run
        try:
            first = real.borrow_metadata(obj)
            gc.collect(0)  # what building the sizes tuple may do
            second = real.borrow_metadata(obj)
        finally:
            if enabled:
                gc.enable()
        return (first[0], first[1], second[2], *first[3:])

    broken.borrow_handle, broken.borrow_view = real.borrow_handle, real.borrow_view
    broken.borrow_metadata, broken.read_around_clone = borrow_metadata, real.read_around_clone
    result = _run_patch_test_against(broken, patch_text)
    failed = {test.id().rsplit(".", 1)[1] for test, _ in result.failures + result.errors}
    assert failed == {"test_metadata_is_copied_before_python_can_run"}


@needs_stand_in
def test_patch_test_fails_against_a_borrow_that_holds_a_reference(patch_text):
    """A "borrow" that is an owning copy (as torch_tensor_from_pyobject's is) gives a
    TorchDispatchMode inside an operator call the owned handle's use count, not one fewer:
    the test of that count fails, and only it."""
    real = _load("stand_in/libtorch_agn_2_16/_interop")  # what the broken one wraps
    broken = types.ModuleType("owning_interop")
    broken.borrow_handle, broken.borrow_view = real.borrow_handle, real.borrow_view
    broken.borrow_metadata = real.borrow_metadata
    broken.read_around_clone = lambda obj, owned: real.read_around_clone(obj, True)
    result = _run_patch_test_against(broken, patch_text)
    failed = {test.id().rsplit(".", 1)[1] for test, _ in result.failures + result.errors}
    assert failed == {"test_a_mode_inside_an_operator_call_sees_one_reference_fewer"}


# --- RFC.md and appendix.md: figures only in generated sections, rendered from JSON ------------

render = _load("render")
#: rendering the committed results computes intervals: proposal.stats' bootstrap, scipy's
#: (the bench extra; make rfc runs in that environment)
needs_scipy = pytest.mark.skipif(importlib.util.find_spec("scipy") is None,
                                 reason="no scipy here (the bench extra): the RFC's intervals "
                                        "are scipy's bootstrap")
TYPED_FIGURE = re.compile(r"\d[\d.,]*\s*(?:ns|us|µs|%)|\d\.\d+x\b")


def test_rfc_is_short_links_its_appendix_and_has_no_figure_outside_generated_sections():
    rfc = (PROPOSAL / "RFC.md").read_text()
    assert len(rfc.splitlines()) <= 200
    assert "(appendix.md)" in rfc
    names = set(re.findall(r"<!-- BEGIN generated: ([\w-]+) -->", rfc))
    assert {"ask", "verdicts", "routes", "consumers", "consumers-time",
            "free-threaded-line"} <= names
    for path in (PROPOSAL / "RFC.md", PROPOSAL / "appendix.md"):
        prose = render.MARKER.sub("", path.read_text())
        assert not TYPED_FIGURE.findall(prose), path.name


def test_rfc_cites_the_upstream_threads():
    rfc = (PROPOSAL / "RFC.md").read_text()
    for url in ("pytorch/pytorch/issues/180107", "pytorch/pytorch/pull/183323",
                "pytorch/pytorch/pull/192774", "pytorch/pytorch/pull/165483",
                "pytorch/pytorch/issues/55784", "NVIDIA/cuda-python/pull/1894",
                "NVIDIA/cuda-python/pull/2099"):
        assert f"https://github.com/{url}" in rfc


@needs_scipy
def test_committed_files_are_rendered():
    assert render.main(["--check"]) == 0


def _bench(python, groups, unavailable=None):
    """A pytest-benchmark JSON as python -m bench writes it: {group: {param: samples}}."""
    return {"machine_info": {"bench": {"python": python, "torch": "9.9.0"}},
            "evidence": {"unavailable": unavailable or {}},
            "benchmarks": [{"group": g, "param": p, "extra_info": {"samples_ns": s, "label": p}}
                           for g, rows in groups.items() for p, s in rows.items()]}


def test_render_reads_json_only_and_lists_what_is_missing(tmp_path):
    import json
    empty, warnings = render.render_all(tmp_path, tmp_path / "none.json")
    assert "not measured" in empty["routes"] and "not measured" in empty["consumers"]
    assert any("numba-cuda" in w for w in warnings)
    # A markdown report is never read: its figures must not appear.
    (tmp_path / "callgrind-torch-9.9.0.md").write_text("| owned | 777777 |\n")
    (tmp_path / "callgrind-torch-9.9.0.json").write_text(json.dumps(
        {"python": "3.11.0", "torch": "9.9.0",
         "per_call": {"route:owned": 850.0, "route:owned_fixed": 725.0}}))
    got, warnings = render.render_all(tmp_path, tmp_path / "none.json")
    assert "777777" not in got["routes"]
    assert "| owned: `torch_tensor_from_pyobject` + 7 getters + delete | " in got["routes"]
    assert "| 850 |" in got["routes"] and "| 725 |" in got["routes"]
    assert any("route:borrow_getters" in w for w in warnings)


def test_the_seed_consumer_gains_the_fixed_rows_when_its_file_has_them(tmp_path):
    import json
    seed = "6 seed consumer: cuda.core StridedMemoryView via each route"
    rows = {"owned": [140.0, 141.0, 139.0], "borrow": [84.0, 85.0, 83.0],
            "pointer": [77.0, 78.0, 76.0]}
    (tmp_path / "bench-torch-9.9.0.json").write_text(json.dumps(_bench("3.11.0", {seed: rows})))
    got, warnings = render.render_all(tmp_path, tmp_path / "none.json")
    line = next(l for l in got["consumers-time"].splitlines() if "StridedMemoryView" in l)
    assert "| 140.0 |" in line and "not measured in this consumer yet" in line
    assert any("no owned + fix row" in w for w in warnings)
    rows |= {"owned_fixed": [120.0, 121.0, 119.0], "dlpack_fixed": [70.0, 71.0, 69.0]}
    (tmp_path / "bench-torch-9.9.0.json").write_text(json.dumps(_bench("3.11.0", {seed: rows})))
    got, warnings = render.render_all(tmp_path, tmp_path / "none.json")
    line = next(l for l in got["consumers-time"].splitlines() if "StridedMemoryView" in l)
    # cuda.core reads handles: the borrow is set against owned + fix, never against fixed
    # DLPack (shown, a route it does not take)
    assert "| 120.0 |" in line and "| 70.0 |" in line and "36.0 ns (30.0% of owned + fix)" in line
    assert "of fixed DLPack" not in line
    assert not any("no owned + fix" in w for w in warnings)


def test_the_consumers_table_and_the_summary_lines_come_from_the_same_counts(tmp_path):
    """Each consumer's row and its Summary line (``verdicts``) from one set of counts: the
    cells per CPython, the fix that helps most in bold, the borrow beyond both fixes."""
    import json

    from proposal import consumers

    k = "launcher|{}|{}|1"
    counts = {k.format("unpack", "today"): 500, k.format("owned", "today"): 1300,
              k.format("dlpack", "today"): 1000, k.format("owned", "0001"): 1100,
              k.format("dlpack", "0001"): 900, k.format("dlpack", "dlpack"): 700,
              k.format("borrow", "today"): 800}
    for tag, py in consumers.CPYTHONS:
        (tmp_path / f"consumers-{tag}torch-9.9.0.json").write_text(json.dumps(
            {"python": py + ".0", "torch": "9.9.0", "per_call": counts}))
    got, warnings = render.render_all(tmp_path, tmp_path / "none.json")
    line = next(l for l in got["consumers"].splitlines() if "1 tensor + 2 ints" in l)
    assert "| 500 / 500 / 500 | 1,000 / 1,000 / 1,000 | 900 / 900 / 900 |" in line
    assert "**dlpack: -300 / -300 / -300 (-30.0%)**" in line
    assert "borrow, beyond both fixes: +100 / +100 / +100 (+14.3%)" in line
    assert "CPython 3.11.0 / 3.12.0 / 3.13.0" in got["consumers"]
    verdict = next(l for l in got["verdicts"].splitlines() if "private-unpack" in l)
    assert "the DLPack series saves 300" in verdict
    assert "the borrow saves nothing beyond both fixes" in verdict
    assert "costs +200 (+40.0%) over the private route it ships" in verdict
    assert any("cuda.core" in w for w in warnings)  # no cuda.core counts in these files


@needs_scipy
def test_the_race_table_is_read_per_reader():
    got, _ = render.render_all(render.RESULTS)
    import json
    data = json.loads(render.FREE_THREADED.read_text())
    info, rows = render.race_build(data, True)
    cell = next(x for x in rows if x["reader"] == "view_borrow" and x["mutation"] == "t.set_(x)"
                and not x["locked"])
    reads = cell["exact"] + cell["mixed"] + cell["raised"]
    line = next(l for l in got["free-threaded"].splitlines() if l.startswith("| borrow"))
    assert f"{reads:,} reads, {cell['mixed']:,} mixed" in line


def test_the_numba_suite_table_pools_its_processes(tmp_path):
    """The appendix's table of numba-cuda's own file: from several fresh processes per
    route, the median over them and the range of their torch / device-array ratios."""
    import json

    data = {"versions": {"numba-cuda": "0.30", "cuda-core": "1.2", "torch": "2.11",
                         "python": "3.12", "numpy": "2.3"}, "gpu": "g", "labels": {},
            "checks": {"failed": "not run here"}, "ab": {"26/signature": {"borrow": {
                "median_ns": 1e3}}}, "attribution": {},
            "numba": {"passes": 3, "test_files": [], "benchmark": {"borrow": {
                "tests": 12, "views": 7, "results": {},
                "pair_by_process": [[200e3, 100e3], [210e3, 120e3], [190e3, 90e3]]}}}}
    (tmp_path / "numba-cuda-gpu-g-torch-2.11.0.json").write_text(json.dumps(data))
    text = render.render_numba(render.Render(tmp_path))
    assert "3 fresh processes per route" in text
    assert "| borrow | 200.0 | 100.0 | 2.00x (1.75x .. 2.11x) | 7 |" in text
    # the control's own spread over the processes, said under the table
    assert "The device-array control, the same code on every route, takes 90.0 to 120.0 us" \
        in text


def test_a_negative_control_fails_when_the_test_passes_without_its_patch(tmp_path, capsys):
    """patch_check's negative control: a test that passes where its patch is not ends the
    check; one whose every test fails or errors is printed with its first error."""
    patch_check = _load("patch_check")
    passing, failing = tmp_path / "test_passing.py", tmp_path / "test_failing.py"
    passing.write_text("def test_ok():\n    pass\n")
    failing.write_text("def test_missing():\n    import no_such_module_here  # noqa: F401\n")
    with pytest.raises(patch_check.CheckFailed, match="does not fail as it must"):
        patch_check.expect_test_fails(passing, tmp_path, tmp_path / "run-passing", "here")
    patch_check.expect_test_fails(failing, tmp_path, tmp_path / "run-failing", "here")
    out = capsys.readouterr().out
    assert "negative control: test_failing.py here: 1 failed" in out
    assert "ModuleNotFoundError: No module named 'no_such_module_here'" in out
