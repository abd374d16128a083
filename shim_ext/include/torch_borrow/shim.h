// Prototype declarations of torch_tensor_borrow_from_pyobject and of the two
// flag getters a metadata-only consumer needs to be correct (torch_is_conj,
// torch_is_neg: the stable ABI has no other way to see those bits).
//
// The blocks between the BEGIN/END markers are, byte for byte, what
// proposal/patches/0001 and 0002 add to the 2.16 block of
// torch/csrc/stable/c/shim.h (tests/test_proposal.py checks that they do not
// drift). The longer contract (what "borrowed" means, its precedents, the GIL)
// is in the docs note the patch adds. Everything outside the markers exists
// only so that the prototype compiles against an installed torch whose
// headers predate the version block it lives in.
#pragma once

#include <torch/csrc/inductor/aoti_torch/c/shim.h>

#if __has_include(<torch/csrc/stable/version.h>)
#include <torch/csrc/stable/version.h>
#endif

#ifndef TORCH_VERSION_2_16_0
#define TORCH_VERSION_2_16_0 (((0ULL + 2) << 56) | ((0ULL + 16) << 48))
#endif

// The installed headers announce their own (older) feature version, which
// would hide the 2.16 block. The prototype is built outside libtorch, so it
// declares the block unconditionally for the span of the hunk.
#pragma push_macro("TORCH_FEATURE_VERSION")
#undef TORCH_FEATURE_VERSION
#define TORCH_FEATURE_VERSION TORCH_VERSION_2_16_0

#ifdef __cplusplus
extern "C" {
#endif

#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_16_0

// BEGIN shim.h 0001
// Borrow the at::Tensor a Python torch.Tensor holds: no allocation, no
// refcount change. The handle is valid while py_obj is alive and its tensor is
// not replaced; anything that may run Python code may invalidate it, and after
// torch.utils.swap_tensors, `.data =` or set_() it is unspecified. It has the
// C type of an owning handle but is borrowed, as torch::stable::Tensor::get()
// is: never delete it (aoti_torch_delete_tensor_object), wrap it in
// torch::stable::Tensor, box it in a StableIValue (torch_call_dispatcher,
// StableList) or pass it as the dst of aoti_torch_assign_tensors.
AOTI_TORCH_EXPORT AOTITorchError torch_tensor_borrow_from_pyobject(
    void* py_obj,
    AtenTensorHandle* ret); // returns borrowed reference
// END shim.h 0001

// BEGIN shim.h 0002
// Whether the conjugate (negative) bit is set: a lazy conj() (neg) view whose
// memory holds the unconjugated (unnegated) values until resolve_conj()
// (resolve_neg()).
AOTI_TORCH_EXPORT AOTITorchError
torch_is_conj(AtenTensorHandle tensor, bool* ret_is_conj);

AOTI_TORCH_EXPORT AOTITorchError
torch_is_neg(AtenTensorHandle tensor, bool* ret_is_neg);
// END shim.h 0002

// BEGIN prototype-only: batched read (withdrawn from the series)
// A tensor's metadata in one call, filled into a caller-owned struct. The
// caller sets struct_size to sizeof(TorchTensorMetadata) as it was compiled;
// the callee fills the fields both know and sets struct_size to the bytes it
// filled (as sched_getattr(2) does with sched_attr.size), so either side may be
// newer. sizes and strides are borrowed, as from aoti_torch_get_sizes /
// _get_strides; data_ptr includes the storage offset; strides and
// storage_offset are in elements; dtype, device_type and layout use the
// aoti_torch_dtype_*() / _device_type_*() / _layout_*() codes. A tensor that is
// not strided gets data_ptr, strides null and storage_offset 0.
// is_python_dispatch is TensorImpl::is_python_dispatch(): a __torch_dispatch__
// subclass may compute its sizes and strides in Python, so for such a tensor
// nothing else is read (every other field zero) and no Python code runs.
// storage_nbytes is the storage's size, as aoti_torch_get_storage_size
// reports it (0 for a tensor that is not strided). Both came after the first
// definition (sizeof 72): they are filled only for a caller whose struct_size
// covers the whole struct, and a __torch_dispatch__ tensor is an error for an
// older caller, which has no field to be told in.
struct TorchTensorMetadata {
  uint64_t struct_size;
  void* data_ptr;
  const int64_t* sizes;
  const int64_t* strides;
  int64_t dim;
  int64_t storage_offset;
  int32_t dtype;
  int32_t device_type;
  int32_t device_index;
  int32_t layout;
  uint8_t is_conj;
  uint8_t is_neg;
  uint8_t is_python_dispatch;
  int64_t storage_nbytes;
};

AOTI_TORCH_EXPORT AOTITorchError
torch_tensor_get_metadata(AtenTensorHandle tensor, TorchTensorMetadata* ret);

// torch_tensor_borrow_from_pyobject and torch_tensor_get_metadata in one call:
// the metadata of the tensor a Python torch.Tensor holds, with the same
// contract (the sizes and strides are borrowed from py_obj's tensor).
AOTI_TORCH_EXPORT AOTITorchError torch_tensor_borrow_metadata_from_pyobject(
    void* py_obj,
    TorchTensorMetadata* ret);
// END prototype-only: batched read

#endif // TORCH_FEATURE_VERSION >= TORCH_VERSION_2_16_0

#ifdef __cplusplus
} // extern "C"
#endif

#pragma pop_macro("TORCH_FEATURE_VERSION")
