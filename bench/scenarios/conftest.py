"""Shared fixtures of the benchmark suite (run through ``python -P -m bench`` / ``make bench``).

- ``--bench-quick``: every scenario with a handful of short rounds (CI's check that the
  code runs; its numbers are not evidence).
- ``--bench-device``: ``cpu`` (the default; what ``make bench`` measures) or ``cuda``
  (the scenarios' tensors made on ``cuda:0``; ``bench/gpu/run.sh`` on the GPU machine).
  The ``device`` fixture hands it to the scenarios; the GPU's name, capability, driver
  and CUDA versions go into the JSON's ``machine_info.bench.gpu``.
- ``protocol``: rounds / calls / warm-up per level (the seed's 30 x 10,000 after 2,000
  at Python level; 100,000 calls per round natively, where a call is 10-100x cheaper).
- ``notes``: per-session facts that are not timings (unavailable contenders and why,
  which path cuda.core took, the workload's shape); written into the JSON under
  ``"evidence"`` by ``pytest_benchmark_update_json``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from bench import machine_info


def pytest_addoption(parser):
    parser.addoption("--bench-quick", action="store_true",
                     help="every scenario briefly: checks the code runs, not a measurement")
    parser.addoption("--bench-device", choices=("cpu", "cuda"), default="cpu",
                     help="where the scenarios' tensors live (default cpu)")
    parser.addoption("--bench-rounds", type=int, default=None,
                     help="rounds per measurement instead of the protocol's 30 (a run of "
                     "several processes, python -m bench --processes, takes fewer per process)")


@dataclass(frozen=True)
class Protocol:
    """Rounds and calls of one run; ``*_calls`` are calls per round and contender."""

    quick: bool
    rounds: int
    calls: int
    warmup: int
    native_calls: int
    native_warmup: int


@pytest.fixture(scope="session")
def protocol(request) -> Protocol:
    rounds = request.config.getoption("--bench-rounds")
    if request.config.getoption("--bench-quick"):
        return Protocol(True, rounds=rounds or 3, calls=200, warmup=50, native_calls=1_000,
                        native_warmup=100)
    return Protocol(False, rounds=rounds or 30, calls=10_000, warmup=2_000,
                    native_calls=100_000, native_warmup=10_000)


_NOTES: dict = {"unavailable": {}, "protocol": None}


@pytest.fixture(scope="session")
def notes(protocol) -> dict:
    """Facts for the report, keyed by scenario; filled by the benchmark modules."""
    _NOTES["protocol"] = protocol.__dict__
    return _NOTES


@pytest.fixture(scope="session")
def torch():
    import torch as _torch

    return _torch


@pytest.fixture(scope="session")
def device(request, torch, notes):
    """The ``torch.device`` every scenario makes its tensors on (``--bench-device``).

    ``cuda`` means ``cuda:0``; asking for it where torch sees no GPU is an error, not a
    skip: a CUDA run that silently measured CPU tensors would be mislabelled evidence.
    """
    kind = request.config.getoption("--bench-device")
    if kind == "cuda":
        if not torch.cuda.is_available():
            raise pytest.UsageError("--bench-device cuda: torch.cuda.is_available() is false")
        notes["device"] = {"type": "cuda", "index": 0, **_gpu()}
        return torch.device("cuda", 0)
    return torch.device("cpu")


def _gpu() -> dict:
    """What names the GPU a CUDA run measured on (cuda:0)."""
    import torch as _torch

    props = _torch.cuda.get_device_properties(0)
    driver = None
    try:  # the driver's CUDA version, through the driver itself (cuDriverGetVersion)
        import ctypes

        v = ctypes.c_int(0)
        if ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(v)) == 0:
            driver = f"{v.value // 1000}.{v.value % 1000 // 10}"
    except OSError:
        pass
    return {"name": props.name, "capability": f"{props.major}.{props.minor}",
            "multiprocessors": props.multi_processor_count,
            "memory_gib": round(props.total_memory / 2**30, 1),
            "device_count": _torch.cuda.device_count(),
            "torch_cuda": _torch.version.cuda, "driver_cuda": driver}


@pytest.fixture(scope="session")
def bridge(torch):
    import bridge as _bridge

    return _bridge


@pytest.fixture(scope="session")
def native_peers(torch, bridge):
    from bench.native import peers_native

    return peers_native.NativePeers(torch, bridge)


@pytest.fixture(scope="session")
def available(bridge, notes):
    """``{path: bool}`` for owned / borrow / fallback; reasons go to the notes."""
    paths = bridge.available_paths()
    for p, info in paths.items():
        if not info.available:
            notes["unavailable"][p] = info.reason
    return {p: info.available for p, info in paths.items()}


def pytest_sessionstart(session):
    _machine()  # the load average before anything runs


def pytest_benchmark_update_machine_info(config, machine_info):
    if config.getoption("--bench-device") == "cuda" and "gpu" not in _MACHINE:
        _MACHINE["gpu"] = _gpu()
    machine_info.update({"bench": _machine()})


_MACHINE: dict = {}


def _machine() -> dict:
    if not _MACHINE:
        _MACHINE.update(machine_info.collect())
    return _MACHINE


def pytest_benchmark_update_json(config, benchmarks, output_json):
    m = dict(_machine())
    m["load_average_at_end"] = machine_info.load_average()
    output_json["machine_info"]["bench"] = m
    output_json["evidence"] = _NOTES
