/* A kernel launcher on torch_borrow/consumer.h: add(a, b, out) writes a + b into out. */
#include <torch_borrow/consumer.h>

/* Read t into m: a contiguous float32 CPU tensor of n elements (n < 0: any), else raise. */
static int arg(PyObject* t, torch_borrow_meta* m, const char* name, int64_t* n) {
  if (torch_borrow_read(t, m) != TORCH_BORROW_OK) return torch_borrow_raise(m), -1;
  int64_t numel = 1;
  for (int64_t i = 0; i < m->dim; ++i) numel *= m->sizes[i];
  const char* dtype = torch_borrow_dtype_name(m->dtype);
  if (m->dtype != torch_borrow_dtype_code("float32") || !torch_borrow_is_contiguous(m) ||
      m->device_type != torch_borrow_device_code("cpu") || (*n >= 0 && numel != *n))
    return PyErr_Format(PyExc_ValueError, "%s: expected a contiguous float32 CPU tensor "
                        "of %lld elements, got %s, %lld elements", name, (long long)*n,
                        dtype ? dtype : "another dtype", (long long)numel), -1;
  *n = numel;
  return 0;
}

static PyObject* add(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  torch_borrow_meta a, b, out;
  int64_t n = -1;
  (void)self;
  if (nargs != 3) return PyErr_Format(PyExc_TypeError, "add(a, b, out) takes 3 tensors");
  if (arg(args[2], &out, "out", &n) || arg(args[0], &a, "a", &n) || arg(args[1], &b, "b", &n))
    return NULL;
  const float *x = a.data, *y = b.data;
  float* z = out.data;
  for (int64_t i = 0; i < n; ++i) z[i] = x[i] + y[i]; /* the kernel */
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {{"add", (PyCFunction)(void (*)(void))add, METH_FASTCALL,
                                 "add(a, b, out): out = a + b"}, {NULL, NULL, 0, NULL}};
static PyModuleDef module = {PyModuleDef_HEAD_INIT, "launcher", NULL, -1, methods,
                             NULL, NULL, NULL, NULL};
PyMODINIT_FUNC PyInit_launcher(void) {
  PyObject* torch = PyImport_ImportModule("torch"); /* the header needs torch loaded */
  torch_borrow_meta m;
  if (!torch) return NULL;
  Py_DECREF(torch);
  torch_borrow_init(&m); /* the set-up now, not at the first launch; reads say if it failed */
  return PyModule_Create(&module);
}
