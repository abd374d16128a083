"""Build glue only: shim_ext and the Cython bridge. Metadata lives in pyproject.toml.

Build without isolation (``pip install --no-build-isolation .``): the shim compiles
against the installed torch's headers. Each torch gets its own build directory, so
environments with different torch versions never share object files.

shim_ext (the same C++ sources into the same two libraries, ``_entry`` and ``_borrow``)
is built by cffi wherever cffi can build: there, cffi missing is a build error that says
so (setuptools would otherwise ignore ``cffi_modules`` with a warning and install a
package without the borrow path). Only where cffi cannot build at all (free-threaded
3.13, ``bridge/_support.py``) it is built by setuptools' own ``Extension`` instead
(``shim_ext/build_config.py``, ``shim_ext/pymodule.c``). Which route, and why, is printed
at build time (and ``python -m bridge info`` says it).
"""

import hashlib
import importlib
import importlib.util
import pathlib
import sys
from importlib import metadata

from packaging.version import Version


def require(dist: str, minimum: str, why: str, module: str | None = None) -> None:
    """Stop the build with the pip command to run when ``dist`` is missing (or its
    ``module`` does not import) or older than ``minimum`` (without build isolation pip
    installs none of the build requirements)."""
    try:
        found = metadata.version(dist)
        if module is not None:
            importlib.import_module(module)
    except (metadata.PackageNotFoundError, ImportError):
        found = None
    if found is None or Version(found) < Version(minimum):
        have = f"{dist} {found} is installed" if found else f"{dist} is not installed"
        raise SystemExit(f"error: building torch-borrow-bridge needs {dist}>={minimum} ({why}); "
                         f"{have} for {sys.executable}. Run: {sys.executable} -m pip install "
                         f"'{dist}>={minimum}', then build again with --no-build-isolation.")


require("Cython", "3.1", "the freethreading_compatible directive and critical sections",
        "Cython")

import torch  # noqa: E402  (after the checks: the build needs this torch's headers)
from Cython.Build import cythonize  # noqa: E402
from setuptools import Extension, setup  # noqa: E402
from setuptools.command.build_ext import build_ext as _build_ext  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("_bridge_support", HERE / "bridge" / "_support.py")
support = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(support)

ABI = "t" if support.free_threaded() else ""
# One build folder per environment (torch, interpreter and the environment's prefix): a
# build reused by another environment would link libraries with a RUNPATH into the first.
ENV_KEY = hashlib.sha256(str(pathlib.Path(sys.prefix).resolve()).encode()).hexdigest()[:8]
BUILD_BASE = (f"build/torch-{torch.__version__}-py{sys.version_info[0]}{sys.version_info[1]}"
              f"{ABI}-{ENV_KEY}")
# The built package records the torch it was built for: shim_ext's _borrow reads
# THPVariable with that torch's layout, so the wheel pins that release exactly, and
# `pip install --upgrade torch` then reports the conflict instead of leaving a package
# that refuses to load. The public version only (2.15.0, not 2.15.0+cpu): pip 23 finds no
# solution for a local-tagged pin beside a constraint file's `torch==2.15.0` (the
# Makefile's and the README's), and shim_ext.load() compares the local tag itself. Any
# torch from 2.10 on builds (the fallback's floor: the THPVariable offset proof holds from
# 2.10 on); the pin is whichever torch the build finds.
DEPENDENCIES = [f"torch=={Version(torch.__version__).public}"]


def _build_config():
    spec = importlib.util.spec_from_file_location("_shim_ext_build_config",
                                                  HERE / "shim_ext" / "build_config.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class build_ext(_build_ext):
    """setuptools' build_ext, with the C++ standard flag kept off C sources (the setuptools
    route compiles shim_ext/pymodule.c, C, beside the C++ of one library, and an Extension
    has one list of compile flags for all its sources), and one temporary directory per
    extension (both libraries compile pymodule.c, with different macros, into an object
    file of the same name)."""

    def build_extension(self, ext):
        compile_, build_temp = self.compiler._compile, self.build_temp
        self.build_temp = str(pathlib.Path(build_temp) / ext.name)

        def _compile(obj, src, ext_, cc_args, extra_postargs, pp_opts):
            if src.endswith(".c"):
                extra_postargs = [a for a in extra_postargs if not a.startswith("-std=c++")]
            return compile_(obj, src, ext_, cc_args, extra_postargs, pp_opts)

        self.compiler._compile = _compile
        try:
            super().build_extension(ext)
        finally:
            self.compiler._compile, self.build_temp = compile_, build_temp


def shim_ext():
    """setup()'s shim_ext arguments for this interpreter: cffi's modules wherever cffi can
    build (then cffi missing is an error), else the same sources as setuptools
    Extensions (``shim_ext_extensions``: the ext_modules to add)."""
    route, why = support.shim_ext_route()
    print(f"NOTE: building shim_ext with {route}: {why}", file=sys.stderr)
    if route == support.ROUTE_SETUPTOOLS:
        return {}, _build_config().extensions()
    # cffi's setuptools hook builds cffi_modules; missing, setuptools would only warn.
    require("cffi", "1.17", "shim_ext, the borrow prototype, is built with it here", "cffi")
    DEPENDENCIES.append("cffi>=1.17")
    # The prototype's two libraries: the entry points (libtorch's half) and the
    # implementation they reach through a registered interface (libtorch_python's).
    return {"cffi_modules": ["shim_ext/borrow_build.py:entry_ffibuilder",
                             "shim_ext/borrow_build.py:ffibuilder"]}, []


SHIM_EXT_ARGS, SHIM_EXT_EXTENSIONS = shim_ext()

setup(
    **SHIM_EXT_ARGS,
    install_requires=DEPENDENCIES,
    # The bridge needs no torch header: the handle is an opaque pointer, so one
    # build serves every torch version.
    ext_modules=cythonize(
        # torch_borrow/abi.h: the stable ABI's types, declared once (no torch header);
        # torch_borrow/reader.h: the one reader, which consumer.h shares;
        # torch_borrow/tables.h: the dtype and device rules its tables come from;
        # torch_borrow/libraries.h: the one search of torch's loaded libraries.
        # bridge/_bridge_*.h: the view type and the bridge's front end to the reader, in C
        # (the .pyx includes them).
        [Extension("bridge._bridge", ["bridge/_bridge.pyx"],
                   include_dirs=[str(HERE / "shim_ext" / "include"), str(HERE / "bridge")],
                   depends=[str(p) for p in sorted((HERE / "bridge").glob("_bridge*.h"))]
                   + [str(HERE / "shim_ext" / "include" / "torch_borrow" / h)
                      for h in ("abi.h", "reader.h", "tables.h", "libraries.h")]
                   + [str(p) for p in sorted((HERE / "bridge").glob("*.pxi"))])],
        build_dir=BUILD_BASE,
        compiler_directives={"language_level": "3"},
    ) + SHIM_EXT_EXTENSIONS,
    cmdclass={"build_ext": build_ext},
    options={"build": {"build_base": BUILD_BASE}},
)
