"""Two fixes inside torch, with no new ABI, run for real (the benchmarks time them,
``make patch-check`` runs the patches' tests against them).

``internal_fixes.cpp`` says what each one changes and on which ABI facts it rests; this
module builds it (``internal_fixes_build.py``, with ``proposal.toolchain``) and wraps it in
``InternalFixes``: ``interpreter_fix(code)``, for a ``with`` block, points the global
``c10::impl::PyInterpreter``'s ``vtable_`` at a copy of torch's whose ``incref`` / ``decref``
skip the GIL acquisition on an attached thread (``c10/core/impl/PyInterpreter.h``,
``PyInterpreterHooks.h``, ``torch/csrc/PyInterpreter.cpp``); ``dlpack_api_patched()`` is a
copy of torch's ``DLPackExchangeAPI`` whose ``dltensor_from_py_object_no_sync`` is the
DLPack series' own function (``proposal/patches/dlpack/``, cut out of the patched
``Module.cpp``: a borrowed reference instead of the copy, the real-type check, the
conj/neg refusal); ``dlpack_api(check_attached)`` the same with the earlier hand-written
prototype instead (a labelled row). The bridge uses none of them.
"""

from __future__ import annotations

import contextlib
import ctypes
from dataclasses import dataclass

from proposal import toolchain
from proposal.toolchain import torch_version

_PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
_PyCapsule_GetPointer.restype = ctypes.c_void_p
_PyCapsule_GetPointer.argtypes = (ctypes.py_object, ctypes.c_char_p)


class FixError(RuntimeError):
    """An internal fix could not be installed, removed or called (the C side's reason)."""


@dataclass(frozen=True)
class DLTensorFields:
    """The fields of one filled ``DLTensor`` (``ATen/dlpack.h``), copied out.

    ``data`` is the address as an int (``byte_offset`` not added), ``shape`` and
    ``strides`` in elements, ``dtype`` as ``(code, bits, lanes)``, ``device`` as
    ``(device_type, device_id)`` in DLPack's codes (``kDLCPU`` = 1).
    """

    data: int
    device: tuple
    ndim: int
    dtype: tuple
    shape: tuple
    strides: tuple
    byte_offset: int


def _module(torch_version: str):
    from proposal.fixes import internal_fixes_build

    return toolchain.built_module(internal_fixes_build, toolchain.build_dir(torch_version))


def torch_dlpack_api(torch) -> int:
    """Address of torch's ``DLPackExchangeAPI`` (the PyCapsule
    ``torch.Tensor.__dlpack_c_exchange_api__``, name ``"dlpack_exchange_api"``), or 0
    when this torch has none (before 2.10)."""
    capsule = getattr(torch.Tensor, "__dlpack_c_exchange_api__", None)
    if capsule is None:
        return 0
    return _PyCapsule_GetPointer(capsule, b"dlpack_exchange_api") or 0


class InternalFixes:
    """The compiled fixes for the imported torch (built on first use).

    Attributes
    ----------
    layout : dict
        ``{"slots": n, "incref": i, "decref": j}``: the number of slots of
        ``PyInterpreterVTable`` and the two replaced slots' indices, from the installed
        header at compile time.
    torch_api : int
        Address of torch's ``DLPackExchangeAPI`` (0 when torch has none).
    """

    #: ``interpreter_fix``'s codes, by the number the C side takes. ``"gil-state-check"``
    #: is a negative control, never a route: the emulation testing ``PyGILState_Check()``,
    #: which answers yes on every thread once a subinterpreter exists.
    CODES = {"patch": 0, "emulation": 1, "gil-state-check": 2}

    def __init__(self, torch):
        mod = _module(torch_version(torch))
        self._ffi, self._lib = mod.ffi, mod.lib
        out = self._ffi.new("int64_t[3]")
        self._lib.fixes_interpreter_layout(out)
        self.layout = {"slots": out[0], "incref": out[1], "decref": out[2]}
        self.torch_api = torch_dlpack_api(torch)
        #: the file name of the patch whose incref / decref ``code="patch"`` installs
        self.patch_name = self._ffi.string(self._lib.fixes_patch_name()).decode()

    def _error(self) -> str:
        return self._ffi.string(self._lib.fixes_last_error()).decode(errors="replace")

    # --- the interpreter fix ---------------------------------------------------------
    def installed(self) -> bool:
        """True while the fixed vtable is the global interpreter's."""
        return self._lib.fixes_interpreter_installed() >= 0

    def installed_code(self) -> str | None:
        """The name (``CODES``) of the code installed, else None."""
        code = self._lib.fixes_interpreter_installed()
        return next((name for name, n in self.CODES.items() if n == code), None)

    def vtable_address(self) -> int:
        """The address ``PyInterpreter::vtable_`` holds now (torch's, or the fix's)."""
        return int(self._lib.fixes_interpreter_vtable())

    def counts(self) -> tuple[int, int]:
        """``(fast, slow)``: calls of the emulation's ``incref`` / ``decref``
        (``code="emulation"``) since the module was loaded that skipped the acquisition
        (attached thread) and that forwarded to torch's own method, with its acquisition
        (no attached thread state). The patch's code counts nothing itself: see
        ``guard_counts``."""
        out = self._ffi.new("uint64_t[2]")
        self._lib.fixes_interpreter_counts(out)
        return int(out[0]), int(out[1])

    def guard_counts(self) -> dict[str, int]:
        """What ``SafeGilScopedAcquire`` (pytorch/pytorch#189128's class, ``safe_gil.h``) did since the module
        was loaded: ``constructed`` (every guard: the patch's slow path, one per incref /
        decref that did not take the fast path) and ``acquired`` (it converted to true:
        the GIL was held in its scope; that class stays true while Python finalizes)."""
        out = self._ffi.new("uint64_t[2]")
        self._lib.fixes_guard_counts(out)
        return {"constructed": int(out[0]), "acquired": int(out[1])}

    @contextlib.contextmanager
    def interpreter_fix(self, code: str = "patch"):
        """Install the interpreter fix for the ``with`` block; restore torch's on exit.

        ``code``: ``"patch"`` (default), the patch's own ``incref`` / ``decref``, cut out
        of the patched ``PyInterpreter.cpp`` at build time (``patched_interpreter.py``) and
        compiled against torch 2.15 and main's ``SafeGilScopedAcquire`` (``safe_gil.h``, the
        class as pytorch/pytorch 02d90f32 defines it): the patch's code on torch 2.15,
        not a build of main; ``"emulation"``, the hand-written copy that forwards the slow
        path to torch 2.15's own methods (``pybind11::gil_scoped_acquire``);
        ``"gil-state-check"``, a negative control (the emulation with
        ``PyGILState_Check()`` as its test). The fast path
        runs when the calling thread has an attached thread state and Python is not
        finalizing. The C side takes the GIL itself where it needs it (cffi calls arrive
        without it). Raises ``ValueError`` for another ``code``;
        ``FixError`` if a fix is already installed (no nesting: the outer block would
        restore it early) or cannot be installed, and on exit if the interpreter's
        vtable was replaced by someone else meanwhile (left alone then). Install it only
        while no other thread copies tensors: ``vtable_`` is a plain pointer.
        """
        if code not in self.CODES:
            raise ValueError(f"code must be one of {sorted(self.CODES)}, not {code!r}")
        rc = self._lib.fixes_interpreter_install(self.CODES[code])
        if rc == 1:
            raise FixError("the interpreter fix is already installed")
        if rc != 0:
            raise FixError(f"cannot install the interpreter fix: {self._error()}")
        try:
            yield self
        finally:
            rc = self._lib.fixes_interpreter_uninstall()
            if rc != 0:
                raise FixError(f"cannot restore torch's interpreter vtable (rc {rc}): "
                               f"{self._error()}")

    def copy_on_foreign_thread(self, t, n: int) -> None:
        """Copy ``t``'s ``at::Tensor`` ``n`` times on a new native thread that has no
        Python thread state (the GIL is released meanwhile); for the tests of the
        fix's slow path. ``t`` must be a plain ``torch.Tensor`` (its ``at::Tensor``
        is read at ``id(t) + sizeof(PyObject)``, the pointer trick, proven by
        ``bridge``)."""
        from bridge import _bridge as core

        if self._lib.fixes_copy_on_foreign_thread(id(t) + core.PYOBJECT_SIZE, n) != 0:
            raise FixError(self._error())

    def copy_here(self, t, n: int, attach: bool) -> int | None:
        """Copy ``t``'s ``at::Tensor`` ``n`` times on this thread, attached (``attach``:
        the GIL taken first, as a C extension called from Python holds it) or detached
        (the GIL released, as cffi calls run); returns ``t``'s refcount while the first
        copy was alive (None when detached: not read without the GIL). ``t``: a plain
        ``torch.Tensor`` (its ``at::Tensor`` at ``id(t) + sizeof(PyObject)``)."""
        from bridge import _bridge as core

        out = self._ffi.new("int64_t*")
        if self._lib.fixes_copy_here(id(t) + core.PYOBJECT_SIZE, id(t), n, int(bool(attach)),
                                     out) != 0:
            raise FixError(self._error())
        return None if out[0] < 0 else int(out[0])

    def copy_finished_while_gil_held(self, t, where: str, wait_ms: int = 200) -> bool:
        """Copy ``t``'s ``at::Tensor`` once on a new thread (``where``: ``"native"``, a
        thread Python never saw, or ``"detached"``, one with a detached thread state)
        while this thread holds the GIL for ``wait_ms`` milliseconds; True if the copy
        finished meanwhile, i.e. its incref / decref touched the refcount without the
        GIL (wrong), False if it waited (right). ``t``: a plain ``torch.Tensor`` with no
        other owner of its ``at::Tensor`` (``t._use_count() == 1``). Raises ``FixError``
        when no thread could start."""
        from bridge import _bridge as core

        kind = {"native": 0, "detached": 1}[where]
        got = self._lib.fixes_copy_finished_while_gil_held(id(t) + core.PYOBJECT_SIZE, kind,
                                                           wait_ms)
        if got < 0:
            raise FixError(self._error())
        return bool(got)

    def hold(self, t, until: str) -> None:
        """Keep one C++ copy of ``t``'s ``at::Tensor`` until ``release_held()``
        (``until="finalization"``) or until the process exits (``until="exit"``: an
        atexit handler, which runs once the interpreter is finalized); each release
        writes one line to stderr (``initialized=``, ``finalizing=``, the refcounts and
        the guard's counts). For the finalization test's child process."""
        from bridge import _bridge as core

        which = {"finalization": 0, "exit": 1}[until]
        if self._lib.fixes_hold(id(t) + core.PYOBJECT_SIZE, id(t), which) != 0:
            raise FixError("cannot register the atexit handler")

    def release_held(self) -> None:
        """Drop the copies ``hold(..., "finalization")`` keeps, with the GIL, reporting to
        stderr before and after."""
        self._lib.fixes_release_held()

    def guard_probe(self, where: str) -> dict[str, bool]:
        """One ``SafeGilScopedAcquire`` (#189128's class) on its own, on a thread that is
        ``"attached"`` (this thread, GIL taken first), ``"detached"`` (this thread with
        the GIL released) or ``"foreign"`` (a new native thread without a thread state):
        ``{"true": the guard converts to true, "held_inside": PyGILState_Check() in its
        scope, "held_after": PyGILState_Check() after it, "state_after": the thread has
        a thread state after it}``."""
        if where == "foreign":
            bits = self._lib.fixes_guard_probe_on_foreign_thread()
        elif where in ("attached", "detached"):
            bits = self._lib.fixes_guard_probe_here(int(where == "attached"))
        else:
            raise ValueError(f"where must be attached, detached or foreign, not {where!r}")
        if bits < 0:
            raise FixError("the foreign thread could not start")
        names = ("true", "held_inside", "held_after", "state_after")
        return {name: bool(bits >> i & 1) for i, name in enumerate(names)}

    # --- DLPack without the copy ----------------------------------------------------
    def dlpack_api(self, check_attached: bool) -> int:
        """Address of a copy of torch's ``DLPackExchangeAPI`` whose
        ``dltensor_from_py_object_no_sync`` is the borrowed prototype, with or without
        its attached-thread check: the hand-written prototype, not the patch's code
        (``dlpack_api_patched``). Raises ``FixError`` when torch has no exchange API."""
        if not self.torch_api:
            raise FixError("this torch has no __dlpack_c_exchange_api__")
        return int(self._lib.fixes_dlpack_api(self.torch_api, int(bool(check_attached))))

    def dlpack_api_patched(self, read_only: bool = False) -> int:
        """Address of a copy of torch's ``DLPackExchangeAPI`` (the read-only one when
        ``read_only``) whose ``dltensor_from_py_object_no_sync`` is the DLPack series' own
        function: ``TorchDLPackExchangeAPI::DLTensorFromPyObjectNoSync`` (or the const
        struct's) and its helpers, cut out of ``torch/csrc/Module.cpp`` as
        ``proposal/patches/dlpack/`` patch it (``patched_dlpack.py``) and compiled here;
        every other slot is torch's. What every "fixed DLPack" route runs. Raises
        ``FixError`` when torch has no exchange API, or no read-only one (``read_only``:
        ``torch._C._const_dlpack_exchange_api``, torch 2.14+)."""
        if not self.torch_api:
            raise FixError("this torch has no __dlpack_c_exchange_api__")
        base = self.torch_api
        if read_only:
            import torch

            const_api = getattr(torch._C, "_const_dlpack_exchange_api", None)
            if const_api is None:
                raise FixError("this torch has no read-only DLPack exchange table "
                               "(torch._C._const_dlpack_exchange_api)")
            base = _PyCapsule_GetPointer(const_api(), b"dlpack_exchange_api") or 0
        return int(self._lib.fixes_dlpack_api_patched(base, int(bool(read_only))))

    @contextlib.contextmanager
    def managed_export_patched(self):
        """For a ``with`` block: torch's own ``DLPackExchangeAPI`` (the table
        ``torch.Tensor.__dlpack_c_exchange_api__`` points to) has the DLPack series'
        ``managed_tensor_from_py_object_no_sync`` in its slot
        (``TorchDLPackExchangeAPI::ManagedTensorFromPyObjectNoSync``, cut out of the
        patched ``Module.cpp``); the slot is restored on exit. In place, because a consumer
        such as tvm-ffi keeps the table's address from its first call and reads the slot at
        every call: its own call path then runs the series' function. Raises ``FixError``
        when torch has no exchange API."""
        if not self.torch_api:
            raise FixError("this torch has no __dlpack_c_exchange_api__")
        slot = ctypes.c_void_p.from_address(
            self.torch_api + int(self._lib.patched_dlpack_managed_offset()))
        before = slot.value
        slot.value = int(self._ffi.cast("uintptr_t", self._lib.patched_dlpack_managed_slot(0)))
        try:
            yield
        finally:
            slot.value = before

    def dltensor(self, api: int, obj) -> DLTensorFields:
        """One ``dltensor_from_py_object_no_sync(obj, &out)`` through ``api`` (torch's
        address, ``torch_api``, or one from ``dlpack_api``); the filled fields.

        Raises ``FixError`` with the Python exception's type and text when the call
        fails (the exception itself is cleared), e.g. ``"TypeError: ..."``."""
        out = self._ffi.new("DLTensor*")
        if self._lib.fixes_dltensor_once(api, id(obj), out) != 0:
            raise FixError(self._error())
        n = out.ndim
        return DLTensorFields(
            data=int(self._ffi.cast("uintptr_t", out.data)),
            device=(int(out.device.device_type), out.device.device_id),
            ndim=n, dtype=(out.dtype.code, out.dtype.bits, out.dtype.lanes),
            shape=tuple(out.shape[i] for i in range(n)),
            strides=tuple(out.strides[i] for i in range(n)) if out.strides else None,
            byte_offset=out.byte_offset)
