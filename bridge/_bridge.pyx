# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The bridge's hot path: tensor -> TensorView through one of three handle sources.

Nothing here imports torch or looks a symbol up: ``bridge._select`` resolves the
symbols (``bridge._resolve``) and installs their addresses with ``_install``. The
module holds only C state, so a ``view`` call does no Python-level lookup.

Handle sources (``AtenTensorHandle`` is an ``at::Tensor*``, torch/csrc/inductor/
aoti_torch/c/shim.h):

- owned: ``torch_tensor_from_pyobject`` (torch 2.14+, new reference), deleted
  with ``aoti_torch_delete_tensor_object`` once the metadata is read;
- borrow: ``torch_tensor_borrow_from_pyobject`` (libtorch's, or ``shim_ext``'s
  prototype), borrowed reference, nothing to delete;
- fallback: ``(char*)obj + sizeof(PyObject)``, the address of ``THPVariable::cdata``
  on torch 2.10+, installed only after ``bridge._resolve`` proved the offset for
  the running torch.

All three read the metadata with the same seven ``aoti_torch_get_*`` getters
(and the storage offset, which proves the data pointer's base exists), behind the
same checks, so their views are identical field by field.
"""

cimport cython
from cpython.long cimport PyLong_FromVoidPtr
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.exc cimport PyErr_Fetch, PyErr_NormalizeException, PyErr_Occurred
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_XDECREF
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint64_t, uintptr_t
from libc.string cimport memcpy
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec


cdef extern from "Python.h":
    PyTypeObject* Py_TYPE(object o)
    bint PyType_IsSubtype(PyTypeObject* a, PyTypeObject* b)
    object PyObject_Vectorcall(object callable, PyObject** args, size_t nargsf, PyObject* kwnames)
    int PyException_SetTraceback(object ex, object tb) except -1


# --- the stable C ABI, as opaque types (no torch header is needed) -----------------------
cdef struct AtenTensorOpaque
ctypedef AtenTensorOpaque* AtenTensorHandle
ctypedef int32_t AOTITorchError

ctypedef AOTITorchError (*from_pyobject_fn)(void*, AtenTensorHandle*) noexcept nogil
ctypedef AOTITorchError (*delete_fn)(AtenTensorHandle) noexcept nogil
ctypedef AOTITorchError (*get_ptr_fn)(AtenTensorHandle, void**) noexcept nogil
ctypedef AOTITorchError (*get_i64_fn)(AtenTensorHandle, int64_t*) noexcept nogil
ctypedef AOTITorchError (*get_i64p_fn)(AtenTensorHandle, int64_t**) noexcept nogil
ctypedef AOTITorchError (*get_i32_fn)(AtenTensorHandle, int32_t*) noexcept nogil
ctypedef AOTITorchError (*get_flag_fn)(AtenTensorHandle, uint8_t*) noexcept nogil  # bool*
ctypedef const char* (*what_fn)() noexcept nogil

cdef struct Getters:
    get_i32_fn layout
    get_ptr_fn data_ptr
    get_i64_fn storage_offset  # with data_ptr: proof that the storage holds memory
    get_i64_fn dim
    get_i64p_fn sizes
    get_i64p_fn strides
    get_i32_fn dtype
    get_i32_fn device_type
    get_i32_fn device_index
    get_flag_fn is_conj       # NULL: ask torch.Tensor.is_conj() at Python level instead
    get_flag_fn is_neg


# --- public constants ---------------------------------------------------------------------
cdef enum:
    # Path codes, in the order of ``PATHS``.
    OWNED = 0
    BORROW = 1
    FALLBACK = 2
    NPATHS = 3
    # Dimensions stored inline in a view; more go to the heap.
    INLINE_DIMS = 8
    # Dtype codes the table covers (c10::ScalarType has fewer than 64 today).
    NCODES = 256
    # Device type codes the table covers (c10::DeviceType has fewer than 32 today).
    NDEVICES = 64

cdef extern from *:
    """
    #if defined(__clang__)
    static const char* bridge_compiler = "clang " __clang_version__;
    #elif defined(__GNUC__)
    static const char* bridge_compiler = "gcc " __VERSION__;
    #else
    static const char* bridge_compiler = "unknown";
    #endif
    """
    const char* bridge_compiler

#: Path names by code (the order of the counters and of ``TensorView.path``).
PATHS = ("owned", "borrow", "fallback")
#: The C compiler that built this module.
COMPILER = bridge_compiler.decode()
#: sizeof(PyObject) of the CPython this module was compiled for: the fallback's offset.
PYOBJECT_SIZE = sizeof(PyObject)
#: Dimensions a view stores without a heap allocation.
INLINE_DIMENSIONS = INLINE_DIMS


# --- C state, filled by _install ------------------------------------------------------------
cdef Getters _g
cdef bint _getters_present = False    # every getter resolved
cdef bint _getters_ok = False         # ... and the tables installed: views may run
cdef from_pyobject_fn _owned_fn = NULL
cdef delete_fn _delete_fn = NULL
cdef from_pyobject_fn _borrow_fn = NULL
cdef what_fn _what_fn = NULL
cdef bint _fallback_ok = False
cdef Py_ssize_t _fallback_offset = sizeof(PyObject)
cdef object _tensor_type = None        # torch.Tensor, kept alive here
cdef object _parameter_type = None     # torch.nn.Parameter, likewise
cdef PyTypeObject* _tensor_tp = NULL
cdef PyTypeObject* _parameter_tp = NULL  # torch.nn.Parameter: a subclass with Tensor's getters
cdef object _default_dispatch = None      # torch.Tensor.__torch_dispatch__ (the disabled impl)
cdef object _is_conj = None            # method descriptors torch.Tensor.is_conj / .is_neg
cdef object _is_neg = None
cdef object _no_torch_function = None  # torch._C.DisableTorchFunction
cdef int32_t _layout_strided = -1
cdef int32_t _device_meta = -1
# Per dtype code: itemsize in bytes, 0 for unknown, -1 for refused.
cdef int8_t _itemsize[NCODES]
# Per device type code: whether the bridge knows its name.
cdef bint _device_known[NDEVICES]
cdef list _dtype_objs = [None] * NCODES
cdef dict _refused_dtypes = {}         # code -> reason
cdef list _device_names = [None] * NDEVICES  # device type code -> "cpu", "cuda", ...
cdef dict _layout_names = {}           # layout code -> "sparse_coo", ...

cdef int _active = -1                  # path used by view(); -1 until chosen
cdef uint64_t _counts[NPATHS]


cdef void* _addr(dict symbols, str name) except? NULL:
    a = symbols.get(name)
    return NULL if a is None else <void*><uintptr_t>a


def _install_symbols(dict symbols, object tensor_type, bint fallback_ok,
                     object no_torch_function=None, object parameter_type=None):
    """Install resolved symbol addresses (``bridge._select`` only).

    ``symbols`` maps a symbol name to its address (int) or None; ``aoti_torch_get_layout``,
    the seven metadata getters and ``aoti_torch_get_storage_offset`` must all be
    present for any path to work;
    ``tensor_type`` is ``torch.Tensor``; ``fallback_ok`` says the offset was proven;
    ``no_torch_function`` is ``torch._C.DisableTorchFunction``; ``parameter_type`` is
    ``torch.nn.Parameter`` (a fast path of the type gate).
    Un-chooses the active path and stops every path until ``_install_tables`` has run:
    a thread that views meanwhile waits for the resolution (``bridge._select``'s lock)
    instead of seeing half-installed tables. Counters are kept.
    """
    global _getters_ok, _getters_present, _owned_fn, _delete_fn, _borrow_fn, _what_fn
    global _fallback_ok, _tensor_type, _tensor_tp, _is_conj, _is_neg, _active, _no_torch_function
    global _parameter_type, _parameter_tp, _default_dispatch

    _getters_ok = False
    _active = -1
    _g.layout = <get_i32_fn>_addr(symbols, "aoti_torch_get_layout")
    _g.data_ptr = <get_ptr_fn>_addr(symbols, "aoti_torch_get_data_ptr")
    _g.storage_offset = <get_i64_fn>_addr(symbols, "aoti_torch_get_storage_offset")
    _g.dim = <get_i64_fn>_addr(symbols, "aoti_torch_get_dim")
    _g.sizes = <get_i64p_fn>_addr(symbols, "aoti_torch_get_sizes")
    _g.strides = <get_i64p_fn>_addr(symbols, "aoti_torch_get_strides")
    _g.dtype = <get_i32_fn>_addr(symbols, "aoti_torch_get_dtype")
    _g.device_type = <get_i32_fn>_addr(symbols, "aoti_torch_get_device_type")
    _g.device_index = <get_i32_fn>_addr(symbols, "aoti_torch_get_device_index")
    _g.is_conj = <get_flag_fn>_addr(symbols, "torch_is_conj")
    _g.is_neg = <get_flag_fn>_addr(symbols, "torch_is_neg")
    if _g.is_conj == NULL or _g.is_neg == NULL:
        _g.is_conj = _g.is_neg = NULL
    _getters_present = (_g.layout != NULL and _g.data_ptr != NULL and _g.dim != NULL
                        and _g.storage_offset != NULL
                        and _g.sizes != NULL and _g.strides != NULL and _g.dtype != NULL
                        and _g.device_type != NULL and _g.device_index != NULL)
    _owned_fn = <from_pyobject_fn>_addr(symbols, "torch_tensor_from_pyobject")
    _delete_fn = <delete_fn>_addr(symbols, "aoti_torch_delete_tensor_object")
    if _delete_fn == NULL:
        _owned_fn = NULL
    _borrow_fn = <from_pyobject_fn>_addr(symbols, "torch_tensor_borrow_from_pyobject")
    _what_fn = <what_fn>_addr(symbols, "torch_exception_get_what_without_backtrace")
    _fallback_ok = fallback_ok
    _tensor_type = tensor_type
    _tensor_tp = NULL if tensor_type is None else <PyTypeObject*>tensor_type
    _parameter_type = parameter_type
    _parameter_tp = NULL if parameter_type is None else <PyTypeObject*>parameter_type
    _default_dispatch = getattr(tensor_type, "__torch_dispatch__", None)
    _is_conj = None if tensor_type is None else tensor_type.is_conj
    _is_neg = None if tensor_type is None else tensor_type.is_neg
    _no_torch_function = no_torch_function


def _install_tables(dict dtypes, dict refused, dict device_names, dict layout_names,
                    int32_t layout_strided, int32_t device_meta):
    """Install the code tables (``bridge._select`` only).

    ``dtypes`` maps a c10::ScalarType code to ``(torch.dtype, itemsize in bytes)``;
    ``refused`` maps a code to the reason its tensors get no view; ``device_names`` and
    ``layout_names`` map codes to names; the last two are the codes of the strided
    layout and of the meta device.
    """
    global _dtype_objs, _refused_dtypes, _device_names, _layout_names
    global _layout_strided, _device_meta, _getters_ok
    cdef int code
    for code in range(NCODES):
        _itemsize[code] = 0
    for code in range(NDEVICES):
        _device_known[code] = False
    _dtype_objs = [None] * NCODES
    for code, (dtype, itemsize) in dtypes.items():
        if 0 <= code < NCODES and 0 < itemsize < 128:
            _dtype_objs[code] = dtype
            _itemsize[code] = itemsize
    _refused_dtypes = dict(refused)
    for code in _refused_dtypes:
        if 0 <= code < NCODES:
            _itemsize[code] = -1
    # New lists, never changed in place: views made before a re-resolution keep theirs.
    _device_names = [None] * NDEVICES
    for code, name in device_names.items():
        if 0 <= code < NDEVICES:
            _device_names[code] = name
            _device_known[code] = True
    _layout_names = dict(layout_names)
    _layout_strided = layout_strided
    _device_meta = device_meta
    _getters_ok = _getters_present


def _installed():
    """Which handle sources are installed: {path name: bool} (diagnostics)."""
    return {"owned": _getters_ok and _owned_fn != NULL,
            "borrow": _getters_ok and _borrow_fn != NULL,
            "fallback": _getters_ok and _fallback_ok}


def _activate(int path):
    """Make ``path`` (a code, index into PATHS) the one ``view`` uses; -1 un-chooses."""
    global _active
    if path != -1 and not _installed()[PATHS[path]]:
        raise RuntimeError(f"path {PATHS[path]!r} is not installed")
    _active = path


def _active_path():
    """The code of the path ``view`` uses, or -1 when none is chosen yet."""
    return _active


# --- errors ---------------------------------------------------------------------------------
cdef object _take_pending_exception():
    """The Python exception a failing call left set (torch ran __torch_dispatch__ code
    that raised), cleared so that we may run Python code again; None if there is none."""
    cdef PyObject* etype = NULL
    cdef PyObject* evalue = NULL
    cdef PyObject* etb = NULL
    if PyErr_Occurred() == NULL:
        return None
    PyErr_Fetch(&etype, &evalue, &etb)
    PyErr_NormalizeException(&etype, &evalue, &etb)
    exc = None if evalue == NULL else <object>evalue
    if exc is not None and etb != NULL:
        PyException_SetTraceback(exc, <object>etb)
    Py_XDECREF(etype)
    Py_XDECREF(evalue)
    Py_XDECREF(etb)
    return exc


cdef tuple _failure():
    """``(message, cause)``: torch's per-thread message, read before anything else can
    overwrite it, and the pending Python exception (or None); the cause's text stands in
    when torch has no message."""
    cdef const char* raw = NULL if _what_fn == NULL else _what_fn()
    what = None if raw == NULL else (<bytes>raw).decode("utf-8", "replace")
    cause = _take_pending_exception()
    if not what:
        what = (repr(cause) if cause is not None else
                "no message (torch_exception_get_what_without_backtrace is not exported "
                "by this torch)" if _what_fn == NULL else "no message")
    return what, cause


cdef int _raise_handle_error(int path) except -1:
    what, cause = _failure()
    name = "torch_tensor_from_pyobject" if path == OWNED else "torch_tensor_borrow_from_pyobject"
    raise BufferError(f"{name} failed: {what}") from cause


cdef int _raise_getter_error(object obj) except -1:
    what, cause = _failure()
    if getattr(obj, "is_nested", False):  # torch's own text says "Please file an issue"
        raise BufferError("a nested tensor has no single pointer + strides description; "
                          "view its components (.unbind()) or a padded copy "
                          f"(.to_padded_tensor(0)) instead [torch: {what}]") from cause
    raise BufferError(f"cannot read the metadata of this {type(obj).__name__}: {what}") from cause


cdef int _raise_not_tensor(object obj) except -1:
    raise TypeError(f"expected a torch.Tensor (or an instance of a subclass), "
                    f"got {type(obj).__module__}.{type(obj).__qualname__}")


# --- the view ---------------------------------------------------------------------------------
@cython.freelist(32)
cdef class TensorView:
    """Metadata of a strided tensor, read through one handle source.

    Attributes
    ----------
    obj : torch.Tensor
        The tensor; the view holds a strong reference to the tensor *object*, not to its
        storage as it was: ``ptr`` stays valid while nothing changes the tensor's storage
        (``set_``, ``resize_``, ``.data =``, ``swap_tensors``, ``share_memory_`` and
        sending it to another process can; README.md lists them).
    ptr : int
        Address of the first element, storage offset included (``t.data_ptr()``).
    shape : tuple of int
        Sizes in elements (``tuple(t.shape)``); built on first access.
    strides : tuple of int
        Strides in elements, not bytes (``t.stride()``); built on first access.
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

    Views are made by ``bridge.view`` and its per-path variants, never directly. The
    sizes and strides are copied at creation: resizing the tensor afterwards does not
    change the view (nor does it keep ``ptr`` valid, since resize may reallocate).
    """

    # No __cinit__ / __dealloc__: a user __dealloc__ makes Cython save and restore the
    # exception state on every deallocation, a third of a view's Python-level cost.
    # Dimensions beyond INLINE_DIMS live in a bytes object the view owns instead.
    cdef readonly object obj
    cdef uintptr_t _ptr
    cdef int64_t _ndim
    cdef int64_t* _sizes            # -> _inline, or into _heap
    cdef int64_t* _strides
    cdef int64_t _inline[2 * INLINE_DIMS]
    cdef object _heap
    cdef int32_t _dtype
    cdef int32_t _device_type
    cdef int32_t _device_index
    cdef int8_t _itemsize
    cdef int _path
    # Copied at creation, like the sizes: a view is a snapshot of one resolution's tables.
    cdef object _dtype_obj
    cdef object _device_name
    cdef object _shape_t
    cdef object _strides_t

    def __init__(self, *args, **kwargs):
        raise TypeError("TensorView is made by bridge.view(tensor), not directly")

    @property
    def ptr(self):
        return PyLong_FromVoidPtr(<void*>self._ptr)

    @property
    def ndim(self):
        return self._ndim

    @property
    def shape(self):
        if self._shape_t is None:
            self._shape_t = tuple([self._sizes[i] for i in range(self._ndim)])
        return self._shape_t

    @property
    def strides(self):
        if self._strides_t is None:
            self._strides_t = tuple([self._strides[i] for i in range(self._ndim)])
        return self._strides_t

    @property
    def dtype(self):
        return self._dtype_obj

    @property
    def dtype_code(self):
        return self._dtype

    @property
    def itemsize(self):
        return self._itemsize

    @property
    def device_type(self):
        return self._device_name

    @property
    def device_index(self):
        return self._device_index

    @property
    def path(self):
        return PATHS[self._path]

    def __repr__(self):
        return (f"TensorView(ptr={self.ptr:#x}, shape={self.shape}, strides={self.strides}, "
                f"dtype={self.dtype}, device='{self.device_type}:{self.device_index}', "
                f"path='{self.path}')")


# --- reading: type gate, then handle + getters straight into the view -------------------
cdef inline bint _is_tensor(object obj) noexcept:
    cdef PyTypeObject* tp = Py_TYPE(obj)
    # The real type, never isinstance(): __class__ can lie, the memory layout cannot.
    return tp == _tensor_tp or (_tensor_tp != NULL and PyType_IsSubtype(tp, _tensor_tp))


cdef inline int _check_type(object obj) except -1:
    """The gate in front of every handle: obj's real type derives from torch.Tensor, and
    no getter of its can run Python code.

    A subclass that overrides ``__torch_dispatch__`` may route ``sizes()``, ``strides()``,
    ``device()`` or ``layout()`` through Python (``_make_subclass(...,
    dispatch_sizes_strides_policy=...)``), and that code may resize or swap the tensor
    between two getters: such tensors are refused before any handle is taken. After this
    gate, nothing but C++ runs until the view is filled.
    """
    cdef PyTypeObject* tp = Py_TYPE(obj)
    if tp == _tensor_tp or tp == _parameter_tp:
        return 0
    if _tensor_tp == NULL or not PyType_IsSubtype(tp, _tensor_tp):
        _raise_not_tensor(obj)
    if getattr(<object>tp, "__torch_dispatch__", None) is not _default_dispatch:
        raise BufferError(f"{(<object>tp).__qualname__} overrides __torch_dispatch__: its "
                          f"metadata is computed in Python and cannot be read safely through "
                          f"a handle; view a plain tensor instead")
    return 0


cdef inline int _read(AtenTensorHandle h, TensorView v, object obj) except -1:
    """The layout, seven metadata getters and the storage offset (and the conj/neg bits)
    through one handle, written straight into ``v``; checks what they return.

    Sizes and strides are copied the moment their pointer is read: the pointer aims into
    the TensorImpl, and nothing may run between the getter and the copy.
    """
    cdef int32_t layout
    cdef int64_t* p
    cdef int64_t offset
    cdef uint8_t flag = 0
    if _g.layout(h, &layout):
        _raise_getter_error(obj)
    if layout != _layout_strided:
        name = _layout_names.get(layout, f"code {layout}")
        raise BufferError(f"a tensor with layout {name} has no pointer + strides description; "
                          f"only strided tensors can be viewed (call .to_dense() first)")
    if (_g.data_ptr(h, <void**>&v._ptr) or _g.storage_offset(h, &offset)
            or _g.dim(h, &v._ndim)):
        _raise_getter_error(obj)
    if v._ndim <= INLINE_DIMS:
        v._sizes = v._inline
    else:
        # A fresh bytes object nobody else sees yet: ours to fill. Not GC-tracked, so
        # allocating it runs no Python code.
        v._heap = PyBytes_FromStringAndSize(NULL, 2 * v._ndim * sizeof(int64_t))
        v._sizes = <int64_t*>PyBytes_AS_STRING(v._heap)
    v._strides = v._sizes + v._ndim
    if _g.sizes(h, &p):
        _raise_getter_error(obj)
    memcpy(v._sizes, p, v._ndim * sizeof(int64_t))
    if _g.strides(h, &p):
        _raise_getter_error(obj)
    memcpy(v._strides, p, v._ndim * sizeof(int64_t))
    if (_g.dtype(h, &v._dtype) or _g.device_type(h, &v._device_type)
            or _g.device_index(h, &v._device_index)):
        _raise_getter_error(obj)
    if _g.is_conj != NULL:
        if _g.is_conj(h, &flag):
            _raise_getter_error(obj)
        if flag:
            _raise_math_bit(True)
        if _g.is_neg(h, &flag):
            _raise_getter_error(obj)
        if flag:
            _raise_math_bit(False)
    if v._dtype < 0 or v._dtype >= NCODES or _itemsize[v._dtype] <= 0:
        _raise_bad_dtype(v._dtype)
    if v._device_type == _device_meta:
        raise BufferError("a meta tensor has no data; only tensors with storage can be viewed")
    if v._device_type < 0 or v._device_type >= NDEVICES or not _device_known[v._device_type]:
        raise BufferError(f"device type code {v._device_type} is unknown to the bridge")
    return _check_data(v._ptr, offset, _itemsize[v._dtype], v._ndim, v._sizes)


cdef inline int _check_data(uintptr_t ptr, int64_t storage_offset, int64_t itemsize,
                            int64_t ndim, const int64_t* sizes) except -1:
    """Refuse a tensor with elements whose storage holds no memory.

    ``aoti_torch_get_data_ptr`` returns ``TensorImpl::data()``: the storage's base plus
    ``itemsize * storage_offset`` bytes, never checking that the base exists, and null
    for a tensor without elements (``data_impl`` in c10/core/TensorImpl.h, 2.13-2.15).
    A freed storage (``untyped_storage().resize_(0)``) or a placeholder one (functional,
    lazy) has a null base, so at a non-zero offset the getter fabricates a small,
    plausible address. The base, ``ptr - storage_offset * itemsize`` in unsigned
    arithmetic (the exact inverse of torch's sum), is the proof. Plain values in, so a
    reader that gets them otherwise (one batched metadata call) makes the same check.
    """
    if ptr != 0 and ptr - <uintptr_t>storage_offset * <uintptr_t>itemsize != 0:
        return 0
    return _refuse_without_memory(ptr, storage_offset, itemsize, ndim, sizes)


cdef int _refuse_without_memory(uintptr_t ptr, int64_t storage_offset, int64_t itemsize,
                                int64_t ndim, const int64_t* sizes) except -1:
    cdef int64_t i
    # No memory is fine only for a tensor without elements (a zero size; a product
    # could overflow, so look for the zero): torch reports its pointer as 0, as we do.
    for i in range(ndim):
        if sizes[i] == 0:
            return 0
    where = (f"data_ptr() reports {ptr:#x}, which is storage offset {storage_offset} x "
             f"{itemsize} bytes past address 0" if ptr else "its data pointer is null")
    raise BufferError(f"the tensor has elements but its storage holds no memory ({where}): "
                      f"the storage was freed or resized to zero (untyped_storage()"
                      f".resize_(0)), or the tensor is a placeholder without data "
                      f"(functionalized, lazy or fake); view it once its storage holds "
                      f"data again (untyped_storage().resize_(nbytes)), or view the real "
                      f"tensor instead")


cdef int _raise_bad_dtype(int32_t code) except -1:
    if 0 <= code < NCODES and code in _refused_dtypes:
        raise BufferError(_refused_dtypes[code])
    raise BufferError(f"dtype code {code} is unknown to the bridge (a dtype newer than the "
                      f"table built at resolution?)")


cdef int _raise_math_bit(bint conj) except -1:
    if conj:
        raise BufferError("the tensor has its conjugate bit set: its memory holds the "
                          "unconjugated values; call .resolve_conj() first")
    raise BufferError("the tensor has its negative bit set: its memory holds the "
                      "negated values; call .resolve_neg() first")


cdef int _check_bits_slow(object obj) except -1:
    """Refuse conjugate and negative views when no torch_is_conj / torch_is_neg exists:
    through torch.Tensor.is_conj / .is_neg (about 100 ns each), with __torch_function__
    disabled (subclasses and modes alike) so that nothing in Python answers for the tensor.
    Runs before any handle exists: it executes Python code."""
    cdef PyObject* args[1]
    args[0] = <PyObject*>obj
    with _no_torch_function():
        conj = PyObject_Vectorcall(_is_conj, args, 1, NULL) is True
        neg = PyObject_Vectorcall(_is_neg, args, 1, NULL) is True
    if conj or neg:
        _raise_math_bit(conj)
    return 0


cdef inline int _acquire_read(object obj, int path, TensorView v) except -1:
    """Get a handle for obj (already through ``_check_type``) on ``path``, read its
    metadata into ``v``, let go of the handle."""
    cdef AtenTensorHandle h
    if not _getters_ok:
        raise RuntimeError("the bridge is being re-resolved; try again")
    if path == BORROW:
        if _borrow_fn(<void*>obj, &h):  # borrowed: aliases THPVariable::cdata
            _raise_handle_error(path)
        _read(h, v, obj)
    elif path == FALLBACK:
        h = <AtenTensorHandle>((<char*><PyObject*>obj) + _fallback_offset)  # borrowed
        _read(h, v, obj)
    elif path == OWNED:
        if _owned_fn(<void*>obj, &h):  # new reference: ours to delete below
            _raise_handle_error(path)
        try:
            _read(h, v, obj)
        finally:
            _delete_fn(h)
    else:
        raise ValueError(f"no path has code {path}")
    return 0


cdef inline int _gate(object obj) except -1:
    """Everything that may run Python code, done before the handle: the type gate and,
    without torch_is_conj / torch_is_neg, the Python-level bit check."""
    _check_type(obj)
    if _g.is_conj == NULL:
        _check_bits_slow(obj)
    return 0


cdef TensorView _make(object obj, int path):
    cdef TensorView v
    cdef PyTypeObject* tp
    # Allocating a GC-tracked object may run the garbage collector (finalizers, weakref
    # callbacks: any Python code), so the view exists before the gate and the handle.
    v = TensorView.__new__(TensorView)
    while True:
        tp = Py_TYPE(obj)
        _gate(obj)
        # The gate may run Python code too (a subclass's type lookups, the slow bit
        # check); if that changed obj's type (__class__ assignment, swap_tensors), the
        # verdict is about another type: judge again.
        if Py_TYPE(obj) == tp:
            break
    _acquire_read(obj, path, v)
    v.obj = obj
    v._path = path
    v._itemsize = _itemsize[v._dtype]
    v._dtype_obj = _dtype_objs[v._dtype]
    v._device_name = _device_names[v._device_type]
    _counts[path] += 1
    return v


cdef int _choose_default() except -1:
    from bridge import _select
    _select.ensure_active()
    return 0


@cython.binding(False)  # a plain METH_O builtin: the cheapest Python call
def view(obj):
    """Metadata view of a dense strided tensor, through the path chosen by ``set_path``.

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
    cdef int path = _active
    if path < 0:
        _choose_default()  # runs Python code: another thread may un-choose meanwhile
        path = _active
        if path < 0:
            from bridge import _select
            raise _select.PathUnavailableError("the path was un-chosen while choosing it "
                                               "(a concurrent re-resolution); try again")
    return _make(obj, path)


cdef int _require(int path) except -1:
    if not _installed()[PATHS[path]]:
        from bridge import _select
        _select.require(PATHS[path])
    return 0


@cython.binding(False)
def view_owned(obj):
    """``view`` through torch's owned shim (``torch_tensor_from_pyobject``), whatever
    path is chosen; raises ``PathUnavailableError`` where this torch lacks it."""
    if not (_getters_ok and _owned_fn != NULL):
        _require(OWNED)
    return _make(obj, OWNED)


@cython.binding(False)
def view_borrow(obj):
    """``view`` through ``torch_tensor_borrow_from_pyobject`` (libtorch's, else
    ``shim_ext``'s), whatever path is chosen; raises ``PathUnavailableError`` without it."""
    if not (_getters_ok and _borrow_fn != NULL):
        _require(BORROW)
    return _make(obj, BORROW)


@cython.binding(False)
def view_fallback(obj):
    """``view`` through the proven ``THPVariable`` offset, whatever path is chosen;
    raises ``PathUnavailableError`` where the offset check failed."""
    if not (_getters_ok and _fallback_ok):
        _require(FALLBACK)
    return _make(obj, FALLBACK)


# --- counters and diagnostics -----------------------------------------------------------------
def path_counts():
    """Views made per path since the last reset: ``{"owned": n, "borrow": n, "fallback": n}``."""
    return {PATHS[i]: _counts[i] for i in range(NPATHS)}


def reset_path_counts():
    """Zero the per-path view counters."""
    cdef int i
    for i in range(NPATHS):
        _counts[i] = 0


def _dtype_code(obj, int path):
    """The c10::ScalarType code of ``obj`` read through ``path``, without any table
    (used by ``bridge._select`` to build the dtype table)."""
    cdef AtenTensorHandle h
    cdef int32_t code
    cdef int rc
    if not _is_tensor(obj):
        _raise_not_tensor(obj)
    if _g.dtype == NULL:
        raise RuntimeError("aoti_torch_get_dtype not installed")
    if path == FALLBACK:
        if not _fallback_ok:
            raise RuntimeError("fallback not installed")
        h = <AtenTensorHandle>((<char*><PyObject*>obj) + _fallback_offset)
        rc = _g.dtype(h, &code)
    else:
        fn = _borrow_fn if path == BORROW else _owned_fn
        if fn == NULL:
            raise RuntimeError(f"{PATHS[path]} not installed")
        if fn(<void*>obj, &h):
            _raise_handle_error(path)
        rc = _g.dtype(h, &code)
        if path == OWNED:
            _delete_fn(h)
    if rc:
        _raise_getter_error(obj)
    return code


cdef inline uint64_t _now_ns() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <uint64_t>ts.tv_sec * 1000000000ULL + <uint64_t>ts.tv_nsec


def _native_loop(obj, path, Py_ssize_t n):
    """Time ``n`` handle acquisitions + metadata reads of ``obj`` in C; ns per call.

    Each iteration is exactly what a view costs minus the Python call and the view
    object: the type gate, the handle (made and, for owned, deleted), the layout and
    seven ``aoti_torch_get_*`` reads and the storage offset, the conj/neg bits, and
    the same checks ``view`` makes. ``path`` is a
    name from ``PATHS``. Raises what ``view`` raises, on the first iteration.
    """
    cdef int p = PATHS.index(path)
    cdef TensorView v = TensorView.__new__(TensorView)  # one scratch view, refilled
    cdef Py_ssize_t i
    cdef uint64_t t0, t1
    if n <= 0:
        raise ValueError("n must be positive")
    _require(p)
    _gate(obj)
    _acquire_read(obj, p, v)  # raise here, outside the timed loop
    t0 = _now_ns()
    for i in range(n):
        _gate(obj)
        _acquire_read(obj, p, v)
    t1 = _now_ns()
    return (t1 - t0) / <double>n
