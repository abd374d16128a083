"""Build script for ``_bench_unpack_launcher`` (``unpack_launcher.cpp``): a launcher's
argument intake on torch's private route (``THPVariable_Check`` + ``THPVariable_Unpack``)
and on each stable one, as a CPython extension of ``METH_FASTCALL`` functions.

A setuptools ``Extension`` compiled against the installed torch's headers
(``torch/csrc/autograd/python_variable.h``: the private route is a build against one
torch), linking ``libtorch_python`` (``THPVariableClass``) and the libraries below it,
into ``bench.native.build_dir`` (git-ignored). Benchmark-only: nothing the bridge imports.
"""

from __future__ import annotations

import pathlib

from proposal import toolchain

HERE = pathlib.Path(__file__).resolve().parent
MODULE = "_bench_unpack_launcher"
ABI_H = HERE.parent.parent / "shim_ext" / "include" / "torch_borrow" / "abi.h"
SOURCES = (HERE / "unpack_launcher.cpp", ABI_H, pathlib.Path(__file__).resolve(),
           pathlib.Path(toolchain.__file__))


def build(tmpdir: pathlib.Path) -> pathlib.Path:
    """Compile ``_bench_unpack_launcher`` into ``tmpdir``; returns the built module's path."""
    import torch
    import torch.utils.cpp_extension as cpp_extension
    from setuptools import Extension

    torch_lib = cpp_extension.library_paths()
    ext = Extension(
        MODULE, sources=[str(HERE / "unpack_launcher.cpp")], language="c++",
        include_dirs=[str(toolchain.SHIM_INCLUDE), *cpp_extension.include_paths()],
        library_dirs=torch_lib, runtime_library_dirs=torch_lib,
        libraries=["torch_python", "torch_cpu", "torch", "c10"],
        define_macros=[("_GLIBCXX_USE_CXX11_ABI", str(int(torch._C._GLIBCXX_USE_CXX11_ABI)))],
        extra_compile_args=[f"-std={toolchain.cxx_std()}", "-O2", "-fvisibility=hidden"])
    return toolchain.build_extensions([ext], tmpdir, tmpdir / "unpack_launcher.tmp")[0]
