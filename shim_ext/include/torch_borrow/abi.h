/* The C types of every stable-ABI function this project calls through a
 * pointer, declared once: the bridge (bridge/_abi.pxd cimports this header),
 * the benchmarks' native loops and the consumer examples include it. C and
 * C++; needs no torch header, and agrees with torch's own declarations where a
 * file includes both (torch/csrc/inductor/aoti_torch/c/shim.h: the handle is a
 * pointer to the opaque struct AtenTensorOpaque, errors are int32_t, 0 is
 * success), so a function pointer of these types may point at torch's
 * functions. Each typedef names the functions it fits.
 */
#ifndef TORCH_BORROW_ABI_H
#define TORCH_BORROW_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#else
#include <stdbool.h>
#endif

struct AtenTensorOpaque;
typedef struct AtenTensorOpaque* AtenTensorHandle;
typedef int32_t AOTITorchError;

/* torch_tensor_from_pyobject (new reference), torch_tensor_borrow_from_pyobject
 * (borrowed reference): PyObject* as void*. */
typedef AOTITorchError (*torch_borrow_from_pyobject_fn)(void* py_obj, AtenTensorHandle* ret);
/* aoti_torch_delete_tensor_object */
typedef AOTITorchError (*torch_borrow_delete_fn)(AtenTensorHandle tensor);
/* aoti_torch_get_data_ptr */
typedef AOTITorchError (*torch_borrow_get_ptr_fn)(AtenTensorHandle tensor, void** ret);
/* aoti_torch_get_dim, _get_storage_offset, _get_storage_size */
typedef AOTITorchError (*torch_borrow_get_i64_fn)(AtenTensorHandle tensor, int64_t* ret);
/* aoti_torch_get_sizes, _get_strides (borrowed from the TensorImpl) */
typedef AOTITorchError (*torch_borrow_get_i64p_fn)(AtenTensorHandle tensor, int64_t** ret);
/* aoti_torch_get_dtype, _get_device_type, _get_device_index, _get_layout */
typedef AOTITorchError (*torch_borrow_get_i32_fn)(AtenTensorHandle tensor, int32_t* ret);
/* torch_is_conj, torch_is_neg */
typedef AOTITorchError (*torch_borrow_get_flag_fn)(AtenTensorHandle tensor, bool* ret);
/* torch_exception_get_what_without_backtrace (torch 2.13+) */
typedef const char* (*torch_borrow_what_fn)(void);
/* aoti_torch_dtype_float32, aoti_torch_device_type_cpu, aoti_torch_layout_strided, ... */
typedef int32_t (*torch_borrow_code_fn)(void);

/* shim_ext's torch_borrow_custom_metadata (prototype-only, in no patch): why the
 * borrow refuses a tensor, as bits; 0 when its metadata is plain C++ state.
 * torch_tensor_borrow_from_pyobject refuses exactly the tensors with a bit set.
 * torch's owned torch_tensor_from_pyobject accepts them (its copy keeps the
 * TensorImpl alive while their getters run Python); the bridge and consumer.h
 * refuse them on every route, since a pointer + strides description does not
 * fit what such getters compute. */
typedef int32_t (*torch_borrow_custom_metadata_fn)(void* py_obj, int32_t* layout);
enum {
  /* TensorImpl::is_python_dispatch(): a __torch_dispatch__ subclass made it */
  TORCH_BORROW_CUSTOM_PYTHON_KEY = 1,
  /* strides by a TensorImpl subclass (sparse, mkldnn, vmap-batched, ...) */
  TORCH_BORROW_CUSTOM_STRIDES = 2,
  /* sizes and strides by a subclass or in Python, or symbolic (nested,
   * functional, dispatch_sizes_strides_policy=) */
  TORCH_BORROW_CUSTOM_SIZES = 4,
  /* device() by a subclass or in Python (dispatch_device=True) */
  TORCH_BORROW_CUSTOM_DEVICE = 8,
  /* layout() by a subclass or in Python (dispatch_layout=True) */
  TORCH_BORROW_CUSTOM_LAYOUT = 16
};

/* The handshake: each of shim_ext's libraries exports torch_borrow_shim_abi(),
 * returning the TORCH_BORROW_SHIM_ABI it was built with. A reader looks it up
 * before any other symbol of a library that claims to be shim_ext's and uses
 * nothing else of it unless the two agree: a module that merely imports as
 * "shim_ext" (a file of that name on sys.path, another project's) or a build
 * of another ABI is never called. Bump it whenever a prototyped function's
 * signature or a TORCH_BORROW_CUSTOM_* bit changes meaning. */
#define TORCH_BORROW_SHIM_ABI 1
#define TORCH_BORROW_SHIM_ABI_SYMBOL "torch_borrow_shim_abi"
typedef int32_t (*torch_borrow_shim_abi_fn)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TORCH_BORROW_ABI_H */
