"""cffi build script for ``_bench_batched_read`` (``batched_read.cpp``): the batched
metadata read (``batched_read.h``), withdrawn from the proposal and kept as a measured
route.

Like ``owned_prototype_build.py``: compiled against the installed torch's headers into
``bench.native.build_dir``. ``batched_read_init(address)`` registers the borrow it
reads through (``torch_tensor_borrow_from_pyobject``, resolved by the bridge); the
two read functions are called from the native loops by address (dlsym on the built
module), with the GIL held.
"""

from __future__ import annotations

import pathlib

import cffi

from proposal import toolchain

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
MODULE = "_bench_batched_read"
SOURCES = (HERE / "batched_read.cpp", HERE / "batched_read.h", pathlib.Path(__file__).resolve(),
           pathlib.Path(toolchain.__file__),
           ROOT / "shim_ext" / "include" / "torch_borrow" / "abi.h")

# Only what Python calls: the struct and the two reads are batched_read.h's, found by
# address (dlsym on the built module) by the native loops' wrapper.
_DECLS = """
    void batched_read_init(uintptr_t borrow);
"""
ffibuilder = cffi.FFI()
ffibuilder.cdef(_DECLS)
_options = toolchain.torch_cpp_options(HERE / "batched_read.cpp", _DECLS, '"batched_read.h"')
_options["include_dirs"].append(str(ROOT / "shim_ext" / "include"))
ffibuilder.set_source(MODULE, **_options)


def build(tmpdir: pathlib.Path) -> pathlib.Path:
    """Compile ``_bench_batched_read`` into ``tmpdir``; returns the built module's path."""
    return toolchain.compile_ffi(ffibuilder, tmpdir)

