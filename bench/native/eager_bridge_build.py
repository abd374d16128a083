"""Build script for the measurement build of ``bridge`` (``BRIDGE_EAGER_VALUES``): the
package's own sources, compiled so that every view makes its six most-read values when it
is made (``bridge/_bridge_view.h``'s ``bridge_view_make_six``), as a view type with member
slots would have to. ``bench/callgrind.py`` counts ``view_borrow(t)`` with it in a process
of its own: what CPython's specialised attribute loads would cost the view's making.

Into a folder of its own, a package ``bridge`` to put first on a child process's
``sys.path`` (``PYTHONPATH``); never installed, and nothing the package imports.
"""

from __future__ import annotations

import pathlib
import shutil

from proposal import toolchain

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
#: the macro, as ``bridge/_bridge_state.h`` reads it
MACRO = ("BRIDGE_EAGER_VALUES", "1")


def build(out: pathlib.Path) -> pathlib.Path:
    """Compile ``bridge/_bridge.pyx`` with ``BRIDGE_EAGER_VALUES=1`` into
    ``out/bridge/``, beside copies of the package's Python files, with the include paths
    and the compiler setup.py uses; returns ``out``, the folder to put first on
    ``sys.path``. Raises ImportError without Cython, else what Cython, setuptools and the
    compiler raise."""
    from Cython.Build import cythonize
    from setuptools import Extension

    package = out / "bridge"
    if package.exists():
        shutil.rmtree(package)
    package.mkdir(parents=True)
    for source in (ROOT / "bridge").glob("*.py"):
        shutil.copy2(source, package / source.name)
    ext = Extension("bridge._bridge", [str(ROOT / "bridge" / "_bridge.pyx")],
                    include_dirs=[str(ROOT / "shim_ext" / "include"), str(ROOT / "bridge")],
                    define_macros=[MACRO])
    tmp = out / "cython-tmp"
    exts = cythonize([ext], build_dir=str(tmp), quiet=True, force=True,
                     compiler_directives={"language_level": "3"})
    toolchain.build_extensions(exts, out, tmp)
    return out
