"""Scenario F: ATen ops through torch's generated C shims, their input handles by route.

Run by ``python -P -m bench.c_shims.run`` (``make bench-c-shims``), not by
``make bench`` (which runs ``bench/scenarios/``), with this folder's ``conftest.py``.
Per op of ``consumer.OPS`` and size, interleaved rounds of the handles
alone, the whole call and the op alone in C (``loops_run``) and, at 32x32, the
Python-level call (``calls_run``). torch's intra-op threads: ``$C_SHIMS_THREADS``
when set (the runner sets 1), recorded in the JSON. Every route's result is checked
equal to torch's own before timing; what a ``TorchDispatchMode`` saw during each op, and
whether the result records autograd, go into the JSON's evidence.
"""

from __future__ import annotations

import os
import time

import pytest

from bench.c_shims import consumer as cs
from bench import protocol as interleave

SIZES = (32, 1024)
GROUP_LOOPS = "F1 C shims: handles per call vs the op, native loops"
GROUP_CALLS = "F2 C shims: Python-level call per route, 32x32"
#: torch's intra-op threads for the run, when set (``run.py --threads``)
THREADS_ENV = "C_SHIMS_THREADS"
#: target time of one contender's round, ns (the op's calls per round follow from it)
ROUND_NS = {True: 2e6, False: 20e6}


@pytest.fixture(scope="module")
def consumer(torch, notes):
    threads = os.environ.get(THREADS_ENV)
    if threads:
        torch.set_num_threads(int(threads))
    try:
        c = cs.Consumer(torch)
    except cs.Unavailable as exc:
        notes["unavailable"]["c_shims"] = str(exc)
        return None
    notes["c_shims"] = {"labels": c.labels, "unavailable": c.reasons,
                             "shims": c.shims, "to_pyobject": c.to_pyobject,
                             "shim_unavailable": {f"{op}.{dev}": why for (op, dev), why
                                                  in c.shim_reasons.items()},
                             "equivalent": cs.TORCH_EQUIVALENT, "arity": cs.ARITY,
                             "num_threads": torch.get_num_threads(),
                             "probe": {}, "autograd": {}, "checked": {}}
    return c


def _check(torch, consumer, op, size, device, notes) -> dict:
    """Every route's result equal to torch's (asserted); the evidence, per route."""
    out = {}
    for route in consumer.routes():
        tensors = cs.inputs(torch, op, size, device)
        got = cs.result(op, tensors, consumer.call(op, route, *tensors))
        want = cs.reference(torch, op, tensors)
        assert torch.equal(got, want), f"{op} {size} via {route}: differs from torch's"
        out[route] = True
    return out


def _evidence(torch, consumer, op, device, notes):
    info = notes["c_shims"]
    if op in info["probe"]:
        return
    info["probe"][op] = cs.dispatch_probe(torch, consumer, op, "borrow", device)
    tensors = cs.inputs(torch, op, 8, device, requires_grad=True)
    res = cs.result(op, tensors, consumer.call(op, "borrow", *tensors))
    info["autograd"][op] = {"requires_grad": bool(res.requires_grad),
                            "grad_fn": None if res.grad_fn is None else type(res.grad_fn).__name__}


def _calls_for(ns_per_call: float, quick: bool) -> int:
    return max(1, int(ROUND_NS[quick] / max(ns_per_call, 1.0)))


def _estimate(torch, consumer, op, tensors, cuda: bool) -> float:
    """ns per op, the best of three short loops after a warm-up call (a first call may
    initialise a BLAS, and this machine stalls now and then: the best is the estimate)."""
    consumer.op_loop(op, 1, *tensors)
    if cuda:
        return min(_sync_loop(torch, consumer, op, tensors)(3) for _ in range(3))
    return min(consumer.op_loop(op, 3, *tensors) for _ in range(3))


def _sync_loop(torch, consumer, op, tensors):
    def run(n):
        t0 = time.perf_counter_ns()
        consumer.op_loop(op, n, *tensors)
        torch.cuda.synchronize()
        return (time.perf_counter_ns() - t0) / n
    return run


@pytest.fixture(scope="module")
def loops_run(torch, consumer, protocol, device, notes):
    """``{(op, size): ({contender: [ns per round]}, {contender: calls per round})}``.

    Per op and size (32x32 and 1024x1024 float32 on ``--bench-device``): ``handles:<route>``
    (``handles_loop``: one handle per tensor argument taken and, owned, deleted in C, for
    ``owned``, ``owned_fixed``, ``borrow``), ``ccall:<route>`` (``call_loop``: the whole
    call in C, what a consumer saves, a kernel's own copies of its inputs included) and
    ``op`` (``op_loop``: the op's shim alone, handles borrowed once; on CUDA the host's
    time per call of a queued loop, with ``op_sync`` the wall time per op until the GPU ran
    them all), so round ``r`` of a route pairs with round ``r`` of the op."""
    if consumer is None:
        return {}
    cuda = device.type == "cuda"
    out = {}
    for op in cs.OPS:
        if consumer.shims[op][device.type] is None:
            continue
        _evidence(torch, consumer, op, device, notes)
        for size in SIZES:
            notes["c_shims"]["checked"][f"{op}:{size}"] = _check(
                torch, consumer, op, size, device, notes)
            tensors = cs.inputs(torch, op, size, device)
            est = _estimate(torch, consumer, op, tensors, cuda)
            op_calls = _calls_for(est, protocol.quick)
            handle_calls = protocol.native_calls // 5
            contenders, calls = [], {}
            for route in consumer.routes():
                contenders.append(interleave.native(
                    f"handles:{route}",
                    lambda n, r=route: consumer.handles_loop(r, handle_calls, *tensors)))
                calls[f"handles:{route}"] = handle_calls
            for route in consumer.routes():
                contenders.append(interleave.native(
                    f"ccall:{route}",
                    lambda n, r=route: consumer.call_loop(op, r, op_calls, *tensors)))
                calls[f"ccall:{route}"] = op_calls
            contenders.append(interleave.native(
                "op", lambda n: consumer.op_loop(op, op_calls, *tensors)))
            calls["op"] = op_calls
            if cuda:
                sync = _sync_loop(torch, consumer, op, tensors)
                contenders.append(interleave.native("op_sync", lambda n: sync(op_calls)))
                calls["op_sync"] = op_calls
            samples = interleave.measure(contenders, protocol.rounds, 1, 1)
            out[(op, size)] = samples, calls
    return out


@pytest.fixture(scope="module")
def calls_run(torch, consumer, protocol, device, notes):
    """``{op: ({route: [ns per round]}, calls per round)}``: Python-level, 32x32."""
    if consumer is None:
        return {}
    out = {}
    for op in cs.OPS:
        if consumer.shims[op][device.type] is None:
            continue
        tensors = cs.inputs(torch, op, 32, device)
        n = _calls_for(_estimate(torch, consumer, op, tensors, device.type == "cuda") + 500,
                       protocol.quick)
        contenders = []
        for route in consumer.routes():
            f, head = consumer.function(op, route)
            timer = interleave.statement(route, "f(*head, *ts)",
                                         {"f": f, "head": head, "ts": tensors}).run

            def run(_, r=route, timer=timer):
                with consumer.route_context(r):
                    return timer(n)
            contenders.append(interleave.Contender(route, run, "python"))
        samples = interleave.measure(contenders, protocol.rounds, 1, 1)
        if device.type == "cuda":
            torch.cuda.synchronize()
        out[op] = samples, n
    return out


def _contenders():
    names = ([f"handles:{r}" for r in cs.ROUTES] + [f"ccall:{r}" for r in cs.ROUTES]
             + ["op", "op_sync"])
    return [(op, size, name) for op in cs.OPS for size in SIZES for name in names]


@pytest.mark.parametrize("op,size,name", _contenders())
def test_c_shim_loops(benchmark, loops_run, consumer, device, notes, op, size, name):
    benchmark.group = GROUP_LOOPS
    if consumer is None:
        pytest.skip(f"c_shims: {notes['unavailable']['c_shims']}")
    if (op, size) not in loops_run:
        pytest.skip(f"{op}: {consumer.shim_reasons.get((op, device.type))}")
    samples, calls = loops_run[(op, size)]
    if name not in samples:
        route = name.split(":", 1)[-1]
        pytest.skip(consumer.reasons.get(route, f"{name}: CUDA only"))
    route = name.split(":", 1)[1] if ":" in name else None
    interleave.record(benchmark, samples[name], calls[name], path=name, level="native",
                      op=op, size=size, route=route, arity=cs.ARITY[op], checked=True,
                      tensor=f"{size}x{size} float32 {device.type}",
                      label=consumer.labels.get(route, name))


@pytest.mark.parametrize("op,route", [(op, r) for op in cs.OPS for r in cs.ROUTES])
def test_c_shim_calls(benchmark, calls_run, consumer, device, notes, op, route):
    benchmark.group = GROUP_CALLS
    if consumer is None:
        pytest.skip(f"c_shims: {notes['unavailable']['c_shims']}")
    if op not in calls_run:
        pytest.skip(f"{op}: {consumer.shim_reasons.get((op, device.type))}")
    samples, n = calls_run[op]
    if route not in samples:
        pytest.skip(consumer.reasons.get(route))
    interleave.record(benchmark, samples[route], n, path=f"call:{route}", level="python",
                      op=op, size=32, route=route, arity=cs.ARITY[op], checked=True,
                      tensor=f"32x32 float32 {device.type}", label=consumer.labels[route])
