"""ATen ops through torch's generated C shims, on tensors from Python: a consumer that
needs a tensor handle for more than reading metadata (``c_shims.cpp``).

``Consumer(torch)`` builds the extension at first use (``consumer_build.py``), resolves
every address with ``bridge._resolve`` and installs them. Each op of ``OPS`` calls the
shim ``SHIMS`` names on CPU or CUDA tensors; its input handles come by one of ``ROUTES``;
a new result handle becomes a Python tensor through ``torch_tensor_to_pyobject`` (2.14+,
else 2.14's implementation built here) and is deleted; the outputs of ``_out`` ops are
passed in and borrowed. Every failure is a ``RuntimeError`` carrying torch's own message,
never a crash; handles taken before it are released.
"""

from __future__ import annotations

import contextlib
import ctypes

from bench import native
from bench.native import torch_version

OPS = ("add", "amax", "median", "mm_out", "addmm_out")
#: The routes to the input handles: ``owned`` (torch's ``torch_tensor_from_pyobject`` on
#: 2.14+, else 2.14's implementation built for the running torch, ``owned_prototype.cpp``: a
#: new reference per tensor, deleted after the op), ``owned_fixed`` (the same with
#: ``internal_fixes.InternalFixes.interpreter_fix()`` installed around the call or loop),
#: ``borrow`` (``torch_tensor_borrow_from_pyobject``: borrowed, never deleted) and
#: ``borrow_fixed`` (the borrow with the fix: it changes what a kernel pays when it copies
#: an input, ``Consumer.call_loop``).
ROUTES = ("owned", "owned_fixed", "borrow", "borrow_fixed")
#: what each route is compared with: the borrow of the same torch (the fix installed or not)
BASELINE = {"owned": "borrow", "owned_fixed": "borrow_fixed", "borrow_fixed": "borrow"}
#: the shim each op calls, ``{dev}`` being ``cpu`` or ``cuda``
SHIMS = {"add": "aoti_torch_{dev}_add_Tensor", "amax": "aoti_torch_aten_amax",
         "median": "aoti_torch_{dev}_median", "mm_out": "aoti_torch_{dev}_mm_out",
         "addmm_out": "aoti_torch_{dev}_addmm_out"}
#: which header declares each op's shim (torch 2.15 wheel, ``torch/csrc/inductor/aoti_torch/generated/``)
HEADERS = {"add": "c_shim_{dev}.h", "amax": "c_shim_aten.h", "median": "c_shim_{dev}.h",
           "mm_out": "c_shim_{dev}.h", "addmm_out": "c_shim_{dev}.h"}
#: what each op computes, in torch's Python API (the reference its result is checked against)
TORCH_EQUIVALENT = {"add": "torch.add(a, b)", "amax": "torch.amax(a, dim=())",
                    "median": "torch.median(a)", "mm_out": "torch.mm(a, b, out=out)",
                    "addmm_out": "torch.addmm(c, a, b, out=out)"}
#: tensor arguments per op (an ``_out`` op's output first, the shims' order)
ARITY = {"add": 2, "amax": 1, "median": 1, "mm_out": 3, "addmm_out": 4}
DEVICES = ("cpu", "cuda")


class Unavailable(RuntimeError):
    """The consumer cannot run here at all; the message says why."""


def _address(sym) -> int:
    return sym.address if sym is not None else 0


class Consumer:
    """The built consumer, every address installed (see the module docstring). The
    extension holds one set of addresses per process: the newest ``Consumer`` installs
    its own (all of them must agree unless ``prototypes`` differ).

    Attributes
    ----------
    available : dict
        ``{route: bool}`` for ``ROUTES``; ``reasons[route]`` says why one cannot run.
    labels : dict
        ``{route: str}``: where each route's handle comes from, for the tables.
    shims : dict
        ``{op: {device: symbol name or None}}``: the shim each op calls (None: this torch
        exports none); ``shim_reasons[(op, device)]`` says why one is missing.
    to_pyobject : str
        Where a new result handle becomes a Python tensor.
    torch_messages : bool
        Whether errors carry torch's own message (torch 2.13+); before, they say torch
        gave none.
    """

    def __init__(self, torch, prototypes: bool = False):
        """``prototypes``: use 2.14's owned shim and ``torch_tensor_to_pyobject`` built for
        this torch even where torch exports its own (what a torch < 2.14 gets; the tests
        run that path on every torch)."""
        from bench.c_shims import consumer_build

        from bridge import _bridge as core
        from bridge import _resolve

        self.torch = torch
        out = native.build_dir(torch_version(torch))
        try:
            self.module = mod = native.built_module(consumer_build, out)
        except Exception as exc:  # a compiler failure: say which
            raise Unavailable(f"c_shims.cpp does not build: {type(exc).__name__}: "
                              f"{exc}") from exc
        res = _resolve.resolve(core.PYOBJECT_SIZE)

        def look(name):
            return _resolve.find_symbol(torch, name)

        addresses = {}
        for name, key in ((_resolve.DELETE, "delete"),
                          ("aoti_torch_get_device_type", "device_type"),
                          (_resolve.WHAT, "what")):
            sym = res.symbols.get(name) or look(name)
            if sym is None and key != "what":
                raise Unavailable(f"torch {torch.__version__} exports no {name}")
            addresses[key] = _address(sym)
        #: whether a failed shim call carries torch's message (torch 2.13+ exports
        #: torch_exception_get_what_without_backtrace; before, torch only logs it)
        self.torch_messages = bool(addresses["what"])
        self.available, self.reasons, self.labels = {}, {}, {}

        def mark(route, reason, label):
            self.available[route] = reason is None
            self.labels[route] = label
            if reason is not None:
                self.reasons[route] = reason

        # The owned handle: torch's own where it has one, else 2.14's built for it.
        if res.paths["owned"].available and not prototypes:
            addresses["owned"] = res.symbols[_resolve.OWNED].address
            owned_reason, owned_label = None, (
                f"owned (torch_tensor_from_pyobject, torch {torch.__version__})")
        else:
            owned_reason, owned_label = self._owned_prototype(torch, out, res, addresses)
        mark("owned", owned_reason, owned_label)
        from bench import routes

        self._fixes, fixes_reason = routes.load_fixes(torch)
        mark("owned_fixed", owned_reason or fixes_reason,
             owned_label + " + interpreter fix")
        borrow = res.paths["borrow"]
        if borrow.available:
            addresses["borrow"] = res.symbols[_resolve.BORROW].address
        borrow_label = f"borrow (torch_tensor_borrow_from_pyobject, {borrow.origin})"
        mark("borrow", borrow.reason, borrow_label)
        mark("borrow_fixed", borrow.reason or fixes_reason, borrow_label + " + interpreter fix")
        if not borrow.available:
            # op_loop borrows its handles once: without a borrow nothing is measured.
            raise Unavailable(f"no borrowed handle: {borrow.reason}")

        to_py = None if prototypes else look("torch_tensor_to_pyobject")
        if to_py is not None:
            addresses["to_pyobject"] = to_py.address
            self.to_pyobject = f"torch_tensor_to_pyobject ({to_py.origin})"
        else:
            self.to_pyobject = self._to_pyobject_prototype(torch, out, addresses)

        self.shims, self.shim_reasons = {}, {}
        for op in OPS:
            self.shims[op] = {}
            for dev in DEVICES:
                name = SHIMS[op].format(dev=dev)
                sym = look(name)
                self.shims[op][dev] = name if sym is not None else None
                if sym is None:
                    self.shim_reasons[(op, dev)] = f"torch {torch.__version__} exports no {name}"
                addresses[f"{op}.{dev}"] = _address(sym)

        def code(name):
            sym = look(name)
            return -1 if sym is None else ctypes.CFUNCTYPE(ctypes.c_int32)(sym.address)()

        mod.install(addresses, code("aoti_torch_device_type_cpu"),
                    code("aoti_torch_device_type_cuda"))
        self._route = {"owned": mod.ROUTE_owned, "owned_fixed": mod.ROUTE_owned,
                       "borrow": mod.ROUTE_borrow, "borrow_fixed": mod.ROUTE_borrow}
        self._op = {op: getattr(mod, f"OP_{op}") for op in OPS}
        assert all(getattr(mod, f"ARITY_{op}") == ARITY[op] for op in OPS)

    @staticmethod
    def _owned_prototype(torch, out, res, addresses):
        """``(reason or None, label)`` of 2.14's owned shim built for this torch."""
        from bridge import _resolve

        built_for = torch_version(torch)
        label = f"owned (2.14's implementation, built for torch {built_for})"
        try:
            from bench.native import owned_prototype_build as pb

            proto = native.built_module(pb, out)
        except Exception as exc:
            return f"owned_prototype does not build or load: {type(exc).__name__}: {exc}", label
        addr = int(proto.ffi.cast("uintptr_t", proto.ffi.addressof(proto.lib, pb.FUNCTION)))
        why = _resolve.prove_handle(torch, _resolve.Symbol(pb.FUNCTION, addr, pb.MODULE),
                                    res.symbols.get(_resolve.DELETE))
        if why is None:
            addresses["owned"] = addr
            addresses["owned_error"] = int(proto.ffi.cast(
                "uintptr_t", proto.ffi.addressof(proto.lib, "owned_prototype_last_error")))
        return why, label

    @staticmethod
    def _to_pyobject_prototype(torch, out, addresses) -> str:
        from bench.c_shims import consumer_build

        builder = consumer_build.to_pyobject_builder()
        try:
            proto = native.built_module(builder, out)
        except Exception as exc:
            raise Unavailable(f"torch {torch.__version__} exports no torch_tensor_to_pyobject "
                              f"and 2.14's does not build here: {type(exc).__name__}: "
                              f"{exc}") from exc
        for key, name in (("to_pyobject", "c_shims_to_pyobject"),
                          ("to_pyobject_error", "c_shims_to_pyobject_last_error")):
            addresses[key] = int(proto.ffi.cast("uintptr_t",
                                                proto.ffi.addressof(proto.lib, name)))
        return (f"2.14's torch_tensor_to_pyobject, built for torch "
                f"{torch_version(torch)} (bench/c_shims/to_pyobject.cpp)")

    # --- calling ------------------------------------------------------------------------
    def routes(self) -> list[str]:
        """The available routes, in ``ROUTES`` order."""
        return [r for r in ROUTES if self.available.get(r)]

    def route_context(self, route: str):
        """What the route needs around its calls or loops: the interpreter fix for
        ``owned_fixed`` and ``borrow_fixed`` (``internal_fixes``; not reentrant), nothing
        for the others."""
        if route.endswith("_fixed"):
            return self._fixes.interpreter_fix()
        return contextlib.nullcontext()

    def function(self, op: str, route: str):
        """``(f, head)``: the extension's ``call`` and its first two arguments for
        ``op`` by ``route``, so that ``f(*head, *tensors)`` runs the op (a benchmark's
        statement makes no Python call of its own)."""
        if not self.available.get(route):
            raise ValueError(f"route {route} is unavailable: {self.reasons.get(route)}")
        return self.module.call, (self._op[op], self._route[route])

    def call(self, op: str, route: str, *tensors):
        """Run ``op`` on ``tensors`` (``ARITY[op]`` of them, an ``_out`` op's output
        first) with handles from ``route``; the result tensor, or None for an ``_out``
        op (the result is in ``tensors[0]``). Raises ``RuntimeError`` with torch's
        message when a handle or the op fails."""
        f, head = self.function(op, route)
        with self.route_context(route):
            return f(*head, *tensors)

    def handles_loop(self, route: str, n: int, *tensors) -> float:
        """ns per taking (and, owned, deleting) one handle for every tensor of
        ``tensors``, ``n`` times in C; the interpreter fix around it for the ``*_fixed``
        routes."""
        with self.route_context(route):
            return self.module.handles_loop(self._route[route], n, *tensors)

    def call_loop(self, op: str, route: str, n: int, *tensors) -> float:
        """ns per whole call in C, ``n`` times: the handles by ``route``, the op, the
        result handle deleted (not wrapped), the handles released; the interpreter fix
        around it for the ``*_fixed`` routes. Unlike ``handles_loop`` plus ``op_loop``, this
        includes what the route changes inside the op: torch 2.15's ``intrusive_ptr``
        increfs a ``TensorImpl``'s Python object (through the interpreter, with a GIL
        acquisition) when its count goes from 1 to 2 and decrefs it on the way back
        (``c10/util/intrusive_ptr.h``). A kernel that copies an input ``at::Tensor`` (a
        ``c10::MaybeOwned``, a ``TensorIterator`` operand, an ``expand``) pays that 1 -> 2
        transition after a borrowed handle, and the cheap 2 -> 3 one after an owned
        handle; so the whole call differs by route by less than the handles alone do."""
        with self.route_context(route):
            return self.module.call_loop(self._op[op], self._route[route], n, *tensors)

    def op_loop(self, op: str, n: int, *tensors) -> float:
        """ns per call of ``op``'s shim alone, ``n`` times in C (host time: on CUDA the
        launch, not the kernel), the handles borrowed once before the loop; a new result
        handle is deleted each time (its free is part of the op)."""
        return self.module.op_loop(self._op[op], n, *tensors)


# --- inputs and references ------------------------------------------------------------------
def inputs(torch, op: str, size: int, device, requires_grad: bool = False) -> tuple:
    """Fresh float32 ``size x size`` tensors for ``op`` on ``device`` (seeded), an
    ``_out`` op's output (zeros) first; ``requires_grad`` on the inputs (never the out)."""
    g = torch.Generator().manual_seed(1234 + size)

    def t():
        x = torch.randn(size, size, generator=g, dtype=torch.float32).to(device)
        return x.requires_grad_(requires_grad)

    ins = tuple(t() for _ in range(ARITY[op] - (1 if op.endswith("_out") else 0)))
    if op.endswith("_out"):
        return (torch.zeros(size, size, dtype=torch.float32, device=device), *ins)
    return ins


def reference(torch, op: str, tensors: tuple):
    """torch's own result of ``op`` on ``tensors`` (the same arguments ``call`` takes;
    for an ``_out`` op, a new tensor, the ``out`` argument untouched)."""
    with torch.no_grad():
        if op == "add":
            return torch.add(tensors[0], tensors[1])
        if op == "amax":
            return torch.amax(tensors[0], dim=())
        if op == "median":
            return torch.median(tensors[0])
        if op == "mm_out":
            return torch.mm(tensors[1], tensors[2])
        if op == "addmm_out":
            return torch.addmm(tensors[1], tensors[2], tensors[3])
    raise ValueError(f"no op {op}")


def result(op: str, tensors: tuple, returned):
    """What ``call`` produced: the returned tensor, or an ``_out`` op's ``out``."""
    return tensors[0] if op.endswith("_out") else returned


def dispatch_probe(torch, consumer: Consumer, op: str, route: str, device) -> list[str]:
    """The aten overloads a ``TorchDispatchMode`` saw while ``op`` ran through its shim
    (``[]``: no Python ran at the dispatcher; the generated CPU/CUDA shims call
    ``at::cpu::`` / ``at::cuda::`` kernels directly, but a kernel that calls other ops
    re-enters the dispatcher, and ``c_shim_aten.h`` shims enter it at the top)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen.append(str(func))
            return func(*args, **(kwargs or {}))

    tensors = inputs(torch, op, 8, device)
    with Recorder() as mode:
        consumer.call(op, route, *tensors)
    return mode.seen
