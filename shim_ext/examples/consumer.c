/* consumer.cpp in plain C: the same module (borrow_consumer_c: view, route, _resolve,
 * borrow_consumer_c_read) with no torch header. torch's headers are C++ only
 * (aoti_torch/c/macros.h declares AtenTensorHandle with `using`), but everything the
 * stable C ABI exports is extern "C" and AtenTensorHandle is an opaque pointer, so a C
 * consumer takes the C types from shim_ext/include/torch_borrow/abi.h, which matches
 * torch's declarations. consumer.cpp explains each step; this file keeps only what C
 * does differently (a goto where C++ has a destructor).
 * Build: cc -std=c11 -shared -fPIC -I<Python include> -Ishim_ext/include consumer.c -ldl
 * (build.py). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The stable C ABI's types, as this project declares them once (torch_borrow/abi.h: no
   torch header; they match torch's own declarations). Short names for this file. */
#include <torch_borrow/abi.h>
typedef torch_borrow_from_pyobject_fn from_pyobject_fn;
typedef torch_borrow_delete_fn delete_fn;
typedef torch_borrow_get_flag_fn flag_fn;
typedef torch_borrow_get_ptr_fn ptr_fn;
typedef torch_borrow_get_i64_fn i64_fn;
typedef torch_borrow_get_i64p_fn i64p_fn;
typedef torch_borrow_get_i32_fn i32_fn;
typedef torch_borrow_code_fn code_fn;
typedef torch_borrow_what_fn what_fn;

enum { MAX_DIMS = 64, NCODES = 256 };

typedef struct Api {
  const char* route; /* "libtorch" | "prototype" | "owned" | NULL (why says why) */
  char why[512], no_flags[512];
  from_pyobject_fn borrow, owned; /* borrowed / new reference */
  delete_fn del;
  flag_fn is_conj, is_neg;
  i32_fn layout, dtype, device_type, device_index;
  ptr_fn data_ptr;
  i64_fn storage_offset, dim;
  i64p_fn sizes, strides;
  what_fn what;
  int32_t strided, meta;
  int8_t itemsize[NCODES];
  i64_fn storage_size;
  PyObject* tensor_type; /* kept for good */
  /* shim_ext's torch_borrow_custom_metadata: the borrow's refusal rule, for the owned
     route (the borrow makes it itself). */
  torch_borrow_custom_metadata_fn custom;
} Api;

static const Api* g_api; /* published with __atomic_* (release / acquire) */

/* Whether any element lies outside [0, nbytes) of the storage: storage offset plus, per
   dimension, (size - 1) * stride elements, times the itemsize; no elements: never. In 128
   bits, saturated; a negative stride or offset (torch makes none) counts as outside. */
static bool outside_storage(int64_t ndim, const int64_t* sizes, const int64_t* strides,
                            int64_t offset, int64_t itemsize, int64_t nbytes) {
  for (int64_t i = 0; i < ndim; ++i)
    if (sizes[i] == 0) return false;
  const __int128 cap = (__int128)1 << 100;
  __int128 last = offset; /* the furthest element, in elements */
  for (int64_t i = 0; i < ndim; ++i) {
    __int128 step = ((__int128)sizes[i] - 1) * strides[i];
    if (step < 0 || last < 0) return true;
    last = last + step > cap ? cap : last + step;
  }
  return (last + 1) * itemsize > nbytes;
}

static void* sym(void* lib, const char* name) { return lib ? dlsym(lib, name) : NULL; }

/* The pending exception's text into buf, cleared. */
static void take_error(char* buf, size_t n, const char* prefix) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyObject* s = value ? PyObject_Str(value) : NULL;
  const char* u = s ? PyUnicode_AsUTF8(s) : NULL;
  snprintf(buf, n, "%s (%s)", prefix, u ? u : "unknown error");
  Py_XDECREF(s), Py_XDECREF(type), Py_XDECREF(value), Py_XDECREF(tb);
  PyErr_Clear();
}

static void* module_lib(PyObject* mod) { /* the loaded library of an extension module */
  PyObject* f = PyObject_GetAttrString(mod, "__file__");
  const char* path = f ? PyUnicode_AsUTF8(f) : NULL;
  void* lib = path ? dlopen(path, RTLD_NOLOAD | RTLD_LAZY) : NULL;
  Py_XDECREF(f);
  PyErr_Clear();
  return lib;
}

/* The prototype: check the torch _borrow was built for, register its implementation
 * with _entry (what shim_ext.load() does), take _entry's symbols. false: why says why. */
static bool load_prototype(PyObject* torch, from_pyobject_fn* borrow, flag_fn* conj,
                           flag_fn* neg, torch_borrow_custom_metadata_fn* custom, char* why,
                           size_t n) {
  PyObject* b = PyImport_ImportModule("shim_ext._borrow");
  if (!b) return take_error(why, n, "shim_ext._borrow does not import"), false;
  PyObject* ver = PyObject_GetAttrString(torch, "__version__");
  PyObject* lib = PyObject_GetAttrString(b, "lib");
  PyObject* ffi = PyObject_GetAttrString(b, "ffi");
  PyObject* raw = lib ? PyObject_CallMethod(lib, "torch_borrow_built_for", NULL) : NULL;
  PyObject* built = ffi && raw ? PyObject_CallMethod(ffi, "string", "O", raw) : NULL;
  const char* running = ver ? PyUnicode_AsUTF8(ver) : NULL;
  bool ok = false;
  if (!built || !PyBytes_Check(built) || !running) {
    take_error(why, n, "cannot read which torch shim_ext._borrow was built for");
  } else if (strcmp(PyBytes_AsString(built), running) != 0) {
    snprintf(why, n, "shim_ext was built for torch %s but torch %s is running: rebuild it",
             PyBytes_AsString(built), running);
  } else {
    ok = true;
  }
  Py_XDECREF(ver), Py_XDECREF(lib), Py_XDECREF(ffi), Py_XDECREF(raw), Py_XDECREF(built);
  PyObject* e = ok ? PyImport_ImportModule("shim_ext._entry") : NULL;
  if (ok && !e) take_error(why, n, "shim_ext._entry does not import"), ok = false;
  void* elib = ok ? module_lib(e) : NULL;
  void* blib = ok ? module_lib(b) : NULL;
  Py_XDECREF(e), Py_DECREF(b);
  if (!ok) return false;
  void (*set_impl)(const void*) = (void (*)(const void*))sym(elib, "torch_borrow_set_impl");
  const void* (*impl)(void) = (const void* (*)(void))sym(blib, "torch_borrow_impl");
  *borrow = (from_pyobject_fn)sym(elib, "torch_tensor_borrow_from_pyobject");
  *conj = (flag_fn)sym(elib, "torch_is_conj");
  *neg = (flag_fn)sym(elib, "torch_is_neg");
  *custom = (torch_borrow_custom_metadata_fn)sym(blib, "torch_borrow_custom_metadata");
  if (!set_impl || !impl || !*borrow || !*conj || !*neg || !*custom) {
    *borrow = NULL, *conj = *neg = NULL, *custom = NULL;
    snprintf(why, n, "shim_ext's libraries lack an expected symbol");
    return false;
  }
  set_impl(impl()); /* what shim_ext.load() does: one store of the same pointer */
  return true;
}

static const struct { const char* fn; int8_t itemsize; } DTYPES[] = {
    {"aoti_torch_dtype_bool", 1},         {"aoti_torch_dtype_uint8", 1},
    {"aoti_torch_dtype_int8", 1},         {"aoti_torch_dtype_int16", 2},
    {"aoti_torch_dtype_int32", 4},        {"aoti_torch_dtype_int64", 8},
    {"aoti_torch_dtype_uint16", 2},       {"aoti_torch_dtype_uint32", 4},
    {"aoti_torch_dtype_uint64", 8},       {"aoti_torch_dtype_float16", 2},
    {"aoti_torch_dtype_bfloat16", 2},     {"aoti_torch_dtype_float32", 4},
    {"aoti_torch_dtype_float64", 8},      {"aoti_torch_dtype_complex32", 4},
    {"aoti_torch_dtype_complex64", 8},    {"aoti_torch_dtype_complex128", 16},
    {"aoti_torch_dtype_float8_e5m2", 1},  {"aoti_torch_dtype_float8_e4m3fn", 1},
    {"aoti_torch_dtype_float8_e5m2fnuz", 1}, {"aoti_torch_dtype_float8_e4m3fnuz", 1},
    {"aoti_torch_dtype_float8_e8m0fnu", 1},  {"aoti_torch_dtype_float4_e2m1fn_x2", 1},
};

static bool want(const char* only, const char* r) { return !only || strcmp(only, r) == 0; }

static const Api* resolve(const char* only, bool flags) {
  PyObject* name = PyUnicode_FromString("torch");
  PyObject* torch = name ? PyImport_GetModule(name) : NULL;
  Py_XDECREF(name);
  PyObject* tensor = torch ? PyObject_GetAttrString(torch, "Tensor") : NULL;
  void* lib = tensor ? dlopen("libtorch_cpu.so", RTLD_NOLOAD | RTLD_LAZY) : NULL;
  Api* a = lib ? PyMem_RawCalloc(1, sizeof(Api)) : NULL;
  if (!a) {
    Py_XDECREF(tensor), Py_XDECREF(torch);
    PyErr_Clear();
    PyErr_SetString(PyExc_RuntimeError, "import torch before the first view");
    return NULL;
  }
  a->tensor_type = tensor;
  a->storage_size = (i64_fn)sym(lib, "aoti_torch_get_storage_size");
  a->layout = (i32_fn)sym(lib, "aoti_torch_get_layout");
  a->data_ptr = (ptr_fn)sym(lib, "aoti_torch_get_data_ptr");
  a->storage_offset = (i64_fn)sym(lib, "aoti_torch_get_storage_offset");
  a->dim = (i64_fn)sym(lib, "aoti_torch_get_dim");
  a->sizes = (i64p_fn)sym(lib, "aoti_torch_get_sizes");
  a->strides = (i64p_fn)sym(lib, "aoti_torch_get_strides");
  a->dtype = (i32_fn)sym(lib, "aoti_torch_get_dtype");
  a->device_type = (i32_fn)sym(lib, "aoti_torch_get_device_type");
  a->device_index = (i32_fn)sym(lib, "aoti_torch_get_device_index");
  a->what = (what_fn)sym(lib, "torch_exception_get_what_without_backtrace");
  code_fn strided = (code_fn)sym(lib, "aoti_torch_layout_strided");
  code_fn meta = (code_fn)sym(lib, "aoti_torch_device_type_meta");
  a->strided = strided ? strided() : -1;
  a->meta = meta ? meta() : -1;
  for (size_t i = 0; i < sizeof DTYPES / sizeof DTYPES[0]; ++i) {
    code_fn code = (code_fn)sym(lib, DTYPES[i].fn);
    if (code && code() >= 0 && code() < NCODES) a->itemsize[code()] = DTYPES[i].itemsize;
  }
  bool getters = a->layout && a->data_ptr && a->storage_offset && a->dim && a->sizes &&
      a->strides && a->dtype && a->device_type && a->device_index && strided && meta &&
      a->storage_size;

  from_pyobject_fn torch_borrow = (from_pyobject_fn)sym(lib, "torch_tensor_borrow_from_pyobject");
  flag_fn conj = (flag_fn)sym(lib, "torch_is_conj"), neg = (flag_fn)sym(lib, "torch_is_neg");
  from_pyobject_fn proto_borrow = NULL;
  flag_fn proto_conj = NULL, proto_neg = NULL;
  char proto_why[256] = "loaded";
  /* Always: the owned route makes the borrow's check through shim_ext's helper. */
  load_prototype(torch, &proto_borrow, &proto_conj, &proto_neg, &a->custom, proto_why,
                 sizeof proto_why);
  from_pyobject_fn owned = (from_pyobject_fn)sym(lib, "torch_tensor_from_pyobject");
  a->del = (delete_fn)sym(lib, "aoti_torch_delete_tensor_object");
  if (!getters) {
    snprintf(a->why, sizeof a->why, "libtorch_cpu lacks an aoti_torch_get_* getter or code");
  } else if (want(only, "libtorch") && torch_borrow) {
    a->route = "libtorch", a->borrow = torch_borrow;
  } else if (want(only, "prototype") && proto_borrow) {
    a->route = "prototype", a->borrow = proto_borrow;
  } else if (want(only, "owned") && owned && a->del && a->custom) {
    a->route = "owned", a->owned = owned;
  } else {
    snprintf(a->why, sizeof a->why, "no route: libtorch: %s; prototype: %s; owned: %s",
             want(only, "libtorch") ? "libtorch_cpu exports no torch_tensor_borrow_from_pyobject"
                                    : "skipped",
             want(only, "prototype") ? proto_why : "skipped",
             want(only, "owned") ? (owned ? "no torch_borrow_custom_metadata (shim_ext) to "
                                            "refuse tensors whose getters run Python"
                                          : "libtorch_cpu exports no torch_tensor_from_pyobject "
                                            "(torch 2.14+)")
                                 : "skipped");
  }
  if (!flags) {
    snprintf(a->no_flags, sizeof a->no_flags, "the flag getters were left out (_resolve(flags=False))");
  } else if (conj && neg) {
    a->is_conj = conj, a->is_neg = neg;
  } else if (proto_conj && proto_neg) {
    a->is_conj = proto_conj, a->is_neg = proto_neg;
  } else {
    snprintf(a->no_flags, sizeof a->no_flags,
             "libtorch_cpu exports no torch_is_conj / torch_is_neg, and the prototype: %s",
             proto_why);
  }
  Py_DECREF(torch);
  return a;
}

static const Api* get_api(void) {
  const Api* a = __atomic_load_n(&g_api, __ATOMIC_ACQUIRE);
  if (a) return a;
  const Api* mine = resolve(NULL, true);
  if (!mine) return NULL;
  if (__atomic_compare_exchange_n(&g_api, &a, mine, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return mine;
  return a; /* lost the race: ours is leaked, like every replaced Api */
}

static int call_failed(const Api* a, const char* call) {
  if (PyErr_Occurred()) return -1;
  const char* w = a->what ? a->what() : NULL;
  PyErr_Format(PyExc_BufferError, "%s failed: %s", call, w ? w : "no message");
  return -1;
}

typedef struct BorrowConsumerMeta {
  void* data;
  int64_t dim;
  int64_t sizes[MAX_DIMS];
  int64_t strides[MAX_DIMS];
  int32_t dtype, device_type, device_index;
} BorrowConsumerMeta;

__attribute__((visibility("default"))) int borrow_consumer_c_read(PyObject* obj,
                                                                  BorrowConsumerMeta* m) {
  if (!PyGILState_Check()) return -2; /* 1. the GIL: nothing touched, nothing raised */
  const Api* a = get_api();
  if (!a) return -1;
  if (!a->route) return PyErr_SetString(PyExc_RuntimeError, a->why), -1;
  PyTypeObject* tp = Py_TYPE(obj); /* 2. the real type */
  if (!PyObject_TypeCheck(obj, (PyTypeObject*)a->tensor_type)) {
    PyErr_Format(PyExc_TypeError, "expected a torch.Tensor, got %s", tp->tp_name);
    return -1;
  }
  /* 3. metadata that is plain C++ state: the borrow refuses any other tensor by itself
     (a __torch_dispatch__ subclass, nested, functional: their getters may run Python);
     the owned route asks shim_ext's helper the same question, in C++. */
  if (a->owned) {
    int32_t layout;
    int32_t custom = a->custom(obj, &layout);
    if (custom) {
      PyErr_Format(PyExc_BufferError, "this %s's metadata is not plain C++ state "
                   "(torch_borrow_custom_metadata: 0x%x): its getters may run Python",
                   tp->tp_name, (unsigned)custom);
      return -1;
    }
  }
  if (!a->is_conj) { /* 4. refuse rather than guess the conj / neg bits */
    PyErr_Format(PyExc_BufferError, "cannot read the conjugate / negative bits: %s", a->no_flags);
    return -1;
  }
  AtenTensorHandle h = NULL;
  int rc = -1;
  if (a->borrow) {
    /* BORROWED: aliases the at::Tensor inside obj; never delete it. */
    if (a->borrow(obj, &h)) return call_failed(a, "torch_tensor_borrow_from_pyobject");
  } else if (a->owned(obj, &h)) {
    return call_failed(a, "torch_tensor_from_pyobject");
  } /* else OWNED from here: every exit below goes through `done`, which deletes it */
  int32_t layout; /* 5. strided */
  if (a->layout(h, &layout)) { call_failed(a, "aoti_torch_get_layout"); goto done; }
  if (layout != a->strided) {
    PyErr_SetString(PyExc_BufferError, "only strided tensors have a pointer + strides "
                    "description (call .to_dense() first)");
    goto done;
  }
  int64_t offset, *p; /* 6. the getters; sizes and strides copied at once */
  if (a->data_ptr(h, &m->data) || a->storage_offset(h, &offset) || a->dim(h, &m->dim)) {
    call_failed(a, "aoti_torch_get_data_ptr / _storage_offset / _dim");
    goto done;
  }
  if (m->dim > MAX_DIMS) {
    PyErr_SetString(PyExc_BufferError, "more dimensions than MAX_DIMS");
    goto done;
  }
  if (a->sizes(h, &p)) { call_failed(a, "aoti_torch_get_sizes"); goto done; }
  for (int64_t i = 0; i < m->dim; ++i) m->sizes[i] = p[i];
  if (a->strides(h, &p)) { call_failed(a, "aoti_torch_get_strides"); goto done; }
  for (int64_t i = 0; i < m->dim; ++i) m->strides[i] = p[i];
  if (a->dtype(h, &m->dtype) || a->device_type(h, &m->device_type) ||
      a->device_index(h, &m->device_index)) {
    call_failed(a, "aoti_torch_get_dtype / _device_type / _device_index");
    goto done;
  }
  bool conj = false, neg = false; /* 7. the conj / neg bits */
  if (a->is_conj(h, &conj) || a->is_neg(h, &neg)) { call_failed(a, "torch_is_conj / _neg"); goto done; }
  if (conj || neg) {
    PyErr_SetString(PyExc_BufferError, conj ? "the conjugate bit is set: call .resolve_conj() first"
                                            : "the negative bit is set: call .resolve_neg() first");
    goto done;
  }
  int8_t itemsize = m->dtype >= 0 && m->dtype < NCODES ? a->itemsize[m->dtype] : 0; /* 8. */
  if (itemsize == 0) {
    PyErr_Format(PyExc_BufferError, "dtype code %d is not one this consumer views "
                 "(quantized, sub-byte or unknown)", (int)m->dtype);
    goto done;
  }
  if (m->device_type == a->meta) {
    PyErr_SetString(PyExc_BufferError, "a meta tensor has no data");
    goto done;
  }
  uintptr_t ptr = (uintptr_t)m->data; /* 9. a storage that holds memory */
  if (ptr == 0 || ptr - (uintptr_t)offset * (uintptr_t)itemsize == 0) {
    bool empty = false;
    for (int64_t i = 0; i < m->dim; ++i) empty = empty || m->sizes[i] == 0;
    if (!empty) {
      PyErr_SetString(PyExc_BufferError, "the tensor has elements but its storage holds no "
                      "memory (freed, resized to zero, or a placeholder)");
      goto done;
    }
  }
  int64_t nbytes; /* 10. no element past the storage (shrunk under a view) */
  if (a->storage_size(h, &nbytes)) { call_failed(a, "aoti_torch_get_storage_size"); goto done; }
  if (outside_storage(m->dim, m->sizes, m->strides, offset, itemsize, nbytes)) {
    PyErr_Format(PyExc_BufferError, "the tensor's elements reach past its storage's %lld bytes",
                 (long long)nbytes);
    goto done;
  }
  rc = 0;
done:
  if (a->owned) a->del(h); /* owned: deleted on every exit; borrowed: never */
  return rc;
}

static PyObject* view(PyObject* self, PyObject* obj) {
  (void)self;
  BorrowConsumerMeta m;
  if (borrow_consumer_c_read(obj, &m)) return NULL;
  PyObject* sizes = PyTuple_New(m.dim);
  PyObject* strides = PyTuple_New(m.dim);
  for (int64_t i = 0; sizes && strides && i < m.dim; ++i) {
    PyTuple_SET_ITEM(sizes, i, PyLong_FromLongLong(m.sizes[i]));
    PyTuple_SET_ITEM(strides, i, PyLong_FromLongLong(m.strides[i]));
  }
  if (PyErr_Occurred()) {
    Py_XDECREF(sizes), Py_XDECREF(strides);
    return NULL;
  }
  return Py_BuildValue("(NNNiii)", PyLong_FromVoidPtr(m.data), sizes, strides, m.dtype,
                       m.device_type, m.device_index);
}

static PyObject* route(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  const Api* a = get_api();
  if (!a) return NULL;
  if (!a->route) Py_RETURN_NONE;
  return PyUnicode_FromString(a->route);
}

static PyObject* resolve_again(PyObject* self, PyObject* args, PyObject* kwargs) {
  const char* only = NULL;
  int flags = 1;
  static char* kw[] = {"route", "flags", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|zp", kw, &only, &flags)) return NULL;
  const Api* a = resolve(only, flags);
  if (!a) return NULL;
  __atomic_store_n(&g_api, a, __ATOMIC_RELEASE); /* the old one is leaked: never freed */
  return route(self, NULL);
}

static PyMethodDef methods[] = {
    {"view", view, METH_O,
     "view(tensor) -> (data_ptr, sizes, strides, dtype code, device type code, device index)"},
    {"route", route, METH_NOARGS, "Where handles come from: 'libtorch', 'prototype', 'owned' or None."},
    {"_resolve", (PyCFunction)(void (*)(void))resolve_again, METH_VARARGS | METH_KEYWORDS,
     "_resolve(route=None, flags=True) -> route() (tests only)"},
    {NULL, NULL, 0, NULL}};

static PyModuleDef module = {PyModuleDef_HEAD_INIT, "borrow_consumer_c",
                             "consumer.cpp in plain C.", -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_borrow_consumer_c(void) {
  PyObject* m = PyModule_Create(&module);
#ifdef Py_GIL_DISABLED
  if (m) PyUnstable_Module_SetGIL(m, Py_MOD_GIL_NOT_USED);
#endif
  return m;
}
