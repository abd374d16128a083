"""The two internal fixes the benchmarks run (``proposal/fixes/internal_fixes.cpp``) are
harmless, and the DLPack prototype fills what torch's own function fills.

The interpreter fix (the global ``PyInterpreter``'s vtable pointed, for a ``with`` block,
at a copy whose ``incref`` / ``decref`` skip the GIL acquisition on an attached thread):
installed only inside the block, the patch's own code line for line, correct on attached,
detached, native and autograd threads and across interpreter finalization; the parity
suite passes with it installed. DLPack without the copy: field by field torch's on every
dtype and layout, refusing what torch's refuses and the objects torch's crashes on.
Skipped only where cffi cannot be installed (free-threaded 3.13, ``NO_CFFI_cp313t``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
import unittest.mock

import pytest
import torch

import bridge
from helpers.cases import (REFUSED, VIEWABLE, cpu_allocation_error, dtype_layout_cases, flagged,
                           layout_cases)
from helpers.child import SUBINTERPRETER, run_ok
from helpers.expect import expected_paths
from helpers.parity import assert_parity

if importlib.util.find_spec("cffi") is None:
    pytest.skip("no cffi in this environment (free-threaded CPython 3.13): the internal "
                "fixes are built with cffi", allow_module_level=True)

from bench.native import peers_native
from proposal.fixes import internal_fixes
from proposal.fixes import patched_interpreter
from proposal.toolchain import build_dir, torch_version

N = 10**6


@pytest.fixture(scope="module")
def fixes():
    return internal_fixes.InternalFixes(torch)


@pytest.fixture(scope="module")
def peers():
    return peers_native.NativePeers(torch, bridge)


def refcounts(t):
    """(Python refcount of ``t``, its TensorImpl's use count, its StorageImpl's)."""
    storage = t.untyped_storage()
    return sys.getrefcount(t), t._use_count(), torch._C._storage_Use_Count(storage._cdata)


# --- the interpreter fix -----------------------------------------------------------------
#: interpreter_fix's codes: the patch's own incref / decref (default), the emulation
CODES = ("patch", "emulation")


def test_layout_comes_from_the_installed_header(fixes):
    lay = fixes.layout
    assert 2 <= lay["incref"] < lay["decref"] < lay["slots"] <= 256, lay


@pytest.mark.parametrize("code", CODES)
def test_installed_inside_the_block_only(fixes, code):
    torch_vtable = fixes.vtable_address()
    assert not fixes.installed() and fixes.installed_code() is None
    with fixes.interpreter_fix(code):
        assert fixes.installed() and fixes.installed_code() == code
        assert fixes.vtable_address() != torch_vtable
    assert not fixes.installed()
    assert fixes.vtable_address() == torch_vtable


def test_the_default_is_the_patch_code(fixes):
    with fixes.interpreter_fix():
        assert fixes.installed_code() == "patch"
    with pytest.raises(ValueError, match="code must be one of"):
        with fixes.interpreter_fix("main"):
            pass
    assert not fixes.installed()


def test_restored_when_the_block_raises(fixes):
    torch_vtable = fixes.vtable_address()
    with pytest.raises(ZeroDivisionError):
        with fixes.interpreter_fix():
            1 / 0
    assert not fixes.installed() and fixes.vtable_address() == torch_vtable


def test_no_nesting(fixes):
    torch_vtable = fixes.vtable_address()
    with fixes.interpreter_fix():
        with pytest.raises(internal_fixes.FixError, match="already installed"):
            with fixes.interpreter_fix("emulation"):
                pass
        assert fixes.installed_code() == "patch"  # the failed inner block did not restore early
    assert fixes.vtable_address() == torch_vtable


# --- the patch's code: cut out of the patch, not retyped ---------------------------------
def test_the_built_code_is_the_patched_files(fixes, tmp_path):
    """The module was built from the one patch that changes PyInterpreter.cpp: the
    generated file holds, line for line, the patched file's incref and decref, each
    different from the base's, and beside it the header the patch adds, whole, whose
    test is shim_ext's torch_borrow/thread_state.h in C++ spellings (make_patch.py)."""
    spec = importlib.util.spec_from_file_location(
        "make_patch", patched_interpreter.REPO / "proposal" / "tools" / "make_patch.py")
    make_patch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_patch)
    patch = patched_interpreter.interpreter_patch()
    assert fixes.patch_name == patch.name
    got = patched_interpreter.extract()
    assert [name for name, _, _ in got["pieces"]] == [
        "ConcretePyInterpreterVTable::decref", "ConcretePyInterpreterVTable::incref"]
    patched = patched_interpreter.patched_text(patch).splitlines()
    base = patched_interpreter.base_text()
    for name, line, body in got["pieces"]:
        lines = body.splitlines()
        assert patched[line - 1:line - 1 + len(lines)] == lines, name
        assert body not in base, f"{name} is the base's, not the patch's"
        assert "THPUtils_hasAttachedThreadState() && !Py_IsFinalizing()" in body, name
    assert got["added"] == {make_patch.ATTACHED_H: make_patch.attached_header()}
    assert f"#include <{make_patch.ATTACHED_H}>" in "\n".join(patched)
    built = build_dir(torch_version(torch)) / "patched"
    patched_interpreter.write_include(tmp_path)
    for name in (patched_interpreter.INCLUDE_NAME, make_patch.ATTACHED_H):
        assert (built / name).read_text() == (tmp_path / name).read_text(), name


def test_the_patch_is_found_by_what_it_changes(tmp_path, monkeypatch):
    """A series renumbered and retitled (the PyInterpreter patch first, another subject
    line) still builds the same code: the patch is the one whose diff changes the file."""
    original = patched_interpreter.interpreter_patch()
    want = patched_interpreter.extract()["pieces"]
    folder = tmp_path / patched_interpreter.SERIES[patched_interpreter.series()]
    folder.mkdir(parents=True, exist_ok=True)
    for p in original.parent.glob("*.patch"):
        text = p.read_text()
        name = p.name
        if p == original:
            name = "0001-Let-attached-threads-skip-the-GIL-in-refcounting.patch"
            text = text.replace("[PATCH 3/3]", "[PATCH 1/3]")
        (folder / name).write_text(text)
    monkeypatch.setattr(patched_interpreter, "PATCHES", tmp_path)
    assert patched_interpreter.interpreter_patch().name.startswith("0001-Let-attached")
    assert patched_interpreter.extract()["pieces"] == want
    (folder / "0009-copy.patch").write_text(original.read_text())
    with pytest.raises(patched_interpreter.ExtractionError, match="exactly one patch"):
        patched_interpreter.interpreter_patch()


# --- #189128's SafeGilScopedAcquire (safe_gil.h), on its own -----------------------------
@pytest.mark.parametrize("where, expected", [
    # attached: pybind11 nests (a counter), the thread still holds the GIL after
    ("attached", {"true": True, "held_inside": True, "held_after": True, "state_after": True}),
    # detached Python thread: takes the GIL, gives it back
    ("detached", {"true": True, "held_inside": True, "held_after": False, "state_after": True}),
    # a native thread Python never saw: a thread state made and deleted again
    ("foreign", {"true": True, "held_inside": True, "held_after": False, "state_after": False}),
])
def test_main_guard_acquires_on_every_live_thread(fixes, where, expected):
    before = fixes.guard_counts()
    assert fixes.guard_probe(where) == expected
    after = fixes.guard_counts()
    assert after["constructed"] - before["constructed"] == 1
    assert after["acquired"] - before["acquired"] == 1


def test_the_guard_is_mains_class_verbatim():
    """safe_gil.h includes the excerpt of torch/csrc/Exceptions.h at the commit BASE.toml
    names, whose bytes BASE.toml's [[excerpt]] row checks."""
    import tomllib

    upstream = patched_interpreter.REPO / "proposal" / "third_party" / "pytorch"
    rows = tomllib.loads((upstream / "BASE.toml").read_text())["excerpt"]
    (row,) = [r for r in rows if r["name"] == "SafeGilScopedAcquire"]
    data = (upstream / "excerpts" / "Exceptions.h.SafeGilScopedAcquire").read_bytes()
    assert hashlib.sha256(data).hexdigest() == row["sha256"]
    assert row["commit"] == "02d90f320cf11bb96f3ae2165cb9e092f4b6f626"
    assert b"class SafeGilScopedAcquire {" in data and b"guard_->disarm();" in data
    header = (patched_interpreter.REPO / "proposal" / "fixes" / "safe_gil.h").read_text()
    assert '#include "Exceptions.h.SafeGilScopedAcquire"' in header
# On the finalizing thread it acquires and stays true: the child of
# test_copies_alive_across_interpreter_finalization probes it there.


# --- once a subinterpreter exists (PyGILState_Check() then answers yes everywhere) -----
FIX_CHILD = SUBINTERPRETER + """
import json, torch
from proposal.fixes import internal_fixes
fixes = internal_fixes.InternalFixes(torch)
out = {}
def probe(when):
    for code in ("patch", "gil-state-check"):
        with fixes.interpreter_fix(code):
            for where in ("native", "detached"):
                t = torch.randn(4)
                assert t._use_count() == 1
                out[f"{when} {code} {where}"] = fixes.copy_finished_while_gil_held(t, where, 200)
probe("before")
create_subinterpreter()
probe("after")
print(json.dumps(out))
"""


def test_the_interpreter_fix_waits_for_the_gil_once_a_subinterpreter_exists():
    got = json.loads(run_ok(FIX_CHILD).splitlines()[-1])
    for when in ("before", "after"):
        for where in ("native", "detached"):
            assert got[f"{when} patch {where}"] is False, (when, where, got)
    assert got["before gil-state-check native"] is False
    assert got["before gil-state-check detached"] is False
    # The hole the exact test closes: PyGILState_Check() says yes without the GIL.
    assert got["after gil-state-check native"] is True, got
    assert got["after gil-state-check detached"] is True, got


# --- the patch's code installed: where the fast path is taken ----------------------------
def guard_delta(fixes, before):
    after = fixes.guard_counts()
    return {k: after[k] - before[k] for k in after}


def test_patch_fast_path_on_an_attached_thread(fixes, peers):
    """Attached and not finalizing: 10**6 owned handles (2.14+), 10**6 DLPack exchanges and
    1000 plain copies, each an at::Tensor copy reaching incref / decref: no guard is ever
    constructed (the fast path), the object's refcount rises by one while a copy is alive,
    as with torch's own methods, and nothing leaks or is freed early."""
    t = torch.randn(32, 32)
    assert t._use_count() == 1  # each copy takes the 1 -> 2 and 2 -> 1 steps
    before = refcounts(t)
    during_torch = fixes.copy_here(t, 1, attach=True)  # torch's own incref, for reference
    loops = [lambda: peers.dltensor_loop(t, N)]
    if expected_paths()["owned"]:
        loops.append(lambda: peers.handle_loop("owned", t, N))
    g0 = fixes.guard_counts()
    with fixes.interpreter_fix():
        during = fixes.copy_here(t, 1000, attach=True)
        for loop in loops:
            assert loop() > 0
    assert guard_delta(fixes, g0) == dict.fromkeys(g0, 0)
    assert during == during_torch
    assert refcounts(t) == before


@pytest.mark.parametrize("where", ["native thread without a thread state",
                                   "Python thread, detached"])
def test_patch_slow_path_without_an_attached_thread_state(fixes, where):
    """A native thread Python never saw, and this thread with the GIL released: every
    incref / decref constructs the guard, which acquires (2 per copy), and refcounts
    hold."""
    t = torch.randn(8)
    assert t._use_count() == 1
    before = refcounts(t)
    g0 = fixes.guard_counts()
    with fixes.interpreter_fix():
        if where.startswith("native"):
            fixes.copy_on_foreign_thread(t, 1000)
        else:
            assert fixes.copy_here(t, 1000, attach=False) is None
    delta = guard_delta(fixes, g0)
    assert (delta["constructed"], delta["acquired"]) == (2000, 2000), delta
    assert refcounts(t) == before


def test_patch_on_autograd_engine_threads(fixes):
    """A backward pass whose hooks copy tensors, with the patch's code installed. The
    engine runs a CPU graph on the calling thread with the GIL released
    (PythonEngine::execute), so its own copies of tensors that Python objects own (the
    hooks' results) reach incref / decref detached: the guard (slow path); inside a hook
    the thread is attached: copies there take the fast path. Gradients equal those of a
    run without the fix; refcounts of the leaves and their gradients are unchanged by a
    second identical pass."""
    def run(install):
        torch.manual_seed(0)
        x = torch.randn(64, requires_grad=True)
        w = torch.randn(64, requires_grad=True)
        hook_deltas = []

        def hook(g):
            out = g * 1.0  # a tensor a Python object owns, handed back to the engine
            g0 = fixes.guard_counts()
            fixes.copy_here(out, 100, attach=True)
            hook_deltas.append(guard_delta(fixes, g0)["constructed"])
            return out

        y = (x * w).sin()
        y.register_hook(hook)
        z = y * 2.0
        z.register_hook(hook)
        g0 = fixes.guard_counts()
        if install:
            with fixes.interpreter_fix():
                z.sum().backward()
        else:
            z.sum().backward()
        return x, w, hook_deltas, guard_delta(fixes, g0)

    x0, w0, _, untouched = run(install=False)
    x1, w1, hook_deltas, engine = run(install=True)
    assert untouched["constructed"] == 0  # torch's own methods: the stand-in never runs
    assert torch.equal(x1.grad, x0.grad) and torch.equal(w1.grad, w0.grad)
    assert hook_deltas == [0, 0]  # in the hooks: attached, fast path only
    assert engine["constructed"] > 0 and engine["constructed"] == engine["acquired"], engine
    before = [refcounts(v) for v in (x1, w1, x1.grad, w1.grad)]
    x1.grad = w1.grad = None
    with fixes.interpreter_fix():
        (x1 * w1).sin().mul(2.0).sum().backward()
    assert [refcounts(v)[0] for v in (x1, w1)] == [b[0] for b in before[:2]]
    assert [refcounts(v) for v in (x1.grad, w1.grad)] == before[2:]


CHILD = """
import torch
from proposal.fixes import internal_fixes
fixes = internal_fixes.InternalFixes(torch)
# Installed for good (not through the context manager, whose generator the interpreter
# would close, and so uninstall, during finalization).
assert fixes._lib.fixes_interpreter_install(fixes.CODES["patch"]) == 0
kept_to_finalization = [torch.randn(4) for _ in range(3)]
kept_to_exit = [torch.randn(4) for _ in range(2)]
for t in kept_to_finalization:
    fixes.hold(t, "finalization")
for t in kept_to_exit:
    fixes.hold(t, "exit")
del t


class Releaser:
    def __init__(self, release):
        self.release = release

    def __del__(self):
        self.release()


_releaser = Releaser(fixes.release_held)  # cleared while the interpreter finalizes
print("child: exiting with copies alive", flush=True)
"""


def parse_report(stderr: str) -> dict[str, dict[str, int]]:
    """``{when: {key: int}}`` of the child's ``when: key=value ...`` lines."""
    out = {}
    for line in stderr.splitlines():
        head, sep, rest = line.partition(": ")
        if sep and "=" in rest and " " not in head:
            out[head] = {k: int(v) for k, v in (kv.split("=") for kv in rest.split())}
    return out


def test_copies_alive_across_interpreter_finalization(fixes, tmp_path):
    """A child process exits while C++ copies of its tensors are alive, the patch's code
    installed. CPython (3.11 to 3.13, ``Py_FinalizeEx``) marks the runtime finalizing and
    not initialized in one step, before it clears the modules; so copies released while
    the interpreter finalizes (a __del__ run as __main__ is cleared) and copies released
    after it (an atexit handler) both meet the patch's first test, ``Py_IsInitialized()``,
    and return before the fast path's test: no guard, the reference leaked (the refcount
    stays), as torch's own methods do. Main's guard has no such test of its own: on the
    finalizing thread it acquires (nested) and disarms, so it is true there; that the
    callers test ``Py_IsInitialized()`` first is what keeps it from a finalized
    interpreter. The child exits cleanly."""
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    done = subprocess.run([sys.executable, "-P", str(script)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "child: exiting with copies alive" in done.stdout
    rep = parse_report(done.stderr)
    for when in ("finalizing", "at-exit"):
        before, after = rep[f"{when}-before"], rep[f"{when}-after"]
        assert (before["initialized"], before["finalizing"]) == (0, 1), rep
        assert after["guard_constructed"] == before["guard_constructed"], rep
    assert rep["finalizing-probe"]["guard_true"] == 1, rep
    before, after = rep["finalizing-before"], rep["finalizing-after"]
    assert after["refcnt_after"] == before["refcnt_before"]  # leaked, not decremented


# --- the emulation (code="emulation"): its own counters ----------------------------------
def test_emulation_attached_thread_skips_the_acquisition_and_refcounts_hold(fixes, peers):
    """10**6 owned handles (2.14+) and 10**6 DLPack exchanges, each an at::Tensor copy:
    every incref / decref takes the fast path, and nothing leaks or is freed early."""
    t = torch.randn(32, 32)
    before = refcounts(t)
    fast0, slow0 = fixes.counts()
    loops = [lambda: peers.dltensor_loop(t, N)]
    if expected_paths()["owned"]:
        loops.append(lambda: peers.handle_loop("owned", t, N))
    with fixes.interpreter_fix("emulation"):
        for loop in loops:
            assert loop() > 0
    fast, slow = fixes.counts()
    # Each loop makes N timed calls after one untimed one; each call increfs and decrefs.
    assert fast - fast0 == 2 * (N + 1) * len(loops)
    assert slow == slow0
    assert refcounts(t) == before


def test_emulation_a_thread_without_a_thread_state_still_acquires(fixes):
    """Copies on a native thread that never attached a thread state go to torch's own
    incref / decref (the acquisition), with the emulation installed."""
    t = torch.randn(8)
    assert t._use_count() == 1  # so each copy takes the 1 -> 2 and 2 -> 1 steps
    before = refcounts(t)
    fast0, slow0 = fixes.counts()
    g0 = fixes.guard_counts()
    with fixes.interpreter_fix("emulation"):
        fixes.copy_on_foreign_thread(t, 1000)
    fast, slow = fixes.counts()
    assert (fast - fast0, slow - slow0) == (0, 2000)
    assert guard_delta(fixes, g0)["constructed"] == 0  # torch's guard, not the stand-in
    assert refcounts(t) == before


def test_without_the_fix_nothing_reaches_it(fixes):
    t = torch.randn(8)
    counts, guards = fixes.counts(), fixes.guard_counts()
    fixes.copy_on_foreign_thread(t, 100)
    fixes.copy_here(t, 100, attach=False)
    assert fixes.counts() == counts and fixes.guard_counts() == guards


@pytest.mark.parametrize("code, dtype, layout", [
    *flagged(CODES[0], dtype_layout_cases(VIEWABLE)), *flagged(CODES[1], layout_cases(VIEWABLE))])
def test_parity_holds_with_the_fix_installed(fixes, dtype, layout, code):
    """The parity suite's dtype x layout cases, every path (owned included where torch
    has it), while the fix is installed (the patch's code; the emulation on every layout)."""
    if cpu_allocation_error(dtype) is not None:
        pytest.skip(f"torch cannot allocate {dtype} on the CPU")
    t = layout.build(dtype)
    with fixes.interpreter_fix(code):
        assert_parity(t)


# --- DLPack without the copy -------------------------------------------------------------
def outcome(fixes, api, obj):
    """("ok", fields) or ("refused", message) for one exchange call."""
    try:
        return "ok", fixes.dltensor(api, obj)
    except internal_fixes.FixError as exc:
        return "refused", str(exc)


def test_torch_has_the_exchange_api(fixes):
    assert fixes.torch_api, "torch >= 2.10 has __dlpack_c_exchange_api__"


def _built_or_skip(layout, dtype):
    """``layout.build(dtype)``, or a skip saying why torch cannot allocate or build it."""
    if cpu_allocation_error(dtype) is not None:
        pytest.skip(f"torch cannot allocate {dtype} on the CPU")
    try:
        return layout.build(dtype)
    except (RuntimeError, TypeError) as exc:  # torch cannot build this layout of it
        pytest.skip(f"{layout.name} of {dtype}: {exc}")


@pytest.mark.parametrize("check, dtype, layout", [
    *flagged(True, dtype_layout_cases(VIEWABLE + REFUSED), "thread-check"),
    *flagged(False, layout_cases(VIEWABLE + REFUSED), "no-check")])
def test_borrowed_dltensor_equals_torchs(fixes, dtype, layout, check):
    t = _built_or_skip(layout, dtype)
    theirs = outcome(fixes, fixes.torch_api, t)
    ours = outcome(fixes, fixes.dlpack_api(check), t)
    assert ours[0] == theirs[0], (ours, theirs)
    if theirs[0] == "ok":
        assert ours == theirs
        assert theirs[1].data + theirs[1].byte_offset == t.data_ptr() or t.numel() == 0


KINDS = {
    "sparse_coo": lambda: torch.randn(3, 3).to_sparse(),
    "sparse_csr": lambda: torch.randn(3, 3).to_sparse_csr(),
    "meta": lambda: torch.empty(3, 4, device="meta"),
    "zero_elements": lambda: torch.empty(0, 5),
    "zero_dim": lambda: torch.tensor(3.0),
    "requires_grad": lambda: torch.randn(3, requires_grad=True),
    "parameter": lambda: torch.nn.Parameter(torch.randn(2, 2)),
    "conj_view": lambda: torch.randn(3, dtype=torch.complex64).conj(),
    "neg_view": lambda: torch._neg_view(torch.randn(3)),
    "nested": lambda: torch.nested.nested_tensor([torch.randn(2), torch.randn(3)]),
}


@pytest.mark.parametrize("check", [True, False], ids=["thread-check", "no-check"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_borrowed_dltensor_matches_torch_on_other_kinds(fixes, kind, check):
    t = KINDS[kind]()
    theirs = outcome(fixes, fixes.torch_api, t)
    ours = outcome(fixes, fixes.dlpack_api(check), t)
    assert ours[0] == theirs[0], (ours, theirs)
    if theirs[0] == "ok":
        assert ours == theirs
    else:
        # the same refusal (type and first line; the backtraces differ), raised by
        # at::toDLPackNonOwning in both
        assert ours[1].splitlines()[0] == theirs[1].splitlines()[0]


def test_torch_no_sync_hands_out_conj_and_neg_views_as_plain_data(fixes):
    """Facts of torch's DLPack export, asserted so a torch that changes them is noticed:
    ``dltensor_from_py_object_no_sync`` fills a DLTensor for a lazy ``conj()`` and for a
    negative view, and a DLTensor has no field for either bit, so a consumer reads the
    base's values. ``__dlpack__`` refuses the conjugate view but not the negative one:
    a round trip through it loses the sign. The prototype does as torch's (it mirrors
    it: the tests above)."""
    conj, neg = KINDS["conj_view"](), KINDS["neg_view"]()
    assert conj.is_conj() and neg.is_neg()
    assert outcome(fixes, fixes.torch_api, conj)[0] == "ok"
    assert outcome(fixes, fixes.torch_api, neg)[0] == "ok"
    with pytest.raises(BufferError, match="conjugate bit"):
        conj.__dlpack__()
    back = torch.from_dlpack(neg.__dlpack__())
    assert not back.is_neg()
    assert torch.equal(back, -neg)  # the values of the base: the sign is lost


class _Liar:
    @property
    def __class__(self):
        return torch.Tensor


@pytest.mark.parametrize("check", [True, False], ids=["thread-check", "no-check"])
@pytest.mark.parametrize("obj", [_Liar(), unittest.mock.Mock(spec=torch.Tensor), object(), None],
                         ids=["lying-class", "mock-spec", "object", "None"])
def test_borrowed_dltensor_refuses_what_is_not_a_tensor(fixes, obj, check):
    """By real type, so also the objects on which torch's own function crashes
    (``make survey``: SIGSEGV on 2.14.1 and 2.15.0); torch's is not called here."""
    kind, message = outcome(fixes, fixes.dlpack_api(check), obj)
    assert kind == "refused"
    assert message.startswith("TypeError: dltensor_from_py_object_no_sync: expected "
                              "torch.Tensor, got ")


# --- fixed DLPack: the DLPack patches' own function, cut out of the patched file ------------
from proposal.fixes import patched_dlpack  # noqa: E402

DLPACK_PIECES = ["DLPackRefusal", "DLPackCheckTensor", "DLTensorFromPyObjectNonOwning",
                 "TorchDLPackExchangeAPI::DLTensorFromPyObjectNoSync",
                 "TorchDLPackExchangeAPI::ManagedTensorFromPyObjectNoSync",
                 "TorchConstDLPackExchangeAPI::DLTensorFromPyObjectNoSync",
                 "TorchConstDLPackExchangeAPI::ManagedTensorFromPyObjectNoSync"]
SLOT_OFFSET = 40  # dltensor_from_py_object_no_sync in ATen/dlpack.h's DLPackExchangeAPI
MANAGED_OFFSET = 24  # managed_tensor_from_py_object_no_sync, likewise


def slot_of(api: int) -> int:
    """The ``dltensor_from_py_object_no_sync`` pointer of the table at ``api``."""
    import ctypes

    return ctypes.c_void_p.from_address(api + SLOT_OFFSET).value or 0


def test_the_fixed_dlpack_code_is_the_patched_file(fixes, tmp_path):
    """The module was built from the DLPack series applied to the base Module.cpp: the
    generated file holds, line for line, both structs' DLTensorFromPyObjectNoSync and
    ManagedTensorFromPyObjectNoSync and the helpers they call, as the patched file has
    them and the base does not."""
    got = patched_dlpack.extract()
    assert got["patches"] == [p.name for p in patched_dlpack.series()]
    assert [name for name, _, _ in got["pieces"]] == DLPACK_PIECES
    patched = patched_dlpack.patched_text(patched_dlpack.series()).splitlines()
    base = patched_dlpack.BASE.read_text()
    for name, line, body in got["pieces"]:
        lines = body.splitlines()
        assert patched[line - 1:line - 1 + len(lines)] == lines, name
        assert body not in base, f"{name} is the base's, not the patch's"
    refusal, helper = got["pieces"][0][2], got["pieces"][2][2]
    for token in ("is_conj()", "is_neg()"):
        assert token in refusal, token
    for token in ("THPVariable_Unpack(obj)", "DLPackRefusal(tensor)", "has_custom_metadata()"):
        assert token in helper, token
    built = build_dir(torch_version(torch)) / "patched"
    patched_dlpack.write_include(tmp_path)
    name = patched_dlpack.INCLUDE_NAME
    assert (built / name).read_text() == (tmp_path / name).read_text()


def test_the_managed_export_is_the_series_own_in_torchs_table_for_a_block(fixes):
    """``managed_export_patched`` puts the cut-out managed function into torch's own table
    (where tvm-ffi reads it at every call) for the block only, and restores torch's."""
    import ctypes

    slot = ctypes.c_void_p.from_address(fixes.torch_api + MANAGED_OFFSET)
    torch_own = slot.value
    with fixes.managed_export_patched():
        assert slot.value == int(fixes._ffi.cast(
            "uintptr_t", fixes._lib.patched_dlpack_managed_slot(0)))
        assert slot.value != torch_own
        assert int(fixes._lib.patched_dlpack_managed_offset()) == MANAGED_OFFSET
    assert slot.value == torch_own


def has_read_only_table() -> bool:
    """Whether this torch has the read-only DLPack exchange table the series also patches."""
    return hasattr(torch._C, "_const_dlpack_exchange_api")


def test_the_read_only_table_exists_from_2_14():
    """torch 2.14 added the read-only exchange table; the suite's 2.13 has none."""
    from packaging.version import Version

    assert has_read_only_table() == (Version(torch.__version__).release >= (2, 14))


def test_the_fixed_dlpack_route_calls_the_cut_out_function(fixes, monkeypatch):
    """Every fixed-DLPack route gets the table whose slot is the cut-out function: the
    routes' ``dlpack_patched`` row and the seed consumer's ``dlpack_fixed``."""
    from bench import routes

    api = fixes.dlpack_api_patched()
    assert slot_of(api) == int(fixes._ffi.cast("uintptr_t", fixes._lib.patched_dlpack_slot(0)))
    assert slot_of(api) != slot_of(fixes.torch_api)
    assert slot_of(api) != slot_of(fixes.dlpack_api(True))  # not the prototype
    if has_read_only_table():
        read_only = fixes.dlpack_api_patched(read_only=True)
        assert slot_of(read_only) == int(fixes._ffi.cast("uintptr_t",
                                                         fixes._lib.patched_dlpack_slot(1)))
    else:
        with pytest.raises(internal_fixes.FixError, match="no read-only DLPack exchange"):
            fixes.dlpack_api_patched(read_only=True)

    seen = []

    class Peers:
        dlpack_reason = metadata_reason = None

        def dltensor_loop(self, t, n, api=None):
            seen.append(api)
            return 0.0

        def __getattr__(self, name):
            return lambda *a, **k: 0.0

    runs, _ = routes.contenders(torch.ones(2), Peers(), fixes, {})
    runs["dlpack_patched"](1)
    assert seen == [api]
    assert "fixed DLPack" in routes.BY_NAME["dlpack_patched"].label
    for name in ("dlpack_borrowed_checked", "dlpack_borrowed"):
        assert "prototype" in routes.BY_NAME[name].label


@pytest.mark.parametrize("read_only, dtype, layout", [
    *flagged(False, dtype_layout_cases(VIEWABLE + REFUSED), "writable"),
    *flagged(True, layout_cases(VIEWABLE + REFUSED), "read-only")])
def test_patched_dltensor_equals_torchs(fixes, dtype, layout, read_only):
    """The patch's function fills what torch 2.15's fills, refuses what it refuses."""
    if read_only and not has_read_only_table():
        pytest.skip("no read-only exchange table on this torch (2.14+; "
                    "test_the_read_only_table_exists_from_2_14 asserts where it must be)")
    t = _built_or_skip(layout, dtype)
    theirs = outcome(fixes, fixes.torch_api, t)
    ours = outcome(fixes, fixes.dlpack_api_patched(read_only), t)
    assert ours[0] == theirs[0], (ours, theirs)
    if theirs[0] == "ok":
        assert ours == theirs


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_patched_dltensor_on_other_kinds(fixes, kind):
    """As torch's on every other kind, except the conjugate and negative views, which
    the patch refuses (BufferError) where torch exports them as plain data."""
    t = KINDS[kind]()
    theirs = outcome(fixes, fixes.torch_api, t)
    ours = outcome(fixes, fixes.dlpack_api_patched(), t)
    if kind in ("conj_view", "neg_view"):
        bit = "conjugate" if kind == "conj_view" else "negative"
        assert theirs[0] == "ok"
        assert ours == ("refused", f"BufferError: Can't export tensors with the {bit} bit set")
        return
    assert ours[0] == theirs[0], (ours, theirs)
    if theirs[0] == "ok":
        assert ours == theirs
    else:
        assert ours[1].splitlines()[0] == theirs[1].splitlines()[0]


@pytest.mark.parametrize("obj", [_Liar(), unittest.mock.Mock(spec=torch.Tensor), object(), None],
                         ids=["lying-class", "mock-spec", "object", "None"])
def test_patched_dltensor_refuses_what_is_not_a_tensor(fixes, obj):
    """The real-type check: a RuntimeError naming the type, where torch's own crashes
    on the first two (``proposal/reports/dlpack-exchange-lying-class.md``)."""
    kind, message = outcome(fixes, fixes.dlpack_api_patched(), obj)
    assert kind == "refused"
    assert message.startswith("RuntimeError: DLPack exchange API: expected a torch.Tensor, got ")
