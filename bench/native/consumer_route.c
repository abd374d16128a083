/* One route of torch_borrow/consumer.h per module, for bench/consumer_header.py: the
 * header's state is per translation unit, so each route is compiled into a module of its
 * own (-DMODULE=name) and the routes can be interleaved in one process.
 *   setup(route=None, shim_ext=True) -> the route taken (torch_borrow_init_route)
 *   read(t)   -> None: torch_borrow_read with every check, the metadata kept in C
 *   dlread(t) -> None: torch's DLPack exchange API alone (type check, then
 *                dltensor_from_py_object_no_sync into a DLTensor, shape and strides
 *                copied): the unchecked peer, which accepts negative views and shrunk
 *                storage (see the header's "dlpack" route)
 *   read_all(ts) / dlread_all(ts) -> None: the same for each tensor of the list ts, in
 *                one C loop (distinct tensors in rotation: no per-tensor state helps)
 * Build: cc -std=c11 -O2 -shared -fPIC -DMODULE=<name> -I<Python include>
 *        -I<shim_ext.get_include()> consumer_route.c -o <name><EXT_SUFFIX> -ldl */
#include <torch_borrow/consumer.h>

#ifndef MODULE
#error "compile with -DMODULE=<module name>"
#endif
#define CR_STR2(x) #x
#define CR_STR(x) CR_STR2(x)
#define CR_CAT2(a, b) a##b
#define CR_CAT(a, b) CR_CAT2(a, b)

static const torch_borrow__dlpack_api* dl_api;

static PyObject* setup(PyObject* self, PyObject* args, PyObject* kwargs) {
  static char* kw[] = {"route", "shim_ext", NULL};
  const char* only = NULL;
  int shim_ext = 1;
  torch_borrow_meta m;
  PyObject* cap;
  (void)self;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|zp", kw, &only, &shim_ext)) return NULL;
  if (torch_borrow_init_route(only, TORCH_BORROW_INIT_FLAG_GETTERS |
                                        (shim_ext ? 0 : TORCH_BORROW_INIT_NO_SHIM_EXT),
                              &m) == TORCH_BORROW_NO_TORCH)
    return torch_borrow_raise(&m);
  cap = PyObject_GetAttrString((PyObject*)torch_borrow__current()->tensor_type,
                               "__dlpack_c_exchange_api__");
  if (!cap) return NULL;
  dl_api = (const torch_borrow__dlpack_api*)PyCapsule_GetPointer(cap, "dlpack_exchange_api");
  Py_DECREF(cap);
  if (!dl_api) return NULL;
  if (!torch_borrow_route()) Py_RETURN_NONE;
  return PyUnicode_FromString(torch_borrow_route());
}

static PyObject* read_meta(PyObject* self, PyObject* obj) {
  torch_borrow_meta m;
  (void)self;
  if (torch_borrow_read(obj, &m) != TORCH_BORROW_OK) return torch_borrow_raise(&m);
  Py_RETURN_NONE;
}

static PyObject* dlread(PyObject* self, PyObject* obj) {
  const torch_borrow__api* a = torch_borrow__current();
  torch_borrow__dltensor d;
  int64_t sizes[TORCH_BORROW_MAX_DIMS], strides[TORCH_BORROW_MAX_DIMS];
  int32_t i;
  (void)self;
  if (!a || !dl_api) return PyErr_Format(PyExc_RuntimeError, "call setup() first");
  if (Py_TYPE(obj) != a->tensor_type && !PyType_IsSubtype(Py_TYPE(obj), a->tensor_type))
    return PyErr_Format(PyExc_TypeError, "expected a torch.Tensor");
  if (dl_api->dltensor_from_py_object_no_sync(obj, &d) != 0) return NULL;
  if (d.ndim < 0 || d.ndim > TORCH_BORROW_MAX_DIMS)
    return PyErr_Format(PyExc_BufferError, "too many dimensions");
  for (i = 0; i < d.ndim; ++i) sizes[i] = d.shape[i], strides[i] = d.strides[i];
  (void)sizes, (void)strides;
  Py_RETURN_NONE;
}

/* fn(t) for each tensor t of the list ts, in one C loop: None, or fn's exception */
static PyObject* each(PyObject* self, PyObject* ts, PyObject* (*fn)(PyObject*, PyObject*)) {
  Py_ssize_t i;
  if (!PyList_Check(ts)) return PyErr_Format(PyExc_TypeError, "expected a list of tensors");
  for (i = 0; i < PyList_GET_SIZE(ts); ++i) {
    PyObject* r = fn(self, PyList_GET_ITEM(ts, i));
    if (!r) return NULL;
    Py_DECREF(r);
  }
  Py_RETURN_NONE;
}

static PyObject* read_all(PyObject* self, PyObject* ts) { return each(self, ts, read_meta); }

static PyObject* dlread_all(PyObject* self, PyObject* ts) { return each(self, ts, dlread); }

static PyObject* init_seconds(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  return PyFloat_FromDouble(torch_borrow_init_seconds());
}

static PyMethodDef methods[] = {
    {"setup", (PyCFunction)(void (*)(void))setup, METH_VARARGS | METH_KEYWORDS,
     "setup(route=None, shim_ext=True) -> the route taken"},
    {"read", read_meta, METH_O, "read(t) -> None: torch_borrow_read, every check"},
    {"dlread", dlread, METH_O, "dlread(t) -> None: torch's DLPack exchange API alone"},
    {"read_all", read_all, METH_O, "read_all(ts) -> None: read(t) for each t of the list ts"},
    {"dlread_all", dlread_all, METH_O, "dlread_all(ts) -> None: dlread(t) for each t of ts"},
    {"init_seconds", init_seconds, METH_NOARGS, "torch_borrow_init_seconds()"},
    {NULL, NULL, 0, NULL}};

static PyModuleDef module = {PyModuleDef_HEAD_INIT, CR_STR(MODULE),
                             "One route of torch_borrow/consumer.h (bench).", -1, methods,
                             NULL, NULL, NULL, NULL};

PyMODINIT_FUNC CR_CAT(PyInit_, MODULE)(void) { return PyModule_Create(&module); }
