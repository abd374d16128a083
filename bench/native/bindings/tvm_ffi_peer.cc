// The apache-tvm-ffi peer: what a kernel author exporting a TVM FFI function pays to
// receive one tensor. Built by bench/peers_bindings.py through tvm_ffi.cpp.load (the
// package's own ninja build) into build/bench-<torch>/tvm_ffi/.
//
// From Python a torch.Tensor argument is converted by tvm_ffi's argument setter: on a
// torch that exposes __dlpack_c_exchange_api__ (2.10+), through the DLPack exchange
// API's managed_tensor_from_py_object_no_sync into an ffi::Tensor, which the function
// receives as a non-owning TensorView (tvm-ffi's kernel library guide).
//
// empty()     no argument, no conversion: the library's call floor.
// tensor(t)   one TensorView, then the reads a view makes: data pointer (+ byte
//             offset), ndim, sizes, strides, dtype, device type and id, into a volatile
//             sink so the reads stay. Returns nothing (None), like empty().
// tensor8(t0, ..., t7)
//             tensor(t)'s reads on eight TensorViews in one call: a kernel's argument
//             list, each tensor converted by the argument setter.
// describe(t) the same reads as an Array<int64_t> (data pointer, ndim, sizes...,
//             strides..., dtype code, bits, lanes, device type, device id), for the
//             correctness check made outside timing.
#include <cstdint>

#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

namespace {

volatile std::uintptr_t sink;

void empty() {}

std::uintptr_t read(const tvm::ffi::TensorView& t) {
  std::uintptr_t acc = reinterpret_cast<std::uintptr_t>(t.data_ptr()) + t.byte_offset();
  const int32_t ndim = t.ndim();
  const tvm::ffi::ShapeView shape = t.shape();
  const tvm::ffi::ShapeView strides = t.strides();
  for (int32_t i = 0; i < ndim; ++i)
    acc += static_cast<std::uintptr_t>(shape[i]) ^ static_cast<std::uintptr_t>(strides[i]);
  const DLDataType dt = t.dtype();
  const DLDevice dev = t.device();
  acc += dt.code + dt.bits + dt.lanes + static_cast<std::uintptr_t>(ndim);
  acc += static_cast<std::uintptr_t>(dev.device_type) + static_cast<std::uintptr_t>(dev.device_id);
  return acc;
}

void tensor(tvm::ffi::TensorView t) { sink = read(t); }

void tensor8(tvm::ffi::TensorView t0, tvm::ffi::TensorView t1, tvm::ffi::TensorView t2,
             tvm::ffi::TensorView t3, tvm::ffi::TensorView t4, tvm::ffi::TensorView t5,
             tvm::ffi::TensorView t6, tvm::ffi::TensorView t7) {
  sink = read(t0) + read(t1) + read(t2) + read(t3) + read(t4) + read(t5) + read(t6) + read(t7);
}

tvm::ffi::Array<int64_t> describe(tvm::ffi::TensorView t) {
  tvm::ffi::Array<int64_t> out;
  out.push_back(static_cast<int64_t>(reinterpret_cast<std::uintptr_t>(t.data_ptr()) +
                                     t.byte_offset()));
  out.push_back(t.ndim());
  for (int32_t i = 0; i < t.ndim(); ++i) out.push_back(t.shape()[i]);
  for (int32_t i = 0; i < t.ndim(); ++i) out.push_back(t.strides()[i]);
  const DLDataType dt = t.dtype();
  out.push_back(dt.code);
  out.push_back(dt.bits);
  out.push_back(dt.lanes);
  out.push_back(t.device().device_type);
  out.push_back(t.device().device_id);
  return out;
}

}  // namespace

TVM_FFI_DLL_EXPORT_TYPED_FUNC(empty, empty);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(tensor, tensor);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(tensor8, tensor8);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(describe, describe);
