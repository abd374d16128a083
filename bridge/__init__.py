"""Tensor -> metadata view through torch's stable C ABI, on one of three paths.

``bridge.view(t)`` returns a ``TensorView`` (data pointer, shape, strides in elements,
dtype, itemsize in bytes, device type and index) of a dense strided ``torch.Tensor``,
through an ``AtenTensorHandle`` that is owned (``torch_tensor_from_pyobject``), borrowed
(``torch_tensor_borrow_from_pyobject``) or the pointer trick. README.md is the contract:
"The bridge" (the paths, what every path refuses, ``auto``'s order) and "Threads and
free-threaded CPython".
Nothing is resolved at import: the first ``view`` (or ``available_paths()``) does it,
after ``import torch``; ``python -m bridge info`` prints what was found.
"""

try:
    from bridge._bridge import (
        TensorView,
        path_counts,
        reset_path_counts,
        view,
        view_borrow,
        view_fallback,
        view_owned,
    )
except ModuleNotFoundError as exc:  # the checkout's bridge/ holds no compiled module
    if exc.name != "bridge._bridge":
        raise
    raise ImportError(
        f"bridge is being imported from {__path__[0]}, which holds no compiled bridge._bridge: "
        "this is the source tree. Import the built package instead: run Python with -P "
        "(e.g. `.venv/torch-2.15.0/bin/python -P ...`) or from outside the checkout; build it "
        "with `make info`, or in your own environment with torch pinned (README.md): "
        "`pip install --no-build-isolation --no-deps .`") from exc
from bridge._resolve import PathInfo
from bridge._select import (
    AUTO_ORDER,
    CHOICES,
    PATHS,
    PathUnavailableError,
    StaleShimWarning,
    available_paths,
    get_path,
    requested_path,
    set_path,
    using_path,
)

__all__ = [
    "AUTO_ORDER",
    "CHOICES",
    "PATHS",
    "PathInfo",
    "PathUnavailableError",
    "StaleShimWarning",
    "TensorView",
    "available_paths",
    "get_path",
    "path_counts",
    "requested_path",
    "reset_path_counts",
    "set_path",
    "using_path",
    "view",
    "view_borrow",
    "view_fallback",
    "view_owned",
]
