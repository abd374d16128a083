"""Scenario 4: how a view's cost scales, Python level, paths interleaved.

- ``ndim``: one float32 tensor (on the ``device`` fixture's device) of shape ``(2,) * d``
  for d = 0..16 (the bridge keeps up to 8 dimensions inline, without a heap allocation):
  contender ``<path>-<d>d``;
- ``ntensors``: a kernel launch's argument list, N distinct tensors viewed one after
  another (``for x in ts: f(x)``), N = 1, 3, 8, 14: contender ``<path>-x<N>``; the
  report divides by N for the cost per tensor;
- ``launcher``: ``bench/launcher_workload.py``'s launch statements (k tensors of distinct
  shapes, six attributes of each view read, the last call's views alive; the hand-written
  five reads of the same tensors as the anchor), k = 1, 3, 8, 26: contenders
  ``launch_view_<k>`` and ``launch_hand_<k>``, the same statements ``make callgrind``
  counts.
"""

from __future__ import annotations

import pytest

from bench import launcher_workload
from bench import protocol as interleave
from bench import views

NDIM_GROUP = "4a scaling: ndim 0..8, view_<path>(t), Python level"
N_GROUP = "4b scaling: N tensors per launch, Python level"
LAUNCHER_GROUP = ("4c scaling: a launcher's workload, k tensors of distinct shapes, six "
                  "attributes of each view, Python level")
NDIMS = launcher_workload.DIMS
NS = (1, 3, 8, 14)


def _launch_args(torch, n, device):
    """N distinct tensors of the shapes a fused kernel's arguments have (activations,
    weights, biases, scalars, views with offsets)."""
    shapes = [(32, 64), (64,), (64, 64), (8, 32, 64), (), (4, 4)]
    base = torch.randn(4096, device=device)
    ts = []
    for i in range(n):
        if i % 5 == 4:
            ts.append(base[i * 7: i * 7 + 64].view(8, 8))  # a view with a storage offset
        else:
            ts.append(torch.randn(shapes[i % len(shapes)], device=device))
    return tuple(ts)


@pytest.fixture(scope="module")
def ndim_run(torch, bridge, available, protocol, device):
    paths = [p for p in views.VIEWERS if available[p]]
    tensors = {d: torch.randn((2,) * d, device=device) for d in NDIMS}
    views.check_paths(bridge, tensors.values(), paths)
    contenders = [interleave.statement(f"{p}-{d}d", "f(t)", {"f": views.viewer(bridge, p),
                                                             "t": tensors[d]})
                  for d in NDIMS for p in paths]
    return interleave.measure(contenders, protocol.rounds, protocol.calls, protocol.warmup)


@pytest.fixture(scope="module")
def n_run(torch, bridge, available, protocol, device):
    paths = [p for p in views.VIEWERS if available[p]]
    args = {n: _launch_args(torch, n, device) for n in NS}
    views.check_paths(bridge, args[max(NS)], paths)
    contenders = [interleave.statement(f"{p}-x{n}", "for x in ts: f(x)",
                                       {"f": views.viewer(bridge, p), "ts": args[n]})
                  for n in NS for p in paths]
    return interleave.measure(contenders, protocol.rounds, protocol.calls, protocol.warmup)


@pytest.mark.parametrize("ndim", NDIMS)
@pytest.mark.parametrize("path", views.VIEWERS)
def test_ndim(benchmark, ndim_run, protocol, notes, path, ndim):
    benchmark.group = NDIM_GROUP
    name = f"{path}-{ndim}d"
    if name not in ndim_run:
        pytest.skip(f"{path}: {notes['unavailable'].get(path)}")
    interleave.record(benchmark, ndim_run[name], protocol.calls, path=path, ndim=ndim,
                      level="python")


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("path", views.VIEWERS)
def test_ntensors(benchmark, n_run, protocol, notes, path, n):
    benchmark.group = N_GROUP
    name = f"{path}-x{n}"
    if name not in n_run:
        pytest.skip(f"{path}: {notes['unavailable'].get(path)}")
    interleave.record(benchmark, n_run[name], protocol.calls, path=path, ntensors=n,
                      level="python")


@pytest.fixture(scope="module")
def launcher_run(torch, bridge, available, protocol, device):
    if not available["borrow"]:
        return {}
    ns = launcher_workload.namespace(torch, bridge, dims=())
    for k in launcher_workload.KS:  # to the device, and each view read right once
        ns[f"ts{k}"] = [t.to(device) for t in ns[f"ts{k}"]]
        views.check_paths(bridge, ns[f"ts{k}"], ["borrow"])
    contenders = [interleave.statement(name, stmt, ns) for name, (stmt, _)
                  in launcher_workload.statements(dims=()).items()
                  if not name.startswith("launch_bare_")]  # counted by callgrind only
    return interleave.measure(contenders, protocol.rounds, protocol.calls, protocol.warmup)


@pytest.mark.parametrize("k", launcher_workload.KS)
@pytest.mark.parametrize("side", ["view", "hand"])
def test_launcher(benchmark, launcher_run, protocol, notes, side, k):
    benchmark.group = LAUNCHER_GROUP
    name = f"launch_{side}_{k}"
    if name not in launcher_run:
        pytest.skip(f"borrow: {notes['unavailable'].get('borrow')}")
    interleave.record(benchmark, launcher_run[name], protocol.calls, path=f"launch_{side}",
                      ntensors=k, level="python")
