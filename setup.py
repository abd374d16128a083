"""Build glue only: the cffi shim and the Cython bridge. Metadata lives in pyproject.toml.

Build without isolation (``pip install --no-build-isolation .``): the shim compiles
against the installed torch's headers. Each torch gets its own build directory, so
environments with different torch versions never share object files.
"""

import sys

import torch
from Cython.Build import cythonize
from setuptools import Extension, setup

BUILD_BASE = f"build/torch-{torch.__version__}-py{sys.version_info[0]}{sys.version_info[1]}"

setup(
    # The prototype's two libraries: the entry points (libtorch's half) and the
    # implementation they reach through a registered interface (libtorch_python's).
    cffi_modules=["shim_ext/borrow_build.py:entry_ffibuilder",
                  "shim_ext/borrow_build.py:ffibuilder"],
    # The bridge needs no torch header: the handle is an opaque pointer, so one
    # build serves every torch version.
    ext_modules=cythonize(
        [Extension("bridge._bridge", ["bridge/_bridge.pyx"])],
        build_dir=BUILD_BASE,
        compiler_directives={"language_level": "3"},
    ),
    options={"build": {"build_base": BUILD_BASE}},
)
