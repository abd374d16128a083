"""numba-cuda's kernel launches with torch arguments, on each route.

numba-cuda (0.25+) makes a cuda.core ``StridedMemoryView`` of a torch argument through
``StridedMemoryView.from_dlpack`` when it types it (``numba.cuda.typing.typeof``'s
``_typeof_dlpack``, ``stream_ptr=-1``; a ``cuda.jit`` dispatcher only: a kernel compiled
for an explicit signature is not typed at launch) and when it prepares it
(``numba.cuda.cudadrv.devicearray._to_strided_memory_view``, the launch stream).
``Router`` puts a route in place from outside both packages: it rebinds the name
``StridedMemoryView`` in those two modules to a class whose ``from_dlpack`` hands a
``torch.Tensor`` to the route's viewer (``cuda_core_consumer``: a real
``StridedMemoryView`` filled by that route) and orders the launch stream after torch's
current stream with cuda.core's own ``sync_torch_stream``, as cuda.core's tensor bridge
does; every other call and attribute goes to cuda.core's class. No file of numba-cuda or
cuda.core is edited. ``router_plugin.py`` does the same inside a pytest run.
"""

from __future__ import annotations

import contextlib
import sys

#: ``shipped``: nothing rebound (cuda.core as installed: the control). ``cuda_core``:
#: rebound, the viewer cuda.core's own ``from_dlpack`` (what the rebinding itself costs).
#: The rest are ``cuda_core_consumer.Consumer`` routes, where available.
CONTROL = ("shipped", "cuda_core")
#: Where numba-cuda looks the name up at call time.
MODULES = ("numba.cuda.typing.typeof", "numba.cuda.cudadrv.devicearray")


class Unavailable(RuntimeError):
    """numba-cuda, cuda.core or a CUDA device is missing; the message says which."""


class Router:
    """Switches the ``StridedMemoryView`` numba-cuda's launches go through.

    ``Router(torch)`` builds ``cuda_core_consumer.Consumer(torch, "cuda")``; ``use(route)``
    rebinds (``"shipped"`` restores cuda.core's class); ``counts[route]`` is the number of
    torch tensors viewed through each rebound route (the proof that launches used it).
    Raises ``Unavailable`` when numba-cuda, cuda.core's tensor bridge or CUDA is missing.
    Source: numba-cuda 0.30's ``typing/typeof.py`` and ``cudadrv/devicearray.py``
    (module-level ``from cuda.core.utils import StridedMemoryView``, looked up per call).
    """

    def __init__(self, torch):
        import importlib

        if not torch.cuda.is_available():
            raise Unavailable("no CUDA device")
        try:
            from cuda.core.utils import StridedMemoryView
            self.modules = [importlib.import_module(m) for m in MODULES]
        except ImportError as exc:
            raise Unavailable(f"numba-cuda / cuda.core: {exc}") from exc
        for m in self.modules:
            if getattr(m, "StridedMemoryView", None) is not StridedMemoryView:
                raise Unavailable(f"{m.__name__} has no module-level StridedMemoryView "
                                  "(a numba-cuda this harness does not know)")
        from bench.native import cuda_core_consumer

        self.torch, self.smv = torch, StridedMemoryView
        self.consumer = cuda_core_consumer.Consumer(torch, "cuda")
        # cuda.core loads its tensor bridge at its first torch view; its stream ordering
        # is the one our views reuse.
        StridedMemoryView.from_dlpack(torch.empty(1, device="cuda"), stream_ptr=-1)
        bridge = sys.modules.get("cuda.core._tensor_bridge")
        self.sync = getattr(bridge, "sync_torch_stream", None)
        if self.sync is None:
            raise Unavailable("cuda.core did not load its tensor bridge "
                              "(cuda.core._tensor_bridge.sync_torch_stream) for a torch tensor")
        self.routes = list(CONTROL) + [r for r in self.consumer.routes() if r != "cuda_core"]
        self.labels = {"shipped": "as shipped (cuda.core's own routing, nothing rebound)",
                       "cuda_core": "rebound, cuda.core's from_dlpack (the rebinding's cost)",
                       **{r: self.consumer.labels[r] for r in self.routes[2:]}}
        self.counts = dict.fromkeys(self.routes, 0)
        self._classes = {"shipped": StridedMemoryView}
        # A route may need a process-wide state held while it runs (owned + interpreter
        # fix: the patch's incref / decref installed): Consumer.timed gives the bare view
        # and that context; use() holds it while the route is in place.
        self._contexts = dict.fromkeys(self.routes, contextlib.nullcontext)
        timed = getattr(self.consumer, "timed", None)
        for r in self.routes[1:]:
            if r == "cuda_core":
                viewer = lambda t, _f=StridedMemoryView.from_dlpack: _f(t, stream_ptr=-1)
            elif timed is not None:
                viewer, self._contexts[r] = timed(r)
            else:
                viewer = self.consumer.viewer(r)
            self._classes[r] = self._routed_class(r, viewer)
        self.route, self._held = "shipped", None

    def _routed_class(self, route, viewer):
        smv, tensor, sync, counts = self.smv, self.torch.Tensor, self.sync, self.counts

        class _Meta(type):
            # numba-cuda tests ``isinstance(obj, StridedMemoryView)`` and reads the class's
            # other constructors: both answer as cuda.core's class does.
            def __instancecheck__(cls, obj):
                return isinstance(obj, smv)

            def __subclasscheck__(cls, sub):
                return issubclass(sub, smv)

            def __getattr__(cls, name):
                return getattr(smv, name)

        def from_dlpack(obj, stream_ptr=None):
            if type(obj) is not tensor:
                return smv.from_dlpack(obj, stream_ptr=stream_ptr)
            view = viewer(obj)
            counts[route] += 1
            if stream_ptr is not None and view.is_device_accessible:
                s = int(stream_ptr)
                if s != -1:
                    sync(view.device_id, s)
            return view

        return _Meta(f"StridedMemoryView_{route}", (), {"from_dlpack": staticmethod(from_dlpack)})

    def use(self, route: str) -> None:
        """Rebind numba-cuda's ``StridedMemoryView`` to ``route``'s (``KeyError`` if
        unknown), leaving the previous route's context and entering this one's."""
        cls = self._classes[route]
        if self._held is not None:
            held, self._held = self._held, None
            held.__exit__(None, None, None)
        context = self._contexts[route]()
        context.__enter__()
        self._held = context
        for m in self.modules:
            m.StridedMemoryView = cls
        self.route = route

    def check(self, tensors) -> None:
        """Assert every route's view of each tensor equals cuda.core's, field by field
        (``cuda_core_consumer.fields``), for ``stream_ptr=-1`` and the default stream.
        Raises ``AssertionError`` naming the route, tensor and field."""
        from bench.native import cuda_core_consumer

        previous = self.route
        try:
            for t in tensors:
                want = cuda_core_consumer.fields(self.smv.from_dlpack(t, stream_ptr=-1))
                for r in self.routes[1:]:
                    self.use(r)
                    for s in (-1, 0):
                        got = cuda_core_consumer.fields(
                            self.modules[1].StridedMemoryView.from_dlpack(t, stream_ptr=s))
                        diff = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
                        assert not diff, f"{r}, stream {s}, tensor {tuple(t.shape)}: {diff}"
        finally:
            self.use(previous)
