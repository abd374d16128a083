"""Minimal repro: torch's own DLPack C exchange functions on objects that claim torch.Tensor.

Run as ``python -P tests/hostile/dlpack_exchange_repro.py FUNCTION INPUT`` with a torch
environment's interpreter; it needs only torch. FUNCTION is ``dltensor`` or ``managed``:

- ``dltensor``: ``dltensor_from_py_object_no_sync(id(obj), &dltensor)``, a ctypes DLTensor
  the caller owns;
- ``managed``: ``managed_tensor_from_py_object_no_sync(id(obj), &managed)``, then the
  returned ``DLManagedTensorVersioned``'s own deleter.

INPUT is one of ``INPUTS`` (``tensor`` is the control). Both functions are read from the
PyCapsule ``torch.Tensor.__dlpack_c_exchange_api__`` (name ``"dlpack_exchange_api"``, a
``DLPackExchangeAPI*``); the ctypes structures mirror the installed ``ATen/dlpack.h``,
whose member lists are read and compared with the mirror before any call (a mismatch
exits with status 2, before anything is called). The call goes through ``ctypes.PYFUNCTYPE``,
so the GIL stays held, as both functions require.

Prints ``{"event": "start", ...}`` (flushed) just before the call and ``{"event":
"result", ...}`` after it, one JSON object a line; a child that dies in between died in
the call. ``tests/findings/torch_shim_survey.py`` runs every FUNCTION x INPUT in a child
of its own (``make survey``).
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import re
import sys


# --- the objects --------------------------------------------------------------------------
def tensor(torch):
    """A 3x4 float32 tensor (the control)."""
    return torch.arange(12, dtype=torch.float32).reshape(3, 4)


def lying_class(torch):
    """An object whose ``__class__`` property returns ``torch.Tensor``."""
    class Liar:
        __class__ = property(lambda self: torch.Tensor)
    return Liar()


def mock_spec_tensor(torch):
    """``unittest.mock.Mock(spec=torch.Tensor)``."""
    from unittest import mock
    return mock.Mock(spec=torch.Tensor)


def plain_object(torch):
    """A plain ``object()``."""
    return object()


INPUTS = {f.__name__: f for f in (tensor, lying_class, mock_spec_tensor, plain_object)}
FUNCTIONS = {"dltensor": "dltensor_from_py_object_no_sync",
             "managed": "managed_tensor_from_py_object_no_sync"}


# --- DLPack's structures, as ATen/dlpack.h declares them ------------------------------------
class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64),
                ("dl_tensor", DLTensor)]


#: The DLPackExchangeAPI members after its header, in the header's order; every one is a
#: function pointer.
API_FUNCTIONS = ("managed_tensor_allocator", "managed_tensor_from_py_object_no_sync",
                 "managed_tensor_to_py_object_no_sync", "dltensor_from_py_object_no_sync",
                 "current_work_stream")


class DLPackExchangeAPIHeader(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("prev_api", ctypes.c_void_p)]


class DLPackExchangeAPI(ctypes.Structure):
    _fields_ = [("header", DLPackExchangeAPIHeader)] + [(n, ctypes.c_void_p)
                                                        for n in API_FUNCTIONS]


def header_members(text, name):
    """The member names of ``typedef struct [name] { ... } name;`` in a C header."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)
    body = re.search(r"typedef\s+struct\s*(?:" + name + r")?\s*\{([^{}]*)\}\s*" + name + r"\s*;",
                     text)
    if body is None:
        raise LookupError(f"no struct {name}")
    # "type name" or "ret (*name)(args)": the name is the last word, or the one after "(*"
    return [(re.search(r"\(\s*\*\s*(\w+)\s*\)", m) or re.search(r"(\w+)\s*$", m)).group(1)
            for m in body.group(1).split(";") if m.strip()]


def check_mirror(torch):
    """Compare the mirrored structures with the installed ``ATen/dlpack.h``; returns the
    header's path and its ``DLPACK_MAJOR_VERSION.MINOR``. Exits 2 on any mismatch."""
    path = os.path.join(os.path.dirname(torch.__file__), "include", "ATen", "dlpack.h")
    with open(path) as f:
        text = f.read()
    mirrors = {"DLPackVersion": DLPackVersion, "DLDevice": DLDevice, "DLDataType": DLDataType,
               "DLTensor": DLTensor, "DLManagedTensorVersioned": DLManagedTensorVersioned,
               "DLPackExchangeAPIHeader": DLPackExchangeAPIHeader,
               "DLPackExchangeAPI": DLPackExchangeAPI}
    for name, mirror in mirrors.items():
        found = header_members(text, name)
        if found != [f[0] for f in mirror._fields_]:
            print(f"{path}: struct {name} has members {found}, the mirror "
                  f"{[f[0] for f in mirror._fields_]}", file=sys.stderr)
            sys.exit(2)
    version = ".".join(re.search(rf"#define\s+DLPACK_{part}_VERSION\s+(\d+)", text).group(1)
                       for part in ("MAJOR", "MINOR"))
    return path, version


def emit(**fields):
    """Print one JSON event and flush, so it survives a crash right after."""
    print(json.dumps(fields, default=repr), flush=True)


def dltensor_fields(dl):
    """What a filled DLTensor says (shape and strides read only for ndim 0..64)."""
    ndim = dl.ndim
    ok = 0 <= ndim <= 64
    return {"data": dl.data or 0, "byte_offset": dl.byte_offset, "ndim": ndim,
            "shape": [dl.shape[i] for i in range(ndim)] if ok and dl.shape else None,
            "strides": [dl.strides[i] for i in range(ndim)] if ok and dl.strides else None,
            "dtype": [dl.dtype.code, dl.dtype.bits, dl.dtype.lanes],
            "device": [dl.device.device_type, dl.device.device_id]}


def main(argv):
    function, name = argv
    import torch

    header, header_version = check_mirror(torch)
    capsule = torch.Tensor.__dlpack_c_exchange_api__
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object,
                                                                  ctypes.c_char_p]
    api = DLPackExchangeAPI.from_address(get_pointer(capsule, b"dlpack_exchange_api"))
    version = f"{api.header.version.major}.{api.header.version.minor}"
    emit(event="hello", torch=torch.__version__, git=torch.version.git_version,
         python=platform.python_version(), implementation=platform.python_implementation(),
         api_version=version, header=header, header_version=header_version)
    if api.header.version.major != int(header_version.split(".")[0]):
        sys.exit(f"capsule DLPack {version}, header {header_version}: another major version")
    pointer = getattr(api, FUNCTIONS[function])
    if not pointer:
        emit(event="result", outcome="absent")  # dltensor_from_py_object_no_sync may be NULL
        return

    obj = INPUTS[name](torch)
    truth = ({"data": obj.data_ptr(), "ndim": obj.dim(), "shape": list(obj.shape),
              "strides": list(obj.stride())} if name == "tensor" else None)
    result = {"event": "result", "truth": truth}
    emit(event="start", function=FUNCTIONS[function], input=name)
    try:
        if function == "dltensor":
            call = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p,
                                     ctypes.POINTER(DLTensor))(pointer)
            out = DLTensor()
            rc = call(id(obj), ctypes.byref(out))  # the GIL is held (PYFUNCTYPE)
            result.update(outcome="returned", rc=rc, fields=dltensor_fields(out))
        else:
            call = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p,
                                     ctypes.POINTER(ctypes.POINTER(DLManagedTensorVersioned)))(
                pointer)
            out = ctypes.POINTER(DLManagedTensorVersioned)()
            rc = call(id(obj), ctypes.byref(out))
            result.update(outcome="returned", rc=rc)
            if out:
                managed = out.contents
                result.update(fields=dltensor_fields(managed.dl_tensor),
                              version=[managed.version.major, managed.version.minor])
                if managed.deleter:
                    emit(event="start", function="DLManagedTensorVersioned.deleter", input=name)
                    ctypes.PYFUNCTYPE(None, ctypes.c_void_p)(managed.deleter)(
                        ctypes.addressof(managed))
                    result["deleted"] = True
    except BaseException as exc:  # PYFUNCTYPE raises the Python error the call set
        result.update(outcome="raised", type=type(exc).__name__, message=str(exc))
    emit(**result)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in FUNCTIONS or sys.argv[2] not in INPUTS:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(FUNCTIONS)}}} {{{','.join(INPUTS)}}}")
    main(sys.argv[1:])
