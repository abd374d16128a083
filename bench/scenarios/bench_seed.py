"""Scenario 1: the seed's protocol, reproduced on every available path.

A 32x32 float32 tensor (CPU, or CUDA with ``--bench-device cuda``); 2,000 warm-up
calls per path, then 30 rounds of 10,000 ``view_<path>(t)`` calls, the paths
interleaved round by round in a rotating order, the garbage collector off
(``interleave.measure``). The seed measured this through
cuda.core on a GPU host (shim vs fallback, best of 30 x 10,000); this is the same
protocol on the bridge's three handle sources, at Python level: what a user's
``view(t)`` costs, Python call and ``TensorView`` object included.
"""

from __future__ import annotations

import pytest

from bench import protocol as interleave
from bench import views

GROUP = "1 seed protocol: view_<path>(t), 32x32 float32, Python level"


@pytest.fixture(scope="module")
def seed_run(torch, bridge, available, protocol, device):
    t = torch.randn(32, 32, dtype=torch.float32, device=device)
    paths = [p for p in views.VIEWERS if available[p]]
    views.check_paths(bridge, [t], paths)
    contenders = [interleave.statement(p, "f(t)", {"f": views.viewer(bridge, p), "t": t})
                  for p in paths]
    return interleave.measure(contenders, protocol.rounds, protocol.calls, protocol.warmup)


@pytest.mark.parametrize("path", views.VIEWERS)
def test_seed(benchmark, seed_run, protocol, notes, device, path):
    benchmark.group = GROUP
    if path not in seed_run:
        pytest.skip(f"{path}: {notes['unavailable'].get(path)}")
    interleave.record(benchmark, seed_run[path], protocol.calls, path=path, level="python",
                      checked=True, tensor=f"32x32 float32 {device.type}")
