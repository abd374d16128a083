"""cffi build script for ``_bench_peers``, the native timing loops of the peers.

Out-of-line API mode, like ``shim_ext/borrow_build.py``: ``ffibuilder`` holds the
cdef and the source (``peers_native.c``); ``build(tmpdir)`` compiles it against the
installed torch's ``ATen/dlpack.h`` into ``tmpdir`` (``bench.native.build_dir``,
git-ignored). The C is plain C: ``dlpack.h`` needs no C++ and no torch library, and
the aoti functions are called through addresses resolved at run time by ``bridge``.
"""

from __future__ import annotations

import pathlib

import cffi
import torch.utils.cpp_extension as cpp_extension

from proposal import toolchain

HERE = pathlib.Path(__file__).resolve().parent
MODULE = "_bench_peers"
SOURCES = (HERE / "peers_native.c", HERE / "batched_read.h", pathlib.Path(__file__).resolve(),
           HERE.parent.parent / "shim_ext" / "include" / "torch_borrow" / "abi.h")

ffibuilder = cffi.FFI()
ffibuilder.cdef(
    """
    const char* peers_last_error(void);
    const char* peers_compiler(void);
    int peers_dlpack_version(uintptr_t api, int* major, int* minor);
    double peers_dltensor_loop(uintptr_t api, uintptr_t obj, uintptr_t type, int64_t n);
    double peers_managed_loop(uintptr_t api, uintptr_t obj, uintptr_t type, int64_t n);
    double peers_typecheck_loop(uintptr_t obj, uintptr_t type, int64_t n);
    double peers_handle_loop(uintptr_t fn, uintptr_t del, uintptr_t obj, int64_t offset,
                             int64_t n);
    double peers_getters_loop(const uintptr_t* getters, uintptr_t handle, int64_t n);
    double peers_route_loop(uintptr_t fn, uintptr_t del, uintptr_t obj, int64_t offset,
                            const uintptr_t* getters, int64_t n);
    double peers_metadata_loop(int mode, uintptr_t get, uintptr_t borrow, uintptr_t from_obj,
                               uintptr_t obj, int64_t offset, int64_t n);
    double peers_gil_check_loop(int64_t n);
    double peers_conj_getter_loop(uintptr_t is_conj, uintptr_t handle, int64_t n);
    double peers_conj_dispatcher_loop(uintptr_t new_handle, uintptr_t dispatch,
                                      uintptr_t handle, uint64_t version, int64_t n);
    uintptr_t peers_empty_function(void);
    int peers_callgrind(int op, const char* label);
    """
)
ffibuilder.set_source(
    MODULE,
    (HERE / "peers_native.c").read_text(),
    # bench/ for batched_read.h, shim_ext/include for torch_borrow/abi.h.
    include_dirs=[str(HERE), str(HERE.parent.parent / "shim_ext" / "include"),
                  *cpp_extension.include_paths()],
    # The full C API (PyGILState_*, PyCFunction_New), not the limited one cffi picks.
    define_macros=[("_CFFI_NO_LIMITED_API", None)],
    extra_compile_args=["-O2"],
    py_limited_api=False,
)


def build(tmpdir: pathlib.Path) -> pathlib.Path:
    """Compile ``_bench_peers`` into ``tmpdir``; returns the path of the built module."""
    return toolchain.compile_ffi(ffibuilder, tmpdir)
