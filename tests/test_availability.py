"""Each torch version offers exactly the paths it must, found by symbol presence."""

import subprocess
import sys

import pytest
import torch

import bridge
from bridge import _support
from helpers.expect import TORCH, auto_path, expected_paths, expected_readers


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
    if torch_export is None and not expected_paths()["borrow"]:
        # shim_ext is not built for this interpreter, on purpose: the reason says why.
        assert info.reason == (f"no {_resolve.BORROW} in libtorch, and "
                               f"{_support.shim_ext_unsupported()}"), info
        assert "cffi" in info.reason and "free-threaded" in info.reason, info
        return
    expected = torch_export.origin if torch_export else "shim_ext/"
    assert info.origin.startswith(expected), info


def test_shim_ext_is_built_wherever_cffi_can_build():
    """A missing cffi is a build error, never a silent skip: where shim_ext can be built,
    it was (and it loads)."""
    if _support.shim_ext_unsupported() is not None:
        import importlib.util

        assert importlib.util.find_spec("shim_ext._borrow") is None
        return
    from shim_ext import _borrow

    assert _borrow.ffi.string(_borrow.lib.torch_borrow_built_for()).decode() == torch.__version__


def test_fallback_offset_is_the_compiled_sizeof_pyobject():
    from bridge import _bridge

    # 16 with the GIL; 32 on a free-threaded build (ob_tid, ob_flags, ob_mutex, ob_gc_bits,
    # ob_ref_local, ob_ref_shared come before ob_type).
    assert _bridge.PYOBJECT_SIZE == object.__basicsize__ == (32 if _support.free_threaded()
                                                              else 16)
    assert _bridge.FREE_THREADED == _support.free_threaded()
    info = bridge.available_paths()["fallback"]
    if info.available:
        assert info.origin == f"THPVariable offset {_bridge.PYOBJECT_SIZE} (proven)", info


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
    assert bridge.get_path() == auto_path()
    if expected_paths()["borrow"]:
        assert bridge.get_path() == "borrow"


def test_setup_refuses_to_build_without_cffi():
    """setup.py with cffi missing: a build error that says why, where shim_ext can be built
    (setuptools alone would ignore cffi_modules and install a package without it); on an
    interpreter cffi cannot build for, the reason instead, and the build goes on."""
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parent.parent
    code = ("import runpy, sys; sys.modules['cffi'] = None; sys.argv = ['setup.py', '--name']; "
            "runpy.run_path('setup.py', run_name='__main__')")
    done = subprocess.run([sys.executable, "-P", "-c", code], cwd=root, capture_output=True,
                          text=True, timeout=300)
    reason = _support.shim_ext_unsupported()
    if reason is None:
        assert done.returncode == 1, done
        assert "error: shim_ext needs cffi>=1.17, which is not installed" in done.stderr
    else:
        assert done.returncode == 0, done.stderr
        assert f"NOTE: building without shim_ext: {reason}" in done.stderr
        assert done.stdout.strip() == "torch-borrow-bridge"


def test_readers_match_this_torch():
    readers = bridge.available_readers()
    assert {r: i.available for r, i in readers.items()} == expected_readers(), readers
    for name, info in readers.items():
        assert (info.origin is not None) == info.available and (info.reason is None) == info.available


def test_auto_reader_prefers_the_batched_read():
    bridge.set_reader("auto")
    assert bridge.get_reader() == ("batched" if expected_readers()["batched"] else "getters")


def test_shim_ext_load_refuses_a_build_for_another_torch():
    """``shim_ext.load()`` itself refuses a ``_borrow`` built for another torch (its
    THPVariable layout is that torch's), not only the bridge before it calls load()."""
    if not expected_paths()["borrow"]:
        pytest.skip("shim_ext is not built for this interpreter (asserted above)")
    code = ("import torch; torch.__version__ = '0.0.0+other'; import shim_ext\n"
            "try:\n    shim_ext.load()\nexcept ImportError as e:\n    print('refused:', e)\n"
            "else:\n    print('loaded')")
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert "refused: shim_ext was built for torch" in out.stdout, out.stdout + out.stderr
    assert "but torch 0.0.0+other is imported" in out.stdout
