"""Scenario 3, Python level: what a user would call instead of the bridge, same run.

Each contender of ``NAMES`` is a ``timeit`` statement on one 32x32 float32 tensor ``t``
(CPU, or CUDA with ``--bench-device cuda``), interleaved round by round with the bridge's
own paths: the empty METH_O call (the floor), ``view_<path>(t)``, ``t.data_ptr()``, the
hand-written five reads, ``bridge.view(t)`` read back (goal G1), ``to_dlpack``,
``__dlpack__``, cuda.core's ``StridedMemoryView`` (``native/cuda_core_peer.py``),
``__cuda_array_interface__`` (CUDA only) and the binding libraries' empty and tensor calls
(``native/peers_bindings.py``), paired so the tensor's conversion is the per-round
difference. A peer that cannot run here is reported with its reason, never timed.
"""

from __future__ import annotations

import pytest

from bench.native import cuda_core_peer
from bench import protocol as interleave
from bench.native import peers_bindings
from bench import views
from bridge import PATHS

GROUP = "3 peers: Python level, 32x32 float32"
#: The contenders; a capsule or view made in a round is freed in that round (its deleter
#: is timed too).
NAMES = ("empty", *PATHS, "data_ptr", "python_attrs", "view_read",
         "to_dlpack", "dunder_dlpack", "cuda_core", "cuda_array_interface",
         *(n for pair in peers_bindings.NAMES.values() for n in pair))


@pytest.fixture(scope="module")
def peers_run(torch, bridge, available, native_peers, protocol, notes, device):
    import torch.utils.dlpack

    t = torch.randn(32, 32, dtype=torch.float32, device=device)
    paths = [p for p in views.VIEWERS if available[p]]
    views.check_paths(bridge, [t], paths)
    ns = {"t": t, "empty": native_peers.empty_function(),
          "to_dlpack": torch.utils.dlpack.to_dlpack}
    v = bridge.view(t)  # view_read's facts equal the five-tuple's (checked untimed)
    assert (v.ptr, v.shape, v.strides, v.dtype, v.device_type, v.device_index) == (
        t.data_ptr(), tuple(t.shape), t.stride(), t.dtype, t.device.type,
        -1 if t.device.index is None else t.device.index), v
    contenders = [interleave.statement("empty", "empty(t)", ns)]
    contenders += [interleave.statement(p, "f(t)", {**ns, "f": views.viewer(bridge, p)})
                   for p in paths]
    contenders += [
        interleave.statement("data_ptr", "t.data_ptr()", ns),
        interleave.statement("python_attrs",
                             "(t.data_ptr(), t.shape, t.stride(), t.dtype, t.device)", ns),
        # what a user of the bridge writes instead: the same facts through one view
        interleave.statement("view_read", "v = f(t); (v.ptr, v.shape, v.strides, v.dtype, "
                             "v.device_type, v.device_index)", {**ns, "f": bridge.view}),
        interleave.statement("to_dlpack", "to_dlpack(t)", ns),
        interleave.statement("dunder_dlpack", "t.__dlpack__()", ns),
    ]
    if device.type == "cuda":
        cai = t.__cuda_array_interface__
        assert cai["data"][0] == t.data_ptr() and cai["shape"] == tuple(t.shape), cai
        contenders.append(interleave.statement("cuda_array_interface",
                                               "t.__cuda_array_interface__", ns))
    else:
        notes["unavailable"]["cuda_array_interface"] = \
            "CPU tensors have no __cuda_array_interface__"
    smv, info = cuda_core_peer.load(torch, device)
    notes["cuda_core"] = info
    if smv is None:
        notes["unavailable"]["cuda_core"] = info["unavailable"]
    else:
        contenders.append(interleave.statement("cuda_core", "smv(t)", {**ns, "smv": smv}))
    notes["bindings"] = {}
    for name, b in peers_bindings.load_all(torch, device).items():
        notes["bindings"][name] = b.info
        empty_name, tensor_name = peers_bindings.NAMES[name]
        if b.available:
            contenders.append(interleave.statement(empty_name, "e()", {"e": b.empty}))
            contenders.append(interleave.statement(tensor_name, "f(t)", {**ns, "f": b.tensor}))
        else:
            notes["unavailable"][empty_name] = notes["unavailable"][tensor_name] = \
                b.info["unavailable"]
    return interleave.measure(contenders, protocol.rounds, protocol.calls, protocol.warmup)


@pytest.mark.parametrize("name", NAMES)
def test_peers(benchmark, peers_run, protocol, notes, name):
    benchmark.group = GROUP
    if name not in peers_run:
        pytest.skip(f"{name}: {notes['unavailable'].get(name)}")
    extra = {"cuda_core_path": notes["cuda_core"].get("path")} if name == "cuda_core" else {}
    interleave.record(benchmark, peers_run[name], protocol.calls, path=name, level="python",
                      **extra)
