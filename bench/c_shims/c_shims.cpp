// A consumer that needs a tensor handle for more than its metadata: ATen ops called
// from C through torch's generated C shims, on tensors received from Python.
//
// torch's generated C shims (torch/csrc/inductor/aoti_torch/generated/c_shim_cpu.h,
// c_shim_cuda.h, c_shim_aten.h; exported by libtorch_cpu / libtorch_cuda) take their
// input AtenTensorHandles without stealing them: the caller keeps ownership, so a
// borrowed handle is enough. This CPython extension, _bench_c_shims, exposes
//
//   install(addresses, cpu_code, cuda_code)   every function by address (below)
//   call(op, route, *tensors)                 one op; its result tensor, or None for _out
//   handles_loop(route, n, *tensors)          ns per acquire + release of all handles
//   op_loop(op, n, *tensors)                  ns per op call, handles borrowed once
//   call_loop(op, route, n, *tensors)         ns per whole call in C (handles, op, release)
//
// ops (OP_* below): add (aoti_torch_<dev>_add_Tensor, alpha 1: a new tensor), amax
// (aoti_torch_aten_amax over every dimension: a new 0-d tensor), median
// (aoti_torch_<dev>_median: a new 0-d tensor), mm_out (aoti_torch_<dev>_mm_out: writes
// into `out`), addmm_out (aoti_torch_<dev>_addmm_out, beta = alpha = 1: writes into
// `out`). The <dev> shim is picked per call from the first tensor's device type
// (aoti_torch_get_device_type), as a consumer that serves CPU and CUDA tensors must.
//
// routes (ROUTE_* below) to the input handles:
// - ROUTE_OWNED: torch_tensor_from_pyobject (torch 2.14+), or 2.14's implementation
//   built for an older torch (bench/native/owned_prototype.cpp): a NEW reference per tensor,
//   deleted with aoti_torch_delete_tensor_object on every exit path. (The interpreter
//   fix is the same code with torch's PyInterpreter patched for the duration: the
//   Python side installs it, proposal/fixes/internal_fixes.py.)
// - ROUTE_BORROW: torch_tensor_borrow_from_pyobject: a BORROWED handle, valid while
//   the Python object lives (the caller's argument tuple keeps it alive for the whole
//   call) and its tensor is not replaced; never deleted. The shims below run no
//   Python code of ours between the borrow and the op, but an op whose kernel
//   re-enters the dispatcher (median's clone, amax) can reach a TorchDispatchMode;
//   the handles are used only by the shim, which holds its own references from then.
//
// A new result handle (add, amax, median) is turned into a Python tensor with
// torch_tensor_to_pyobject (2.14+; it does not steal the handle) or, on an older
// torch, 2.14's implementation built for it (bench/c_shims/consumer_build.py), then
// deleted. Every failure raises a Python exception carrying torch's own message
// (torch_exception_get_what_without_backtrace, 2.13+; the prototype's own message for
// the owned prototype) and releases every handle taken so far: a refused tensor is an
// exception, never a crash.
//
// No torch library is linked: every function is called through an address from
// bridge._resolve (bench/c_shims/consumer.py), so one build serves CPU and CUDA wheels.
// The function types are checked against torch's own headers where the build says
// they declare them (C_SHIMS_CHECK_SIGNATURES, torch 2.15+).

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <time.h>

#include <string>
#include <type_traits>

#include <torch/csrc/inductor/aoti_torch/c/shim.h>

namespace {

using FromPyObject = AOTITorchError (*)(void*, AtenTensorHandle*);
using ToPyObject = AOTITorchError (*)(AtenTensorHandle, void*, void**);
using Delete = AOTITorchError (*)(AtenTensorHandle);
using GetDeviceType = AOTITorchError (*)(AtenTensorHandle, int32_t*);
using What = const char* (*)();
using AddTensor = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, double,
                                     AtenTensorHandle*);
using Amax = AOTITorchError (*)(AtenTensorHandle, const int64_t*, int64_t, int32_t,
                                AtenTensorHandle*);
using Median = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle*);
using MmOut = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle);
using AddmmOut = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                    AtenTensorHandle, double, double);

}  // namespace

#ifdef C_SHIMS_CHECK_SIGNATURES
#include <torch/csrc/inductor/aoti_torch/generated/c_shim_aten.h>
#include <torch/csrc/inductor/aoti_torch/generated/c_shim_cpu.h>
#include <torch/csrc/inductor/aoti_torch/generated/c_shim_cuda.h>
#include <torch/csrc/stable/c/shim.h>
static_assert(std::is_same_v<decltype(&aoti_torch_cpu_add_Tensor), AddTensor>);
static_assert(std::is_same_v<decltype(&aoti_torch_cuda_add_Tensor), AddTensor>);
static_assert(std::is_same_v<decltype(&aoti_torch_aten_amax), Amax>);
static_assert(std::is_same_v<decltype(&aoti_torch_cpu_median), Median>);
static_assert(std::is_same_v<decltype(&aoti_torch_cuda_median), Median>);
static_assert(std::is_same_v<decltype(&aoti_torch_cpu_mm_out), MmOut>);
static_assert(std::is_same_v<decltype(&aoti_torch_cuda_mm_out), MmOut>);
static_assert(std::is_same_v<decltype(&aoti_torch_cpu_addmm_out), AddmmOut>);
static_assert(std::is_same_v<decltype(&aoti_torch_cuda_addmm_out), AddmmOut>);
static_assert(std::is_same_v<decltype(&torch_tensor_from_pyobject), FromPyObject>);
static_assert(std::is_same_v<decltype(&torch_tensor_to_pyobject), ToPyObject>);
static_assert(std::is_same_v<decltype(&aoti_torch_delete_tensor_object), Delete>);
static_assert(std::is_same_v<decltype(&aoti_torch_get_device_type), GetDeviceType>);
#endif

namespace {

enum Op { OP_ADD, OP_AMAX, OP_MEDIAN, OP_MM_OUT, OP_ADDMM_OUT, N_OPS };
enum Route { ROUTE_OWNED, ROUTE_BORROW, N_ROUTES };
enum Device { DEV_CPU, DEV_CUDA, N_DEVICES };
constexpr int kMaxTensors = 4;
// Tensor arguments per op, the output of an _out op first (the shims' order).
constexpr int kArity[N_OPS] = {2, 1, 1, 3, 4};
constexpr bool kReturnsNew[N_OPS] = {true, true, true, false, false};
const char* const kOpNames[N_OPS] = {"add", "amax", "median", "mm_out", "addmm_out"};

struct Api {
  FromPyObject from[N_ROUTES] = {};  // owned, borrow
  What owned_error = nullptr;        // the owned prototype's own message, if it is the prototype
  What what = nullptr;               // torch_exception_get_what_without_backtrace (2.13+)
  Delete del = nullptr;
  GetDeviceType device_type = nullptr;
  ToPyObject to_pyobject = nullptr;
  What to_pyobject_error = nullptr;  // the to_pyobject prototype's own message, if it is the prototype
  void* ops[N_OPS][N_DEVICES] = {};
  int32_t device_code[N_DEVICES] = {-1, -1};
};

Api g;

const char* route_name(int route) { return route == ROUTE_OWNED ? "owned" : "borrow"; }

// torch's message for the failure that just happened on this thread (read before
// anything else can overwrite it), or `otherwise`.
std::string torch_message(What what, const char* otherwise) {
  const char* raw = what ? what() : nullptr;
  return raw && *raw ? raw : otherwise;
}

// The pending exception as one object (NULL if none), the error indicator cleared;
// PyErr_GetRaisedException before CPython 3.12.
PyObject* take_exception() {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  if (!type) return nullptr;
  PyErr_NormalizeException(&type, &value, &tb);
  if (tb && value) PyException_SetTraceback(value, tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  return value;
}

// Raise RuntimeError("<context>: <torch's message>"), chaining a Python exception the
// failed call left pending (torch_tensor_to_pyobject leaves THPVariable_Wrap's).
void raise_failure(const std::string& context, What what) {
  PyObject* pending = take_exception();
  std::string msg = torch_message(
      what, what ? "torch gave no message"
                 : "no message (this torch exports no torch_exception_get_what_without_backtrace)");
  PyErr_Format(PyExc_RuntimeError, "%s: %s", context.c_str(), msg.c_str());
  if (pending) {
    PyObject* now = take_exception();
    PyException_SetCause(now, pending);  // steals pending
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(now)), now);
    Py_DECREF(now);
  }
}

// Release the first n handles of `route` (owned ones are deleted; borrowed ones are not ours).
inline void release(int route, AtenTensorHandle* h, int n) {
  if (route == ROUTE_OWNED) {
    for (int i = 0; i < n; ++i) g.del(h[i]);
  }
}

// One handle per object through `route`. 0, or -1 with a Python exception set and
// nothing left to release.
inline int acquire(int route, PyObject* const* objs, int n, AtenTensorHandle* h) {
  FromPyObject from = g.from[route];
  for (int i = 0; i < n; ++i) {
    h[i] = nullptr;
    if (from(objs[i], &h[i]) != 0) {
      release(route, h, i);
      What what = route == ROUTE_OWNED && g.owned_error ? g.owned_error : g.what;
      raise_failure(std::string("c_shims: the ") + route_name(route) +
                        " handle of tensor argument " + std::to_string(i + 1) + " (" +
                        Py_TYPE(objs[i])->tp_name + ")",
                    what);
      return -1;
    }
  }
  return 0;
}

// The device table index of handle h: 0 or -1 with a Python exception set.
inline int device_of(AtenTensorHandle h, int* dev) {
  int32_t code = -1;
  if (g.device_type(h, &code) != 0) {
    raise_failure("c_shims: aoti_torch_get_device_type", g.what);
    return -1;
  }
  for (int d = 0; d < N_DEVICES; ++d) {
    if (code == g.device_code[d]) {
      *dev = d;
      return 0;
    }
  }
  PyErr_Format(PyExc_RuntimeError,
               "c_shims: no C shim for device type code %d (CPU and CUDA only)",
               (int)code);
  return -1;
}

// Run op on handles h (kArity[op] of them) on device dev; *ret gets a new handle for
// the ops that return one. Returns the shim's error code (0: success).
inline AOTITorchError run_op(int op, int dev, AtenTensorHandle* h, AtenTensorHandle* ret) {
  void* fn = g.ops[op][dev];
  switch (op) {
    case OP_ADD:
      return reinterpret_cast<AddTensor>(fn)(h[0], h[1], 1.0, ret);
    case OP_AMAX:
      // dim = [] reduces over every dimension, as torch.amax(t, dim=()).
      return reinterpret_cast<Amax>(fn)(h[0], nullptr, 0, 0, ret);
    case OP_MEDIAN:
      return reinterpret_cast<Median>(fn)(h[0], ret);
    case OP_MM_OUT:
      return reinterpret_cast<MmOut>(fn)(h[0], h[1], h[2]);
    default:
      return reinterpret_cast<AddmmOut>(fn)(h[0], h[1], h[2], h[3], 1.0, 1.0);
  }
}

// Check op / route / tensor arguments: 0, or -1 with a Python exception set.
int check(int op, int route, Py_ssize_t ntensors) {
  if (!g.del || !g.device_type) {
    PyErr_SetString(PyExc_RuntimeError, "c_shims: install() has not run");
    return -1;
  }
  if (op < 0 || op >= N_OPS) {
    PyErr_Format(PyExc_ValueError, "c_shims: no op %d", op);
    return -1;
  }
  if (route < 0 || route >= N_ROUTES || !g.from[route]) {
    PyErr_Format(PyExc_ValueError, "c_shims: route %d is not installed", route);
    return -1;
  }
  if (ntensors != kArity[op]) {
    PyErr_Format(PyExc_TypeError, "c_shims: %s takes %d tensors, got %zd",
                 kOpNames[op], kArity[op], ntensors);
    return -1;
  }
  return 0;
}

// The op's shim on `dev`, or -1 with a Python exception set.
int check_shim(int op, int dev) {
  if (!g.ops[op][dev]) {
    PyErr_Format(PyExc_RuntimeError, "c_shims: this torch exports no %s shim for %s",
                 kOpNames[op], dev == DEV_CPU ? "CPU" : "CUDA");
    return -1;
  }
  return 0;
}

int int_arg(PyObject* o, int* out) {
  long v = PyLong_AsLong(o);
  if (v == -1 && PyErr_Occurred()) return -1;
  *out = static_cast<int>(v);
  return 0;
}

double now_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

// --- Python functions --------------------------------------------------------------------

uintptr_t address(PyObject* d, const char* name) {
  PyObject* v = PyDict_GetItemString(d, name);  // borrowed
  if (!v || v == Py_None) return 0;
  return static_cast<uintptr_t>(PyLong_AsUnsignedLongLong(v));
}

PyObject* py_install(PyObject*, PyObject* args) {
  PyObject* d;
  int cpu_code, cuda_code;
  if (!PyArg_ParseTuple(args, "O!ii", &PyDict_Type, &d, &cpu_code, &cuda_code)) return nullptr;
  Api a;
  a.from[ROUTE_OWNED] = reinterpret_cast<FromPyObject>(address(d, "owned"));
  a.from[ROUTE_BORROW] = reinterpret_cast<FromPyObject>(address(d, "borrow"));
  a.owned_error = reinterpret_cast<What>(address(d, "owned_error"));
  a.what = reinterpret_cast<What>(address(d, "what"));
  a.del = reinterpret_cast<Delete>(address(d, "delete"));
  a.device_type = reinterpret_cast<GetDeviceType>(address(d, "device_type"));
  a.to_pyobject = reinterpret_cast<ToPyObject>(address(d, "to_pyobject"));
  a.to_pyobject_error = reinterpret_cast<What>(address(d, "to_pyobject_error"));
  for (int op = 0; op < N_OPS; ++op) {
    for (int dev = 0; dev < N_DEVICES; ++dev) {
      std::string key = std::string(kOpNames[op]) + (dev == DEV_CPU ? ".cpu" : ".cuda");
      a.ops[op][dev] = reinterpret_cast<void*>(address(d, key.c_str()));
    }
  }
  if (PyErr_Occurred()) return nullptr;
  if (!a.del || !a.device_type || !a.to_pyobject) {
    PyErr_SetString(PyExc_ValueError,
                    "c_shims.install: delete, device_type and to_pyobject are required");
    return nullptr;
  }
  a.device_code[DEV_CPU] = cpu_code;
  a.device_code[DEV_CUDA] = cuda_code;
  g = a;
  Py_RETURN_NONE;
}

// call(op, route, *tensors): the result tensor (new reference) or None.
PyObject* py_call(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  int op, route;
  if (nargs < 2) {
    PyErr_SetString(PyExc_TypeError, "call(op, route, *tensors)");
    return nullptr;
  }
  if (int_arg(args[0], &op) || int_arg(args[1], &route)) return nullptr;
  if (check(op, route, nargs - 2)) return nullptr;
  const int n = kArity[op];
  AtenTensorHandle h[kMaxTensors];
  if (acquire(route, args + 2, n, h)) return nullptr;
  PyObject* result = nullptr;
  int dev = 0;
  AtenTensorHandle ret = nullptr;
  if (device_of(h[0], &dev) == 0 && check_shim(op, dev) == 0) {
    if (run_op(op, dev, h, &ret) != 0) {
      raise_failure(std::string("c_shims: ") + kOpNames[op], g.what);
    } else if (!kReturnsNew[op]) {
      result = Py_NewRef(Py_None);
    } else {
      // ret is a NEW reference: turned into a Python tensor (which holds its own
      // reference to the TensorImpl), then deleted on every path.
      void* obj = nullptr;
      if (g.to_pyobject(ret, nullptr, &obj) != 0 || obj == nullptr) {
        raise_failure(std::string("c_shims: torch_tensor_to_pyobject of ") +
                          kOpNames[op] + "'s result",
                      g.to_pyobject_error ? g.to_pyobject_error : g.what);
      } else {
        result = static_cast<PyObject*>(obj);
      }
      g.del(ret);
    }
  }
  release(route, h, n);
  return result;
}

// Loops timed in C (the GIL held throughout, as in a call): functions of their own,
// so callgrind can toggle collection on them (bench/c_shims/callgrind.py).
extern "C" __attribute__((noinline)) double c_shims_handles_loop(
    int route, long n, PyObject* const* objs, int k) {
  AtenTensorHandle h[kMaxTensors];
  const double t0 = now_ns();
  for (long i = 0; i < n; ++i) {
    if (acquire(route, objs, k, h)) return -1;
    release(route, h, k);
  }
  return (now_ns() - t0) / n;
}

extern "C" __attribute__((noinline)) double c_shims_op_loop(
    int op, int dev, long n, AtenTensorHandle* h) {
  AtenTensorHandle ret = nullptr;
  const double t0 = now_ns();
  for (long i = 0; i < n; ++i) {
    if (run_op(op, dev, h, &ret) != 0) {
      raise_failure(std::string("c_shims: ") + kOpNames[op], g.what);
      return -1;
    }
    if (kReturnsNew[op]) g.del(ret);  // the result's free is part of the op
  }
  return (now_ns() - t0) / n;
}

// The whole call in C, n times: handles by `route`, the op, the result handle deleted
// (not wrapped: that is the same for every route), the handles released. Where the
// op's kernel copies an input at::Tensor, that copy's cost depends on the route (see
// the module comment of bench/c_shims/consumer.py), which handles_loop alone cannot show.
extern "C" __attribute__((noinline)) double c_shims_call_loop(
    int op, int route, long n, PyObject* const* objs) {
  const int k = kArity[op];
  AtenTensorHandle h[kMaxTensors];
  AtenTensorHandle ret = nullptr;
  int dev = 0;
  const double t0 = now_ns();
  for (long i = 0; i < n; ++i) {
    if (acquire(route, objs, k, h)) return -1;
    if (device_of(h[0], &dev) || check_shim(op, dev)) {
      release(route, h, k);
      return -1;
    }
    if (run_op(op, dev, h, &ret) != 0) {
      raise_failure(std::string("c_shims: ") + kOpNames[op], g.what);
      release(route, h, k);
      return -1;
    }
    if (kReturnsNew[op]) g.del(ret);
    release(route, h, k);
  }
  return (now_ns() - t0) / n;
}

// call_loop(op, route, n, *tensors) -> ns per whole call (handles, op, release).
PyObject* py_call_loop(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  int op, route, n;
  if (nargs < 3) {
    PyErr_SetString(PyExc_TypeError, "call_loop(op, route, n, *tensors)");
    return nullptr;
  }
  if (int_arg(args[0], &op) || int_arg(args[1], &route) || int_arg(args[2], &n)) return nullptr;
  if (check(op, route, nargs - 3)) return nullptr;
  if (n < 1) {
    PyErr_SetString(PyExc_ValueError, "call_loop: n must be positive");
    return nullptr;
  }
  double ns = c_shims_call_loop(op, route, n, args + 3);
  return ns < 0 ? nullptr : PyFloat_FromDouble(ns);
}

// handles_loop(route, n, *tensors) -> ns per acquire + release of every handle.
PyObject* py_handles_loop(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  int route, n;
  if (nargs < 3 || nargs - 2 > kMaxTensors) {
    PyErr_SetString(PyExc_TypeError, "handles_loop(route, n, *tensors), 1 to 4 tensors");
    return nullptr;
  }
  if (int_arg(args[0], &route) || int_arg(args[1], &n)) return nullptr;
  if (route < 0 || route >= N_ROUTES || !g.from[route] || n < 1) {
    PyErr_SetString(PyExc_ValueError, "handles_loop: bad route or n");
    return nullptr;
  }
  double ns = c_shims_handles_loop(route, n, args + 2, static_cast<int>(nargs - 2));
  return ns < 0 ? nullptr : PyFloat_FromDouble(ns);
}

// op_loop(op, n, *tensors) -> ns per op call; the handles borrowed once, before the loop.
PyObject* py_op_loop(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  int op, n;
  if (nargs < 2) {
    PyErr_SetString(PyExc_TypeError, "op_loop(op, n, *tensors)");
    return nullptr;
  }
  if (int_arg(args[0], &op) || int_arg(args[1], &n)) return nullptr;
  if (check(op, ROUTE_BORROW, nargs - 2)) return nullptr;
  if (n < 1) {
    PyErr_SetString(PyExc_ValueError, "op_loop: n must be positive");
    return nullptr;
  }
  AtenTensorHandle h[kMaxTensors];
  if (acquire(ROUTE_BORROW, args + 2, kArity[op], h)) return nullptr;
  int dev = 0;
  if (device_of(h[0], &dev) || check_shim(op, dev)) return nullptr;
  double ns = c_shims_op_loop(op, dev, n, h);
  return ns < 0 ? nullptr : PyFloat_FromDouble(ns);
}

PyMethodDef methods[] = {
    {"install", py_install, METH_VARARGS,
     "install(addresses, cpu_code, cuda_code): every function by address (an int)."},
    {"call", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_call)),
     METH_FASTCALL, "call(op, route, *tensors) -> the result tensor, or None for an _out op."},
    {"handles_loop",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_handles_loop)),
     METH_FASTCALL, "handles_loop(route, n, *tensors) -> ns per acquire + release of all."},
    {"call_loop", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_call_loop)),
     METH_FASTCALL, "call_loop(op, route, n, *tensors) -> ns per whole call in C."},
    {"op_loop", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_op_loop)),
     METH_FASTCALL, "op_loop(op, n, *tensors) -> ns per op call (handles borrowed once)."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_bench_c_shims",
                      "ATen ops through torch's generated C shims (bench/c_shims/c_shims.cpp).", -1,
                      methods};

}  // namespace

PyMODINIT_FUNC PyInit__bench_c_shims(void) {
  PyObject* m = PyModule_Create(&module);
  if (!m) return nullptr;
  const char* ops[N_OPS] = {"add", "amax", "median", "mm_out", "addmm_out"};
  for (int i = 0; i < N_OPS; ++i) {
    if (PyModule_AddIntConstant(m, (std::string("OP_") + ops[i]).c_str(), i) ||
        PyModule_AddIntConstant(m, (std::string("ARITY_") + ops[i]).c_str(), kArity[i])) {
      Py_DECREF(m);
      return nullptr;
    }
  }
  if (PyModule_AddIntConstant(m, "ROUTE_owned", ROUTE_OWNED) ||
      PyModule_AddIntConstant(m, "ROUTE_borrow", ROUTE_BORROW)) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
