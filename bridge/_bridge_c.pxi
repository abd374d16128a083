# The C side of bridge._bridge, declared for Cython once: the snapshot and counters
# (_bridge_state.h), the front end to the one reader (_bridge_read.h; the reader itself,
# torch_borrow/reader.h, is declared in bridge/_abi.pxd) and the view type (_bridge_view.h).
# Cython declares what it reads and writes; the C compiler checks each use against the
# headers' own definitions. The cold paths C calls back (refuse, choose, ...) are
# declared in _bridge_read.h and defined in Cython under those names, so they are not
# declared here.

cdef extern from "torch_borrow/tables.h":
    # The rule without shim_ext's check, the C core's (consumer.h's owned route follows
    # it too): the type's __torch_dispatch__ before the handle, the key set naming a
    # read that stopped, and the words of both.
    ctypedef struct torch_borrow_keys:
        int ready
    int torch_borrow_keys_setup(object torch, torch_borrow_keys* k)
    const char* torch_borrow_dispatch_words(const torch_borrow_keys* k, object obj, char* buf,
                                            size_t n)
    int torch_borrow_keys_name(const torch_borrow_keys* k, object obj, char* buf, size_t n)
    const char* torch_borrow_not_a_tensor_words(object obj, char* buf, size_t n)
    const char* torch_borrow_what_words(const char* what, int exported)
    const char* torch_borrow_call_failed_words(const char* call, const char* what, char* buf,
                                               size_t n)
    const char* torch_borrow_getter_failed_words(const char* type_name, const char* what,
                                                 char* buf, size_t n)
    const char* torch_borrow_custom_refusal_words(
        const torch_borrow_keys* k, object obj, int32_t bits, int32_t layout,
        int32_t strided, const char* layout_name, const char* verb, char* buf, size_t n)


cdef extern from "_bridge_view.h":
    enum:
        OWNED "BRIDGE_OWNED"
        BORROW "BRIDGE_BORROW"
        FALLBACK "BRIDGE_FALLBACK"
        NPATHS "BRIDGE_NPATHS"
        INLINE_DIMS "BRIDGE_INLINE_DIMS"
        NCODES "BRIDGE_NCODES"
        NDEVICES "BRIDGE_NDEVICES"
        BRIDGE_FREE_THREADED
        BRIDGE_EAGER_VALUES

    ctypedef struct Installed "bridge_installed":
        torch_borrow_getters g
        bint getters_present
        bint getters_ok
        torch_borrow_from_pyobject_fn owned_fn
        torch_borrow_delete_fn delete_fn
        torch_borrow_from_pyobject_fn borrow_fn
        torch_borrow_what_fn what_fn
        torch_borrow_custom_metadata_fn custom_metadata
        bint fallback_ok
        Py_ssize_t fallback_offset
        PyTypeObject* tensor_tp
        PyTypeObject* parameter_tp
        torch_borrow_keys keys
        PyObject* is_conj
        PyObject* is_neg
        PyObject* no_torch_function
        torch_borrow_tables t
        int32_t device_privateuse1
        PyObject* dtype_objs[NCODES]
        PyObject* device_names[NDEVICES]
        PyObject* refused_dtypes
        PyObject* layout_names

    Installed bridge_nothing
    const char* bridge_compiler
    PyObject* bridge_privateuse1_final
    const Installed* bridge_installed_state() noexcept nogil
    bint bridge_ready(const Installed* st, int path) noexcept nogil
    void bridge_publish(Installed* st) noexcept nogil
    int bridge_active_path() noexcept nogil
    void bridge_set_active(int path) noexcept nogil
    PyObject* bridge_load_obj(PyObject** p) noexcept nogil
    void bridge_store_obj(PyObject** p, PyObject* v) noexcept nogil
    uint64_t bridge_counter(int path) noexcept nogil
    uintptr_t bridge_counts_address() noexcept nogil

    ctypedef struct bridge_view:
        torch_borrow_fields m

    enum:
        BRIDGE_E_RAISED
        BRIDGE_E_TYPE
        BRIDGE_E_RESOLVING
        BRIDGE_E_NOT_INSTALLED
        BRIDGE_E_BORROW
        BRIDGE_E_CUSTOM
        BRIDGE_E_DISPATCH
        BRIDGE_E_OWNED
        BRIDGE_E_GETTER
        BRIDGE_E_LAYOUT
        BRIDGE_E_CONJ
        BRIDGE_E_NEG
        BRIDGE_E_DTYPE
        BRIDGE_E_META
        BRIDGE_E_DEVICE
        BRIDGE_E_NO_MEMORY
        BRIDGE_E_OUTSIDE

    ctypedef struct bridge_failure:
        int32_t reasons
        int32_t layout
        int path

    bint bridge_is_tensor(object obj, const Installed* st) noexcept
    int bridge_fill(object obj, int path, bridge_view* v, const Installed* st,
                    int gate) except -1
    object bridge_int_tuple(const int64_t* values, int64_t n)
    object bridge_device_name(const Installed* st, int32_t code)
    object bridge_view_scratch()
    object bridge_view_type_ready(const char* doc, dict attr_docs)
    object bridge_function(const char* name, const char* doc, object module_name)
