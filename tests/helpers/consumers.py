"""What the tests of the consumer examples (``shim_ext/examples/``, built on
``torch_borrow/consumer.h``) share: their build script, the route each torch must offer,
forcing a route, the tensors viewed (``CASES``, ``make``), the expected tuple, and
``build_examples`` (the session fixture ``built_examples`` builds them once)."""

from __future__ import annotations

import ctypes
import importlib.util
import os
import pathlib
import subprocess

import pytest
import torch

import bridge
from helpers.expect import TORCH, expected_paths
from helpers.paths import ROOT

_spec = importlib.util.spec_from_file_location("consumer_build",
                                               ROOT / "shim_ext" / "examples" / "build.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)
#: borrow_consumer (C++), borrow_consumer_c (C); minimal (the README's) has only view()
MODULES = sorted(m for m in build.EXAMPLES.values() if m not in ("minimal", "launcher"))


def _libtorch():
    return ctypes.CDLL("libtorch_cpu.so", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)


def libtorch_exports(name: str) -> bool:
    return hasattr(_libtorch(), name)


def expected_route() -> str | None:
    """libtorch's own borrow, else the prototype's (shim_ext, built wherever cffi builds),
    else the owned shim (torch 2.14+), else none."""
    if libtorch_exports("torch_tensor_borrow_from_pyobject"):
        return "libtorch"
    if expected_paths()["borrow"]:
        return "prototype"
    return "owned" if expected_paths()["owned"] else None


def expected_route_without_shim_ext() -> str:
    """With shim_ext absent or built for another torch: libtorch's borrow, else torch's
    owned shim (2.14+), else torch's DLPack exchange API (2.10+: every supported torch)."""
    if libtorch_exports("torch_tensor_borrow_from_pyobject"):
        return "libtorch"
    if libtorch_exports("torch_tensor_from_pyobject"):
        return "owned"
    return "dlpack"


def force(consumer, route: str) -> None:
    """Resolve again taking only ``route`` (a ROUTES entry); asserts it is taken. "owned"
    is torch's owned shim with shim_ext's C check, "owned-noshim" and "dlpack" run with
    shim_ext left out (the Python-level check), as on a machine without it."""
    if route == "auto":
        return
    name, _, noshim = route.partition("-")
    assert consumer._resolve(name, shim_ext=not noshim and name != "dlpack") == name


def flags_expected() -> bool:
    """torch_is_conj / torch_is_neg: libtorch's, else the prototype's."""
    return libtorch_exports("torch_is_conj") or expected_paths()["borrow"]


def device_code(name: str) -> int:
    fn = getattr(_libtorch(), f"aoti_torch_device_type_{name}")
    fn.restype = ctypes.c_int32
    return fn()


def unreadable() -> str | None:
    """Why no view can succeed here (the examples refuse every one), or None."""
    if expected_route() is None:
        return (f"no route: no shim_ext, and torch "
                f"{TORCH} has no owned shim (asserted in test_route_*)")
    if not flags_expected():
        return ("the owned route without torch_is_conj / torch_is_neg refuses every view "
                "(asserted in test_without_flag_getters_*)")
    return None


needs_route = pytest.mark.skipif(unreadable() is not None, reason=str(unreadable()))


#: The auto route, the owned one forced where torch has it (2.14+; its absence on older
#: torch is asserted in test_forced_owned_route), with and without shim_ext's C check,
#: and torch's DLPack exchange API (every supported torch: asserted in
#: test_every_supported_torch_has_a_route_without_shim_ext).
ROUTES = (["auto", "owned", "owned-noshim"] if expected_paths()["owned"] else ["auto"]) + [
    "dlpack"]

def expected_tuple(t):
    return (t.data_ptr(), tuple(t.shape), t.stride(), bridge.view(t).dtype_code,
            device_code(t.device.type), -1 if t.device.index is None else t.device.index)


class Plain(torch.Tensor):
    """A subclass that leaves __torch_dispatch__ alone: viewable."""


CASES = {
    "contiguous": lambda: torch.randn(4, 5),
    "transposed, storage offset": lambda: torch.randn(6, 7)[1:, 2:].t(),
    "0-d": lambda: torch.tensor(3.5),
    "0-size": lambda: torch.empty(0, 3),
    "0-size, storage offset": lambda: torch.randn(5)[2:2],
    "expanded": lambda: torch.randn(3, 1).expand(3, 4),
    "channels_last": lambda: torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last),
    "Parameter": lambda: torch.nn.Parameter(torch.randn(3)),
    "plain subclass": lambda: torch.randn(3).as_subclass(Plain),
    **{str(d).removeprefix("torch."): (lambda d=d: torch.ones(2, 3, dtype=d)[:, 1:])
       for d in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
                 torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool,
                 torch.complex64, torch.complex128, torch.float8_e4m3fn)},
    **{f"{n}, empty": (lambda n=n: torch.empty(2, 3, dtype=getattr(torch, n)).t())
       for n in ("float8_e5m2", "float8_e8m0fnu", "float4_e2m1fn_x2") if hasattr(torch, n)},
    "cuda": lambda: torch.randn(3, 4, device="cuda")[1:],
}


def make(case):
    if case == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device here")
    return CASES[case]()


def build_examples(out: pathlib.Path) -> pathlib.Path:
    """Build every example (``build.EXAMPLES``) into ``out``; a compiler error fails the
    test with the command and its output."""
    for source in build.EXAMPLES:
        try:
            build.build(source, out)
        except subprocess.CalledProcessError as exc:
            pytest.fail(f"{' '.join(exc.cmd)}\n{exc.stdout}{exc.stderr}")
    return out
