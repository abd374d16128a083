// The libtorch_python half of the prototype (shim_ext._borrow): the
// implementation behind torch_tensor_borrow_from_pyobject, written as patch 0001
// adds it to torch/csrc/PyObjectConversionPythonImpl.cpp, registered with the
// libtorch half (shim_ext._entry, entry.cpp) by shim_ext.load(), the way
// libtorch_python registers ConcretePyObjectConversion with libtorch at load.
// Between the BEGIN/END markers: what the patch adds (the method's body);
// tests/test_proposal.py checks that they do not drift.

#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch_borrow/conversion.h>
#include <torch_borrow/shim.h>

#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/inductor/aoti_torch/utils.h>
#include <torch/csrc/python_headers.h>

namespace torch_borrow {

// BEGIN PyObjectConversionPythonImpl.cpp body
// Borrow the at::Tensor stored inside a Python torch.Tensor. The reference is
// valid while obj is alive and its tensor is not replaced.
const at::Tensor& tensor_borrow_from_pyobject(PyObject* obj) {
  // This thread must have an attached thread state (with a GIL: hold it; on
  // a free-threaded build that guards nothing else, and the caller keeps obj
  // alive and unmutated while it reads), tested as cheaply as each CPython
  // can: from 3.12 the thread's own state pointer is thread-local and NULL
  // while detached; before, that pointer is the GIL holder's, whoever it is,
  // so PyGILState_Check (a thread-specific lookup) stays.
#if PY_VERSION_HEX >= 0x030D0000
  const bool attached = PyThreadState_GetUnchecked() != nullptr;
#elif PY_VERSION_HEX >= 0x030C0000
  const bool attached = _PyThreadState_UncheckedGet() != nullptr;
#else
  const bool attached = PyGILState_Check();
#endif
  TORCH_CHECK(
      attached,
      "torch_tensor_borrow_from_pyobject requires the GIL to be held");
  TORCH_CHECK(
      obj != nullptr,
      "torch_tensor_borrow_from_pyobject: py_obj must not be null");
  TORCH_CHECK(
      THPVariableClass != nullptr,
      "torch_tensor_borrow_from_pyobject: torch.Tensor is not initialized");
  // The real-type check of 2.15's is_tensor_pyobject, with
  // tensor_from_pyobject's message: THPVariable_Check falls back to
  // isinstance(), which an object passes by claiming a __class__ it does not
  // have. Only an object whose type really derives from torch.Tensor has a
  // THPVariable's layout, and the reference below points into it.
  TORCH_CHECK(
      PyObject_TypeCheck(
          obj, reinterpret_cast<PyTypeObject*>(THPVariableClass)),
      "torch_tensor_borrow_from_pyobject: expected torch.Tensor, got ",
      Py_TYPE(obj)->tp_name);
  const at::Tensor& tensor = THPVariable_Unpack(obj);
  TORCH_CHECK(
      tensor.defined(),
      "torch_tensor_borrow_from_pyobject: the tensor is undefined");
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

// Whether a TorchDispatchMode could answer a getter on this thread: the cheap
// superset of torch's own dispatch_mode_enabled() (a mode on the stack and the
// Python key not excluded). torch includes the Python key in the thread's
// dispatch key set while any mode, user or infra, is on the stack
// (TorchDispatchModeTLS's push and set_mode), so two thread-local bit tests
// suffice, without torch._C._len_torch_dispatch_stack's pybind11 call, which
// costs more than the whole borrow. With it true, the bridge reads a handle with
// Python dispatch excluded. Not part of any patch.
AOTI_TORCH_EXPORT int torch_borrow_dispatch_mode_active(void) {
  const c10::impl::LocalDispatchKeySet tls =
      c10::impl::tls_local_dispatch_key_set();
  return tls.included_.has(c10::DispatchKey::Python) &&
          !tls.excluded_.has(c10::DispatchKey::Python)
      ? 1
      : 0;
}

} // extern "C"
