"""The seed's consumer on every path: cuda.core's ``StridedMemoryView`` filled through
each of our routes (``cuda_core_consumer.pyx``, built by ``cuda_core_consumer_build.py``
at first use), beside the view cuda.core itself makes (``cuda_core_peer``).

``Consumer(torch)`` builds what is missing into ``peers_native.build_dir(...)/cuda_core-<v>/``
(the compiled module depends on cuda-core's struct layout, so one folder per cuda-core
version), resolves every address with ``bridge._resolve`` (the ones the bridge installs)
and installs them. Its routes, each a function ``view(t) -> StridedMemoryView``:

- ``owned``: torch's own ``torch_tensor_from_pyobject`` (2.14+) + getters + delete;
- ``owned_prototype``: 2.14's implementation built for the running torch
  (``owned_prototype.cpp``): built on every torch, so on 2.14+ both run side by side;
- ``borrow``: ``torch_tensor_borrow_from_pyobject`` (libtorch's, else shim_ext's);
- ``pointer``: ``(char*)obj + sizeof(PyObject)``, the offset proven by the bridge;
- ``cuda_core``: cuda.core's own ``StridedMemoryView.from_dlpack(t, -1)`` (not ours; the
  path it takes, AOTI bridge or DLPack, is observed by ``cuda_core_peer``).

A route that cannot run has ``available[route] = False`` and ``reasons[route]`` says why;
``labels[route]`` names each for the report.
"""

from __future__ import annotations

import pathlib

from bench.native import peers_native

ROUTES = ("owned", "owned_prototype", "borrow", "pointer", "cuda_core")
#: The dtypes cuda.core 1.2's tensor bridge maps (``_tensor_bridge.pyx``'s
#: ``_build_itemsize_map``: AOTI dtype code -> itemsize; its binary names these
#: ``aoti_torch_dtype_*`` functions), where this torch exports the code.
AOTI_DTYPES = ("bool", "uint8", "int8", "float16", "bfloat16", "int16", "complex32",
               "float32", "int32", "complex64", "float64", "int64", "complex128",
               "uint16", "uint32", "uint64")


class Unavailable(RuntimeError):
    """The consumer cannot run here at all; the message says why."""


def _built_module(builder, out: pathlib.Path):
    return peers_native.built_module(builder, out)


def cuda_core_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("cuda-core")
    except metadata.PackageNotFoundError:
        return None


class Consumer:
    """The consumer module with every address installed; see the module docstring."""

    def __init__(self, torch, device="cpu"):
        import ctypes

        from bench.native import cuda_core_peer

        self.torch_version = torch.__version__
        version = cuda_core_version()
        if version is None:
            raise Unavailable("cuda-core is not installed")
        self.cuda_core_version = version
        from bench.native import cuda_core_consumer_build as cb

        out = peers_native.build_dir(torch.__version__.split("+")[0])
        try:
            self.module = mod = _built_module(cb, out / f"cuda_core-{version}")
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

        def mark(route, reason, label):
            self.available[route] = reason is None
            self.labels[route] = label
            if reason is not None:
                self.reasons[route] = reason

        owned = res.paths["owned"]
        mark("owned", owned.reason,
             f"owned (torch_tensor_from_pyobject, torch {torch.__version__})")

        # The prototype of 2.14's owned shim, built for this torch.
        proto_reason, built_for = None, torch.__version__
        try:
            from bench.native import owned_prototype_build as pb

            proto = _built_module(pb, out)
            built_for = proto.ffi.string(proto.lib.owned_prototype_built_for()).decode()
            if built_for != torch.__version__.split("+")[0]:
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

        libs = _resolve._loaded_libraries(torch)

        def code(name):
            sym = _resolve._lookup(name, libs, frozenset())
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
                         "borrow": mod.view_borrow, "pointer": mod.view_pointer}
        own, info = cuda_core_peer.load(torch, device)
        self.cuda_core_info = info
        self._viewers["cuda_core"] = own
        mark("cuda_core", info.get("unavailable"),
             f"cuda.core {info.get('call', 'StridedMemoryView')} "
             f"(cuda-core {version}, its {info.get('path', '?')} path)")

    def viewer(self, route: str):
        """``view(t) -> StridedMemoryView`` of ``route``."""
        return self._viewers[route]

    def routes(self) -> list[str]:
        """The available routes, in ``ROUTES`` order."""
        return [r for r in ROUTES if self.available.get(r)]


def fields(v) -> dict:
    """A view's public fields (what a kernel launch reads), for comparisons."""
    return {"ptr": v.ptr, "shape": tuple(v.shape), "strides": v.strides, "dtype": v.dtype,
            "device_id": v.device_id, "is_device_accessible": v.is_device_accessible,
            "readonly": v.readonly, "exporting_obj": id(v.exporting_obj)}
