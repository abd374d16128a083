"""The consumers counted on their own routes (``bench/consumers.py``) and the ask derived
from their counts (``proposal/consumers.py``).

The private-unpack launcher (``bench/native/unpack_launcher.cpp``) reads, on every route,
what torch's own accessors say (data pointer, shape, strides, dtype, device), on every
layout; it refuses what is not a tensor with an exception on every route. Every counted
configuration runs here (outside valgrind) with its patches installed, and the patches are
removed after it. The derivation's arithmetic is checked on counts made up for it.
"""

from __future__ import annotations

import pytest
import torch

from helpers.cases import LAYOUTS

from bench import consumers as bench_consumers
from proposal import consumers

DLPACK_CPU = 1  # kDLCPU


@pytest.fixture(scope="module")
def setup():
    return bench_consumers.Setup(torch)


def tensors():
    """One float32 tensor of each layout of the catalogue (up to the launcher's 64), the
    0-d and the 63-dim ones among them."""
    return [layout.build(torch.float32) for layout in LAYOUTS][:64]


@pytest.mark.parametrize("route", ["unpack", "owned", "borrow", "dlpack", "dlpack_fixed"])
def test_each_launcher_route_reads_what_torch_says(setup, route):
    launcher = setup.launcher
    if route.startswith("dlpack"):
        launcher.install_dlpack(setup.fixed_api if route == "dlpack_fixed" else setup.torch_api)
    fn = getattr(launcher, f"launch_{route.removesuffix('_fixed')}")
    ts = tensors()
    fn(*ts, 7, 8)
    got = launcher.last()
    assert len(got) == len(ts)
    for t, (ptr, sizes, strides, dtype, device_type, device_index) in zip(ts, got):
        assert (ptr, sizes, strides) == (t.data_ptr(), tuple(t.shape), tuple(t.stride()))
        if route.startswith("dlpack"):  # DLPack's codes: kDLFloat 2, 32 bits, 1 lane; kDLCPU
            assert (dtype, device_type, device_index) == (2 | 32 << 8 | 1 << 16, DLPACK_CPU, 0)
        else:  # ScalarType::Float, DeviceType::CPU and c10's index (-1: none), as the
            # stable ABI's getters give them too
            assert (dtype, device_type, device_index) == (6, 0, -1)
            assert t.device.index is None


@pytest.mark.parametrize("route", ["unpack", "owned", "borrow", "dlpack"])
@pytest.mark.parametrize("bad", [object(), 3, None])
def test_each_launcher_route_refuses_what_is_not_a_tensor(setup, route, bad):
    setup.launcher.install_dlpack(setup.torch_api)
    with pytest.raises((TypeError, RuntimeError)):
        getattr(setup.launcher, f"launch_{route}")(torch.ones(2), bad, 1, 2)


def test_the_launcher_takes_tensors_then_two_ints(setup):
    with pytest.raises(TypeError, match="1 to 64 tensors and two ints"):
        setup.launcher.launch_unpack(1, 2)
    with pytest.raises(TypeError):
        setup.launcher.launch_unpack(torch.ones(2), 1, "two")
    with pytest.raises(TypeError, match="two ints"):
        setup.launcher.launch_empty(1)
    assert setup.launcher.launch_empty(1, 2) is None


def test_every_configuration_runs_with_its_patches_and_removes_them(setup):
    """Each counted statement runs here with what it names installed; torch's own table
    and interpreter are as before afterwards (a tvm-ffi call reads the tensor right)."""
    import timeit

    names = [c.name for c in bench_consumers.configs()]
    assert len(names) == len(set(names))
    ran = 0
    for config in bench_consumers.configs():
        if setup.why_not(config) is not None:
            continue
        with setup.context(config):
            timeit.Timer(config.stmt, globals=setup.namespace).timeit(3)
        ran += 1
    assert ran == len(names), {c.name: setup.why_not(c) for c in bench_consumers.configs()}
    assert not setup.fixes.installed()
    from bench.native import peers_bindings

    b = peers_bindings.load("tvm_ffi", torch, quiet=True)
    ts = [torch.randn(4, 6)[1:, ::2], torch.randn(3, 5).t()]
    peers_bindings.check("tvm_ffi", b.more["describe"], ts)
    with setup.fixes.managed_export_patched():  # tvm-ffi's own path, the series' function
        peers_bindings.check("tvm_ffi", b.more["describe"], ts)


def made_up(per_call: dict, python: str) -> dict:
    return {"python": python, "per_call": per_call}


def test_the_derivation_saves_against_the_cheapest_stable_route_and_the_borrow_beyond_fixes():
    k = "launcher|{}|{}|1"
    counts = {k.format("unpack", "today"): 500, k.format("owned", "today"): 1300,
              k.format("dlpack", "today"): 1000, k.format("owned", "0001"): 1100,
              k.format("dlpack", "0001"): 900, k.format("dlpack", "dlpack"): 700,
              k.format("borrow", "today"): 800}
    files = {("consumers", tag): made_up(counts, py) for tag, py in consumers.CPYTHONS}
    row = next(r for r in consumers.derive(files) if r.spec.setup.startswith("1 tensor +"))
    assert row.values["today"] == [500] * 3
    assert row.values["stable"] == [1000] * 3  # the cheaper of owned and dlpack today
    assert row.saving["0001"] == [100] * 3  # 1000 - min(1100, 900)
    assert row.saving["dlpack"] == [300] * 3
    assert row.saving["fixes"] == [300] * 3
    assert row.base["borrow"] == "fixes" and row.saving["borrow"] == [-100] * 3
    assert row.best() == "dlpack" and not row.helps("borrow")
    assert row.missing == []


def test_a_saving_within_the_noise_is_no_help_and_a_route_not_taken_is_never_best():
    c = "cuda_core|{}|{}|1"
    counts = {c.format("pointer", "today"): 1800, c.format("owned", "today"): 2500,
              c.format("owned", "0001"): 2500 - consumers.NOISE,
              c.format("dlpack", "dlpack"): 1000, c.format("borrow", "today"): 2000}
    files = {("consumers", tag): made_up(counts, py) for tag, py in consumers.CPYTHONS}
    row = next(r for r in consumers.derive(files) if r.spec.consumer == "cuda.core")
    assert not row.helps("0001")  # exactly NOISE: not beyond it
    assert row.helps("dlpack") and "dlpack" in row.spec.not_taken
    assert row.best() is None
    assert row.helps("borrow") and row.saving["borrow"] == [475] * 3


def test_a_missing_file_is_named():
    rows = consumers.derive({})
    assert all(r.missing for r in rows)
    assert any("CPython 3.13" in m for r in rows for m in r.missing)
