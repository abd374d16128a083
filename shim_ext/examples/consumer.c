/* A consumer module in C on torch_borrow/consumer.h (module borrow_consumer_c):
 *   view(t)   -> (data_ptr, sizes, strides, dtype code, device type code, device index)
 *   read(t)   -> None: the metadata read and checked into a C struct, kept in C (what a
 *                kernel launcher does before it uses the fields)
 *   route()   -> "libtorch" | "prototype" | "owned" | "dlpack" | None
 *   route_info() -> (route, why, checks, seconds the resolution took)
 *   describe(t) -> (is_contiguous, dtype name); codes(dtype, device) -> (codes)
 *   stream(t) -> the current CUDA stream of t's device (CUDA tensors)
 *   dltensor(t) -> the read as DLPack's DLTensor: (data, (device type, id), ndim,
 *             (code, bits, lanes), shape, strides, byte_offset)
 *   _resolve(route=None, flags=True, shim_ext=True) -> route(): for tests
 *             (torch_borrow_init_route; shim_ext=False: as if it were absent)
 * and the C entry point borrow_consumer_c_read(obj, &meta) for a library's own C code.
 * Every check is the header's; refusals become the exception torch_borrow_raise picks.
 * Build: cc -std=c11 -O2 -shared -fPIC -I<Python include> -I<shim_ext.get_include()>
 *        consumer.c -o borrow_consumer_c<EXT_SUFFIX> -ldl                (build.py) */
#include <torch_borrow/consumer.h>

__attribute__((visibility("default"))) int borrow_consumer_c_read(PyObject* obj,
                                                                  torch_borrow_meta* m) {
  return torch_borrow_read(obj, m);
}

static PyObject* ints(const int64_t* v, int64_t n) {
  PyObject* t = PyTuple_New(n);
  for (int64_t i = 0; t && i < n; ++i) {
    PyObject* x = PyLong_FromLongLong(v[i]);
    if (!x) return Py_DECREF(t), NULL;
    PyTuple_SET_ITEM(t, i, x);
  }
  return t;
}

static PyObject* view(PyObject* self, PyObject* obj) {
  torch_borrow_meta m;
  (void)self;
  if (torch_borrow_read(obj, &m) != TORCH_BORROW_OK) return torch_borrow_raise(&m);
  return Py_BuildValue("(NNNiii)", PyLong_FromVoidPtr(m.data), ints(m.sizes, m.dim),
                       ints(m.strides, m.dim), m.dtype, m.device_type, m.device_index);
}

static PyObject* read_meta(PyObject* self, PyObject* obj) {
  torch_borrow_meta m;
  (void)self;
  if (torch_borrow_read(obj, &m) != TORCH_BORROW_OK) return torch_borrow_raise(&m);
  Py_RETURN_NONE;
}

static PyObject* route(PyObject* self, PyObject* unused) {
  torch_borrow_meta m;
  (void)self, (void)unused;
  if (torch_borrow_init(&m) == TORCH_BORROW_NO_TORCH) return torch_borrow_raise(&m);
  if (!torch_borrow_route()) Py_RETURN_NONE;
  return PyUnicode_FromString(torch_borrow_route());
}

static PyObject* resolve(PyObject* self, PyObject* args, PyObject* kwargs) {
  static char* kw[] = {"route", "flags", "shim_ext", NULL};
  const char* only = NULL;
  int flags = 1, shim_ext = 1;
  torch_borrow_meta m;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|zpp", kw, &only, &flags, &shim_ext))
    return NULL;
  torch_borrow_init_route(only, (flags ? TORCH_BORROW_INIT_FLAG_GETTERS : 0) |
                                    (shim_ext ? 0 : TORCH_BORROW_INIT_NO_SHIM_EXT), &m);
  return route(self, NULL);
}

/* route_info() -> (route or None, why, checks or None, seconds the resolution took) */
static PyObject* route_info(PyObject* self, PyObject* unused) {
  torch_borrow_meta m;
  const char* checks;
  (void)self, (void)unused;
  if (torch_borrow_init(&m) == TORCH_BORROW_NO_TORCH) return torch_borrow_raise(&m);
  checks = torch_borrow_route_checks();
  return Py_BuildValue("(zszd)", torch_borrow_route(), torch_borrow_route_why(), checks,
                       torch_borrow_init_seconds());
}

/* describe(t) -> (is_contiguous, dtype name): what a launcher checks and says */
static PyObject* describe(PyObject* self, PyObject* obj) {
  torch_borrow_meta m;
  const char* name;
  (void)self;
  if (torch_borrow_read(obj, &m) != TORCH_BORROW_OK) return torch_borrow_raise(&m);
  name = torch_borrow_dtype_name(m.dtype);
  return Py_BuildValue("(Nz)", PyBool_FromLong(torch_borrow_is_contiguous(&m)), name);
}

/* codes(dtype name, device name) -> (dtype code, device type code); -1: unknown */
static PyObject* codes(PyObject* self, PyObject* args) {
  const char *dtype, *device;
  torch_borrow_meta m;
  (void)self;
  if (!PyArg_ParseTuple(args, "ss", &dtype, &device)) return NULL;
  if (torch_borrow_init(&m) == TORCH_BORROW_NO_TORCH) return torch_borrow_raise(&m);
  return Py_BuildValue("(ii)", torch_borrow_dtype_code(dtype), torch_borrow_device_code(device));
}

/* stream(t) -> the current CUDA stream of t's device, as an int (0: the default stream) */
static PyObject* stream(PyObject* self, PyObject* obj) {
  torch_borrow_meta m;
  void* s;
  (void)self;
  if (torch_borrow_read(obj, &m) != TORCH_BORROW_OK) return torch_borrow_raise(&m);
  if (torch_borrow_current_stream(&m, &s) != TORCH_BORROW_OK) return torch_borrow_raise(&m);
  return PyLong_FromVoidPtr(s);
}

/* dltensor(t) -> torch_borrow_to_dltensor's DLTensor as a tuple (its shape and strides
   point into m: turned into tuples before m goes) */
static PyObject* dltensor(PyObject* self, PyObject* obj) {
  torch_borrow_meta m;
  torch_borrow_dltensor d;
  (void)self;
  memset(&d, 0, sizeof d); /* filled on success only; gcc cannot tell */
  if (torch_borrow_read(obj, &m) != TORCH_BORROW_OK) return torch_borrow_raise(&m);
  if (torch_borrow_to_dltensor(&m, &d) != TORCH_BORROW_OK) return torch_borrow_raise(&m);
  return Py_BuildValue("(N(ii)i(iii)NNK)", PyLong_FromVoidPtr(d.data), d.device.device_type,
                       d.device.device_id, d.ndim, d.dtype.code, d.dtype.bits, d.dtype.lanes,
                       ints(d.shape, d.ndim), ints(d.strides, d.ndim),
                       (unsigned long long)d.byte_offset);
}

static PyMethodDef methods[] = {
    {"view", view, METH_O,
     "view(tensor) -> (data_ptr, sizes, strides, dtype code, device type code, device index)"},
    {"read", read_meta, METH_O, "read(tensor) -> None: read and checked, the metadata kept in C"},
    {"route", route, METH_NOARGS, "Where handles come from: 'libtorch', 'prototype', 'owned', 'dlpack' or None."},
    {"route_info", route_info, METH_NOARGS,
     "route_info() -> (route, why, checks, seconds the resolution took)"},
    {"describe", describe, METH_O, "describe(tensor) -> (is_contiguous, dtype name)"},
    {"codes", codes, METH_VARARGS, "codes(dtype name, device name) -> (dtype code, device code)"},
    {"stream", stream, METH_O, "stream(tensor) -> the current CUDA stream of its device"},
    {"dltensor", dltensor, METH_O,
     "dltensor(tensor) -> (data, (device type, id), ndim, (code, bits, lanes), shape, "
     "strides, byte_offset): the read as DLPack's DLTensor"},
    {"_resolve", (PyCFunction)(void (*)(void))resolve, METH_VARARGS | METH_KEYWORDS,
     "_resolve(route=None, flags=True, shim_ext=True) -> route() (tests only)"},
    {NULL, NULL, 0, NULL}};

static PyModuleDef module = {PyModuleDef_HEAD_INIT, "borrow_consumer_c",
                             "A consumer of torch_borrow/consumer.h, in C.", -1, methods,
                             NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_borrow_consumer_c(void) {
  PyObject* m = PyModule_Create(&module);
#ifdef Py_GIL_DISABLED
  if (m) PyUnstable_Module_SetGIL(m, Py_MOD_GIL_NOT_USED);
#endif
  return m;
}
