/* Native (C) timing loops for the peers of torch_tensor_borrow_from_pyobject.
 *
 * Compiled by bench/native/peers_native_build.py (cffi, out-of-line API mode) against the
 * installed torch's ATen/dlpack.h (DLPack 1.3: DLPackExchangeAPI). Plain C: dlpack.h
 * is a C header and nothing here needs a torch C++ header.
 *
 * Every loop: the first call runs untimed (so an error surfaces before timing and
 * caches are warm), then n calls between two clock_gettime(CLOCK_MONOTONIC) reads,
 * like bridge._bridge._native_loop. Results go to a volatile sink so the compiler
 * cannot drop the reads. Each loop returns ns per call, or a negative value on error
 * (peers_last_error() says why).
 *
 * cffi releases the GIL around calls made through `lib.`; the exchange API and torch's
 * shim functions need it, so each loop takes it back (PyGILState_Ensure) outside the
 * timed region.
 */
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <ATen/dlpack.h>

/* The stable ABI's types (shim_ext/include/torch_borrow/abi.h) and the batched read's
   struct (batched_read.h), each declared once; short names for this file. */
#include "batched_read.h"
typedef torch_borrow_from_pyobject_fn from_pyobject_fn;
typedef torch_borrow_delete_fn delete_fn;
typedef torch_borrow_get_ptr_fn get_ptr_fn;
typedef torch_borrow_get_i64_fn get_i64_fn;
typedef torch_borrow_get_i64p_fn get_i64p_fn;
typedef torch_borrow_get_i32_fn get_i32_fn;

static volatile uintptr_t peers_sink;
static char peers_error[512];

#if defined(__clang__)
static const char* peers_compiler_name = "clang " __clang_version__;
#elif defined(__GNUC__)
static const char* peers_compiler_name = "gcc " __VERSION__;
#else
static const char* peers_compiler_name = "unknown";
#endif

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void set_error(const char* what) {
  snprintf(peers_error, sizeof peers_error, "%s", what);
}

/* Copy the pending Python exception (if any) into peers_error and clear it. */
static void take_python_error(const char* where) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  const char* msg = "no Python exception set";
  PyObject* s = value ? PyObject_Str(value) : NULL;
  if (s) msg = PyUnicode_AsUTF8(s);
  snprintf(peers_error, sizeof peers_error, "%s: %s", where, msg ? msg : "?");
  Py_XDECREF(s);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  PyErr_Clear();
}

/* The real-type check every native consumer makes before trusting a layout. */
static inline int is_instance(PyObject* obj, PyTypeObject* tp) {
  return Py_TYPE(obj) == tp || PyType_IsSubtype(Py_TYPE(obj), tp);
}

const char* peers_last_error(void) { return peers_error; }
const char* peers_compiler(void) { return peers_compiler_name; }

int peers_dlpack_version(uintptr_t api, int* major, int* minor) {
  const DLPackExchangeAPI* a = (const DLPackExchangeAPI*)api;
  if (!a) return -1;
  *major = (int)a->header.version.major;
  *minor = (int)a->header.version.minor;
  return a->dltensor_from_py_object_no_sync ? 0 : 1;
}

static inline void consume(const DLTensor* t) {
  /* What a kernel launcher reads: the seven facts the aoti getters give. */
  peers_sink = (uintptr_t)t->data + (uintptr_t)t->byte_offset + (uintptr_t)t->ndim +
               (uintptr_t)t->shape + (uintptr_t)t->strides + (uintptr_t)t->dtype.code +
               (uintptr_t)t->device.device_type + (uintptr_t)t->device.device_id;
}

/* DLPackExchangeAPI.dltensor_from_py_object_no_sync: fills a caller-owned DLTensor. */
double peers_dltensor_loop(uintptr_t api, uintptr_t obj_addr, uintptr_t type_addr, int64_t n) {
  const DLPackExchangeAPI* a = (const DLPackExchangeAPI*)api;
  PyObject* obj = (PyObject*)obj_addr;
  PyTypeObject* tp = (PyTypeObject*)type_addr;
  DLTensor t;
  double result = -1.0;
  PyGILState_STATE g = PyGILState_Ensure();
  if (!a->dltensor_from_py_object_no_sync) {
    set_error("this torch's DLPackExchangeAPI has no dltensor_from_py_object_no_sync");
    goto done;
  }
  if (!is_instance(obj, tp) || a->dltensor_from_py_object_no_sync(obj, &t) != 0) {
    take_python_error("dltensor_from_py_object_no_sync");
    goto done;
  }
  uint64_t t0 = now_ns();
  for (int64_t i = 0; i < n; i++) {
    if (!is_instance(obj, tp) || a->dltensor_from_py_object_no_sync(obj, &t) != 0) {
      take_python_error("dltensor_from_py_object_no_sync");
      goto done;
    }
    consume(&t);
  }
  result = (double)(now_ns() - t0) / (double)n;
done:
  PyGILState_Release(g);
  return result;
}

/* DLPackExchangeAPI.managed_tensor_from_py_object_no_sync + its deleter. */
double peers_managed_loop(uintptr_t api, uintptr_t obj_addr, uintptr_t type_addr, int64_t n) {
  const DLPackExchangeAPI* a = (const DLPackExchangeAPI*)api;
  PyObject* obj = (PyObject*)obj_addr;
  PyTypeObject* tp = (PyTypeObject*)type_addr;
  DLManagedTensorVersioned* m = NULL;
  double result = -1.0;
  PyGILState_STATE g = PyGILState_Ensure();
  if (!is_instance(obj, tp) || a->managed_tensor_from_py_object_no_sync(obj, &m) != 0) {
    take_python_error("managed_tensor_from_py_object_no_sync");
    goto done;
  }
  consume(&m->dl_tensor);
  if (m->deleter) m->deleter(m);
  uint64_t t0 = now_ns();
  for (int64_t i = 0; i < n; i++) {
    if (!is_instance(obj, tp) || a->managed_tensor_from_py_object_no_sync(obj, &m) != 0) {
      take_python_error("managed_tensor_from_py_object_no_sync");
      goto done;
    }
    consume(&m->dl_tensor);
    if (m->deleter) m->deleter(m);  /* new reference: the consumer must release it */
  }
  result = (double)(now_ns() - t0) / (double)n;
done:
  PyGILState_Release(g);
  return result;
}

/* The floor of every native path: the type check alone. */
double peers_typecheck_loop(uintptr_t obj_addr, uintptr_t type_addr, int64_t n) {
  PyObject* obj = (PyObject*)obj_addr;
  PyTypeObject* tp = (PyTypeObject*)type_addr;
  PyGILState_STATE g = PyGILState_Ensure();
  uint64_t t0 = now_ns();
  for (int64_t i = 0; i < n; i++) peers_sink = (uintptr_t)is_instance(obj, tp);
  double result = (double)(now_ns() - t0) / (double)n;
  PyGILState_Release(g);
  return result;
}

/* The handle alone, no metadata read: fn != 0 calls it (and delete_addr != 0 deletes
 * the new reference it returns); fn == 0 takes (char*)obj + offset, the fallback. */
double peers_handle_loop(uintptr_t fn_addr, uintptr_t delete_addr, uintptr_t obj_addr,
                         int64_t offset, int64_t n) {
  from_pyobject_fn fn = (from_pyobject_fn)fn_addr;
  delete_fn del = (delete_fn)delete_addr;
  PyObject* obj = (PyObject*)obj_addr;
  AtenTensorHandle h = NULL;
  double result = -1.0;
  PyGILState_STATE g = PyGILState_Ensure();
  if (fn && fn(obj, &h) != 0) {
    set_error("the handle function failed on the first call");
    goto done;
  }
  if (fn && del) del(h);
  uint64_t t0 = now_ns();
  for (int64_t i = 0; i < n; i++) {
    if (fn) {
      if (fn(obj, &h) != 0) {
        set_error("the handle function failed");
        goto done;
      }
    } else {
      h = (AtenTensorHandle)((char*)obj + offset);
    }
    peers_sink = (uintptr_t)h;
    if (fn && del) del(h);
  }
  result = (double)(now_ns() - t0) / (double)n;
done:
  PyGILState_Release(g);
  return result;
}

/* The seven aoti_torch_get_* reads through one borrowed handle (getters[0..6]:
 * data_ptr, dim, sizes, strides, dtype, device_type, device_index). */
double peers_getters_loop(const uintptr_t* getters, uintptr_t handle, int64_t n) {
  get_ptr_fn data_ptr = (get_ptr_fn)getters[0];
  get_i64_fn dim = (get_i64_fn)getters[1];
  get_i64p_fn sizes = (get_i64p_fn)getters[2];
  get_i64p_fn strides = (get_i64p_fn)getters[3];
  get_i32_fn dtype = (get_i32_fn)getters[4];
  get_i32_fn device_type = (get_i32_fn)getters[5];
  get_i32_fn device_index = (get_i32_fn)getters[6];
  AtenTensorHandle h = (AtenTensorHandle)handle;
  void* p;
  int64_t nd;
  int64_t *sz, *st;
  int32_t dt, dv, di;
  double result = -1.0;
  PyGILState_STATE g = PyGILState_Ensure();
  uint64_t t0 = now_ns();
  for (int64_t i = 0; i < n; i++) {
    if (data_ptr(h, &p) | dim(h, &nd) | sizes(h, &sz) | strides(h, &st) | dtype(h, &dt) |
        device_type(h, &dv) | device_index(h, &di)) {
      set_error("a getter failed");
      goto done;
    }
    peers_sink = (uintptr_t)p + (uintptr_t)nd + (uintptr_t)sz + (uintptr_t)st + (uintptr_t)dt +
                 (uintptr_t)dv + (uintptr_t)di;
  }
  result = (double)(now_ns() - t0) / (double)n;
done:
  PyGILState_Release(g);
  return result;
}

/* A consumer's whole route: the handle (as peers_handle_loop: fn != 0 calls it,
 * delete_addr != 0 deletes the new reference; fn == 0 is (char*)obj + offset), then
 * the seven getters of peers_getters_loop through it, then the delete. */
static inline int read_seven(const uintptr_t* g, AtenTensorHandle h) {
  void* p;
  int64_t nd;
  int64_t *sz, *st;
  int32_t dt, dv, di;
  if (((get_ptr_fn)g[0])(h, &p) | ((get_i64_fn)g[1])(h, &nd) | ((get_i64p_fn)g[2])(h, &sz) |
      ((get_i64p_fn)g[3])(h, &st) | ((get_i32_fn)g[4])(h, &dt) | ((get_i32_fn)g[5])(h, &dv) |
      ((get_i32_fn)g[6])(h, &di))
    return 1;
  peers_sink = (uintptr_t)p + (uintptr_t)nd + (uintptr_t)sz + (uintptr_t)st + (uintptr_t)dt +
               (uintptr_t)dv + (uintptr_t)di;
  return 0;
}

static inline int route_once(from_pyobject_fn fn, delete_fn del, PyObject* obj, int64_t offset,
                             const uintptr_t* getters) {
  AtenTensorHandle h = NULL;
  if (fn) {
    if (fn(obj, &h) != 0) return 1;
  } else {
    h = (AtenTensorHandle)((char*)obj + offset);
  }
  int rc = read_seven(getters, h);
  if (fn && del) del(h);
  return rc;
}

double peers_route_loop(uintptr_t fn_addr, uintptr_t delete_addr, uintptr_t obj_addr,
                        int64_t offset, const uintptr_t* getters, int64_t n) {
  from_pyobject_fn fn = (from_pyobject_fn)fn_addr;
  delete_fn del = (delete_fn)delete_addr;
  PyObject* obj = (PyObject*)obj_addr;
  double result = -1.0;
  PyGILState_STATE g = PyGILState_Ensure();
  if (route_once(fn, del, obj, offset, getters)) {
    set_error("the handle or a getter failed on the first call");
    goto done;
  }
  uint64_t t0 = now_ns();
  for (int64_t i = 0; i < n; i++) {
    if (route_once(fn, del, obj, offset, getters)) {
      set_error("the handle or a getter failed");
      goto done;
    }
  }
  result = (double)(now_ns() - t0) / (double)n;
done:
  PyGILState_Release(g);
  return result;
}

/* The conjugate bit of a borrowed handle, two ways (patch 0002's justification).
 * getter: torch_is_conj(h, &b), the proposed C getter.
 * dispatcher: aten::is_conj through torch_call_dispatcher, the stable route that exists
 * today. Its stack owns what it holds (docs: "give owning references to the calling
 * stack"), so a borrowed handle is first copied into a new owning one
 * (aoti_torch_new_tensor_handle), which the dispatcher consumes; the result comes back
 * as a StableIValue holding a bool. `version` is the extension build version
 * (TORCH_ABI_VERSION of the torch the caller targets). */
typedef AOTITorchError (*is_flag_fn)(AtenTensorHandle, _Bool*);
typedef AOTITorchError (*new_handle_fn)(AtenTensorHandle, AtenTensorHandle*);
typedef AOTITorchError (*dispatch_fn)(const char*, const char*, uint64_t*, uint64_t);

double peers_conj_getter_loop(uintptr_t is_conj, uintptr_t handle, int64_t n) {
  is_flag_fn fn = (is_flag_fn)is_conj;
  AtenTensorHandle h = (AtenTensorHandle)handle;
  _Bool b = 0;
  double result = -1.0;
  PyGILState_STATE g = PyGILState_Ensure();
  if (fn(h, &b)) {
    set_error("torch_is_conj failed");
    goto done;
  }
  uint64_t t0 = now_ns();
  for (int64_t i = 0; i < n; i++) {
    if (fn(h, &b)) {
      set_error("torch_is_conj failed");
      goto done;
    }
    peers_sink = (uintptr_t)b;
  }
  result = (double)(now_ns() - t0) / (double)n;
done:
  PyGILState_Release(g);
  return result;
}

static int conj_by_dispatcher(new_handle_fn new_handle, dispatch_fn dispatch,
                              AtenTensorHandle h, uint64_t version, _Bool* out) {
  AtenTensorHandle owned = NULL;
  uint64_t stack[1];
  if (new_handle(h, &owned)) return 1;
  stack[0] = (uint64_t)(uintptr_t)owned; /* the stack now owns it */
  if (dispatch("aten::is_conj", "", stack, version)) return 1;
  *out = *(_Bool*)&stack[0];
  return 0;
}

double peers_conj_dispatcher_loop(uintptr_t new_handle, uintptr_t dispatch, uintptr_t handle,
                                  uint64_t version, int64_t n) {
  new_handle_fn nh = (new_handle_fn)new_handle;
  dispatch_fn dp = (dispatch_fn)dispatch;
  AtenTensorHandle h = (AtenTensorHandle)handle;
  _Bool b = 0;
  double result = -1.0;
  PyGILState_STATE g = PyGILState_Ensure();
  if (conj_by_dispatcher(nh, dp, h, version, &b)) {
    set_error("torch_call_dispatcher(aten::is_conj) failed");
    goto done;
  }
  uint64_t t0 = now_ns();
  for (int64_t i = 0; i < n; i++) {
    if (conj_by_dispatcher(nh, dp, h, version, &b)) {
      set_error("torch_call_dispatcher(aten::is_conj) failed");
      goto done;
    }
    peers_sink = (uintptr_t)b;
  }
  result = (double)(now_ns() - t0) / (double)n;
done:
  PyGILState_Release(g);
  return result;
}

/* The batched metadata read (batched_read.h: measured, not proposed), three ways:
 * mode 0: (char*)obj + offset (the pointer trick) + torch_tensor_get_metadata;
 * mode 1: torch_tensor_borrow_from_pyobject + torch_tensor_get_metadata;
 * mode 2: torch_tensor_borrow_metadata_from_pyobject, one call. */
typedef TorchTensorMetadata peers_metadata;
typedef torch_tensor_get_metadata_fn get_metadata_fn;
typedef torch_tensor_borrow_metadata_fn metadata_from_pyobject_fn;

static int metadata_once(int mode, uintptr_t get, uintptr_t borrow, uintptr_t from_obj,
                         void* obj, int64_t offset, peers_metadata* m) {
  AtenTensorHandle h = NULL;
  if (mode == 2) return ((metadata_from_pyobject_fn)from_obj)(obj, m);
  if (mode == 0) {
    h = (AtenTensorHandle)((char*)obj + offset);
  } else if (((from_pyobject_fn)borrow)(obj, &h)) {
    return 1;
  }
  return ((get_metadata_fn)get)(h, m);
}

double peers_metadata_loop(int mode, uintptr_t get, uintptr_t borrow, uintptr_t from_obj,
                           uintptr_t obj, int64_t offset, int64_t n) {
  peers_metadata m;
  double result = -1.0;
  PyGILState_STATE g = PyGILState_Ensure();
  if (metadata_once(mode, get, borrow, from_obj, (void*)obj, offset, &m)) {
    set_error("the batched metadata read failed");
    goto done;
  }
  uint64_t t0 = now_ns();
  for (int64_t i = 0; i < n; i++) {
    if (metadata_once(mode, get, borrow, from_obj, (void*)obj, offset, &m)) {
      set_error("the batched metadata read failed");
      goto done;
    }
    peers_sink = (uintptr_t)m.data_ptr + (uintptr_t)m.sizes + (uintptr_t)m.strides +
                 (uintptr_t)m.dim + (uintptr_t)m.dtype + (uintptr_t)m.device_index +
                 (uintptr_t)m.storage_nbytes;
  }
  result = (double)(now_ns() - t0) / (double)n;
done:
  PyGILState_Release(g);
  return result;
}

/* PyGILState_Check alone, n times: the price of the check every interop shim makes
 * in release builds ("attached thread state"), to read beside the borrow's cost. */
double peers_gil_check_loop(int64_t n) {
  double result = -1.0;
  int ok = 1;
  PyGILState_STATE g = PyGILState_Ensure();
  uint64_t t0 = now_ns();
  for (int64_t i = 0; i < n; i++) ok &= PyGILState_Check();
  result = (double)(now_ns() - t0) / (double)n;
  peers_sink = (uintptr_t)ok;
  PyGILState_Release(g);
  return result;
}

/* An empty METH_O C function: the floor of a Python-level call into C with one
 * argument, the calling convention of the bridge's view functions. */
static PyObject* peers_empty(PyObject* self, PyObject* arg) {
  (void)self;
  (void)arg;
  Py_RETURN_NONE;
}
static PyMethodDef peers_empty_def = {"empty", peers_empty, METH_O,
                                      "empty(obj) -> None: does nothing (the call floor)"};
static PyObject* peers_empty_obj = NULL;

uintptr_t peers_empty_function(void) {
  PyGILState_STATE g = PyGILState_Ensure();
  if (!peers_empty_obj) peers_empty_obj = PyCFunction_New(&peers_empty_def, NULL);  /* kept forever */
  PyGILState_Release(g);
  return (uintptr_t)peers_empty_obj;
}

/* Valgrind client requests for bench/callgrind.py, so one process under callgrind can
 * count each _native_loop call apart: op 0 starts instrumentation (the run starts with
 * --instr-atstart=no, so importing torch is not instrumented), op 1 dumps the counts
 * gathered since the last dump into a file of their own, described by `label`, op 2
 * zeroes them, op 3 toggles collection (around a Python-level statement). Returns
 * 1 when done, 0 when not running under valgrind, -1 when built
 * without <valgrind/callgrind.h> (Debian's valgrind package has it), -2 for a bad op.
 * Outside valgrind each request is a few no-op instructions. */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define PEERS_HAVE_CALLGRIND 1
#endif
#endif

int peers_callgrind(int op, const char* label) {
#ifdef PEERS_HAVE_CALLGRIND
  if (!RUNNING_ON_VALGRIND) return 0;
  switch (op) {
    case 0: CALLGRIND_START_INSTRUMENTATION; return 1;
    case 1: CALLGRIND_DUMP_STATS_AT(label); return 1;
    case 2: CALLGRIND_ZERO_STATS; return 1;
    case 3: CALLGRIND_TOGGLE_COLLECT; return 1;
    default: return -2;
  }
#else
  (void)op;
  (void)label;
  return -1;
#endif
}
