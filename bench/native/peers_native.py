"""Native (C) timing loops for the peers, and for the parts of a handle.

``load()`` builds ``peers_native.c`` (``peers_native_build.py``) into
``build_dir()`` (one folder per torch and interpreter) when the module is missing or older than its sources,
then imports it. Each ``*_loop`` method runs ``n`` calls in C between two
``clock_gettime(CLOCK_MONOTONIC)`` reads, the first call untimed, and returns ns per
call; it raises ``RuntimeError`` with the C side's message when a call fails.

Symbols come from ``bridge._resolve`` (the same addresses the bridge installs) and from
the PyCapsule ``torch.Tensor.__dlpack_c_exchange_api__`` (name ``"dlpack_exchange_api"``,
a ``DLPackExchangeAPI*``, header ``ATen/dlpack.h``, DLPack 1.3).
"""

from __future__ import annotations

import ctypes

from bench.native import build_dir, built_module
from bench.native import torch_version

_PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
_PyCapsule_GetPointer.restype = ctypes.c_void_p
_PyCapsule_GetPointer.argtypes = (ctypes.py_object, ctypes.c_char_p)


def _module(torch_version: str):
    from bench.native import peers_native_build

    return built_module(peers_native_build, build_dir(torch_version))


def _batched_read(torch, res):
    """``(why not, [get_metadata, borrow, borrow_metadata])``: the batched read's
    addresses (``batched_read.cpp``, built for this torch, reading through the borrow
    the bridge resolved), or the reason it cannot run and zeros."""
    import ctypes
    import os

    from bridge import _resolve

    borrow = res.symbols.get(_resolve.BORROW)
    if borrow is None:
        return f"no {_resolve.BORROW}: {res.paths['borrow'].reason}", [0, 0, 0]
    from bench.native import batched_read_build

    mod = built_module(batched_read_build, build_dir(torch_version(torch)))
    mod.lib.batched_read_init(borrow.address)
    lib = ctypes.CDLL(mod.__file__, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    addr = [ctypes.cast(getattr(lib, name), ctypes.c_void_p).value for name in (
        "torch_tensor_get_metadata", "torch_tensor_borrow_metadata_from_pyobject")]
    return None, [addr[0], borrow.address, addr[1]]


class NativePeers:
    """The compiled loops, bound to one torch's symbols.

    Attributes
    ----------
    compiler : str
        The C compiler that built the loops (``gcc <version>``).
    dlpack_version : tuple of int or None
        ``(major, minor)`` of torch's ``DLPackExchangeAPI``; None when torch has none.
    dlpack_reason : str or None
        Why there is no exchange API (None when there is).
    """

    def __init__(self, torch, bridge_module):
        from bridge import _resolve
        from bridge import _bridge as core

        mod = _module(torch_version(torch))
        self._ffi, self._lib = mod.ffi, mod.lib
        self._tensor_type = torch.Tensor
        self._type_addr = id(torch.Tensor)
        self.compiler = self._ffi.string(self._lib.peers_compiler()).decode()
        self._offset = core.PYOBJECT_SIZE
        res = _resolve.resolve(core.PYOBJECT_SIZE)
        self._sym = {name: s.address for name, s in res.symbols.items()}
        self.paths = {p: i.available for p, i in res.paths.items()}
        conj = [_resolve.find_prototyped(torch, _resolve.IS_CONJ)[0],
                _resolve.find_symbol(torch, "aoti_torch_new_tensor_handle"),
                _resolve.find_symbol(torch, "torch_call_dispatcher")]
        #: why each conj route is missing (None when it can run)
        self.conj_reason = {
            "getter": None if conj[0] else "no torch_is_conj (libtorch or shim_ext)",
            "dispatcher": None if conj[1] and conj[2] else
            f"torch {torch.__version__} exports no torch_call_dispatcher"}
        self._conj = [s.address if s else 0 for s in conj]
        direct, why = _resolve.find_prototyped(torch, "torch_borrow_direct_from_pyobject")
        #: why the direct-call row cannot run (None when it can)
        self.direct_reason = None if direct else why
        self._direct = direct.address if direct else 0
        self.metadata_reason, self._meta = _batched_read(torch, res)
        # The extension build version torch_call_dispatcher expects: this torch's ABI.
        major, minor = (int(x) for x in torch.__version__.split(".")[:2])
        self._abi_version = (major << 56) | (minor << 48)
        self._api = 0
        self.dlpack_version = None
        self.dlpack_reason = None
        capsule = getattr(torch.Tensor, "__dlpack_c_exchange_api__", None)
        if capsule is None:
            self.dlpack_reason = f"torch {torch.__version__} has no __dlpack_c_exchange_api__"
        else:
            self._api = _PyCapsule_GetPointer(capsule, b"dlpack_exchange_api") or 0
            major, minor = self._ffi.new("int*"), self._ffi.new("int*")
            rc = self._lib.peers_dlpack_version(self._api, major, minor)
            self.dlpack_version = (major[0], minor[0])
            if rc != 0 or major[0] != 1:
                self.dlpack_reason = (f"DLPackExchangeAPI {major[0]}.{minor[0]} "
                                      f"{'has no dltensor_from_py_object_no_sync' if rc else ''}")
                self._api = 0 if major[0] != 1 else self._api

    def _check(self, ns: float) -> float:
        if ns < 0:
            raise RuntimeError(self._ffi.string(self._lib.peers_last_error()).decode())
        return ns

    def dltensor_loop(self, t, n: int, api: int | None = None) -> float:
        """ns per ``dltensor_from_py_object_no_sync(t, &dltensor)`` (+ type check, + reading
        the DLTensor's fields); fills a caller-owned DLTensor, nothing to free. ``api``:
        another ``DLPackExchangeAPI*`` to call through (``internal_fixes``' prototype);
        default torch's own."""
        return self._check(self._lib.peers_dltensor_loop(
            self._api if api is None else api, id(t), self._type_addr, n))

    def managed_loop(self, t, n: int) -> float:
        """ns per ``managed_tensor_from_py_object_no_sync(t, &m)`` + reading + ``m->deleter(m)``
        (a heap-allocated ``DLManagedTensorVersioned``, new reference)."""
        return self._check(self._lib.peers_managed_loop(self._api, id(t), self._type_addr, n))

    def typecheck_loop(self, t, n: int) -> float:
        """ns per real-type check (``Py_TYPE(t) == torch.Tensor`` or subtype): the floor."""
        return self._check(self._lib.peers_typecheck_loop(id(t), self._type_addr, n))

    def handle_loop(self, path: str, t, n: int) -> float:
        """ns per handle alone, no metadata read: ``owned`` = ``torch_tensor_from_pyobject`` +
        ``aoti_torch_delete_tensor_object``; ``borrow`` = ``torch_tensor_borrow_from_pyobject``;
        ``fallback`` = ``(char*)t + sizeof(PyObject)``; ``borrow_direct`` = shim_ext's
        ``torch_borrow_direct_from_pyobject``, the same function calling its implementation
        directly instead of through the registered interface (the vtable's price)."""
        fn, dl = self._handle_functions(path)
        return self._check(self._lib.peers_handle_loop(fn, dl, id(t), self._offset, n))

    GETTERS = ("data_ptr", "dim", "sizes", "strides", "dtype", "device_type", "device_index")

    def _getters(self):
        return self._ffi.new("uintptr_t[7]",
                             [self._sym[f"aoti_torch_get_{x}"] for x in self.GETTERS])

    def getters_loop(self, t, n: int) -> float:
        """ns per seven ``aoti_torch_get_*`` reads (data_ptr, dim, sizes, strides, dtype,
        device_type, device_index) through the proven borrowed handle ``id(t) + offset``."""
        return self._check(self._lib.peers_getters_loop(self._getters(), id(t) + self._offset, n))

    def _handle_functions(self, path: str) -> tuple[int, int]:
        """``(handle function, delete function)`` addresses of ``path`` (0: none)."""
        if path == "borrow_direct":
            return self._direct, 0
        if path == "owned":
            return (self._sym["torch_tensor_from_pyobject"],
                    self._sym["aoti_torch_delete_tensor_object"])
        if path == "borrow":
            return self._sym["torch_tensor_borrow_from_pyobject"], 0
        return 0, 0

    def route_loop(self, path: str, t, n: int) -> float:
        """ns per consumer route: the handle of ``path`` (as ``handle_loop``), the seven
        getters of ``getters_loop`` through it, and for ``owned`` the delete."""
        fn, dl = self._handle_functions(path)
        return self._check(self._lib.peers_route_loop(fn, dl, id(t), self._offset,
                                                      self._getters(), n))

    def conj_loop(self, route: str, t, n: int) -> float:
        """ns per read of the conjugate bit through the borrowed handle ``id(t) + offset``:
        ``getter`` = ``torch_is_conj`` (the prototype's, patch 0002); ``dispatcher`` =
        ``aoti_torch_new_tensor_handle`` (the stack must own its tensor) +
        ``torch_call_dispatcher("aten::is_conj", "")``, the route that exists today.

        Raises KeyError naming the symbol this torch lacks."""
        handle = id(t) + self._offset
        if route == "getter":
            return self._check(self._lib.peers_conj_getter_loop(self._conj[0], handle, n))
        new_handle, dispatch = self._conj[1], self._conj[2]
        return self._check(self._lib.peers_conj_dispatcher_loop(
            new_handle, dispatch, handle, self._abi_version, n))

    def gil_check_loop(self, n: int) -> float:
        """ns per ``PyGILState_Check()`` with the GIL held: the shims' thread-state check."""
        return self._check(self._lib.peers_gil_check_loop(n))

    METADATA_MODES = {"offset": 0, "borrow": 1, "from_pyobject": 2}

    def metadata_loop(self, mode: str, t, n: int) -> float:
        """ns per batched metadata read (``batched_read.h``, not proposed), ``mode``: ``offset`` =
        ``(char*)t + sizeof(PyObject)`` + ``torch_tensor_get_metadata``; ``borrow`` =
        ``torch_tensor_borrow_from_pyobject`` + ``torch_tensor_get_metadata``;
        ``from_pyobject`` = ``torch_tensor_borrow_metadata_from_pyobject``, one call."""
        get, borrow, from_obj = self._meta
        return self._check(self._lib.peers_metadata_loop(
            self.METADATA_MODES[mode], get, borrow, from_obj, id(t), self._offset, n))

    def callgrind(self, op: str, label: str = "") -> int:
        """A valgrind client request (``bench/callgrind.py``): ``op`` is ``"start"``
        (instrumentation), ``"dump"`` (the counts since the last dump, into a file
        described by ``label``), ``"zero"`` or ``"toggle"`` (collection on / off, around
        a Python-level statement). Returns 1 when done, 0 outside valgrind, -1 when built
        without ``<valgrind/callgrind.h>``."""
        code = {"start": 0, "dump": 1, "zero": 2, "toggle": 3}[op]
        return self._lib.peers_callgrind(code, label.encode())

    def empty_function(self):
        """An empty METH_O C function, ``empty(obj) -> None``: the Python-level call floor."""
        addr = self._lib.peers_empty_function()
        return ctypes.cast(ctypes.c_void_p(addr), ctypes.py_object).value
