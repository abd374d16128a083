"""Each torch version offers exactly the paths it must, found by symbol presence."""

import torch

import bridge
from helpers.expect import TORCH, expected_paths, expected_readers


def test_availability_matches_this_torch():
    available = bridge.available_paths()
    assert {p: i.available for p, i in available.items()} == expected_paths(), available


def test_available_paths_name_their_origin():
    for name, info in bridge.available_paths().items():
        if info.available:
            assert info.origin and info.reason is None, (name, info)
        else:
            assert info.origin is None and info.reason, (name, info)


def test_owned_origin_or_reason():
    info = bridge.available_paths()["owned"]
    if TORCH.release >= (2, 14):
        assert info.origin.startswith("libtorch"), info
    else:
        assert "torch_tensor_from_pyobject" in info.reason, info


def test_borrow_comes_from_libtorch_first_else_shim_ext():
    info = bridge.available_paths()["borrow"]
    from bridge import _resolve

    torch_export = _resolve._lookup(_resolve.BORROW, _resolve._loaded_libraries(torch),
                                    frozenset())
    expected = torch_export.origin if torch_export else "shim_ext/"
    assert info.origin.startswith(expected), info


def test_fallback_offset_is_proven():
    from bridge import _bridge, _resolve

    ok, why = _resolve.prove_fallback_offset(torch, _bridge.PYOBJECT_SIZE)
    assert ok == expected_paths()["fallback"], why
    assert (f"offset {_bridge.PYOBJECT_SIZE}" in why)


def test_fallback_offset_check_rejects_a_wrong_offset():
    from bridge import _bridge, _resolve

    ok, why = _resolve.prove_fallback_offset(torch, _bridge.PYOBJECT_SIZE + 8)
    assert not ok, why


def test_auto_prefers_borrow():
    bridge.set_path("auto")
    assert bridge.get_path() == "borrow"


def test_readers_match_this_torch():
    readers = bridge.available_readers()
    assert {r: i.available for r, i in readers.items()} == expected_readers(), readers
    for name, info in readers.items():
        assert (info.origin is not None) == info.available and (info.reason is None) == info.available


def test_auto_reader_prefers_the_batched_read():
    bridge.set_reader("auto")
    assert bridge.get_reader() == ("batched" if expected_readers()["batched"] else "getters")
