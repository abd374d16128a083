// Prototype of the C++ helper that patch 0001 adds to
// torch/csrc/stable/pyobject.h, beside tensor_from_pyobject.
//
// The block between the BEGIN/END markers is, byte for byte, what the patch
// inserts (tests/test_proposal.py checks it). It is compiled for real by
// `make patch-check` (against the patched headers) and by the prototype's own
// C++ test module; everything outside the markers only lets it compile against
// an installed torch whose headers predate the 2.16 block.
#pragma once

#include <torch/csrc/stable/pyobject.h>
#include <torch_borrow/shim.h>

HIDDEN_NAMESPACE_BEGIN(torch, stable)

#pragma push_macro("TORCH_FEATURE_VERSION")
#undef TORCH_FEATURE_VERSION
#define TORCH_FEATURE_VERSION TORCH_VERSION_2_16_0

// BEGIN pyobject.h 0001
#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_16_0

// A non-owning view of the tensor a Python torch.Tensor holds, as returned by
// tensor_borrow_from_pyobject. Valid while that Python object lives; it never
// deletes its handle, so it is not a Tensor (which does). Read metadata
// through get() with the aoti_torch_get_* getters; to_owned() returns a Tensor
// (a new reference) for use beyond the Python object's lifetime.
class BorrowedTensor {
 public:
  explicit BorrowedTensor(AtenTensorHandle ath) : ath_(ath) {}

  AtenTensorHandle get() const {
    return ath_;
  }

  Tensor to_owned() const {
    AtenTensorHandle ret = nullptr;
    STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_new_tensor_handle(ath_, &ret));
    return Tensor(ret);
  }

 private:
  AtenTensorHandle ath_;
};

// Borrow the tensor a Python torch.Tensor (PyObject* passed as void*) holds:
// no allocation, no refcount change.
inline BorrowedTensor tensor_borrow_from_pyobject(void* py_obj) {
  AtenTensorHandle ath = nullptr;
  STABLE_TORCH_ERROR_CODE_CHECK(
      torch_tensor_borrow_from_pyobject(py_obj, &ath));
  return BorrowedTensor(ath);
}

#endif // TORCH_FEATURE_VERSION >= TORCH_VERSION_2_16_0
// END pyobject.h 0001

#pragma pop_macro("TORCH_FEATURE_VERSION")

HIDDEN_NAMESPACE_END(torch, stable)
