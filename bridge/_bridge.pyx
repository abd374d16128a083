# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: freethreading_compatible=True
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

Threads and free-threaded CPython (``freethreading_compatible``: importing this
module leaves the GIL off on a ``--disable-gil`` build):

- What ``_install_symbols`` / ``_install_tables`` set up is one immutable snapshot
  (``Installed``), published with a single release store and read by a view with one
  acquire load: a view uses the old snapshot or the new one, never a mix. Snapshots
  are never freed (a view may still be reading one; they are replaced only when the
  bridge re-resolves, once per process outside the tests).
- The per-path counters are atomic on a free-threaded build (plain increments under
  the GIL, where they are exact already).
- Many threads may view the same tensors at once: each view is exact.
- A view is *not* atomic with respect to a concurrent change of the same tensor's
  metadata (``t.data = ...``, ``t.set_(...)``, ``resize_``, in-place view ops,
  ``torch.utils.swap_tensors``): the getters read the TensorImpl while the mutator
  rewrites it, which can crash or mix two tensors' fields. torch's own ``t.shape`` /
  ``t.stride()`` race the same way, and torch's setters take no per-object lock that a
  reader could share, so the caller must order the mutation and the views (a
  ``threading.Lock`` around both). A GIL helps only against mutations that hold it
  throughout (the ``t.data`` setter, ``swap_tensors``): nothing runs between the handle
  and the copy. ATen's in-place operators (``set_``, ``resize_``) release the GIL.
"""

cimport cython
from cpython.long cimport PyLong_FromLongLong, PyLong_FromVoidPtr
from cpython.mem cimport PyMem_RawMalloc
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.exc cimport PyErr_Fetch, PyErr_NormalizeException, PyErr_Occurred
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint64_t, uintptr_t
from libc.string cimport memcpy
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec


cdef extern from "Python.h":
    PyTypeObject* Py_TYPE(object o)
    PyObject* Py_True
    bint PyType_IsSubtype(PyTypeObject* a, PyTypeObject* b)
    object PyObject_Vectorcall(object callable, PyObject** args, size_t nargsf, PyObject* kwnames)
    int PyException_SetTraceback(object ex, object tb) except -1


cdef extern from *:
    """
    /* torch._C.TensorBase._python_dispatch is a getset descriptor whose getter returns
       TensorImpl::is_python_dispatch() (the Python dispatch key), in C++ only. Its C
       function is called directly: no attribute lookup a subclass could answer. */
    typedef PyObject* (*bridge_getter)(PyObject*, void*);
    static int bridge_getset_getter(PyObject* descr, bridge_getter* fn, void** closure) {
        if (descr == NULL || !PyObject_TypeCheck(descr, &PyGetSetDescr_Type)) return -1;
        PyGetSetDef* d = ((PyGetSetDescrObject*)descr)->d_getset;
        if (d == NULL || d->get == NULL) return -1;
        *fn = d->get;
        *closure = d->closure;
        return 0;
    }
    /* Whether the elements a tensor describes reach outside its storage's nbytes:
       storage offset plus, per dimension, (size - 1) * stride, in elements, times the
       itemsize. torch never makes negative strides, but they are counted towards the
       low end all the same (the slow path, in 128 bits, saturating, so no size or stride
       overflows it). Returns 0 (inside, or no elements), 1 (reaches past the end), 2
       (before the start); *last is one past the furthest byte (saturated). */
    __attribute__((noinline)) static int bridge_outside_storage_slow(int64_t ndim,
            const int64_t* sizes, const int64_t* strides, int64_t offset,
            int64_t itemsize, int64_t nbytes, int64_t* last) {
        const __int128 cap = (__int128)1 << 100;
        __int128 hi = offset, lo = offset;
        for (int64_t i = 0; i < ndim; ++i) {
            __int128 d = (__int128)(sizes[i] - 1) * strides[i];
            if (d >= 0) { hi += d; if (hi > cap) hi = cap; }
            else { lo += d; if (lo < -cap) lo = -cap; }
        }
        __int128 end = (hi + 1) * itemsize;
        *last = end > (__int128)INT64_MAX ? INT64_MAX : (int64_t)end;
        if (lo < 0) return 2;
        return end > nbytes ? 1 : 0;
    }
    static inline int bridge_outside_storage(int64_t ndim, const int64_t* sizes,
            const int64_t* strides, int64_t offset, int64_t itemsize, int64_t nbytes,
            int64_t* last) {
        int64_t hi = offset, d, end;  /* hi: the furthest element, in elements */
        int bad = offset < 0;         /* a negative term or an overflow: the slow path */
        for (int64_t i = 0; i < ndim; ++i) {
            if (sizes[i] == 0) { *last = 0; return 0; }  /* no elements */
            bad |= (sizes[i] < 0) | (strides[i] < 0);
            bad |= __builtin_mul_overflow(sizes[i] - 1, strides[i], &d);
            bad |= __builtin_add_overflow(hi, d, &hi);
        }
        bad |= __builtin_add_overflow(hi, (int64_t)1, &end);
        bad |= __builtin_mul_overflow(end, itemsize, &end);
        if (bad)
            return bridge_outside_storage_slow(ndim, sizes, strides, offset, itemsize,
                                               nbytes, last);
        *last = end;
        return end > nbytes;
    }
    """
    ctypedef PyObject* (*bridge_getter)(PyObject*, void*)
    int bridge_getset_getter(PyObject* descr, bridge_getter* fn, void** closure)
    int bridge_outside_storage(int64_t ndim, const int64_t* sizes, const int64_t* strides,
                               int64_t offset, int64_t itemsize, int64_t nbytes,
                               int64_t* last) noexcept nogil


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
ctypedef int (*mode_active_fn)() noexcept nogil

# The prototype's batched read (shim_ext/include/torch_borrow/shim.h; measured, then
# withdrawn from the patch series: a DLPack exchange without the copy costs about the
# same and needs no new struct): one call fills the whole struct.
cdef struct TorchTensorMetadata:
    uint64_t struct_size      # in: sizeof as compiled here; out: bytes the callee filled
    void* data_ptr            # storage offset included
    const int64_t* sizes      # borrowed from the TensorImpl
    const int64_t* strides    # in elements; borrowed
    int64_t dim
    int64_t storage_offset    # in elements
    int32_t dtype
    int32_t device_type
    int32_t device_index
    int32_t layout
    uint8_t is_conj
    uint8_t is_neg
    uint8_t is_python_dispatch  # TensorImpl::is_python_dispatch(); if set, nothing else read
    int64_t storage_nbytes      # as aoti_torch_get_storage_size reports it
ctypedef AOTITorchError (*get_metadata_fn)(AtenTensorHandle, TorchTensorMetadata*) noexcept nogil
ctypedef AOTITorchError (*metadata_from_pyobject_fn)(void*, TorchTensorMetadata*) noexcept nogil

cdef struct Getters:
    get_i32_fn layout
    get_ptr_fn data_ptr
    get_i64_fn storage_offset  # with data_ptr: proof that the storage holds memory
    get_i64_fn storage_size    # the storage's nbytes: the elements must lie inside it
    get_i64_fn dim
    get_i64p_fn sizes
    get_i64p_fn strides
    get_i32_fn dtype
    get_i32_fn device_type
    get_i32_fn device_index
    get_flag_fn is_conj       # NULL: ask torch.Tensor.is_conj() at Python level instead
    get_flag_fn is_neg
    get_metadata_fn get_metadata                  # NULL: no batched read, getters only
    metadata_from_pyobject_fn borrow_metadata     # the borrow + batched read in one call


# --- public constants ---------------------------------------------------------------------
cdef enum:
    # Path codes, in the order of ``PATHS``.
    OWNED = 0
    BORROW = 1
    FALLBACK = 2
    NPATHS = 3
    # Reader codes, in the order of ``READERS``.
    GETTERS = 0
    BATCHED = 1
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
#: How a handle's metadata is read, by code: the layout + seven ``aoti_torch_get_*`` +
#: storage offset + conj/neg getters, or one ``torch_tensor_get_metadata`` call.
READERS = ("getters", "batched")
#: The C compiler that built this module.
COMPILER = bridge_compiler.decode()
#: sizeof(PyObject) of the CPython this module was compiled for: the fallback's offset.
PYOBJECT_SIZE = sizeof(PyObject)
#: Dimensions a view stores without a heap allocation.
INLINE_DIMENSIONS = INLINE_DIMS


# --- C state: one immutable snapshot per installation, published atomically --------------
cdef extern from *:
    """
    /* A view loads the installed snapshot once (acquire) and reads only that one; an
       installation fills a fresh snapshot, then publishes it (release). GCC/Clang
       builtins: plain loads and stores on x86-64, ordered ones on weaker CPUs. */
    #define bridge_load_ptr(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
    #define bridge_store_ptr(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
    #define bridge_load_int(p) __atomic_load_n((p), __ATOMIC_RELAXED)
    #define bridge_store_int(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
    /* Counters: atomic without a GIL; under the GIL a plain increment is exact and
       costs nothing extra on the hot path. */
    #ifdef Py_GIL_DISABLED
    #define bridge_count(p) ((void)__atomic_fetch_add((p), 1, __ATOMIC_RELAXED))
    #define bridge_counter(p) __atomic_load_n((p), __ATOMIC_RELAXED)
    #define bridge_zero(p) __atomic_store_n((p), 0, __ATOMIC_RELAXED)
    #define BRIDGE_FREE_THREADED 1
    #else
    #define bridge_count(p) ((void)++*(p))
    #define bridge_counter(p) (*(p))
    #define bridge_zero(p) ((void)(*(p) = 0))
    #define BRIDGE_FREE_THREADED 0
    #endif
    """
    void* bridge_load_ptr(void** p) noexcept nogil
    void bridge_store_ptr(void** p, void* v) noexcept nogil
    int bridge_load_int(int* p) noexcept nogil
    void bridge_store_int(int* p, int v) noexcept nogil
    void bridge_count(uint64_t* p) noexcept nogil
    uint64_t bridge_counter(uint64_t* p) noexcept nogil
    void bridge_zero(uint64_t* p) noexcept nogil
    bint BRIDGE_FREE_THREADED

#: Whether this module was compiled for a free-threaded CPython (Py_GIL_DISABLED).
FREE_THREADED = BRIDGE_FREE_THREADED


cdef struct Installed:
    # Filled by _install_symbols.
    Getters g
    bint getters_present              # every getter resolved
    bint getters_ok                   # ... and the tables installed: views may run
    from_pyobject_fn owned_fn
    delete_fn delete_fn
    from_pyobject_fn borrow_fn
    what_fn what_fn
    bint fallback_ok
    Py_ssize_t fallback_offset
    PyTypeObject* tensor_tp
    PyTypeObject* parameter_tp        # torch.nn.Parameter: a subclass with Tensor's getters
    # The Python dispatch key's C getter (torch._C.TensorBase._python_dispatch), or NULL:
    # then torch._C._dispatch_keys(t).has(DispatchKey.Python), called at Python level.
    bridge_getter python_key
    void* python_key_closure
    # Python objects, borrowed: _kept holds a strong reference to each for good.
    PyObject* dispatch_keys           # torch._C._dispatch_keys (used without python_key)
    PyObject* python_dispatch_key     # torch._C.DispatchKey.Python
    PyObject* is_conj                 # method descriptors torch.Tensor.is_conj / .is_neg
    PyObject* is_neg
    PyObject* no_torch_function       # torch._C.DisableTorchFunction
    # torch._C._len_torch_dispatch_stack and torch._C._DisableTorchDispatch, or NULL: with
    # a TorchDispatchMode active, a tensor without the Python key whose device or layout
    # torch computes in Python (``_make_subclass(..., dispatch_device=True)``) would have
    # the mode answer, mid-read; the read then runs with Python dispatch excluded.
    PyObject* dispatch_stack_len
    PyObject* no_python_dispatch
    mode_active_fn mode_active        # shim_ext's C read of the same, or NULL
    # Filled by _install_tables.
    int32_t layout_strided
    int32_t device_meta
    int32_t device_privateuse1        # its name is torch's current one, read when asked
    int8_t itemsize[NCODES]           # per dtype code: bytes, 0 unknown, -1 refused
    bint device_known[NDEVICES]       # per device type code: the bridge knows its name
    PyObject* dtype_objs[NCODES]      # per dtype code: torch.dtype or NULL
    PyObject* device_names[NDEVICES]  # per device type code: "cpu", "cuda", ... or NULL
    PyObject* refused_dtypes          # dict: code -> reason
    PyObject* layout_names            # dict: layout code -> "sparse_coo", ...


cdef Installed _nothing                # before the first installation: no path runs
_nothing.fallback_offset = sizeof(PyObject)
_nothing.layout_strided = -1
_nothing.device_meta = -1
_nothing.device_privateuse1 = -1
cdef Installed* _state = &_nothing
# Every snapshot's Python objects, kept alive for the life of the process.
cdef list _kept = []

cdef int _active = -1                  # path used by view(); -1 until chosen
cdef int _reader = GETTERS             # reader used by every view (bridge._select sets it)
cdef uint64_t _counts[NPATHS]


cdef inline const Installed* _installed_state() noexcept nogil:
    return <const Installed*>bridge_load_ptr(<void**>&_state)


cdef Installed* _new_state(const Installed* base) except NULL:
    """A fresh snapshot, a copy of ``base``; never freed (a view may hold the old one)."""
    cdef Installed* st = <Installed*>PyMem_RawMalloc(sizeof(Installed))
    if st == NULL:
        raise MemoryError()
    memcpy(st, base, sizeof(Installed))
    return st


cdef PyObject* _keep(object o):
    """A borrowed pointer to ``o``, kept alive for good by ``_kept``."""
    _kept.append(o)
    return <PyObject*>o


cdef void* _addr(dict symbols, str name) except? NULL:
    a = symbols.get(name)
    return NULL if a is None else <void*><uintptr_t>a


def _install_symbols(dict symbols, object tensor_type, bint fallback_ok,
                     object no_torch_function=None, object parameter_type=None):
    """Install resolved symbol addresses (``bridge._select`` only, under its lock).

    ``symbols`` maps a symbol name to its address (int) or None; ``aoti_torch_get_layout``,
    the seven metadata getters and ``aoti_torch_get_storage_offset`` must all be
    present for any path to work;
    ``tensor_type`` is ``torch.Tensor``; ``fallback_ok`` says the offset was proven;
    ``no_torch_function`` is ``torch._C.DisableTorchFunction``; ``parameter_type`` is
    ``torch.nn.Parameter`` (a fast path of the type gate).
    Publishes a snapshot with these symbols and no tables, and un-chooses the active
    path: every path stops until ``_install_tables`` has run, and a thread that views
    meanwhile gets a RuntimeError or waits for the resolution (``bridge._select``'s
    lock), never half-installed tables. Counters are kept.
    """
    cdef Installed* st = _new_state(&_nothing)
    st.g.layout = <get_i32_fn>_addr(symbols, "aoti_torch_get_layout")
    st.g.data_ptr = <get_ptr_fn>_addr(symbols, "aoti_torch_get_data_ptr")
    st.g.storage_offset = <get_i64_fn>_addr(symbols, "aoti_torch_get_storage_offset")
    st.g.storage_size = <get_i64_fn>_addr(symbols, "aoti_torch_get_storage_size")
    st.g.dim = <get_i64_fn>_addr(symbols, "aoti_torch_get_dim")
    st.g.sizes = <get_i64p_fn>_addr(symbols, "aoti_torch_get_sizes")
    st.g.strides = <get_i64p_fn>_addr(symbols, "aoti_torch_get_strides")
    st.g.dtype = <get_i32_fn>_addr(symbols, "aoti_torch_get_dtype")
    st.g.device_type = <get_i32_fn>_addr(symbols, "aoti_torch_get_device_type")
    st.g.device_index = <get_i32_fn>_addr(symbols, "aoti_torch_get_device_index")
    st.g.is_conj = <get_flag_fn>_addr(symbols, "torch_is_conj")
    st.g.is_neg = <get_flag_fn>_addr(symbols, "torch_is_neg")
    st.mode_active = <mode_active_fn>_addr(symbols, "torch_borrow_dispatch_mode_active")
    if st.g.is_conj == NULL or st.g.is_neg == NULL:
        st.g.is_conj = st.g.is_neg = NULL
    st.g.get_metadata = <get_metadata_fn>_addr(symbols, "torch_tensor_get_metadata")
    st.g.borrow_metadata = <metadata_from_pyobject_fn>_addr(
        symbols, "torch_tensor_borrow_metadata_from_pyobject")
    st.getters_present = (st.g.layout != NULL and st.g.data_ptr != NULL and st.g.dim != NULL
                          and st.g.storage_offset != NULL and st.g.storage_size != NULL
                          and st.g.sizes != NULL and st.g.strides != NULL
                          and st.g.dtype != NULL and st.g.device_type != NULL
                          and st.g.device_index != NULL)
    st.owned_fn = <from_pyobject_fn>_addr(symbols, "torch_tensor_from_pyobject")
    st.delete_fn = <delete_fn>_addr(symbols, "aoti_torch_delete_tensor_object")
    if st.delete_fn == NULL:
        st.owned_fn = NULL
    st.borrow_fn = <from_pyobject_fn>_addr(symbols, "torch_tensor_borrow_from_pyobject")
    st.what_fn = <what_fn>_addr(symbols, "torch_exception_get_what_without_backtrace")
    st.fallback_ok = fallback_ok
    if tensor_type is not None:
        st.tensor_tp = <PyTypeObject*>_keep(tensor_type)
        st.is_conj = _keep(tensor_type.is_conj)
        st.is_neg = _keep(tensor_type.is_neg)
    if parameter_type is not None:
        st.parameter_tp = <PyTypeObject*>_keep(parameter_type)
    if tensor_type is not None:
        _install_python_key(st, tensor_type)
    st.no_torch_function = _keep(no_torch_function)
    bridge_store_int(&_active, -1)
    bridge_store_ptr(<void**>&_state, st)


cdef int _install_python_key(Installed* st, object tensor_type) except -1:
    """How the gate reads a tensor's Python dispatch key: the C getter behind
    ``TensorBase._python_dispatch`` (found in the type's own ``__dict__`` along torch's
    MRO, never through an attribute lookup on the tensor), else torch's
    ``_dispatch_keys``. Immutable for the process: torch's types and functions."""
    import sys
    for klass in tensor_type.__mro__:
        descr = klass.__dict__.get("_python_dispatch")
        if descr is not None:
            if bridge_getset_getter(<PyObject*>descr, &st.python_key,
                                    &st.python_key_closure) == 0:
                _keep(descr)
            break
    torch_c = getattr(sys.modules.get("torch"), "_C", None)
    if torch_c is not None:
        st.dispatch_keys = _keep(torch_c._dispatch_keys)
        st.python_dispatch_key = _keep(torch_c.DispatchKey.Python)
        stack_len = getattr(torch_c, "_len_torch_dispatch_stack", None)
        no_dispatch = getattr(torch_c, "_DisableTorchDispatch", None)
        if stack_len is not None and no_dispatch is not None:
            st.dispatch_stack_len = _keep(stack_len)
            st.no_python_dispatch = _keep(no_dispatch)
    return 0


def _install_tables(dict dtypes, dict refused, dict device_names, dict layout_names,
                    int32_t layout_strided, int32_t device_meta,
                    int32_t device_privateuse1=-1):
    """Install the code tables (``bridge._select`` only, under its lock, after
    ``_install_symbols``).

    ``dtypes`` maps a c10::ScalarType code to ``(torch.dtype, itemsize in bytes)``;
    ``refused`` maps a code to the reason its tensors get no view; ``device_names`` and
    ``layout_names`` map codes to names; the last two are the codes of the strided
    layout and of the meta device; ``device_privateuse1`` is the privateuse1 code, whose
    name is torch's current one whenever a view reports it (``_device_name``). Publishes
    the installed symbols with these tables
    as one new snapshot; views may run from then on.
    """
    cdef Installed* st = _new_state(_state)
    cdef int code
    for code in range(NCODES):
        st.itemsize[code] = 0
        st.dtype_objs[code] = NULL
    for code in range(NDEVICES):
        st.device_known[code] = False
        st.device_names[code] = NULL
    for code, (dtype, itemsize) in dtypes.items():
        if 0 <= code < NCODES and 0 < itemsize < 128:
            st.dtype_objs[code] = _keep(dtype)
            st.itemsize[code] = itemsize
    refused = dict(refused)
    st.refused_dtypes = _keep(refused)
    for code in refused:
        if 0 <= code < NCODES:
            st.itemsize[code] = -1
    for code, name in device_names.items():
        if 0 <= code < NDEVICES:
            st.device_names[code] = _keep(name)
            st.device_known[code] = True
    st.layout_names = _keep(dict(layout_names))
    st.layout_strided = layout_strided
    st.device_meta = device_meta
    st.device_privateuse1 = device_privateuse1
    st.getters_ok = st.getters_present
    bridge_store_ptr(<void**>&_state, st)


cdef dict _installed_paths(const Installed* st):
    return {"owned": st.getters_ok and st.owned_fn != NULL,
            "borrow": st.getters_ok and st.borrow_fn != NULL,
            "fallback": st.getters_ok and st.fallback_ok}


def _installed():
    """Which handle sources are installed: {path name: bool} (diagnostics)."""
    return _installed_paths(_installed_state())


def _activate(int path):
    """Make ``path`` (a code, index into PATHS) the one ``view`` uses; -1 un-chooses."""
    if path != -1 and not _installed()[PATHS[path]]:
        raise RuntimeError(f"path {PATHS[path]!r} is not installed")
    bridge_store_int(&_active, path)


def _set_reader(int reader):
    """Make ``reader`` (a code, index into READERS) the one every view uses
    (``bridge._select`` only, which checks it is installed)."""
    if not 0 <= reader < len(READERS):
        raise ValueError(f"no reader has code {reader}")
    bridge_store_int(&_reader, reader)


def _reader_code():
    """The code of the reader views use."""
    return bridge_load_int(&_reader)


def _batched_installed():
    """Whether the installed snapshot has the batched read (``torch_tensor_get_metadata``)."""
    return _installed_state().g.get_metadata != NULL


def _active_path():
    """The code of the path ``view`` uses, or -1 when none is chosen yet."""
    return bridge_load_int(&_active)


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
    cdef what_fn get_what = _installed_state().what_fn
    cdef const char* raw = NULL if get_what == NULL else get_what()
    what = None if raw == NULL else (<bytes>raw).decode("utf-8", "replace")
    cause = _take_pending_exception()
    if not what:
        what = (repr(cause) if cause is not None else
                "no message (torch_exception_get_what_without_backtrace is not exported "
                "by this torch)" if get_what == NULL else "no message")
    return what, cause


cdef int _raise_handle_error(int path) except -1:
    what, cause = _failure()
    name = "torch_tensor_from_pyobject" if path == OWNED else "torch_tensor_borrow_from_pyobject"
    raise BufferError(f"{name} failed: {what}") from cause


cdef int _raise_getter_error(object obj) except -1:
    cdef const Installed* st = _installed_state()
    what, cause = _failure()
    if "NestedTensorImpl" in what or (st.what_fn == NULL and _is_nested(obj, st)):
        # torch's text ("Internal error: NestedTensorImpl doesn't support sizes. Please
        # file an issue.") asks for a bug report where there is no bug: left out; any
        # other (no message at all, before torch 2.13) is kept.
        said = "" if "NestedTensorImpl" in what else f" [torch: {what}]"
        raise BufferError("a nested tensor has no single pointer + strides description; "
                          "view its components (.unbind()) or a padded copy "
                          f"(.to_padded_tensor(0)) instead{said}") from cause
    if "dispatch_on_subclass called with NO overloaded args" in what:
        # torch's INTERNAL ASSERT, also asking for a bug report: a getter went to Python
        # for a tensor without the Python key, and nothing there could answer it.
        raise BufferError(f"the {_type_name(Py_TYPE(obj))}'s device or layout is computed in "
                          f"Python without torch's Python dispatch key (torch.Tensor."
                          f"_make_subclass(..., dispatch_device=True or dispatch_layout=True) "
                          f"on a class without __torch_dispatch__): it cannot be read safely "
                          f"through a handle; view a plain tensor instead") from cause
    raise BufferError(f"cannot read the metadata of this {_type_name(Py_TYPE(obj), False, True)}: "
                      f"{what}") from cause


cdef bint _is_nested(object obj, const Installed* st):
    """``obj.is_nested`` from TensorBase's own getter with __torch_function__ disabled
    (the attribute would run a subclass's, which could raise anything); False on any
    error. Asked only where torch has no message to tell a nested tensor by."""
    try:
        getter = next(k.__dict__["is_nested"] for k in (<object>st.tensor_tp).__mro__
                      if "is_nested" in k.__dict__)
        guard = (<object>st.no_torch_function)()
        with guard:
            return getter.__get__(obj) is True
    except Exception:  # noqa: BLE001 - only the message depends on it
        return False


cdef str _type_name(PyTypeObject* tp, bint qualified=False, bint short=False):
    """A type's ``__qualname__`` (``short``: its ``__name__``; ``qualified``: with its
    module, but for builtins), read with type's own C getters, never through the type's
    metaclass (whose ``__getattr__`` or properties could run any code, or raise, in an
    error path)."""
    cls = <object>tp
    try:
        name = type.__dict__["__name__" if short else "__qualname__"].__get__(cls)
        module = type.__dict__["__module__"].__get__(cls)
    except Exception:  # noqa: BLE001 - an error path must not fail on a name
        return (<bytes>tp.tp_name).decode("utf-8", "replace")
    if not qualified or module == "builtins":
        return name
    return f"{module}.{name}"


cdef bint _type_has(PyTypeObject* tp, str attribute):
    """``attribute`` in the ``__dict__`` of a class along the type's MRO, read without the
    metaclass (``hasattr`` would run its ``__getattr__``)."""
    try:
        return any(attribute in type.__dict__["__dict__"].__get__(k)
                   for k in type.__dict__["__mro__"].__get__(<object>tp))
    except Exception:  # noqa: BLE001 - only a hint depends on it
        return False


cdef int _raise_not_tensor(object obj) except -1:
    cdef PyTypeObject* tp = Py_TYPE(obj)
    got = "None" if obj is None else _type_name(tp, True)
    hint = ""
    if got == "numpy.ndarray":
        hint = "; view torch.from_numpy(a), which shares the array's memory"
    elif _type_has(tp, "__dlpack__"):
        hint = "; it has __dlpack__: view torch.from_dlpack(x), which shares its memory"
    raise TypeError(f"expected a torch.Tensor (or an instance of a subclass), got {got}{hint}")


cdef object _int_tuple(const int64_t* values, int64_t n):
    """``tuple(values[:n])`` built in place: no intermediate list (a view's shape and
    strides are made on first use, so this is on the path of every read of them)."""
    cdef object out = PyTuple_New(n)
    cdef object item
    cdef int64_t i
    for i in range(n):
        item = PyLong_FromLongLong(values[i])
        Py_INCREF(item)  # PyTuple_SET_ITEM steals the reference Cython will drop
        PyTuple_SET_ITEM(out, i, item)
    return out


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
    # The resolution the view was made under: its dtype and device names are looked up
    # there when read (snapshots are never freed nor changed), so a view stays a snapshot
    # of one resolution's tables without two more object fields to allocate and traverse.
    cdef const Installed* _st
    cdef object _shape_t
    cdef object _strides_t

    def __init__(self, *args, **kwargs):
        raise TypeError("TensorView is made by bridge.view(tensor), not directly")

    @property
    def ptr(self):
        """Address of the first element, storage offset included (int; ``t.data_ptr()``)."""
        return PyLong_FromVoidPtr(<void*>self._ptr)

    @property
    def ndim(self):
        """Number of dimensions (int; ``t.dim()``, from ``aoti_torch_get_dim``)."""
        return self._ndim

    # The tuples are made on first use. A view may be shared between threads: without
    # a GIL, two first uses at once would race on the field (a lost reference, or a
    # read of a tuple being replaced), so the first use runs in a critical section on
    # the view (a no-op with the GIL).
    @property
    def shape(self):
        """Sizes in elements (tuple of int; ``tuple(t.shape)``), built on first access."""
        with cython.critical_section(self):
            if self._shape_t is None:
                self._shape_t = _int_tuple(self._sizes, self._ndim)
            return self._shape_t

    @property
    def strides(self):
        """Strides in elements, not bytes (tuple of int; ``t.stride()``), built on first
        access."""
        with cython.critical_section(self):
            if self._strides_t is None:
                self._strides_t = _int_tuple(self._strides, self._ndim)
            return self._strides_t

    @property
    def dtype(self):
        """Element type (``torch.dtype``), looked up from ``dtype_code``."""
        if self._st == NULL:  # a bare TensorView.__new__(TensorView): no resolution
            return None
        return <object>self._st.dtype_objs[self._dtype]

    @property
    def dtype_code(self):
        """The element type's ``c10::ScalarType`` code (int), as ``aoti_torch_get_dtype``
        reports it: what a C consumer compares with ``aoti_torch_dtype_*()``."""
        return self._dtype

    @property
    def itemsize(self):
        """Bytes per element (int; ``t.element_size()``)."""
        return self._itemsize

    @property
    def device_type(self):
        """Device type name (str; ``t.device.type``: ``'cpu'``, ``'cuda'``, ...)."""
        if self._st == NULL:
            return None
        return _device_name_in(self._st, self._device_type)

    @property
    def device_index(self):
        """Device ordinal (int; ``t.device.index``), -1 where torch has none (CPU)."""
        return self._device_index

    @property
    def path(self):
        """The handle source that made the view (str): ``'owned'``, ``'borrow'`` or
        ``'fallback'``."""
        return PATHS[self._path]

    def __repr__(self):
        # The device as torch prints it: 'cpu' (index -1: none), 'cuda:0'.
        device = (self.device_type if self._device_index < 0
                  else f"{self.device_type}:{self._device_index}")
        return (f"TensorView(ptr={self.ptr:#x}, shape={self.shape}, strides={self.strides}, "
                f"dtype={self.dtype}, device='{device}', path='{self.path}')")


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
cdef PyObject* _privateuse1_final = NULL   # the renamed name, kept for good; NULL before


cdef object _privateuse1_name(const Installed* st):
    cdef PyObject* kept = <PyObject*>bridge_load_ptr(<void**>&_privateuse1_final)
    if kept != NULL:
        return <object>kept
    import sys
    name = sys.modules["torch"]._C._get_privateuse1_backend_name()
    # Any name but c10's default is final (torch refuses a second rename), whether the
    # rename came before the table was built or after.
    if name != "privateuseone":
        bridge_store_ptr(<void**>&_privateuse1_final, _keep(name))
    return name


cdef object _device_name_in(const Installed* st, int32_t code):
    if code == st.device_privateuse1 and 0 <= code < NDEVICES:
        return _privateuse1_name(st)
    if 0 <= code < NDEVICES and st.device_names[code] != NULL:
        return <object>st.device_names[code]
    return None


def _device_name(int code):
    """The name a view reports for device type ``code`` (torch's own name; privateuse1's
    as torch names it now), or None for a code the bridge does not know."""
    return _device_name_in(_installed_state(), code)


def _device_names():
    """``{code: name}`` for every device type code the installed table knows."""
    cdef const Installed* st = _installed_state()
    return {code: _device_name_in(st, code) for code in range(NDEVICES)
            if st.device_known[code]}


# --- reading: type gate, then handle + getters straight into the view -------------------
cdef inline bint _is_tensor(object obj, const Installed* st) noexcept:
    cdef PyTypeObject* tp = Py_TYPE(obj)
    # The real type, never isinstance(): __class__ can lie, the memory layout cannot.
    return tp == st.tensor_tp or (st.tensor_tp != NULL and PyType_IsSubtype(tp, st.tensor_tp))


cdef inline int _check_type(object obj, const Installed* st, bint key=True) except -1:
    """The gate in front of every handle: obj's real type derives from torch.Tensor, and
    no getter of its can run Python code.

    A tensor whose TensorImpl carries torch's Python dispatch key (made by a subclass that
    overrides ``__torch_dispatch__``: wrapper subclasses, FakeTensor, ...) may route
    ``sizes()``, ``strides()``, ``dim()``, ``device()`` or ``layout()`` through Python
    (``dispatch_sizes_strides_policy=...``), and that code may disagree with itself or
    resize the tensor between two getters: such tensors are refused before any handle is
    taken. The key is read the way torch's dispatcher reads it, from the TensorImpl
    (``is_python_dispatch()``), never from an attribute a metaclass, descriptor,
    ``__getattr__`` or instance attribute could answer; a Python sizes policy without
    the key makes torch itself throw in C++ (a BufferError here). Every tensor goes
    through it, exact ``torch.Tensor`` included (``torch.Tensor.__torch_dispatch__``
    can be monkeypatched). After this gate, nothing but C++ runs until the view is filled
    (under a TorchDispatchMode the read runs with Python dispatch excluded, so no mode can
    answer a getter either: ``_dispatch_mode_active``).
    ``key=False`` leaves the key to the batched read, which reads it from the TensorImpl
    in C++ before anything else and then reads nothing more (``_fill`` refuses the same
    way): one call instead of a second one into torch's getter.
    """
    cdef PyTypeObject* tp = Py_TYPE(obj)
    cdef PyObject* r
    cdef bint python_key
    if tp != st.tensor_tp and tp != st.parameter_tp:
        if st.tensor_tp == NULL or not PyType_IsSubtype(tp, st.tensor_tp):
            _raise_not_tensor(obj)
    if not key:
        return 0
    if st.python_key != NULL:
        r = st.python_key(<PyObject*>obj, st.python_key_closure)  # C++: no Python runs
        if r == NULL:  # torch set the exception (HANDLE_TH_ERRORS): propagate it
            return -1
        python_key = r == Py_True
        Py_XDECREF(r)
    elif st.dispatch_keys != NULL:
        python_key = (<object>st.dispatch_keys)(obj).has(<object>st.python_dispatch_key)
    else:
        python_key = tp != st.tensor_tp and tp != st.parameter_tp
    if python_key:
        _raise_python_key(obj)
    return 0


cdef int _raise_python_key(object obj) except -1:
    # Named by the key, not by the class: a __class__ reassigned to torch.Tensor keeps
    # the TensorImpl, and its key, of the subclass that made it.
    raise BufferError(f"this {_type_name(Py_TYPE(obj))}'s TensorImpl carries torch's Python "
                      f"dispatch key (a subclass that overrides __torch_dispatch__ made it): "
                      f"its metadata is computed in Python and cannot be read safely "
                      f"through a handle; view a plain tensor instead")


cdef inline int _check_layout(int32_t layout, const Installed* st) except -1:
    if layout != st.layout_strided:
        name = (<dict>st.layout_names).get(layout, f"code {layout}")
        raise BufferError(f"a tensor with layout {name} has no pointer + strides description; "
                          f"only strided tensors can be viewed (call .to_dense() first)")
    return 0


cdef inline int _dims(TensorView v) except -1:
    """Point ``v._sizes`` / ``v._strides`` at room for ``v._ndim`` dimensions each."""
    if v._ndim <= INLINE_DIMS:
        v._sizes = v._inline
    else:
        # A fresh bytes object nobody else sees yet: ours to fill. Not GC-tracked, so
        # allocating it runs no Python code.
        v._heap = PyBytes_FromStringAndSize(NULL, 2 * v._ndim * sizeof(int64_t))
        v._sizes = <int64_t*>PyBytes_AS_STRING(v._heap)
    v._strides = v._sizes + v._ndim
    return 0


cdef inline int _check_view(TensorView v, int64_t storage_offset, int64_t nbytes,
                            const Installed* st) except -1:
    """The checks every reader makes once the view holds the tensor's fields;
    ``nbytes`` is the storage's size (``aoti_torch_get_storage_size``)."""
    cdef int64_t last
    cdef int64_t itemsize
    if v._dtype < 0 or v._dtype >= NCODES or st.itemsize[v._dtype] <= 0:
        _raise_bad_dtype(v._dtype, st)
    if v._device_type == st.device_meta:
        raise BufferError("a meta tensor has no data; only tensors with storage can be viewed")
    if v._device_type < 0 or v._device_type >= NDEVICES or not st.device_known[v._device_type]:
        _raise_unknown_device(v._device_type)
    itemsize = st.itemsize[v._dtype]
    _check_data(v._ptr, storage_offset, itemsize, v._ndim, v._sizes)
    if bridge_outside_storage(v._ndim, v._sizes, v._strides, storage_offset, itemsize,
                              nbytes, &last):
        _raise_outside_storage(v, storage_offset, itemsize, nbytes, last)
    return 0


cdef int _raise_unknown_device(int32_t code) except -1:
    raise BufferError(f"device type code {code} is unknown to the bridge: torch names no "
                      f"such c10::DeviceType (torch._C._autograd.DeviceType), so no view "
                      f"can say which device the pointer belongs to")


cdef int _raise_outside_storage(TensorView v, int64_t storage_offset, int64_t itemsize,
                                int64_t nbytes, int64_t last) except -1:
    if any(s < 0 for s in v.strides) or storage_offset < 0:  # torch makes neither
        raise BufferError(f"the tensor's elements reach before the start of its storage "
                          f"(storage offset {storage_offset}, strides {v.strides}): no "
                          f"pointer + strides view can describe them safely")
    raise BufferError(f"the tensor's elements reach past the end of its storage: storage "
                      f"offset {storage_offset} and its sizes {v.shape} and strides "
                      f"{v.strides} (x {itemsize} bytes) reach byte {last}, but the storage "
                      f"holds {nbytes} bytes; it was shrunk under the tensor "
                      f"(untyped_storage().resize_()), so its pointer would describe memory "
                      f"past the allocation; grow the storage back to at least {last} bytes "
                      f"or view a tensor that fits in it")


cdef inline int64_t _storage_nbytes(AtenTensorHandle h, object obj,
                                    const Installed* st) except? -1:
    cdef int64_t nbytes
    if st.g.storage_size(h, &nbytes):
        _raise_getter_error(obj)
    return nbytes


cdef inline int _read(AtenTensorHandle h, TensorView v, object obj,
                      const Installed* st) except -1:
    """The layout, seven metadata getters and the storage offset (and the conj/neg bits)
    through one handle, written straight into ``v``; checks what they return.

    Sizes and strides are copied the moment their pointer is read: the pointer aims into
    the TensorImpl, and nothing may run between the getter and the copy.
    """
    cdef int32_t layout
    cdef int64_t* p
    cdef int64_t offset
    cdef uint8_t flag = 0
    if st.g.layout(h, &layout):
        _raise_getter_error(obj)
    _check_layout(layout, st)
    if (st.g.data_ptr(h, <void**>&v._ptr) or st.g.storage_offset(h, &offset)
            or st.g.dim(h, &v._ndim)):
        _raise_getter_error(obj)
    _dims(v)
    if st.g.sizes(h, &p):
        _raise_getter_error(obj)
    memcpy(v._sizes, p, v._ndim * sizeof(int64_t))
    if st.g.strides(h, &p):
        _raise_getter_error(obj)
    memcpy(v._strides, p, v._ndim * sizeof(int64_t))
    if (st.g.dtype(h, &v._dtype) or st.g.device_type(h, &v._device_type)
            or st.g.device_index(h, &v._device_index)):
        _raise_getter_error(obj)
    if st.g.is_conj != NULL:
        if st.g.is_conj(h, &flag):
            _raise_getter_error(obj)
        if flag:
            _raise_math_bit(True)
        if st.g.is_neg(h, &flag):
            _raise_getter_error(obj)
        if flag:
            _raise_math_bit(False)
    return _check_view(v, offset, _storage_nbytes(h, obj, st), st)


cdef inline int _fill(const TorchTensorMetadata* m, TensorView v, object obj,
                      const Installed* st) except -1:
    """``v`` from one batched read (``torch_tensor_get_metadata``), with the checks of
    ``_read`` and of the type gate's Python-key check (the struct carries the key and the
    storage's size, so no other call is made). The sizes and strides are copied in a
    loop: for the few dimensions of a typical tensor it is cheaper than two memcpy
    calls, and nothing runs in between."""
    cdef int64_t i
    if m.struct_size < sizeof(TorchTensorMetadata):
        raise BufferError(f"torch_tensor_get_metadata filled {m.struct_size} bytes of the "
                          f"{sizeof(TorchTensorMetadata)} this bridge reads")
    if m.is_python_dispatch:
        _raise_python_key(obj)
    _check_layout(m.layout, st)
    # Validated before the copy below dereferences them: a strided tensor has both.
    if m.dim < 0 or (m.dim > 0 and (m.sizes == NULL or m.strides == NULL)):
        raise BufferError(f"torch_tensor_get_metadata reported {m.dim} dimensions with "
                          f"sizes {'set' if m.sizes != NULL else 'null'} and strides "
                          f"{'set' if m.strides != NULL else 'null'} for a strided tensor")
    v._ptr = <uintptr_t>m.data_ptr
    v._ndim = m.dim
    _dims(v)
    for i in range(v._ndim):
        v._sizes[i] = m.sizes[i]
        v._strides[i] = m.strides[i]
    v._dtype = m.dtype
    v._device_type = m.device_type
    v._device_index = m.device_index
    if m.is_conj:
        _raise_math_bit(True)
    if m.is_neg:
        _raise_math_bit(False)
    return _check_view(v, m.storage_offset, m.storage_nbytes, st)


cdef inline int _read_batched(AtenTensorHandle h, TensorView v, object obj,
                              const Installed* st) except -1:
    """``_read`` in one ``torch_tensor_get_metadata`` call."""
    cdef TorchTensorMetadata m
    m.struct_size = sizeof(TorchTensorMetadata)
    if st.g.get_metadata(h, &m):
        _raise_getter_error(obj)
    return _fill(&m, v, obj, st)


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


cdef int _raise_bad_dtype(int32_t code, const Installed* st) except -1:
    cdef dict refused = <dict>st.refused_dtypes if st.refused_dtypes != NULL else {}
    if 0 <= code < NCODES and code in refused:
        raise BufferError(refused[code])
    raise BufferError(f"dtype code {code} is unknown to the bridge (a dtype newer than the "
                      f"table built at resolution?)")


cdef int _raise_math_bit(bint conj) except -1:
    if conj:
        raise BufferError("the tensor has its conjugate bit set: its memory holds the "
                          "unconjugated values; call .resolve_conj() first")
    raise BufferError("the tensor has its negative bit set: its memory holds the "
                      "negated values; call .resolve_neg() first")


cdef int _check_bits_slow(object obj, const Installed* st) except -1:
    """Refuse conjugate and negative views when no torch_is_conj / torch_is_neg exists:
    through torch.Tensor.is_conj / .is_neg (about 100 ns each), with __torch_function__
    disabled (subclasses and modes alike) so that nothing in Python answers for the tensor.
    Runs before any handle exists: it executes Python code."""
    cdef PyObject* args[1]
    args[0] = <PyObject*>obj
    no_torch_function = <object>st.no_torch_function
    with no_torch_function():
        conj = PyObject_Vectorcall(<object>st.is_conj, args, 1, NULL) is True
        neg = PyObject_Vectorcall(<object>st.is_neg, args, 1, NULL) is True
    if conj or neg:
        _raise_math_bit(conj)
    return 0


cdef inline int _read_with(AtenTensorHandle h, TensorView v, object obj, int reader,
                           const Installed* st) except -1:
    if reader == BATCHED:
        return _read_batched(h, v, obj, st)
    return _read(h, v, obj, st)


cdef inline int _acquire_read(object obj, int path, TensorView v, const Installed* st,
                              int reader=GETTERS) except -1:
    """Get a handle for obj (already through ``_check_type``) on ``path``, read its
    metadata into ``v`` with ``reader``, let go of the handle. Everything comes from the
    one snapshot ``st``; a path or reader it lacks (chosen under another snapshot) is a
    RuntimeError, never a call through a null pointer. On the borrow path the batched
    reader makes one call, ``torch_tensor_borrow_metadata_from_pyobject``, when it exists."""
    cdef AtenTensorHandle h
    cdef TorchTensorMetadata m
    if not st.getters_ok:
        raise RuntimeError("the bridge is being re-resolved; try again")
    if st.g.get_metadata == NULL:  # a snapshot without it: the getters read the same
        reader = GETTERS
    if path == BORROW and st.borrow_fn != NULL:
        if reader == BATCHED and st.g.borrow_metadata != NULL:
            m.struct_size = sizeof(TorchTensorMetadata)
            if st.g.borrow_metadata(<void*>obj, &m):  # borrow + read, nothing to release
                _raise_getter_error(obj)
            return _fill(&m, v, obj, st)
        if st.borrow_fn(<void*>obj, &h):  # borrowed: aliases THPVariable::cdata
            _raise_handle_error(path)
        _read_with(h, v, obj, reader, st)
    elif path == FALLBACK and st.fallback_ok:
        h = <AtenTensorHandle>((<char*><PyObject*>obj) + st.fallback_offset)  # borrowed
        _read_with(h, v, obj, reader, st)
    elif path == OWNED and st.owned_fn != NULL:
        if st.owned_fn(<void*>obj, &h):  # new reference: ours to delete below
            _raise_handle_error(path)
        try:
            _read_with(h, v, obj, reader, st)
        finally:
            st.delete_fn(h)
    elif 0 <= path < NPATHS:
        raise RuntimeError(f"path {PATHS[path]!r} is not installed now (the bridge was "
                           f"re-resolved meanwhile); try again")
    else:
        raise ValueError(f"no path has code {path}")
    return 0


cdef inline bint _key_in_read(int reader, const Installed* st) noexcept:
    """The batched read reports the Python dispatch key itself (``_fill``): the gate
    need not ask torch's getter. ``_acquire_read`` takes the getters without it."""
    return reader == BATCHED and st.g.get_metadata != NULL


cdef inline int _gate(object obj, const Installed* st, bint key=True) except -1:
    """Everything that may run Python code, done before the handle: the type gate and,
    without torch_is_conj / torch_is_neg, the Python-level bit check. ``key=False``: the
    Python-key check is left to the batched read (``_key_in_read``).

    Returns 1 when a TorchDispatchMode is active: the read must then run with Python
    dispatch excluded (``_acquire_read_guarded``), 0 otherwise."""
    _check_type(obj, st, key)
    if st.g.is_conj == NULL:
        _check_bits_slow(obj, st)
    return _dispatch_mode_active(st)


cdef inline int _dispatch_mode_active(const Installed* st) except -1:
    """Is a TorchDispatchMode on torch's stack (``torch._C._len_torch_dispatch_stack``)?

    A tensor whose device or layout torch computes in Python without carrying the Python
    key (``_make_subclass(..., dispatch_device=True)`` or ``dispatch_layout=True``, which
    torch allows for a class without ``__torch_dispatch__``) has those getters answered by
    the active mode, which may lie or free the storage mid-read. Without a mode torch's
    own assertion makes such a getter fail (a BufferError here)."""
    cdef object n
    if st.mode_active != NULL:  # a thread-local read in C++
        return st.mode_active()
    if st.dispatch_stack_len == NULL:
        return 0
    n = PyObject_Vectorcall(<object>st.dispatch_stack_len, NULL, 0, NULL)
    return 1 if n else 0


cdef int _acquire_read_guarded(object obj, int path, TensorView v, const Installed* st,
                               int reader) except -1:
    """``_acquire_read`` with Python dispatch excluded (``torch._C._DisableTorchDispatch``,
    what torch's own ``no_dispatch()`` uses): no mode answers a getter, so a getter of a
    tensor without the Python key that would have asked one fails instead."""
    guard = (<object>st.no_python_dispatch)()
    with guard:
        _acquire_read(obj, path, v, st, reader)
    return 0


cdef TensorView _make(object obj, int path):
    cdef TensorView v
    cdef PyTypeObject* tp
    cdef const Installed* st
    cdef int reader
    cdef bint key
    cdef int guarded = 0
    # Allocating a GC-tracked object may run the garbage collector (finalizers, weakref
    # callbacks: any Python code), so the view exists before the gate and the handle.
    v = TensorView.__new__(TensorView)
    # One snapshot for the whole view: a concurrent re-resolution publishes another one,
    # and this view keeps reading the one it loaded (never freed).
    st = _installed_state()
    reader = bridge_load_int(&_reader)
    key = not _key_in_read(reader, st)
    while True:
        tp = Py_TYPE(obj)
        guarded = _gate(obj, st, key)
        # The gate may run Python code too (a subclass's type lookups, the slow bit
        # check); if that changed obj's type (__class__ assignment, swap_tensors), the
        # verdict is about another type: judge again.
        if Py_TYPE(obj) == tp:
            break
    if guarded:
        _acquire_read_guarded(obj, path, v, st, reader)
    else:
        _acquire_read(obj, path, v, st, reader)
    v.obj = obj
    v._path = path
    v._itemsize = st.itemsize[v._dtype]
    v._st = st
    bridge_count(&_counts[path])
    return v


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


cdef int _choose_default() except -1:
    from bridge import _select
    _untraced(_select.ensure_active)
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
    cdef int path = bridge_load_int(&_active)
    if path < 0:
        _choose_default()  # runs Python code: another thread may un-choose meanwhile
        path = bridge_load_int(&_active)
        if path < 0:
            from bridge import _select
            raise _select.PathUnavailableError("the path was un-chosen while choosing it "
                                               "(a concurrent re-resolution); try again")
    return _make(obj, path)


cdef int _require(int path) except -1:
    if not _installed()[PATHS[path]]:
        from bridge import _select
        _untraced(_select.require, PATHS[path])
    return 0


@cython.binding(False)
def view_owned(obj):
    """``view`` through torch's owned shim (``torch_tensor_from_pyobject``), whatever
    path is chosen; raises ``PathUnavailableError`` where this torch lacks it."""
    cdef const Installed* st = _installed_state()
    if not (st.getters_ok and st.owned_fn != NULL):
        _require(OWNED)
    return _make(obj, OWNED)


@cython.binding(False)
def view_borrow(obj):
    """``view`` through ``torch_tensor_borrow_from_pyobject`` (libtorch's, else
    ``shim_ext``'s), whatever path is chosen; raises ``PathUnavailableError`` without it."""
    cdef const Installed* st = _installed_state()
    if not (st.getters_ok and st.borrow_fn != NULL):
        _require(BORROW)
    return _make(obj, BORROW)


@cython.binding(False)
def view_fallback(obj):
    """``view`` through the proven ``THPVariable`` offset, whatever path is chosen;
    raises ``PathUnavailableError`` where the offset check failed."""
    cdef const Installed* st = _installed_state()
    if not (st.getters_ok and st.fallback_ok):
        _require(FALLBACK)
    return _make(obj, FALLBACK)


# --- counters and diagnostics -----------------------------------------------------------------
def path_counts():
    """Views made per path since the last reset: ``{"owned": n, "borrow": n, "fallback": n}``.

    Exact under concurrent views: atomic counters on a free-threaded build."""
    return {PATHS[i]: bridge_counter(&_counts[i]) for i in range(NPATHS)}


def reset_path_counts():
    """Zero the per-path view counters."""
    cdef int i
    for i in range(NPATHS):
        bridge_zero(&_counts[i])


def _dtype_code(obj, int path):
    """The c10::ScalarType code of ``obj`` read through ``path``, without any table
    (used by ``bridge._select`` to build the dtype table)."""
    cdef AtenTensorHandle h
    cdef int32_t code
    cdef int rc
    cdef const Installed* st = _installed_state()
    if not _is_tensor(obj, st):
        _raise_not_tensor(obj)
    if st.g.dtype == NULL:
        raise RuntimeError("aoti_torch_get_dtype not installed")
    if path == FALLBACK:
        if not st.fallback_ok:
            raise RuntimeError("fallback not installed")
        h = <AtenTensorHandle>((<char*><PyObject*>obj) + st.fallback_offset)
        rc = st.g.dtype(h, &code)
    else:
        fn = st.borrow_fn if path == BORROW else st.owned_fn
        if fn == NULL:
            raise RuntimeError(f"{PATHS[path]} not installed")
        if fn(<void*>obj, &h):
            _raise_handle_error(path)
        rc = st.g.dtype(h, &code)
        if path == OWNED:
            st.delete_fn(h)
    if rc:
        _raise_getter_error(obj)
    return code


cdef inline uint64_t _now_ns() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <uint64_t>ts.tv_sec * 1000000000ULL + <uint64_t>ts.tv_nsec


def _native_loop(obj, path, Py_ssize_t n, bint critical_section=False, reader=None,
                 bint gate=True):
    """Time ``n`` handle acquisitions + metadata reads of ``obj`` in C; ns per call.

    Each iteration is exactly what a view costs minus the Python call and the view
    object: the type gate, the handle (made and, for owned, deleted), the metadata read
    and the same checks ``view`` makes. ``path`` is a name from ``PATHS``; ``reader`` is
    ``"getters"`` (the layout and seven ``aoti_torch_get_*`` reads, the storage offset,
    the conj/neg bits) or ``"batched"`` (one ``torch_tensor_get_metadata`` call; on the
    borrow path one ``torch_tensor_borrow_metadata_from_pyobject`` call), default the
    reader views use. Raises what ``view`` raises, on the first iteration, and
    ``bridge.PathUnavailableError`` when the batched read is absent.
    ``critical_section=True`` wraps each handle + read in a per-object critical section
    on ``obj`` (``Py_BEGIN_CRITICAL_SECTION``; a no-op with the GIL): what taking
    torch's per-tensor lock would cost, were torch's setters to take it (they do not).
    ``gate=False`` leaves the type gate (and the Python-level conj/neg check where
    torch_is_conj is missing) out of the loop, after checking it once: handle + read
    alone, the part a critical section would cover.
    """
    cdef int p = PATHS.index(path)
    cdef TensorView v = TensorView.__new__(TensorView)  # one scratch view, refilled
    cdef Py_ssize_t i
    cdef uint64_t t0, t1
    cdef const Installed* st
    cdef int r
    cdef bint key
    cdef int guarded
    if n <= 0:
        raise ValueError("n must be positive")
    if reader is not None and reader not in READERS:
        raise ValueError(f"reader must be one of {READERS}, not {reader!r}")
    _require(p)
    st = _installed_state()
    r = bridge_load_int(&_reader) if reader is None else READERS.index(reader)
    if r == BATCHED and st.g.get_metadata == NULL:
        from bridge import _select
        _select.require_reader("batched")
    key = not _key_in_read(r, st)
    guarded = _gate(obj, st, key)
    # Raise here, outside the timed loop; under a TorchDispatchMode every read is guarded.
    if guarded:
        _acquire_read_guarded(obj, p, v, st, r)
    else:
        _acquire_read(obj, p, v, st, r)
    t0 = _now_ns()
    if critical_section:
        for i in range(n):
            if gate:
                guarded = _gate(obj, st, key)
            with cython.critical_section(obj):
                if guarded:
                    _acquire_read_guarded(obj, p, v, st, r)
                else:
                    _acquire_read(obj, p, v, st, r)
    else:
        for i in range(n):
            if gate:
                guarded = _gate(obj, st, key)
            if guarded:
                _acquire_read_guarded(obj, p, v, st, r)
            else:
                _acquire_read(obj, p, v, st, r)
    t1 = _now_ns()
    return (t1 - t0) / <double>n
