// Prototype of the C++ helper that the borrow patch adds to
// torch/csrc/stable/pyobject.h, beside tensor_from_pyobject.
//
// The block between the BEGIN/END markers is, byte for byte, what the patch
// inserts (tests/test_proposal.py checks it). `make patch-check` compiles it
// against the patched headers; everything outside the markers only lets it
// compile against an installed torch whose headers predate the 2.16 block.
#pragma once

#include <torch/csrc/stable/pyobject.h>
#include <torch_borrow/shim.h>

HIDDEN_NAMESPACE_BEGIN(torch, stable)

#pragma push_macro("TORCH_FEATURE_VERSION")
#undef TORCH_FEATURE_VERSION
#define TORCH_FEATURE_VERSION TORCH_VERSION_2_16_0

// BEGIN pyobject.h 0001
#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_16_0

// Borrow the tensor a Python torch.Tensor (PyObject* passed as void*) holds:
// no allocation, no refcount change. Returns the raw handle, not a Tensor:
// torch::stable::Tensor owns and deletes its handle, and a borrowed one must
// never be deleted. The handle's contract is that of the C function
// torch_tensor_borrow_from_pyobject. For a tensor that must outlive it,
// aoti_torch_new_tensor_handle gives an owning handle to wrap in a Tensor.
inline AtenTensorHandle tensor_borrow_from_pyobject(void* py_obj) {
  AtenTensorHandle ath = nullptr;
  STABLE_TORCH_ERROR_CODE_CHECK(
      torch_tensor_borrow_from_pyobject(py_obj, &ath));
  return ath;
}

#endif // TORCH_FEATURE_VERSION >= TORCH_VERSION_2_16_0
// END pyobject.h 0001

#pragma pop_macro("TORCH_FEATURE_VERSION")

HIDDEN_NAMESPACE_END(torch, stable)
