"""cffi build script for ``_bench_owned_prototype`` (``owned_prototype.cpp``): 2.14's
``torch_tensor_from_pyobject``, built for the running torch.

Like ``internal_fixes_build.py``: out-of-line API mode, compiled against the installed
torch's headers, linking ``libtorch_python`` (``THPVariableClass``) and ``libtorch_cpu``
/ ``libc10`` into ``tmpdir`` (``peers_native.build_dir``: ``build/bench-<torch
version>-<SOABI>/``, git-ignored). Benchmark-only: nothing the bridge imports. The
function's address (``ffi.addressof(lib, ...)``) is called from Cython with the GIL held
(cffi's ``lib.`` call would release it, and the function refuses to run without it).
"""

from __future__ import annotations

import pathlib

import cffi
import torch
import torch.utils.cpp_extension as cpp_extension
from packaging.version import Version

HERE = pathlib.Path(__file__).resolve().parent
MODULE = "_bench_owned_prototype"
SOURCES = (HERE / "owned_prototype.cpp", pathlib.Path(__file__).resolve())
FUNCTION = "owned_prototype_tensor_from_pyobject"
# torch 2.14+ headers use C++20 features; older ones build with C++17.
_CXX_STD = "c++20" if Version(torch.__version__).release >= (2, 14) else "c++17"
_TORCH_LIB = cpp_extension.library_paths()

_DECLS = """
    typedef struct AtenTensorOpaque* AtenTensorHandle;
    int32_t owned_prototype_tensor_from_pyobject(void* py_obj, AtenTensorHandle* ret);
    const char* owned_prototype_last_error(void);
    const char* owned_prototype_built_for(void);
"""
ffibuilder = cffi.FFI()
ffibuilder.cdef("struct AtenTensorOpaque;" + _DECLS)
ffibuilder.set_source(
    MODULE,
    "#include <stdint.h>\nstruct AtenTensorOpaque;\nextern \"C\" {\n"
    + "".join(f"{line.strip()}\n" for line in _DECLS.strip().splitlines()) + "}\n",
    sources=[str(HERE / "owned_prototype.cpp")],
    source_extension=".cpp",
    include_dirs=[str(HERE), *cpp_extension.include_paths()],
    library_dirs=_TORCH_LIB,
    runtime_library_dirs=_TORCH_LIB,
    libraries=["torch_python", "torch_cpu", "torch", "c10"],
    define_macros=[
        ("_CFFI_NO_LIMITED_API", None),
        ("_GLIBCXX_USE_CXX11_ABI", str(int(torch._C._GLIBCXX_USE_CXX11_ABI))),
    ],
    extra_compile_args=[f"-std={_CXX_STD}", "-O2", "-fvisibility=hidden"],
    py_limited_api=False,
)


def build(tmpdir: pathlib.Path) -> pathlib.Path:
    """Compile ``_bench_owned_prototype`` into ``tmpdir``; returns the built module's path."""
    tmpdir.mkdir(parents=True, exist_ok=True)
    return pathlib.Path(ffibuilder.compile(tmpdir=str(tmpdir), verbose=False))


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(HERE))
    import peers_native

    print(build(peers_native.build_dir(torch.__version__.split("+")[0])))
