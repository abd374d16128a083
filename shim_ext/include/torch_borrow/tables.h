/* torch_borrow/tables.h: what a reader learns once from torch's Python module, the
 * tables torch_borrow/reader.h's checks compare against: which dtypes have elements a
 * pointer + strides reader can describe (and in how many bytes), and which device types
 * torch names; the guards it learns them under, and the two tests on Python objects the
 * reader's front ends make: a real torch.Tensor, a plain probe; where a function the
 * prototype (shim_ext) stands in for comes from; and the rule a reader follows without
 * shim_ext's metadata check (the type's __torch_dispatch__, the dispatch-key table that
 * names a refused tensor). Shared by the bridge (bridge/_tables.pxi, bridge/_install.pxi,
 * bridge/_bridge_read.h, bridge/_errors.pxi) and torch_borrow/consumer.h, so each rule
 * and its words are written once.
 *
 * C99 and C++; needs Python.h (the caller holds the GIL, or an attached thread state on
 * free-threaded CPython) and no torch header. Cold path, called at resolution, but for
 * the two tests a read makes (torch_borrow_is_tensor, torch_borrow_dispatch_is_default)
 * and a refusal's words.
 */
#ifndef TORCH_BORROW_TABLES_H
#define TORCH_BORROW_TABLES_H

#include <Python.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <torch_borrow/abi.h>
#include <torch_borrow/libraries.h>
#include <torch_borrow/reader.h>

/* The device types whose codes the stable ABI exports or may export
   (aoti_torch_device_type_<name>; torch 2.15 has the first six), each looked up and
   skipped where torch lacks it: the known ones where torch binds no c10::DeviceType
   enum, and the names consumer.h's torch_borrow_device_code answers. */
#define TORCH_BORROW_NSTABLE_DEVICES 8
static const char* const torch_borrow_stable_devices[TORCH_BORROW_NSTABLE_DEVICES] = {
    "cpu", "cuda", "meta", "xpu", "mps", "privateuse1", "hip", "mtia"};

/* Whether obj's real type (Py_TYPE: an assigned __class__ does not count) is
   torch.Tensor (tensor_tp) or a subclass of it; parameter_tp (torch.nn.Parameter, or
   NULL) only answers the commonest subclass without walking the MRO. */
static inline __attribute__((always_inline)) int torch_borrow_is_tensor(
    PyObject* obj, PyTypeObject* tensor_tp, PyTypeObject* parameter_tp) {
  PyTypeObject* tp = Py_TYPE(obj);
  if (tp == tensor_tp || tp == parameter_tp) return tp != NULL;
  return tensor_tp != NULL && PyType_IsSubtype(tp, tensor_tp);
}

/* Dispatch keys no probe may carry (torch._C.DispatchKey names; one a torch lacks is
   left out): each marks a tensor whose metadata a mode or a functional transform
   answers, so a probe with one means the set-up met a state it could not turn off, and
   nothing it learnt may be kept. */
#define TORCH_BORROW_NTRANSFORM_KEYS 6
static const char* const torch_borrow_transform_keys[TORCH_BORROW_NTRANSFORM_KEYS] = {
    "Python", "PythonTLSSnapshot", "Functionalize", "FuncTorchBatched",
    "BatchedNestedTensor", "FuncTorchGradWrapper"};

/* The set-up's guards: a resolution learns from probe tensors what it keeps for the
   process, and a first use may happen under a TorchFunctionMode, a TorchDispatchMode
   (FakeTensorMode), a functorch transform (vmap, grad, torch.func.functionalize) or
   torch.compile's functionalization. Entered for the whole resolution (consumer.h's;
   the bridge's through bridge/_resolve.py's plain_torch), each a C++ thread-local switch
   of torch's: torch._C.DisableTorchFunction (modes and subclasses' __torch_function__),
   torch._C._DisableTorchDispatch (modes and subclasses' __torch_dispatch__),
   torch._C._DisableFuncTorch, and
   torch._C._ExcludeDispatchKeyGuard(DispatchKeySet(DispatchKey.Functionalize)). No user
   mode code runs, and the probes are plain tensors. A guard this torch lacks is skipped
   (guards[i] NULL): a probe it would have caught still carries one of
   torch_borrow_transform_keys. Leaves no Python exception set. */
#define TORCH_BORROW_NGUARDS 4
static inline void torch_borrow_guards_enter(PyObject* torch,
                                             PyObject* guards[TORCH_BORROW_NGUARDS]) {
  static const char* const names[TORCH_BORROW_NGUARDS] = {
      "DisableTorchFunction", "_DisableTorchDispatch", "_DisableFuncTorch",
      "_ExcludeDispatchKeyGuard"};
  PyObject* c = PyObject_GetAttrString(torch, "_C");
  int i;
  PyErr_Clear();
  for (i = 0; i < TORCH_BORROW_NGUARDS; ++i) {
    PyObject *cls = c ? PyObject_GetAttrString(c, names[i]) : NULL, *g = NULL, *r;
    if (cls && i == 3) {
      PyObject* dk = PyObject_GetAttrString(c, "DispatchKey");
      PyObject* dks = PyObject_GetAttrString(c, "DispatchKeySet");
      PyObject* key = dk ? PyObject_GetAttrString(dk, "Functionalize") : NULL;
      PyObject* set = key && dks ? PyObject_CallOneArg(dks, key) : NULL;
      g = set ? PyObject_CallOneArg(cls, set) : NULL;
      Py_XDECREF(set);
      Py_XDECREF(key);
      Py_XDECREF(dks);
      Py_XDECREF(dk);
    } else if (cls) {
      g = PyObject_CallNoArgs(cls);
    }
    r = g ? PyObject_CallMethod(g, "__enter__", NULL) : NULL;
    if (!r) Py_CLEAR(g);
    Py_XDECREF(r);
    Py_XDECREF(cls);
    PyErr_Clear();
    guards[i] = g; /* NULL: not entered */
  }
  Py_XDECREF(c);
}

/* Exits what torch_borrow_guards_enter entered, in the reverse order, and releases it
   (guards[i] NULL after). Leaves no Python exception set. */
static inline void torch_borrow_guards_exit(PyObject* guards[TORCH_BORROW_NGUARDS]) {
  int i;
  for (i = TORCH_BORROW_NGUARDS - 1; i >= 0; --i) { /* the reverse order of entry */
    PyObject* r = guards[i] ? PyObject_CallMethod(guards[i], "__exit__", "OOO", Py_None,
                                                  Py_None, Py_None)
                            : NULL;
    Py_XDECREF(r);
    Py_CLEAR(guards[i]);
  }
  PyErr_Clear();
}

/* The dtype rule. name: torch's name of a dtype without "torch." ("float32", "qint8");
   itemsize: its torch.dtype.itemsize in bytes. Returns 0 when a pointer + strides reader
   can describe its elements; 1 when it cannot, with the words in why (n > 0 bytes):
   quantized dtypes (qint*, quint*) hold integers that need a scale and zero point;
   sub-byte ones (int1..int7, uint1..uint7) have no whole-byte element; so has any other
   whose itemsize is not 1 to 127 bytes. */
static inline int torch_borrow_dtype_rule(const char* name, long itemsize, char* why,
                                          size_t n) {
  size_t len = strlen(name);
  int sub_byte = (len == 4 && strncmp(name, "int", 3) == 0) ||
                 (len == 5 && strncmp(name, "uint", 4) == 0);
  if (sub_byte) sub_byte = name[len - 1] >= '1' && name[len - 1] <= '7';
  if (strncmp(name, "qint", 4) == 0 || strncmp(name, "quint", 5) == 0) {
    snprintf(why, n, "torch.%s is quantized: its memory holds integers that need a scale "
             "and zero point; call .dequantize() first", name);
    return 1;
  }
  if (sub_byte) {
    snprintf(why, n, "torch.%s is a sub-byte dtype without a fixed itemsize in bytes; no "
             "path can describe it as pointer + strides", name);
    return 1;
  }
  if (itemsize < 1 || itemsize > 127) {
    snprintf(why, n, "torch.%s has an itemsize of %ld bytes; no path can describe it as "
             "pointer + strides", name, itemsize);
    return 1;
  }
  return 0;
}

/* One dtype of torch_borrow_each_dtype: the torch.dtype (borrowed), its name without
   "torch.", its itemsize in bytes (0 when refused), the rule's words when refused (else
   NULL), and a plain probe of it, torch.empty(0, dtype=dtype) (borrowed: the visit reads
   its code through a handle; it is freed after the visit). Returns 0 to go on; any
   other value stops the walk and is returned (with a Python exception set or not, as
   the visit's caller expects). */
typedef int (*torch_borrow_dtype_visit)(void* ctx, PyObject* dtype, const char* name,
                                        int itemsize, const char* refused, PyObject* probe);

/* Visits every torch.dtype in torch's namespace that torch can allocate (an alias,
   torch.float beside torch.float32, visits the same dtype again). The caller enters its guards first
   (no mode or transform may answer for a probe) and checks each probe is plain (a
   guard this torch lacks leaves one bent); a dtype torch cannot allocate, whose tensors
   do not exist, is skipped. Warnings of the allocation ("experimental dtype") are
   ignored. Returns 0; the first nonzero a visit returned; or -1 with a Python exception
   when torch lacks torch.dtype / torch.empty. */
static inline int torch_borrow_each_dtype(PyObject* torch, torch_borrow_dtype_visit visit,
                                          void* ctx) {
  PyObject* vars = PyObject_GetAttrString(torch, "__dict__");
  PyObject* dtype_type = vars ? PyObject_GetAttrString(torch, "dtype") : NULL;
  PyObject* empty = dtype_type ? PyObject_GetAttrString(torch, "empty") : NULL;
  PyObject* warnings = empty ? PyImport_ImportModule("warnings") : NULL;
  PyObject* cm = warnings ? PyObject_CallMethod(warnings, "catch_warnings", NULL) : NULL;
  PyObject* entered = cm ? PyObject_CallMethod(cm, "__enter__", NULL) : NULL;
  PyObject* ignored = entered ? PyObject_CallMethod(warnings, "simplefilter", "s", "ignore")
                              : NULL;
  PyObject* zero = ignored ? Py_BuildValue("(i)", 0) : NULL;
  PyObject* items = zero && PyDict_Check(vars) && PyType_Check(dtype_type)
                        ? PyDict_Items(vars) /* a copy: a visit may run Python */
                        : NULL;
  Py_ssize_t i, count = items ? PyList_GET_SIZE(items) : 0;
  int rc = items ? 0 : -1;
  if (rc && !PyErr_Occurred())
    PyErr_SetString(PyExc_RuntimeError, "torch has no torch.dtype type or torch.__dict__");
  for (i = 0; rc == 0 && i < count; ++i) {
    PyObject* v = PyTuple_GET_ITEM(PyList_GET_ITEM(items, i), 1);
    PyObject *s, *size, *kw, *t;
    const char* name;
    char why[256];
    long itemsize;
    int refused;
    if (!PyObject_TypeCheck(v, (PyTypeObject*)dtype_type)) continue;
    s = PyObject_Str(v);
    name = s ? PyUnicode_AsUTF8(s) : NULL;
    size = name ? PyObject_GetAttrString(v, "itemsize") : NULL;
    itemsize = size ? PyLong_AsLong(size) : -1;
    Py_XDECREF(size);
    kw = name && strncmp(name, "torch.", 6) == 0 ? Py_BuildValue("{sO}", "dtype", v) : NULL;
    t = kw ? PyObject_Call(empty, zero, kw) : NULL; /* torch.empty(0, dtype=v) */
    Py_XDECREF(kw);
    if (t) {
      refused = torch_borrow_dtype_rule(name + 6, itemsize, why, sizeof why);
      rc = visit(ctx, v, name + 6, refused ? 0 : (int)itemsize, refused ? why : NULL, t);
      Py_DECREF(t);
    } else {
      PyErr_Clear(); /* a dtype torch itself cannot allocate has no tensors to view */
    }
    Py_XDECREF(s);
  }
  Py_XDECREF(items);
  Py_XDECREF(zero);
  Py_XDECREF(ignored);
  if (entered) {
    PyObject *type, *value, *tb, *r;
    PyErr_Fetch(&type, &value, &tb); /* a visit's exception outlives the exit */
    r = PyObject_CallMethod(cm, "__exit__", "OOO", Py_None, Py_None, Py_None);
    Py_XDECREF(r);
    if (!r) PyErr_Clear();
    PyErr_Restore(type, value, tb);
  }
  Py_XDECREF(entered);
  Py_XDECREF(cm);
  Py_XDECREF(warnings);
  Py_XDECREF(empty);
  Py_XDECREF(dtype_type);
  Py_XDECREF(vars);
  return rc;
}

/* One member of torch's c10::DeviceType: its code and its member name lower-cased
   ("cpu", "privateuse1", "mkldnn"). Returns 0 to go on, else stops the walk. */
typedef int (*torch_borrow_device_visit)(void* ctx, int code, const char* lower);

/* Visits each member of c10::DeviceType as torch binds it
   (torch._C._autograd.DeviceType: the device types torch can name). Returns the members
   visited; 0 when torch binds no such enum (no Python error set: then the stable ABI's
   aoti_torch_device_type_<torch_borrow_stable_devices> are the known ones); -1 when a
   visit stopped the walk. */
static inline int torch_borrow_each_device(PyObject* torch, torch_borrow_device_visit visit,
                                           void* ctx) {
  PyObject* c = PyObject_GetAttrString(torch, "_C");
  PyObject* ag = c ? PyObject_GetAttrString(c, "_autograd") : NULL;
  PyObject* dt = ag ? PyObject_GetAttrString(ag, "DeviceType") : NULL;
  PyObject* members = dt ? PyObject_GetAttrString(dt, "__members__") : NULL;
  PyObject* items = members ? PyMapping_Items(members) : NULL;
  Py_ssize_t i, count = items ? PyList_Size(items) : 0;
  int visited = 0, rc = 0;
  Py_XDECREF(members);
  Py_XDECREF(dt);
  Py_XDECREF(ag);
  Py_XDECREF(c);
  if (!items) PyErr_Clear();
  for (i = 0; rc == 0 && i < count; ++i) {
    PyObject* item = PyList_GET_ITEM(items, i);
    PyObject* key = PyTuple_GET_ITEM(item, 0);
    PyObject* index = PyNumber_Index(PyTuple_GET_ITEM(item, 1));
    long code = index ? PyLong_AsLong(index) : -1;
    const char* member = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
    char lower[64];
    size_t k;
    Py_XDECREF(index);
    if (!member || code < 0 || code > 0x7fff) {
      PyErr_Clear();
      continue;
    }
    for (k = 0; member[k] && k + 1 < sizeof lower; ++k)
      lower[k] = (char)(member[k] >= 'A' && member[k] <= 'Z' ? member[k] - 'A' + 'a'
                                                              : member[k]);
    lower[k] = '\0';
    rc = visit(ctx, (int)code, lower);
    ++visited;
  }
  Py_XDECREF(items);
  return rc ? -1 : visited;
}

/* --- Where a function shim_ext prototypes comes from ------------------------------
   The patches add torch_tensor_borrow_from_pyobject, torch_is_conj and torch_is_neg to
   libtorch; shim_ext prototypes them (and the metadata check
   torch_borrow_custom_metadata) until they land. The rule, for each name: libtorch's
   own export first, so a torch that ships it is read through its own code and no build
   of shim_ext is needed; else shim_ext's, through shim_ext.load(), which refuses a
   build for another torch than the one imported (its THPVariable layout is that
   torch's) and registers _borrow's implementation with _entry. */
enum {
  TORCH_BORROW_FROM_TORCH = 1,     /* one of the libraries the caller passed */
  TORCH_BORROW_FROM_PROTOTYPE = 2  /* shim_ext's _entry or _borrow */
};

/* The pending Python exception's text after prefix, into buf (n > 0 bytes); cleared. */
static inline void torch_borrow_take_error(char* buf, size_t n, const char* prefix) {
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

/* name's address by the rule above: the first of libs[0..nlibs) (dlopen handles: a
   torch_borrow_libraries' handle array, libraries.h's one search of torch's) that
   exports it, unless skip has TORCH_BORROW_FROM_TORCH; else shim_ext's (_entry's, then
   _borrow's) where its library passes the ABI handshake (abi.h's
   torch_borrow_shim_abi, looked up before name), unless skip has
   TORCH_BORROW_FROM_PROTOTYPE, in which case shim_ext is not imported. *at: the index in libs of the library that had it, -1 for _entry, -2 for
   _borrow; why (n > 0 bytes): why the address is NULL (load()'s words, or which module
   lacks name), "" where it is not. Needs the GIL (it may import shim_ext); leaves no
   Python exception set. */
static inline void* torch_borrow_find_prototyped(const char* name, void* const* libs,
                                                 int nlibs, int skip, int* at, char* why,
                                                 size_t n) {
  PyObject *pkg, *mods;
  void* fn = NULL;
  int i;
  why[0] = '\0';
  *at = 0;
  if (!(skip & TORCH_BORROW_FROM_TORCH))
    for (i = 0; i < nlibs; ++i)
      if (libs[i] && (fn = dlsym(libs[i], name)) != NULL) {
        *at = i;
        return fn;
      }
  if (skip & TORCH_BORROW_FROM_PROTOTYPE) {
    snprintf(why, n, "shim_ext left out");
    return NULL;
  }
  pkg = PyImport_ImportModule("shim_ext");
  mods = pkg ? PyObject_CallMethod(pkg, "load", NULL) : NULL;
  if (!pkg)
    torch_borrow_take_error(why, n, "shim_ext does not import");
  else if (!mods)
    torch_borrow_take_error(why, n, "shim_ext.load() refused");
  else if (!PyTuple_Check(mods) || PyTuple_GET_SIZE(mods) != 2)
    snprintf(why, n, "shim_ext.load() returned no (_entry, _borrow) pair");
  for (i = 0; mods && !fn && !why[0] && i < 2; ++i) {
    /* The module's loaded library (RTLD_NOLOAD: never loads one): shim_ext's own, not a
       torch library, so opened here and not by libraries.h's search; closed below. */
    PyObject* file = PyObject_GetAttrString(PyTuple_GET_ITEM(mods, i), "__file__");
    const char* path = file ? PyUnicode_AsUTF8(file) : NULL;
    void* lib = path ? dlopen(path, RTLD_NOLOAD | RTLD_LAZY) : NULL;
    PyErr_Clear();
    if (lib) {
      /* The handshake first (abi.h): nothing else of a library is looked up, let alone
         called, unless it is this project's shim_ext of this ABI. */
      torch_borrow_shim_abi_fn abi =
          (torch_borrow_shim_abi_fn)dlsym(lib, TORCH_BORROW_SHIM_ABI_SYMBOL);
      int32_t got = abi ? abi() : -1;
      if (!abi)
        snprintf(why, n, "the shim_ext imported (%s) is not this project's: it exports no "
                 TORCH_BORROW_SHIM_ABI_SYMBOL "; ignored", path);
      else if (got != TORCH_BORROW_SHIM_ABI)
        snprintf(why, n, "the shim_ext imported (%s) speaks ABI %d, this build ABI %d; "
                 "ignored: rebuild the older of the two", path, (int)got,
                 TORCH_BORROW_SHIM_ABI);
      else
        fn = dlsym(lib, name);
      dlclose(lib); /* the import keeps it loaded, and fn valid */
    }
    Py_XDECREF(file);
    *at = -1 - i;
  }
  if (!fn && !why[0]) snprintf(why, n, "shim_ext exports no %s: rebuild it", name);
  Py_XDECREF(mods);
  Py_XDECREF(pkg);
  return fn;
}

/* --- The rule without shim_ext's check ---------------------------------------------
   Where no C check judges a tensor's metadata (shim_ext's torch_borrow_custom_metadata
   absent, or built for another torch), a front end that holds an owning handle
   (torch_tensor_from_pyobject, torch 2.14+) reads by this rule: the bridge's owned path
   (bridge/_bridge_read.h) and consumer.h's owned route (torch_borrow/read_route.h) alike,
   so their verdicts and words are one.
   1. Before the handle, the type's __torch_dispatch__ must be torch's default
      (torch_borrow_dispatch_is_default: a look-up in the dicts of the type's MRO, as
      torch's dispatcher judges it; no metaclass answers, no Python runs). Any other may
      compute the metadata in Python: refused (torch_borrow_dispatch_words). A plain
      subclass, a Parameter, a subclass with only __torch_function__ are read.
   2. The handle's getters are C++. One that would reach Python without such a
      __torch_dispatch__ (a Python sizes, device or layout policy: torch asserts) fails,
      and the read is refused, never a value; the owning handle keeps the TensorImpl
      alive meanwhile.
   3. A read that stopped is named by the tensor's dispatch keys where a key of the
      table names it (a nested, vmap-batched or functional tensor, whose getter failed
      with torch's internal words or read a placeholder: torch_borrow_keys_name), else
      by the read's own words.
   consumer.h's Python-level check (its routes with no C check of the conj / neg bits
   either) uses the same table: there no key of it may be set at all. */
#define TORCH_BORROW_NKEYS 16
typedef struct torch_borrow_keys {
  PyObject *keys_fn, *raw_repr; /* torch._C._dispatch_keys, "raw_repr": new references */
  PyObject* dispatch_default;   /* torch._C._disabled_torch_dispatch_impl: new reference */
  PyObject* dispatch_name;      /* "__torch_dispatch__", interned: new reference */
  int ready;                    /* 1: torch_borrow_keys_setup found all of it */
  int n;
  /* per key: its bit; the TORCH_BORROW_CUSTOM_* cause whose words (reader.h's) name it,
     or 0; what it is */
  struct { uint64_t mask; int32_t custom; const char* why; } keys[TORCH_BORROW_NKEYS];
  uint64_t forbidden; /* the union of keys[].mask */
  uint64_t transform; /* torch_borrow_transform_keys' bits: a probe has none */
} torch_borrow_keys;

/* Fills k (zeroed by the caller) from torch: the look-up of step 1, and the table of
   each DispatchKey that marks a tensor no pointer + strides description fits, as
   torch._C.DispatchKeySet(key).raw_repr() gives its bit (a backend key's Dense bit
   removed); a key this torch lacks is left out. Returns 0 (k->ready) when the look-up
   and the Python, vmap, conj and neg masks are there, else -1: without them the rule
   cannot judge. Leaves no Python exception set. */
static inline int torch_borrow_keys_setup(PyObject* torch, torch_borrow_keys* k) {
  static const struct { const char* key; int32_t custom; const char* why; } keys[] = {
      {"Python", TORCH_BORROW_CUSTOM_PYTHON_KEY,
       "torch's Python dispatch key (a __torch_dispatch__ subclass, FakeTensor, a jagged "
       "nested tensor): its metadata is computed in Python"},
      {"PythonTLSSnapshot", TORCH_BORROW_CUSTOM_PYTHON_KEY,
       "torch's Python dispatch key: its metadata is computed in Python"},
      {"FuncTorchBatched", 0, "a vmap-batched tensor (torch.func.vmap's BatchedTensor): its "
                              "sizes are one example's and its memory is the whole batch; "
                              "read the tensor outside vmap"},
      {"BatchedNestedTensor", 0, "a vmap-batched nested tensor (torch.func.vmap)"},
      {"FuncTorchGradWrapper", 0, "a functorch wrapper (torch.func.grad / jvp / vjp's "
                                  "TensorWrapper): it has no storage of its own; read the "
                                  "tensor outside the transform"},
      {"Functionalize", 0, "a functional tensor (torch.func.functionalize, torch.compile): "
                           "its storage is a placeholder"},
      {"Conjugate", 0, TORCH_BORROW_WORDS_CONJ},
      {"Negative", 0, TORCH_BORROW_WORDS_NEG},
      {"Sparse", 0, "a sparse tensor (call .to_dense() first)"},
      {"SparseCsr", 0, "a sparse compressed tensor (call .to_dense() first)"},
      {"NestedTensor", 0, "a nested tensor, with no single sizes / strides: view its "
                          "components, .unbind(), or a padded copy, .to_padded_tensor(0)"},
      {"ZeroTensor", 0, "an efficient zero tensor (torch._efficientzerotensor: no memory)"},
      {"Meta", 0, TORCH_BORROW_WORDS_META "read"},
  };
  PyObject* c = PyObject_GetAttrString(torch, "_C");
  PyObject* dk = c ? PyObject_GetAttrString(c, "DispatchKey") : NULL;
  PyObject* dks = c ? PyObject_GetAttrString(c, "DispatchKeySet") : NULL;
  PyObject* dense_key = dk ? PyObject_GetAttrString(dk, "Dense") : NULL;
  uint64_t dense = 0;
  size_t i, j;
  PyErr_Clear();
  k->keys_fn = c ? PyObject_GetAttrString(c, "_dispatch_keys") : NULL;
  k->dispatch_default = c ? PyObject_GetAttrString(c, "_disabled_torch_dispatch_impl") : NULL;
  k->raw_repr = PyUnicode_InternFromString("raw_repr");
  k->dispatch_name = PyUnicode_InternFromString("__torch_dispatch__");
  PyErr_Clear();
  if (dks && dense_key) {
    PyObject* set = PyObject_CallOneArg(dks, dense_key);
    PyObject* raw = set ? PyObject_CallMethodNoArgs(set, k->raw_repr) : NULL;
    dense = raw ? (uint64_t)PyLong_AsUnsignedLongLong(raw) : 0;
    Py_XDECREF(raw);
    Py_XDECREF(set);
    PyErr_Clear();
  }
  for (i = 0; dks && dk && k->raw_repr && i < sizeof keys / sizeof keys[0]; ++i) {
    PyObject* key = PyObject_GetAttrString(dk, keys[i].key);
    PyObject* set = key ? PyObject_CallOneArg(dks, key) : NULL;
    PyObject* raw = set ? PyObject_CallMethodNoArgs(set, k->raw_repr) : NULL;
    uint64_t bits = raw ? (uint64_t)PyLong_AsUnsignedLongLong(raw) & ~dense : 0;
    Py_XDECREF(raw);
    Py_XDECREF(set);
    Py_XDECREF(key);
    PyErr_Clear();
    if (!bits || k->n >= TORCH_BORROW_NKEYS) continue;
    k->keys[k->n].mask = bits, k->keys[k->n].custom = keys[i].custom;
    k->keys[k->n].why = keys[i].why;
    k->forbidden |= bits, k->n++;
    for (j = 0; j < TORCH_BORROW_NTRANSFORM_KEYS; ++j)
      if (strcmp(keys[i].key, torch_borrow_transform_keys[j]) == 0) k->transform |= bits;
  }
  Py_XDECREF(dense_key);
  Py_XDECREF(dks);
  Py_XDECREF(dk);
  Py_XDECREF(c);
  k->ready = k->keys_fn && k->raw_repr && k->dispatch_default && k->dispatch_name && dense &&
             k->n >= 8;
  return k->ready ? 0 : -1;
}

/* Releases what torch_borrow_keys_setup took (for a k no reader can still hold). */
static inline void torch_borrow_keys_clear(torch_borrow_keys* k) {
  Py_CLEAR(k->keys_fn);
  Py_CLEAR(k->raw_repr);
  Py_CLEAR(k->dispatch_default);
  Py_CLEAR(k->dispatch_name);
  k->ready = 0;
}

/* Step 1: whether obj's type leaves __torch_dispatch__ to torch's default. 0 where k is
   not ready: without the look-up nothing may be read. A type-cache hit in CPython. */
static inline __attribute__((always_inline)) int torch_borrow_dispatch_is_default(
    const torch_borrow_keys* k, PyObject* obj) {
  return k->ready && _PyType_Lookup(Py_TYPE(obj), k->dispatch_name) == k->dispatch_default;
}

/* The words of step 1's refusal of obj, into buf (n > 0 bytes). Returns buf. */
static inline const char* torch_borrow_dispatch_words(const torch_borrow_keys* k,
                                                      PyObject* obj, char* buf, size_t n) {
  if (!k->ready)
    snprintf(buf, n, "this %s cannot be read without shim_ext's metadata check: torch "
             "lacks torch._C._disabled_torch_dispatch_impl, _dispatch_keys or a dispatch "
             "key the rule needs, so nothing tells whether its getters run Python",
             Py_TYPE(obj)->tp_name);
  else
    snprintf(buf, n, "this %s overrides __torch_dispatch__: its metadata may be computed in "
             "Python, so no pointer + strides description is read", Py_TYPE(obj)->tp_name);
  return buf;
}

/* obj's dispatch key set as bits (torch._C._dispatch_keys(obj).raw_repr(): a pybind
   function reading C++ state, no __torch_function__, no user code), or 0 where it
   cannot be read. Call it with no Python exception pending; it leaves none set. */
static inline uint64_t torch_borrow_key_bits(const torch_borrow_keys* k, PyObject* obj) {
  PyObject *ks, *raw;
  uint64_t bits;
  if (!k->keys_fn || !k->raw_repr) return 0;
  ks = PyObject_CallOneArg(k->keys_fn, obj);
  raw = ks ? PyObject_CallMethodNoArgs(ks, k->raw_repr) : NULL;
  bits = raw ? (uint64_t)PyLong_AsUnsignedLongLong(raw) : 0;
  Py_XDECREF(raw);
  Py_XDECREF(ks);
  PyErr_Clear();
  return bits;
}

/* The index in k's table of the first key among bits, or -1. */
static inline int torch_borrow_keys_first(const torch_borrow_keys* k, uint64_t bits) {
  int i;
  for (i = 0; i < k->n; ++i)
    if (bits & k->keys[i].mask) return i;
  return -1;
}

/* What the first key of the table among bits says a tensor is, or NULL. */
static inline const char* torch_borrow_keys_why(const torch_borrow_keys* k, uint64_t bits) {
  int i = torch_borrow_keys_first(k, bits);
  return i < 0 ? NULL : k->keys[i].why;
}

/* The words refusing a tensor of type type_name by the first key of the table among
   bits, into buf (n > 0 bytes): for the Python key the reader's words of that cause
   (torch_borrow_custom_words: one text, whichever check found the key), else "this
   <type> is refused: <what the key says it is>". Returns 1, or 0 (buf untouched) where
   no key of the table is among bits. */
static inline int torch_borrow_keys_words(const torch_borrow_keys* k, uint64_t bits,
                                          const char* type_name, char* buf, size_t n) {
  int i = torch_borrow_keys_first(k, bits);
  if (i < 0) return 0;
  if (k->keys[i].custom)
    torch_borrow_custom_words(k->keys[i].custom, type_name, buf, n);
  else
    snprintf(buf, n, "this %s is refused: %s", type_name, k->keys[i].why);
  return 1;
}

/* Step 3: after a read of obj stopped, its refusal's words by its dispatch keys, into
   buf (n > 0 bytes). Returns 1, or 0 where no key of the table names it (the read's own
   words stand). Runs torch._C._dispatch_keys (torch_borrow_key_bits): call it with no
   Python exception pending. Refusal path only. */
static inline int torch_borrow_keys_name(const torch_borrow_keys* k, PyObject* obj, char* buf,
                                         size_t n) {
  return torch_borrow_keys_words(k, torch_borrow_key_bits(k, obj), Py_TYPE(obj)->tp_name, buf,
                                 n);
}

/* torch's message what (torch_exception_get_what_without_backtrace's, or a front end's
   stand-in), else words saying there is none; exported: whether this torch exports that
   function. */
static inline const char* torch_borrow_what_words(const char* what, int exported) {
  if (what && *what) return what;
  return exported ? "no message"
                  : "no message (torch_exception_get_what_without_backtrace is not exported "
                    "by this torch)";
}

/* The words of a refusal by a failed call (call: its name, e.g.
   "torch_tensor_from_pyobject"; what: torch_borrow_what_words'), into buf (n > 0 bytes).
   Returns buf. */
static inline const char* torch_borrow_call_failed_words(const char* call, const char* what,
                                                         char* buf, size_t n) {
  snprintf(buf, n, "%s failed: %s", call, what);
  return buf;
}

/* The words of a failed getter's refusal of a tensor of type type_name (tp_name; NULL where
   the front end does not have it: "tensor"; what: torch_borrow_what_words'), into buf
   (n > 0 bytes). Returns buf. */
static inline const char* torch_borrow_getter_failed_words(const char* type_name,
                                                           const char* what, char* buf,
                                                           size_t n) {
  snprintf(buf, n, "cannot read the metadata of this %s: %s", type_name ? type_name : "tensor",
           what);
  return buf;
}

/* The words refusing obj, whose real type is not torch.Tensor's (torch_borrow_is_tensor),
   into buf (n > 0 bytes), with the call that shares its memory where one is known: a NumPy
   array, or a type with __dlpack__ (looked up in the dicts of its MRO: no metaclass
   answers, no Python runs). Call it on an attached thread. Returns buf. */
static inline const char* torch_borrow_not_a_tensor_words(PyObject* obj, char* buf, size_t n) {
  const char* got = obj == Py_None ? "None" : Py_TYPE(obj)->tp_name;
  const char* hint = "";
  PyObject* dlpack;
  if (strcmp(got, "numpy.ndarray") == 0) {
    hint = "; view torch.from_numpy(a), which shares the array's memory";
  } else if ((dlpack = PyUnicode_InternFromString("__dlpack__")) != NULL) {
    if (_PyType_Lookup(Py_TYPE(obj), dlpack) != NULL)
      hint = "; it has __dlpack__: view torch.from_dlpack(x), which shares its memory";
    Py_DECREF(dlpack);
  } else {
    PyErr_Clear(); /* no hint then */
  }
  snprintf(buf, n, "expected a torch.Tensor (or an instance of a subclass), got %s%s", got,
           hint);
  return buf;
}

/* The words refusing obj by shim_ext's metadata check, into buf (n > 0 bytes): bits,
   layout as torch_borrow_custom_metadata reports them (bits < 0: the tensor is undefined;
   layout -1 where it is custom); strided: the strided layout's code; layout_name: the
   front end's name for layout, or NULL; verb: "viewed" or "read". The reader's words for
   the cause named first (torch_borrow_custom_names_layout: a layout known not to be
   strided, else torch_borrow_custom_words), then, where the dispatch keys name it more
   closely (a nested or vmap-batched tensor has custom sizes, as a sparse one has its
   layout), what it is. One text for the bridge and consumer.h. Refusal path only: the key
   set is read through Python (torch_borrow_key_bits; k not set up: no key is named), so
   call it with no Python exception pending. Returns buf. */
static inline const char* torch_borrow_custom_refusal_words(
    const torch_borrow_keys* k, PyObject* obj, int32_t bits, int32_t layout, int32_t strided,
    const char* layout_name, const char* verb, char* buf, size_t n) {
  char why[1024];
  const char* keys;
  if (n == 0) return buf;
  if (bits < 0) {
    snprintf(buf, n, "this %s holds no defined tensor", Py_TYPE(obj)->tp_name);
    return buf;
  }
  keys = torch_borrow_keys_why(k, torch_borrow_key_bits(k, obj));
  if (torch_borrow_custom_names_layout(bits, layout, strided)) {
    torch_borrow_fields x;
    x.layout = layout;
    torch_borrow_read_words(TORCH_BORROW_READ_LAYOUT, &x, layout_name, verb, why, sizeof why);
  } else {
    torch_borrow_custom_words(bits, Py_TYPE(obj)->tp_name, why, sizeof why);
  }
  if (keys)
    snprintf(buf, n, "%s (it is %s)", why, keys);
  else
    snprintf(buf, n, "%s", why);
  return buf;
}

#endif /* TORCH_BORROW_TABLES_H */
