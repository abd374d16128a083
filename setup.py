"""Build glue only: the cffi shim and the Cython bridge. Metadata lives in pyproject.toml.

Build without isolation (``pip install --no-build-isolation .``): the shim compiles
against the installed torch's headers. Each torch gets its own build directory, so
environments with different torch versions never share object files.

shim_ext needs cffi: where cffi is missing the build fails and says so (setuptools would
otherwise ignore ``cffi_modules`` with a warning and install a package without the
borrow path). The one exception is an interpreter cffi cannot build for at all
(free-threaded 3.13, ``bridge/_support.py``): the package is then built without
shim_ext, loudly, and the bridge reports that reason for the borrow path.
"""

import importlib.util
import pathlib
import sys

import torch
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = pathlib.Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("_bridge_support", HERE / "bridge" / "_support.py")
support = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(support)

ABI = "t" if support.free_threaded() else ""
BUILD_BASE = (f"build/torch-{torch.__version__}-py{sys.version_info[0]}{sys.version_info[1]}"
              f"{ABI}")
# The floor is the fallback's: the THPVariable offset proof holds from torch 2.10 on.
DEPENDENCIES = ["torch>=2.10"]


def shim_ext():
    """setup()'s cffi arguments for this interpreter: shim_ext, or none where cffi cannot
    exist (then the keyword is left out too: without cffi, setuptools does not know it)."""
    reason = support.shim_ext_unsupported()
    if reason is not None:
        print(f"NOTE: building without shim_ext: {reason}; the bridge offers the "
              f"paths this torch has without it", file=sys.stderr)
        return {}
    try:
        import cffi  # noqa: F401  (its setuptools hook builds cffi_modules)
    except ImportError as exc:
        raise SystemExit(
            f"error: shim_ext needs cffi>=1.17, which is not installed for "
            f"{sys.executable} ({exc}). Install it first (pip install 'cffi>=1.17'), then "
            f"build with --no-build-isolation.") from exc
    DEPENDENCIES.append("cffi>=1.17")
    # The prototype's two libraries: the entry points (libtorch's half) and the
    # implementation they reach through a registered interface (libtorch_python's).
    return {"cffi_modules": ["shim_ext/borrow_build.py:entry_ffibuilder",
                             "shim_ext/borrow_build.py:ffibuilder"]}


setup(
    **shim_ext(),
    install_requires=DEPENDENCIES,
    # The bridge needs no torch header: the handle is an opaque pointer, so one
    # build serves every torch version.
    ext_modules=cythonize(
        [Extension("bridge._bridge", ["bridge/_bridge.pyx"])],
        build_dir=BUILD_BASE,
        compiler_directives={"language_level": "3"},
    ),
    options={"build": {"build_base": BUILD_BASE}},
)
