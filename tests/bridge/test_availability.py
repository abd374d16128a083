"""Each torch version offers exactly the paths it must, found by symbol presence."""

import subprocess
import sys

import pytest
import torch

import bridge
from bridge import _support
from helpers.expect import TORCH, auto_path, expected_paths
from helpers.paths import ROOT


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

    torch_export = _resolve.find_symbol(torch, _resolve.BORROW)
    expected = torch_export.origin if torch_export else "shim_ext/"
    assert info.origin.startswith(expected), info


def test_the_public_look_ups_give_the_resolutions_addresses():
    """find_symbol / find_prototyped (what the benchmarks use) answer as resolve() does."""
    from bridge import _bridge, _resolve

    res = _resolve.resolve(_bridge.PYOBJECT_SIZE)
    for name in (*_resolve.GETTERS, _resolve.OWNED, _resolve.DELETE):
        sym = _resolve.find_symbol(torch, name)
        assert (sym.address if sym else None) == (
            res.symbols[name].address if name in res.symbols else None), name
    assert _resolve.find_symbol(torch, "torch_borrow_no_such_function") is None
    for name in (_resolve.IS_CONJ, _resolve.CUSTOM_METADATA):
        sym, why = _resolve.find_prototyped(torch, name)
        assert (sym is None) == bool(why), (name, sym, why)
        assert (sym.address if sym else None) == (
            res.symbols[name].address if name in res.symbols else None), name
    sym, why = _resolve.find_prototyped(torch, "torch_borrow_no_such_function")
    assert sym is None and "torch_borrow_no_such_function" in why, why


PROTOTYPED = [("torch_tensor_borrow_from_pyobject", -1), ("torch_is_conj", -1),
              ("torch_is_neg", -1), ("torch_borrow_custom_metadata", -2)]


@pytest.mark.parametrize("name, module", PROTOTYPED)
def test_a_prototyped_function_is_torchs_own_where_a_torch_library_exports_it(name, module):
    """torch_borrow/tables.h's rule, which the bridge and consumer.h both call
    (torch_borrow_find_prototyped): the first library handed in that exports a function
    wins over shim_ext's, and shim_ext's is found where none does (-1: shim_ext._entry,
    -2: shim_ext._borrow). A torch that ships the function is played by shim_ext's own
    library handed in as one of torch's."""
    import ctypes
    import os

    import shim_ext
    from bridge import _bridge

    lib = ctypes.CDLL(shim_ext.load()[-1 - module].__file__, mode=os.RTLD_NOLOAD)
    want = ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
    torch_libs = [h for _, h in _resolve_libs()]
    assert _bridge._find_prototyped(name, torch_libs) == (want, module, "")
    assert _bridge._find_prototyped(name, torch_libs + [lib._handle]) == (
        want, len(torch_libs), "")  # a torch library that exports it: no shim_ext
    assert _bridge._find_prototyped(name, [lib._handle], skip_torch=True) == (
        want, module, "")
    address, _, why = _bridge._find_prototyped(name, torch_libs, skip_prototype=True)
    assert address is None and why == "shim_ext left out", why


def test_a_function_nobody_exports_is_missing_with_the_reason():
    from bridge import _bridge

    name = "torch_borrow_no_such_function"
    address, _, why = _bridge._find_prototyped(name, [h for _, h in _resolve_libs()])
    assert address is None and why == f"shim_ext exports no {name}: rebuild it", why


def _resolve_libs():
    from bridge import _bridge

    libs = _bridge._TorchLibraries(torch)
    return list(zip(libs.origins, libs.handles))


def test_shim_ext_is_built_on_every_interpreter():
    """A missing cffi is a build error, never a silent skip: where cffi can build, shim_ext
    is cffi's build (and it loads); where it cannot (free-threaded 3.13), setuptools'
    Extension builds the same sources into the same two libraries."""
    import shim_ext
    from shim_ext import _borrow, _entry

    route, why = _support.shim_ext_route()
    assert shim_ext.built_by(_borrow) == shim_ext.built_by(_entry) == route, why
    if _support.free_threaded() and sys.version_info < (3, 14):
        assert route == _support.ROUTE_SETUPTOOLS
        assert "cffi does not support free-threaded CPython 3.13" in why
    else:
        assert route == _support.ROUTE_CFFI and _support.cffi_unsupported() is None
        assert type(_borrow.ffi).__module__ != "builtins"  # a cffi FFI, not pymodule.c's
    assert shim_ext.built_for(_borrow) == torch.__version__
    # The cffi-shaped spelling works on both builds (shim_ext/examples use it).
    assert _borrow.ffi.string(_borrow.lib.torch_borrow_built_for()).decode() == torch.__version__
    assert shim_ext.load() == (_entry, _borrow)


def test_shim_ext_exports_the_entry_points_by_name():
    """Either build: the C entry points are found with dlsym in _entry's library, and the
    two libraries stay two (_entry does not reach _borrow's half but through load())."""
    import ctypes
    import os

    from shim_ext import _borrow, _entry

    entry = ctypes.CDLL(_entry.__file__, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    for name in ("torch_tensor_borrow_from_pyobject", "torch_is_conj", "torch_is_neg",
                 "torch_borrow_set_impl"):
        assert getattr(entry, name), name
    for name in ("torch_tensor_get_metadata", "torch_tensor_borrow_metadata_from_pyobject"):
        with pytest.raises(AttributeError):  # the withdrawn batched read lives in bench/
            getattr(entry, name)
    borrow = ctypes.CDLL(_borrow.__file__, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    assert (borrow.torch_borrow_impl and borrow.torch_borrow_direct_from_pyobject
            and borrow.torch_borrow_custom_metadata)
    for name in ("torch_borrow_impl", "torch_borrow_direct_from_pyobject",
                 "torch_borrow_custom_metadata"):
        with pytest.raises(AttributeError):
            getattr(entry, name)


def test_info_says_how_shim_ext_was_built():
    from bridge import _info

    report = _info.report()
    route, why = _support.shim_ext_route()
    assert report["shim_ext_build"] == f"{route} ({why})"
    assert f"shim_ext built by {route} ({why})" in _info.format_report(report)


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
    """setup.py with cffi missing: a build error that says why, where cffi can build
    (setuptools alone would ignore cffi_modules and install a package without it); on an
    interpreter cffi cannot build for, the setuptools route instead, said, and the build
    goes on."""
    root = ROOT
    code = ("import runpy, sys; sys.modules['cffi'] = None; sys.argv = ['setup.py', '--name']; "
            "runpy.run_path('setup.py', run_name='__main__')")
    done = subprocess.run([sys.executable, "-P", "-c", code], cwd=root, capture_output=True,
                          text=True, timeout=300)
    route, why = _support.shim_ext_route()
    assert f"NOTE: building shim_ext with {route}: {why}" in done.stderr, done.stderr
    if route == _support.ROUTE_CFFI:
        assert done.returncode == 1, done
        assert "error: building torch-borrow-bridge needs cffi>=1.17" in done.stderr, done.stderr
        assert "cffi is not installed for" in done.stderr and "pip install 'cffi>=1.17'" in done.stderr
    else:
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "torch-borrow-bridge"


def test_shim_ext_load_refuses_a_build_for_another_torch():
    """``shim_ext.load()`` itself refuses a ``_borrow`` built for another torch (its
    THPVariable layout is that torch's), not only the bridge before it calls load()."""
    code = ("import torch; torch.__version__ = '0.0.0+other'; import shim_ext\n"
            "try:\n    shim_ext.load()\nexcept ImportError as e:\n    print('refused:', e)\n"
            "else:\n    print('loaded')")
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert "refused: shim_ext was built for torch" in out.stdout, out.stdout + out.stderr
    assert "but torch 0.0.0+other is imported" in out.stdout
