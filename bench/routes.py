"""The route record: every native loop timed from a Python tensor to its metadata, today
and after each internal fix, with the label each result carries into the JSON.

``ROUTES`` is the one list: ``scenarios/bench_native.py`` times each route once, in the
interleaved native run (group 2c), and ``callgrind.py`` counts its instructions by part.
A route reads what a kernel launcher needs (data pointer, ndim, sizes, strides in
elements, dtype, device type and index); a ``part`` is a piece of one (a handle alone,
the getters alone). ``contenders(t, peers, fixes, paths)`` gives ``{name: run(n)}`` (ns
per call) and ``{name: why not}``; a ``*_fixed`` route runs torch's own functions with
the interpreter fix installed for its loop (``proposal/fixes/internal_fixes.py``; ``*_emulation``:
the earlier hand-written fix), ``dlpack_patched`` the DLPack series' own function
(fixed DLPack), ``dlpack_borrowed*`` the earlier hand-written DLPack prototype.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Route:
    """One row: ``name`` (its key), ``label`` (what it does, in the table), ``status``
    (``"today"``: torch has it; ``"internal fix"``: torch's own functions with a fix
    that needs no new ABI; ``"new ABI"``: needs the proposed functions; ``"not
    proposed"``: the prototype's batched read, measured and withdrawn), and ``part``
    (True: a piece of a route, not a whole one)."""

    name: str
    label: str
    status: str
    part: bool = False


ROUTES = (
    Route("owned", "owned: torch_tensor_from_pyobject + 7 getters + delete", "today"),
    # The *_fixed rows keep their labels (proposal/tools/render.py reads them): the patch's code.
    Route("owned_fixed", "owned + interpreter fix", "internal fix"),
    Route("owned_fixed_emulation", "owned + interpreter fix (emulation)", "internal fix"),
    Route("dlpack_no_sync", "DLPack dltensor_from_py_object_no_sync", "today"),
    Route("dlpack_no_sync_fixed", "DLPack no_sync + interpreter fix", "internal fix"),
    Route("dlpack_no_sync_fixed_emulation", "DLPack no_sync + interpreter fix (emulation)",
          "internal fix"),
    Route("dlpack_managed", "DLPack managed_tensor_from_py_object_no_sync + deleter", "today"),
    Route("dlpack_managed_fixed", "DLPack managed + deleter + interpreter fix", "internal fix"),
    # Fixed DLPack: the DLPack series' own function (proposal/patches/dlpack/, cut out of
    # the patched Module.cpp: proposal/fixes/patched_dlpack.py). The two rows after it are
    # the earlier hand-written prototype, kept as labelled rows.
    Route("dlpack_patched", "fixed DLPack: the DLPack patches' dltensor_from_py_object_no_sync",
          "internal fix"),
    Route("dlpack_borrowed_checked",
          "DLPack prototype (hand-written, not the patch): borrowed + attached-thread check",
          "internal fix"),
    Route("dlpack_borrowed", "DLPack prototype (hand-written, not the patch): no thread check",
          "internal fix"),
    Route("borrow_getters", "borrow: torch_tensor_borrow_from_pyobject + 7 getters", "new ABI"),
    Route("borrow_batched", "borrow + torch_tensor_get_metadata (batched, bench/native/batched_read.h)",
          "not proposed"),
    Route("borrow_one_call", "torch_tensor_borrow_metadata_from_pyobject (one call, batched)",
          "not proposed"),
    Route("fallback_getters", "pointer trick + 7 getters (private layout)", "today"),
    Route("owned_handle", "owned handle alone + delete", "today", part=True),
    Route("owned_handle_fixed", "owned handle alone + delete + interpreter fix", "internal fix",
          part=True),
    Route("borrow_handle", "borrow handle alone", "new ABI", part=True),
    Route("fallback_handle", "pointer trick handle alone", "today", part=True),
    Route("getters7", "7 getters alone (through a borrowed handle)", "today", part=True),
)
BY_NAME = {r.name: r for r in ROUTES}
#: The native group's rows beside the routes (``scenarios/bench_native.py``): each
#: path's ``_native_loop`` (one stable-ABI getter per field after the metadata-policy
#: check), the floors and the parts that are no route.
NATIVE_LABELS = {
    "owned": "owned: torch_tensor_from_pyobject + getters + delete",
    "borrow": "borrow: torch_tensor_borrow_from_pyobject + getters",
    "fallback": "pointer trick (THPVariable offset) + getters",
    "typecheck": "real-type check alone (floor)",
    "handle_borrow_direct": "handle alone: the borrow's implementation called directly (no vtable)",
    "conj_getter": "conj bit: torch_is_conj (patch 0002)",
    "conj_dispatcher": "conj bit: new owning handle + torch_call_dispatcher(aten::is_conj)",
    "meta_offset": "batched (withdrawn): (char*)obj + sizeof(PyObject) + torch_tensor_get_metadata",
    "gil_check": "PyGILState_Check() alone",
}
#: A route's row name in the native group: ``route_<Route.name>``.
ROUTE_PREFIX = "route_"


def label(name: str) -> str | None:
    """The label a native row carries into the JSON: a route's (``route_<name>``; a
    part's marked so) or ``NATIVE_LABELS``'; None for a name neither knows."""
    if name.startswith(ROUTE_PREFIX):
        route = BY_NAME.get(name.removeprefix(ROUTE_PREFIX))
        return None if route is None else route.label + (" (part)" if route.part else "")
    return NATIVE_LABELS.get(name)


def contenders(t, peers, fixes, paths: dict[str, bool],
               fixes_reason: str | None = None) -> tuple[dict[str, Callable[[int], float]],
                                                          dict[str, str]]:
    """``({name: run(n)}, {name: why not})`` for tensor ``t``.

    ``peers``: ``peers_native.NativePeers``; ``fixes``: ``internal_fixes.InternalFixes``
    or None (then ``fixes_reason`` says why); ``paths``: ``{path: available}`` as
    ``bridge.available_paths()`` reports it (the owned shim, the borrow, the offset).
    """
    runs: dict[str, Callable[[int], float]] = {}
    why: dict[str, str] = {}

    def fixed(loop, code):
        def run(n):
            with fixes.interpreter_fix(code):
                return loop(n)
        return run

    def add(name, loop, needs_fix=False, needs=None, code="patch"):
        if needs is not None:
            why[name] = needs
        elif needs_fix and fixes is None:
            why[name] = f"the internal fixes are not built: {fixes_reason}"
        else:
            runs[name] = fixed(loop, code) if needs_fix else loop

    owned = None if paths.get("owned") else "no torch_tensor_from_pyobject on this torch"
    borrow = None if paths.get("borrow") else "no torch_tensor_borrow_from_pyobject here"
    offset = None if paths.get("fallback") else "no proven THPVariable offset on this torch"
    dlpack = peers.dlpack_reason
    meta = peers.metadata_reason or borrow
    add("owned", lambda n: peers.route_loop("owned", t, n), needs=owned)
    add("owned_fixed", lambda n: peers.route_loop("owned", t, n), True, owned)
    add("owned_fixed_emulation", lambda n: peers.route_loop("owned", t, n), True, owned,
        code="emulation")
    add("dlpack_no_sync", lambda n: peers.dltensor_loop(t, n), needs=dlpack)
    add("dlpack_no_sync_fixed", lambda n: peers.dltensor_loop(t, n), True, dlpack)
    add("dlpack_no_sync_fixed_emulation", lambda n: peers.dltensor_loop(t, n), True, dlpack,
        code="emulation")
    add("dlpack_managed", lambda n: peers.managed_loop(t, n), needs=dlpack)
    add("dlpack_managed_fixed", lambda n: peers.managed_loop(t, n), True, dlpack)
    if fixes is not None and dlpack is None:
        patched = fixes.dlpack_api_patched()
        checked, unchecked = fixes.dlpack_api(True), fixes.dlpack_api(False)
        add("dlpack_patched", lambda n: peers.dltensor_loop(t, n, api=patched))
        add("dlpack_borrowed_checked", lambda n: peers.dltensor_loop(t, n, api=checked))
        add("dlpack_borrowed", lambda n: peers.dltensor_loop(t, n, api=unchecked))
    else:
        for name in ("dlpack_patched", "dlpack_borrowed_checked", "dlpack_borrowed"):
            add(name, None, True, dlpack)
    add("borrow_getters", lambda n: peers.route_loop("borrow", t, n), needs=borrow)
    add("borrow_batched", lambda n: peers.metadata_loop("borrow", t, n), needs=meta)
    add("borrow_one_call", lambda n: peers.metadata_loop("from_pyobject", t, n), needs=meta)
    add("fallback_getters", lambda n: peers.route_loop("fallback", t, n), needs=offset)
    add("owned_handle", lambda n: peers.handle_loop("owned", t, n), needs=owned)
    add("owned_handle_fixed", lambda n: peers.handle_loop("owned", t, n), True, owned)
    add("borrow_handle", lambda n: peers.handle_loop("borrow", t, n), needs=borrow)
    add("fallback_handle", lambda n: peers.handle_loop("fallback", t, n), needs=offset)
    add("getters7", lambda n: peers.getters_loop(t, n), needs=offset)
    assert set(runs) | set(why) == set(BY_NAME), set(BY_NAME) ^ (set(runs) | set(why))
    return runs, why


def load_fixes(torch):
    """``(InternalFixes or None, why not)``: the internal fixes built for ``torch``."""
    try:
        from proposal.fixes import internal_fixes
    except ImportError as exc:  # no cffi (free-threaded 3.13)
        return None, f"cannot import internal_fixes: {exc}"
    try:
        return internal_fixes.InternalFixes(torch), None
    except Exception as exc:  # a compile error is reported, not hidden
        return None, f"{type(exc).__name__}: {exc}"
