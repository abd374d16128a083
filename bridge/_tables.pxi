# What the tables learn from torch's Python module, through the C home of each rule
# (shim_ext/include/torch_borrow/tables.h, shared with consumer.h). Cold path: called by
# bridge._select / bridge._resolve at resolution only.

cdef extern from "torch_borrow/tables.h":
    ctypedef int (*torch_borrow_dtype_visit)(void* ctx, PyObject* dtype, const char* name,
                                             int itemsize, const char* refused,
                                             PyObject* probe) except -1
    ctypedef int (*torch_borrow_device_visit)(void* ctx, int code,
                                              const char* lower) except -1
    int TORCH_BORROW_NSTABLE_DEVICES
    const char* const* torch_borrow_stable_devices
    int TORCH_BORROW_NTRANSFORM_KEYS
    const char* const* torch_borrow_transform_keys
    int torch_borrow_each_dtype(object torch, torch_borrow_dtype_visit visit,
                                void* ctx) except? -1
    int torch_borrow_each_device(object torch, torch_borrow_device_visit visit,
                                 void* ctx) except? -1
    enum: TORCH_BORROW_NGUARDS
    void torch_borrow_guards_enter(object torch, PyObject** guards)
    void torch_borrow_guards_exit(PyObject** guards)
    enum: TORCH_BORROW_FROM_TORCH, TORCH_BORROW_FROM_PROTOTYPE
    void* torch_borrow_find_prototyped(const char* name, void* const* libs, int nlibs,
                                       int skip, int* at, char* why, size_t n)

cdef extern from "torch_borrow/libraries.h":
    enum: TORCH_BORROW_NLIBRARY_STEMS, TORCH_BORROW_MAX_LIBRARIES
    const char* const* torch_borrow_library_stems
    ctypedef struct torch_borrow_libraries:
        int n
        void* handle[TORCH_BORROW_MAX_LIBRARIES]
        char origin[TORCH_BORROW_MAX_LIBRARIES][32]
    int torch_borrow_libraries_open(object torch, torch_borrow_libraries* out)
    void* torch_borrow_libraries_find(const torch_borrow_libraries* libs, const char* name,
                                      int* at)


#: torch/lib's libraries in the search order (stems; ``torch_borrow/libraries.h``), which
#: ``torch._C``'s own handle follows.
LIBRARIES = tuple(torch_borrow_library_stems[i].decode()
                  for i in range(TORCH_BORROW_NLIBRARY_STEMS))


cdef class _TorchLibraries:
    """torch's libraries loaded in this process, found by ``torch_borrow/libraries.h``'s
    search, the one consumer.h resolves through: torch/lib's ``LIBRARIES`` in order (each
    ``.so``, else ``.dylib``), then ``torch._C``'s own handle ("torch._C's dependencies"),
    whose look-up searches every library it depends on. Each is opened with
    ``dlopen(RTLD_NOLOAD)``: nothing is loaded, nothing enters the global namespace.

    ``torch`` is the imported module. Empty off POSIX (no ``RTLD_NOLOAD``) or where none
    is loaded. The handles are kept for good (never ``dlclose``'d; libraries.h says why),
    so ``handles`` and the addresses ``find`` returns stay valid for the process.
    """

    cdef torch_borrow_libraries libs

    def __cinit__(self, torch):
        torch_borrow_libraries_open(torch, &self.libs)

    def __len__(self):
        return self.libs.n

    @property
    def origins(self):
        """Each library's file name (``"torch._C's dependencies"`` last), in search
        order."""
        return tuple(self.libs.origin[i].decode() for i in range(self.libs.n))

    @property
    def handles(self):
        """Each library's dlopen handle as an int, in search order (for
        ``_find_prototyped``)."""
        return tuple(<uintptr_t>self.libs.handle[i] for i in range(self.libs.n))

    def find(self, name):
        """``(address as an int, origin)`` of ``name`` in the first library that exports
        it, or None. dlsym only: calls nothing it finds."""
        cdef int at = -1
        cdef void* fn = torch_borrow_libraries_find(&self.libs, name.encode(), &at)
        return None if fn == NULL else (<uintptr_t>fn, self.libs.origin[at].decode())


#: The device types whose codes the stable ABI exports (``aoti_torch_device_type_<name>``):
#: the known ones where torch binds no c10::DeviceType enum (``tables.h``).
STABLE_DEVICES = tuple(torch_borrow_stable_devices[i].decode()
                       for i in range(TORCH_BORROW_NSTABLE_DEVICES))
#: Dispatch keys no probe may carry: each marks a tensor whose metadata a mode or a
#: functional transform answers (``torch._C.DispatchKey`` names, ``tables.h``).
TRANSFORM_KEYS = tuple(torch_borrow_transform_keys[i].decode()
                       for i in range(TORCH_BORROW_NTRANSFORM_KEYS))


cdef int _visit_dtype(void* ctx, PyObject* dtype, const char* name, int itemsize,
                      const char* refused, PyObject* probe) except -1:
    # ctx: (plain, code_of, dtypes, refused); an exception stops the walk and is raised
    # by _dtype_table.
    plain, code_of, dtypes, refusals = <tuple>ctx
    t = <object>probe
    plain(t)
    if t.dtype is not <object>dtype:
        raise RuntimeError(f"torch.empty(dtype={<object>dtype}) made a {t.dtype} tensor")
    code = code_of(t)
    if refused != NULL:
        refusals[code] = refused.decode()
    else:
        dtypes[code] = (<object>dtype, itemsize)
    return 0


cdef int _visit_device(void* ctx, int code, const char* lower) except -1:
    (<dict>ctx)[code] = lower.decode()
    return 0


def _dtype_table(torch, plain, code_of):
    """``(dtypes, refused)`` for every dtype torch exposes and can allocate, by the rule
    of ``torch_borrow/tables.h`` (``torch_borrow_each_dtype``,
    ``torch_borrow_dtype_rule``):
    ``dtypes`` maps a c10::ScalarType code to ``(torch.dtype, itemsize in bytes)``,
    ``refused`` a code to why its tensors get no view (quantized, sub-byte).

    ``plain(probe)`` raises unless the probe ``torch.empty(0, dtype=...)`` is a plain
    tensor; ``code_of(probe)`` reads its code through an installed handle source. The
    caller enters its guards (``_resolve.plain_torch``). Raises what either raises, and
    RuntimeError when a probe reports another dtype than it was made with."""
    dtypes, refused = {}, {}
    ctx = (plain, code_of, dtypes, refused)
    torch_borrow_each_dtype(torch, _visit_dtype, <void*>ctx)
    return dtypes, refused


def _device_enum(torch):
    """``{code: member name lower-cased}`` for each member of c10::DeviceType as torch
    binds it (``torch._C._autograd.DeviceType``, through ``torch_borrow_each_device`` of
    ``torch_borrow/tables.h``); empty when torch binds no such enum."""
    devices = {}
    torch_borrow_each_device(torch, _visit_device, <void*>devices)
    return devices


def _guards_enter(torch):
    """Enter the set-up's guards (``torch_borrow_guards_enter`` of ``tables.h``: no
    ``__torch_function__``, no ``__torch_dispatch__``, no functorch transform, no
    functionalization); returns what ``_guards_exit`` takes. A guard this torch lacks is
    skipped."""
    cdef PyObject* g[TORCH_BORROW_NGUARDS]
    torch_borrow_guards_enter(torch, g)
    entered = []
    for i in range(TORCH_BORROW_NGUARDS):
        entered.append(None if g[i] == NULL else <object>g[i])
        Py_XDECREF(g[i])
    return tuple(entered)


def _guards_exit(tuple entered):
    """Exit the guards ``_guards_enter`` returned, in the reverse order."""
    cdef PyObject* g[TORCH_BORROW_NGUARDS]
    for i in range(TORCH_BORROW_NGUARDS):
        obj = entered[i]
        g[i] = NULL if obj is None else <PyObject*>obj
        Py_XINCREF(g[i])
    torch_borrow_guards_exit(g)


def _find_prototyped(name, handles, skip_torch=False, skip_prototype=False):
    """Where a function shim_ext prototypes comes from, by ``torch_borrow/tables.h``'s
    rule (``torch_borrow_find_prototyped``, consumer.h's too): the first of ``handles``
    (dlopen handles of torch's loaded libraries, as ints) that exports ``name``, else
    shim_ext's (``shim_ext.load()``, which refuses a build for another torch).

    Returns ``(address or None, at, why)``: ``at`` is the index in ``handles`` of the
    library that had it, -1 for ``shim_ext._entry``, -2 for ``shim_ext._borrow``; ``why``
    says why the address is None ("" otherwise). ``skip_torch`` / ``skip_prototype``
    leave a side out (fault injection: as if it lacked ``name``; shim_ext is then not
    imported). Never raises for a missing function."""
    cdef Py_ssize_t n = len(handles), i
    cdef void** libs = <void**>PyMem_RawMalloc((n if n else 1) * sizeof(void*))
    cdef int at = 0
    cdef char why[1024]
    cdef void* fn
    if libs == NULL:
        raise MemoryError()
    try:
        for i in range(n):
            libs[i] = <void*><uintptr_t>handles[i]
        fn = torch_borrow_find_prototyped(
            name.encode(), libs, <int>n,
            (TORCH_BORROW_FROM_TORCH if skip_torch else 0)
            | (TORCH_BORROW_FROM_PROTOTYPE if skip_prototype else 0),
            &at, why, sizeof(why))
    finally:
        PyMem_RawFree(libs)
    return (None if fn == NULL else <uintptr_t>fn), at, why.decode("utf-8", "replace")
