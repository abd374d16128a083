"""Child-process script: feed hostile inputs to a consumer, one JSON line per event.

Run as ``python -P tests/hostile/runner.py --target bridge|torch-shim --cases a,b,...``
with ``tests/`` on ``PYTHONPATH`` (``hostile.subproc.run_python`` puts it there).
Before each call it prints ``{"event": "start", ...}`` (flushed), after it
``{"event": "result", ...}``; a child that dies in between shows the parent which call
killed it. Targets:

- ``bridge``: each case through each path (``--paths``) and three entry points:
  ``view_<path>``, ``view`` after ``set_path(path)``, and ``_native_loop(obj, path, 1)``.
- ``torch-shim``: torch's own ``torch_tensor_from_pyobject`` called directly through
  ``ctypes.PyDLL`` (the GIL held), then the stable ABI's getters on the handle it
  returns (``torch_has_storage`` too, where exported), then
  ``aoti_torch_delete_tensor_object``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import warnings



def emit(**fields):
    """Print one JSON event and flush, so it survives a crash right after."""
    print(json.dumps(fields, default=repr), flush=True)


def real_type(obj):
    """obj's real type as a TypeError must name it: the type's C-level name (``tp_name``,
    which the bridge reads so that no attribute of the class runs): ``module.Name`` for a
    C type (``numpy.ndarray``), the bare name for a builtin (``int``) and for most classes
    defined in Python (``MagicMock``); ``None`` for None. Read from the PyTypeObject, the
    field after the PyVarObject header."""
    import ctypes

    from bridge import _bridge

    if obj is None:
        return "None"
    name = ctypes.c_char_p.from_address(id(type(obj)) + _bridge.PYOBJECT_SIZE + 8).value
    return name.decode("utf-8", "replace")


# --- target: the bridge ---------------------------------------------------------------------
def bridge_consumer(case_name, paths):
    """A consume(obj, truth) that tries every path and entry point and emits results."""
    import bridge
    from bridge import _bridge
    from helpers.expect import torch_answer, view_fields

    entries = {
        "view_path": lambda obj, p: getattr(bridge, f"view_{p}")(obj),
        "set_path+view": lambda obj, p: (bridge.set_path(p), bridge.view(obj))[1],
        "native_loop": lambda obj, p: _bridge._native_loop(obj, p, 1),
    }

    def consume(obj, truth):
        for path in paths:
            for entry, call in entries.items():
                emit(event="start", case=case_name, path=path, entry=entry)
                result = dict(event="result", case=case_name, path=path, entry=entry,
                              real_type=real_type(obj))
                try:
                    out = call(obj, path)
                except BaseException as exc:  # every outcome is data for the parent
                    result.update(outcome="raised", type=type(exc).__name__, message=str(exc))
                else:
                    result.update(outcome="returned", type=type(out).__name__)
                    if isinstance(out, bridge.TensorView):
                        want = torch_answer(truth) if truth is not None else None
                        result.update(fields=view_fields(out), expected=want,
                                      match=(want is not None and view_fields(out) == want
                                             and out.obj is obj and out.path == path))
                finally:
                    bridge.set_path("auto")
                emit(**result)
    return consume


# --- target: torch's own torch_tensor_from_pyobject ------------------------------------------
def torch_shim_consumer(case_name, torch):
    """A consume(obj, truth) that calls torch's owned shim directly and reads the handle."""
    lib = ctypes.PyDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"),
                       mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    from_py = lib.torch_tensor_from_pyobject
    from_py.argtypes = [ctypes.py_object, ctypes.POINTER(ctypes.c_void_p)]
    from_py.restype = ctypes.c_int32
    what = lib.torch_exception_get_what_without_backtrace
    what.restype = ctypes.c_char_p
    delete = lib.aoti_torch_delete_tensor_object
    delete.argtypes = [ctypes.c_void_p]
    getters = [("layout", ctypes.c_int32), ("data_ptr", ctypes.c_void_p),
               ("dim", ctypes.c_int64), ("sizes", ctypes.POINTER(ctypes.c_int64)),
               ("strides", ctypes.POINTER(ctypes.c_int64)), ("dtype", ctypes.c_int32),
               ("device_type", ctypes.c_int32), ("device_index", ctypes.c_int32),
               ("storage_offset", ctypes.c_int64), ("storage_size", ctypes.c_int64)]
    # Whether the base the data pointer is computed from exists: no getter says it
    # directly; torch_has_storage (2.14+) says whether a storage object is attached.
    flags = [("torch_has_storage", ctypes.c_bool)]
    codes = {}
    for name in ("aoti_torch_layout_strided", "aoti_torch_device_type_cpu"):
        fn = getattr(lib, name)
        fn.restype = ctypes.c_int32
        codes[name] = fn()
    # dtype code -> itemsize in bytes, from the aoti_torch_dtype_<name>() code functions.
    codes["itemsize"] = {}
    for dtype in {v for v in vars(torch).values() if isinstance(v, torch.dtype)}:
        fn = getattr(lib, f"aoti_torch_dtype_{str(dtype).removeprefix('torch.')}", None)
        if fn is not None:
            fn.restype = ctypes.c_int32
            codes["itemsize"][fn()] = dtype.itemsize

    def step(name):
        emit(event="start", case=case_name, entry=name)

    def message():
        raw = what()
        return raw.decode("utf-8", "replace") if raw else None

    def consume(obj, truth):
        result = dict(event="result", case=case_name, entry="torch_tensor_from_pyobject",
                      real_type=real_type(obj), codes=codes)
        if truth is not None:
            result["truth"] = {"ptr": truth.data_ptr(), "shape": list(truth.shape),
                               "strides": list(truth.stride()),
                               "impl": truth._cdata, "is_conj": truth.is_conj(),
                               "is_neg": truth.is_neg()}
        handle = ctypes.c_void_p()
        step("torch_tensor_from_pyobject")
        rc = from_py(obj, ctypes.byref(handle))
        if rc:
            result.update(outcome="error", rc=rc, message=message())
            emit(**result)
            return result
        # The handle is an at::Tensor*: its first word is the TensorImpl it holds.
        meta = {"impl": ctypes.c_uint64.from_address(handle.value).value}
        step("read *handle (the TensorImpl*)")
        for name, ctype in getters + flags:
            symbol = name if name.startswith("torch_") else f"aoti_torch_get_{name}"
            if not hasattr(lib, symbol):
                meta[name] = f"absent: torch {torch.__version__} exports no {symbol}"
                continue
            step(symbol)
            fn = getattr(lib, symbol)
            fn.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctype)]
            fn.restype = ctypes.c_int32
            out = ctype()
            try:
                rc = fn(handle, ctypes.byref(out))
            except Exception as exc:  # ctypes.PyDLL: the getter left a Python error set
                meta[name] = (f"error: returned with a Python exception set: "
                              f"{type(exc).__name__}: {exc}")
                continue
            if rc:
                meta[name] = f"error: {message()}"
            elif name in ("sizes", "strides"):
                ndim = meta.get("dim")
                meta[name] = ([out[i] for i in range(ndim)] if isinstance(ndim, int)
                              and 0 <= ndim <= 64 else "unread: no valid dim")
            elif ctype is ctypes.c_bool:
                meta[name] = bool(out.value)
            else:
                meta[name] = out.value or 0  # ctypes gives None for a null pointer
        step("aoti_torch_delete_tensor_object")
        rc_delete = delete(handle)
        result.update(outcome="handle", meta=meta, delete_rc=rc_delete)
        emit(**result)
        return result
    return consume


def main(argv=None):
    """Run the named cases against one target; exit 0 unless the script itself broke."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=("bridge", "torch-shim"), required=True)
    parser.add_argument("--cases", required=True, help="comma-separated case names")
    parser.add_argument("--paths", default="owned,borrow,fallback",
                        help="bridge paths to try (bridge target only)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # prototype-feature notices are not findings

    import torch

    from hostile import cases
    catalogue = cases.by_name()
    emit(event="hello", torch=torch.__version__, python=sys.version.split()[0],
         pid=os.getpid())
    for name in args.cases.split(","):
        case = catalogue[name]
        consume = (bridge_consumer(name, args.paths.split(",")) if args.target == "bridge"
                   else torch_shim_consumer(name, torch))
        emit(event="case", case=name)
        try:
            case.run(torch, consume)
        except cases.CaseUnavailable as exc:
            emit(event="unavailable", case=name, message=str(exc))
        except BaseException as exc:  # the builder itself failed: report, go on
            emit(event="build-error", case=name, type=type(exc).__name__, message=str(exc))
        emit(event="done", case=name)
    emit(event="bye")


if __name__ == "__main__":
    main()
