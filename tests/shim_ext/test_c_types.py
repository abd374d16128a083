"""Every C type is declared once: ``shim_ext/include/torch_borrow/abi.h`` (with
``bridge/_abi.pxd`` for Cython) holds the stable ABI's types for the bridge, the
benchmarks and the examples, and the cffi modules declare only what Python calls through
``lib``, no struct among them; what they do declare agrees with the C compiler's view."""

from __future__ import annotations

import ctypes

import pytest

import shim_ext
from helpers.paths import ROOT



def _cffi_modules():
    from shim_ext import _borrow, _entry

    mods = [m for m in (_entry, _borrow) if shim_ext.built_by(m) == shim_ext.CFFI]
    if not mods:
        pytest.skip("shim_ext was built with setuptools' Extension here (no cffi module)")
    return mods


def test_the_cffi_modules_declare_no_struct():
    for mod in _cffi_modules():
        typedefs, structs, unions = mod.ffi.list_types()
        # the handle's opaque struct only: never a layout cffi would have to match
        assert structs == ["AtenTensorOpaque"] and unions == [], (mod.__name__, structs)
        with pytest.raises(mod.ffi.error):
            mod.ffi.sizeof("struct AtenTensorOpaque")  # incomplete: no layout declared
        assert set(typedefs) <= {"AtenTensorHandle", "AOTITorchError"}, typedefs


def test_their_typedefs_match_the_compiler():
    for mod in _cffi_modules():
        ffi = mod.ffi
        assert ffi.sizeof("AtenTensorHandle") == ctypes.sizeof(ctypes.c_void_p)
        assert ffi.sizeof("AOTITorchError") == 4
        assert ffi.typeof("AOTITorchError") is ffi.typeof("int32_t")


def test_the_abi_header_is_the_one_declaration():
    """No other source declares the stable ABI's handle typedef or the withdrawn
    batched struct: the bridge and the benchmarks include (or cimport) the header."""
    sources = [p for pattern in ("bridge/*.pyx", "bridge/*.pxd", "bridge/*.h", "bench/**/*.c",
                                 "bench/**/*.pyx", "bench/**/*.h", "shim_ext/*.cpp",
                                 "shim_ext/examples/*.c", "shim_ext/examples/*.cpp")
               for p in ROOT.glob(pattern)]
    assert sources
    for p in sources:
        text = p.read_text()
        assert "typedef struct AtenTensorOpaque* AtenTensorHandle" not in text, p
        assert "ctypedef void* AtenTensorHandle" not in text, p
        if p.name != "batched_read.h":
            assert "typedef struct TorchTensorMetadata" not in text, p
    assert (ROOT / "shim_ext/include/torch_borrow/abi.h").read_text().count(
        "typedef struct AtenTensorOpaque* AtenTensorHandle;") == 1
