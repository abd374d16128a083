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
  static const char* kw[] = {"route", "flags", nullptr};
  const char* only = nullptr;
  int flags = 1;
  torch_borrow_meta m;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|zp", const_cast<char**>(kw), &only, &flags))
    return nullptr;
  torch_borrow_init_route(only, flags, &m);
  return route(self, nullptr);
}

PyMethodDef methods[] = {
    {"view", view, METH_O,
     "view(tensor) -> (data_ptr, sizes, strides, dtype code, device type code, device index)"},
    {"read", read_meta, METH_O, "read(tensor) -> None: read and checked, the metadata kept in C"},
    {"route", route, METH_NOARGS, "Where handles come from: 'libtorch', 'prototype', 'owned' or None."},
    {"_resolve", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(resolve)),
     METH_VARARGS | METH_KEYWORDS, "_resolve(route=None, flags=True) -> route() (tests only)"},
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
