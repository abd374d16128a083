"""The upstream patch (proposal/patches/) against what can be checked without building PyTorch.

- its header hunks apply to the headers the installed torch 2.15.0 ships (the patch's base);
- the code it adds is the prototype's code (shim_ext), so the two cannot drift apart;
- its Python test passes when run against the prototype shim (proposal/run_patch_test.py),
  and fails against a shim that gets the contract wrong.
"""

from __future__ import annotations

import importlib.util
import itertools
import pathlib
import re
import shutil
import subprocess
import sys
import types

import pytest
import torch
from packaging.version import Version

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROPOSAL = ROOT / "proposal"
PATCHES = sorted((PROPOSAL / "patches").glob("0001-*.patch"))
SHIM_H = ROOT / "shim_ext" / "include" / "torch_borrow" / "shim.h"
BORROW_CPP = ROOT / "shim_ext" / "borrow.cpp"
TORCH_INCLUDE = pathlib.Path(torch.__file__).parent / "include"
HEADERS = ["torch/csrc/stable/c/shim.h", "torch/csrc/stable/version.h",
           "torch/csrc/PyObjectConversion.h"]
PATCH_BASE_TORCH = (2, 15)


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, PROPOSAL / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_patch = _load("make_patch")
run_patch_test = _load("run_patch_test")


def _stand_in_unavailable() -> str | None:
    """Why the patch's Python test cannot run here, or None: its ctypes stand-in calls
    shim_ext's functions and torch's per-thread message getter."""
    from bridge import _resolve, _select, _support

    why = _support.shim_ext_unsupported()
    if why is None and _resolve.WHAT not in _select.resolution().symbols:
        why = (f"torch {torch.__version__} exports no {_resolve.WHAT} (2.13+), which the "
               f"patch's test reads")
    return why


needs_stand_in = pytest.mark.skipif(_stand_in_unavailable() is not None,
                                    reason=str(_stand_in_unavailable()))


@pytest.fixture(scope="module")
def patch_text() -> str:
    assert len(PATCHES) == 1, f"expected one 0001-*.patch, found {PATCHES}"
    return PATCHES[0].read_text()


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


def normalized(code: str) -> str:
    """C++ with comment markers and all whitespace removed: comment text and every
    token kept, line breaks and indentation (which clang-format changes) dropped."""
    return "".join(re.sub(r"//+", " ", code).split())


def prototype_shim_common() -> str:
    """The prototype's extern "C" block, in the form libtorch would hold it."""
    block = make_patch.between(BORROW_CPP.read_text(), "// BEGIN shim_common.cpp body",
                               "// END shim_common.cpp body")
    return block.replace(make_patch.PROTOTYPE_CALL, make_patch.VTABLE_CALL)


def patch_shim_common(patch: str) -> str:
    return added_lines(patch, "torch/csrc/shim_common.cpp").replace("AOTI_TORCH_EXPORT ", "")


def method_body(cpp: str) -> str:
    """The statements of the first function in ``cpp``, without signature and braces."""
    lines = cpp.splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.rstrip().endswith("{"))
    last = max(i for i, line in enumerate(lines) if line.strip() == "}")
    return "".join(lines[first + 1:last])


# --- the patch is what it says ---------------------------------------------------------------

def test_patch_is_a_format_patch_touching_the_expected_files(patch_text):
    assert patch_text.startswith("From 0000000000000000000000000000000000000000 ")
    assert "\nSubject: [PATCH] [stable ABI] Add torch_tensor_borrow_from_pyobject" in patch_text
    touched = set(re.findall(r"^diff --git a/(\S+) b/", patch_text, flags=re.M))
    assert touched == set(make_patch.MODIFIED) | set(make_patch.NEW)
    for path in make_patch.NEW:
        assert "\nnew file mode 100644\n" in file_section(patch_text, path)
    for path in make_patch.MODIFIED:  # additions only: nothing upstream is changed or removed
        body = file_section(patch_text, path).split("\n@@", 1)[1]
        assert not [line for line in body.splitlines()
                    if line.startswith("-") and not line.startswith("---")], path


def test_commit_message_names_the_base(patch_text):
    message = patch_text.split("\n---\n", 1)[0]
    assert "Base: v2.15.0" in message
    assert "033b6bf2ad80709e94ce0705fd0607432bb734ec" in message


def test_declarations_sit_in_the_2_16_block_with_ownership_comments(patch_text):
    added = added_lines(patch_text, "torch/csrc/stable/c/shim.h")
    assert added.startswith("/**\n * The beginning of all shims added in 2.16.0 onwards.\n */\n"
                            "#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_16_0\n")
    assert added.rstrip("\n").endswith("#endif // TORCH_FEATURE_VERSION >= TORCH_VERSION_2_16_0")
    declared = re.findall(r"AOTI_TORCH_EXPORT AOTITorchError\s+(torch_\w+)\(", added)
    assert declared == ["torch_tensor_borrow_from_pyobject", "torch_is_conj", "torch_is_neg"]
    assert "AtenTensorHandle* ret); // returns borrowed reference" in added
    assert make_patch.VERSION_2_16 == added_lines(patch_text, "torch/csrc/stable/version.h")


# --- (a) the header hunks apply to the released headers ---------------------------------------

@pytest.mark.skipif(Version(torch.__version__).release[:2] != PATCH_BASE_TORCH,
                    reason="the patch's base is v2.15.0: its header hunks are checked "
                           "against torch 2.15.0's installed headers")
def test_header_hunks_apply_to_the_installed_headers(patch_text, tmp_path):
    for rel in HEADERS:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(TORCH_INCLUDE / rel, tmp_path / rel)
    (tmp_path / "0001.patch").write_text(patch_text)
    include = [f"--include={rel}" for rel in HEADERS]
    subprocess.run(["git", "apply", "--check", *include, "0001.patch"], cwd=tmp_path, check=True)
    subprocess.run(["git", "apply", *include, "0001.patch"], cwd=tmp_path, check=True)
    patched = (tmp_path / HEADERS[0]).read_text()
    # The new block follows the 2.15 block, inside extern "C", and is the prototype's hunk.
    assert make_patch.header_hunk() in patched
    assert (patched.index(make_patch.BLOCK_END_2_15) < patched.index(make_patch.header_hunk())
            < patched.index('} // extern "C"'))
    assert "TORCH_VERSION_2_16_0 (" in (tmp_path / HEADERS[1]).read_text()
    assert "tensor_borrow_from_pyobject(PyObject* obj)" in (tmp_path / HEADERS[2]).read_text()


# --- (b) the patch and the prototype are the same code ----------------------------------------

def test_shim_h_hunk_is_the_prototype_header_byte_for_byte(patch_text):
    # The hunk, then the blank line that separates it from `#ifdef __cplusplus`.
    assert added_lines(patch_text, "torch/csrc/stable/c/shim.h") == make_patch.header_hunk() + "\n"


def test_python_impl_method_is_the_prototype_function(patch_text):
    added = added_lines(patch_text, "torch/csrc/PyObjectConversionPythonImpl.cpp")
    assert "const at::Tensor& tensor_borrow_from_pyobject(PyObject* obj) const override" in added
    assert normalized(method_body(added)) == normalized(make_patch.python_impl_body())


def test_shim_common_entry_points_are_the_prototype_ones(patch_text):
    assert normalized(patch_shim_common(patch_text)) == normalized(prototype_shim_common())


def test_the_drift_check_sees_a_one_token_change(patch_text):
    changed = prototype_shim_common().replace('"ret must not be null"', '"ret may be null"', 1)
    assert changed != prototype_shim_common()
    assert normalized(patch_shim_common(patch_text)) != normalized(changed)
    body = make_patch.python_impl_body().replace("PyObject_TypeCheck", "THPVariable_Check", 1)
    added = added_lines(patch_text, "torch/csrc/PyObjectConversionPythonImpl.cpp")
    assert normalized(method_body(added)) != normalized(body)


def test_vtable_entry_and_noop_are_declared(patch_text):
    header = added_lines(patch_text, "torch/csrc/PyObjectConversion.h")
    assert "virtual const at::Tensor& tensor_borrow_from_pyobject(PyObject* obj)\n      const = 0;" \
        in header
    noop = added_lines(patch_text, "torch/csrc/PyObjectConversion.cpp")
    assert "tensor_borrow_from_pyobject(" in noop and "TORCH_CHECK(false, kNoImplMsg);" in noop


def test_the_patch_regenerates_identically(tmp_path):
    base = PROPOSAL / ".upstream-base"
    if not (base / "torch/csrc/shim_common.cpp").exists():
        pytest.skip("no PyTorch base tree in this checkout (proposal/.upstream-base)")
    try:
        make_patch.find_clang_format()
    except SystemExit:
        pytest.skip("clang-format is not installed")
    subprocess.run([sys.executable, str(PROPOSAL / "make_patch.py"), "--out", str(tmp_path)],
                   check=True, capture_output=True)
    (regenerated,) = tmp_path.glob("0001-*.patch")
    assert regenerated.read_text() == PATCHES[0].read_text()


# --- (c) the patch's Python test, run against the prototype ------------------------------------

@needs_stand_in
def test_patch_test_passes_against_the_prototype():
    done = subprocess.run([sys.executable, "-P", str(PROPOSAL / "run_patch_test.py"), "-v"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"Ran 7 tests", done.stderr), done.stderr
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
    """A shim that trusts isinstance(), hands out a new handle per call (as an owned
    copy would), hides the conj/neg bits and ignores the GIL must fail the patch's
    test: the test is not one that always passes."""
    sys.path.insert(0, str(PROPOSAL / "stand_in"))
    try:
        from libtorch_agn_2_16 import _interop as real
    finally:
        sys.path.remove(str(PROPOSAL / "stand_in"))
    broken = types.ModuleType("broken_interop")
    fresh = itertools.count(1)
    broken.borrow_handle = lambda obj: (next(fresh) if isinstance(obj, torch.Tensor)
                                        else real.borrow_handle(obj))
    broken.borrow_without_gil = lambda obj: 1
    broken.borrow_metadata = lambda obj: real.borrow_metadata(obj)[:-2] + (False, False)
    result = _run_patch_test_against(broken, patch_text)
    failed = {test.id().rsplit(".", 1)[1] for test, _ in result.failures + result.errors}
    assert failed == {"test_non_tensors_are_refused_by_real_type", "test_refuses_without_the_gil",
                      "test_conjugate_and_negative_bits_are_visible",
                      "test_borrow_takes_no_reference", "test_handle_follows_the_python_object"}


# --- RFC.md: figures only in generated sections ---------------------------------------------

render = _load("render")


def test_rfc_has_no_figure_outside_generated_sections():
    text = (PROPOSAL / "RFC.md").read_text()
    names = re.findall(r"<!-- BEGIN generated: ([\w-]+) -->", text)
    assert {"seed-side-by-side", "bench-setup", "bench-headline", "bench-goals",
            "bench-details", "findings"} <= set(names)
    prose = render.MARKER.sub("", text)
    assert not re.findall(r"\d[\d.,]*\s*(?:ns|us|µs|%)|\d\.\d+x\b", prose)


def test_render_fills_from_a_report_and_says_what_is_missing(tmp_path):
    empty = render.render_all(tmp_path, None)
    assert "Not generated yet: no `" in empty["bench-headline"]
    assert "make bench" in empty["bench-headline"]
    report = tmp_path / "bench-torch-9.9.9.md"
    report.write_text("# r\n\n- Machine: test\n\n## Headline: x\n\n| a |\n\n"
                      "## 1. Seed protocol (Python level)\n\n"
                      "| contender | best (ns) | median (ns) | stdev (ns) | ratio |\n|---|---|---|---|---|\n"
                      "| view_owned(t): o | 300.0 | 310.0 | 1 | 2x |\n"
                      "| view_borrow(t): b | 160.0 | 170.0 | 1 | 1x |\n"
                      "| view_fallback(t): f | 150.0 | 155.0 | 1 | 1 |\n")
    filled = render.render_all(tmp_path, None)
    seed = filled["seed-side-by-side"]
    assert "| owned shim | 1581.8 | 1599.0 | +188.4 | 1.135x |" in seed  # the seed's, from its excerpt
    assert "| borrowed shim (proposed) | 160.0 | 170.0 | +10.0 | 1.067x |" in seed
    assert filled["bench-setup"].rstrip().endswith("- Machine: test")
    # A sentinel no generated text contains ("old" is in "hold", "threshold", ...).
    rfc = "<!-- BEGIN generated: findings -->\nSTALE-SECTION\n<!-- END generated: findings -->\n"
    assert "STALE-SECTION" not in render.render(rfc, filled)
