"""cuda.core's ``StridedMemoryView`` as a peer: load it, and find which path it takes.

cuda.core (PyPI ``cuda-core``) views a ``torch.Tensor`` either through its AOTI tensor
bridge (``(char*)obj + sizeof(PyObject)`` and seven ``aoti_torch_get_*`` calls, for the
torch versions it accepts) or through DLPack (``t.__dlpack__()``). Which one ran is
*observed*, not inferred from version strings: a profile hook counts calls of
``torch.Tensor.__dlpack__`` during one view, and the presence of cuda.core's
``_tensor_bridge`` module in ``sys.modules`` shows the AOTI bridge was loaded.
It runs on CPU tensors with no GPU and no CUDA driver, and on CUDA tensors
(``stream_ptr=-1``: no stream ordering, so nothing is synchronised in the timed call).
"""

from __future__ import annotations

import sys


def load(torch, device="cpu"):
    """``(view function taking a tensor, info dict)``, or ``(None, info)`` with
    ``info["unavailable"]`` saying why cuda.core cannot run here.

    The view function is ``StridedMemoryView.from_dlpack(t, -1)`` (cuda.core 1.x's
    explicit constructor; older ones: ``StridedMemoryView(t, stream_ptr=-1)``).
    The check and the path observation use a 32x32 tensor on ``device``, so the path
    recorded is the one taken for the tensors being timed.
    """
    from importlib import metadata

    info = {}
    try:
        info["version"] = metadata.version("cuda-core")
    except metadata.PackageNotFoundError:
        return None, {"unavailable": "cuda-core is not installed"}
    try:  # cuda.core 1.x exports it from cuda.core.utils; 0.x from cuda.core
        try:
            from cuda.core.utils import StridedMemoryView
        except ImportError:
            from cuda.core import StridedMemoryView
    except Exception as exc:  # import errors of its native parts vary: say which
        return None, {**info, "unavailable": f"import cuda.core failed: {type(exc).__name__}: {exc}"}
    from_dlpack = getattr(StridedMemoryView, "from_dlpack", None)
    if from_dlpack is not None:
        def view(t):
            return from_dlpack(t, -1)
        info["call"] = "StridedMemoryView.from_dlpack(t, -1)"
    else:
        def view(t):
            return StridedMemoryView(t, stream_ptr=-1)
        info["call"] = "StridedMemoryView(t, stream_ptr=-1)"
    t = torch.randn(32, 32, device=device)
    try:
        info["path"] = observe_path(view, t, torch)
        v = view(t)
        ok = (v.ptr, tuple(v.shape), tuple(v.strides)) == (t.data_ptr(), tuple(t.shape), t.stride())
    except Exception as exc:
        return None, {**info, "unavailable": f"{info['call']} failed: {type(exc).__name__}: {exc}"}
    if not ok:
        return None, {**info, "unavailable": f"{info['call']} returned a wrong view: {v!r}"}
    return view, info


def observe_path(view, t, torch) -> str:
    """Which path ``view(t)`` took: ``"dlpack"`` if it called ``t.__dlpack__``, ``"aoti"`` if
    it did not and cuda.core's ``_tensor_bridge`` is loaded, else ``"unknown"``."""
    dunder = torch.Tensor.__dlpack__
    code = getattr(dunder, "__code__", None)
    calls = 0

    def hook(frame, event, arg):
        nonlocal calls
        if event == "call" and frame.f_code is code:
            calls += 1

    sys.setprofile(hook)
    try:
        view(t)
    finally:
        sys.setprofile(None)
    if calls:
        return "dlpack"
    if any(name.endswith("._tensor_bridge") and name.startswith("cuda.core")
           for name in sys.modules):
        return "aoti"
    return "unknown"
