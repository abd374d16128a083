# What bridge._select installs: symbol addresses, then the code tables, each published
# as one new immutable snapshot (``Installed``, _bridge_state.h); the chosen path; the
# cold-path callables of bridge._select (so that nothing here imports it back).

#: Path names by code (the order of the counters and of ``TensorView.path``).
PATHS = ("owned", "borrow", "fallback")
#: The C compiler that built this module.
COMPILER = bridge_compiler.decode()
#: sizeof(PyObject) of the CPython this module was compiled for: the fallback's offset.
PYOBJECT_SIZE = sizeof(PyObject)
#: Whether this module was compiled for a free-threaded CPython (Py_GIL_DISABLED).
FREE_THREADED = bool(BRIDGE_FREE_THREADED)
#: Whether this is the measurement build whose views make their six most-read values
#: when made (BRIDGE_EAGER_VALUES, ``_bridge_state.h``): bench/callgrind.py's, never
#: the package's.
EAGER_VALUES = bool(BRIDGE_EAGER_VALUES)


cdef tuple _getter_names():
    cdef const torch_borrow_getter_symbol* getters = torch_borrow_getter_symbols()
    cdef int i
    return tuple([getters[i].name.decode() for i in range(TORCH_BORROW_NGETTERS)])


#: The ``aoti_torch_get_*`` getters every path reads through, in the order of
#: ``torch_borrow/reader.h``'s ``TORCH_BORROW_GETTER_LIST``, the one list of their names.
GETTERS = _getter_names()

# Every snapshot's Python objects, kept alive for the life of the process.
cdef list _kept = []
# bridge._select's callables (``_install_callables``): what the cold paths call.
cdef object _ensure_active = None
cdef object _require_path = None
cdef object _unavailable_error = RuntimeError


def _install_callables(ensure_active, require, unavailable_error):
    """Hand the module ``bridge._select``'s cold-path callables (``_select`` only, once,
    when it is imported): ``ensure_active()`` chooses the requested path when none is
    active, ``require(name)`` raises ``unavailable_error`` (``PathUnavailableError``)
    with the reason where a path cannot run."""
    global _ensure_active, _require_path, _unavailable_error
    _ensure_active, _require_path, _unavailable_error = ensure_active, require, unavailable_error


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

    ``symbols`` maps a symbol name to its address (int) or None; every getter of
    ``GETTERS`` must be present for any path to work;
    ``tensor_type`` is ``torch.Tensor``; ``fallback_ok`` says the offset was proven;
    ``no_torch_function`` is ``torch._C.DisableTorchFunction``; ``parameter_type`` is
    ``torch.nn.Parameter`` (a fast path of the type gate).
    Publishes a snapshot with these symbols and no tables, and un-chooses the active
    path: every path stops until ``_install_tables`` has run, and a thread that views
    meanwhile gets a RuntimeError or waits for the resolution (``bridge._select``'s
    lock), never half-installed tables. Counters are kept.
    """
    cdef Installed* st = _new_state(&bridge_nothing)
    cdef const torch_borrow_getter_symbol* getters = torch_borrow_getter_symbols()
    cdef void* address
    cdef int i
    for i in range(TORCH_BORROW_NGETTERS):  # reader.h's list: each getter into its field
        address = _addr(symbols, getters[i].name.decode())
        memcpy((<char*>&st.g) + getters[i].offset, &address, sizeof(void*))
    st.g.is_conj = <torch_borrow_get_flag_fn>_addr(symbols, "torch_is_conj")
    st.g.is_neg = <torch_borrow_get_flag_fn>_addr(symbols, "torch_is_neg")
    st.custom_metadata = <torch_borrow_custom_metadata_fn>_addr(
        symbols, "torch_borrow_custom_metadata")
    if st.g.is_conj == NULL or st.g.is_neg == NULL:
        st.g.is_conj = st.g.is_neg = NULL
    st.getters_present = torch_borrow_getters_complete(&st.g) != 0
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
    if tensor_type is not None:
        _install_keys(st)
    st.no_torch_function = _keep(no_torch_function)
    bridge_set_active(-1)
    bridge_publish(st)


cdef int _install_keys(Installed* st) except -1:
    """What the C core's rules read (``torch_borrow/tables.h``, ``torch_borrow_keys_setup``,
    as consumer.h does): torch's default ``__torch_dispatch__`` (the owned path's rule
    without shim_ext's check) and the dispatch-key table that names a refusal (every
    refusal's words). Its references are kept for the process, as the snapshot is; not
    ready (torch lacks a piece), the owned path without shim_ext refuses every tensor,
    saying so."""
    import sys
    torch = sys.modules.get("torch")
    if torch is not None:
        torch_borrow_keys_setup(torch, &st.keys)
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
    cdef Installed* st = _new_state(bridge_installed_state())
    cdef int code
    for code in range(NCODES):
        st.t.itemsize[code] = 0
        st.dtype_objs[code] = NULL
    for code in range(NDEVICES):
        st.t.device_known[code] = False
        st.device_names[code] = NULL
    for code, (dtype, itemsize) in dtypes.items():
        if 0 <= code < NCODES and 0 < itemsize < 128:
            st.dtype_objs[code] = _keep(dtype)
            st.t.itemsize[code] = itemsize
    refused = dict(refused)
    st.refused_dtypes = _keep(refused)
    for code in refused:
        if 0 <= code < NCODES:
            st.t.itemsize[code] = -1
    for code, name in device_names.items():
        if 0 <= code < NDEVICES:
            st.device_names[code] = _keep(name)
            st.t.device_known[code] = True
    st.layout_names = _keep(dict(layout_names))
    st.t.strided = layout_strided
    st.t.meta = device_meta
    st.device_privateuse1 = device_privateuse1
    st.getters_ok = st.getters_present
    bridge_publish(st)


cdef dict _installed_paths(const Installed* st):
    # What every view function asks (_bridge_view.h's bridge_ready): the pointer trick
    # only with shim_ext's check, since without it nothing could tell a tensor whose
    # getters run Python, which may free what the address points at.
    return {name: bool(bridge_ready(st, code)) for code, name in enumerate(PATHS)}


def _installed():
    """Which handle sources are installed: {path name: bool} (diagnostics)."""
    return _installed_paths(bridge_installed_state())


def _activate(int path):
    """Make ``path`` (a code, index into PATHS) the one ``view`` uses; -1 un-chooses."""
    if path != -1 and not _installed()[PATHS[path]]:
        raise RuntimeError(f"path {PATHS[path]!r} is not installed")
    bridge_set_active(path)


def _active_path():
    """The code of the path ``view`` uses, or -1 when none is chosen yet."""
    return bridge_active_path()
