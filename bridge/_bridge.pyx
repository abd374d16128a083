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
- A view writes nothing shared: the per-path counters are per thread (``path_counts``
  sums them), the snapshot is only read, and the view object is the caller's own.
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
    int bridge_outside_storage(int64_t ndim, const int64_t* sizes, const int64_t* strides,
                               int64_t offset, int64_t itemsize, int64_t nbytes,
                               int64_t* last) noexcept nogil


# --- the stable C ABI (bridge/_abi.pxd: shim_ext/include/torch_borrow/abi.h) -------------
from bridge._abi cimport (
    AOTITorchError, AtenTensorHandle, abi_bool, torch_borrow_custom_metadata_fn,
    torch_borrow_delete_fn, torch_borrow_from_pyobject_fn, torch_borrow_get_flag_fn,
    torch_borrow_get_i32_fn, torch_borrow_get_i64_fn, torch_borrow_get_i64p_fn,
    torch_borrow_get_ptr_fn, torch_borrow_what_fn, TORCH_BORROW_CUSTOM_DEVICE,
    TORCH_BORROW_CUSTOM_LAYOUT, TORCH_BORROW_CUSTOM_PYTHON_KEY, TORCH_BORROW_CUSTOM_SIZES,
    TORCH_BORROW_CUSTOM_STRIDES,
)


cdef struct Getters:
    torch_borrow_get_i32_fn layout
    torch_borrow_get_ptr_fn data_ptr
    torch_borrow_get_i64_fn storage_offset  # with data_ptr: proof that the storage holds memory
    torch_borrow_get_i64_fn storage_size    # the storage's nbytes: the elements must lie inside it
    torch_borrow_get_i64_fn dim
    torch_borrow_get_i64p_fn sizes
    torch_borrow_get_i64p_fn strides
    torch_borrow_get_i32_fn dtype
    torch_borrow_get_i32_fn device_type
    torch_borrow_get_i32_fn device_index
    torch_borrow_get_flag_fn is_conj       # NULL: ask torch.Tensor.is_conj() at Python level instead
    torch_borrow_get_flag_fn is_neg


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
    /* View counters, per thread: a view writes only its own thread's block (nothing
       shared, so threads viewing at once never contend for a cache line, GIL or not).
       Each block has one writer, so a relaxed load and store suffice; readers sum every
       block with relaxed loads. A thread's block is made at its first view, pushed on a
       list that is never shortened (a block outlives its thread: its counts stay in the
       totals), and is one cache line of its own. */
    #ifdef Py_GIL_DISABLED
    #define BRIDGE_FREE_THREADED 1
    #else
    #define BRIDGE_FREE_THREADED 0
    #endif
    typedef struct bridge_counts_block {
        uint64_t n[3];
        struct bridge_counts_block* next;
    } __attribute__((aligned(64))) bridge_counts_block;
    static bridge_counts_block* bridge_all_counts = NULL;  /* the list, pushed with CAS */
    static __thread bridge_counts_block* bridge_my_counts = NULL;
    __attribute__((noinline)) static bridge_counts_block* bridge_new_counts(void) {
        bridge_counts_block* b = (bridge_counts_block*)aligned_alloc(64, sizeof *b);
        if (b == NULL) return NULL;
        memset(b, 0, sizeof *b);
        b->next = __atomic_load_n(&bridge_all_counts, __ATOMIC_RELAXED);
        while (!__atomic_compare_exchange_n(&bridge_all_counts, &b->next, b, 1,
                                            __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
        }
        bridge_my_counts = b;
        return b;
    }
    static inline void bridge_count(int path) {
        bridge_counts_block* b = bridge_my_counts;
        if (__builtin_expect(b == NULL, 0) && (b = bridge_new_counts()) == NULL)
            return;  /* out of memory: the view is made, not counted */
        __atomic_store_n(&b->n[path], __atomic_load_n(&b->n[path], __ATOMIC_RELAXED) + 1,
                         __ATOMIC_RELAXED);
    }
    static uint64_t bridge_counter(int path) {  /* every thread's views, ever */
        uint64_t total = 0;
        for (bridge_counts_block* b = __atomic_load_n(&bridge_all_counts, __ATOMIC_ACQUIRE);
             b != NULL; b = b->next)
            total += __atomic_load_n(&b->n[path], __ATOMIC_RELAXED);
        return total;
    }
    static uintptr_t bridge_counts_address(void) {  /* this thread's block (tests) */
        return (uintptr_t)bridge_my_counts;
    }
    """
    void* bridge_load_ptr(void** p) noexcept nogil
    void bridge_store_ptr(void** p, void* v) noexcept nogil
    int bridge_load_int(int* p) noexcept nogil
    void bridge_store_int(int* p, int v) noexcept nogil
    void bridge_count(int path) noexcept nogil
    uint64_t bridge_counter(int path) noexcept nogil
    uintptr_t bridge_counts_address() noexcept nogil
    bint BRIDGE_FREE_THREADED

#: Whether this module was compiled for a free-threaded CPython (Py_GIL_DISABLED).
FREE_THREADED = BRIDGE_FREE_THREADED


cdef struct Installed:
    # Filled by _install_symbols.
    Getters g
    bint getters_present              # every getter resolved
    bint getters_ok                   # ... and the tables installed: views may run
    torch_borrow_from_pyobject_fn owned_fn
    torch_borrow_delete_fn delete_fn
    torch_borrow_from_pyobject_fn borrow_fn
    torch_borrow_what_fn what_fn
    # shim_ext's torch_borrow_custom_metadata: the borrow's refusal rule, made on the
    # owned and pointer-trick paths too (and, after a refused borrow, for the message).
    torch_borrow_custom_metadata_fn custom_metadata
    bint fallback_ok
    Py_ssize_t fallback_offset
    PyTypeObject* tensor_tp
    PyTypeObject* parameter_tp        # torch.nn.Parameter: a subclass with Tensor's getters
    # Python objects, borrowed: _kept holds a strong reference to each for good.
    PyObject* dispatch_keys           # torch._C._dispatch_keys (used without custom_metadata)
    PyObject* python_dispatch_key     # torch._C.DispatchKey.Python
    PyObject* is_conj                 # method descriptors torch.Tensor.is_conj / .is_neg
    PyObject* is_neg
    PyObject* no_torch_function       # torch._C.DisableTorchFunction
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
# What path_counts() subtracts: the totals at the last reset_path_counts() (under _counts_lock).
cdef uint64_t _counts_base[NPATHS]


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
    st.g.layout = <torch_borrow_get_i32_fn>_addr(symbols, "aoti_torch_get_layout")
    st.g.data_ptr = <torch_borrow_get_ptr_fn>_addr(symbols, "aoti_torch_get_data_ptr")
    st.g.storage_offset = <torch_borrow_get_i64_fn>_addr(symbols, "aoti_torch_get_storage_offset")
    st.g.storage_size = <torch_borrow_get_i64_fn>_addr(symbols, "aoti_torch_get_storage_size")
    st.g.dim = <torch_borrow_get_i64_fn>_addr(symbols, "aoti_torch_get_dim")
    st.g.sizes = <torch_borrow_get_i64p_fn>_addr(symbols, "aoti_torch_get_sizes")
    st.g.strides = <torch_borrow_get_i64p_fn>_addr(symbols, "aoti_torch_get_strides")
    st.g.dtype = <torch_borrow_get_i32_fn>_addr(symbols, "aoti_torch_get_dtype")
    st.g.device_type = <torch_borrow_get_i32_fn>_addr(symbols, "aoti_torch_get_device_type")
    st.g.device_index = <torch_borrow_get_i32_fn>_addr(symbols, "aoti_torch_get_device_index")
    st.g.is_conj = <torch_borrow_get_flag_fn>_addr(symbols, "torch_is_conj")
    st.g.is_neg = <torch_borrow_get_flag_fn>_addr(symbols, "torch_is_neg")
    st.custom_metadata = <torch_borrow_custom_metadata_fn>_addr(
        symbols, "torch_borrow_custom_metadata")
    if st.g.is_conj == NULL or st.g.is_neg == NULL:
        st.g.is_conj = st.g.is_neg = NULL
    st.getters_present = (st.g.layout != NULL and st.g.data_ptr != NULL and st.g.dim != NULL
                          and st.g.storage_offset != NULL and st.g.storage_size != NULL
                          and st.g.sizes != NULL and st.g.strides != NULL
                          and st.g.dtype != NULL and st.g.device_type != NULL
                          and st.g.device_index != NULL)
    st.owned_fn = <torch_borrow_from_pyobject_fn>_addr(symbols, "torch_tensor_from_pyobject")
    st.delete_fn = <torch_borrow_delete_fn>_addr(symbols, "aoti_torch_delete_tensor_object")
    if st.delete_fn == NULL:
        st.owned_fn = NULL
    st.borrow_fn = <torch_borrow_from_pyobject_fn>_addr(symbols, "torch_tensor_borrow_from_pyobject")
    st.what_fn = <torch_borrow_what_fn>_addr(symbols, "torch_exception_get_what_without_backtrace")
    st.fallback_ok = fallback_ok
    if tensor_type is not None:
        st.tensor_tp = <PyTypeObject*>_keep(tensor_type)
        st.is_conj = _keep(tensor_type.is_conj)
        st.is_neg = _keep(tensor_type.is_neg)
    if parameter_type is not None:
        st.parameter_tp = <PyTypeObject*>_keep(parameter_type)
    if tensor_type is not None and st.custom_metadata == NULL:
        _install_python_key(st)
    st.no_torch_function = _keep(no_torch_function)
    bridge_store_int(&_active, -1)
    bridge_store_ptr(<void**>&_state, st)


cdef int _install_python_key(Installed* st) except -1:
    """Without shim_ext's check, how the owned path reads a tensor's Python dispatch key:
    torch's ``_dispatch_keys`` (a pybind11 call, made before the handle). Immutable for
    the process: torch's own function and enum."""
    import sys
    torch_c = getattr(sys.modules.get("torch"), "_C", None)
    if torch_c is not None:
        st.dispatch_keys = _keep(torch_c._dispatch_keys)
        st.python_dispatch_key = _keep(torch_c.DispatchKey.Python)
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
    # The pointer trick only with shim_ext's check: without it, nothing could tell a
    # tensor whose getters run Python, which may free what the address points at.
    return {"owned": st.getters_ok and st.owned_fn != NULL,
            "borrow": st.getters_ok and st.borrow_fn != NULL,
            "fallback": st.getters_ok and st.fallback_ok and st.custom_metadata != NULL}


def _installed():
    """Which handle sources are installed: {path name: bool} (diagnostics)."""
    return _installed_paths(_installed_state())


def _activate(int path):
    """Make ``path`` (a code, index into PATHS) the one ``view`` uses; -1 un-chooses."""
    if path != -1 and not _installed()[PATHS[path]]:
        raise RuntimeError(f"path {PATHS[path]!r} is not installed")
    bridge_store_int(&_active, path)


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
    cdef torch_borrow_what_fn get_what = _installed_state().what_fn
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
    what, cause = _failure()
    raise BufferError(f"cannot read the metadata of this {_type_name(Py_TYPE(obj))}: "
                      f"{what}") from cause


cdef int _raise_custom_metadata(object obj, int32_t reasons, int32_t layout,
                                const Installed* st) except -1:
    """The refusal of a tensor whose metadata is not plain C++ state (``reasons``: the
    ``TORCH_BORROW_CUSTOM_*`` bits of ``torch_borrow_custom_metadata``; ``layout`` its
    layout code, -1 where that is custom), one message per cause on every path."""
    name = _type_name(Py_TYPE(obj))
    if reasons & TORCH_BORROW_CUSTOM_PYTHON_KEY:
        # Named by the key, not by the class: a __class__ reassigned to torch.Tensor
        # keeps the TensorImpl, and its key, of the subclass that made it.
        raise BufferError(f"this {name}'s TensorImpl carries torch's Python dispatch key (a "
                          f"subclass that overrides __torch_dispatch__ made it): its metadata "
                          f"is computed in Python and cannot be read safely through a handle; "
                          f"view a plain tensor instead")
    if layout >= 0 and layout != st.layout_strided:
        _check_layout(layout, st)
    if _is_nested(obj):
        raise BufferError("a nested tensor has no single pointer + strides description; "
                          "view its components (.unbind()) or a padded copy "
                          "(.to_padded_tensor(0)) instead")
    if reasons & (TORCH_BORROW_CUSTOM_SIZES | TORCH_BORROW_CUSTOM_STRIDES):
        raise BufferError(f"this {name}'s sizes and strides are computed by a TensorImpl "
                          f"subclass (functionalized, vmap-batched, symbolic or other wrapper "
                          f"tensors): they are not plain C++ state and cannot be read safely "
                          f"through a handle; view the underlying plain tensor instead")
    raise BufferError(f"this {name}'s device or layout is computed by a TensorImpl subclass "
                      f"or in Python (torch.Tensor._make_subclass(..., dispatch_device=True "
                      f"or dispatch_layout=True)): reading it could run Python code, so it "
                      f"cannot be read safely through a handle; view a plain tensor instead")


cdef int _refuse_custom_metadata(object obj, const Installed* st) except -1:
    """Refuse ``obj`` (already through the type gate) when shim_ext's check says its
    metadata is not plain C++ state: the borrow's rule, on the owned and pointer-trick
    paths (``torch_borrow_custom_metadata``, C++ only: no Python runs)."""
    cdef int32_t layout = -1
    cdef int32_t reasons = st.custom_metadata(<void*>obj, &layout)
    if reasons == 0:
        return 0
    if reasons < 0:
        raise BufferError(f"cannot read this {_type_name(Py_TYPE(obj))}: its tensor is "
                          f"undefined")
    return _raise_custom_metadata(obj, reasons, layout, st)


cdef bint _is_nested(object obj):
    """Whether ``obj`` is a nested tensor, by its dispatch key set (torch's
    ``_dispatch_keys``, a C++ function: no __torch_function__ or __torch_dispatch__ of
    the tensor's class runs). Asked only in an error path, after no handle is left."""
    import sys
    try:
        torch_c = sys.modules["torch"]._C
        keys = torch_c._dispatch_keys(obj)
        return any(keys.has(k) for k in (torch_c.DispatchKey.NestedTensorCPU,
                                          torch_c.DispatchKey.NestedTensorCUDA))
    except Exception:  # noqa: BLE001 - only the message depends on it
        return False


cdef str _type_name(PyTypeObject* tp):
    """A type's name from its own C slot (``tp_name``: ``module.Name`` for a static type,
    ``Name`` for a class), as a new exact str: no attribute of the type or its metaclass
    is read, so an error path runs no user code whatever the class defines."""
    return (<bytes>tp.tp_name).decode("utf-8", "replace")


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
    got = "None" if obj is None else _type_name(tp)
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


cdef inline int _check_type(object obj, const Installed* st) except -1:
    """The gate in front of every handle: obj's real type derives from torch.Tensor
    (never ``isinstance``: ``__class__`` can lie, the memory layout cannot)."""
    cdef PyTypeObject* tp = Py_TYPE(obj)
    if tp != st.tensor_tp and tp != st.parameter_tp:
        if st.tensor_tp == NULL or not PyType_IsSubtype(tp, st.tensor_tp):
            _raise_not_tensor(obj)
    return 0


cdef int _check_without_shim_ext(object obj, const Installed* st) except -1:
    """What the owned path checks where shim_ext's ``torch_borrow_custom_metadata`` is
    missing (shim_ext not built, or built for another torch; the pointer trick is then
    not offered at all): the type is exactly ``torch.Tensor`` or ``torch.nn.Parameter``
    (a subclass may compute its device in Python without torch's Python key, which
    nothing outside C++ can see), and the TensorImpl has no Python dispatch key
    (``torch._C._dispatch_keys``, a C++ function called before the handle). What it
    cannot see: a C++ TensorImpl subclass whose getters reach Python (a functional
    wrapper around a ``__torch_dispatch__`` tensor); the owned handle keeps the
    TensorImpl alive through such a getter, so its values are what torch's own
    ``t.shape`` would report."""
    cdef PyTypeObject* tp = Py_TYPE(obj)
    if tp != st.tensor_tp and tp != st.parameter_tp:
        raise BufferError(f"this {_type_name(tp)} is a torch.Tensor subclass, and without "
                          f"shim_ext's metadata check (torch_borrow_custom_metadata) the "
                          f"bridge cannot tell whether its getters run Python: rebuild "
                          f"shim_ext for this torch (python -m bridge info says how), or "
                          f"view a plain tensor")
    if st.dispatch_keys != NULL and (<object>st.dispatch_keys)(obj).has(
            <object>st.python_dispatch_key):
        _raise_custom_metadata(obj, TORCH_BORROW_CUSTOM_PYTHON_KEY, -1, st)
    return 0


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
    cdef abi_bool flag = 0
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


cdef int _raise_borrow_error(object obj, const Installed* st) except -1:
    """A refused borrow: the message every path gives for a tensor whose metadata is not
    plain C++ state (shim_ext's check tells which cause), else torch's message."""
    cdef int32_t layout = -1
    cdef int32_t reasons = 0
    if st.custom_metadata != NULL:
        reasons = st.custom_metadata(<void*>obj, &layout)
    if reasons > 0:
        what, cause = _failure()  # clear torch's message and any pending exception
        return _raise_custom_metadata(obj, reasons, layout, st)
    return _raise_handle_error(BORROW)


cdef inline int _acquire_read(object obj, int path, TensorView v,
                              const Installed* st) except -1:
    """Get a handle for obj (already through ``_gate``) on ``path``, read its metadata
    into ``v``, let go of the handle. Every path refuses the same tensors first: those
    whose metadata is not plain C++ state (the borrow by itself; the owned and
    pointer-trick paths through shim_ext's ``torch_borrow_custom_metadata``), so from
    here to the view nothing but C++ runs. Everything comes from the one snapshot
    ``st``; a path it lacks (chosen under another snapshot) is a RuntimeError, never a
    call through a null pointer."""
    cdef AtenTensorHandle h
    if not st.getters_ok:
        raise RuntimeError("the bridge is being re-resolved; try again")
    if path == BORROW and st.borrow_fn != NULL:
        if st.borrow_fn(<void*>obj, &h):  # borrowed: aliases THPVariable::cdata
            _raise_borrow_error(obj, st)
        _read(h, v, obj, st)
    elif path == FALLBACK and st.fallback_ok and st.custom_metadata != NULL:
        _refuse_custom_metadata(obj, st)
        h = <AtenTensorHandle>((<char*><PyObject*>obj) + st.fallback_offset)  # borrowed
        _read(h, v, obj, st)
    elif path == OWNED and st.owned_fn != NULL:
        if st.custom_metadata != NULL:
            _refuse_custom_metadata(obj, st)
        else:
            _check_without_shim_ext(obj, st)
        if st.owned_fn(<void*>obj, &h):  # new reference: ours to delete below
            _raise_handle_error(path)
        try:
            _read(h, v, obj, st)
        finally:
            st.delete_fn(h)
    elif 0 <= path < NPATHS:
        raise RuntimeError(f"path {PATHS[path]!r} is not installed now (the bridge was "
                           f"re-resolved meanwhile); try again")
    else:
        raise ValueError(f"no path has code {path}")
    return 0


cdef inline int _gate(object obj, const Installed* st) except -1:
    """The type gate and, without torch_is_conj / torch_is_neg, the Python-level bit
    check, which runs Python code: the type is then judged again, since that code may
    have changed it (``__class__`` assignment, ``swap_tensors``). After this, nothing but
    C++ runs until the view is filled."""
    _check_type(obj, st)
    if st.g.is_conj == NULL:
        _check_bits_slow(obj, st)
        _check_type(obj, st)
    return 0


cdef TensorView _make(object obj, int path):
    cdef TensorView v
    cdef const Installed* st
    # Allocating a GC-tracked object may run the garbage collector (finalizers, weakref
    # callbacks: any Python code), so the view exists before the gate and the handle.
    v = TensorView.__new__(TensorView)
    # One snapshot for the whole view: a concurrent re-resolution publishes another one,
    # and this view keeps reading the one it loaded (never freed).
    st = _installed_state()
    _gate(obj, st)
    _acquire_read(obj, path, v, st)
    v.obj = obj
    v._path = path
    v._itemsize = st.itemsize[v._dtype]
    v._st = st
    bridge_count(path)  # this thread's own counter: no shared write
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
    if not (st.getters_ok and st.fallback_ok and st.custom_metadata != NULL):
        _require(FALLBACK)
    return _make(obj, FALLBACK)


# --- counters and diagnostics -----------------------------------------------------------------
import threading as _threading

_counts_lock = _threading.Lock()


def path_counts():
    """Views made per path since the last reset, by every thread:
    ``{"owned": n, "borrow": n, "fallback": n}``.

    Each thread counts its own views in a block of its own (a view writes nothing that
    another thread writes), and this sums the blocks: exact once the viewing threads are
    done, a moment's snapshot while they run."""
    with _counts_lock:
        return {PATHS[i]: bridge_counter(i) - _counts_base[i] for i in range(NPATHS)}


def reset_path_counts():
    """Start the per-path view counts again from zero (for every thread: it records the
    totals, which ``path_counts`` subtracts; no thread's block is written)."""
    cdef int i
    with _counts_lock:
        for i in range(NPATHS):
            _counts_base[i] = bridge_counter(i)


def _counts_block():
    """The address of the calling thread's counter block (0 before its first view):
    distinct per thread, so no two threads' views write the same memory."""
    return bridge_counts_address()


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


def _native_loop(obj, path, Py_ssize_t n, bint critical_section=False, bint gate=True):
    """Time ``n`` handle acquisitions + metadata reads of ``obj`` in C; ns per call.

    Each iteration is exactly what a view costs minus the Python call and the view
    object: the type gate, the handle (made and, for owned, deleted; refused first, on
    every path, for a tensor whose metadata is not plain C++ state), the layout, seven
    ``aoti_torch_get_*`` reads, the storage offset and size, the conj/neg bits, and the
    same checks ``view`` makes. ``path`` is a name from ``PATHS``. Raises what ``view``
    raises, on the first iteration. ``critical_section=True`` wraps each handle + read
    in a per-object critical section on ``obj`` (``Py_BEGIN_CRITICAL_SECTION``; a no-op
    with the GIL): what taking torch's per-tensor lock would cost, were torch's setters
    to take it (they do not). ``gate=False`` leaves the type gate (and the Python-level
    conj/neg check where torch_is_conj is missing) out of the loop, after checking it
    once: handle + read alone, the part a critical section would cover.
    """
    cdef int p = PATHS.index(path)
    cdef TensorView v = TensorView.__new__(TensorView)  # one scratch view, refilled
    cdef Py_ssize_t i
    cdef uint64_t t0, t1
    cdef const Installed* st
    if n <= 0:
        raise ValueError("n must be positive")
    _require(p)
    st = _installed_state()
    _gate(obj, st)
    _acquire_read(obj, p, v, st)  # raise here, outside the timed loop
    t0 = _now_ns()
    if critical_section:
        for i in range(n):
            if gate:
                _gate(obj, st)
            with cython.critical_section(obj):
                _acquire_read(obj, p, v, st)
    else:
        for i in range(n):
            if gate:
                _gate(obj, st)
            _acquire_read(obj, p, v, st)
    t1 = _now_ns()
    return (t1 - t0) / <double>n
