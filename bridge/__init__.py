"""Tensor -> metadata view through torch's stable C ABI, on one of three paths.

``bridge.view(t)`` returns a ``TensorView`` (data pointer, shape, strides in elements,
dtype, itemsize in bytes, device type and index) of a dense strided ``torch.Tensor``.
The handle it reads through comes from one of three sources:

========== ============================================ ================== =============
path       source                                       handle             torch
========== ============================================ ================== =============
owned      ``torch_tensor_from_pyobject``               new reference,     2.14+
                                                        deleted after use
borrow     ``torch_tensor_borrow_from_pyobject``         borrowed           any with
           (libtorch's if exported, else ``shim_ext``)                     ``shim_ext``
fallback   ``(char*)obj + sizeof(PyObject)``            borrowed           2.10+, offset
                                                                           proven at run
========== ============================================ ================== =============

Every path refuses the same tensors before it reads anything: those whose metadata is
not plain C++ state (the Python dispatch key; sizes, strides, device or layout computed
by a TensorImpl subclass or in Python), which the borrow itself refuses. Every path then
reads the same way, with the stable ABI's getters (the layout, seven ``aoti_torch_get_*``,
the storage offset and size, ``torch_is_conj`` / ``torch_is_neg``): the views are equal.

``set_path("auto")`` (the default) takes borrow, else owned, else fallback; which
exists is decided by symbol presence, never by torch's version string. Nothing is
resolved at import: the first ``view`` (or ``available_paths()``) does it, and needs
``import torch`` to have happened. ``python -m bridge info`` prints what was found.
Where shim_ext loads but was built for another torch, ``auto`` passes over the borrow
and says so once (``StaleShimWarning``, with the rebuild command).
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
