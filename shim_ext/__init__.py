"""The prototype of ``torch_tensor_borrow_from_pyobject``, in the patches' shape.

Two libraries, built from the same C++ sources by cffi (``borrow_build.py``) or, where
cffi cannot build (free-threaded 3.13), as setuptools Extensions (``pymodule.c``;
``build_config.py``): ``shim_ext._entry``, the stable C entry points under their own
names, linking libtorch only, found with ``dlsym`` as in libtorch; ``shim_ext._borrow``,
the ``THPVariable`` side, reached through a registered interface (as libtorch reaches
libtorch_python), with ``torch_borrow_direct_from_pyobject`` beside it (a benchmark row).
Nothing is imported here; ``load()`` does the work, after ``import torch``.
``get_include()`` is the folder of ``torch_borrow/consumer.h`` for C consumers (and of
``torch_borrow/consumer.pxd`` for Cython ones); the header needs this package only at
build time, if at all: it reads through torch's own functions where shim_ext is absent.
"""

from __future__ import annotations

_loaded = None

#: The command that rebuilds this package for the torch now installed (run it from the
#: torch-borrow-bridge source folder): shim_ext's ``_borrow`` reads ``THPVariable`` with
#: the layout of the torch it was compiled against.
REBUILD = ("pip install --no-build-isolation --no-cache-dir --force-reinstall --no-deps "
           "<the torch-borrow-bridge source folder>")


def get_include() -> str:
    """The folder to put on a C or C++ compiler's include path (``-I``) for
    ``#include <torch_borrow/consumer.h>`` (and ``torch_borrow/abi.h``, the stable ABI's C
    types): inside the installed package, as ``numpy.get_include()`` is.

    Returns
    -------
    str
        An absolute path; ``torch_borrow/consumer.h`` and ``torch_borrow/consumer.pxd``
        are in it (also Cython's include path, for ``cimport torch_borrow.consumer``).
        Needs no torch import and no compiled module.
    """
    import os

    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")

#: ``built_by()``'s answers.
CFFI = "cffi"
SETUPTOOLS = "setuptools Extension"


def built_by(module) -> str:
    """How ``module`` (``_entry`` or ``_borrow``) was built: ``CFFI`` or ``SETUPTOOLS``
    (``pymodule.c`` sets ``BUILT_BY``; a cffi module has none)."""
    return getattr(module, "BUILT_BY", CFFI)


def built_for(borrow) -> str:
    """The torch version ``_borrow`` was compiled against, whichever way it was built."""
    if built_by(borrow) == CFFI:
        return borrow.ffi.string(borrow.lib.torch_borrow_built_for()).decode()
    return borrow.torch_borrow_built_for().decode()


def load():
    """Import both modules and register ``_borrow``'s implementation with ``_entry``:
    the one registration, which the bridge (``bridge._resolve``) and
    ``torch_borrow/consumer.h`` both go through.

    Returns ``(_entry, _borrow)``; idempotent. Raises ImportError when a module is not
    built or does not load (the message says which), when the two were built different
    ways, or when ``_borrow`` was built for another torch than the one imported (its
    ``THPVariable`` layout is that torch's: ``torch_borrow_built_for()``). Source:
    ``entry.cpp`` (``torch_borrow_set_impl``) and ``borrow.cpp`` (``torch_borrow_impl``).
    """
    global _loaded
    if _loaded is None:
        import importlib
        import sys

        modules = {}
        for name in ("_borrow", "_entry"):
            try:
                modules[name] = importlib.import_module(f"{__name__}.{name}")
            except ImportError as exc:
                raise ImportError(f"shim_ext.{name} does not import ({exc})") from exc
        _borrow, _entry = modules["_borrow"], modules["_entry"]

        route = built_by(_borrow)
        if built_by(_entry) != route:
            raise ImportError(f"shim_ext._entry was built by {built_by(_entry)} but "
                              f"shim_ext._borrow by {route}: rebuild the package")
        built = built_for(_borrow)
        torch = sys.modules.get("torch")
        if torch is None or built != torch.__version__:
            running = f"torch {torch.__version__} is" if torch else "torch is not"
            raise ImportError(f"shim_ext was built for torch {built} but {running} "
                              f"imported: import the torch it was built for, or rebuild "
                              f"it for this one: {REBUILD}")
        if route == CFFI:
            _entry.lib.torch_borrow_set_impl(_borrow.lib.torch_borrow_impl())
        else:  # module-level functions, the implementation's address as an int
            _entry.torch_borrow_set_impl(_borrow.torch_borrow_impl())
        _loaded = (_entry, _borrow)
    return _loaded
