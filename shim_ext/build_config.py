"""What both builds of shim_ext share (sources, torch's headers and libraries, flags),
and the setuptools build (``extensions()``, with ``pymodule.c``) used where cffi cannot
build (free-threaded CPython 3.13); why two builds and how each exports the entry
points: ``shim_ext/README.md``. Imports torch: run without pip's build isolation.
"""

from __future__ import annotations

import json
import os
import pathlib

import torch
import torch.utils.cpp_extension as cpp_extension
from packaging.version import Version

HERE = pathlib.Path(__file__).resolve().parent

# torch 2.14+ headers use C++20 features; older ones build with C++17.
CXX_STD = "c++20" if Version(torch.__version__).release >= (2, 14) else "c++17"
TORCH_LIB = cpp_extension.library_paths()
#: module -> (C++ sources, libraries): _entry links libtorch only (as shim_common.cpp lives
#: in libtorch), _borrow libtorch_python too (THPVariable).
MODULES = {
    "_entry": (["entry.cpp"], ["torch_cpu", "torch", "c10"]),
    "_borrow": (["borrow.cpp"], ["torch_python", "torch_cpu", "torch", "c10"]),
}
#: The torch the libraries are compiled against: THPVariable's layout is baked into
#: _borrow, so shim_ext.load() and the bridge refuse it under any other torch.
BUILT_FOR = torch.__version__


def _rel(path: pathlib.Path) -> str:
    # setuptools wants source paths relative to the working directory.
    return os.path.relpath(path)


def options(module: str) -> dict:
    """Extension keyword arguments for ``module`` ("_entry" or "_borrow"), shared by both
    routes (cffi's ``set_source`` takes the same ones)."""
    sources, libraries = MODULES[module]
    return dict(
        sources=[_rel(HERE / s) for s in sources],
        include_dirs=[str(HERE / "include"), *cpp_extension.include_paths()],
        library_dirs=TORCH_LIB,
        # Already loaded by `import torch` when the module is imported; the
        # rpath only helps a process that imports shim_ext first.
        runtime_library_dirs=TORCH_LIB,
        libraries=libraries,
        define_macros=[("_GLIBCXX_USE_CXX11_ABI", str(int(torch._C._GLIBCXX_USE_CXX11_ABI)))],
        extra_compile_args=[f"-std={CXX_STD}", "-O2", "-fvisibility=hidden"],
        # The full C API is used (torch's headers need it): never tagged abi3.
        py_limited_api=False,
    )


def extensions():
    """The setuptools route: ``shim_ext._entry`` and ``shim_ext._borrow`` as plain
    ``Extension``s, each the same C++ sources as cffi builds plus ``pymodule.c`` compiled
    for that module (``SHIM_EXT_ENTRY`` / ``SHIM_EXT_BORROW``). ``-std=c++..`` reaches only
    the C++ files (setup.py's build_ext)."""
    from setuptools import Extension

    out = []
    for module, macro in (("_entry", "SHIM_EXT_ENTRY"), ("_borrow", "SHIM_EXT_BORROW")):
        opts = options(module)
        opts["sources"] = [_rel(HERE / "pymodule.c"), *opts["sources"]]
        opts["define_macros"] += [(macro, None),
                                  ("TORCH_BORROW_BUILT_FOR", json.dumps(BUILT_FOR))]
        out.append(Extension(f"shim_ext.{module}", language="c++", **opts))
    return out
