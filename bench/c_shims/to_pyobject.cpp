// 2.14's torch_tensor_to_pyobject, built against the running torch for a torch that
// does not export it (< 2.14): how bench/c_shims/c_shims.cpp turns a shim's new result
// handle into a Python tensor there. Benchmark-only; bench/c_shims/consumer_build.py builds
// it with cffi into bench.native.build_dir(...).
//
// The same body as upstream's (torch/csrc/shim_common.cpp at 2.14/2.15, read in the
// stored pytorch/pytorch sources): THPVariable_Wrap of the handle's at::Tensor, a new
// Python reference; the handle is NOT stolen (the caller still deletes it). A failure
// (THPVariable_Wrap returned NULL, its Python error left set) is error code 1 with the
// message kept for c_shims_to_pyobject_last_error().

#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/python_headers.h>

#include <exception>
#include <stdint.h>
#include <string>

struct AtenTensorOpaque;
typedef AtenTensorOpaque* AtenTensorHandle;

namespace {
thread_local std::string last_error;
}  // namespace

extern "C" {

int32_t c_shims_to_pyobject(AtenTensorHandle ath, void* py_type, void** ret) {
  try {
    TORCH_CHECK(ath != nullptr, "ath must not be null");
    TORCH_CHECK(ret != nullptr, "ret must not be null");
    TORCH_CHECK(PyGILState_Check(), "c_shims_to_pyobject requires the GIL to be held");
    at::Tensor* t = reinterpret_cast<at::Tensor*>(ath);
    // Only the default type: THPVariable_Wrap's (tensor, type) overload is younger
    // than some of the torch releases this is built for.
    TORCH_CHECK(py_type == nullptr, "c_shims_to_pyobject: py_type must be null");
    PyObject* py = THPVariable_Wrap(*t);
    if (py == nullptr) {
      last_error = "THPVariable_Wrap failed (its Python exception is pending)";
      return 1;
    }
    *ret = py;
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

const char* c_shims_to_pyobject_last_error(void) {
  return last_error.c_str();
}

}  // extern "C"
