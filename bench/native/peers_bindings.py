"""The binding libraries kernel authors bind with, as peers: nanobind and apache-tvm-ffi.

Each library gets two functions of its own, built from ``bindings/`` into
``build/bench-<torch>-<SOABI>/``: ``empty()`` and a function taking one tensor
(nanobind's ``nb::ndarray<>``: ``_load_nanobind``; tvm-ffi's ``TensorView``:
``_load_tvm_ffi``) that reads what a view reads and returns None, so ``tensor call -
empty call`` is the conversion's own share. Before timing, each library's ``describe(t)``
is compared with torch's own accessors (``check``) and the DLPack route it took is
observed (``dlpack_calls``). A library that is not installed or does not build is
returned unavailable with the reason, never a failure (``python -P -m bench.native.peers_bindings``).
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from typing import Callable
from bench.native import torch_version

HERE = pathlib.Path(__file__).resolve().parent
SOURCES = HERE / "bindings"
REPO = HERE.parent.parent

#: contender names of each library: (empty call, call with one tensor)
NAMES = {"nanobind": ("nanobind_empty", "nanobind_ndarray"),
         "tvm_ffi": ("tvm_ffi_empty", "tvm_ffi_tensor")}
# DLPack's device type codes (dlpack.h: kDLCPU = 1, kDLCUDA = 2) and kDLFloat = 2.
DL_DEVICE = {"cpu": 1, "cuda": 2}
DL_FLOAT = 2


class Unavailable(Exception):
    """A peer that cannot run here; the message says why."""


@dataclass
class Binding:
    """One library's pair of functions, or the reason it has none.

    ``empty()`` and ``tensor(t)`` are the library's own callables (None when
    unavailable); ``info`` goes into the results (version, how it was built, the route
    the tensor took, or ``"unavailable"``); ``more`` the library's other functions by
    name (tvm-ffi's ``tensor8``: the same read of eight tensors in one call; its
    ``describe``).
    """

    name: str
    empty: Callable | None = None
    tensor: Callable | None = None
    info: dict = field(default_factory=dict)
    more: dict = field(default_factory=dict)

    @property
    def available(self) -> bool:
        return self.tensor is not None


def build_dir(torch_version: str) -> pathlib.Path:
    """``bench.native.build_dir``: one folder per torch and interpreter, shared."""
    from bench import native

    return native.build_dir(torch_version)


def _version(dist: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        raise Unavailable(f"{dist} is not installed (pyproject's `bench` extra)") from None


@contextlib.contextmanager
def _scripts_on_path():
    """This environment's scripts (cmake, ninja from PyPI, if installed there) first on
    PATH while building: `make` runs python by its path, without activating the venv."""
    old = os.environ.get("PATH", "")
    os.environ["PATH"] = os.pathsep.join([sysconfig.get_path("scripts"), old])
    try:
        yield
    finally:
        os.environ["PATH"] = old


def _run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-12:]
        raise Unavailable(f"{what} failed (exit {proc.returncode}): " + " | ".join(tail))


def _build_nanobind(out: pathlib.Path, quiet: bool) -> pathlib.Path:
    """Configure (once) and build ``_bench_nanobind`` with nanobind's CMake; returns the
    build folder, which holds the module."""
    version = _version("nanobind")
    import nanobind

    with _scripts_on_path():
        cmake = shutil.which("cmake")
        if cmake is None:
            raise Unavailable("cmake is not on PATH (nanobind builds through its CMake)")
        if not (out / "CMakeCache.txt").exists():
            if not quiet:
                print(f">>> building the nanobind {version} peer (first time: about a minute)",
                      file=sys.stderr, flush=True)
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            _run([cmake, "-S", str(SOURCES), "-B", str(out), *generator,
                  "-DCMAKE_BUILD_TYPE=Release", f"-DPython_EXECUTABLE={sys.executable}",
                  f"-Dnanobind_DIR={nanobind.cmake_dir()}"], "cmake configure")
        _run([cmake, "--build", str(out), "--parallel", "2"], "cmake --build")
    return out


def _load_nanobind(torch_version: str, quiet: bool):
    """nanobind (PyPI ``nanobind``, 3.x), built with its CMake (``nanobind_add_module``,
    Release); it imports a tensor by calling its ``__dlpack__`` (``src/nb_ndarray.cpp``,
    ``ndarray_import_impl``)."""
    out = _build_nanobind(build_dir(torch_version) / "nanobind", quiet)
    from bench.native import load_extension

    mod = load_extension("_bench_nanobind", out)
    return mod.empty, mod.ndarray, mod.describe, {}, {
        "distribution": "nanobind", "version": _version("nanobind"), "argument": "nb::ndarray<>",
        "build": "nanobind_add_module (nanobind's CMake), CMAKE_BUILD_TYPE=Release"}


def _load_tvm_ffi(torch_version: str, quiet: bool):
    """apache-tvm-ffi, exported with ``TVM_FFI_DLL_EXPORT_TYPED_FUNC`` and built by
    ``tvm_ffi.cpp.load`` (its ninja build); its argument setter converts a tensor whose
    class has ``__dlpack_c_exchange_api__`` through that API's
    ``managed_tensor_from_py_object_no_sync`` into an ``ffi::Tensor``
    (``python/tvm_ffi/cython/function.pxi``)."""
    version = _version("apache-tvm-ffi")
    try:
        import tvm_ffi
        import tvm_ffi.cpp
    except Exception as exc:  # its native library's import errors vary: say which
        raise Unavailable(f"import tvm_ffi failed: {type(exc).__name__}: {exc}") from None
    out = build_dir(torch_version) / "tvm_ffi"
    if not quiet and not any(out.glob("*.so")):
        print(f">>> building the apache-tvm-ffi {version} peer (first time: under a minute)",
              file=sys.stderr, flush=True)
    out.mkdir(parents=True, exist_ok=True)
    with _scripts_on_path():
        if shutil.which("ninja") is None:
            raise Unavailable("ninja is not on PATH (tvm_ffi.cpp.load builds with it)")
        try:
            mod = tvm_ffi.cpp.load("_bench_tvm_ffi", cpp_files=[str(SOURCES / "tvm_ffi_peer.cc")],
                                   build_directory=str(out))
        except Exception as exc:
            lines = str(exc).strip().splitlines()
            raise Unavailable(f"tvm_ffi.cpp.load failed: {type(exc).__name__}: "
                              + " | ".join(lines[-12:])) from None
    describe = lambda t: tuple(mod.describe(t))  # noqa: E731
    return mod.empty, mod.tensor, describe, {"tensor8": mod.tensor8, "describe": describe}, {
        "distribution": "apache-tvm-ffi", "version": version, "argument": "tvm::ffi::TensorView",
        "build": "tvm_ffi.cpp.load (TVM_FFI_DLL_EXPORT_TYPED_FUNC, its ninja build)"}


#: name -> loader ``(torch_version, quiet) -> (empty, tensor, describe, more, info)``
LOADERS = {"nanobind": _load_nanobind, "tvm_ffi": _load_tvm_ffi}


def expected(t) -> tuple:
    """What ``describe(t)`` must say, from torch's own accessors: (data_ptr() with the
    storage offset, shape, strides in elements, (kDLFloat, bits, 1), DLPack device type,
    device index (0 on the CPU))."""
    assert t.dtype.is_floating_point and not t.dtype.is_complex, t.dtype
    return (t.data_ptr(), tuple(t.shape), tuple(t.stride()), (DL_FLOAT, t.element_size() * 8, 1),
            DL_DEVICE[t.device.type], t.device.index or 0)


def _normalise(name: str, got) -> tuple:
    """``describe``'s answer in ``expected``'s form (tvm_ffi's is one flat int array)."""
    if name == "nanobind":
        ptr, shape, strides, dtype, dev_type, dev_id = got
        return ptr, tuple(shape), tuple(strides), tuple(dtype), dev_type, dev_id
    ptr, ndim, rest = got[0], got[1], list(got[2:])
    shape, strides, rest = tuple(rest[:ndim]), tuple(rest[ndim:2 * ndim]), rest[2 * ndim:]
    return ptr, shape, strides, tuple(rest[:3]), rest[3], rest[4]


def check(name: str, describe, tensors) -> None:
    """Raise AssertionError unless ``describe`` reads every tensor as torch does."""
    for t in tensors:
        got, want = _normalise(name, describe(t)), expected(t)
        assert got == want, f"{name} reads {got}, torch says {want}"


def dlpack_calls(fn, t, torch) -> dict:
    """Python-level DLPack calls made by one ``fn(t)``: ``{"__dlpack__": n, "to_dlpack": n}``
    (a C-level route, such as the exchange API, shows as none)."""
    import torch.utils.dlpack

    codes = {getattr(torch.Tensor.__dlpack__, "__code__", None): "__dlpack__",
             getattr(torch.utils.dlpack.to_dlpack, "__code__", None): "to_dlpack"}
    codes.pop(None, None)
    calls = dict.fromkeys(codes.values(), 0)

    def hook(frame, event, arg):
        if event == "call" and frame.f_code in codes:
            calls[codes[frame.f_code]] += 1

    sys.setprofile(hook)
    try:
        fn(t)
    finally:
        sys.setprofile(None)
    return calls


def route(name: str, calls: dict, torch) -> str:
    """How the tensor reached the function, from the observed calls (and, where nothing
    Python-level was called, from what torch exposes to a C-level consumer)."""
    if calls.get("__dlpack__"):
        return f"t.__dlpack__() ({calls['__dlpack__']} call(s) per call)"
    if calls.get("to_dlpack"):
        return f"torch.utils.dlpack.to_dlpack(t) ({calls['to_dlpack']} call(s) per call)"
    if name == "tvm_ffi" and hasattr(torch.Tensor, "__dlpack_c_exchange_api__"):
        return ("no Python-level DLPack call: torch.Tensor.__dlpack_c_exchange_api__ "
                "(managed_tensor_from_py_object_no_sync)")
    return "no Python-level DLPack call observed"


def load(name: str, torch, device="cpu", quiet: bool = False) -> Binding:
    """Build (if needed), load, check and observe one library; never raises for a
    library that cannot run here (``Binding.info["unavailable"]`` says why)."""
    version = torch_version(torch)
    try:
        empty, tensor, describe, more, info = LOADERS[name](version, quiet)
    except Unavailable as exc:
        return Binding(name, info={"unavailable": str(exc)})
    t = torch.randn(32, 32, dtype=torch.float32, device=device)
    try:
        check(name, describe, [t, t[1:, ::2]])
        empty()
        info["route"] = route(name, dlpack_calls(tensor, t, torch), torch)
    except Exception as exc:  # a wrong or failing answer is reported, never timed
        return Binding(name, info={**info, "unavailable": f"{type(exc).__name__}: {exc}"})
    return Binding(name, empty, tensor, info, more)


def load_all(torch, device="cpu", quiet: bool = False) -> dict[str, Binding]:
    """``{"nanobind": Binding, "tvm_ffi": Binding}``."""
    return {name: load(name, torch, device, quiet) for name in LOADERS}


if __name__ == "__main__":
    import torch as _torch

    for b in load_all(_torch).values():
        print(b.name, "available" if b.available else "UNAVAILABLE", b.info)
