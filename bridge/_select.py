"""The one place that chooses a path: resolution cache, ``set_path`` and friends.

The choice is process-global, like torch's own backend switches, and every change of it
happens under one lock (free-threaded CPython too); what that means for threads is
README.md's "Threads and free-threaded CPython". Threads that need their own path call
``view_owned``, ``view_borrow`` or ``view_fallback``, which ignore the choice.
"""

from __future__ import annotations

import contextlib
import threading
import warnings

from bridge import _bridge, _resolve
from bridge._resolve import PathInfo

#: The concrete paths, in the order of their codes (``_bridge.PATHS``): the order of
#: ``available_paths()`` and ``path_counts()``.
PATHS = _bridge.PATHS
#: The concrete paths in ``auto``'s order of preference.
AUTO_ORDER = ("borrow", "owned", "fallback")
#: What ``set_path`` accepts.
CHOICES = ("auto", *PATHS)

_lock = threading.RLock()
_resolution: _resolve.Resolution | None = None
_requested = "auto"
_hide: frozenset = frozenset()


class PathUnavailableError(RuntimeError):
    """The requested path cannot run on this torch; the message says why."""


class StaleShimWarning(RuntimeWarning):
    """``auto`` passed over the borrow because shim_ext was built for another torch
    (``shim_ext.built_for``); issued once per process, with the rebuild command."""


def resolution() -> _resolve.Resolution:
    """Resolve once (again if torch was not imported last time) and install the result."""
    global _resolution
    res = _resolution
    if res is not None and res.final:
        return res
    # Outside TorchDynamo's tracing: a first use inside torch.compile resolves eagerly.
    return _bridge._untraced(_resolve_and_install)


def _resolve_and_install():
    global _resolution
    with _lock:
        if _resolution is not None and _resolution.final:
            return _resolution
        torch = _resolve.torch_module(_hide)
        try:
            # Every mode and functional transform off: a first use inside one sets up as
            # one outside would, and runs none of the user's mode code.
            with (contextlib.nullcontext() if torch is None else _resolve.plain_torch(torch)):
                res = _resolve.resolve(_bridge.PYOBJECT_SIZE, _hide)
                _install(res)
        except _resolve.UnsettledProbe as exc:
            res = _unsettled(torch, exc)
        _resolution = res
        return res


def _unsettled(torch, exc) -> _resolve.Resolution:
    """A resolution that is not final: the set-up met a mode or transform it could not
    turn off, so nothing it learnt is kept and the next use sets up again."""
    _bridge._install_symbols({}, None, False)
    reason = (f"the bridge's set-up met a mode or functional transform it could not turn "
              f"off ({exc}); nothing was kept: use the bridge once outside it")
    return _resolve.Resolution(torch.__version__, final=False,
                               paths={p: PathInfo(False, None, reason) for p in PATHS})


def _install(res):
    symbols = {name: sym.address for name, sym in res.symbols.items()}
    if not res.paths["borrow"].available:
        symbols.pop(_resolve.BORROW, None)
    if not res.paths["owned"].available:
        symbols.pop(_resolve.OWNED, None)
    torch = _resolve.torch_module(_hide)
    _bridge._install_symbols(
        symbols, res.tensor_type, res.paths["fallback"].available,
        None if torch is None else torch._C.DisableTorchFunction,
        None if torch is None else torch.nn.Parameter)
    source = next((p for p in AUTO_ORDER if res.paths[p].available), None)
    if source is None:
        return
    code = _bridge.PATHS.index(source)
    tables = _resolve.code_tables(torch, res, lambda t: _bridge._dtype_code(t, code), _hide)
    if tables.layout_strided == -1:  # no aoti_torch_layout_strided: nothing can be checked
        reason = f"torch {res.torch_version} exports no aoti_torch_layout_strided"
        res.paths = {p: PathInfo(False, None, reason) for p in PATHS}
        _bridge._install_symbols({}, None, False)
        return
    _bridge._install_tables(*tables)


def available_paths() -> dict[str, PathInfo]:
    """Each path's availability: ``{"owned" | "borrow" | "fallback": PathInfo}``.

    ``PathInfo.origin`` names the library that exports the path's function (or the
    proven offset); ``PathInfo.reason`` says why a path is unavailable.
    """
    res = resolution()
    return {p: res.paths[p] for p in PATHS}


def _choose(name):
    if name not in CHOICES:
        raise ValueError(f"unknown path {name!r}; choose one of {', '.join(CHOICES)}")
    res = resolution()
    paths = res.paths
    if not res.final:  # torch not imported, or an unsettled set-up: one reason, said once
        raise PathUnavailableError(paths[AUTO_ORDER[0]].reason)
    if name == "auto":
        for p in AUTO_ORDER:
            if paths[p].available:
                if p != "borrow" and res.stale_shim:
                    _warn_stale(res, p)
                return p
        raise PathUnavailableError(
            "no path can run on this torch: "
            + "; ".join(f"{p}: {paths[p].reason}" for p in AUTO_ORDER))
    if not paths[name].available:
        raise PathUnavailableError(f"path {name!r} is unavailable: {paths[name].reason}")
    return name


_warned_stale = False


def _warn_stale(res, chosen: str) -> None:
    """Say once per process that ``auto`` passed over a borrow that is built but stale:
    the bridge still works (on ``chosen``), only slower, so a warning, not an error."""
    global _warned_stale
    if _warned_stale:
        return
    _warned_stale = True
    warnings.warn(f"bridge: path 'auto' uses {chosen!r}, not 'borrow': "
                  f"{res.paths['borrow'].reason}", StaleShimWarning,
                  stacklevel=_caller_level())


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside the bridge package: the user's line
    (``view()`` reaches here through several of the bridge's own frames)."""
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == here:
        frame, level = frame.f_back, level + 1
    return level


def set_path(name: str) -> None:
    """Choose the path ``bridge.view`` uses: ``"auto"`` (default: borrow, else owned, else
    fallback), ``"owned"``, ``"borrow"`` or ``"fallback"``.

    Raises ValueError for an unknown name and PathUnavailableError, with the reason, for
    a path this torch cannot run. Process-global: see the module docstring on threads.
    """
    global _requested
    with _lock:
        concrete = _choose(name)
        _bridge._activate(PATHS.index(concrete))
        _requested = name


def get_path() -> str:
    """The concrete path ``bridge.view`` uses now (``auto`` resolved), choosing it if needed."""
    ensure_active()
    return PATHS[_bridge._active_path()]


def requested_path() -> str:
    """What was asked for with ``set_path`` (``"auto"`` unless changed)."""
    return _requested


def ensure_active() -> None:
    """Choose the requested path if none is active (called by ``view``'s cold branch).

    Checked again under the lock, with ``_requested`` read there too: threads making
    their first view at once choose once, and a concurrent ``set_path`` is never undone
    by a choice made from what was requested before it.
    """
    if _bridge._active_path() < 0:
        with _lock:
            if _bridge._active_path() < 0:
                set_path(_requested)


def require(name: str) -> None:
    """Raise PathUnavailableError with the reason if ``name`` cannot run here."""
    _choose(name)


def _cold_ensure_active() -> None:
    ensure_active()  # looked up at each call: a test may replace the module's function


def _cold_require(name: str) -> None:
    require(name)


# The hot module's cold paths call these (view() with no path chosen, view_<path>() where
# the path is not installed): handed over here, so bridge._bridge never imports this module.
_bridge._install_callables(_cold_ensure_active, _cold_require, PathUnavailableError)


@contextlib.contextmanager
def using_path(name: str):
    """``with bridge.using_path("owned"): ...`` runs the block on that path, then restores
    the previous choice (even on error). Process-global, like ``set_path``."""
    with _lock:
        before = _requested
        set_path(name)
    try:
        yield get_path()
    finally:
        set_path(before)


def _resolve_again(hide=()) -> _resolve.Resolution:
    """Forget the resolution and resolve again with ``hide``'s symbols treated as missing.

    Fault injection for tests, not a production switch: names are symbol names or the
    ``bridge._resolve.HIDE_*`` tokens. ``_resolve_again()`` restores the real state.
    Keeps the requested path; the next ``view`` chooses again.
    """
    global _resolution, _hide
    with _lock:
        _hide = frozenset(hide)
        _resolution = None
        return resolution()
