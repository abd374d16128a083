"""cffi build script for ``_bench_owned_prototype`` (``owned_prototype.cpp``): 2.14's
``torch_tensor_from_pyobject``, built for the running torch.

Like ``proposal/fixes/internal_fixes_build.py``: out-of-line API mode, compiled against the installed
torch's headers, linking ``libtorch_python`` (``THPVariableClass``) and ``libtorch_cpu``
/ ``libc10`` into ``tmpdir`` (``bench.native.build_dir``: ``build/bench-<torch
version>-<SOABI>/``, git-ignored). Benchmark-only: nothing the bridge imports. The
function's address (``ffi.addressof(lib, ...)``) is called from Cython with the GIL held
(cffi's ``lib.`` call would release it, and the function refuses to run without it).
"""

from __future__ import annotations

import pathlib

import cffi

from proposal import toolchain

HERE = pathlib.Path(__file__).resolve().parent
MODULE = "_bench_owned_prototype"
SOURCES = (HERE / "owned_prototype.cpp", pathlib.Path(__file__).resolve(),
           pathlib.Path(toolchain.__file__))
FUNCTION = "owned_prototype_tensor_from_pyobject"

_DECLS = """
    typedef struct AtenTensorOpaque* AtenTensorHandle;
    int32_t owned_prototype_tensor_from_pyobject(void* py_obj, AtenTensorHandle* ret);
    const char* owned_prototype_last_error(void);
    const char* owned_prototype_built_for(void);
"""
ffibuilder = cffi.FFI()
ffibuilder.cdef("struct AtenTensorOpaque;" + _DECLS)
ffibuilder.set_source(MODULE, **toolchain.torch_cpp_options(HERE / "owned_prototype.cpp",
                                                            "struct AtenTensorOpaque;\n" + _DECLS))


def build(tmpdir: pathlib.Path) -> pathlib.Path:
    """Compile ``_bench_owned_prototype`` into ``tmpdir``; returns the built module's path."""
    return toolchain.compile_ffi(ffibuilder, tmpdir)

