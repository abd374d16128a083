# torch_borrow/consumer.pxd: torch_borrow/consumer.h for Cython.
#
#     from torch_borrow.consumer cimport torch_borrow_meta, torch_borrow_read, ...
#
# Compile with the folder shim_ext.get_include() on Cython's include path
# (cythonize(..., include_path=[shim_ext.get_include()])) and on the C compiler's
# (-I, Extension(include_dirs=[...])). Every call needs the GIL, as the header says;
# torch_borrow_raise returns NULL with the exception set, which Cython propagates.
# Sizes and strides are in elements; codes are the stable ABI's (aoti_torch_dtype_*,
# aoti_torch_device_type_*), which torch_borrow_dtype_code / _device_code give by name.

from libc.stdint cimport int32_t, int64_t

cdef extern from "torch_borrow/consumer.h":
    int TORCH_BORROW_CONSUMER_VERSION
    int TORCH_BORROW_MAX_DIMS
    int TORCH_BORROW_MESSAGE_SIZE
    int TORCH_BORROW_INIT_FLAG_GETTERS
    int TORCH_BORROW_INIT_NO_SHIM_EXT

    enum:
        TORCH_BORROW_OK
        TORCH_BORROW_NO_GIL
        TORCH_BORROW_UNAVAILABLE
        TORCH_BORROW_NOT_A_TENSOR
        TORCH_BORROW_REFUSED
        TORCH_BORROW_NO_TORCH

    ctypedef struct torch_borrow_meta:
        void* data               # data_ptr(): the first element, storage offset applied
        int64_t dim
        int64_t sizes[64]        # elements (TORCH_BORROW_MAX_DIMS)
        int64_t strides[64]      # elements, not bytes
        int32_t dtype            # aoti_torch_dtype_* code
        int32_t device_type      # aoti_torch_device_type_* code
        int32_t device_index     # -1: none (CPU)
        int32_t itemsize         # bytes
        int64_t storage_offset   # elements
        int64_t storage_nbytes   # bytes
        int32_t status
        char message[512]

    # The read and its refusal (obj: any object; borrowed, stays the caller's).
    int torch_borrow_init(torch_borrow_meta* m)
    int torch_borrow_read(object obj, torch_borrow_meta* m)
    object torch_borrow_raise(const torch_borrow_meta* m)

    # Which route, why, what it checks, what resolving cost (seconds).
    const char* torch_borrow_route()
    const char* torch_borrow_route_why()
    const char* torch_borrow_route_checks()
    double torch_borrow_init_seconds()
    int torch_borrow_init_route(const char* only, int flags, torch_borrow_meta* m)

    # Next to the read.
    int32_t torch_borrow_dtype_code(const char* name)
    const char* torch_borrow_dtype_name(int32_t code)
    int32_t torch_borrow_device_code(const char* name)
    int torch_borrow_is_contiguous(const torch_borrow_meta* m)
    int torch_borrow_current_stream(torch_borrow_meta* m, void** stream)
