// The libtorch_python half of the prototype (shim_ext._borrow): the
// implementation behind torch_tensor_borrow_from_pyobject, written as the borrow patch
// adds it to torch/csrc/PyObjectConversionPythonImpl.cpp, registered with the
// libtorch half (shim_ext._entry, entry.cpp) by shim_ext.load(), the way
// libtorch_python registers ConcretePyObjectConversion with libtorch at load.
// Between the BEGIN/END markers: what the patch adds (the method's body);
// tests/proposal/test_patches.py checks that they do not drift.

#include <torch_borrow/abi.h>
#include <torch_borrow/prototype/conversion.h>
#include <torch_borrow/prototype/metadata_policy.h>
#include <torch_borrow/prototype/shim.h>
#include <torch_borrow/thread_state.h>

#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/inductor/aoti_torch/utils.h>
#include <torch/csrc/python_headers.h>

namespace torch_borrow {

// BEGIN PyObjectConversionPythonImpl.cpp body
// Borrow the at::Tensor stored inside a Python torch.Tensor. The reference is
// valid while obj is alive and its tensor is not replaced.
const at::Tensor& tensor_borrow_from_pyobject(PyObject* obj) {
  TORCH_CHECK(
      obj != nullptr,
      "torch_tensor_borrow_from_pyobject: py_obj must not be null");
  // An attached thread state, tested exactly: 2.15's is_tensor_pyobject asks
  // PyGILState_Check(), which answers yes on every thread once a subinterpreter
  // exists (CPython 3.11 to 3.13).
  TORCH_CHECK(
      torch_borrow_thread_is_attached(),
      "torch_tensor_borrow_from_pyobject: no attached thread state");
  // The real type, not isinstance(), which an object passes by claiming a
  // __class__ it does not have: only a THPVariable's layout holds a tensor,
  // and the reference below points into it.
  const bool is_tensor = THPVariableClass != nullptr &&
      PyObject_TypeCheck(
          obj, reinterpret_cast<PyTypeObject*>(THPVariableClass));
  TORCH_CHECK(
      is_tensor,
      "torch_tensor_borrow_from_pyobject: expected torch.Tensor, got ",
      Py_TYPE(obj)->tp_name);
  const at::Tensor& tensor = THPVariable_Unpack(obj);
  TORCH_CHECK(
      tensor.defined(),
      "torch_tensor_borrow_from_pyobject: the tensor is undefined");
  // Only a tensor whose metadata is plain C++ state is lent: with the Python
  // dispatch key, or sizes, strides, device or layout computed by a TensorImpl
  // subclass or in Python, the getters a caller uses on the handle could run
  // Python code, which may free or replace what the handle points at. Such
  // tensors need torch_tensor_from_pyobject.
  TORCH_CHECK(
      !torch_borrow::detail::has_custom_metadata(*tensor.unsafeGetTensorImpl()),
      "torch_tensor_borrow_from_pyobject: the tensor's metadata is not plain "
      "C++ state (the Python dispatch key, or custom sizes, strides, device or "
      "layout): use torch_tensor_from_pyobject");
  return tensor;
}
// END PyObjectConversionPythonImpl.cpp body

namespace {

struct ConcreteBorrowConversion final : detail::BorrowConversionInterface {
  const at::Tensor& tensor_borrow_from_pyobject(PyObject* obj) const override {
    return torch_borrow::tensor_borrow_from_pyobject(obj);
  }
};

const ConcreteBorrowConversion impl;

} // namespace

} // namespace torch_borrow

extern "C" {

// The handshake (torch_borrow/abi.h): the ABI this library was built with,
// which a reader checks before it looks up anything else here.
AOTI_TORCH_EXPORT int32_t torch_borrow_shim_abi(void) {
  return TORCH_BORROW_SHIM_ABI;
}

// What shim_ext.load() passes to shim_ext._entry's torch_borrow_set_impl.
AOTI_TORCH_EXPORT const void* torch_borrow_impl(void) {
  return &torch_borrow::impl;
}

// The same entry point calling the implementation directly, without the vtable
// (the prototype's earlier shape): an extra benchmark row, so the price of the
// patch's vtable shows. Not part of any patch.
AOTI_TORCH_EXPORT AOTITorchError
torch_borrow_direct_from_pyobject(void* py_obj, AtenTensorHandle* ret) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    TORCH_CHECK(py_obj != nullptr, "py_obj must not be null");
    TORCH_CHECK(ret != nullptr, "ret must not be null");
    const at::Tensor& tensor = torch_borrow::tensor_borrow_from_pyobject(
        static_cast<PyObject*>(py_obj));
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast)
    *ret = torch::aot_inductor::tensor_pointer_to_tensor_handle(
        const_cast<at::Tensor*>(&tensor));
  });
}

// Why the bridge (and a consumer) must not read a tensor through any handle:
// 0 for a tensor whose metadata is plain C++ state, else the
// TORCH_BORROW_CUSTOM_* bits of torch_borrow/abi.h (what
// torch_tensor_borrow_from_pyobject refuses), with *layout set to the
// tensor's c10::Layout code where that is plain state (-1 where it is custom);
// -1 for an object whose real type is not torch.Tensor or whose tensor is
// undefined. Reads the TensorImpl only: no Python runs. The caller holds an
// attached thread state and keeps py_obj alive. Not part of any patch: the
// owned and pointer-trick paths make the borrow's check through it.
AOTI_TORCH_EXPORT int32_t
torch_borrow_custom_metadata(void* py_obj, int32_t* layout) {
  auto* obj = static_cast<PyObject*>(py_obj);
  if (obj == nullptr || THPVariableClass == nullptr ||
      !PyObject_TypeCheck(
          obj, reinterpret_cast<PyTypeObject*>(THPVariableClass))) {
    return -1;
  }
  const at::Tensor& tensor = THPVariable_Unpack(obj);
  if (!tensor.defined()) {
    return -1;
  }
  const c10::TensorImpl& impl = *tensor.unsafeGetTensorImpl();
  const uint32_t reasons = torch_borrow::detail::TensorImplPolicies::reasons(impl);
  if (layout != nullptr) {
    *layout = (reasons & TORCH_BORROW_CUSTOM_LAYOUT)
        ? -1
        : static_cast<int32_t>(impl.layout());
  }
  return static_cast<int32_t>(reasons);
}

} // extern "C"
