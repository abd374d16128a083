"""The two internal fixes the benchmarks run (``bench/internal_fixes.cpp``) are harmless,
and the DLPack prototype fills what torch's own function fills.

- The interpreter fix (the global ``PyInterpreter``'s ``vtable_`` pointed, for a ``with``
  block, at a copy of torch's vtable whose ``incref`` / ``decref`` skip the GIL
  acquisition on an attached thread): installed only inside the block, restored on an
  error, never nested; refcounts of the tensor and its storage unchanged after 10**6
  owned handles and DLPack exchanges; the owned path's parity tests pass while it is
  installed; a thread with no Python thread state still takes torch's own acquisition.
- DLPack without the copy (``dltensor_from_py_object_no_sync`` with a real-type check and
  a borrowed reference, with and without the attached-thread check): field by field
  equal to torch's on every dtype and layout of the parity suite, refusing what torch's
  refuses, and refusing the objects on which torch's crashes (never calling torch's on
  them here: ``make survey`` runs that in a subprocess).

Built with cffi, like the rest of the benchmarks: where cffi cannot be installed
(free-threaded CPython 3.13, ``Makefile``'s ``NO_CFFI_cp313t``) the module is skipped;
everywhere else it must build, and does.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys
import unittest.mock

import pytest
import torch

import bridge
from helpers.cases import LAYOUTS, REFUSED, VIEWABLE, cpu_allocation_error, dtype_name
from helpers.expect import expected_paths
from helpers.parity import assert_parity

if importlib.util.find_spec("cffi") is None:
    pytest.skip("no cffi in this environment (free-threaded CPython 3.13): the internal "
                "fixes are built with cffi", allow_module_level=True)

sys.path.append(str(pathlib.Path(__file__).resolve().parent.parent / "bench"))

import internal_fixes  # noqa: E402
import peers_native  # noqa: E402

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
def test_layout_comes_from_the_installed_header(fixes):
    lay = fixes.layout
    assert 2 <= lay["incref"] < lay["decref"] < lay["slots"] <= 256, lay


def test_installed_inside_the_block_only(fixes):
    torch_vtable = fixes.vtable_address()
    assert not fixes.installed()
    with fixes.interpreter_fix():
        assert fixes.installed()
        assert fixes.vtable_address() != torch_vtable
    assert not fixes.installed()
    assert fixes.vtable_address() == torch_vtable


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
            with fixes.interpreter_fix():
                pass
        assert fixes.installed()  # the failed inner block did not restore early
    assert fixes.vtable_address() == torch_vtable


def test_attached_thread_skips_the_acquisition_and_refcounts_hold(fixes, peers):
    """10**6 owned handles (2.14+) and 10**6 DLPack exchanges, each an at::Tensor copy:
    every incref / decref takes the fast path, and nothing leaks or is freed early."""
    t = torch.randn(32, 32)
    before = refcounts(t)
    fast0, slow0 = fixes.counts()
    loops = [lambda: peers.dltensor_loop(t, N)]
    if expected_paths()["owned"]:
        loops.append(lambda: peers.handle_loop("owned", t, N))
    with fixes.interpreter_fix():
        for loop in loops:
            assert loop() > 0
    fast, slow = fixes.counts()
    # Each loop makes N timed calls after one untimed one; each call increfs and decrefs.
    assert fast - fast0 == 2 * (N + 1) * len(loops)
    assert slow == slow0
    assert refcounts(t) == before


def test_a_thread_without_a_thread_state_still_acquires(fixes):
    """Copies on a native thread that never attached a thread state go to torch's own
    incref / decref (the acquisition), with the fix installed."""
    t = torch.randn(8)
    assert t._use_count() == 1  # so each copy takes the 1 -> 2 and 2 -> 1 steps
    before = refcounts(t)
    fast0, slow0 = fixes.counts()
    with fixes.interpreter_fix():
        fixes.copy_on_foreign_thread(t, 1000)
    fast, slow = fixes.counts()
    assert (fast - fast0, slow - slow0) == (0, 2000)
    assert refcounts(t) == before


def test_without_the_fix_nothing_reaches_it(fixes):
    t = torch.randn(8)
    counts = fixes.counts()
    fixes.copy_on_foreign_thread(t, 100)
    assert fixes.counts() == counts


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.name)
@pytest.mark.parametrize("dtype", VIEWABLE, ids=dtype_name)
def test_parity_holds_with_the_fix_installed(fixes, dtype, layout):
    """The parity suite's dtype x layout cases, every path (owned included where torch
    has it), while the fix is installed."""
    if cpu_allocation_error(dtype) is not None:
        pytest.skip(f"torch cannot allocate {dtype} on the CPU")
    t = layout.build(dtype)
    with fixes.interpreter_fix():
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


@pytest.mark.parametrize("check", [True, False], ids=["thread-check", "no-check"])
@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.name)
@pytest.mark.parametrize("dtype", VIEWABLE + REFUSED, ids=dtype_name)
def test_borrowed_dltensor_equals_torchs(fixes, dtype, layout, check):
    if cpu_allocation_error(dtype) is not None:
        pytest.skip(f"torch cannot allocate {dtype} on the CPU")
    try:
        t = layout.build(dtype)
    except (RuntimeError, TypeError) as exc:  # torch cannot build this layout of it
        pytest.skip(f"{layout.name} of {dtype}: {exc}")
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
