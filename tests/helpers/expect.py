"""What each torch version must offer, and torch's own answer for a tensor."""

from __future__ import annotations

import torch
from packaging.version import Version

from bridge import _support

TORCH = Version(torch.__version__)


def expected_paths() -> dict[str, bool]:
    """Which paths must be available on the running torch and interpreter.

    owned: ``torch_tensor_from_pyobject`` ships in 2.14+; borrow: shim_ext builds on every
    supported torch and interpreter (by cffi, or by setuptools' Extension where cffi cannot
    build: free-threaded 3.13 with torch 2.12, ``bridge._support.shim_ext_route``);
    fallback: the ``THPVariable`` offset holds on 2.10+.
    """
    return {
        "owned": TORCH.release >= (2, 14),
        "borrow": True,
        "fallback": TORCH.release >= (2, 10),
    }


def auto_path() -> str:
    """The path ``set_path("auto")`` must pick here: borrow, else owned, else fallback."""
    expected = expected_paths()
    return next(p for p in ("borrow", "owned", "fallback") if expected[p])


def torch_answer(t: torch.Tensor) -> dict:
    """The metadata a view must report, from torch's own accessors."""
    return {
        "ptr": t.data_ptr(),
        "shape": tuple(t.shape),
        "strides": t.stride(),
        "ndim": t.dim(),
        "dtype": t.dtype,
        "itemsize": t.element_size(),
        "device_type": t.device.type,
        "device_index": -1 if t.device.index is None else t.device.index,
    }


def view_fields(v) -> dict:
    """A view's fields, in ``torch_answer``'s form."""
    return {name: getattr(v, name) for name in
            ("ptr", "shape", "strides", "ndim", "dtype", "itemsize", "device_type",
             "device_index")}
