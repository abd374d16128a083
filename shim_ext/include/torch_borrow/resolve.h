/* torch_borrow/resolve.h: consumer.h's resolution (part of its implementation, not of
 * its interface): which of torch's functions exist, found where (libraries.h's one
 * search of what `import torch` loaded, the bridge's too; shim_ext's prototype by
 * tables.h's rule), which route a read takes (libtorch's borrow > the prototype >
 * owned > dlpack, first found wins), the set-up of each route (the key-set masks, the
 * DLPack exchange API, the dtype and device tables), the words of each route not taken,
 * and the one state a read uses, published once with release / acquire atomics. The
 * calls it defines (torch_borrow_init, torch_borrow_init_route, torch_borrow_route,
 * torch_borrow_route_why, torch_borrow_route_checks, torch_borrow_init_seconds) are
 * documented in consumer.h.
 */
#ifndef TORCH_BORROW_RESOLVE_H
#define TORCH_BORROW_RESOLVE_H

#ifndef TORCH_BORROW_CONSUMER_H
#error "include <torch_borrow/consumer.h>, whose implementation this header is"
#endif

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <torch_borrow/abi.h>
#include <torch_borrow/libraries.h>
#include <torch_borrow/reader.h>
#include <torch_borrow/tables.h>
#include <torch_borrow/thread_state.h>

/* The DLPack 1.x C exchange API (DLPack's dlpack.h, as torch's ATen/dlpack.h declares it
   from torch 2.10 on): only what the reader calls, layout-checked against torch's header in
   shim_ext/examples/consumer.cpp. A DLTensor's shape and strides point into the tensor. */
typedef torch_borrow_dltensor torch_borrow__dltensor;
typedef struct torch_borrow__dlpack_api {
  struct { uint32_t major, minor; } version; /* DLPackExchangeAPIHeader */
  void* prev_api;
  void *managed_tensor_allocator, *managed_tensor_from_py_object_no_sync,
      *managed_tensor_to_py_object_no_sync;
  int (*dltensor_from_py_object_no_sync)(void* py_object, torch_borrow__dltensor* out);
  int (*current_work_stream)(int32_t device_type, int32_t device_id, void** out_stream);
} torch_borrow__dlpack_api;
#define TORCH_BORROW__KDLCPU 1
#define TORCH_BORROW__KDLCUDA 2
#define TORCH_BORROW__KDLCUDAHOST 3
#define TORCH_BORROW__KDLROCM 10
#define TORCH_BORROW__KDLONEAPI 14
#define TORCH_BORROW__KDLMETAL 8
#define TORCH_BORROW__KDLEXTDEV 12

typedef struct torch_borrow__api {
  const char* route; /* NULL: why says why */
  /* why: the route taken and why (or why none); checks: what it judges and how */
  char why[TORCH_BORROW_MESSAGE_SIZE * 2], no_flags[TORCH_BORROW_MESSAGE_SIZE];
  char checks[TORCH_BORROW_MESSAGE_SIZE * 2];
  torch_borrow_from_pyobject_fn borrow, owned; /* borrowed / new reference */
  torch_borrow_delete_fn del;
  torch_borrow_getters g; /* the reader's (torch_borrow/reader.h); g.is_conj NULL: none */
  torch_borrow_tables t;  /* what the reader's checks compare against */
  torch_borrow_what_fn what;
  torch_borrow_custom_metadata_fn custom; /* shim_ext's, or NULL */
  char dtype_name[TORCH_BORROW_NCODES][24]; /* "float32", ...: "" unknown */
  char* refused_why[TORCH_BORROW_NCODES]; /* tables.h's words for a refused dtype, or NULL */
  PyTypeObject* tensor_type; /* torch.Tensor, kept for good */
  /* torch_borrow_to_dltensor's maps: a code's DLDataType (bits 0: none), and a stable
     device code's DLDeviceType (0: none) */
  struct { uint8_t code, bits; uint16_t lanes; } dl_dtype[TORCH_BORROW_NCODES];
  int32_t dl_device_of[TORCH_BORROW_NDEVICES];
  /* The rule without shim_ext's check and its key-set table (tables.h's, the bridge's
     too): the owned route without shim_ext takes it as it is (type_check); routes
     without a C check of the custom metadata or of the conj / neg bits either run the
     Python-level check, torch._C._dispatch_keys(obj).raw_repr() against all its masks,
     before any handle (keys_check). */
  torch_borrow_keys k;
  int keys_check; /* 1: every read runs the Python-level check before any handle */
  int type_check; /* 1: tables.h's rule without shim_ext (C flag getters judge the conj /
                     neg bits, the C checks the rest: see dispatch_flag) */
  /* The DLPack route: torch's exchange API, and the Python-level storage reads it lacks
     (under torch._C.DisableTorchFunction: no __torch_function__ answers for them). */
  const torch_borrow__dlpack_api* dlpack;
  PyObject *no_torch_function, *storage_offset_fn, *untyped_storage_fn, *nbytes_fn;
  PyObject* dtype_attr; /* TensorBase's dtype getset descriptor */
  PyObject *layout_attr, *strided; /* TensorBase's layout descriptor; torch.strided */
  PyObject* dtype_codes; /* {torch.dtype: aoti code}: kept */
  int32_t dl_device[32]; /* DLDeviceType -> aoti device code, -1: none */
  void* cuda_stream;     /* aoti_torch_get_current_cuda_stream (libtorch_cuda), or NULL */
  int (*dl_stream)(int32_t, int32_t, void**); /* the exchange API's current_work_stream */
  int32_t device_code[TORCH_BORROW_NSTABLE_DEVICES]; /* torch_borrow_stable_devices' codes, -1: none */
  double init_seconds;   /* what the resolution took (wall clock) */
} torch_borrow__api;

static const torch_borrow__api* torch_borrow__state; /* __atomic release / acquire */

/* aten::is_conj / aten::is_neg through torch's dispatcher (aoti_torch_call_dispatcher,
   torch/csrc/inductor/aoti_torch/c/shim.h), the flag getters of a torch that exports no
   torch_is_conj / torch_is_neg (2.14, 2.15) where shim_ext is absent: set by the
   resolution before the state that uses them is published, the same in every
   resolution. The dispatcher takes a tensor argument as a new reference and deletes it
   (to_ivalue's RAIIAtenTensorHandle), so each call passes a new handle to the tensor. */
typedef AOTITorchError (*torch_borrow__dispatcher_fn)(const char* op, const char* overload,
                                                      uint64_t* stack);
typedef AOTITorchError (*torch_borrow__new_handle_fn)(AtenTensorHandle, AtenTensorHandle*);
static torch_borrow__dispatcher_fn torch_borrow__dispatcher;
static torch_borrow__new_handle_fn torch_borrow__new_handle;
static torch_borrow_get_i32_fn torch_borrow__dtype_of;
static uint8_t torch_borrow__complex[TORCH_BORROW_NCODES]; /* 1: a complex dtype's code */

/* One boolean operator of h's tensor, through the dispatcher. C++ only: is_conj / is_neg
   are CompositeImplicitAutograd kernels that read the key set, dispatched above the
   Python key, so no mode or subclass runs (a test asserts it); the GIL stays held. */
static inline AOTITorchError torch_borrow__dispatch_flag(AtenTensorHandle h, const char* op,
                                                         bool* ret) {
  AtenTensorHandle arg;
  uint64_t stack[1];
  if (torch_borrow__new_handle(h, &arg)) return 1;
  memcpy(stack, &arg, sizeof arg);
  /* On failure the handle's fate is unknown (deleted if the conversion ran): leaked
     rather than deleted twice. */
  if (torch_borrow__dispatcher(op, "", stack)) return 1;
  memcpy(ret, stack, sizeof *ret); /* from_ivalue: the bool in the first byte, as copied */
  return 0;
}

/* The conj bit exists only on complex dtypes (TensorImpl::_set_conj asserts it): the
   dispatcher is asked only for them. */
static inline AOTITorchError torch_borrow__dispatch_is_conj(AtenTensorHandle h, bool* ret) {
  int32_t dtype;
  if (torch_borrow__dtype_of(h, &dtype)) return 1;
  if (dtype < 0 || dtype >= TORCH_BORROW_NCODES || !torch_borrow__complex[dtype]) {
    *ret = 0;
    return 0;
  }
  return torch_borrow__dispatch_flag(h, "aten::is_conj", ret);
}

static inline AOTITorchError torch_borrow__dispatch_is_neg(AtenTensorHandle h, bool* ret) {
  return torch_borrow__dispatch_flag(h, "aten::is_neg", ret);
}

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

/* name's address in torch's libraries (libraries.h's search order), or NULL. */
static inline void* torch_borrow__sym(const torch_borrow_libraries* lib, const char* name) {
  return torch_borrow_libraries_find(lib, name, NULL);
}

static inline int torch_borrow__device_known(void* ctx, int code, const char* lower) {
  (void)lower;
  if (code < TORCH_BORROW_NDEVICES) ((torch_borrow__api*)ctx)->t.device_known[code] = 1;
  return 0;
}

/* The device type codes torch names (tables.h's torch_borrow_each_device); without that
   enum, the ones the stable ABI names (torch_borrow_stable_devices). */
static inline void torch_borrow__devices(PyObject* torch, const torch_borrow_libraries* lib,
                                         torch_borrow__api* a) {
  size_t k;
  if (torch_borrow_each_device(torch, torch_borrow__device_known, a) > 0) return;
  PyErr_Clear();
  for (k = 0; k < TORCH_BORROW_NSTABLE_DEVICES; ++k) {
    char fn[64];
    torch_borrow_code_fn code;
    snprintf(fn, sizeof fn, "aoti_torch_device_type_%s", torch_borrow_stable_devices[k]);
    code = (torch_borrow_code_fn)torch_borrow__sym(lib, fn);
    if (code && code() >= 0 && code() < TORCH_BORROW_NDEVICES) a->t.device_known[code()] = 1;
  }
}

/* Whether a probe carries a key a mode or transform gives: under the guards a plain
   probe has none. */
static inline int torch_borrow__probe_keys(const torch_borrow__api* a, PyObject* t) {
  return (torch_borrow_key_bits(&a->k, t) & a->k.transform) != 0;
}

/* A refused dtype's words (tables.h's rule), kept once per code. */
static inline void torch_borrow__refuse_dtype(torch_borrow__api* a, int32_t code,
                                              const char* why) {
  size_t n = strlen(why) + 1;
  if (a->t.itemsize[code] > 0) return; /* a described dtype's code is never refused */
  a->t.itemsize[code] = -1;
  if (!a->refused_why[code] && (a->refused_why[code] = (char*)PyMem_RawMalloc(n)) != NULL)
    memcpy(a->refused_why[code], why, n);
}

typedef struct torch_borrow__probing {
  torch_borrow__api* a;
  char* why;
  size_t n;
} torch_borrow__probing;

/* One dtype of tables.h's walk: the probe must be a plain torch.Tensor without a key of
   the key-set table (else 1: stop, why says which); its code, read through the route's
   handle, gets the rule's itemsize or its refusal. */
static inline int torch_borrow__probe_dtype(void* ctx, PyObject* dtype, const char* name,
                                            int itemsize, const char* refused,
                                            PyObject* t) {
  torch_borrow__probing* p = (torch_borrow__probing*)ctx;
  torch_borrow__api* a = p->a;
  AtenTensorHandle h = NULL;
  int32_t code = -1;
  (void)dtype;
  if (Py_TYPE(t) != a->tensor_type || torch_borrow__probe_keys(a, t)) {
    snprintf(p->why, p->n, "a probe torch.empty(0, dtype=%s) came back as a %s%s", name,
             Py_TYPE(t)->tp_name,
             Py_TYPE(t) == a->tensor_type ? " wrapped by a mode or transform" : "");
    return 1;
  }
  if (a->borrow ? a->borrow(t, &h) != 0 : !a->owned || a->owned(t, &h) != 0) {
    PyErr_Clear();
    return 0;
  }
  if (a->g.dtype(h, &code) == 0 && code >= 0 && code < TORCH_BORROW_NCODES) {
    if (refused) {
      torch_borrow__refuse_dtype(a, code, refused);
    } else if (a->t.itemsize[code] == 0) {
      a->t.itemsize[code] = (int8_t)itemsize;
      if (!a->dtype_name[code][0]) snprintf(a->dtype_name[code], 24, "%s", name);
    }
  }
  if (!a->borrow) a->del(h);
  PyErr_Clear();
  return 0;
}

/* The bridge's dtype table (bridge/_tables.pxi): every dtype torch exposes and can
   allocate, by the code a tensor of it reports through the route's handle, with
   tables.h's rule (torch.dtype.itemsize; quantized and sub-byte refused with its
   words). It adds to the aoti_torch_dtype_* table the dtypes the stable ABI names no
   code for (bcomplex32, bits16, ...). Runs under torch_borrow_guards_enter's guards; a
   probe that still comes back other than a plain torch.Tensor (another type, or a key
   of the key-set table: a mode or transform the guards did not turn off) makes it
   return -1 with why: nothing learnt may be kept. */
static inline int torch_borrow__probe_dtypes(PyObject* torch, torch_borrow__api* a, char* why,
                                             size_t n) {
  torch_borrow__probing p;
  int rc;
  p.a = a, p.why = why, p.n = n;
  rc = torch_borrow_each_dtype(torch, torch_borrow__probe_dtype, &p);
  PyErr_Clear();
  return rc == 1 ? -1 : 0;
}

static inline int torch_borrow__want(const char* only, const char* route) {
  return !only || strcmp(only, route) == 0;
}

/* The DLPack route's set-up: torch's exchange API from the capsule
   torch.Tensor.__dlpack_c_exchange_api__ (named "dlpack_exchange_api", DLPack major 1),
   the Python-level reads it needs, the torch.dtype -> code map, the DLDevice map.
   0: ready; else why says why. */
static inline int torch_borrow__dlpack_setup(PyObject* torch, const torch_borrow_libraries* lib,
                                             torch_borrow__api* a, char* why, size_t n) {
  static const struct { int32_t dl; const char* fn; } devices[] = {
      {TORCH_BORROW__KDLCPU, "aoti_torch_device_type_cpu"},
      {TORCH_BORROW__KDLCUDAHOST, "aoti_torch_device_type_cpu"},
      {TORCH_BORROW__KDLCUDA, "aoti_torch_device_type_cuda"},
      {TORCH_BORROW__KDLROCM, "aoti_torch_device_type_cuda"},
      {TORCH_BORROW__KDLONEAPI, "aoti_torch_device_type_xpu"},
      {TORCH_BORROW__KDLMETAL, "aoti_torch_device_type_mps"},
      {TORCH_BORROW__KDLEXTDEV, "aoti_torch_device_type_privateuse1"},
  };
  PyObject *cap, *c, *base, *storage;
  const torch_borrow__dlpack_api* api;
  size_t i;
  int k;
  for (i = 0; i < sizeof a->dl_device / sizeof a->dl_device[0]; ++i) a->dl_device[i] = -1;
  for (i = 0; i < sizeof devices / sizeof devices[0]; ++i) {
    torch_borrow_code_fn code = (torch_borrow_code_fn)torch_borrow__sym(lib, devices[i].fn);
    if (code) a->dl_device[devices[i].dl] = code();
  }
  cap = PyObject_GetAttrString((PyObject*)a->tensor_type, "__dlpack_c_exchange_api__");
  api = cap && PyCapsule_IsValid(cap, "dlpack_exchange_api")
            ? (const torch_borrow__dlpack_api*)PyCapsule_GetPointer(cap, "dlpack_exchange_api")
            : NULL;
  Py_XDECREF(cap); /* torch.Tensor keeps it, and the API is static in libtorch_python */
  PyErr_Clear();
  if (!api) {
    snprintf(why, n, "torch.Tensor has no __dlpack_c_exchange_api__ capsule (torch 2.10+)");
    return -1;
  }
  if (api->version.major != 1 || !api->dltensor_from_py_object_no_sync) {
    snprintf(why, n, "torch's DLPack exchange API is version %u.%u without "
             "dltensor_from_py_object_no_sync; this header reads DLPack 1.x",
             (unsigned)api->version.major, (unsigned)api->version.minor);
    return -1;
  }
  c = PyObject_GetAttrString(torch, "_C");
  base = c ? PyObject_GetAttrString(c, "TensorBase") : NULL;
  a->no_torch_function = c ? PyObject_GetAttrString(c, "DisableTorchFunction") : NULL;
  a->storage_offset_fn = base ? PyObject_GetAttrString(base, "storage_offset") : NULL;
  a->untyped_storage_fn = base ? PyObject_GetAttrString(base, "untyped_storage") : NULL;
  a->dtype_attr = base ? PyObject_GetAttrString(base, "dtype") : NULL;
  a->layout_attr = base ? PyObject_GetAttrString(base, "layout") : NULL;
  a->strided = PyObject_GetAttrString(torch, "strided");
  storage = c ? PyObject_GetAttrString(c, "StorageBase") : NULL;
  a->nbytes_fn = storage ? PyObject_GetAttrString(storage, "nbytes") : NULL;
  a->dtype_codes = PyDict_New();
  Py_XDECREF(storage);
  Py_XDECREF(base);
  Py_XDECREF(c);
  PyErr_Clear();
  for (k = 0; a->dtype_codes && k < TORCH_BORROW_NCODES; ++k) {
    PyObject *dt, *code;
    if (!a->dtype_name[k][0] || a->t.itemsize[k] <= 0) continue;
    dt = PyObject_GetAttrString(torch, a->dtype_name[k]);
    code = dt ? PyLong_FromLong(k) : NULL;
    if (code) PyDict_SetItem(a->dtype_codes, dt, code);
    Py_XDECREF(code);
    Py_XDECREF(dt);
    PyErr_Clear();
  }
  if (!a->no_torch_function || !a->storage_offset_fn || !a->untyped_storage_fn ||
      !a->nbytes_fn || !a->dtype_attr || !Py_TYPE(a->dtype_attr)->tp_descr_get ||
      !a->layout_attr || !Py_TYPE(a->layout_attr)->tp_descr_get || !a->strided ||
      !a->dtype_codes || PyDict_Size(a->dtype_codes) == 0) {
    snprintf(why, n, "torch lacks torch._C.DisableTorchFunction, TensorBase's "
             "storage_offset / untyped_storage / dtype / layout or StorageBase.nbytes, "
             "which the DLPack route reads");
    return -1;
  }
  a->dlpack = api;
  return 0;
}

#define TORCH_BORROW__CHECKS_C                                                          \
  "C: the borrow refuses custom metadata (Python key, TensorImpl-subclass sizes, "      \
  "strides, device or layout), torch_is_conj / torch_is_neg; "
#define TORCH_BORROW__CHECKS_KEYS                                                       \
  "Python: torch._C._dispatch_keys(obj) against the Python, vmap, functorch, "          \
  "functionalize, conj, neg, sparse, nested, quantized, zero and meta keys, and the "   \
  "type's __torch_dispatch__ must be torch's default; no C check of Python-computed "   \
  "sizes without the key (torch's getters then raise: refused); "
#define TORCH_BORROW__CHECKS_DISPATCH                                                   \
  "C: the type's __torch_dispatch__ must be torch's default (looked up, no Python "     \
  "runs), aten::is_neg and, for a complex dtype, aten::is_conj through torch's "        \
  "dispatcher (C++ only); what runs Python in torch's getters makes them raise: "       \
  "refused; "
#define TORCH_BORROW__STR(x) TORCH_BORROW__STR2(x)
#define TORCH_BORROW__STR2(x) #x
#define TORCH_BORROW__CHECKS_COMMON                                                     \
  "C: real type, strided layout, dtype, device, memory present, every element inside "  \
  "the storage, at most " TORCH_BORROW__STR(TORCH_BORROW_MAX_DIMS) " dims"

/* Frees a resolution that was never published (no read can hold it): its references
   and the block. */
static inline void torch_borrow__free(torch_borrow__api* a) {
  size_t k;
  for (k = 0; k < TORCH_BORROW_NCODES; ++k) PyMem_RawFree(a->refused_why[k]);
  Py_XDECREF(a->tensor_type);
  torch_borrow_keys_clear(&a->k);
  Py_XDECREF(a->no_torch_function);
  Py_XDECREF(a->storage_offset_fn);
  Py_XDECREF(a->untyped_storage_fn);
  Py_XDECREF(a->nbytes_fn);
  Py_XDECREF(a->dtype_attr);
  Py_XDECREF(a->layout_attr);
  Py_XDECREF(a->strided);
  Py_XDECREF(a->dtype_codes);
  PyMem_RawFree(a);
}

/* torch_borrow_to_dltensor's maps, by name, as torch's own DLPack export
   (ATen/DLConvertor.cpp's getDLDataType / getDLDevice) gives them: the dtypes the
   resolution named (dtype_name: the stable ABI's names and those the probe learnt) and
   the stable device codes (device_code). */
static inline void torch_borrow__dl_maps(PyObject* torch, torch_borrow__api* a) {
  static const struct { const char* name; uint8_t code, bits; uint16_t lanes; } dtypes[] = {
      {"bool", 6, 8, 1},          {"uint8", 1, 8, 1},           {"int8", 0, 8, 1},
      {"int16", 0, 16, 1},        {"int32", 0, 32, 1},          {"int64", 0, 64, 1},
      {"uint16", 1, 16, 1},       {"uint32", 1, 32, 1},         {"uint64", 1, 64, 1},
      {"float16", 2, 16, 1},      {"bfloat16", 4, 16, 1},       {"float32", 2, 32, 1},
      {"float64", 2, 64, 1},      {"complex32", 5, 32, 1},      {"complex64", 5, 64, 1},
      {"complex128", 5, 128, 1},  {"float8_e5m2", 12, 8, 1},    {"float8_e4m3fn", 10, 8, 1},
      {"float8_e5m2fnuz", 13, 8, 1}, {"float8_e4m3fnuz", 11, 8, 1},
      {"float8_e8m0fnu", 14, 8, 1}, {"float4_e2m1fn_x2", 17, 4, 2},
  };
  /* torch_borrow_stable_devices' order: cpu, cuda, meta, xpu, mps, privateuse1, hip,
     mtia; meta and mtia have no DLDeviceType. cuda is kDLROCM on a ROCm torch. */
  int32_t devices[TORCH_BORROW_NSTABLE_DEVICES] = {TORCH_BORROW__KDLCPU, TORCH_BORROW__KDLCUDA,
                                                   0, TORCH_BORROW__KDLONEAPI,
                                                   TORCH_BORROW__KDLMETAL,
                                                   TORCH_BORROW__KDLEXTDEV,
                                                   TORCH_BORROW__KDLROCM, 0};
  PyObject* version = PyObject_GetAttrString(torch, "version");
  PyObject* hip = version ? PyObject_GetAttrString(version, "hip") : NULL;
  size_t i;
  int32_t k;
  if (hip && hip != Py_None) devices[1] = TORCH_BORROW__KDLROCM;
  Py_XDECREF(hip);
  Py_XDECREF(version);
  PyErr_Clear();
  for (k = 0; k < TORCH_BORROW_NCODES; ++k)
    for (i = 0; a->dtype_name[k][0] && i < sizeof dtypes / sizeof dtypes[0]; ++i)
      if (strcmp(a->dtype_name[k], dtypes[i].name) == 0) {
        a->dl_dtype[k].code = dtypes[i].code, a->dl_dtype[k].bits = dtypes[i].bits;
        a->dl_dtype[k].lanes = dtypes[i].lanes;
      }
  for (i = 0; i < TORCH_BORROW_NSTABLE_DEVICES; ++i)
    if (a->device_code[i] >= 0 && a->device_code[i] < TORCH_BORROW_NDEVICES &&
        !a->dl_device_of[a->device_code[i]])
      a->dl_device_of[a->device_code[i]] = devices[i];
}

/* A fresh resolution, or NULL (torch not imported, or a set-up bent by a mode or
   transform the guards did not turn off: nothing kept, m says why).
   flags: TORCH_BORROW_INIT_FLAG_GETTERS (use torch_is_conj / torch_is_neg where they
   exist), TORCH_BORROW_INIT_NO_SHIM_EXT (never import shim_ext: as if absent). */
static inline torch_borrow__api* torch_borrow__resolve(const char* only, int flags,
                                                       torch_borrow_meta* m) {
  /* The dtypes the stable ABI names a code for (aoti_torch_dtype_<name>); their
     itemsize or refusal is tables.h's rule on torch.<name>. */
  static const char* const dtypes[] = {
      "bool",         "uint8",           "int8",          "int16",
      "int32",        "int64",           "uint16",        "uint32",
      "uint64",       "float16",         "bfloat16",      "float32",
      "float64",      "complex32",       "complex64",     "complex128",
      "float8_e5m2",  "float8_e4m3fn",   "float8_e5m2fnuz", "float8_e4m3fnuz",
      "float8_e8m0fnu", "float4_e2m1fn_x2",
  };
  PyObject *name, *torch, *tensor;
  /* torch's loaded libraries (libraries.h): handles kept for good, so nothing to close */
  torch_borrow_libraries libs;
  const torch_borrow_libraries* lib = &libs;
  torch_borrow__api* a;
  torch_borrow_code_fn strided, meta;
  torch_borrow_from_pyobject_fn owned, borrow;
  torch_borrow_get_flag_fn conj, neg;
  char proto_why[TORCH_BORROW_MESSAGE_SIZE] = "loaded", flags_why[256];
  char custom_why[TORCH_BORROW_MESSAGE_SIZE];
  int at, borrow_at, no_shim_ext;
  char dl_why[TORCH_BORROW_MESSAGE_SIZE] = "ready", owned_why[160] = "";
  char unsettled[TORCH_BORROW_MESSAGE_SIZE] = "";
  PyObject* guards[TORCH_BORROW_NGUARDS];
  size_t i;
  int getters, keys_ok, dispatch_ok;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  name = PyUnicode_FromString("torch");
  torch = name ? PyImport_GetModule(name) : NULL;
  Py_XDECREF(name);
  tensor = torch ? PyObject_GetAttrString(torch, "Tensor") : NULL;
  a = tensor && PyType_Check(tensor) && torch_borrow_libraries_open(torch, &libs) > 0
          ? (torch_borrow__api*)PyMem_RawCalloc(1, sizeof *a)
          : NULL;
  if (!a) {
    Py_XDECREF(tensor);
    Py_XDECREF(torch);
    PyErr_Clear();
    torch_borrow__fail(m, TORCH_BORROW_NO_TORCH, "import torch before the first read");
    return NULL;
  }
  a->tensor_type = (PyTypeObject*)tensor;
  torch_borrow_guards_enter(torch, guards); /* exited below, before any return */
  /* The getters, by torch_borrow/reader.h's one list of their names. */
#define TORCH_BORROW__GET(symbol, field, type) a->g.field = (type)torch_borrow__sym(lib, symbol);
  TORCH_BORROW_GETTER_LIST(TORCH_BORROW__GET)
#undef TORCH_BORROW__GET
  a->what = (torch_borrow_what_fn)torch_borrow__sym(
      lib, "torch_exception_get_what_without_backtrace");
  a->del = (torch_borrow_delete_fn)torch_borrow__sym(lib, "aoti_torch_delete_tensor_object");
  torch_borrow__dispatcher =
      (torch_borrow__dispatcher_fn)torch_borrow__sym(lib, "aoti_torch_call_dispatcher");
  torch_borrow__new_handle =
      (torch_borrow__new_handle_fn)torch_borrow__sym(lib, "aoti_torch_new_tensor_handle");
  torch_borrow__dtype_of = a->g.dtype;
  /* The current CUDA stream: libtorch_cuda's, where torch was built with CUDA. */
  a->cuda_stream = torch_borrow__sym(lib, "aoti_torch_get_current_cuda_stream");
  strided = (torch_borrow_code_fn)torch_borrow__sym(lib, "aoti_torch_layout_strided");
  meta = (torch_borrow_code_fn)torch_borrow__sym(lib, "aoti_torch_device_type_meta");
  a->t.strided = strided ? strided() : -1;
  a->t.meta = meta ? meta() : -1;
  for (i = 0; i < sizeof dtypes / sizeof dtypes[0]; ++i) {
    char fn[64], refused[256];
    torch_borrow_code_fn code;
    PyObject *dt, *size;
    long itemsize;
    int32_t c;
    snprintf(fn, sizeof fn, "aoti_torch_dtype_%s", dtypes[i]);
    code = (torch_borrow_code_fn)torch_borrow__sym(lib, fn);
    c = code ? code() : -1;
    if (c < 0 || c >= TORCH_BORROW_NCODES) continue;
    dt = PyObject_GetAttrString(torch, dtypes[i]);
    size = dt ? PyObject_GetAttrString(dt, "itemsize") : NULL;
    itemsize = size ? PyLong_AsLong(size) : -1;
    Py_XDECREF(size);
    Py_XDECREF(dt);
    PyErr_Clear();
    if (itemsize < 0) continue; /* torch has no such dtype object */
    if (torch_borrow_dtype_rule(dtypes[i], itemsize, refused, sizeof refused)) {
      torch_borrow__refuse_dtype(a, c, refused);
      continue;
    }
    a->t.itemsize[c] = (int8_t)itemsize;
    snprintf(a->dtype_name[c], sizeof a->dtype_name[c], "%s", dtypes[i]);
    torch_borrow__complex[c] = strncmp(dtypes[i], "complex", 7) == 0;
  }
  torch_borrow__devices(torch, lib, a);
  for (i = 0; i < TORCH_BORROW_NSTABLE_DEVICES; ++i) {
    char fn[64];
    torch_borrow_code_fn code;
    snprintf(fn, sizeof fn, "aoti_torch_device_type_%s", torch_borrow_stable_devices[i]);
    code = (torch_borrow_code_fn)torch_borrow__sym(lib, fn);
    a->device_code[i] = code ? code() : -1;
  }
  {
    /* The exchange API's current_work_stream, for torch_borrow_current_stream. */
    PyObject* cap = PyObject_GetAttrString(tensor, "__dlpack_c_exchange_api__");
    const torch_borrow__dlpack_api* api =
        cap && PyCapsule_IsValid(cap, "dlpack_exchange_api")
            ? (const torch_borrow__dlpack_api*)PyCapsule_GetPointer(cap, "dlpack_exchange_api")
            : NULL;
    if (api && api->version.major == 1) a->dl_stream = api->current_work_stream;
    Py_XDECREF(cap);
    PyErr_Clear();
  }
  getters = torch_borrow_getters_complete(&a->g) && strided && meta;
  owned = (torch_borrow_from_pyobject_fn)torch_borrow__sym(lib, "torch_tensor_from_pyobject");
  keys_ok = torch_borrow_keys_setup(torch, &a->k) == 0;
  dispatch_ok = torch_borrow__dispatcher && torch_borrow__new_handle && a->g.dtype;
  /* The functions shim_ext prototypes, each libtorch's own where it exports it, else
     shim_ext's (tables.h's torch_borrow_find_prototyped): the borrow (from the routes
     asked for), the flag getters, and the C metadata check (which the owned route uses
     in place of the Python-level one where it loads). */
  no_shim_ext = flags & TORCH_BORROW_INIT_NO_SHIM_EXT ? TORCH_BORROW_FROM_PROTOTYPE : 0;
  borrow = (torch_borrow_from_pyobject_fn)torch_borrow_find_prototyped(
      "torch_tensor_borrow_from_pyobject", libs.handle, libs.n,
      (torch_borrow__want(only, "libtorch") ? 0 : TORCH_BORROW_FROM_TORCH) |
          (torch_borrow__want(only, "prototype") ? no_shim_ext : TORCH_BORROW_FROM_PROTOTYPE),
      &borrow_at, proto_why, sizeof proto_why);
  conj = (torch_borrow_get_flag_fn)torch_borrow_find_prototyped(
      "torch_is_conj", libs.handle, libs.n, no_shim_ext, &at, flags_why, sizeof flags_why);
  neg = conj ? (torch_borrow_get_flag_fn)torch_borrow_find_prototyped(
                   "torch_is_neg", libs.handle, libs.n, no_shim_ext, &at, flags_why,
                   sizeof flags_why)
             : NULL;
  a->custom = (torch_borrow_custom_metadata_fn)torch_borrow_find_prototyped(
      "torch_borrow_custom_metadata", libs.handle, libs.n, no_shim_ext, &at, custom_why,
      sizeof custom_why);
  if (!torch_borrow__want(only, "prototype"))
    snprintf(proto_why, sizeof proto_why, "skipped");
  else if (no_shim_ext)
    snprintf(proto_why, sizeof proto_why, "shim_ext left out (TORCH_BORROW_INIT_NO_SHIM_EXT)");
  if (!owned)
    snprintf(owned_why, sizeof owned_why,
             "libtorch_cpu exports no torch_tensor_from_pyobject (torch 2.14+)");
  else if (!a->custom && !keys_ok)
    snprintf(owned_why, sizeof owned_why, "neither shim_ext's metadata check nor torch's "
             "torch._C._dispatch_keys to refuse tensors whose getters run Python");
  if (!getters) {
    snprintf(a->why, sizeof a->why, "libtorch_cpu lacks an aoti_torch_get_* getter or code");
  } else if (borrow && borrow_at >= 0) {
    a->route = "libtorch", a->borrow = borrow;
    snprintf(a->why, sizeof a->why, "libtorch: torch exports torch_tensor_borrow_from_pyobject");
  } else if (borrow) {
    a->route = "prototype", a->borrow = borrow;
    snprintf(a->why, sizeof a->why, "prototype: torch exports no torch_tensor_borrow_from_"
             "pyobject; shim_ext, built for the running torch, has it");
  } else if (torch_borrow__want(only, "owned") && owned && a->del && !owned_why[0]) {
    a->route = "owned", a->owned = owned;
    snprintf(a->why, sizeof a->why, "owned: torch exports no borrow; prototype: %s; torch's "
             "torch_tensor_from_pyobject (a new reference per read) with %s", proto_why,
             a->custom ? "shim_ext's metadata check"
             : dispatch_ok && (flags & TORCH_BORROW_INIT_FLAG_GETTERS)
                 ? "the type's __torch_dispatch__ check and aten::is_conj / is_neg through "
                   "torch's dispatcher"
                 : "the Python-level key-set check");
  } else if (torch_borrow__want(only, "dlpack") && keys_ok &&
             torch_borrow__dlpack_setup(torch, lib, a, dl_why, sizeof dl_why) == 0) {
    a->route = "dlpack";
    snprintf(a->why, sizeof a->why, "dlpack: torch exports no borrow; prototype: %s; owned: "
             "%s; torch's DLPack exchange API (dltensor_from_py_object_no_sync) with the "
             "Python-level key-set and storage checks", proto_why,
             owned_why[0] ? owned_why : "skipped");
  } else {
    snprintf(a->why, sizeof a->why,
             "no route: libtorch: %.200s; prototype: %.200s; owned: %.200s; dlpack: %.200s",
             torch_borrow__want(only, "libtorch")
                 ? "libtorch_cpu exports no torch_tensor_borrow_from_pyobject" : "skipped",
             torch_borrow__want(only, "prototype") ? proto_why : "skipped",
             !torch_borrow__want(only, "owned") ? "skipped"
                                                : owned_why[0] ? owned_why : "no deleter",
             !torch_borrow__want(only, "dlpack") ? "skipped"
             : !keys_ok ? "torch lacks torch._C._dispatch_keys / DispatchKeySet.raw_repr"
                        : dl_why);
  }
  if (a->route && a->route[0] != 'd' &&
      torch_borrow__probe_dtypes(torch, a, unsettled, sizeof unsettled) != 0) {
    /* Learnt under a state the guards could not turn off: nothing is kept, and the next
       call resolves again. */
    torch_borrow_guards_exit(guards);
    Py_DECREF(torch);
    torch_borrow__fail(m, TORCH_BORROW_UNAVAILABLE, "the set-up met a mode or functional "
                       "transform it could not turn off (%s); nothing was kept: read once "
                       "outside it", unsettled);
    torch_borrow__free(a);
    return NULL;
  }
  torch_borrow__dl_maps(torch, a); /* after the probe: the dtypes it named too */
  if (!(flags & TORCH_BORROW_INIT_FLAG_GETTERS)) {
    snprintf(a->no_flags, sizeof a->no_flags, "the flag getters were left out (flags == 0)");
  } else if (conj && neg) {
    a->g.is_conj = conj, a->g.is_neg = neg;
  } else if (a->owned && !a->custom && dispatch_ok && keys_ok) {
    /* The owned route without shim_ext: an owning handle exists, so the flags are read
       through the dispatcher, and the metadata by tables.h's rule without shim_ext (the
       type's __torch_dispatch__ before the handle; keys_ok: the key set names a read
       that stopped), the bridge's owned path's too. */
    a->g.is_conj = torch_borrow__dispatch_is_conj, a->g.is_neg = torch_borrow__dispatch_is_neg;
    a->type_check = 1;
  } else if (keys_ok) {
    /* No flag getters: the key set has the Conjugate and Negative keys; the Python-level
       check runs on every read. */
  } else {
    snprintf(a->no_flags, sizeof a->no_flags,
             "libtorch_cpu exports no torch_is_conj / torch_is_neg, and the prototype: %s",
             flags_why);
  }
  /* The Python-level check runs where no C check judges the metadata or the flags. */
  a->keys_check = a->route && keys_ok && !a->type_check &&
                  (a->route[0] == 'd' || (!a->borrow && !a->custom) ||
                   (!a->no_flags[0] && !a->g.is_conj));
  if (a->route)
    snprintf(a->checks, sizeof a->checks, "%s%s%s" TORCH_BORROW__CHECKS_COMMON,
             a->borrow || a->custom ? TORCH_BORROW__CHECKS_C : "",
             a->keys_check ? TORCH_BORROW__CHECKS_KEYS : "",
             a->type_check ? TORCH_BORROW__CHECKS_DISPATCH : "");
  torch_borrow_guards_exit(guards);
  Py_DECREF(torch);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  a->init_seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  return a;
}

static inline int torch_borrow__status(const torch_borrow__api* a, torch_borrow_meta* m) {
  if (a->route) return m ? (m->status = TORCH_BORROW_OK) : TORCH_BORROW_OK;
  return torch_borrow__fail(m, TORCH_BORROW_UNAVAILABLE, "%s", a->why);
}

static inline int torch_borrow_init_route(const char* only, int flags, torch_borrow_meta* m) {
  torch_borrow_meta local;
  torch_borrow__api* a = torch_borrow__resolve(only, flags, m ? m : &local);
  if (!a) return (m ? m : &local)->status; /* NO_TORCH or UNAVAILABLE: nothing kept */
  __atomic_store_n(&torch_borrow__state, a, __ATOMIC_RELEASE); /* the old one: leaked */
  return torch_borrow__status(a, m);
}

static inline int torch_borrow_init(torch_borrow_meta* m) {
  const torch_borrow__api* a = __atomic_load_n(&torch_borrow__state, __ATOMIC_ACQUIRE);
  torch_borrow__api* mine;
  torch_borrow_meta local;
  if (a) return torch_borrow__status(a, m);
  mine = torch_borrow__resolve(NULL, 1, m ? m : &local);
  if (!mine) return (m ? m : &local)->status; /* NO_TORCH or UNAVAILABLE: nothing kept */
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

static inline const torch_borrow__api* torch_borrow__current(void) {
  return __atomic_load_n(&torch_borrow__state, __ATOMIC_ACQUIRE);
}

static inline const char* torch_borrow_route_why(void) {
  const torch_borrow__api* a = torch_borrow__current();
  return a ? a->why : NULL;
}

static inline const char* torch_borrow_route_checks(void) {
  const torch_borrow__api* a = torch_borrow__current();
  return a && a->route ? a->checks : NULL;
}

static inline double torch_borrow_init_seconds(void) {
  const torch_borrow__api* a = torch_borrow__current();
  return a ? a->init_seconds : -1.0;
}

#endif /* TORCH_BORROW_RESOLVE_H */
