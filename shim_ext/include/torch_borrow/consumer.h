/* torch_borrow/consumer.h: read a Python torch.Tensor's metadata from C or C++,
 * with every check a pointer + strides reader must make, in two calls.
 *
 *   #include <torch_borrow/consumer.h>      // -I$(python -c "import shim_ext; print(shim_ext.get_include())")
 *
 *   torch_borrow_meta m;
 *   if (torch_borrow_read(obj, &m) != TORCH_BORROW_OK)  // obj: a PyObject*, GIL held
 *     return torch_borrow_raise(&m);                     // sets the Python exception, NULL
 *   // m.data, m.dim, m.sizes[], m.strides[] (elements), m.dtype, m.device_type, ...
 *
 * Header-only, C99 and C++ (GCC or Clang on a POSIX system: dlopen / dlsym, __atomic
 * builtins). Include <Python.h> first or let this header include it. Link nothing: the
 * functions are found at run time in what `import torch` loaded (libtorch_cpu.so) and,
 * until torch exports the borrow itself, in the prototype's two libraries (the
 * shim_ext package of torch-borrow-bridge).
 *
 * VERSION: TORCH_BORROW_CONSUMER_VERSION, major * 10000 + minor * 100 + patch. A
 * minor version adds fields at the end of torch_borrow_meta or new status codes; a
 * major one changes what exists.
 *
 * --- The calls -------------------------------------------------------------------
 *
 * int torch_borrow_init(torch_borrow_meta* m)
 *     Resolve the functions once (later calls return at once). The look-up order:
 *       1. libtorch's own torch_tensor_borrow_from_pyobject (a torch that has it);
 *       2. the prototype: shim_ext._entry's torch_tensor_borrow_from_pyobject, after
 *          registering shim_ext._borrow's implementation with it (what
 *          shim_ext.load() does: torch_borrow_set_impl(torch_borrow_impl())). Refused
 *          when shim_ext._borrow was built for another torch than the running one (it
 *          reads THPVariable with that torch's layout): the message gives the rebuild
 *          command;
 *       3. torch's owned torch_tensor_from_pyobject (torch 2.14+), a new reference
 *          deleted on every exit, with shim_ext's torch_borrow_custom_metadata making
 *          the borrow's refusal (without it this route is not taken).
 *     torch_is_conj / torch_is_neg: libtorch's, else the prototype's; without either
 *     every read is refused (a lazy conj / neg view would read as plain values).
 *     Needs the GIL (an attached thread state) and `import torch` done before. Returns
 *     TORCH_BORROW_OK; TORCH_BORROW_UNAVAILABLE (no route; kept for the process, see
 *     torch_borrow_init_route) or TORCH_BORROW_NO_TORCH (torch not imported yet;
 *     nothing kept, the next call tries again), both with m->message saying why (m
 *     may be NULL).
 *
 * int torch_borrow_read(PyObject* obj, torch_borrow_meta* m)
 *     Fill *m from the tensor obj (borrowed: obj stays the caller's). Calls
 *     torch_borrow_init on first use. Returns TORCH_BORROW_OK, or a status with
 *     m->status and m->message set (the other fields are then unspecified):
 *       TORCH_BORROW_NO_GIL       the calling thread holds no GIL: nothing was read and
 *                                 nothing may be raised (m->message is set);
 *       TORCH_BORROW_UNAVAILABLE  no route (RuntimeError);
 *       TORCH_BORROW_NO_TORCH     torch is not imported yet (RuntimeError);
 *       TORCH_BORROW_NOT_A_TENSOR obj's real type is not torch.Tensor or a subclass
 *                                 (TypeError; a lying __class__ does not count);
 *       TORCH_BORROW_REFUSED      a tensor no pointer + strides description fits
 *                                 (BufferError): its metadata is not plain C++ state
 *                                 (a __torch_dispatch__ subclass, FakeTensor, nested,
 *                                 functional, vmap-batched, custom device / layout:
 *                                 the borrow refuses it before any getter), a layout
 *                                 other than strided (sparse, mkldnn), the conjugate or
 *                                 negative bit set, a dtype outside the table below
 *                                 (quantized, sub-byte bits / intN / uintN), the meta
 *                                 device or a device type torch does not name, elements
 *                                 without storage memory (freed, resized to 0), an
 *                                 element past the storage's bytes (shrunk under a
 *                                 view), more than TORCH_BORROW_MAX_DIMS dimensions, or
 *                                 a getter that failed (its message).
 *     Runs no Python code on success, nor on a refusal after the type check.
 *
 * PyObject* torch_borrow_raise(const torch_borrow_meta* m)
 *     Set the Python exception m->status calls for (above) with m->message; returns
 *     NULL, so `return torch_borrow_raise(&m);` ends a METH_O function. Not for
 *     TORCH_BORROW_NO_GIL (nothing Python may be touched then).
 *
 * const char* torch_borrow_route(void)
 *     "libtorch", "prototype", "owned", or NULL (none, or not resolved yet).
 *
 * int torch_borrow_init_route(const char* only, int flags, torch_borrow_meta* m)
 *     Resolve again, taking only the route named `only` ("libtorch", "prototype",
 *     "owned"; NULL: the first that exists) and, with flags == 0, no conj / neg
 *     getters (every read then refused): for tests. The previous resolution is leaked,
 *     never freed, so a read running in another thread keeps a valid one.
 *
 * --- What a successful read gives, and for how long -----------------------------
 *
 * The fields are copies: they stay valid after the call. m->data is the tensor's
 * data_ptr() (the first element, the storage offset applied; NULL or any value for a
 * tensor without elements), valid while the tensor is alive and its storage is neither
 * resized nor swapped (`.data =`, set_(), torch.utils.swap_tensors, resize_()):
 * keep obj alive (a reference) for as long as you use the pointer, and run no Python
 * code between the read and a use that must see the same tensor. The borrowed handle
 * itself never leaves this header: it is never deleted, stored, boxed, or wrapped in a
 * torch::stable::Tensor.
 *
 * Threads: reads may run in any number of threads, each holding the GIL (or, on
 * free-threaded CPython, an attached thread state); the resolution is published once
 * with release / acquire atomics. The state is per translation unit (static): include
 * the header where the reads are, and each translation unit resolves once.
 *
 * --- The torch symbols it relies on (dlsym in libtorch_cpu.so) -------------------
 *
 * aoti_torch_get_data_ptr, _get_storage_offset, _get_dim, _get_sizes, _get_strides,
 * _get_dtype, _get_device_type, _get_device_index, _get_layout, _get_storage_size,
 * aoti_torch_layout_strided, aoti_torch_device_type_meta, aoti_torch_dtype_* (the
 * table below: a code torch lacks is left out; at init, every other dtype torch can
 * allocate is added by the code an empty tensor of it reports, with torch.dtype.itemsize,
 * as the bridge builds its table), torch_exception_get_what_without_
 * backtrace (2.13+, the failed getter's message), aoti_torch_delete_tensor_object and
 * torch_tensor_from_pyobject (2.14+, the owned route), torch_tensor_borrow_from_pyobject
 * and torch_is_conj / torch_is_neg (where torch has them); the device types torch names
 * (torch._C._autograd.DeviceType). From the prototype (shim_ext): _entry's
 * torch_tensor_borrow_from_pyobject, torch_is_conj, torch_is_neg and
 * torch_borrow_set_impl, _borrow's torch_borrow_impl and torch_borrow_custom_metadata,
 * and shim_ext.built_for(_borrow) (the torch it was compiled against).
 *
 * Under torch.compile, wrap a Python function that passes tensors to such a reader in
 * torch.compiler.disable (dynamo cannot trace into C; allow_in_graph would hand it fake
 * tensors, which the read refuses).
 */
#ifndef TORCH_BORROW_CONSUMER_H
#define TORCH_BORROW_CONSUMER_H

#define TORCH_BORROW_CONSUMER_VERSION 10000 /* 1.0.0 */

#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <torch_borrow/abi.h>
#include <torch_borrow/thread_state.h>

#define TORCH_BORROW_MAX_DIMS 64
#define TORCH_BORROW_MESSAGE_SIZE 512

enum {
  TORCH_BORROW_OK = 0,
  TORCH_BORROW_NO_GIL = 1,
  TORCH_BORROW_UNAVAILABLE = 2,
  TORCH_BORROW_NOT_A_TENSOR = 3,
  TORCH_BORROW_REFUSED = 4,
  TORCH_BORROW_NO_TORCH = 5
};

typedef struct torch_borrow_meta {
  void* data;            /* data_ptr(): the first element, storage offset applied */
  int64_t dim;           /* number of dimensions, <= TORCH_BORROW_MAX_DIMS */
  int64_t sizes[TORCH_BORROW_MAX_DIMS];   /* elements */
  int64_t strides[TORCH_BORROW_MAX_DIMS]; /* elements, not bytes */
  int32_t dtype;         /* aoti_torch_dtype_* code */
  int32_t device_type;   /* aoti_torch_device_type_* code (c10::DeviceType) */
  int32_t device_index;  /* -1: none (CPU) */
  int32_t itemsize;      /* bytes per element of dtype */
  int64_t storage_offset; /* elements */
  int64_t storage_nbytes; /* the storage's size, bytes */
  int32_t status;         /* TORCH_BORROW_*: the last call's */
  char message[TORCH_BORROW_MESSAGE_SIZE]; /* why, when status != TORCH_BORROW_OK */
} torch_borrow_meta;

/* --- implementation: nothing below is part of the interface ----------------------- */

#define TORCH_BORROW__NCODES 256
#define TORCH_BORROW__NDEVICES 64

typedef struct torch_borrow__api {
  const char* route; /* NULL: why says why */
  char why[TORCH_BORROW_MESSAGE_SIZE], no_flags[TORCH_BORROW_MESSAGE_SIZE];
  torch_borrow_from_pyobject_fn borrow, owned; /* borrowed / new reference */
  torch_borrow_delete_fn del;
  torch_borrow_get_flag_fn is_conj, is_neg;
  torch_borrow_get_i32_fn layout, dtype, device_type, device_index;
  torch_borrow_get_ptr_fn data_ptr;
  torch_borrow_get_i64_fn storage_offset, dim, storage_size;
  torch_borrow_get_i64p_fn sizes, strides;
  torch_borrow_what_fn what;
  torch_borrow_custom_metadata_fn custom; /* shim_ext's, or NULL */
  int32_t strided, meta;
  int8_t itemsize[TORCH_BORROW__NCODES];
  int8_t device_known[TORCH_BORROW__NDEVICES];
  PyTypeObject* tensor_type; /* torch.Tensor, kept for good */
} torch_borrow__api;

static const torch_borrow__api* torch_borrow__state; /* __atomic release / acquire */

static inline int torch_borrow__fail(torch_borrow_meta* m, int status, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static inline int torch_borrow__fail(torch_borrow_meta* m, int status, const char* fmt, ...) {
  if (m) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->message, sizeof m->message, fmt, ap);
    va_end(ap);
    m->status = status;
  }
  return status;
}

static inline void* torch_borrow__sym(void* lib, const char* name) {
  return lib ? dlsym(lib, name) : NULL;
}

/* The pending Python exception's text after prefix, into buf; cleared. */
static inline void torch_borrow__take_error(char* buf, size_t n, const char* prefix) {
  PyObject *type, *value, *tb, *s;
  const char* u;
  PyErr_Fetch(&type, &value, &tb);
  s = value ? PyObject_Str(value) : NULL;
  u = s ? PyUnicode_AsUTF8(s) : NULL;
  snprintf(buf, n, "%s (%s)", prefix, u ? u : "unknown error");
  Py_XDECREF(s);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  PyErr_Clear();
}

/* The loaded library of an extension module (RTLD_NOLOAD: never loads one). */
static inline void* torch_borrow__module_lib(PyObject* mod) {
  PyObject* f = PyObject_GetAttrString(mod, "__file__");
  const char* path = f ? PyUnicode_AsUTF8(f) : NULL;
  void* lib = path ? dlopen(path, RTLD_NOLOAD | RTLD_LAZY) : NULL;
  Py_XDECREF(f);
  PyErr_Clear();
  return lib;
}

#define TORCH_BORROW__REBUILD                                                          \
  "rebuild it for the running torch: pip install --no-build-isolation --no-cache-dir " \
  "--force-reinstall --no-deps <the torch-borrow-bridge source folder>"

/* The prototype (shim_ext): the torch _borrow was built for, the registration (what
   shim_ext.load() does), _entry's symbols. 0: loaded; else why says why. */
static inline int torch_borrow__load_prototype(PyObject* torch, torch_borrow__api* a,
                                               torch_borrow_from_pyobject_fn* borrow,
                                               torch_borrow_get_flag_fn* conj,
                                               torch_borrow_get_flag_fn* neg, char* why,
                                               size_t n) {
  PyObject *b, *pkg, *ver, *built, *e;
  const char *running, *was;
  void *elib, *blib;
  void (*set_impl)(const void*);
  const void* (*impl)(void);
  int ok = 0;
  b = PyImport_ImportModule("shim_ext._borrow");
  if (!b) return torch_borrow__take_error(why, n, "shim_ext._borrow does not import"), -1;
  pkg = PyImport_ImportModule("shim_ext");
  ver = PyObject_GetAttrString(torch, "__version__");
  built = pkg ? PyObject_CallMethod(pkg, "built_for", "O", b) : NULL;
  running = ver ? PyUnicode_AsUTF8(ver) : NULL;
  was = built ? PyUnicode_AsUTF8(built) : NULL;
  if (!was || !running) {
    torch_borrow__take_error(why, n, "cannot read which torch shim_ext._borrow was built for");
  } else if (strcmp(was, running) != 0) {
    snprintf(why, n, "shim_ext was built for torch %s but torch %s is running: "
             TORCH_BORROW__REBUILD, was, running);
  } else {
    ok = 1;
  }
  Py_XDECREF(pkg);
  Py_XDECREF(ver);
  Py_XDECREF(built);
  e = ok ? PyImport_ImportModule("shim_ext._entry") : NULL;
  if (ok && !e) torch_borrow__take_error(why, n, "shim_ext._entry does not import"), ok = 0;
  elib = ok ? torch_borrow__module_lib(e) : NULL;
  blib = ok ? torch_borrow__module_lib(b) : NULL;
  Py_XDECREF(e);
  Py_DECREF(b);
  if (!ok) return -1;
  set_impl = (void (*)(const void*))torch_borrow__sym(elib, "torch_borrow_set_impl");
  impl = (const void* (*)(void))torch_borrow__sym(blib, "torch_borrow_impl");
  *borrow = (torch_borrow_from_pyobject_fn)torch_borrow__sym(
      elib, "torch_tensor_borrow_from_pyobject");
  *conj = (torch_borrow_get_flag_fn)torch_borrow__sym(elib, "torch_is_conj");
  *neg = (torch_borrow_get_flag_fn)torch_borrow__sym(elib, "torch_is_neg");
  a->custom = (torch_borrow_custom_metadata_fn)torch_borrow__sym(
      blib, "torch_borrow_custom_metadata");
  if (!set_impl || !impl || !*borrow || !*conj || !*neg || !a->custom) {
    *borrow = NULL, *conj = *neg = NULL, a->custom = NULL;
    snprintf(why, n, "shim_ext's libraries lack an expected symbol: rebuild it");
    return -1;
  }
  set_impl(impl()); /* the same pointer shim_ext.load() stores: idempotent */
  return 0;
}

/* The device type codes torch names (c10::DeviceType as torch._C._autograd.DeviceType
   binds it); without that enum, the ones the stable ABI names. */
static inline void torch_borrow__devices(PyObject* torch, void* lib, torch_borrow__api* a) {
  static const char* const names[] = {"cpu", "cuda", "meta", "xpu", "mps", "privateuse1"};
  PyObject* c = PyObject_GetAttrString(torch, "_C");
  PyObject* ag = c ? PyObject_GetAttrString(c, "_autograd") : NULL;
  PyObject* dt = ag ? PyObject_GetAttrString(ag, "DeviceType") : NULL;
  PyObject* members = dt ? PyObject_GetAttrString(dt, "__members__") : NULL;
  PyObject* values = members ? PyMapping_Values(members) : NULL;
  Py_ssize_t i, n = values ? PyList_Size(values) : -1;
  size_t k;
  for (i = 0; i < n; ++i) {
    PyObject* v = PyNumber_Index(PyList_GET_ITEM(values, i));
    long code = v ? PyLong_AsLong(v) : -1;
    Py_XDECREF(v);
    if (code >= 0 && code < TORCH_BORROW__NDEVICES) a->device_known[code] = 1;
  }
  Py_XDECREF(values);
  Py_XDECREF(members);
  Py_XDECREF(dt);
  Py_XDECREF(ag);
  Py_XDECREF(c);
  PyErr_Clear();
  if (n > 0) return;
  for (k = 0; k < sizeof names / sizeof names[0]; ++k) {
    char fn[64];
    torch_borrow_code_fn code;
    snprintf(fn, sizeof fn, "aoti_torch_device_type_%s", names[k]);
    code = (torch_borrow_code_fn)torch_borrow__sym(lib, fn);
    if (code && code() >= 0 && code() < TORCH_BORROW__NDEVICES) a->device_known[code()] = 1;
  }
}

/* The bridge's dtype table (bridge/_resolve.py, code_tables): every dtype torch exposes
   and can allocate, by the code a tensor of it reports through the route's handle, with
   torch.dtype.itemsize; quantized (qint*, quint*: a scale and zero point) and sub-byte
   (intN, uintN below 8 bits) dtypes left out. It adds to the aoti_torch_dtype_* table
   the dtypes the stable ABI names no code for (bcomplex32, bits16, ...). A tensor torch
   makes otherwise (under a mode: not a torch.Tensor) adds nothing. */
static inline void torch_borrow__probe_dtypes(PyObject* torch, torch_borrow__api* a) {
  PyObject* vars = PyObject_GetAttrString(torch, "__dict__");
  PyObject* dtype_type = PyObject_GetAttrString(torch, "dtype");
  PyObject* empty = PyObject_GetAttrString(torch, "empty");
  PyObject* warnings = PyImport_ImportModule("warnings");
  PyObject* cm = warnings ? PyObject_CallMethod(warnings, "catch_warnings", NULL) : NULL;
  PyObject* entered = cm ? PyObject_CallMethod(cm, "__enter__", NULL) : NULL;
  PyObject* ignored = entered ? PyObject_CallMethod(warnings, "simplefilter", "s", "ignore")
                              : NULL;
  PyObject* zero = Py_BuildValue("(i)", 0);
  PyObject *key, *v;
  Py_ssize_t pos = 0;
  if (ignored && zero && vars && PyDict_Check(vars) && PyType_Check(dtype_type) && empty) {
    while (PyDict_Next(vars, &pos, &key, &v)) {
      PyObject *s, *size, *kw, *t;
      const char* name;
      long itemsize;
      int skip;
      if (!PyObject_TypeCheck(v, (PyTypeObject*)dtype_type)) continue;
      s = PyObject_Str(v);
      name = s ? PyUnicode_AsUTF8(s) : NULL;
      skip = !name || strncmp(name, "torch.qint", 10) == 0 ||
             strncmp(name, "torch.quint", 11) == 0 ||
             ((strncmp(name, "torch.int", 9) == 0 && name[9] >= '1' && name[9] <= '7' &&
               !name[10]) ||
              (strncmp(name, "torch.uint", 10) == 0 && name[10] >= '1' && name[10] <= '7' &&
               !name[11]));
      Py_XDECREF(s);
      size = skip ? NULL : PyObject_GetAttrString(v, "itemsize");
      itemsize = size ? PyLong_AsLong(size) : -1;
      Py_XDECREF(size);
      kw = itemsize > 0 && itemsize < 128 ? Py_BuildValue("{sO}", "dtype", v) : NULL;
      t = kw ? PyObject_Call(empty, zero, kw) : NULL; /* torch.empty(0, dtype=v) */
      Py_XDECREF(kw);
      if (t && Py_TYPE(t) == a->tensor_type) {
        AtenTensorHandle h = NULL;
        int32_t code = -1;
        if (a->borrow ? a->borrow(t, &h) == 0 : a->owned && a->owned(t, &h) == 0) {
          if (a->dtype(h, &code) == 0 && code >= 0 && code < TORCH_BORROW__NCODES &&
              a->itemsize[code] == 0)
            a->itemsize[code] = (int8_t)itemsize;
          if (!a->borrow) a->del(h);
        }
      }
      Py_XDECREF(t);
      PyErr_Clear();
    }
  }
  Py_XDECREF(zero);
  Py_XDECREF(ignored);
  if (entered) {
    PyObject* r = PyObject_CallMethod(cm, "__exit__", "OOO", Py_None, Py_None, Py_None);
    Py_XDECREF(r);
  }
  Py_XDECREF(entered);
  Py_XDECREF(cm);
  Py_XDECREF(warnings);
  Py_XDECREF(empty);
  Py_XDECREF(dtype_type);
  Py_XDECREF(vars);
  PyErr_Clear();
}

static inline int torch_borrow__want(const char* only, const char* route) {
  return !only || strcmp(only, route) == 0;
}

/* A fresh resolution, or NULL (torch not imported: nothing kept, m says why). */
static inline torch_borrow__api* torch_borrow__resolve(const char* only, int flags,
                                                       torch_borrow_meta* m) {
  /* The dtypes a pointer + strides reader can describe: whole bytes per element. */
  static const struct { const char* fn; int8_t itemsize; } dtypes[] = {
      {"aoti_torch_dtype_bool", 1},           {"aoti_torch_dtype_uint8", 1},
      {"aoti_torch_dtype_int8", 1},           {"aoti_torch_dtype_int16", 2},
      {"aoti_torch_dtype_int32", 4},          {"aoti_torch_dtype_int64", 8},
      {"aoti_torch_dtype_uint16", 2},         {"aoti_torch_dtype_uint32", 4},
      {"aoti_torch_dtype_uint64", 8},         {"aoti_torch_dtype_float16", 2},
      {"aoti_torch_dtype_bfloat16", 2},       {"aoti_torch_dtype_float32", 4},
      {"aoti_torch_dtype_float64", 8},        {"aoti_torch_dtype_complex32", 4},
      {"aoti_torch_dtype_complex64", 8},      {"aoti_torch_dtype_complex128", 16},
      {"aoti_torch_dtype_float8_e5m2", 1},    {"aoti_torch_dtype_float8_e4m3fn", 1},
      {"aoti_torch_dtype_float8_e5m2fnuz", 1}, {"aoti_torch_dtype_float8_e4m3fnuz", 1},
      {"aoti_torch_dtype_float8_e8m0fnu", 1}, {"aoti_torch_dtype_float4_e2m1fn_x2", 1},
  };
  PyObject *name, *torch, *tensor;
  void* lib;
  torch_borrow__api* a;
  torch_borrow_code_fn strided, meta;
  torch_borrow_from_pyobject_fn torch_borrow, owned, proto_borrow = NULL;
  torch_borrow_get_flag_fn conj, neg, proto_conj = NULL, proto_neg = NULL;
  char proto_why[TORCH_BORROW_MESSAGE_SIZE] = "loaded";
  size_t i;
  int getters;
  name = PyUnicode_FromString("torch");
  torch = name ? PyImport_GetModule(name) : NULL;
  Py_XDECREF(name);
  tensor = torch ? PyObject_GetAttrString(torch, "Tensor") : NULL;
  lib = tensor && PyType_Check(tensor) ? dlopen("libtorch_cpu.so", RTLD_NOLOAD | RTLD_LAZY)
                                       : NULL;
  a = lib ? (torch_borrow__api*)PyMem_RawCalloc(1, sizeof *a) : NULL;
  if (!a) {
    Py_XDECREF(tensor);
    Py_XDECREF(torch);
    PyErr_Clear();
    torch_borrow__fail(m, TORCH_BORROW_NO_TORCH, "import torch before the first read");
    return NULL;
  }
  a->tensor_type = (PyTypeObject*)tensor;
#define TORCH_BORROW__GET(field, type, symbol) a->field = (type)torch_borrow__sym(lib, symbol)
  TORCH_BORROW__GET(storage_size, torch_borrow_get_i64_fn, "aoti_torch_get_storage_size");
  TORCH_BORROW__GET(layout, torch_borrow_get_i32_fn, "aoti_torch_get_layout");
  TORCH_BORROW__GET(data_ptr, torch_borrow_get_ptr_fn, "aoti_torch_get_data_ptr");
  TORCH_BORROW__GET(storage_offset, torch_borrow_get_i64_fn, "aoti_torch_get_storage_offset");
  TORCH_BORROW__GET(dim, torch_borrow_get_i64_fn, "aoti_torch_get_dim");
  TORCH_BORROW__GET(sizes, torch_borrow_get_i64p_fn, "aoti_torch_get_sizes");
  TORCH_BORROW__GET(strides, torch_borrow_get_i64p_fn, "aoti_torch_get_strides");
  TORCH_BORROW__GET(dtype, torch_borrow_get_i32_fn, "aoti_torch_get_dtype");
  TORCH_BORROW__GET(device_type, torch_borrow_get_i32_fn, "aoti_torch_get_device_type");
  TORCH_BORROW__GET(device_index, torch_borrow_get_i32_fn, "aoti_torch_get_device_index");
  TORCH_BORROW__GET(what, torch_borrow_what_fn, "torch_exception_get_what_without_backtrace");
  TORCH_BORROW__GET(del, torch_borrow_delete_fn, "aoti_torch_delete_tensor_object");
#undef TORCH_BORROW__GET
  strided = (torch_borrow_code_fn)torch_borrow__sym(lib, "aoti_torch_layout_strided");
  meta = (torch_borrow_code_fn)torch_borrow__sym(lib, "aoti_torch_device_type_meta");
  a->strided = strided ? strided() : -1;
  a->meta = meta ? meta() : -1;
  for (i = 0; i < sizeof dtypes / sizeof dtypes[0]; ++i) {
    torch_borrow_code_fn code;
    code = (torch_borrow_code_fn)torch_borrow__sym(lib, dtypes[i].fn);
    if (code && code() >= 0 && code() < TORCH_BORROW__NCODES)
      a->itemsize[code()] = dtypes[i].itemsize;
  }
  torch_borrow__devices(torch, lib, a);
  getters = a->layout && a->data_ptr && a->storage_offset && a->dim && a->sizes &&
            a->strides && a->dtype && a->device_type && a->device_index && strided &&
            meta && a->storage_size;
  torch_borrow = (torch_borrow_from_pyobject_fn)torch_borrow__sym(
      lib, "torch_tensor_borrow_from_pyobject");
  conj = (torch_borrow_get_flag_fn)torch_borrow__sym(lib, "torch_is_conj");
  neg = (torch_borrow_get_flag_fn)torch_borrow__sym(lib, "torch_is_neg");
  owned = (torch_borrow_from_pyobject_fn)torch_borrow__sym(lib, "torch_tensor_from_pyobject");
  /* Always: the owned route needs the prototype's metadata check, and a refusal's
     message names the policy through it. */
  torch_borrow__load_prototype(torch, a, &proto_borrow, &proto_conj, &proto_neg, proto_why,
                               sizeof proto_why);
  if (!getters) {
    snprintf(a->why, sizeof a->why, "libtorch_cpu lacks an aoti_torch_get_* getter or code");
  } else if (torch_borrow__want(only, "libtorch") && torch_borrow) {
    a->route = "libtorch", a->borrow = torch_borrow;
  } else if (torch_borrow__want(only, "prototype") && proto_borrow) {
    a->route = "prototype", a->borrow = proto_borrow;
  } else if (torch_borrow__want(only, "owned") && owned && a->del && a->custom) {
    a->route = "owned", a->owned = owned;
  } else {
    snprintf(a->why, sizeof a->why, "no route: libtorch: %s; prototype: %s; owned: %s",
             torch_borrow__want(only, "libtorch")
                 ? "libtorch_cpu exports no torch_tensor_borrow_from_pyobject" : "skipped",
             torch_borrow__want(only, "prototype") ? proto_why : "skipped",
             !torch_borrow__want(only, "owned") ? "skipped"
             : !owned ? "libtorch_cpu exports no torch_tensor_from_pyobject (torch 2.14+)"
                      : "no torch_borrow_custom_metadata (shim_ext) to refuse tensors "
                        "whose getters run Python");
  }
  if (a->route) torch_borrow__probe_dtypes(torch, a);
  if (!flags) {
    snprintf(a->no_flags, sizeof a->no_flags, "the flag getters were left out (flags == 0)");
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

static inline int torch_borrow__status(const torch_borrow__api* a, torch_borrow_meta* m) {
  if (a->route) return m ? (m->status = TORCH_BORROW_OK) : TORCH_BORROW_OK;
  return torch_borrow__fail(m, TORCH_BORROW_UNAVAILABLE, "%s", a->why);
}

static inline int torch_borrow_init_route(const char* only, int flags, torch_borrow_meta* m) {
  torch_borrow__api* a = torch_borrow__resolve(only, flags, m);
  if (!a) return TORCH_BORROW_NO_TORCH;
  __atomic_store_n(&torch_borrow__state, a, __ATOMIC_RELEASE); /* the old one: leaked */
  return torch_borrow__status(a, m);
}

static inline int torch_borrow_init(torch_borrow_meta* m) {
  const torch_borrow__api* a = __atomic_load_n(&torch_borrow__state, __ATOMIC_ACQUIRE);
  torch_borrow__api* mine;
  if (a) return torch_borrow__status(a, m);
  mine = torch_borrow__resolve(NULL, 1, m);
  if (!mine) return TORCH_BORROW_NO_TORCH;
  /* Imports may release the GIL: another thread may have published first. */
  if (!__atomic_compare_exchange_n(&torch_borrow__state, &a, mine, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return torch_borrow__status(a, m); /* lost the race: ours is leaked */
  return torch_borrow__status(mine, m);
}

static inline const char* torch_borrow_route(void) {
  const torch_borrow__api* a = __atomic_load_n(&torch_borrow__state, __ATOMIC_ACQUIRE);
  return a ? a->route : NULL;
}

static inline PyObject* torch_borrow_raise(const torch_borrow_meta* m) {
  PyObject* type = m->status == TORCH_BORROW_NOT_A_TENSOR ? PyExc_TypeError
                   : m->status == TORCH_BORROW_REFUSED    ? PyExc_BufferError
                                                          : PyExc_RuntimeError;
  PyErr_SetString(type, m->message);
  return NULL;
}

/* A getter failed: torch's message (2.13+), refused. */
static inline int torch_borrow__call_failed(const torch_borrow__api* a, torch_borrow_meta* m,
                                            const char* call) {
  const char* w = a->what ? a->what() : NULL;
  return torch_borrow__fail(m, TORCH_BORROW_REFUSED, "%s failed: %s", call,
                            w ? w : "no message");
}

/* Why a tensor's metadata is not plain C++ state, from its TORCH_BORROW_CUSTOM_* bits. */
static inline int torch_borrow__custom(torch_borrow_meta* m, PyObject* obj, int32_t bits) {
  static const struct { int32_t bit; const char* why; } reasons[] = {
      {TORCH_BORROW_CUSTOM_PYTHON_KEY, "the Python dispatch key"},
      {TORCH_BORROW_CUSTOM_STRIDES, "custom strides (sparse, mkldnn)"},
      {TORCH_BORROW_CUSTOM_SIZES, "custom or symbolic sizes (nested, functional, "
                                  "vmap-batched, sizes computed in Python)"},
      {TORCH_BORROW_CUSTOM_DEVICE, "a custom device"},
      {TORCH_BORROW_CUSTOM_LAYOUT, "a custom layout"},
  };
  char why[TORCH_BORROW_MESSAGE_SIZE / 2] = "";
  size_t i;
  for (i = 0; i < sizeof reasons / sizeof reasons[0]; ++i) {
    if (!(bits & reasons[i].bit)) continue;
    if (why[0]) strncat(why, "; ", sizeof why - strlen(why) - 1);
    strncat(why, reasons[i].why, sizeof why - strlen(why) - 1);
  }
  return torch_borrow__fail(m, TORCH_BORROW_REFUSED,
                            "this %s's metadata is not plain C++ state (%s): its getters may "
                            "run Python, so no pointer + strides description is read",
                            Py_TYPE(obj)->tp_name, why);
}

/* Whether an element lies outside [0, nbytes) of the storage: the storage offset plus,
   per dimension, (size - 1) * stride elements, times the itemsize; no elements: never.
   Overflow-checked in int64: an extent past INT64_MAX elements is outside any storage;
   a negative stride or offset (torch makes none) counts as outside. */
static inline int torch_borrow__outside(const torch_borrow_meta* m) {
  int64_t i, last = m->storage_offset;
  int empty = 0, past = last < 0;
  for (i = 0; i < m->dim; ++i) { /* one pass: no elements wins over any extent */
    int64_t n = m->sizes[i] - 1, s = m->strides[i];
    empty |= n < 0;
    if (n <= 0 || past) continue;
    if (s < 0 || (s > 0 && n > (INT64_MAX - last) / s)) past = 1;
    else last += n * s;
  }
  if (empty) return 0;
  return past || last >= m->storage_nbytes / m->itemsize; /* (last + 1) * itemsize > nbytes */
}

/* The reads and checks through one handle h (borrowed or owned: the caller deletes). */
static inline int torch_borrow__fill(const torch_borrow__api* a, AtenTensorHandle h,
                                     torch_borrow_meta* m) {
  int32_t layout;
  int64_t *p, i;
  bool conj = false, neg = false;
  uintptr_t ptr;
  if (a->layout(h, &layout)) return torch_borrow__call_failed(a, m, "aoti_torch_get_layout");
  if (layout != a->strided)
    return torch_borrow__fail(m, TORCH_BORROW_REFUSED,
                              "a tensor with layout code %d has no pointer + strides "
                              "description; only strided tensors can be read (call "
                              ".to_dense() first)", (int)layout);
  if (a->data_ptr(h, &m->data) || a->storage_offset(h, &m->storage_offset) ||
      a->dim(h, &m->dim))
    return torch_borrow__call_failed(a, m, "aoti_torch_get_data_ptr / _storage_offset / _dim");
  if (m->dim < 0 || m->dim > TORCH_BORROW_MAX_DIMS)
    return torch_borrow__fail(m, TORCH_BORROW_REFUSED,
                              "%lld dimensions: more dimensions than TORCH_BORROW_MAX_DIMS (%d)",
                              (long long)m->dim, TORCH_BORROW_MAX_DIMS);
  /* Copied the moment their pointer is read: it aims into the TensorImpl. */
  if (a->sizes(h, &p)) return torch_borrow__call_failed(a, m, "aoti_torch_get_sizes");
  for (i = 0; i < m->dim; ++i) m->sizes[i] = p[i];
  if (a->strides(h, &p)) return torch_borrow__call_failed(a, m, "aoti_torch_get_strides");
  for (i = 0; i < m->dim; ++i) m->strides[i] = p[i];
  if (a->dtype(h, &m->dtype) || a->device_type(h, &m->device_type) ||
      a->device_index(h, &m->device_index))
    return torch_borrow__call_failed(a, m, "aoti_torch_get_dtype / _device_type / _device_index");
  if (a->is_conj(h, &conj) || a->is_neg(h, &neg))
    return torch_borrow__call_failed(a, m, "torch_is_conj / torch_is_neg");
  if (conj || neg)
    return torch_borrow__fail(m, TORCH_BORROW_REFUSED,
                              conj ? "the conjugate bit is set: its memory holds the "
                                     "unconjugated values (call .resolve_conj() first)"
                                   : "the negative bit is set: its memory holds the "
                                     "unnegated values (call .resolve_neg() first)");
  m->itemsize = m->dtype >= 0 && m->dtype < TORCH_BORROW__NCODES ? a->itemsize[m->dtype] : 0;
  if (m->itemsize <= 0)
    return torch_borrow__fail(m, TORCH_BORROW_REFUSED,
                              "dtype code %d has no whole-byte element a pointer + strides "
                              "reader can describe (quantized, sub-byte or unknown)",
                              (int)m->dtype);
  if (m->device_type == a->meta)
    return torch_borrow__fail(m, TORCH_BORROW_REFUSED,
                              "a meta tensor has no data; only tensors with storage can be read");
  if (m->device_type < 0 || m->device_type >= TORCH_BORROW__NDEVICES ||
      !a->device_known[m->device_type])
    return torch_borrow__fail(m, TORCH_BORROW_REFUSED,
                              "device type code %d is unknown: torch names no such "
                              "c10::DeviceType", (int)m->device_type);
  /* data_ptr() is the storage's base plus the offset in bytes, never checked against a
     missing base (freed, resized to 0, a placeholder storage): the base is the proof. */
  ptr = (uintptr_t)m->data;
  if (ptr == 0 || ptr - (uintptr_t)m->storage_offset * (uintptr_t)m->itemsize == 0) {
    for (i = 0; i < m->dim; ++i)
      if (m->sizes[i] == 0) break;
    if (i == m->dim)
      return torch_borrow__fail(m, TORCH_BORROW_REFUSED,
                                "the tensor has elements but its storage holds no memory "
                                "(freed, resized to zero, or a placeholder)");
  }
  if (a->storage_size(h, &m->storage_nbytes))
    return torch_borrow__call_failed(a, m, "aoti_torch_get_storage_size");
  if (torch_borrow__outside(m))
    return torch_borrow__fail(m, TORCH_BORROW_REFUSED,
                              "the tensor's elements reach outside its storage's %lld bytes "
                              "(shrunk under it: untyped_storage().resize_())",
                              (long long)m->storage_nbytes);
  m->status = TORCH_BORROW_OK;
  return TORCH_BORROW_OK;
}

static inline int torch_borrow_read(PyObject* obj, torch_borrow_meta* m) {
  const torch_borrow__api* a;
  AtenTensorHandle h = NULL;
  int rc;
  if (!torch_borrow_thread_is_attached()) /* nothing else is touched without it */
    return torch_borrow__fail(m, TORCH_BORROW_NO_GIL, "the calling thread holds no GIL");
  a = __atomic_load_n(&torch_borrow__state, __ATOMIC_ACQUIRE);
  if (!a) { /* the first read: resolve (torch_borrow_init) */
    if ((rc = torch_borrow_init(m)) != TORCH_BORROW_OK) return rc;
    a = __atomic_load_n(&torch_borrow__state, __ATOMIC_ACQUIRE);
  }
  if (!a->route) return torch_borrow__fail(m, TORCH_BORROW_UNAVAILABLE, "%s", a->why);
  /* The real type (a lying __class__ does not count). */
  if (Py_TYPE(obj) != a->tensor_type && !PyType_IsSubtype(Py_TYPE(obj), a->tensor_type))
    return torch_borrow__fail(m, TORCH_BORROW_NOT_A_TENSOR, "expected a torch.Tensor, got %s",
                              Py_TYPE(obj)->tp_name);
  if (!a->is_conj) /* refuse rather than guess the conj / neg bits */
    return torch_borrow__fail(m, TORCH_BORROW_REFUSED,
                              "cannot read the conjugate / negative bits: %s", a->no_flags);
  if (a->borrow) {
    /* BORROWED: aliases the at::Tensor inside obj; never deleted. The borrow refuses a
       tensor whose metadata is not plain C++ state: the getters below run no Python. */
    if (a->borrow(obj, &h)) {
      int32_t layout, bits = a->custom ? a->custom(obj, &layout) : 0;
      if (bits > 0) return torch_borrow__custom(m, obj, bits);
      return torch_borrow__call_failed(a, m, "torch_tensor_borrow_from_pyobject");
    }
    return torch_borrow__fill(a, h, m);
  }
  {
    /* The owned route: shim_ext's check makes the borrow's refusal first. */
    int32_t layout, bits = a->custom(obj, &layout);
    if (bits != 0)
      return bits > 0 ? torch_borrow__custom(m, obj, bits)
                      : torch_borrow__fail(m, TORCH_BORROW_REFUSED,
                                           "this %s holds no defined tensor",
                                           Py_TYPE(obj)->tp_name);
  }
  if (a->owned(obj, &h)) return torch_borrow__call_failed(a, m, "torch_tensor_from_pyobject");
  rc = torch_borrow__fill(a, h, m); /* OWNED: deleted on every exit */
  a->del(h);
  return rc;
}

#endif /* TORCH_BORROW_CONSUMER_H */
