"""Reading a run's JSON: the groups, ``Results`` (rows by group and key, their per-round
samples) and each row's label (the one recorded with it, else the tables' own)."""

from __future__ import annotations

import numpy as np


# Groups by the number that starts their name (scenarios/bench_*.py set the names).
SEED, NATIVE, PARTS, ROUTES, PEERS, NDIM, NTENS, LAUNCHER, WORK = (
    "1", "2", "2b", "2c", "3", "4a", "4b", "4c", "5")


#: The parts of a view that are routes' parts (``bench/routes.py``), timed once there.
OWNED_HANDLE, BORROW_HANDLE, FALLBACK_HANDLE, GETTERS7 = (
    (ROUTES, "route_" + n) for n in ("owned_handle", "borrow_handle", "fallback_handle", "getters7"))


CONSUMER = "6"  # the seed's consumer: cuda.core StridedMemoryView via each route (bench_consumer.py)


LAUNCH = "7"  # the launch-bound GPU step: N bridged tensors per kernel launch (bench_launch.py)


# --- reading -----------------------------------------------------------------------------
#: Rows of runs made before each native loop was timed once: a route's loop was also
#: timed under another name in groups 2 / 2b. Read under the route's name, found under
#: the old one in such a run.
RECORDED_BEFORE = {
    (ROUTES, "route_dlpack_no_sync"): (NATIVE, "dlpack_dltensor"),
    (ROUTES, "route_dlpack_managed"): (NATIVE, "dlpack_managed"),
    (ROUTES, "route_owned_handle"): (PARTS, "handle_owned"),
    (ROUTES, "route_borrow_handle"): (PARTS, "handle_borrow"),
    (ROUTES, "route_fallback_handle"): (PARTS, "handle_fallback"),
    (ROUTES, "route_getters7"): (PARTS, "getters7"),
    (ROUTES, "route_borrow_batched"): (PARTS, "meta_borrow"),
    (ROUTES, "route_borrow_one_call"): (PARTS, "meta_from_pyobject"),
}


class Results:
    """The JSON, indexed: ``get(group_prefix, name)`` -> the benchmark dict or None."""

    def __init__(self, data: dict):
        self.data = data
        self.by = {}
        for b in data["benchmarks"]:
            key = (b["group"].split(" ")[0], b["extra_info"].get("path"))
            self.by.setdefault(key, []).append(b)
        self.machine = data["machine_info"].get("bench", {})
        self.evidence = data.get("evidence", {})
        self.device = self.evidence.get("device", {"type": "cpu"})
        self.cuda = self.device.get("type") == "cuda"
        self.quick = bool((self.evidence.get("protocol") or {}).get("quick"))
        #: callgrind's JSON for the same torch and interpreter, when the caller found one
        self.instructions: dict = {}

    def device_label(self) -> str:
        """``"CPU"``, or ``"CUDA (NVIDIA H200)"``: where the timed tensors lived."""
        return f"CUDA ({self.device.get('name')})" if self.cuda else "CPU"

    def peer_names(self, names: tuple) -> tuple:
        """``names``, plus the CUDA-only peer on a CUDA run."""
        return names + ("cuda_array_interface",) if self.cuda else names

    def get(self, group: str, name: str, **params):
        for key in ((group, name), RECORDED_BEFORE.get((group, name))):
            for b in self.by.get(key, []):
                if all(b["extra_info"].get(k) == v for k, v in params.items()):
                    return b
        return None

    def samples(self, group, name, **params):
        b = self.get(group, name, **params)
        return None if b is None else np.asarray(b["extra_info"]["samples_ns"], dtype=float)


# --- tables ------------------------------------------------------------------------------------
LABELS = {
    "owned": "view_owned(t): torch_tensor_from_pyobject + delete",
    "borrow": "view_borrow(t): torch_tensor_borrow_from_pyobject",
    "fallback": "view_fallback(t): THPVariable offset",
    "empty": "empty METH_O C call (floor)",
    "data_ptr": "t.data_ptr()",
    "python_attrs": "t.data_ptr(), t.shape, t.stride(), t.dtype, t.device",
    "view_read": "v = bridge.view(t); v.ptr, v.shape, v.strides, v.dtype, v.device_type/index",
    # bench/consumer_header.py: shim_ext/examples/consumer.c on torch_borrow/consumer.h
    "header_c": "consumer.h: torch_borrow_read(t, &m), every check, metadata kept in C",
    "header_tuples": "consumer.h: the same read, returned as Python tuples",
    "to_dlpack": "torch.utils.dlpack.to_dlpack(t)",
    "dunder_dlpack": "t.__dlpack__()",
    "cuda_core": "cuda.core StridedMemoryView",
    "cuda_array_interface": "t.__cuda_array_interface__",
    "dlpack_dltensor": "DLPack dltensor_from_py_object_no_sync",
    "dlpack_managed": "DLPack managed_tensor_from_py_object_no_sync + deleter",
    "handle_owned": "handle alone: torch_tensor_from_pyobject + delete",
    "handle_borrow": "handle alone: torch_tensor_borrow_from_pyobject",
    "handle_fallback": "handle alone: (char*)obj + sizeof(PyObject)",
    "getters7": "seven aoti_torch_get_* alone",
    "meta_borrow": "batched: torch_tensor_borrow_from_pyobject + torch_tensor_get_metadata",
    "meta_from_pyobject": "batched: torch_tensor_borrow_metadata_from_pyobject (one call)",
    "nanobind_empty": "nanobind: empty() (no argument)",
    "nanobind_ndarray": "nanobind: f(t), one nb::ndarray<>",
    "tvm_ffi_empty": "tvm-ffi: empty() (no argument)",
    "tvm_ffi_tensor": "tvm-ffi: f(t), one TensorView",
}


def label(r: "Results", group: str, name: str) -> str:
    """The human label of contender ``name`` of ``group``: the tables' and the chart's.
    The label recorded with the result (``extra_info["label"]``) where the run has one."""
    b = r.get(group, name)
    if b is not None and b["extra_info"].get("label"):
        return b["extra_info"]["label"]
    from bench import routes

    if group in (NATIVE, ROUTES) and routes.label(name) is not None:
        return routes.label(name)  # the native rows' own (bench/routes.py)
    return LABELS.get(name) or routes.label(name) or name


def entry(group: str, item) -> tuple[str, str]:
    """``(group, name)`` of a table entry: a name of ``group``, or a ``(group, name)``
    pair from another group of the same interleaved run."""
    return item if isinstance(item, tuple) else (group, item)
