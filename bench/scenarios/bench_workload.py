"""Scenario 5: a real workload, the tensors of a transformer decode step (``workload``).

Each contender bridges every tensor of every kernel launch of one decode step,
op by op (``for args in ops: for x in args: f(x)``), as a kernel-launch library would;
``empty`` does the same with an empty C function (the Python call floor). The bridging
contenders time only the bridging, never the model's arithmetic; ``decode_step`` is
one real decode step of the same model (``Step.run``: eager forward, no capture, torch's
own intra-op threads), interleaved in the same rounds so that a saving can be read as a
share of a step (fewer steps per round than bridging loops: ``decode_steps``).
Reported: cost per step per path, and (in the report) the saving per 1,000 ops and per
step as a share of the step.
"""

from __future__ import annotations

import collections
import timeit

import pytest

from bench import protocol as interleave
from bench import views
from bench.scenarios import workload

GROUP = "5 workload: one TransformerDecoder decode step, every launch's tensors"
NAMES = ("empty",) + views.VIEWERS + ("decode_step",)
STEP_LOOP = "for args in ops:\n    for x in args:\n        f(x)"
# A real step costs hundreds of bridging loops (tens of ms on 2 CPU cores): the
# decode_step contender runs 1 step per this many bridging loops of its round.
STEP_DIVISOR = 20


def decode_steps(calls: int) -> int:
    """Real decode steps per round when the bridging contenders make ``calls`` loops."""
    return max(1, -(-calls // STEP_DIVISOR))


@pytest.fixture(scope="module")
def step(torch, bridge, notes, device):
    s = workload.decode_step_ops(torch, bridge, device=device)
    notes["workload"] = {
        **s.config, "ops_per_step": len(s.ops), "torch_threads": torch.get_num_threads(),
        "tensors_per_step": sum(len(op) for op in s.ops),
        "dropped_tensors": s.dropped,
        "ops_by_name": dict(collections.Counter(s.names).most_common()),
    }
    return s


@pytest.fixture(scope="module")
def workload_run(bridge, available, native_peers, protocol, step):
    paths = [p for p in views.VIEWERS if available[p]]
    views.check_paths(bridge, [t for op in step.ops for t in op], paths)
    fns = {"empty": native_peers.empty_function(),
           **{p: views.viewer(bridge, p) for p in paths}}
    calls = max(1, protocol.calls // 100)  # steps per round: each step is hundreds of views
    contenders = [interleave.statement(name, STEP_LOOP, {"f": f, "ops": step.ops})
                  for name, f in fns.items()]
    timer = timeit.Timer("step()", globals={"step": step.run})
    contenders.append(interleave.Contender(
        "decode_step", lambda n: timer.timeit(decode_steps(n)) / decode_steps(n) * 1e9))
    return calls, interleave.measure(contenders, protocol.rounds, calls,
                                     max(1, protocol.warmup // 100))


@pytest.mark.parametrize("name", NAMES)
def test_workload(benchmark, workload_run, step, notes, name):
    benchmark.group = GROUP
    calls, run = workload_run
    if name not in run:
        pytest.skip(f"{name}: {notes['unavailable'].get(name)}")
    calls = decode_steps(calls) if name == "decode_step" else calls
    interleave.record(benchmark, run[name], calls, path=name, level="python", unit="step",
                      ops_per_step=len(step.ops),
                      tensors_per_step=sum(len(op) for op in step.ops))
