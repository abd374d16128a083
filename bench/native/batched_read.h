/* The batched metadata read: one call filling a caller-owned struct, measured as a
 * route of its own and withdrawn from the proposal (a DLPack exchange without its
 * internal copy costs about the same and needs no new struct). Declared once, here;
 * batched_read.cpp implements it against torch's headers, peers_native.c times it.
 * C, no torch header (torch_borrow/abi.h for the handle type). */
#ifndef BENCH_BATCHED_READ_H
#define BENCH_BATCHED_READ_H

#include <stdint.h>

#include <torch_borrow/abi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* sizes and strides are borrowed from the TensorImpl, as aoti_torch_get_sizes /
 * _get_strides return them; data_ptr includes the storage offset; strides and
 * storage_offset are in elements; dtype, device_type and layout use the
 * aoti_torch_dtype_*() / _device_type_*() / _layout_*() codes; storage_nbytes is
 * aoti_torch_get_storage_size's answer. A tensor that is not strided gets data_ptr and
 * strides null, storage_offset and storage_nbytes 0. */
typedef struct TorchTensorMetadata {
  void* data_ptr;
  const int64_t* sizes;
  const int64_t* strides;
  int64_t dim;
  int64_t storage_offset;
  int64_t storage_nbytes;
  int32_t dtype;
  int32_t device_type;
  int32_t device_index;
  int32_t layout;
  uint8_t is_conj;
  uint8_t is_neg;
} TorchTensorMetadata;

/* torch_tensor_get_metadata(handle, &meta): the fill, from any handle. */
typedef AOTITorchError (*torch_tensor_get_metadata_fn)(AtenTensorHandle tensor,
                                                       TorchTensorMetadata* ret);
/* torch_tensor_borrow_metadata_from_pyobject(py_obj, &meta): the borrow
 * (torch_tensor_borrow_from_pyobject, with its refusals) and the fill in one call. */
typedef AOTITorchError (*torch_tensor_borrow_metadata_fn)(void* py_obj,
                                                          TorchTensorMetadata* ret);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BENCH_BATCHED_READ_H */
