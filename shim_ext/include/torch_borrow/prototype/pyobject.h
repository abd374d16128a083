// Prototype of the C++ helper that the borrow patch adds to
// torch/csrc/stable/pyobject.h, beside tensor_from_pyobject.
//
// The block between the BEGIN/END markers is, byte for byte, what the patch
// inserts (tests/proposal/test_patches.py checks it). `make patch-check` compiles it
// against the patched headers; everything outside the markers only lets it
// compile against an installed torch whose headers predate the 2.16 block.
#pragma once

#include <torch/csrc/stable/pyobject.h>
#include <torch_borrow/prototype/shim.h>

HIDDEN_NAMESPACE_BEGIN(torch, stable)

#pragma push_macro("TORCH_FEATURE_VERSION")
#undef TORCH_FEATURE_VERSION
#define TORCH_FEATURE_VERSION TORCH_VERSION_2_16_0

// BEGIN pyobject.h borrow
#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_16_0

// A borrowed view of the tensor a Python torch.Tensor (PyObject* passed as
// void*) holds: no allocation, no refcount change, nothing to delete. Getters
// only: it has no destructor, exposes no handle and converts to nothing, so no
// torch::stable::Tensor (which deletes its handle) can be made from it. The
// contract is torch_tensor_borrow_from_pyobject's: valid while py_obj is alive
// and no Python code runs; borrow again after an operator call returns or
// anything else that may run Python. to_owned() gives an owning Tensor that
// outlives the borrow.
class BorrowedTensor {
 public:
  explicit BorrowedTensor(void* py_obj) {
    STABLE_TORCH_ERROR_CODE_CHECK(
        torch_tensor_borrow_from_pyobject(py_obj, &ath_));
  }
  BorrowedTensor(const BorrowedTensor&) = delete;
  BorrowedTensor& operator=(const BorrowedTensor&) = delete;

  void* data_ptr() const {
    void* ptr = nullptr;
    STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_get_data_ptr(ath_, &ptr));
    return ptr;
  }

  int64_t dim() const {
    int64_t dim = 0;
    STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_get_dim(ath_, &dim));
    return dim;
  }

  // Borrowed from the tensor, like the handle: copy before Python runs.
  IntHeaderOnlyArrayRef sizes() const {
    int64_t* sizes = nullptr;
    STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_get_sizes(ath_, &sizes));
    return IntHeaderOnlyArrayRef(sizes, dim());
  }

  IntHeaderOnlyArrayRef strides() const {
    int64_t* strides = nullptr;
    STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_get_strides(ath_, &strides));
    return IntHeaderOnlyArrayRef(strides, dim());
  }

  int64_t storage_offset() const {
    int64_t offset = 0;
    STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_get_storage_offset(ath_, &offset));
    return offset;
  }

  torch::headeronly::ScalarType scalar_type() const {
    int32_t dtype = 0;
    STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_get_dtype(ath_, &dtype));
    return torch::stable::detail::to<torch::headeronly::ScalarType>(
        torch::stable::detail::from(dtype));
  }

  Device device() const {
    int32_t device_type = 0;
    int32_t device_index = 0;
    STABLE_TORCH_ERROR_CODE_CHECK(
        aoti_torch_get_device_type(ath_, &device_type));
    STABLE_TORCH_ERROR_CODE_CHECK(
        aoti_torch_get_device_index(ath_, &device_index));
    return Device(
        torch::stable::detail::to<DeviceType>(
            torch::stable::detail::from(device_type)),
        static_cast<DeviceIndex>(device_index));
  }

  bool is_conj() const {
    bool ret = false;
    STABLE_TORCH_ERROR_CODE_CHECK(torch_is_conj(ath_, &ret));
    return ret;
  }

  bool is_neg() const {
    bool ret = false;
    STABLE_TORCH_ERROR_CODE_CHECK(torch_is_neg(ath_, &ret));
    return ret;
  }

  // A new owning handle to the same TensorImpl, as a Tensor.
  Tensor to_owned() const {
    AtenTensorHandle owned = nullptr;
    STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_new_tensor_handle(ath_, &owned));
    return Tensor(owned);
  }

 private:
  AtenTensorHandle ath_ = nullptr;
};

// Borrow the tensor py_obj holds; see BorrowedTensor.
inline BorrowedTensor tensor_borrow_from_pyobject(void* py_obj) {
  return BorrowedTensor(py_obj);
}

#endif // TORCH_FEATURE_VERSION >= TORCH_VERSION_2_16_0
// END pyobject.h borrow

#pragma pop_macro("TORCH_FEATURE_VERSION")

HIDDEN_NAMESPACE_END(torch, stable)
