"""Fault injection: every way a path can be missing says why, and ``auto`` moves on.

``bridge._select._resolve_again(hide=...)`` resolves again with symbol names (or the
``HIDE_TORCH`` / ``HIDE_SHIM_EXT`` / ``HIDE_FALLBACK_CHECK`` tokens) treated as missing;
the ``hidden`` fixture restores the real resolution in its ``finally``. Each state is
checked three ways: ``available_paths()`` gives the reason, ``PathUnavailableError``
carries it, and ``auto`` picks the next path in its order (borrow, owned, fallback).
Conditions a hook cannot fake (torch not imported yet, shim_ext not importable) run in
a child process.
"""

import re
import warnings

import pytest
import torch

import bridge
from bridge import _resolve, _select
from helpers.child import run_ok
from helpers.expect import auto_path, expected_paths, torch_answer, view_fields
from helpers.parity import VIEWS
from hostile import cases

EXPECTED = expected_paths()
AVAILABLE = [p for p in bridge.PATHS if EXPECTED[p]]
AUTO_ORDER = [p for p in bridge.AUTO_ORDER if EXPECTED[p]]


def _views_correctly(path):
    t = torch.arange(12.0).reshape(3, 4)[:, 1:]
    v = VIEWS[path](t)
    assert view_fields(v) == torch_answer(t) and v.path == path


def _assert_auto_picks(expected):
    bridge.set_path("auto")
    assert bridge.get_path() == expected
    t = torch.ones(2, 3)
    assert bridge.view(t).path == expected
    assert view_fields(bridge.view(t)) == torch_answer(t)


@pytest.mark.parametrize("getter", _resolve.GETTERS)
def test_a_missing_getter_disables_every_path(hidden, getter):
    paths = hidden(getter)
    for name, info in paths.items():
        assert not info.available and info.origin is None
        assert f"exports no {getter}" in info.reason, (name, info)
    with pytest.raises(bridge.PathUnavailableError, match=f"no path can run.*{getter}"):
        bridge.view(torch.ones(1))
    for name in bridge.PATHS:
        with pytest.raises(bridge.PathUnavailableError, match=f"exports no {getter}"):
            VIEWS[name](torch.ones(1))
        with pytest.raises(bridge.PathUnavailableError, match=f"'{name}' is unavailable"):
            bridge.set_path(name)


@pytest.mark.parametrize("symbol", [_resolve.OWNED, _resolve.DELETE])
def test_owned_without_its_symbols(hidden, symbol):
    paths = hidden(symbol)
    assert not paths["owned"].available
    assert re.search(f"exports no .*{symbol}", paths["owned"].reason), paths["owned"]
    with pytest.raises(bridge.PathUnavailableError, match=f"'owned' is unavailable.*{symbol}"):
        bridge.set_path("owned")
    with pytest.raises(bridge.PathUnavailableError, match=symbol):
        bridge.view_owned(torch.ones(1))
    _assert_auto_picks(next(p for p in AUTO_ORDER if p != "owned"))
    for path in ("borrow", "fallback"):
        if EXPECTED[path]:
            _views_correctly(path)


@pytest.mark.parametrize("token", [_resolve.BORROW, _resolve.HIDE_SHIM_EXT])
def test_borrow_missing_auto_takes_the_next_path(hidden, token):
    paths = hidden(token)
    assert not paths["borrow"].available
    assert paths["borrow"].reason == (f"no {_resolve.BORROW} in libtorch, and shim_ext is "
                                      f"hidden (fault injection)")
    with pytest.raises(bridge.PathUnavailableError, match="'borrow' is unavailable"):
        bridge.view_borrow(torch.ones(1))
    # Without shim_ext the pointer trick goes too: nothing else can tell a tensor whose
    # getters run Python. Without the owned shim too (torch < 2.14) no path is left.
    left = [p for p in AUTO_ORDER if p != "borrow" and paths[p].available]
    assert ("fallback" in left) == (token == _resolve.BORROW and expected_paths()["fallback"])
    if left:
        _assert_auto_picks(left[0])
    else:
        with pytest.raises(bridge.PathUnavailableError, match="no path can run"):
            bridge.set_path("auto")


def test_auto_walks_down_its_order_to_nothing(hidden):
    hide = {"borrow": _resolve.BORROW, "owned": _resolve.OWNED,
            "fallback": _resolve.HIDE_FALLBACK_CHECK}
    gone = []
    for path in bridge.AUTO_ORDER:
        remaining = [p for p in AUTO_ORDER if p not in gone]
        if remaining:
            hidden(*(hide[p] for p in gone))
            _assert_auto_picks(remaining[0])
        gone.append(path)
    hidden(*hide.values())
    with pytest.raises(bridge.PathUnavailableError) as err:
        bridge.set_path("auto")
    message = str(err.value)
    assert message.startswith("no path can run on this torch: ")
    for path in bridge.AUTO_ORDER:
        assert f"{path}: " in message
    assert "offset check failed (fault injection)" in message


def test_fallback_offset_check_failing(hidden):
    paths = hidden(_resolve.HIDE_FALLBACK_CHECK)
    assert not paths["fallback"].available
    assert paths["fallback"].reason == "offset check failed (fault injection)"
    with pytest.raises(bridge.PathUnavailableError, match="offset check failed"):
        bridge.view_fallback(torch.ones(1))
    with pytest.raises(bridge.PathUnavailableError, match="offset check failed"):
        bridge._bridge._native_loop(torch.ones(1), "fallback", 1)
    rest = [p for p in AUTO_ORDER if p != "fallback"]
    if rest:
        _assert_auto_picks(rest[0])
    else:  # free-threaded 3.13 with torch 2.12: the fallback was the only path
        with pytest.raises(bridge.PathUnavailableError, match="offset check failed"):
            bridge.set_path("auto")


def test_torch_hidden_is_not_final(hidden):
    paths = hidden(_resolve.HIDE_TORCH)
    for info in paths.values():
        assert info == bridge.PathInfo(
            False, None, "torch is not imported yet: `import torch` before using the bridge")
    assert not _select.resolution().final
    with pytest.raises(bridge.PathUnavailableError, match="torch is not imported yet"):
        bridge.view(torch.ones(1))
    _select._resolve_again()
    assert {p: i.available for p, i in bridge.available_paths().items()} == EXPECTED


def test_no_strided_layout_code_disables_every_path(hidden):
    paths = hidden("aoti_torch_layout_strided")
    for info in paths.values():
        assert not info.available and "exports no aoti_torch_layout_strided" in info.reason
    with pytest.raises(bridge.PathUnavailableError):
        bridge.view(torch.ones(1))


def test_no_meta_code_symbol_still_refuses_meta_tensors(hidden):
    """The device table comes from torch's c10::DeviceType enum: without the stable ABI's
    meta code the meta device is still known, and refused (test_tables.py hides
    the enum too: then meta's code is unknown, and refused as such)."""
    hidden("aoti_torch_device_type_meta")
    for path in AVAILABLE:
        with pytest.raises(BufferError, match=r"^a meta tensor has no data"):
            VIEWS[path](torch.empty(2, device="meta"))
        _views_correctly(path)


def test_no_error_message_getter(hidden):
    hidden(_resolve.WHAT)
    with warnings.catch_warnings():  # "nested tensors are a prototype feature"
        warnings.simplefilter("ignore")
        nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    for path in AVAILABLE:
        # Told apart by shim_ext's check, not by torch's message (torch < 2.13 has none).
        with pytest.raises(BufferError, match=r"^this Tensor's sizes and strides .*"
                                              r"it is a nested tensor, .*\.unbind\(\)"):
            VIEWS[path](nested)
        _views_correctly(path)


@pytest.mark.parametrize("hide", [(_resolve.IS_CONJ,), (_resolve.IS_NEG,),
                                  (_resolve.HIDE_SHIM_EXT,)])
def test_without_flag_getters_math_bits_are_still_refused(hidden, hide):
    """With no ``torch_is_conj`` / ``torch_is_neg`` the bridge asks torch.Tensor.is_conj
    / is_neg instead: conjugate and negative views must still be refused."""
    paths = hidden(*hide)
    z = torch.tensor([1 + 2j, 3 - 4j])
    for path in [p for p in AVAILABLE if paths[p].available]:
        view = VIEWS[path]
        with pytest.raises(BufferError, match=r"conjugate bit.*resolve_conj\(\)"):
            view(z.conj())
        with pytest.raises(BufferError, match=r"negative bit.*resolve_neg\(\)"):
            view(z.conj().imag)
        _views_correctly(path)


def test_without_flag_getters_a_subclass_cannot_hide_its_conj_bit(hidden):
    paths = hidden(_resolve.HIDE_SHIM_EXT)
    hiding = cases.conj_bit_subclass_hiding_it(torch)  # the catalogue's impostor
    for path in [p for p in AVAILABLE if paths[p].available]:
        with pytest.raises(BufferError):
            VIEWS[path](hiding)


# --- conditions only a fresh process shows ------------------------------------------------


def test_available_paths_before_import_torch_is_not_cached():
    out = run_ok("""
import sys
import bridge
assert "torch" not in sys.modules
before = bridge.available_paths()
for info in before.values():
    assert not info.available and "torch is not imported yet" in info.reason, info
try:
    bridge.view(1.0)
except bridge.PathUnavailableError as exc:
    assert "torch is not imported yet" in str(exc), exc
else:
    raise AssertionError("view ran without torch")
try:
    bridge.set_path("borrow")
except bridge.PathUnavailableError as exc:
    assert "torch is not imported yet" in str(exc), exc
else:
    raise AssertionError("set_path ran without torch")
import torch
from helpers.expect import expected_paths, torch_answer, view_fields
after = bridge.available_paths()
assert {p: i.available for p, i in after.items()} == expected_paths(), after
t = torch.ones(2, 3)
assert view_fields(bridge.view(t)) == torch_answer(t)
for p, ok in expected_paths().items():
    if ok:
        assert getattr(bridge, "view_" + p)(t).path == p
print("OK", bridge.get_path())
""")
    assert out.startswith(f"OK {auto_path()}")


def test_shim_ext_not_built():
    out = run_ok("""
import sys
sys.modules["shim_ext._borrow"] = None  # what a missing extension module looks like
import torch, bridge
from helpers.expect import expected_paths
info = bridge.available_paths()["borrow"]
assert not info.available, info
assert "shim_ext._borrow does not import" in info.reason, info
if not expected_paths()["owned"]:  # no owned shim, and the pointer trick needs shim_ext
    try:
        bridge.get_path()
    except bridge.PathUnavailableError as exc:
        assert "needs shim_ext's torch_borrow_custom_metadata" in str(exc), exc
        print("OK none")
        raise SystemExit
    raise AssertionError("a path was chosen without shim_ext and without the owned shim")
assert bridge.get_path() == "owned", bridge.get_path()
z = torch.tensor([1 + 2j]).conj()
try:
    bridge.view(z)
except BufferError as exc:
    assert "resolve_conj()" in str(exc), exc
else:
    raise AssertionError("a conjugate view passed")
print("OK", bridge.get_path())
""")
    assert out.startswith("OK")


def test_view_survives_the_path_being_unchosen_while_it_chooses():
    run_ok("""
import torch, bridge
from bridge import _bridge, _select
real = _select.ensure_active
def ensure_then_unchoose():
    real()
    _bridge._activate(-1)  # what another thread's re-resolution does at this moment
_select.ensure_active = ensure_then_unchoose
_bridge._activate(-1)
try:
    v = bridge.view(torch.ones(3))
except (bridge.PathUnavailableError, RuntimeError):
    pass
else:
    assert v.path in bridge.PATHS and v.path == bridge.get_path(), v
""")


#: The first reads: one of each dimension room (two inline halves, the inline rest, a heap).
_ROOMS = ("2-d", "9-dims", "16-dims", "17-dims", "63-dims")


def _then_cases():
    from helpers.cases import LAYOUTS

    cases = {lay.name: lay.build for lay in LAYOUTS}
    # no storage data, yet an offset: the pointer is not null, the storage's start is
    cases["empty-storage-offset"] = lambda d: torch.empty(0, 5, dtype=d)[:, 2:]
    cases["freed-at-offset"] = _freed_at_offset  # elements, no memory: refused
    return cases


def _freed_at_offset(dtype):
    t = torch.zeros(64, dtype=dtype)[16:32].view(4, 4)
    t.untyped_storage().resize_(0)
    return t


_THEN = _then_cases()


@pytest.mark.parametrize("then", _THEN)
def test_a_view_that_resolves_first_fills_a_recycled_view(then):
    """``view_<path>`` with nothing installed (a process's first view, or the next one
    after a set-up that kept nothing) resolves, then reads through its own copy of the
    read: on every layout, into a recycled view whose tuples the last read made in each
    dimension room, it is as exact as the hot one."""
    from bridge import _bridge
    from helpers.cases import LAYOUTS
    from helpers.parity import assert_parity

    build = {lay.name: lay.build for lay in LAYOUTS}
    t = _THEN[then](torch.float64)
    for first in _ROOMS:
        for p in AVAILABLE:
            assert_parity(build[first](torch.float32))
            _bridge._install_symbols({}, None, False)  # what a set-up that kept nothing installs
            _select._resolution = None
            if then == "freed-at-offset":
                with pytest.raises(BufferError, match="no memory|no storage|freed"):
                    VIEWS[p](t)
                continue
            v = VIEWS[p](t)
            assert (v.path, view_fields(v)) == (p, torch_answer(t)), (first, p)
