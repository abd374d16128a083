// 2.14's torch_tensor_from_pyobject, built against the running torch for a torch that
// does not export it (< 2.14): the owned route of the seed's consumer
// (bench/native/cuda_core_consumer.pyx), labelled "owned (2.14's implementation, built for
// torch X)" wherever it appears. Benchmark-only; bench/native/owned_prototype_build.py builds
// it with cffi into bench.native.build_dir(...).
//
// The same shape as upstream (torch/csrc/shim_common.cpp's torch_tensor_from_pyobject
// and torch/csrc/PyObjectConversionPythonImpl.cpp's ConcretePyObjectConversion, copied
// in proposal/.upstream-base/): the exported C function checks its arguments and calls
// the conversion through a registered interface (one virtual call, as libtorch calls
// into libtorch_python), which checks the GIL (PyGILState_Check), the pointer and the
// type (THPVariable_Check: torch.Tensor or a subclass) and returns
// THPVariable_Unpack(obj) by value (an at::Tensor copy: one TensorImpl refcount
// increment); the C function puts that copy on the heap (new at::Tensor, what
// torch::aot_inductor::new_tensor_handle does) and returns it as a new reference, to
// be freed by aoti_torch_delete_tensor_object. Exceptions become error code 1 with the
// message kept for owned_prototype_last_error(), as AOTI_TORCH_CONVERT_EXCEPTION_TO_
// ERROR_CODE does (which logs it instead).

#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/python_headers.h>
#include <torch/version.h>

#include <exception>
#include <stdint.h>
#include <string>

struct AtenTensorOpaque;
typedef AtenTensorOpaque* AtenTensorHandle;

namespace {

struct PyObjectConversionInterface {
  virtual ~PyObjectConversionInterface() = default;
  virtual at::Tensor tensor_from_pyobject(PyObject* obj) const = 0;
};

struct ConcretePyObjectConversion final : PyObjectConversionInterface {
  at::Tensor tensor_from_pyobject(PyObject* obj) const override {
    TORCH_CHECK(
        PyGILState_Check(),
        "torch_tensor_from_pyobject requires the GIL to be held");
    TORCH_CHECK(obj != nullptr, "py_obj must not be null");
    TORCH_CHECK(
        THPVariable_Check(obj),
        "torch_tensor_from_pyobject: expected torch.Tensor, got ",
        Py_TYPE(obj)->tp_name);
    return THPVariable_Unpack(obj);
  }
};

const ConcretePyObjectConversion concrete;
// Read through a volatile pointer, as libtorch reads the registered implementation
// (another library's object): the call stays virtual, not inlined.
const PyObjectConversionInterface* volatile g_impl = &concrete;

thread_local std::string last_error;

} // namespace

extern "C" {

int32_t owned_prototype_tensor_from_pyobject(void* py_obj, AtenTensorHandle* ret) {
  try {
    TORCH_CHECK(py_obj != nullptr, "py_obj must not be null");
    TORCH_CHECK(ret != nullptr, "ret must not be null");
    *ret = reinterpret_cast<AtenTensorHandle>(
        new at::Tensor(g_impl->tensor_from_pyobject(static_cast<PyObject*>(py_obj))));
  } catch (const c10::Error& e) {
    last_error = e.what_without_backtrace();
    return 1;
  } catch (const std::exception& e) {
    last_error = e.what();
    return 1;
  } catch (...) {
    last_error = "unknown exception";
    return 1;
  }
  return 0;
}

const char* owned_prototype_last_error(void) {
  return last_error.c_str();
}

const char* owned_prototype_built_for(void) {
  return TORCH_VERSION;
}

} // extern "C"
