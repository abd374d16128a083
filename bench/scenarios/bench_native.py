"""Scenario 2 (native per-call cost) and the native half of scenario 3 (peers in C).

Every native loop is timed once, all interleaved round by round in one measurement, so
any two rows pair round by round, and each row's label goes into the JSON with it
(``extra_info["label"]``). The routes (``routes.ROUTES``, group 2c) are every route a
consumer has from the Python object to the metadata, with their parts (a handle alone,
the seven getters alone); group 2 is each path's ``bridge._bridge._native_loop`` (a view
minus the Python call and the ``TensorView``) and the type-check floor; group 2b the
pieces no route has: the GIL check, the direct borrow call, the conj bit through
``torch_is_conj`` vs ``torch_call_dispatcher`` (patch 0002's case) and the batched read
through the offset.
"""

from __future__ import annotations

import pytest

from bench import protocol as interleave
from bench import routes
from bench import views

GROUP = "2 native: handle + metadata per call, C loop, 32x32 float32"
PARTS_GROUP = "2b native parts: handle alone, seven getters alone, type check"
PATH_NAMES = views.VIEWERS
PEER_NAMES = ("typecheck",)
PART_NAMES = ("handle_borrow_direct", "conj_getter", "conj_dispatcher", "meta_offset",
              "gil_check")
ROUTES_GROUP = "2c routes: Python object to metadata, every route, C loop, 32x32 float32"
ROUTE_PREFIX = routes.ROUTE_PREFIX


@pytest.fixture(scope="module")
def native_run(torch, bridge, available, native_peers, protocol, notes, device):
    t = torch.randn(32, 32, dtype=torch.float32, device=device)
    core = bridge._bridge
    notes["native_compiler"] = native_peers.compiler
    notes["dlpack_exchange_api"] = {"version": native_peers.dlpack_version,
                                    "unavailable": native_peers.dlpack_reason}
    contenders = []
    for p in PATH_NAMES:
        if available[p]:
            contenders.append(interleave.native(p, lambda n, p=p: core._native_loop(t, p, n)))
    contenders.append(interleave.native("typecheck", lambda n: native_peers.typecheck_loop(t, n)))
    contenders.append(interleave.native("gil_check", lambda n: native_peers.gil_check_loop(n)))
    if native_peers.direct_reason is None and available["borrow"]:
        contenders.append(interleave.native(
            "handle_borrow_direct", lambda n: native_peers.handle_loop("borrow_direct", t, n)))
    else:
        notes["unavailable"]["handle_borrow_direct"] = (native_peers.direct_reason
                                                        or "no borrow path here")
    for route, why in native_peers.conj_reason.items():
        if why is None and available["fallback"]:
            contenders.append(interleave.native(
                f"conj_{route}", lambda n, r=route: native_peers.conj_loop(r, t, n)))
        else:
            notes["unavailable"][f"conj_{route}"] = why or "no proven borrowed handle (fallback)"
    # The batched read through a borrowed handle and in one call are routes (2c).
    if native_peers.metadata_reason is None and available["fallback"]:
        contenders.append(interleave.native(
            "meta_offset", lambda n: native_peers.metadata_loop("offset", t, n)))
    else:
        notes["unavailable"]["meta_offset"] = (native_peers.metadata_reason
                                               or "no proven borrowed handle (fallback)")
    fixes, fixes_reason = routes.load_fixes(torch)
    notes["internal_fixes"] = fixes.layout if fixes else {"unavailable": fixes_reason}
    runs, why = routes.contenders(t, native_peers, fixes, available, fixes_reason)
    contenders += [interleave.native(ROUTE_PREFIX + name, run) for name, run in runs.items()]
    notes["unavailable"].update({ROUTE_PREFIX + name: w for name, w in why.items()})
    for c in contenders:  # any error surfaces here, before timing
        c.run(1)
    return interleave.measure(contenders, protocol.rounds, protocol.native_calls,
                              protocol.native_warmup)


def _label(name: str) -> str:
    text = routes.label(name)
    assert text is not None, f"{name}: no label in bench/routes.py"
    return text


def _record(benchmark, run, protocol, notes, name, group):
    benchmark.group = group
    if name not in run:
        why = notes["unavailable"].get(name) or notes["unavailable"].get(name.split("_")[-1])
        pytest.skip(f"{name}: {why}")
    interleave.record(benchmark, run[name], protocol.native_calls, path=name, level="native",
                      label=_label(name))


@pytest.mark.parametrize("name", PATH_NAMES + PEER_NAMES)
def test_native(benchmark, native_run, protocol, notes, name):
    _record(benchmark, native_run, protocol, notes, name, GROUP)


@pytest.mark.parametrize("name", PART_NAMES)
def test_native_parts(benchmark, native_run, protocol, notes, name):
    _record(benchmark, native_run, protocol, notes, name, PARTS_GROUP)


@pytest.mark.parametrize("name", [ROUTE_PREFIX + r.name for r in routes.ROUTES])
def test_routes(benchmark, native_run, protocol, notes, name):
    _record(benchmark, native_run, protocol, notes, name, ROUTES_GROUP)
