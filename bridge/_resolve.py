"""Symbol resolution: find each path's functions in what ``import torch`` loaded.

Presence decides, never the version string. Symbols are looked up in the torch
libraries already in the process, found by the C core's one search
(``torch_borrow/libraries.h``, consumer.h's too, through ``_bridge._TorchLibraries``):
``dlopen(RTLD_NOLOAD)``, so nothing is loaded twice and nothing enters the global
symbol namespace (cuda.core instead reloads ``torch._C`` with ``RTLD_GLOBAL``). The
borrow function is looked up in libtorch first, so an upstream implementation wins over
``shim_ext``'s prototype without a code change.

The fallback's offset is proven, not assumed: the 8 bytes at
``id(t) + sizeof(PyObject)`` must equal ``t._cdata`` (the TensorImpl address) for
two fresh tensors, and must lie inside ``torch._C.TensorBase.__basicsize__``, which
is checked before any byte is read.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import warnings
from dataclasses import dataclass, field
from typing import NamedTuple

from bridge import _bridge

#: ``aoti_torch_get_*`` functions every path reads through (torch/csrc/inductor/
#: aoti_torch/c/shim.h), in their order: ``torch_borrow/reader.h``'s
#: ``TORCH_BORROW_GETTER_LIST``, the one list of their names (the layout first, so that
#: sparse tensors are refused before their data pointer is asked for; the storage offset
#: and size for ``torch_borrow_check``'s proofs), as the compiled module reads it.
GETTERS = _bridge.GETTERS
OWNED = "torch_tensor_from_pyobject"
DELETE = "aoti_torch_delete_tensor_object"
BORROW = "torch_tensor_borrow_from_pyobject"
#: Flag getters without which a metadata reader returns wrong values for lazy
#: conj()/neg views; like BORROW, prototyped by shim_ext until libtorch exports them.
IS_CONJ = "torch_is_conj"
IS_NEG = "torch_is_neg"
#: shim_ext's own check, in no patch: is a tensor's metadata plain C++ state? The borrow's
#: refusal rule, which the bridge makes on the owned and pointer-trick paths through it;
#: without it the pointer trick is not offered (nothing else can tell a tensor whose
#: getters run Python).
CUSTOM_METADATA = "torch_borrow_custom_metadata"
#: Optional: the per-thread error message (torch 2.13+).
WHAT = "torch_exception_get_what_without_backtrace"
#: torch's shared libraries in torch/lib, in lookup order (``torch_borrow/libraries.h``):
#: libtorch_cpu exports the stable C ABI; ``torch._C``'s own handle follows them.
LIBRARIES = _bridge.LIBRARIES
#: Names of the ``aoti_torch_layout_<name>`` codes (the device types' are
#: ``_bridge.STABLE_DEVICES``, from ``torch_borrow/tables.h``).
LAYOUTS = ("strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr",
           "sparse_bsc", "_mkldnn", "jagged")
#: Fault-injection names understood by ``resolve(hide=...)`` besides symbol names.
HIDE_TORCH = "<torch>"
HIDE_SHIM_EXT = "<shim_ext>"
HIDE_FALLBACK_CHECK = "<fallback-offset>"
#: Hides torch's c10::DeviceType enum: the device table falls back to the
#: ``aoti_torch_device_type_*`` codes alone.
HIDE_DEVICE_ENUM = "<device-type-enum>"


class PathInfo(NamedTuple):
    """Availability of one path.

    ``available``: whether ``bridge.view`` can use it; ``origin``: where its handle
    comes from (the library that exports the function, or the proven offset);
    ``reason``: why it is unavailable (None when available).
    """

    available: bool
    origin: str | None
    reason: str | None


@dataclass(frozen=True)
class Symbol:
    """A resolved function: its name, address (int) and the library file it came from."""

    name: str
    address: int
    origin: str


@dataclass
class Resolution:
    """What ``resolve`` found: symbols, per-path availability and the fallback proof."""

    torch_version: str | None
    symbols: dict[str, Symbol] = field(default_factory=dict)
    paths: dict[str, PathInfo] = field(default_factory=dict)
    fallback_check: str = ""
    tensor_type: object = None
    final: bool = True  # False when torch was not imported yet: resolve again later
    #: The torch version shim_ext._borrow was compiled against, where it loads (None
    #: where it does not); when it differs from ``torch_version`` the borrow is stale.
    shim_ext_built_for: str | None = None

    @property
    def stale_shim(self) -> bool:
        """shim_ext loads but was built for another torch, so its borrow is refused."""
        return (self.shim_ext_built_for is not None and self.torch_version is not None
                and self.shim_ext_built_for != self.torch_version)


class UnsettledProbe(RuntimeError):
    """A probe tensor came back wrapped by a mode or a transform the set-up could not turn
    off: nothing learnt from it may be kept for the process."""


@contextlib.contextmanager
def plain_torch(torch):
    """Run the set-up as torch's C++ code alone would: no ``__torch_function__`` (modes,
    subclasses), no ``__torch_dispatch__`` (modes, ``FakeTensorMode``, subclasses), no
    functorch transform (``vmap``, ``grad``, ``torch.func.functionalize``) and no
    functionalization (``torch.compile``'s AOT tracing): ``torch_borrow/tables.h``'s
    guards, the ones consumer.h's set-up enters (``_bridge._guards_enter``).

    A first use may happen inside any of them; what the set-up learns there (which
    handle function accepts a plain tensor, its dtype codes, the fallback's offset) is
    kept for the process, so none of them may answer for a probe or run user code.
    Every guard is a C++ thread-local switch, restored on exit; a guard this torch lacks
    is skipped (``_plain_tensor`` still refuses a probe it would have caught)."""
    from bridge import _bridge

    entered = _bridge._guards_enter(torch)
    try:
        yield
    finally:
        _bridge._guards_exit(entered)


def _plain_tensor(torch, t):
    """``t`` if it is a plain ``torch.Tensor`` with none of ``_bridge.TRANSFORM_KEYS``
    (``torch_borrow/tables.h``); raises ``UnsettledProbe`` otherwise
    (``torch._C._dispatch_keys``: C++ state, no Python)."""
    from bridge import _bridge

    if type(t) is not torch.Tensor:
        raise UnsettledProbe(f"a probe came back as {type(t).__qualname__}, not torch.Tensor")
    c = torch._C
    keys = c._dispatch_keys(t)
    for name in _bridge.TRANSFORM_KEYS:
        key = getattr(c.DispatchKey, name, None)
        if key is not None and keys.has(key):
            raise UnsettledProbe(f"a probe came back with torch's {name} dispatch key")
    return t


def torch_module(hide=frozenset()):
    """The fully imported ``torch`` module, or None. Never imports it."""
    torch = None if HIDE_TORCH in hide else sys.modules.get("torch")
    if torch is None or not hasattr(torch, "Tensor") or not hasattr(torch, "_C"):
        return None
    return torch


def _loaded_libraries(torch):
    """torch's libraries already loaded (``_bridge._TorchLibraries``: the C core's one
    search, in LIBRARIES order, then ``torch._C``'s own handle, whose look-up searches
    every library it depends on). POSIX only (``RTLD_NOLOAD``); elsewhere it is empty
    and every path says so."""
    return _bridge._TorchLibraries(torch)


def _lookup(name, libraries, hide):
    if name in hide:
        return None
    found = libraries.find(name)
    return None if found is None else Symbol(name, *found)


def _lookup_prototype(name, libraries, hide):
    """A function shim_ext prototypes, found by ``torch_borrow/tables.h``'s rule, the one
    consumer.h follows too (``_bridge._find_prototyped``): libtorch's own export wins,
    else shim_ext's, whose ``load()`` refuses a ``_borrow`` built for another torch (its
    ``THPVariable`` layout is that torch's; its message gives the rebuild command) and
    registers ``_borrow``'s implementation with ``_entry``, the shape the patches give
    libtorch and libtorch_python.

    Returns ``(Symbol or None, why it is missing)``.
    """
    from bridge import _bridge

    hidden = HIDE_SHIM_EXT in hide or name in hide
    address, at, why = _bridge._find_prototyped(
        name, libraries.handles, skip_torch=name in hide,
        skip_prototype=hidden)
    if address is None:
        return None, "shim_ext is hidden (fault injection)" if hidden else why
    if at >= 0:
        return Symbol(name, address, libraries.origins[at]), None
    import shim_ext

    module = shim_ext.load()[-1 - at]  # loaded already: the look-up found it there
    return Symbol(name, address, "shim_ext/" + os.path.basename(module.__file__)), None


def find_symbol(torch, name: str) -> Symbol | None:
    """Find the function ``name`` in what ``import torch`` loaded, as the bridge does.

    The C core's one library search (``torch_borrow/libraries.h``, consumer.h's too):
    torch's libraries in ``LIBRARIES`` order (from ``torch/lib``), then ``torch._C``'s
    own handle, whose look-up searches every library it depends on; each opened with
    ``dlopen(RTLD_NOLOAD)``, so nothing is loaded and nothing enters the global
    namespace. ``torch`` is the imported module. Returns a
    ``Symbol`` (name, address as an int, the library file that exports it), or None
    where no loaded torch library exports ``name`` (or off POSIX, where there is no
    ``RTLD_NOLOAD``). Never raises for a missing symbol; calls nothing it finds.
    """
    return _lookup(name, _loaded_libraries(torch), frozenset())


def find_prototyped(torch, name: str) -> tuple[Symbol | None, str | None]:
    """Find a function shim_ext prototypes (``torch_tensor_borrow_from_pyobject``,
    ``torch_is_conj``, ``torch_is_neg``, ``torch_borrow_custom_metadata``,
    ``torch_borrow_direct_from_pyobject``) by ``torch_borrow/tables.h``'s rule, the one
    consumer.h follows: libtorch's own export first (``find_symbol``'s libraries), else
    shim_ext's, only once ``shim_ext.load()`` accepted it (built for the running torch)
    and its libraries passed the ABI handshake (``torch_borrow/abi.h``).

    ``torch`` is the imported module. Returns ``(Symbol, None)``, or ``(None, why)``
    with the reason it is missing (shim_ext absent, stale, of another ABI, or without
    ``name``). May import shim_ext; needs the GIL; leaves no exception set.
    """
    return _lookup_prototype(name, _loaded_libraries(torch), frozenset())


def prove_fallback_offset(torch, offset, hide=frozenset()):
    """Check that ``THPVariable::cdata`` sits at ``offset`` in this torch build.

    Returns ``(ok, description)``. Reads 8 bytes inside two fresh tensors only after
    checking ``offset + 8 <= torch._C.TensorBase.__basicsize__``; never dereferences
    what it reads. Works for torch 2.10+, where ``cdata`` is a plain ``at::Tensor``
    (one ``intrusive_ptr<TensorImpl>``); on 1.9-2.9 a ``MaybeOwned`` flag sits there and
    the check fails, as it must.
    """
    if HIDE_FALLBACK_CHECK in hide:
        return False, "offset check failed (fault injection)"
    base = getattr(torch._C, "TensorBase", None) or getattr(torch._C, "_TensorBase", None)
    if base is None:
        return False, "torch._C.TensorBase not found"
    size = base.__basicsize__
    if offset + 8 > size:
        return False, f"offset {offset} + 8 lies outside THPVariable ({size} bytes)"
    with plain_torch(torch):
        probes = [_plain_tensor(torch, torch.empty(0)),
                  _plain_tensor(torch, torch.zeros(3, dtype=torch.float64))]
    for t in probes:
        cdata = getattr(t, "_cdata", None)
        if not isinstance(cdata, int) or cdata == 0:
            return False, "Tensor._cdata is not a TensorImpl address on this torch"
        word = ctypes.c_uint64.from_address(id(t) + offset).value
        if word != cdata:
            return False, (f"the word at offset {offset} ({word:#x}) is not the TensorImpl "
                           f"address ({cdata:#x}): THPVariable's layout differs")
    return True, (f"THPVariable::cdata at offset {offset} holds the TensorImpl* "
                  f"(= Tensor._cdata), inside the {size}-byte instance")


_FROM_PYOBJECT = ctypes.PYFUNCTYPE(  # PYFUNCTYPE: the call keeps the GIL, which both need
    ctypes.c_int32, ctypes.py_object, ctypes.POINTER(ctypes.c_void_p))
_DELETE = ctypes.PYFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)


def prove_handle(torch, sym, delete=None):
    """Check that ``sym`` (a PyObject -> AtenTensorHandle function) returns handles to the
    probe's own tensor: the first word of an ``at::Tensor`` is its TensorImpl address,
    which Python exposes as ``Tensor._cdata``. Catches a shim built against another
    layout before any view trusts it. ``delete`` frees an owned handle.

    Returns None when the proof holds, else the reason.
    """
    with plain_torch(torch):
        probe = _plain_tensor(torch, torch.zeros(2))
    handle = ctypes.c_void_p()
    if _FROM_PYOBJECT(sym.address)(probe, ctypes.byref(handle)) != 0 or not handle.value:
        return f"{sym.name} failed on a plain tensor"
    try:
        word = ctypes.c_uint64.from_address(handle.value).value
    finally:
        if delete is not None:
            _DELETE(delete.address)(handle.value)
    if word != probe._cdata:
        return (f"{sym.name} returned a handle whose tensor is not the probe's "
                f"({word:#x} != TensorImpl {probe._cdata:#x})")
    return None


def shim_ext_built_for() -> str | None:
    """The torch version shim_ext._borrow was compiled against (``shim_ext.built_for``),
    or None where shim_ext is not built or does not import."""
    try:
        import shim_ext
        from shim_ext import _borrow
    except ImportError:
        return None
    return shim_ext.built_for(_borrow)


def resolve(pyobject_size, hide=frozenset()):
    """Resolve every path's symbols in the running process.

    ``pyobject_size`` is ``sizeof(PyObject)`` as the bridge was compiled (the fallback's
    offset); ``hide`` names symbols (or ``HIDE_*`` tokens) to treat as missing, for fault
    injection in tests. Returns a ``Resolution``; never raises for a missing symbol.
    """
    from bridge import _bridge

    torch = torch_module(hide)
    if torch is None:
        reason = "torch is not imported yet: `import torch` before using the bridge"
        return Resolution(None, paths={p: PathInfo(False, None, reason)
                                       for p in _bridge.PATHS},
                          final=False)
    res = Resolution(torch.__version__, tensor_type=torch.Tensor,
                     shim_ext_built_for=shim_ext_built_for())
    libs = _loaded_libraries(torch)
    if not libs:
        reason = "none of torch's libraries is loaded in this process"
        res.paths = {p: PathInfo(False, None, reason) for p in _bridge.PATHS}
        return res
    for name in (*GETTERS, OWNED, DELETE, WHAT):
        sym = _lookup(name, libs, hide)
        if sym is not None:
            res.symbols[name] = sym
    missing = [g for g in GETTERS if g not in res.symbols]
    getters_reason = (f"torch {torch.__version__} exports no {', '.join(missing)}"
                      if missing else None)

    def info(origin, reason):
        reason = getters_reason or reason
        return PathInfo(reason is None, origin if reason is None else None, reason)

    owned = [n for n in (OWNED, DELETE) if n not in res.symbols]
    why = f"torch {torch.__version__} exports no {' or '.join(owned)}" if owned else None
    if not owned and not getters_reason:
        why = prove_handle(torch, res.symbols[OWNED], res.symbols[DELETE])
    res.paths["owned"] = info(None if why else res.symbols[OWNED].origin, why)
    if why:
        res.symbols.pop(OWNED, None)

    for name in (IS_CONJ, IS_NEG):
        sym, _ = _lookup_prototype(name, libs, hide)
        if sym is not None:  # else the bridge asks torch.Tensor.is_conj() / .is_neg()
            res.symbols[name] = sym
    check, check_why = _lookup_prototype(CUSTOM_METADATA, libs, hide)
    if check is not None:
        res.symbols[CUSTOM_METADATA] = check
    borrow, why = _lookup_prototype(BORROW, libs, hide)
    if borrow is None:
        why = f"no {BORROW} in libtorch, and {why}"
    elif not getters_reason:
        failed = prove_handle(torch, borrow)
        why = f"{borrow.origin}: {failed}" if failed else None
    if borrow is not None and why is None:
        res.symbols[BORROW] = borrow
    res.paths["borrow"] = info(None if why else borrow.origin, why)

    ok, res.fallback_check = prove_fallback_offset(torch, pyobject_size, hide)
    why = None if ok else res.fallback_check
    if ok and check is None:
        why = (f"the pointer trick needs shim_ext's {CUSTOM_METADATA} to refuse tensors whose "
               f"getters may run Python, and {check_why}")
    res.paths["fallback"] = info(f"THPVariable offset {pyobject_size} (proven)" if why is None
                                 else None, why)
    return res


def _code(sym):
    return ctypes.CFUNCTYPE(ctypes.c_int32)(sym.address)()


class Tables(NamedTuple):
    """The code tables the hot path indexes, in ``_bridge._install_tables``' argument
    order (``_install_tables(*tables)``)."""

    #: c10::ScalarType code -> (torch.dtype, itemsize in bytes), for every dtype torch
    #: exposes and can allocate.
    dtypes: dict
    #: code -> why tensors of that dtype get no view (quantized, sub-byte).
    refused: dict
    #: c10::DeviceType code -> torch's name (``device_types``).
    device_names: dict
    #: layout code -> name (``aoti_torch_layout_*``).
    layout_names: dict
    #: the strided layout's code, -1 where torch exports no ``aoti_torch_layout_strided``.
    layout_strided: int
    #: the meta device's code, -1 where torch names none.
    device_meta: int
    #: privateuse1's code, -1 where torch names none.
    device_privateuse1: int


def code_tables(torch, res, dtype_code_of, hide=frozenset()) -> Tables:
    """Build the code tables the hot path indexes (``Tables``).

    ``dtype_code_of(tensor)`` reads a tensor's c10::ScalarType code through an installed
    handle source. Which dtypes get views, with which itemsize, and the words of a
    refused one (quantized: a scale and zero point; sub-byte: no whole-byte element)
    are ``torch_borrow/tables.h``'s rule, which consumer.h applies too
    (``_bridge._dtype_table``).
    """
    from bridge import _bridge

    libs = _loaded_libraries(torch)
    with plain_torch(torch):
        dtypes, refused = _bridge._dtype_table(
            torch, lambda t: _plain_tensor(torch, t), dtype_code_of)
    devices, privateuse1 = device_types(torch, libs, hide)
    layouts = {}
    for name in LAYOUTS:
        sym = _lookup(f"aoti_torch_layout_{name}", libs, hide)
        if sym is not None:
            layouts[_code(sym)] = name
    strided = {v: k for k, v in layouts.items()}.get("strided", -1)
    meta = {v: k for k, v in devices.items()}.get("meta", -1)
    return Tables(dtypes, refused, devices, layouts, strided, meta, privateuse1)


def device_types(torch, libs=None, hide=frozenset()):
    """``({code: name}, privateuse1's code or -1)`` for every device type torch can
    describe: each member of
    c10::DeviceType as torch binds it (``torch._C._autograd.DeviceType``, 2.13-2.15 and
    earlier), named the way ``tensor.device.type`` names it (``torch.device(name).type``,
    c10's lower-case name where torch.device does not parse it, e.g. "metal"), and the
    ``aoti_torch_device_type_*`` codes of the stable ABI, which must agree with it.
    privateuse1 is listed with the name torch gives it now (c10's default "privateuseone"
    until renamed); a view reports torch's current name (``_bridge._device_name``), since
    ``torch.utils.rename_privateuse1_backend`` may rename it after the table is built."""
    from bridge import _bridge

    libs = _loaded_libraries(torch) if libs is None else libs
    devices, privateuse1 = {}, -1
    enum = {} if HIDE_DEVICE_ENUM in hide else _bridge._device_enum(torch)
    for value, lower in enum.items():
        if lower == "privateuse1":
            name, privateuse1 = torch._C._get_privateuse1_backend_name(), value
        else:
            try:
                with warnings.catch_warnings():  # "'mkldnn' is no longer used as device type"
                    warnings.simplefilter("ignore")
                    name = torch.device(lower).type
            except (RuntimeError, ValueError):
                name = lower  # c10::DeviceTypeName(type, lower_case=true)
        devices[value] = name
    for name in _bridge.STABLE_DEVICES:
        sym = _lookup(f"aoti_torch_device_type_{name}", libs, hide)
        if sym is None:
            continue
        code = _code(sym)
        if name == "privateuse1":
            name = torch._C._get_privateuse1_backend_name()
            if privateuse1 not in (-1, code):
                raise RuntimeError(f"aoti_torch_device_type_privateuse1() is {code}, "
                                   f"torch._C._autograd.DeviceType.PrivateUse1 {privateuse1}")
            privateuse1 = code
        if devices.setdefault(code, name) != name:
            raise RuntimeError(f"aoti_torch_device_type_{name}() is {code}, which "
                               f"torch._C._autograd.DeviceType names {devices[code]!r}")
    return devices, privateuse1
