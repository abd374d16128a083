"""Scenario 6: the seed's protocol in the seed's own consumer.

The seed timed cuda.core's ``StridedMemoryView`` on a CUDA tensor, toggling cuda.core's
tensor bridge between the owned shim and the pointer trick. Here the same view type is
filled the same way (``cuda_core_consumer.pyx``: cuda.core's ``view_as_torch_tensor``
body, built against the installed cuda-core's ``.pxd``) from each of our handle routes:
torch's owned ``torch_tensor_from_pyobject`` (2.14+), 2.14's implementation built for the
running torch (``owned_prototype.cpp``; on 2.14+ beside the real one), the owned route
with the interpreter fix installed for each round (the patch's own ``incref`` /
``decref``), the borrow, the pointer trick, torch's DLPack
``dltensor_from_py_object_no_sync`` and the fixed one (borrowed reference), and
cuda.core's own ``StridedMemoryView.from_dlpack(t, -1)`` (whatever path it takes on this
torch, observed). A 32x32 float32 tensor on ``--bench-device``
(CUDA on the GPU machine, else CPU); 2,000 warm-up calls per route, then 30 interleaved
rounds of 10,000 ``f(t)`` calls (``interleave.measure``). Each view is checked field by
field against cuda.core's own before timing.
"""

from __future__ import annotations

import contextlib

import pytest

from bench import protocol as interleave

GROUP = "6 seed consumer: cuda.core StridedMemoryView via each route, 32x32 float32"
ROUTES = ("owned", "owned_prototype", "owned_fixed", "borrow", "pointer", "dlpack",
          "dlpack_fixed", "cuda_core")


@pytest.fixture(scope="module")
def consumer_run(torch, protocol, device, notes):
    from bench.native import cuda_core_consumer as cc

    try:
        consumer = cc.Consumer(torch, device.type)
    except cc.Unavailable as exc:
        notes["unavailable"]["consumer"] = str(exc)
        return None, {}
    notes["consumer"] = {"labels": consumer.labels, "unavailable": consumer.reasons,
                         "cuda_core": consumer.cuda_core_info,
                         "cuda_core_version": consumer.cuda_core_version}
    t = torch.randn(32, 32, dtype=torch.float32, device=device)
    routes = consumer.routes()
    want = cc.fields(consumer.viewer("cuda_core")(t)) if "cuda_core" in routes else None
    contenders = []
    for r in routes:
        f, context = consumer.timed(r)
        with context():  # checked as timed: the fix installed, the bare function
            got = cc.fields(f(t))
        assert want is None or got == want, f"{r}: {got} != cuda.core's {want}"
        contenders.append(interleave.statement(
            r, "f(t)", {"f": f, "t": t},
            None if context is contextlib.nullcontext else context))
    samples = interleave.measure(contenders, protocol.rounds, protocol.calls, protocol.warmup)
    return consumer, samples


@pytest.mark.parametrize("route", ROUTES)
def test_consumer(benchmark, consumer_run, protocol, notes, device, route):
    benchmark.group = GROUP
    consumer, samples = consumer_run
    if consumer is None:
        pytest.skip(f"consumer: {notes['unavailable']['consumer']}")
    if route not in samples:
        pytest.skip(f"{route}: {consumer.reasons.get(route)}")
    interleave.record(benchmark, samples[route], protocol.calls, path=route, level="python",
                      checked=True, label=consumer.labels[route],
                      tensor=f"32x32 float32 {device.type}")
