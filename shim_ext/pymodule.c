/* The minimal Python module of each shim_ext library where cffi cannot build it
 * (free-threaded CPython 3.13: bridge/_support.py). setup.py compiles this file into
 * shim_ext._entry (with -DSHIM_EXT_ENTRY, beside entry.cpp) and shim_ext._borrow (with
 * -DSHIM_EXT_BORROW, beside borrow.cpp), in place of cffi's generated module. It only
 * exposes, as module-level functions taking and returning addresses as ints, what
 * shim_ext.load() and the bridge call; the C entry points themselves are found with
 * dlsym in the loaded library, exactly as with the cffi build.
 *
 *   _entry.torch_borrow_set_impl(address: int | None) -> None
 *   _borrow.torch_borrow_impl() -> int
 *   _borrow.torch_borrow_built_for() -> bytes    (the torch it was compiled against)
 *
 * Both modules also carry `lib` and `ffi`, the module itself (with `string(b) -> b`), so
 * that code written against the cffi modules (`_borrow.ffi.string(_borrow.lib.
 * torch_borrow_built_for())`, shim_ext/examples) runs unchanged, and BUILT_BY, the route.
 * They declare Py_MOD_GIL_NOT_USED: importing them leaves the GIL off. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if defined(SHIM_EXT_ENTRY) == defined(SHIM_EXT_BORROW)
#error "define exactly one of SHIM_EXT_ENTRY, SHIM_EXT_BORROW"
#endif

static PyObject* string(PyObject* self, PyObject* arg) {
  (void)self;
  if (!PyBytes_Check(arg)) {
    PyErr_Format(PyExc_TypeError, "string() expects bytes, got %s", Py_TYPE(arg)->tp_name);
    return NULL;
  }
  return Py_NewRef(arg);
}

#ifdef SHIM_EXT_ENTRY
#define MODULE_NAME "_entry"
#define MODULE_INIT PyInit__entry
void torch_borrow_set_impl(const void* impl); /* entry.cpp, extern "C" */

static PyObject* set_impl(PyObject* self, PyObject* arg) {
  (void)self;
  void* impl = NULL;
  if (arg != Py_None) {
    impl = PyLong_AsVoidPtr(arg);
    if (impl == NULL && PyErr_Occurred()) return NULL;
  }
  torch_borrow_set_impl(impl); /* NULL restores the no-op */
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"torch_borrow_set_impl", set_impl, METH_O,
     "Register the implementation at this address (torch_borrow_impl()); None: the no-op."},
    {"string", string, METH_O, "cffi's ffi.string() for bytes: returns them."},
    {NULL, NULL, 0, NULL},
};
#else
#define MODULE_NAME "_borrow"
#define MODULE_INIT PyInit__borrow
#ifndef TORCH_BORROW_BUILT_FOR
#error "TORCH_BORROW_BUILT_FOR (the torch version, a string literal) must be defined"
#endif
const void* torch_borrow_impl(void); /* borrow.cpp, extern "C" */

static PyObject* impl(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  return PyLong_FromVoidPtr((void*)torch_borrow_impl());
}

static PyObject* built_for(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  return PyBytes_FromString(TORCH_BORROW_BUILT_FOR);
}

static PyMethodDef methods[] = {
    {"torch_borrow_impl", impl, METH_NOARGS,
     "The address of the implementation to pass to _entry.torch_borrow_set_impl."},
    {"torch_borrow_built_for", built_for, METH_NOARGS,
     "The torch version this library was compiled against (bytes)."},
    {"string", string, METH_O, "cffi's ffi.string() for bytes: returns them."},
    {NULL, NULL, 0, NULL},
};
#endif

static int exec_module(PyObject* m) {
  if (PyModule_AddObjectRef(m, "lib", m) < 0) return -1;
  if (PyModule_AddObjectRef(m, "ffi", m) < 0) return -1;
  if (PyModule_AddStringConstant(m, "BUILT_BY", "setuptools Extension") < 0) return -1;
  return 0;
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, exec_module},
#ifdef Py_mod_gil
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, NULL},
};

static struct PyModuleDef def = {
    PyModuleDef_HEAD_INIT, "shim_ext." MODULE_NAME,
    "shim_ext's " MODULE_NAME " library, built by setuptools (shim_ext/pymodule.c).",
    0, methods, slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC MODULE_INIT(void) { return PyModuleDef_Init(&def); }
