"""Scenario 7: a launch-bound GPU step (``launch.py``): a small CUDA kernel launched in a
loop through ``cuda.core.launch`` with N = 1, 3, 8 tensor arguments bridged per launch.

Routes per launch, interleaved round by round (one measurement per N): ``ints`` (the
pointers read once, outside the loop: the floor), ``data_ptr``, ``bridge_view``
(``bridge.view_borrow(x).ptr``) and every route of the seed's consumer
(``native/cuda_core_consumer.py``: a ``StridedMemoryView`` per tensor, its ``.ptr`` the
kernel argument). Before timing, each route's launch must set every element to exactly
1.0. Per round: host ns per launch, wall ns (``extra_info["wall_ns"]``) and the kernel's
GPU ns back to back (``extra_info["gpu_ns"]``). CUDA only: skipped on a CPU run, said.
"""

from __future__ import annotations

import contextlib

import pytest

from bench import protocol as interleave
from bench.scenarios import launch

GROUP = "7 launch-bound step: a CUDA kernel with N tensor arguments bridged per launch"
CONSUMER_ROUTES = ("owned", "owned_prototype", "owned_fixed", "borrow", "pointer", "dlpack",
                   "dlpack_fixed", "cuda_core")
ROUTES = ("ints", "data_ptr", "bridge_view") + CONSUMER_ROUTES
ARGS = {"ints": "p{i}", "data_ptr": "x{i}.data_ptr()"}
#: Launches per round and contender: a launch costs tens of Python-level views.
CALL_DIVISOR = 5


@pytest.fixture(scope="module")
def step(torch, device, notes):
    if device.type != "cuda":
        notes["unavailable"]["launch"] = "the launch-bound step needs --bench-device cuda"
        return None
    try:
        s = launch.Step.build(device.index or 0)
    except launch.Unavailable as exc:
        notes["unavailable"]["launch"] = str(exc)
        return None
    scratch = torch.zeros(launch.N_ELEMENTS, dtype=torch.float32, device=device)
    torch.cuda.synchronize(device)
    warm = s.warm_up(scratch.data_ptr())
    notes["launch"] = {"warm_up_launches": warm, "warm_up_s": launch.WARM_UP_S,
                       "kernel": "add_one_<N>: p_i[j] += 1 for j < "
                                 f"{launch.N_ELEMENTS}, every argument i",
                       "grid": launch.N_ELEMENTS // launch.THREADS,
                       "block": launch.THREADS, "arch": s.arch,
                       "gpu_burst": launch.GPU_BURST, "arities": list(launch.ARITIES)}
    return s


@pytest.fixture(scope="module")
def consumer(torch, device, notes):
    from bench.native import cuda_core_consumer as cc

    if device.type != "cuda":
        return None
    try:
        return cc.Consumer(torch, device.type)
    except cc.Unavailable as exc:
        notes["unavailable"]["launch_consumer"] = str(exc)
        return None


def _check(step, stmt: str, ns: dict, tensors, route: str, context) -> None:
    """One launch of ``stmt`` on zeroed tensors must leave every element at 1.0."""
    for x in tensors:
        x.zero_()
    step.device.sync()
    with context():
        exec(stmt, ns)
    step.stream.sync()
    for i, x in enumerate(tensors):
        assert bool((x == 1).all()), f"{route}: argument {i} was not the tensor's memory"


@pytest.fixture(scope="module", params=launch.ARITIES, ids=lambda n: f"N{n}")
def launch_run(request, torch, device, step, consumer, protocol, bridge, available):
    arity = request.param
    if step is None:
        return arity, None, {}, {}, {"reasons": {}}
    tensors = [torch.zeros(32, 32, dtype=torch.float32, device=device) for _ in range(arity)]
    torch.cuda.synchronize(device)
    reasons = dict(consumer.reasons) if consumer is not None else {
        r: "the seed's consumer is unavailable" for r in CONSUMER_ROUTES}
    routes, labels = {}, {"ints": "pointers read once (launch alone)",
                          "data_ptr": "x.data_ptr() per tensor"}
    none = contextlib.nullcontext
    for r in ("ints", "data_ptr"):
        routes[r] = (launch.launch_statement(arity, ARGS[r]), None, none)
    if available["borrow"]:
        routes["bridge_view"] = (launch.launch_statement(arity, "f(x{i}).ptr"),
                                 bridge.view_borrow, none)
        labels["bridge_view"] = "bridge.view_borrow(x).ptr (this project's view)"
    else:
        reasons["bridge_view"] = "the borrow is unavailable here"
    if consumer is not None:
        for r in consumer.routes():
            f, context = consumer.timed(r)
            routes[r] = (launch.launch_statement(arity, "f(x{i}).ptr"), f, context)
            labels[r] = consumer.labels[r]
    wall = {r: [] for r in routes}
    contenders = []
    for r, (stmt, f, context) in routes.items():
        ns = step.namespace(arity, tensors, f)
        _check(step, stmt, ns, tensors, r, context)
        contenders.append(step.contender(r, stmt, ns, wall[r], context))
    pointers = [x.data_ptr() for x in tensors]
    gpu = []
    contenders.append(interleave.Contender(
        "gpu", lambda n: gpu.append(step.gpu_time_ns(arity, pointers)) or gpu[-1]))
    calls = max(1, protocol.calls // CALL_DIVISOR)
    samples = interleave.measure(contenders, protocol.rounds, calls,
                                 max(1, protocol.warmup // CALL_DIVISOR))
    del samples["gpu"]
    warm = {r: w[-protocol.rounds:] for r, w in wall.items()}  # drop the warm-up's
    return arity, calls, samples, warm, {"gpu_ns": gpu[-protocol.rounds:], "labels": labels,
                                        "reasons": reasons}


@pytest.mark.parametrize("route", ROUTES)
def test_launch(benchmark, launch_run, notes, route):
    arity, calls, samples, wall, info = launch_run
    benchmark.group = f"{GROUP}, N={arity}"
    if calls is None:
        pytest.skip(f"launch-bound step: {notes['unavailable'].get('launch')}")
    if route not in samples:
        pytest.skip(f"{route}: {info['reasons'].get(route, 'not measured')}")
    interleave.record(benchmark, samples[route], calls, path=route, level="python",
                      unit="launch", arity=arity, label=info["labels"][route],
                      checked=True, wall_ns=[round(x, 2) for x in wall[route]],
                      gpu_ns=[round(x, 2) for x in info["gpu_ns"]])
