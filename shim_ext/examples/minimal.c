/* The smallest consumer: view(t) -> (data_ptr, sizes, strides, dtype code). */
#include <torch_borrow/consumer.h>

static PyObject* view(PyObject* self, PyObject* t) {
  torch_borrow_meta m;
  (void)self;
  if (torch_borrow_read(t, &m) != TORCH_BORROW_OK) return torch_borrow_raise(&m);
  PyObject *sizes = PyTuple_New(m.dim), *strides = PyTuple_New(m.dim);
  for (int64_t i = 0; sizes && strides && i < m.dim; ++i) {
    PyTuple_SET_ITEM(sizes, i, PyLong_FromLongLong(m.sizes[i]));
    PyTuple_SET_ITEM(strides, i, PyLong_FromLongLong(m.strides[i]));
  }
  if (!sizes || !strides || PyErr_Occurred()) return Py_XDECREF(sizes), Py_XDECREF(strides), NULL;
  return Py_BuildValue("(NNNi)", PyLong_FromVoidPtr(m.data), sizes, strides, m.dtype);
}

static PyMethodDef methods[] = {{"view", view, METH_O, "view(t) -> (ptr, sizes, strides, dtype)"},
                                {NULL, NULL, 0, NULL}};
static PyModuleDef module = {PyModuleDef_HEAD_INIT, "minimal", NULL, -1, methods, NULL, NULL, NULL, NULL};
PyMODINIT_FUNC PyInit_minimal(void) { return PyModule_Create(&module); }
