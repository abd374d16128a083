#include <Python.h>

#include <torch/csrc/stable/pyobject.h>

// Importable (abi3) module functions that exercise the 2.16 borrowed
// PyObject -> AtenTensorHandle shim, as libtorch_agn_2_15_extension's module
// exercises the 2.15 ones: a raw PyObject arrives straight from
// Python (no dispatcher boxing), so the GIL is naturally held. The module links
// only libtorch; the conversion is serviced by the vtable that libtorch_python
// registers.
//
// The handle is borrowed: it is read while `obj` is alive and its tensor is
// not replaced, and never deleted, so no torch::stable::Tensor holds it (a
// Tensor deletes its handle).

namespace {

// Raises RuntimeError with the shim's per-thread error message.
PyObject* raise_shim_error() {
  PyErr_SetString(
      PyExc_RuntimeError, torch_exception_get_what_without_backtrace());
  return nullptr;
}

PyObject* int64_tuple(const int64_t* values, int64_t n) {
  PyObject* tuple = PyTuple_New(n);
  if (tuple == nullptr) {
    return nullptr;
  }
  for (int64_t i = 0; i < n; i++) {
    PyObject* item = PyLong_FromLongLong(values[i]);
    if (item == nullptr) {
      Py_DECREF(tuple);
      return nullptr;
    }
    PyTuple_SetItem(tuple, i, item);
  }
  return tuple;
}

// The borrowed handle as an int, through the C++ helper: nothing to free.
PyObject* borrow_handle(PyObject* /*self*/, PyObject* obj) {
  try {
    return PyLong_FromVoidPtr(torch::stable::tensor_borrow_from_pyobject(obj));
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

// Calls the shim with the GIL released, which it must refuse.
PyObject* borrow_without_gil(PyObject* /*self*/, PyObject* obj) {
  AtenTensorHandle handle = nullptr;
  AOTITorchError err = AOTI_TORCH_SUCCESS;
  PyThreadState* state = PyEval_SaveThread(); // Py_BEGIN_ALLOW_THREADS
  err = torch_tensor_borrow_from_pyobject(obj, &handle);
  PyEval_RestoreThread(state); // Py_END_ALLOW_THREADS
  if (err != AOTI_TORCH_SUCCESS) {
    return raise_shim_error();
  }
  return PyLong_FromVoidPtr(handle);
}

// (data_ptr, sizes, strides, storage_offset, dtype, device_type,
// device_index), read through the borrowed handle with the
// stable getters. data_ptr includes the storage offset; strides are in
// elements; dtype and device_type use the aoti_torch_dtype_*() /
// aoti_torch_device_type_*() codes.
PyObject* borrow_metadata(PyObject* /*self*/, PyObject* obj) {
  AtenTensorHandle handle = nullptr;
  void* data_ptr = nullptr;
  int64_t dim = 0;
  int64_t* sizes = nullptr;
  int64_t* strides = nullptr;
  int64_t storage_offset = 0;
  int32_t dtype = 0;
  int32_t device_type = 0;
  int32_t device_index = 0;
  if (torch_tensor_borrow_from_pyobject(obj, &handle) != AOTI_TORCH_SUCCESS ||
      aoti_torch_get_data_ptr(handle, &data_ptr) != AOTI_TORCH_SUCCESS ||
      aoti_torch_get_dim(handle, &dim) != AOTI_TORCH_SUCCESS ||
      aoti_torch_get_sizes(handle, &sizes) != AOTI_TORCH_SUCCESS ||
      aoti_torch_get_strides(handle, &strides) != AOTI_TORCH_SUCCESS ||
      aoti_torch_get_storage_offset(handle, &storage_offset) !=
          AOTI_TORCH_SUCCESS ||
      aoti_torch_get_dtype(handle, &dtype) != AOTI_TORCH_SUCCESS ||
      aoti_torch_get_device_type(handle, &device_type) != AOTI_TORCH_SUCCESS ||
      aoti_torch_get_device_index(handle, &device_index) !=
          AOTI_TORCH_SUCCESS) {
    return raise_shim_error();
  }
  return Py_BuildValue(
      "(NNNLiii)",
      PyLong_FromVoidPtr(data_ptr),
      int64_tuple(sizes, dim),
      int64_tuple(strides, dim),
      static_cast<long long>(storage_offset),
      static_cast<int>(dtype),
      static_cast<int>(device_type),
      static_cast<int>(device_index));
}

PyMethodDef methods[] = {
    {"borrow_handle", borrow_handle, METH_O, nullptr},
    {"borrow_without_gil", borrow_without_gil, METH_O, nullptr},
    {"borrow_metadata", borrow_metadata, METH_O, nullptr},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT,
    "_interop",
    nullptr,
    -1,
    methods,
    nullptr,
    nullptr,
    nullptr,
    nullptr};

} // namespace

// PyMODINIT_FUNC (not a bare extern "C") so the init symbol is dllexported on
// Windows; without it the .pyd omits PyInit__interop and the import fails.
PyMODINIT_FUNC PyInit__interop(void) {
  return PyModule_Create(&moduledef);
}
