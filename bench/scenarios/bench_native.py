"""Scenario 2 (native per-call cost) and the native half of scenario 3 (peers in C).

All timed in C loops, interleaved round by round in one measurement so every pair of
contenders can be compared round by round:

- ``owned`` / ``borrow`` / ``fallback``: ``bridge._bridge._native_loop`` (type check,
  handle, the metadata-policy check, the layout, seven ``aoti_torch_get_*`` reads, the
  storage offset and size and ``torch_is_conj`` / ``torch_is_neg``, one call each, the
  bridge's checks; the owned handle deleted): a view minus the Python call and the
  ``TensorView`` object;
- ``dlpack_dltensor``: ``DLPackExchangeAPI.dltensor_from_py_object_no_sync`` into a
  caller-owned ``DLTensor`` (+ the same type check, + reading the fields);
- ``dlpack_managed``: ``managed_tensor_from_py_object_no_sync`` + its deleter;
- ``typecheck``: the real-type check alone, the floor;
- ``handle_<path>``: the handle alone (no metadata read) and ``getters7``: the seven
  getters alone through a borrowed handle: the parts the first three are made of;
- ``conj_getter`` / ``conj_dispatcher``: the conjugate bit through the proposed
  ``torch_is_conj`` vs through ``torch_call_dispatcher("aten::is_conj")`` (which needs an
  owning copy of the borrowed handle): patch 0002's justification;
- ``meta_<mode>``: the batched read (``batched_read.h``, withdrawn from the proposal)
  through the offset or a borrowed handle, and ``torch_tensor_borrow_metadata_from_pyobject``
  in one call: the evidence for its withdrawal;
- the routes (``routes.ROUTES``, group 2c): every route a consumer has from the Python
  object to the metadata, today and after each internal fix (``internal_fixes``), the
  fixed ones with the interpreter fix installed for their loop only.
"""

from __future__ import annotations

import pytest

from bench import protocol as interleave
from bench import routes
from bench import views

GROUP = "2 native: handle + metadata per call, C loop, 32x32 float32"
PARTS_GROUP = "2b native parts: handle alone, seven getters alone, type check"
PATH_NAMES = views.VIEWERS
PEER_NAMES = ("dlpack_dltensor", "dlpack_managed", "typecheck")
PART_NAMES = ("handle_owned", "handle_borrow", "handle_borrow_direct", "handle_fallback",
              "getters7",
              "conj_getter", "conj_dispatcher", "meta_offset", "meta_borrow", "meta_from_pyobject",
              "gil_check")
ROUTES_GROUP = "2c routes: Python object to metadata, every route, C loop, 32x32 float32"
ROUTE_PREFIX = "route_"


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
            contenders.append(interleave.native(
                f"handle_{p}", lambda n, p=p: native_peers.handle_loop(p, t, n)))
    if native_peers.dlpack_reason is None:
        contenders.append(interleave.native("dlpack_dltensor",
                                            lambda n: native_peers.dltensor_loop(t, n)))
        contenders.append(interleave.native("dlpack_managed",
                                            lambda n: native_peers.managed_loop(t, n)))
    else:
        for name in ("dlpack_dltensor", "dlpack_managed"):
            notes["unavailable"][name] = native_peers.dlpack_reason
    contenders.append(interleave.native("typecheck", lambda n: native_peers.typecheck_loop(t, n)))
    contenders.append(interleave.native("gil_check", lambda n: native_peers.gil_check_loop(n)))
    if native_peers.direct_reason is None and available["borrow"]:
        contenders.append(interleave.native(
            "handle_borrow_direct", lambda n: native_peers.handle_loop("borrow_direct", t, n)))
    else:
        notes["unavailable"]["handle_borrow_direct"] = (native_peers.direct_reason
                                                        or "no borrow path here")
    if available["fallback"]:
        contenders.append(interleave.native("getters7", lambda n: native_peers.getters_loop(t, n)))
    for route, why in native_peers.conj_reason.items():
        if why is None and available["fallback"]:
            contenders.append(interleave.native(
                f"conj_{route}", lambda n, r=route: native_peers.conj_loop(r, t, n)))
        else:
            notes["unavailable"][f"conj_{route}"] = why or "no proven borrowed handle (fallback)"
    for mode in native_peers.METADATA_MODES:
        if native_peers.metadata_reason is None and available["fallback"]:
            contenders.append(interleave.native(
                f"meta_{mode}", lambda n, m=mode: native_peers.metadata_loop(m, t, n)))
        else:
            notes["unavailable"][f"meta_{mode}"] = (native_peers.metadata_reason
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


def _record(benchmark, run, protocol, notes, name, group):
    benchmark.group = group
    if name not in run:
        why = notes["unavailable"].get(name) or notes["unavailable"].get(name.split("_")[-1])
        pytest.skip(f"{name}: {why}")
    interleave.record(benchmark, run[name], protocol.native_calls, path=name, level="native")


@pytest.mark.parametrize("name", PATH_NAMES + PEER_NAMES)
def test_native(benchmark, native_run, protocol, notes, name):
    _record(benchmark, native_run, protocol, notes, name, GROUP)


@pytest.mark.parametrize("name", PART_NAMES)
def test_native_parts(benchmark, native_run, protocol, notes, name):
    _record(benchmark, native_run, protocol, notes, name, PARTS_GROUP)


@pytest.mark.parametrize("name", [ROUTE_PREFIX + r.name for r in routes.ROUTES])
def test_routes(benchmark, native_run, protocol, notes, name):
    _record(benchmark, native_run, protocol, notes, name, ROUTES_GROUP)
