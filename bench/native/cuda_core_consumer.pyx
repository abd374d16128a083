# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
# distutils: language = c++
"""The seed's consumer on every path: a real cuda.core ``StridedMemoryView``, filled the
way cuda.core's own tensor bridge fills it (``cuda_core/cuda/core/_tensor_bridge.pyx``,
``view_as_torch_tensor``), from a handle of each of our routes.

Compiled against the ``.pxd`` files the installed cuda-core wheel ships
(``cuda/core/cu<major>/_memoryview.pxd`` and ``_layout.pxd``; ``cuda_core_consumer.py``
builds it at first use), so the view's C fields are set directly, as cuda.core sets them:
``ptr``, ``readonly = False``, ``exporting_obj = obj`` (the view keeps the tensor alive),
``dl_tensor = NULL``, ``_buffer = None``, ``device_id`` / ``is_device_accessible`` from the
device type (-1 / False on CPU; the index / True on CUDA), ``metadata = dtype code`` (the
dtype is resolved lazily by cuda.core's own ``dtype`` property, as for its AOTI views) and
``_layout`` a ``_StridedLayout`` built by ``init_from_ptr`` (which copies the shape and
strides). The stream argument is not taken: every view here is ``stream_ptr=-1`` (no
stream ordering), as in the seed's benchmark.

Routes to the ``AtenTensorHandle`` (each then makes the same seven
``aoti_torch_get_*`` calls cuda.core makes: data_ptr, dim, sizes, strides, dtype,
device_type, device_index):

- ``view_owned``: ``torch_tensor_from_pyobject`` (a new handle) + getters +
  ``aoti_torch_delete_tensor_object`` in ``finally``, as the seed's shim path does;
- ``view_owned_prototype``: the same through ``owned_prototype.cpp`` (2.14's
  implementation, built for the running torch), for a torch that lacks it;
- ``view_borrow``: ``torch_tensor_borrow_from_pyobject`` (a borrowed handle: no copy, no
  delete);
- ``view_pointer``: ``(char*)obj + sizeof(PyObject)`` after a type check, cuda.core's
  ``pyobj_to_aten_handle`` (the offset proven by ``bridge._resolve``).

Routes through DLPack (no handle; the view filled from the ``DLTensor`` instead, as
cuda.core's DLPack exchange path reads it: ``data + byte_offset``, shape, strides in
elements (NULL: dense, as ``init_from_ptr`` takes it), the device from
``DLDevice.device_type``, ``metadata`` the AOTI dtype code of the DLPack dtype (an index
into a C table), the itemsize from that code by the AOTI routes' own dict look-up, so the
DLPack routes do the handle routes' work, ``dtype`` resolves exactly as on the AOTI routes
and every field compares equal):

- ``view_dlpack``: torch's own ``DLPackExchangeAPI.dltensor_from_py_object_no_sync``
  (torch 2.10+), which copies the ``at::Tensor`` and destroys the copy;
- ``view_dlpack_fixed``: the same slot of the copy of torch's API that
  ``proposal/fixes/internal_fixes.cpp`` hands out, whose ``dltensor_from_py_object_no_sync``
  is the DLPack patches' own function (``proposal/patches/dlpack/``, cut out of the
  patched ``Module.cpp``: a borrowed reference, the real-type check, the conj/neg refusal).

The interpreter fix needs no function of its own here: ``view_owned`` and
``view_owned_prototype`` are timed with it installed around the loop
(``cuda_core_consumer.Consumer.context``).

No symbol is linked: every function is called through an address that ``install``
receives from ``bridge._resolve`` (the same addresses the bridge installs), so the module
never loads a torch library and never needs ``RTLD_GLOBAL``.
"""

from libc.stdint cimport int32_t, int64_t, intptr_t, uint32_t, uintptr_t
from cpython.object cimport PyObject, PyTypeObject, PyObject_TypeCheck

from cuda.core._dlpack cimport DLTensor
from cuda.core._memoryview cimport StridedMemoryView
from cuda.core._layout cimport _StridedLayout

# The stable ABI's types, declared once (shim_ext/include/torch_borrow/abi.h).
from bridge._abi cimport AtenTensorHandle
from bridge._abi cimport torch_borrow_delete_fn as delete_fn
from bridge._abi cimport torch_borrow_from_pyobject_fn as from_pyobject_fn
from bridge._abi cimport torch_borrow_get_i32_fn as get_i32_fn
from bridge._abi cimport torch_borrow_get_i64_fn as get_i64_fn
from bridge._abi cimport torch_borrow_get_i64p_fn as get_i64p_fn
from bridge._abi cimport torch_borrow_get_ptr_fn as get_ptr_fn

cdef from_pyobject_fn _owned = NULL
cdef from_pyobject_fn _owned_prototype = NULL
cdef delete_fn _delete = NULL
cdef from_pyobject_fn _borrow = NULL
cdef get_ptr_fn _get_data_ptr = NULL
cdef get_i64_fn _get_dim = NULL
cdef get_i64p_fn _get_sizes = NULL
cdef get_i64p_fn _get_strides = NULL
cdef get_i32_fn _get_dtype = NULL
cdef get_i32_fn _get_device_type = NULL
cdef get_i32_fn _get_device_index = NULL
cdef Py_ssize_t _offset = -1
cdef PyTypeObject* _tensor_type = NULL
cdef object _tensor_type_ref = None
cdef int32_t _DEVICE_TYPE_CPU = -1
cdef int32_t _DEVICE_TYPE_CUDA = -1
#: AOTI dtype code -> itemsize, as cuda.core's ``_build_itemsize_map`` (a dict lookup).
cdef dict _itemsize_map = None

# DLPack's dltensor_from_py_object_no_sync: 0, or -1 with a Python exception set.
ctypedef int (*dltensor_fn)(void*, DLTensor*) except -1

# The head of DLPack 1.x's DLPackExchangeAPI (dlpack.h 1.3: a header of the version and
# prev_api, then five function pointers in this order), under a name of its own: the
# cuda-core wheel's dlpack.h (and its .pxd) may predate the exchange API, and the
# layout is DLPack's ABI, fixed for every 1.x (install_dlpack checks major == 1).
cdef extern from *:
    """
    typedef struct {
      struct { uint32_t major; uint32_t minor; } version;
      void* prev_api;
      void* managed_tensor_allocator;
      void* managed_tensor_from_py_object_no_sync;
      void* managed_tensor_to_py_object_no_sync;
      void* dltensor_from_py_object_no_sync;
      void* current_work_stream;
    } bench_dlpack_exchange_api_v1;
    """
    ctypedef struct bench_api_version "struct { uint32_t major; uint32_t minor; }":
        uint32_t major
    ctypedef struct bench_dlpack_exchange_api_v1:
        bench_api_version version
        void* dltensor_from_py_object_no_sync
cdef dltensor_fn _dltensor = NULL
cdef dltensor_fn _dltensor_fixed = NULL
# A DLPack dtype (code, bits, lanes 1) -> its AOTI dtype code, -1 where none:
# _dl_aoti[code][bits / 8]. A C table, not a dict keyed by the packed dtype: that key is
# past CPython's cached small ints, so each look-up would allocate an int the handle
# routes' look-up (a small AOTI code) does not, and time the table rather than the route.
cdef enum:
    _DL_CODES = 16
    _DL_BYTES = 17  # bits 0, 8, ..., 128
cdef int32_t _dl_aoti[_DL_CODES][_DL_BYTES]
# DLPack's device types (dlpack.h's DLDeviceType, fixed by the DLPack standard)
cdef int32_t _kDLCPU = 1
cdef int32_t _kDLCUDA = 2

PYOBJECT_SIZE = sizeof(PyObject)


cdef inline uintptr_t _address(dict addresses, str name) except? 0:
    return <uintptr_t>addresses.get(name, 0)


def install(dict addresses, object tensor_type, Py_ssize_t offset, dict itemsizes,
            int32_t device_type_cpu, int32_t device_type_cuda):
    """Install the function addresses (``{symbol name: int}``; 0 or missing: that route
    is unavailable), torch.Tensor, the proven handle offset (-1: none), the dtype code ->
    itemsize table and the two device type codes."""
    global _owned, _owned_prototype, _delete, _borrow, _get_data_ptr, _get_dim, _get_sizes
    global _get_strides, _get_dtype, _get_device_type, _get_device_index, _offset
    global _tensor_type, _tensor_type_ref, _itemsize_map, _DEVICE_TYPE_CPU, _DEVICE_TYPE_CUDA
    _owned = <from_pyobject_fn><void*>_address(addresses, "torch_tensor_from_pyobject")
    _owned_prototype = <from_pyobject_fn><void*>_address(addresses, "owned_prototype_tensor_from_pyobject")
    _delete = <delete_fn><void*>_address(addresses, "aoti_torch_delete_tensor_object")
    _borrow = <from_pyobject_fn><void*>_address(addresses, "torch_tensor_borrow_from_pyobject")
    _get_data_ptr = <get_ptr_fn><void*>_address(addresses, "aoti_torch_get_data_ptr")
    _get_dim = <get_i64_fn><void*>_address(addresses, "aoti_torch_get_dim")
    _get_sizes = <get_i64p_fn><void*>_address(addresses, "aoti_torch_get_sizes")
    _get_strides = <get_i64p_fn><void*>_address(addresses, "aoti_torch_get_strides")
    _get_dtype = <get_i32_fn><void*>_address(addresses, "aoti_torch_get_dtype")
    _get_device_type = <get_i32_fn><void*>_address(addresses, "aoti_torch_get_device_type")
    _get_device_index = <get_i32_fn><void*>_address(addresses, "aoti_torch_get_device_index")
    _offset = offset
    _tensor_type_ref = tensor_type
    _tensor_type = <PyTypeObject*>tensor_type
    _itemsize_map = dict(itemsizes)
    _DEVICE_TYPE_CPU = device_type_cpu
    _DEVICE_TYPE_CUDA = device_type_cuda
    if (_get_data_ptr == NULL or _get_dim == NULL or _get_sizes == NULL or
            _get_strides == NULL or _get_dtype == NULL or _get_device_type == NULL or
            _get_device_index == NULL):
        # No route may run without every getter: _fill calls them unchecked.
        _owned = _owned_prototype = _borrow = NULL
        _offset = -1
        raise RuntimeError("an aoti_torch_get_* getter is missing: no route can fill a view")


cdef inline int check_aoti(int32_t err, const char* name) except? -1:
    if err != 0:
        raise RuntimeError(f"{name.decode()} failed")
    return 0


cdef int _get_itemsize(int32_t dtype_code) except -1:
    result = _itemsize_map.get(dtype_code)
    if result is None:
        raise TypeError(f"Unsupported AOTI dtype code: {dtype_code}")
    return <int>result


cdef StridedMemoryView _fill(object obj, AtenTensorHandle handle):
    """cuda.core's ``view_as_torch_tensor`` body (stream_ptr=-1, new view), through the
    installed getters."""
    cdef void* data_ptr
    cdef int64_t ndim
    cdef int64_t* sizes_ptr
    cdef int64_t* strides_ptr
    cdef int32_t dtype_code
    cdef int32_t device_type, device_index
    cdef StridedMemoryView buf
    cdef int itemsize
    cdef _StridedLayout layout

    check_aoti(_get_data_ptr(handle, &data_ptr), b"aoti_torch_get_data_ptr")
    check_aoti(_get_dim(handle, &ndim), b"aoti_torch_get_dim")
    check_aoti(_get_sizes(handle, &sizes_ptr), b"aoti_torch_get_sizes")
    check_aoti(_get_strides(handle, &strides_ptr), b"aoti_torch_get_strides")
    check_aoti(_get_dtype(handle, &dtype_code), b"aoti_torch_get_dtype")
    check_aoti(_get_device_type(handle, &device_type), b"aoti_torch_get_device_type")
    check_aoti(_get_device_index(handle, &device_index), b"aoti_torch_get_device_index")

    # As in cuda.core's own bridge: sizes_ptr / strides_ptr point into the TensorImpl and
    # are read after allocating the view below (an allocation may run the garbage
    # collector); kept so to time cuda.core's code as it is.
    buf = StridedMemoryView.__new__(StridedMemoryView)
    buf.ptr = <intptr_t>data_ptr
    buf.readonly = False
    buf.exporting_obj = obj
    buf.dl_tensor = NULL
    buf.metadata = None
    buf._buffer = None

    if device_type == _DEVICE_TYPE_CPU:
        buf.device_id = -1
        buf.is_device_accessible = False
    elif device_type == _DEVICE_TYPE_CUDA:
        buf.device_id = <int>device_index
        buf.is_device_accessible = True
    else:
        raise BufferError(f"Unsupported device type from torch tensor "
                          f"(AOTI device type id: {device_type})")

    buf.metadata = <int>dtype_code
    itemsize = _get_itemsize(dtype_code)
    layout = _StridedLayout.__new__(_StridedLayout)
    layout.init_from_ptr(<int>ndim, sizes_ptr, strides_ptr, itemsize)
    buf._layout = layout
    return buf


cdef inline int _not_installed(const char* what) except -1:
    raise RuntimeError(f"{what.decode()} is not installed (unavailable here)")


def view_owned(object obj):
    """``torch_tensor_from_pyobject`` + getters + delete (torch's own, 2.14+)."""
    cdef AtenTensorHandle handle = NULL
    if _owned == NULL or _delete == NULL:
        _not_installed(b"torch_tensor_from_pyobject")
    check_aoti(_owned(<void*>obj, &handle), b"torch_tensor_from_pyobject")
    try:
        return _fill(obj, handle)
    finally:
        _delete(handle)


def view_owned_prototype(object obj):
    """The same through ``owned_prototype.cpp`` (2.14's implementation, built for this torch)."""
    cdef AtenTensorHandle handle = NULL
    if _owned_prototype == NULL or _delete == NULL:
        _not_installed(b"owned_prototype_tensor_from_pyobject")
    check_aoti(_owned_prototype(<void*>obj, &handle), b"owned_prototype_tensor_from_pyobject")
    try:
        return _fill(obj, handle)
    finally:
        _delete(handle)


def view_borrow(object obj):
    """``torch_tensor_borrow_from_pyobject`` (borrowed handle) + getters."""
    cdef AtenTensorHandle handle = NULL
    if _borrow == NULL:
        _not_installed(b"torch_tensor_borrow_from_pyobject")
    check_aoti(_borrow(<void*>obj, &handle), b"torch_tensor_borrow_from_pyobject")
    return _fill(obj, handle)


def view_pointer(object obj):
    """``(char*)obj + sizeof(PyObject)`` (cuda.core's ``pyobj_to_aten_handle``) + getters,
    after the type check cuda.core's router makes before it (here ``PyObject_TypeCheck``)."""
    if _offset < 0 or _tensor_type == NULL:
        _not_installed(b"the pointer trick")
    if not PyObject_TypeCheck(obj, _tensor_type):
        raise TypeError(f"expected torch.Tensor, got {type(obj).__qualname__}")
    return _fill(obj, <AtenTensorHandle>(<char*><PyObject*>obj + _offset))


cdef dltensor_fn _slot(uintptr_t api) except? NULL:
    cdef bench_dlpack_exchange_api_v1* a = <bench_dlpack_exchange_api_v1*><void*>api
    if api == 0:
        return NULL
    if a.version.major != 1:
        raise RuntimeError(f"DLPackExchangeAPI major version {a.version.major}: only 1.x's "
                           "layout is known here")
    return <dltensor_fn>a.dltensor_from_py_object_no_sync


def install_dlpack(uintptr_t torch_api, uintptr_t fixed_api, dict dl_dtypes):
    """Install the DLPack routes: ``torch_api`` (torch's ``DLPackExchangeAPI``, the capsule
    ``torch.Tensor.__dlpack_c_exchange_api__``) and ``fixed_api`` (a copy of it with the
    DLPack patches' own function in that slot, ``internal_fixes.InternalFixes.
    dlpack_api_patched``); 0: that route is unavailable.
    ``dl_dtypes``: ``{code | bits << 8 | lanes << 16: (AOTI dtype code, itemsize)}``; a
    dtype with lanes other than 1, a code past 15 or bits not a multiple of 8 up to 128 is
    left out (unsupported, as a dtype missing from the map)."""
    global _dltensor, _dltensor_fixed
    cdef int code, nbytes
    for code in range(_DL_CODES):
        for nbytes in range(_DL_BYTES):
            _dl_aoti[code][nbytes] = -1
    for key, (aoti, _itemsize) in dl_dtypes.items():
        code, bits, lanes = key & 0xFF, (key >> 8) & 0xFF, key >> 16
        if lanes == 1 and code < _DL_CODES and bits % 8 == 0 and bits // 8 < _DL_BYTES:
            _dl_aoti[code][bits // 8] = aoti
    _dltensor = _slot(torch_api)
    _dltensor_fixed = _slot(fixed_api)


cdef StridedMemoryView _fill_dlpack(object obj, dltensor_fn fn):
    """The view from one non-owning ``DLTensor`` (valid while ``obj`` lives: the view
    keeps ``obj`` as its ``exporting_obj``; nothing of the DLTensor is kept)."""
    cdef DLTensor dl
    cdef StridedMemoryView buf
    cdef _StridedLayout layout
    cdef int32_t device_type
    cdef int32_t aoti
    cdef int itemsize
    fn(<void*>obj, &dl)

    buf = StridedMemoryView.__new__(StridedMemoryView)
    buf.ptr = <intptr_t>dl.data + <intptr_t>dl.byte_offset
    buf.readonly = False
    buf.exporting_obj = obj
    buf.dl_tensor = NULL
    buf.metadata = None
    buf._buffer = None

    device_type = <int32_t>dl.device.device_type
    if device_type == _kDLCPU:
        buf.device_id = -1
        buf.is_device_accessible = False
    elif device_type == _kDLCUDA:
        buf.device_id = <int>dl.device.device_id
        buf.is_device_accessible = True
    else:
        raise BufferError(f"Unsupported device type from torch tensor "
                          f"(DLPack device type: {device_type})")

    aoti = -1
    if (dl.dtype.lanes == 1 and dl.dtype.code < _DL_CODES and dl.dtype.bits % 8 == 0
            and dl.dtype.bits // 8 < _DL_BYTES):
        aoti = _dl_aoti[dl.dtype.code][dl.dtype.bits // 8]
    if aoti < 0:
        raise TypeError(f"Unsupported DLPack dtype (code {dl.dtype.code}, bits "
                        f"{dl.dtype.bits}, lanes {dl.dtype.lanes})")
    buf.metadata = <int>aoti
    itemsize = _get_itemsize(aoti)
    layout = _StridedLayout.__new__(_StridedLayout)
    layout.init_from_ptr(<int>dl.ndim, dl.shape, dl.strides, itemsize)
    buf._layout = layout
    return buf


def view_dlpack(object obj):
    """torch's ``dltensor_from_py_object_no_sync`` (an owning copy made and destroyed)."""
    if _dltensor == NULL:
        _not_installed(b"DLPackExchangeAPI.dltensor_from_py_object_no_sync")
    return _fill_dlpack(obj, _dltensor)


def view_dlpack_fixed(object obj):
    """The borrowed ``dltensor_from_py_object_no_sync`` (``proposal/fixes/internal_fixes.cpp``)."""
    if _dltensor_fixed == NULL:
        _not_installed(b"the borrowed dltensor_from_py_object_no_sync")
    return _fill_dlpack(obj, _dltensor_fixed)


def routes():
    """``{route: installed?}``."""
    return {"owned": _owned != NULL and _delete != NULL,
            "owned_prototype": _owned_prototype != NULL and _delete != NULL,
            "borrow": _borrow != NULL,
            "pointer": _offset >= 0 and _tensor_type != NULL,
            "dlpack": _dltensor != NULL,
            "dlpack_fixed": _dltensor_fixed != NULL}
