"""Build ``_bench_c_shims`` (``c_shims.cpp``: a CPython extension calling
torch's generated C shims) and, for a torch without ``torch_tensor_to_pyobject``
(< 2.14), ``_bench_c_shims_to_pyobject`` (``to_pyobject.cpp``: 2.14's
implementation built for it, with cffi like ``owned_prototype_build.py``).

``c_shims.cpp`` includes only torch's C shim headers (``aoti_torch/c/shim.h``; with
torch 2.15+ also the generated ``c_shim_cpu.h`` / ``c_shim_cuda.h`` / ``c_shim_aten.h``
and ``stable/c/shim.h``, to check every function type it calls through against torch's
own declaration: ``C_SHIMS_CHECK_SIGNATURES``). It links no torch library: the
addresses come from ``consumer.py``. C++17 before torch 2.14, C++20 from 2.14 (the
headers' own needs). Both modules go into ``bench.native.build_dir(...)`` (git-ignored).
"""

from __future__ import annotations

import pathlib
import types

import torch
import torch.utils.cpp_extension as cpp_extension
from packaging.version import Version
from proposal import toolchain

HERE = pathlib.Path(__file__).resolve().parent
MODULE = "_bench_c_shims"
CPP = HERE / "c_shims.cpp"
SOURCES = (CPP, pathlib.Path(__file__).resolve())
_RELEASE = Version(torch.__version__).release

#: the torch releases whose headers declare every function the consumer calls
CHECK_SIGNATURES = _RELEASE >= (2, 15)


def build(out: pathlib.Path) -> pathlib.Path:
    """Compile ``_bench_c_shims`` into ``out``; returns the module's path."""
    from setuptools import Extension

    macros = [("C_SHIMS_CHECK_SIGNATURES", None)] if CHECK_SIGNATURES else []
    ext = Extension(MODULE, [str(CPP)], language="c++",
                    include_dirs=cpp_extension.include_paths(), define_macros=macros,
                    extra_compile_args=[f"-std={toolchain.cxx_std()}", "-O2", "-fvisibility=hidden",
                                        "-Wall", "-Wno-unused-function"])
    return toolchain.build_extensions([ext], out, out / "c-shims-tmp")[0]


def _to_pyobject_builder():
    import cffi


    decls = """
        typedef struct AtenTensorOpaque* AtenTensorHandle;
        int32_t c_shims_to_pyobject(AtenTensorHandle ath, void* py_type, void** ret);
        const char* c_shims_to_pyobject_last_error(void);
    """
    ffibuilder = cffi.FFI()
    ffibuilder.cdef("struct AtenTensorOpaque;" + decls)
    cpp = HERE / "to_pyobject.cpp"
    ffibuilder.set_source("_bench_c_shims_to_pyobject", **toolchain.torch_cpp_options(
        cpp, "struct AtenTensorOpaque;\n" + decls))

    def build(tmpdir: pathlib.Path) -> pathlib.Path:
        return toolchain.compile_ffi(ffibuilder, tmpdir)

    return types.SimpleNamespace(
        MODULE="_bench_c_shims_to_pyobject", build=build,
        SOURCES=(cpp, pathlib.Path(__file__).resolve(), pathlib.Path(toolchain.__file__)))


def to_pyobject_builder():
    """The builder (``MODULE``, ``SOURCES``, ``build``) of ``_bench_c_shims_to_pyobject``
    for ``bench.native.built_module``; its function is ``c_shims_to_pyobject``."""
    return _to_pyobject_builder()

