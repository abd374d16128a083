# bridge.TensorView and the four view functions: C (_bridge_view.h), made here once at
# import with their docstrings, each given by the name it documents; the cold paths
# they call back by name (choosing a path, the privateuse1 device's name) are Cython.

cdef bytes _TENSOR_VIEW_DOC = b"""Metadata of a strided tensor, read through one handle source.

Attributes
----------
obj : torch.Tensor
    The tensor; the view holds a strong reference to the tensor *object*, not to its
    storage as it was: ``ptr`` stays valid while nothing changes the tensor's storage
    (``set_``, ``resize_``, ``.data =``, ``swap_tensors``, ``share_memory_`` and
    sending it to another process can; README.md lists them).
ptr : int
    Address of the first element, storage offset included (``t.data_ptr()``). On
    builds with a GIL, kept by the view and returned again by a later view of the same
    address made from it (as ``shape``); without a GIL each read makes a new int.
shape : tuple of int
    Sizes in elements (``tuple(t.shape)``); built on first access, then kept (and
    returned again by a later view of the same sizes and strides, on builds with a GIL).
strides : tuple of int
    Strides in elements, not bytes (``t.stride()``); built and kept as ``shape``.
ndim : int
    Number of dimensions.
dtype : torch.dtype
    Element type (from ``aoti_torch_get_dtype``'s c10::ScalarType code).
dtype_code : int
    That code, as the stable ABI reports it.
itemsize : int
    Bytes per element (``t.element_size()``).
device_type : str
    ``"cpu"``, ``"cuda"``, ... (``t.device.type``).
device_index : int
    Device ordinal; -1 for CPU tensors, as torch reports it.
path : str
    ``"owned"``, ``"borrow"`` or ``"fallback"``: the source that made the view.

Views are made by ``bridge.view`` and its per-path variants, never directly
(``TensorView()`` raises TypeError). The sizes and strides are copied at creation:
resizing the tensor afterwards does not change the view (nor does it keep ``ptr``
valid, since resize may reallocate). A C type (``bridge/_bridge_view.h``): the six
attributes a reader asks for most (``ptr, shape, strides, dtype, device_type,
device_index``) are answered before CPython's generic attribute look-up. A freed view
is kept for reuse (builds with a GIL), its shape and strides tuples and its ptr int with
it: immutable, they are returned again only by a view whose sizes and strides (address)
have the same values.
"""

# Keyed by the getset entry each documents (_bridge_view.h checks that every entry has
# one and no key is left over).
cdef dict _ATTRIBUTE_DOCS = {
    "obj": b"The tensor (``torch.Tensor``); the view keeps it alive.",
    "ptr": b"Address of the first element, storage offset included (int; ``t.data_ptr()``); "
           b"with a GIL, a later view of the same address may return the same int.",
    "shape": b"Sizes in elements (tuple of int; ``tuple(t.shape)``), built on first access and "
             b"kept; a later view of the same sizes and strides may return the same tuple.",
    "strides": b"Strides in elements, not bytes (tuple of int; ``t.stride()``), built on first "
               b"access and kept, as ``shape``.",
    "ndim": b"Number of dimensions (int; ``t.dim()``, from ``aoti_torch_get_dim``).",
    "dtype": b"Element type (``torch.dtype``), looked up from ``dtype_code``.",
    "dtype_code": b"The element type's ``c10::ScalarType`` code (int), as "
                  b"``aoti_torch_get_dtype`` reports it: what a C consumer compares with "
                  b"``aoti_torch_dtype_*()``.",
    "itemsize": b"Bytes per element (int; ``t.element_size()``).",
    "device_type": b"Device type name (str; ``t.device.type``: ``'cpu'``, ``'cuda'``, ...).",
    "device_index": b"Device ordinal (int; ``t.device.index``), -1 where torch has none (CPU).",
    "path": b"The handle source that made the view (str): ``'owned'``, ``'borrow'`` or "
            b"``'fallback'``.",
}

cdef bytes _VIEW_DOC = b"""view(obj)
--

Metadata view of a dense strided tensor, through the path chosen by ``set_path``.

Parameters
----------
obj : torch.Tensor
    A tensor, or an instance of a subclass, with strided layout and storage.

Returns
-------
TensorView
    ``ptr``, ``shape``, ``strides`` (elements), ``dtype``, ``itemsize`` (bytes),
    ``device_type``, ``device_index``, ``obj`` and ``path``; it keeps ``obj`` alive.

Raises
------
TypeError
    ``obj``'s real type does not derive from ``torch.Tensor``.
BufferError
    The tensor has no pointer + strides description: sparse or other non-strided
    layouts, meta / fake tensors, wrapper tensors without storage, conjugate or
    negative views, quantized or sub-byte dtypes, tensors with elements whose
    storage holds no memory (freed or resized to zero; functionalized).
bridge.PathUnavailableError
    No path works on this torch (``bridge.available_paths()`` says why).
RuntimeError
    The bridge is being re-resolved (``_select._resolve_again``, tests only).
"""
cdef bytes _VIEW_OWNED_DOC = b"""view_owned(obj)
--

``view`` through torch's owned shim (``torch_tensor_from_pyobject``), whatever
path is chosen; raises ``PathUnavailableError`` where this torch lacks it."""
cdef bytes _VIEW_BORROW_DOC = b"""view_borrow(obj)
--

``view`` through ``torch_tensor_borrow_from_pyobject`` (libtorch's, else
``shim_ext``'s), whatever path is chosen; raises ``PathUnavailableError`` without it."""
cdef bytes _VIEW_FALLBACK_DOC = b"""view_fallback(obj)
--

``view`` through the proven ``THPVariable`` offset, whatever path is chosen;
raises ``PathUnavailableError`` where the offset check failed."""

# The docstrings are this module's constants (cdef: nothing can rebind them), so their
# buffers live as long as the type and the functions.
TensorView = bridge_view_type_ready(_TENSOR_VIEW_DOC, _ATTRIBUTE_DOCS)
view = bridge_function(b"view", _VIEW_DOC, __name__)
view_owned = bridge_function(b"view_owned", _VIEW_OWNED_DOC, __name__)
view_borrow = bridge_function(b"view_borrow", _VIEW_BORROW_DOC, __name__)
view_fallback = bridge_function(b"view_fallback", _VIEW_FALLBACK_DOC, __name__)


def _untraced(fn, *args):
    """``fn(*args)`` with TorchDynamo's frame evaluation off: the Python-level resolution
    (symbol lookups, probe tensors made under ``_DisableTorchDispatch``) must run as plain
    Python even when the first view happens inside ``torch.compile``, where dynamo would
    otherwise trace into it (and fail on the probes: "you set no_dispatch() before calling
    into this function"). A C function, so dynamo never traces this call itself; without
    ``torch._dynamo`` imported nothing can be compiling and ``fn`` is called as is."""
    import sys
    dynamo = sys.modules.get("torch._dynamo")
    disable = getattr(dynamo, "disable", None)
    if disable is None:
        return fn(*args)
    return disable(fn, recursive=True)(*args)


cdef int _select_missing() except -1:
    raise RuntimeError("bridge._select has not installed its callables: import bridge "
                       "(the package), not bridge._bridge alone")


cdef int _choose "bridge_cold_choose"() except -1:
    """``view``'s cold branch: no path is chosen yet. Runs Python code (bridge._select),
    so another thread may un-choose meanwhile."""
    cdef int path
    if _ensure_active is None:
        _select_missing()
    _untraced(_ensure_active)
    path = bridge_active_path()
    if path < 0:
        raise _unavailable_error("the path was un-chosen while choosing it (a concurrent "
                                 "re-resolution); try again")
    return path


cdef int _require "bridge_cold_require"(int path) except -1:
    if not _installed()[PATHS[path]]:
        if _require_path is None:
            _select_missing()
        _untraced(_require_path, PATHS[path])
    return 0


# --- device names ------------------------------------------------------------------------
# What is read once and cached, and why each may be (the tables in ``Installed``):
# - symbols, the fallback's offset proof, torch.Tensor / Parameter, the Python-key getter:
#   immutable for the process (torch's libraries are never unloaded, THPVariable's layout
#   and torch's C types are fixed once torch is imported);
# - dtype codes and torch.dtype objects, layout codes: immutable (c10's enums, compiled
#   in; torch registers no dtype or layout at run time);
# - device type names: immutable (c10::DeviceType's names), except privateuse1's, which
#   ``torch.utils.rename_privateuse1_backend`` changes after torch is imported (out-of-tree
#   accelerator packages rename it on import). torch allows one rename, from c10's default
#   ("privateuseone") to the backend's name, and refuses any other afterwards, so the name
#   is read from torch (``torch._C._get_privateuse1_backend_name``) whenever a view
#   reports it while it is still c10's default, and kept for good once it differs:
#   every view of such a tensor reports torch's current name, and after the rename no
#   read is needed (the cache is keyed on that one possible change).
cdef object _privateuse1_name "bridge_cold_privateuse1_name"(const Installed* st):
    cdef PyObject* kept = bridge_load_obj(&bridge_privateuse1_final)
    if kept != NULL:
        return <object>kept
    import sys
    name = sys.modules["torch"]._C._get_privateuse1_backend_name()
    # Any name but c10's default is final (torch refuses a second rename), whether the
    # rename came before the table was built or after.
    if name != "privateuseone":
        bridge_store_obj(&bridge_privateuse1_final, _keep(name))
    return name


def _device_name(int code):
    """The name a view reports for device type ``code`` (torch's own name; privateuse1's
    as torch names it now), or None for a code the bridge does not know."""
    return bridge_device_name(bridge_installed_state(), code)


def _device_names():
    """``{code: name}`` for every device type code the installed table knows."""
    cdef const Installed* st = bridge_installed_state()
    return {code: bridge_device_name(st, code) for code in range(NDEVICES)
            if st.t.device_known[code]}

