"""The seed's consumer on every path: cuda.core's ``StridedMemoryView`` filled through
each of our routes (``cuda_core_consumer.pyx``, built by ``cuda_core_consumer_build.py``
at first use), beside the view cuda.core itself makes (``cuda_core_peer``).

``Consumer(torch)`` builds what is missing into ``bench.native.build_dir(...)/cuda_core-<v>/``
(one folder per cuda-core version: the module writes into its struct layout), resolves
every address with ``bridge._resolve`` and installs them. Its routes (``ROUTES``) are
functions ``view(t) -> StridedMemoryView``; ``available[route]``, ``reasons[route]`` and
``labels[route]`` say which run here and what each is; ``viewer(route)`` is right on its
own, ``timed(route)`` is the bare function and the context a timing loop holds (the fix
installed once per round, not per call).
"""

from __future__ import annotations

import contextlib
import pathlib
import warnings

from bench import native
from bench.native import torch_version

#: The routes: ``owned`` (torch's ``torch_tensor_from_pyobject``, 2.14+, + getters +
#: delete); ``owned_prototype`` (2.14's implementation built for the running torch,
#: ``owned_prototype.cpp``: on 2.14+ both run side by side); ``owned_fixed`` (the owned
#: route, torch's own where it exists, else the prototype, with the interpreter fix
#: installed: the patch's own ``incref`` / ``decref``); ``borrow``
#: (``torch_tensor_borrow_from_pyobject``, libtorch's, else shim_ext's); ``pointer``
#: (``(char*)obj + sizeof(PyObject)``, the offset the bridge proved); ``dlpack`` (torch's
#: ``DLPackExchangeAPI.dltensor_from_py_object_no_sync``, 2.10+, the view filled from the
#: ``DLTensor``); ``dlpack_fixed`` (the same slot with the DLPack patches' own function,
#: ``internal_fixes.dlpack_api_patched``: real-type check, ``THPVariable_Unpack``, the
#: conj/neg refusal, a copy only for a Python-dispatch tensor);
#: ``cuda_core`` (cuda.core's own ``StridedMemoryView.from_dlpack(t, -1)``; the path it
#: takes, AOTI bridge or DLPack, observed by ``cuda_core_peer``).
ROUTES = ("owned", "owned_prototype", "owned_fixed", "borrow", "pointer", "dlpack",
          "dlpack_fixed", "cuda_core")
#: The routes with an internal fix of torch's (``proposal/fixes/internal_fixes.cpp``).
FIXED = ("owned_fixed", "dlpack_fixed")
#: The dtypes cuda.core 1.2's tensor bridge maps (``_tensor_bridge.pyx``'s
#: ``_build_itemsize_map``: AOTI dtype code -> itemsize; its binary names these
#: ``aoti_torch_dtype_*`` functions), where this torch exports the code.
AOTI_DTYPES = ("bool", "uint8", "int8", "float16", "bfloat16", "int16", "complex32",
               "float32", "int32", "complex64", "float64", "int64", "complex128",
               "uint16", "uint32", "uint64")


class Unavailable(RuntimeError):
    """The consumer cannot run here at all; the message says why."""


def _built_module(builder, out: pathlib.Path):
    return native.built_module(builder, out)


def _load_fixes(torch):
    """``(InternalFixes or None, why not)``: ``routes.load_fixes``."""
    from bench import routes

    return routes.load_fixes(torch)


def cuda_core_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("cuda-core")
    except metadata.PackageNotFoundError:
        return None


def build_folder(torch, version: str) -> pathlib.Path:
    """Where the consumer for cuda-core ``version`` is built: ``cuda_core-<version>/`` in
    ``bench.native.build_dir`` (one build per cuda-core release, whose ``.pxd`` it reads)."""
    return native.build_dir(torch_version(torch)) / f"cuda_core-{version}"


class Consumer:
    """The consumer module with every address installed (``ROUTES``)."""

    def __init__(self, torch, device="cpu"):
        import ctypes

        from bench.native import cuda_core_peer

        self.torch_version = torch.__version__
        version = cuda_core_version()
        if version is None:
            raise Unavailable("cuda-core is not installed")
        self.cuda_core_version = version
        from bench.native import cuda_core_consumer_build as cb

        out = native.build_dir(torch_version(torch))
        try:
            self.module = mod = _built_module(cb, build_folder(torch, version))
        except cb.BuildUnavailable as exc:
            raise Unavailable(f"cuda-core {version}: {exc}") from exc
        except Exception as exc:  # Cython or the compiler refused this cuda-core's .pxd
            raise Unavailable(f"cuda-core {version}: building the consumer against its .pxd "
                              f"failed: {type(exc).__name__}: {exc}") from exc

        from bridge import _bridge as core
        from bridge import _resolve

        res = _resolve.resolve(core.PYOBJECT_SIZE)
        self.resolution = res
        missing = [g for g in _resolve.GETTERS if g not in res.symbols]
        if missing:
            raise Unavailable(f"torch {torch.__version__} exports no {', '.join(missing)}")
        addresses = {name: s.address for name, s in res.symbols.items()}
        self.available, self.reasons, self.labels = {}, {}, {}
        mark = self.mark

        owned = res.paths["owned"]
        mark("owned", owned.reason,
             f"owned (torch_tensor_from_pyobject, torch {torch.__version__})")

        # The prototype of 2.14's owned shim, built for this torch.
        proto_reason, built_for = None, torch.__version__
        try:
            from bench.native import owned_prototype_build as pb

            proto = _built_module(pb, out)
            built_for = proto.ffi.string(proto.lib.owned_prototype_built_for()).decode()
            if built_for != torch_version(torch):
                proto_reason = (f"owned_prototype was built for torch {built_for}, "
                                f"{torch.__version__} is running")
            else:
                addr = int(proto.ffi.cast("uintptr_t", proto.ffi.addressof(proto.lib,
                                                                         pb.FUNCTION)))
                sym = _resolve.Symbol(pb.FUNCTION, addr, f"bench/{pb.MODULE}")
                proto_reason = _resolve.prove_handle(torch, sym, res.symbols.get(_resolve.DELETE))
                if proto_reason is None:
                    addresses[pb.FUNCTION] = addr
                self.prototype_error = lambda: proto.ffi.string(
                    proto.lib.owned_prototype_last_error()).decode()
        except Exception as exc:  # a compiler or cffi failure: say which
            proto_reason = f"owned_prototype does not build or load: {type(exc).__name__}: {exc}"
        if _resolve.DELETE not in res.symbols:
            proto_reason = f"torch {torch.__version__} exports no {_resolve.DELETE}"
        mark("owned_prototype", proto_reason,
             f"owned (2.14's implementation, built for torch {built_for})")

        borrow = res.paths["borrow"]
        mark("borrow", borrow.reason,
             f"borrow (torch_tensor_borrow_from_pyobject, {borrow.origin})")
        fallback = res.paths["fallback"]
        offset = core.PYOBJECT_SIZE if fallback.available else -1
        mark("pointer", fallback.reason,
             f"pointer trick ((char*)obj + {core.PYOBJECT_SIZE}, proven)")

        def code(name):
            sym = _resolve.find_symbol(torch, name)
            if sym is None:
                return None
            return ctypes.CFUNCTYPE(ctypes.c_int32)(sym.address)()

        itemsizes = {}
        for name in AOTI_DTYPES:
            c = code(f"aoti_torch_dtype_{name}")
            if c is not None:
                itemsizes[c] = getattr(torch, name).itemsize
        cpu, cuda = code("aoti_torch_device_type_cpu"), code("aoti_torch_device_type_cuda")
        mod.install(addresses, torch.Tensor, offset, itemsizes,
                    -1 if cpu is None else cpu, -1 if cuda is None else cuda)

        self._viewers = {"owned": mod.view_owned, "owned_prototype": mod.view_owned_prototype,
                         "borrow": mod.view_borrow, "pointer": mod.view_pointer,
                         "dlpack": mod.view_dlpack, "dlpack_fixed": mod.view_dlpack_fixed}
        self._contexts = {}
        self._install_fixed(torch, mod, itemsizes, codes={
            name: code(f"aoti_torch_dtype_{name}") for name in AOTI_DTYPES})
        own, info = cuda_core_peer.load(torch, device)
        self.cuda_core_info = info
        self._viewers["cuda_core"] = own
        mark("cuda_core", info.get("unavailable"),
             f"cuda.core {info.get('call', 'StridedMemoryView')} "
             f"(cuda-core {version}, its {info.get('path', '?')} path)")

    def mark(self, route, reason, label):
        """Record ``route`` as available (``reason`` None) or not, with its label."""
        self.available[route] = reason is None
        self.labels[route] = label
        if reason is not None:
            self.reasons[route] = reason

    def _install_fixed(self, torch, mod, itemsizes: dict, codes: dict) -> None:
        """The routes with an internal fix, and torch's own DLPack route beside them."""
        fixes, why = _load_fixes(torch)
        self.fixes = fixes
        owned = "owned" if self.available["owned"] else "owned_prototype"
        base = self.labels[owned]
        if fixes is None:
            reason = f"the internal fixes are not built: {why}"
        elif not self.available[owned]:
            reason = f"no owned route to fix: {self.reasons[owned]}"
        else:
            reason = None
            bare = self._viewers[owned]
            self._viewers["owned_fixed"] = self._fixed_each_call(bare)
            self._timed_owned_fixed = bare
            self._contexts["owned_fixed"] = lambda: fixes.interpreter_fix("patch")
        self.fixed_base = owned
        self.mark("owned_fixed", reason, "owned + interpreter fix (the patch's incref / "
                  f"decref), via {base}")

        torch_api = fixes.torch_api if fixes is not None else 0
        dl_reason = None if torch_api else (
            f"torch {torch.__version__} has no __dlpack_c_exchange_api__" if fixes is not None
            else f"the internal fixes are not built: {why}")
        fixed_api = 0
        dl_dtypes = {}
        if torch_api:
            fixed_api = fixes.dlpack_api_patched()
            # Each AOTI dtype's DLPack dtype as torch itself reports it (one DLTensor of a
            # one-element tensor, through torch's own slot): the map is torch's, not typed.
            for name, aoti in codes.items():
                if aoti is None or aoti not in itemsizes:
                    continue
                try:
                    with warnings.catch_warnings():  # complex32: "experimental"
                        warnings.simplefilter("ignore")
                        one = torch.empty(1, dtype=getattr(torch, name))
                    dl = fixes.dltensor(torch_api, one)
                except Exception:  # a dtype DLPack has no code for: refused by both routes
                    continue
                c, bits, lanes = dl.dtype
                dl_dtypes[c | bits << 8 | lanes << 16] = (aoti, itemsizes[aoti])
        mod.install_dlpack(torch_api, fixed_api, dl_dtypes)
        self.mark("dlpack", dl_reason,
                  "DLPack dltensor_from_py_object_no_sync (torch's: a copy made and destroyed)")
        self.mark("dlpack_fixed", dl_reason,
                  "fixed DLPack: the DLPack patches' dltensor_from_py_object_no_sync "
                  "(cut out of the patched Module.cpp)")

    def _fixed_each_call(self, bare):
        fixes = self.fixes

        def view(t):
            with fixes.interpreter_fix("patch"):
                return bare(t)

        view.__doc__ = f"{bare.__name__} with the interpreter fix installed for the call"
        return view

    def viewer(self, route: str):
        """``view(t) -> StridedMemoryView`` of ``route``, right on its own."""
        return self._viewers[route]

    def timed(self, route: str):
        """``(view, context)`` for a timing loop: ``view(t)`` the bare function, and
        ``context()`` a context manager to hold around the loop (the interpreter fix for
        ``owned_fixed``; nothing for every other route)."""
        if route == "owned_fixed":
            return self._timed_owned_fixed, self._contexts["owned_fixed"]
        return self._viewers[route], contextlib.nullcontext

    def routes(self) -> list[str]:
        """The available routes, in ``ROUTES`` order."""
        return [r for r in ROUTES if self.available.get(r)]


def fields(v) -> dict:
    """A view's public fields (what a kernel launch reads), for comparisons."""
    return {"ptr": v.ptr, "shape": tuple(v.shape), "strides": v.strides, "dtype": v.dtype,
            "device_id": v.device_id, "is_device_accessible": v.is_device_accessible,
            "readonly": v.readonly, "exporting_obj": id(v.exporting_obj)}
