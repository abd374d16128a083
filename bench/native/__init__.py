"""The compiled peers, each beside its builder (``<name>_build.py``: ``MODULE``,
``SOURCES``, ``build(out)``), and the one build-if-stale helper they all load through.

``built_module(builder, out)`` compiles ``builder``'s module into ``out`` (one folder per
torch and interpreter, ``build_dir``) when it is missing or older than any of its
sources, then loads it from that file: nothing is added to ``sys.path``.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import pathlib
import sys
import sysconfig

REPO = pathlib.Path(__file__).resolve().parent.parent.parent


def torch_version(torch) -> str:
    """torch's version without its local tag (``2.15.0+cu132`` -> ``2.15.0``:
    ``packaging``'s ``Version.public``): what build folders, file stems and build
    records are keyed by."""
    from packaging.version import Version

    return Version(torch.__version__).public


def build_dir(torch_version: str) -> pathlib.Path:
    """``build/bench-<torch version>-<SOABI>/`` (e.g. ``bench-2.15.0-cpython-312-x86_64-linux-gnu``):
    where the modules of this torch and this interpreter are compiled. Keyed by both, so
    environments of two CPython versions (or a free-threaded one) never share a build."""
    return REPO / "build" / f"bench-{torch_version}-{sysconfig.get_config_var('SOABI')}"


def load_extension(name: str, folder: pathlib.Path):
    """Import the extension module ``name`` from ``folder`` (its file
    ``<name><EXT_SUFFIX>``), once per process, without touching ``sys.path``.

    Raises ImportError when no such file is there."""
    if name in sys.modules:
        return sys.modules[name]
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = folder / f"{name}{suffix}"
        if path.exists():
            break
    else:
        raise ImportError(f"no extension module {name} in {folder}", name=name)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]
        raise
    return mod


def built_module(builder, out: pathlib.Path):
    """Load ``builder.MODULE`` from ``out``, building it first (``builder.build(out)``)
    when it is missing or older than any of ``builder.SOURCES``. Every benchmark module
    compiled at first use (the peers' loops, the internal fixes, the consumer, the owned
    prototype) loads this way.

    The check and the build hold an exclusive ``flock`` on ``out/.<MODULE>.lock``: test
    workers running side by side (pytest-xdist) share ``out``, and a second compiler
    writing the same files would leave a torn module."""
    import fcntl

    if builder.MODULE in sys.modules:
        return sys.modules[builder.MODULE]
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f".{builder.MODULE}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        built = sorted(out.glob(f"{builder.MODULE}{importlib.machinery.EXTENSION_SUFFIXES[0]}"))
        newest_source = max(p.stat().st_mtime for p in builder.SOURCES)
        if not built or built[0].stat().st_mtime < newest_source:
            builder.build(out)
        return load_extension(builder.MODULE, out)
