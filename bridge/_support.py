"""What the running interpreter can build: the one rule shared by setup.py and the bridge.

Standard library only: ``setup.py`` loads this file by path, before anything is built.
"""

from __future__ import annotations

import sys
import sysconfig

#: The two ways ``setup.py`` builds shim_ext (the same C++ sources, the same two libraries).
ROUTE_CFFI = "cffi"
ROUTE_SETUPTOOLS = "setuptools Extension"


def free_threaded() -> bool:
    """Whether this CPython was built with ``--disable-gil`` (``Py_GIL_DISABLED``)."""
    return bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def cffi_unsupported() -> str | None:
    """Why cffi cannot build extension modules for this interpreter, or None where it can.
    cffi merely missing is not such a reason: that is a build error (``setup.py``)."""
    if free_threaded() and sys.version_info < (3, 14):
        return (f"cffi does not support free-threaded CPython "
                f"{sys.version_info[0]}.{sys.version_info[1]} (its free-threading support "
                f"starts at 3.14t)")
    return None


def shim_ext_route() -> tuple[str, str]:
    """``(route, why)``: how ``setup.py`` builds shim_ext here. cffi wherever cffi can build;
    setuptools' own ``Extension`` (``shim_ext/pymodule.c`` around the same C++ sources)
    only where it cannot."""
    reason = cffi_unsupported()
    if reason is None:
        return ROUTE_CFFI, "cffi builds for this interpreter"
    return ROUTE_SETUPTOOLS, f"{reason}, so the same sources are built without cffi"
