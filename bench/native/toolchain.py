"""How the benchmark's compiled modules are built, for every builder of ``bench/native/``
and ``bench/fallback_ops/``: ``torch_cpp_options`` (cffi's ``set_source`` arguments for
C++ built against the installed torch), ``compile_ffi`` (a cffi module into a build
folder) and ``build_extensions`` (setuptools extensions into a build folder)."""

from __future__ import annotations

import pathlib

import torch
import torch.utils.cpp_extension as cpp_extension
from packaging.version import Version

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
# main's SafeGilScopedAcquire, verbatim (safe_gil.h includes it), and the one
# attached-thread test (shim_ext's header, which the patch's header is made from).
EXCERPTS = REPO / "proposal" / "third_party" / "pytorch" / "excerpts"
SHIM_INCLUDE = REPO / "shim_ext" / "include"
# torch 2.14+ headers use C++20 features; older ones build with C++17.
CXX_STD = "c++20" if Version(torch.__version__).release >= (2, 14) else "c++17"
_TORCH_LIB = cpp_extension.library_paths()


def torch_cpp_options(cpp: pathlib.Path, decls: str, *includes: str) -> dict:
    """``set_source`` arguments for a benchmark module of C++ built against the installed
    torch (``internal_fixes.cpp``, ``owned_prototype.cpp``, ...): the preamble declares
    ``decls`` as ``extern "C"`` after ``includes``; the full C API (not cffi's limited
    one), torch's C++ ABI flag, C++20 for torch 2.14+ headers (C++17 before), and the
    libraries down to libtorch_python. Include folders: ``bench/native/``, the vendored
    PyTorch excerpts, ``shim_ext/include`` and torch's."""
    preamble = "".join(f"#include {h}\n" for h in ("<stdint.h>", *includes))
    return dict(
        source=preamble + 'extern "C" {\n'
        + "".join(f"{line.strip()}\n" for line in decls.strip().splitlines()) + "}\n",
        sources=[str(cpp)],
        source_extension=".cpp",
        include_dirs=[str(HERE), str(EXCERPTS), str(SHIM_INCLUDE), *cpp_extension.include_paths()],
        library_dirs=_TORCH_LIB,
        runtime_library_dirs=_TORCH_LIB,
        libraries=["torch_python", "torch_cpu", "torch", "c10"],
        define_macros=[
            # torch's headers need the full C API, not the limited one cffi picks.
            ("_CFFI_NO_LIMITED_API", None),
            ("_GLIBCXX_USE_CXX11_ABI", str(int(torch._C._GLIBCXX_USE_CXX11_ABI))),
        ],
        extra_compile_args=[f"-std={CXX_STD}", "-O2", "-fvisibility=hidden"],
        py_limited_api=False,
    )


def compile_ffi(ffibuilder, out: pathlib.Path) -> pathlib.Path:
    """Compile ``ffibuilder``'s module into ``out`` (made if missing); returns the built
    module's path. Raises what cffi / the compiler raise (``cffi.VerificationError``)."""
    out.mkdir(parents=True, exist_ok=True)
    return pathlib.Path(ffibuilder.compile(tmpdir=str(out), verbose=False))


def build_extensions(exts: list, out: pathlib.Path, tmp: pathlib.Path) -> list[pathlib.Path]:
    """Build setuptools ``Extension`` objects with ``build_ext`` into ``out`` (intermediate
    files in ``tmp``); returns the built modules' paths, in ``exts``' order. Raises what
    setuptools / the compiler raise (``distutils`` errors)."""
    from setuptools import Distribution

    out.mkdir(parents=True, exist_ok=True)
    dist = Distribution({"ext_modules": exts})
    cmd = dist.get_command_obj("build_ext")
    cmd.build_lib = str(out)
    cmd.build_temp = str(tmp)
    cmd.inplace = False
    cmd.ensure_finalized()
    cmd.run()
    return [pathlib.Path(cmd.get_ext_fullpath(ext.name)) for ext in exts]
