// Prototype of torch_tensor_borrow_from_pyobject (and of the torch_is_conj /
// torch_is_neg getters it needs beside it), written as PyTorch would
// write it, compiled against the installed torch's headers and linked against
// its libraries.
//
// Inside PyTorch the function is split in two, like the owned
// torch_tensor_from_pyobject it mirrors: the stable C entry point lives in
// libtorch (torch/csrc/shim_common.cpp) and reaches THPVariable through the
// PyObjectConversionInterface vtable that libtorch_python registers
// (torch/csrc/PyObjectConversionPythonImpl.cpp). The prototype lives outside
// libtorch and cannot add a vtable slot, so it calls the Python-side half
// directly. The blocks below are the bodies that proposal/patches/0001 and
// 0002 add to those two files; tests/test_proposal.py checks that they do not
// drift.

#include <torch_borrow/shim.h>

#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/inductor/aoti_torch/utils.h>
#include <torch/csrc/python_headers.h>

namespace torch_borrow {

// BEGIN PyObjectConversionPythonImpl.cpp body
// Borrow the at::Tensor stored inside a Python torch.Tensor. The GIL must be
// held. The reference is valid while obj is alive.
const at::Tensor& tensor_borrow_from_pyobject(PyObject* obj) {
  // PyGILState_Check: this thread has an attached thread state. With a GIL
  // that means it holds the GIL; on a free-threaded build it guards nothing
  // else, and the caller keeps obj alive and unmutated while it reads.
  TORCH_CHECK(
      PyGILState_Check(),
      "torch_tensor_borrow_from_pyobject requires the GIL to be held");
  TORCH_CHECK(obj != nullptr, "py_obj must not be null");
  TORCH_CHECK(
      THPVariableClass != nullptr,
      "torch_tensor_borrow_from_pyobject: torch.Tensor is not initialized");
  // A real-type check, not THPVariable_Check: that one falls back to
  // isinstance(), which an object passes by claiming a __class__ it does not
  // have. Only an object whose type really derives from torch.Tensor has a
  // THPVariable's memory layout, and the reference below points into it.
  TORCH_CHECK(
      PyObject_TypeCheck(obj, reinterpret_cast<PyTypeObject*>(THPVariableClass)),
      "torch_tensor_borrow_from_pyobject: expected torch.Tensor, got ",
      Py_TYPE(obj)->tp_name);
  const at::Tensor& tensor = THPVariable_Unpack(obj);
  TORCH_CHECK(
      tensor.defined(),
      "torch_tensor_borrow_from_pyobject: the tensor is undefined");
  return tensor;
}
// END PyObjectConversionPythonImpl.cpp body

} // namespace torch_borrow

extern "C" {

// BEGIN shim_common.cpp 0001
AOTITorchError torch_tensor_borrow_from_pyobject(
    void* py_obj,
    AtenTensorHandle* ret) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    TORCH_CHECK(py_obj != nullptr, "py_obj must not be null");
    TORCH_CHECK(ret != nullptr, "ret must not be null");
    const at::Tensor& tensor = torch_borrow::tensor_borrow_from_pyobject(
        static_cast<PyObject*>(py_obj));
    // Borrowed: the handle is the address of the at::Tensor inside the
    // Python object. No copy, no refcount bump, nothing for the caller to
    // delete.
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast)
    *ret = torch::aot_inductor::tensor_pointer_to_tensor_handle(
        const_cast<at::Tensor*>(&tensor));
  });
}
// END shim_common.cpp 0001

// BEGIN shim_common.cpp 0002
AOTITorchError torch_is_conj(AtenTensorHandle tensor, bool* ret_is_conj) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    TORCH_CHECK(ret_is_conj != nullptr, "ret_is_conj must not be null");
    *ret_is_conj =
        torch::aot_inductor::tensor_handle_to_tensor_pointer(tensor)->is_conj();
  });
}

AOTITorchError torch_is_neg(AtenTensorHandle tensor, bool* ret_is_neg) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    TORCH_CHECK(ret_is_neg != nullptr, "ret_is_neg must not be null");
    *ret_is_neg =
        torch::aot_inductor::tensor_handle_to_tensor_pointer(tensor)->is_neg();
  });
}
// END shim_common.cpp 0002

} // extern "C"
