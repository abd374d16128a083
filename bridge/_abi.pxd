# The stable C ABI's types and the prototype's refusal bits, as declared once in
# shim_ext/include/torch_borrow/abi.h (no torch header needed); bridge/_bridge.pyx and
# the benchmarks' Cython modules cimport them from here.
from libc.stdint cimport int32_t, int64_t


cdef extern from "torch_borrow/abi.h":
    ctypedef unsigned char abi_bool "bool"

    cdef struct AtenTensorOpaque
    ctypedef AtenTensorOpaque* AtenTensorHandle
    ctypedef int32_t AOTITorchError

    ctypedef AOTITorchError (*torch_borrow_from_pyobject_fn)(void*, AtenTensorHandle*) noexcept nogil
    ctypedef AOTITorchError (*torch_borrow_delete_fn)(AtenTensorHandle) noexcept nogil
    ctypedef AOTITorchError (*torch_borrow_get_ptr_fn)(AtenTensorHandle, void**) noexcept nogil
    ctypedef AOTITorchError (*torch_borrow_get_i64_fn)(AtenTensorHandle, int64_t*) noexcept nogil
    ctypedef AOTITorchError (*torch_borrow_get_i64p_fn)(AtenTensorHandle, int64_t**) noexcept nogil
    ctypedef AOTITorchError (*torch_borrow_get_i32_fn)(AtenTensorHandle, int32_t*) noexcept nogil
    ctypedef AOTITorchError (*torch_borrow_get_flag_fn)(AtenTensorHandle, abi_bool*) noexcept nogil
    ctypedef const char* (*torch_borrow_what_fn)() noexcept nogil
    ctypedef int32_t (*torch_borrow_code_fn)() noexcept nogil
    ctypedef int32_t (*torch_borrow_custom_metadata_fn)(void*, int32_t*) noexcept nogil

    enum:
        TORCH_BORROW_CUSTOM_PYTHON_KEY
        TORCH_BORROW_CUSTOM_STRIDES
        TORCH_BORROW_CUSTOM_SIZES
        TORCH_BORROW_CUSTOM_DEVICE
        TORCH_BORROW_CUSTOM_LAYOUT
