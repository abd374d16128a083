// A consumer module in C++ on torch_borrow/consumer.h (module borrow_consumer): the same
// functions as consumer.c (view, read, route, _resolve, and the C entry point
// borrow_consumer_read), written as a C++ library would. The header needs no torch
// header; where torch's are on the include path, the static_asserts below check that
// its function types are torch's own.
// Build: c++ -std=c++17 -O2 -shared -fPIC -I<Python include> -I<shim_ext.get_include()>
//        [-I<torch include>] consumer.cpp -o borrow_consumer<EXT_SUFFIX> -ldl  (build.py)
#include <torch_borrow/consumer.h>

#include <type_traits>

#if __has_include(<torch/csrc/inductor/aoti_torch/c/shim.h>)
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
static_assert(std::is_same_v<decltype(&aoti_torch_get_sizes), torch_borrow_get_i64p_fn>);
static_assert(std::is_same_v<decltype(&aoti_torch_get_data_ptr), torch_borrow_get_ptr_fn>);
static_assert(std::is_same_v<decltype(&aoti_torch_get_dim), torch_borrow_get_i64_fn>);
static_assert(std::is_same_v<decltype(&aoti_torch_get_dtype), torch_borrow_get_i32_fn>);
static_assert(std::is_same_v<decltype(&aoti_torch_delete_tensor_object), torch_borrow_delete_fn>);
#endif
#if __has_include(<ATen/dlpack.h>)
// The header's DLPack 1.x declarations against torch's own (ATen/dlpack.h, torch 2.10+).
#include <ATen/dlpack.h>
#include <cstddef>
static_assert(sizeof(torch_borrow_dltensor) == sizeof(DLTensor));
static_assert(offsetof(torch_borrow_dltensor, data) == offsetof(DLTensor, data));
static_assert(offsetof(torch_borrow_dltensor, device) == offsetof(DLTensor, device));
static_assert(offsetof(torch_borrow_dltensor, ndim) == offsetof(DLTensor, ndim));
static_assert(offsetof(torch_borrow_dltensor, dtype) == offsetof(DLTensor, dtype));
static_assert(offsetof(torch_borrow_dltensor, shape) == offsetof(DLTensor, shape));
static_assert(offsetof(torch_borrow_dltensor, strides) == offsetof(DLTensor, strides));
static_assert(offsetof(torch_borrow_dltensor, byte_offset) == offsetof(DLTensor, byte_offset));
static_assert(sizeof(torch_borrow__dlpack_api) == sizeof(DLPackExchangeAPI));
static_assert(offsetof(torch_borrow__dlpack_api, dltensor_from_py_object_no_sync) ==
              offsetof(DLPackExchangeAPI, dltensor_from_py_object_no_sync));
static_assert(offsetof(torch_borrow__dlpack_api, current_work_stream) ==
              offsetof(DLPackExchangeAPI, current_work_stream));
static_assert(DLPACK_MAJOR_VERSION == 1);
static_assert(kDLCPU == TORCH_BORROW__KDLCPU && kDLCUDA == TORCH_BORROW__KDLCUDA &&
              kDLCUDAHost == TORCH_BORROW__KDLCUDAHOST && kDLROCM == TORCH_BORROW__KDLROCM &&
              kDLOneAPI == TORCH_BORROW__KDLONEAPI && kDLMetal == TORCH_BORROW__KDLMETAL &&
              kDLExtDev == TORCH_BORROW__KDLEXTDEV);
#endif

extern "C" __attribute__((visibility("default"))) int borrow_consumer_read(
    PyObject* obj, torch_borrow_meta* m) {
  return torch_borrow_read(obj, m);
}

namespace {

PyObject* ints(const int64_t* v, int64_t n) {
  PyObject* t = PyTuple_New(n);
  for (int64_t i = 0; t && i < n; ++i) {
    PyObject* x = PyLong_FromLongLong(v[i]);
    if (!x) {
      Py_DECREF(t);
      return nullptr;
    }
    PyTuple_SET_ITEM(t, i, x);
  }
  return t;
}

PyObject* view(PyObject*, PyObject* obj) {
  torch_borrow_meta m;
  if (torch_borrow_read(obj, &m) != TORCH_BORROW_OK) return torch_borrow_raise(&m);
  return Py_BuildValue("(NNNiii)", PyLong_FromVoidPtr(m.data), ints(m.sizes, m.dim),
                       ints(m.strides, m.dim), m.dtype, m.device_type, m.device_index);
}

PyObject* read_meta(PyObject*, PyObject* obj) {
  torch_borrow_meta m;
  if (torch_borrow_read(obj, &m) != TORCH_BORROW_OK) return torch_borrow_raise(&m);
  Py_RETURN_NONE;
}

PyObject* route(PyObject*, PyObject*) {
  torch_borrow_meta m;
  if (torch_borrow_init(&m) == TORCH_BORROW_NO_TORCH) return torch_borrow_raise(&m);
  if (!torch_borrow_route()) Py_RETURN_NONE;
  return PyUnicode_FromString(torch_borrow_route());
}

PyObject* resolve(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* kw[] = {"route", "flags", "shim_ext", nullptr};
  const char* only = nullptr;
  int flags = 1, shim_ext = 1;
  torch_borrow_meta m;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|zpp", const_cast<char**>(kw), &only, &flags,
                                   &shim_ext))
    return nullptr;
  torch_borrow_init_route(only, (flags ? TORCH_BORROW_INIT_FLAG_GETTERS : 0) |
                                    (shim_ext ? 0 : TORCH_BORROW_INIT_NO_SHIM_EXT), &m);
  return route(self, nullptr);
}

PyMethodDef methods[] = {
    {"view", view, METH_O,
     "view(tensor) -> (data_ptr, sizes, strides, dtype code, device type code, device index)"},
    {"read", read_meta, METH_O, "read(tensor) -> None: read and checked, the metadata kept in C"},
    {"route", route, METH_NOARGS, "Where handles come from: 'libtorch', 'prototype', 'owned', 'dlpack' or None."},
    {"_resolve", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(resolve)),
     METH_VARARGS | METH_KEYWORDS, "_resolve(route=None, flags=True, shim_ext=True) -> route() (tests only)"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "borrow_consumer",
                      "A consumer of torch_borrow/consumer.h, in C++.", -1, methods,
                      nullptr, nullptr, nullptr, nullptr};

} // namespace

PyMODINIT_FUNC PyInit_borrow_consumer() {
  PyObject* m = PyModule_Create(&module);
#ifdef Py_GIL_DISABLED
  if (m) PyUnstable_Module_SetGIL(m, Py_MOD_GIL_NOT_USED);
#endif
  return m;
}
