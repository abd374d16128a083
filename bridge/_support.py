"""What the running interpreter can build: the one rule shared by setup.py and the bridge.

Standard library only: ``setup.py`` loads this file by path, before anything is built.
"""

from __future__ import annotations

import sys
import sysconfig


def free_threaded() -> bool:
    """Whether this CPython was built with ``--disable-gil`` (``Py_GIL_DISABLED``)."""
    return bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def shim_ext_unsupported() -> str | None:
    """Why ``shim_ext`` (the cffi-built borrow prototype) cannot be built for this
    interpreter, or None where it can. cffi itself missing is not such a reason: that is a
    build error (``setup.py``), never a silent skip."""
    if free_threaded() and sys.version_info < (3, 14):
        return (f"cffi does not support free-threaded CPython "
                f"{sys.version_info[0]}.{sys.version_info[1]} (its free-threading support "
                f"starts at 3.14t), so shim_ext, the borrow prototype, is not built for "
                f"this interpreter")
    return None
