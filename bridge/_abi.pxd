# The stable C ABI's types and the prototype's refusal bits, as declared once in
# shim_ext/include/torch_borrow/abi.h (no torch header needed), and the one reader that
# the bridge and consumer.h share (torch_borrow/reader.h); bridge/_bridge.pyx and the
# benchmarks' Cython modules cimport them from here.
from libc.stdint cimport int8_t, int32_t, int64_t, uintptr_t


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


cdef extern from "torch_borrow/reader.h":
    enum:
        TORCH_BORROW_NCODES
        TORCH_BORROW_NDEVICES

    ctypedef struct torch_borrow_getters:
        torch_borrow_get_i32_fn layout
        torch_borrow_get_ptr_fn data_ptr
        torch_borrow_get_i64_fn storage_offset
        torch_borrow_get_i64_fn storage_size
        torch_borrow_get_i64_fn dim
        torch_borrow_get_i64p_fn sizes
        torch_borrow_get_i64p_fn strides
        torch_borrow_get_i32_fn dtype
        torch_borrow_get_i32_fn device_type
        torch_borrow_get_i32_fn device_index
        torch_borrow_get_flag_fn is_conj
        torch_borrow_get_flag_fn is_neg

    # TORCH_BORROW_GETTER_LIST as a table: the getters' symbol names, written once there.
    enum:
        TORCH_BORROW_NGETTERS
    ctypedef struct torch_borrow_getter_symbol:
        const char* name
        size_t offset
    const torch_borrow_getter_symbol* torch_borrow_getter_symbols() noexcept nogil
    int torch_borrow_getters_complete(const torch_borrow_getters* g) noexcept nogil

    # Array sizes: TORCH_BORROW_NCODES, TORCH_BORROW_NDEVICES (Cython needs literals).
    ctypedef struct torch_borrow_tables:
        int32_t strided
        int32_t meta
        int8_t itemsize[256]
        int8_t device_known[64]

    ctypedef struct torch_borrow_fields:
        void* ptr
        int64_t ndim
        int64_t* sizes
        int64_t* strides
        int64_t offset
        int64_t nbytes
        int32_t dtype
        int32_t device_type
        int32_t device_index
        int32_t layout
        int8_t itemsize

    enum:
        TORCH_BORROW_READ_LAYOUT
        TORCH_BORROW_READ_CONJ
        TORCH_BORROW_READ_NEG

    const char* torch_borrow_read_words(int stage, const torch_borrow_fields* x,
                                        const char* layout_name, const char* verb,
                                        char* buf, size_t n) noexcept nogil
