// A kernel launcher's argument intake, on the private route and on each stable one.
//
// One METH_FASTCALL call takes k tensors and two ints, as a launcher's generated
// wrapper does, and reads what a launch needs of each tensor: data pointer, ndim,
// sizes, strides, dtype, device type and index (into a stack record; a volatile
// sink keeps the reads). The routes differ only in how a tensor's fields are read:
//
//   launch_unpack      THPVariable_Check + THPVariable_Unpack (torch's private
//                      torch/csrc/autograd/python_variable.h, linking
//                      libtorch_python): the route a Triton launcher takes
//                      (facebookexperimental/triton#1498) and PyTorch's own
//                      _FastCudaLauncher (pytorch/pytorch#180507) reads;
//   launch_owned       torch_tensor_from_pyobject (torch's stable shim, 2.14+) +
//                      7 aoti_torch_get_* getters + aoti_torch_delete_tensor_object;
//   launch_borrow      torch_tensor_borrow_from_pyobject (the proposed borrow, as
//                      shim_ext builds it) + the same 7 getters;
//   launch_dlpack      DLPackExchangeAPI::dltensor_from_py_object_no_sync through
//                      the table installed by install_dlpack (torch's own, or the
//                      copy whose slot is the DLPack series' function);
//   launch_empty       the two ints alone: the call's floor.
//
// The stable routes call through addresses install() receives (the bridge's
// resolution), so this module links only what the private route needs. Every
// error is a Python exception; the stable routes name the function that failed.
#include <Python.h>

#include <algorithm>
#include <cstdint>

#include <ATen/dlpack.h>
#include <torch/csrc/autograd/python_variable.h>

#include "torch_borrow/abi.h"

namespace {

struct Record {
  void* data;
  int64_t ndim;
  const int64_t* sizes;
  const int64_t* strides;
  int32_t dtype;
  int32_t device_type;
  int32_t device_index;
};

// The most tensors one call takes: a launcher's record array lives on the stack.
constexpr Py_ssize_t kMaxTensors = 64;

volatile uintptr_t sink;

torch_borrow_from_pyobject_fn owned_fn = nullptr;
torch_borrow_from_pyobject_fn borrow_fn = nullptr;
torch_borrow_delete_fn delete_fn = nullptr;
torch_borrow_get_ptr_fn get_data_ptr = nullptr;
torch_borrow_get_i64_fn get_dim = nullptr;
torch_borrow_get_i64p_fn get_sizes = nullptr;
torch_borrow_get_i64p_fn get_strides = nullptr;
torch_borrow_get_i32_fn get_dtype = nullptr;
torch_borrow_get_i32_fn get_device_type = nullptr;
torch_borrow_get_i32_fn get_device_index = nullptr;
DLPackDLTensorFromPyObjectNoSync dltensor_fn = nullptr;

// Splits the arguments: k tensors, then the two ints. Returns k, or -1 with an
// exception set.
Py_ssize_t tensor_count(const char* name, PyObject* const* args, Py_ssize_t nargs,
                        long long ints[2]) {
  if (nargs < 3 || nargs - 2 > kMaxTensors) {
    PyErr_Format(PyExc_TypeError, "%s() takes 1 to %zd tensors and two ints (%zd given)", name,
                 kMaxTensors, nargs);
    return -1;
  }
  for (int i = 0; i < 2; ++i) {
    ints[i] = PyLong_AsLongLong(args[nargs - 2 + i]);
    if (ints[i] == -1 && PyErr_Occurred()) return -1;
  }
  return nargs - 2;
}

// The last call's records, for last() (tests compare them with torch's accessors).
Record last_records[kMaxTensors];
Py_ssize_t last_count = 0;

PyObject* finish(const Record* records, Py_ssize_t k, const long long ints[2]) {
  std::copy(records, records + k, last_records);
  last_count = k;
  uintptr_t acc = static_cast<uintptr_t>(ints[0] + ints[1]);
  for (Py_ssize_t i = 0; i < k; ++i) {
    const Record& r = records[i];
    acc += reinterpret_cast<uintptr_t>(r.data) + static_cast<uintptr_t>(r.ndim);
    for (int64_t d = 0; d < r.ndim; ++d)
      acc += static_cast<uintptr_t>(r.sizes[d]) ^ static_cast<uintptr_t>(r.strides[d]);
    acc += static_cast<uintptr_t>(r.dtype) + static_cast<uintptr_t>(r.device_type) +
           static_cast<uintptr_t>(r.device_index);
  }
  sink = acc;
  Py_RETURN_NONE;
}

// The launch's floor: the call and its two ints, no tensor.
PyObject* launch_empty(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_Format(PyExc_TypeError, "launch_empty() takes two ints (%zd given)", nargs);
    return nullptr;
  }
  long long ints[2];
  for (int i = 0; i < 2; ++i) {
    ints[i] = PyLong_AsLongLong(args[i]);
    if (ints[i] == -1 && PyErr_Occurred()) return nullptr;
  }
  return finish(nullptr, 0, ints);
}

PyObject* launch_unpack(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  long long ints[2];
  const Py_ssize_t k = tensor_count("launch_unpack", args, nargs, ints);
  if (k < 0) return nullptr;
  Record records[kMaxTensors];
  for (Py_ssize_t i = 0; i < k; ++i) {
    if (!THPVariable_Check(args[i])) {
      PyErr_Format(PyExc_TypeError, "launch_unpack(): argument %zd is not a torch.Tensor", i);
      return nullptr;
    }
    const at::Tensor& t = THPVariable_Unpack(args[i]);
    const c10::Device device = t.device();
    records[i] = Record{t.data_ptr(), t.dim(), t.sizes().data(), t.strides().data(),
                        static_cast<int32_t>(t.scalar_type()),
                        static_cast<int32_t>(device.type()), device.index()};
  }
  return finish(records, k, ints);
}

// The seven getters on one handle, as every stable handle route reads it.
bool read_handle(AtenTensorHandle h, Record* r) {
  const char* failed = get_data_ptr(h, &r->data)                   ? "aoti_torch_get_data_ptr"
                       : get_dim(h, &r->ndim)                       ? "aoti_torch_get_dim"
                       : get_sizes(h, const_cast<int64_t**>(&r->sizes))     ? "aoti_torch_get_sizes"
                       : get_strides(h, const_cast<int64_t**>(&r->strides)) ? "aoti_torch_get_strides"
                       : get_dtype(h, &r->dtype)                    ? "aoti_torch_get_dtype"
                       : get_device_type(h, &r->device_type)        ? "aoti_torch_get_device_type"
                       : get_device_index(h, &r->device_index)      ? "aoti_torch_get_device_index"
                                                                    : nullptr;
  if (failed != nullptr) PyErr_Format(PyExc_RuntimeError, "%s failed", failed);
  return failed == nullptr;
}

bool getters_installed(const char* name) {
  if (get_data_ptr && get_dim && get_sizes && get_strides && get_dtype && get_device_type &&
      get_device_index)
    return true;
  PyErr_Format(PyExc_RuntimeError, "%s(): the aoti_torch_get_* getters are not installed", name);
  return false;
}

PyObject* launch_owned(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (owned_fn == nullptr || delete_fn == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "launch_owned(): torch_tensor_from_pyobject is not installed");
    return nullptr;
  }
  if (!getters_installed("launch_owned")) return nullptr;
  long long ints[2];
  const Py_ssize_t k = tensor_count("launch_owned", args, nargs, ints);
  if (k < 0) return nullptr;
  Record records[kMaxTensors];
  // Each handle is deleted before the next is made; the sizes / strides pointers
  // then point into the Python object's TensorImpl, which the caller keeps alive.
  for (Py_ssize_t i = 0; i < k; ++i) {
    AtenTensorHandle h = nullptr;
    if (owned_fn(args[i], &h) != 0) {
      PyErr_Format(PyExc_RuntimeError, "torch_tensor_from_pyobject failed on argument %zd", i);
      return nullptr;
    }
    const bool ok = read_handle(h, &records[i]);
    delete_fn(h);
    if (!ok) return nullptr;
  }
  return finish(records, k, ints);
}

PyObject* launch_borrow(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (borrow_fn == nullptr) {
    PyErr_SetString(PyExc_RuntimeError,
                    "launch_borrow(): torch_tensor_borrow_from_pyobject is not installed");
    return nullptr;
  }
  if (!getters_installed("launch_borrow")) return nullptr;
  long long ints[2];
  const Py_ssize_t k = tensor_count("launch_borrow", args, nargs, ints);
  if (k < 0) return nullptr;
  Record records[kMaxTensors];
  for (Py_ssize_t i = 0; i < k; ++i) {
    AtenTensorHandle h = nullptr;  // borrowed: valid while args[i] lives, never deleted
    if (borrow_fn(args[i], &h) != 0) {
      PyErr_Format(PyExc_RuntimeError, "torch_tensor_borrow_from_pyobject failed on argument %zd",
                   i);
      return nullptr;
    }
    if (!read_handle(h, &records[i])) return nullptr;
  }
  return finish(records, k, ints);
}

PyObject* launch_dlpack(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (dltensor_fn == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "launch_dlpack(): no dltensor_from_py_object_no_sync installed");
    return nullptr;
  }
  long long ints[2];
  const Py_ssize_t k = tensor_count("launch_dlpack", args, nargs, ints);
  if (k < 0) return nullptr;
  Record records[kMaxTensors];
  for (Py_ssize_t i = 0; i < k; ++i) {
    DLTensor dl;
    // The function sets a Python exception when it fails (the exchange API's contract).
    if (dltensor_fn(args[i], &dl) != 0) return nullptr;
    if (dl.ndim > 0 && (dl.shape == nullptr || dl.strides == nullptr)) {
      PyErr_Format(PyExc_BufferError, "launch_dlpack(): argument %zd came without shape or strides", i);
      return nullptr;
    }
    records[i] = Record{static_cast<char*>(dl.data) + dl.byte_offset, dl.ndim, dl.shape,
                        dl.strides,
                        static_cast<int32_t>(dl.dtype.code | dl.dtype.bits << 8 | dl.dtype.lanes << 16),
                        static_cast<int32_t>(dl.device.device_type), dl.device.device_id};
  }
  return finish(records, k, ints);
}

// The last call's records as tuples (data pointer, sizes, strides, dtype, device
// type, device index): valid while the last call's tensors are alive (the sizes and
// strides point into them), which the caller guarantees.
PyObject* last(PyObject*, PyObject*) {
  PyObject* out = PyList_New(last_count);
  if (out == nullptr) return nullptr;
  for (Py_ssize_t i = 0; i < last_count; ++i) {
    const Record& r = last_records[i];
    PyObject* sizes = PyTuple_New(r.ndim);
    PyObject* strides = PyTuple_New(r.ndim);
    if (sizes == nullptr || strides == nullptr) {
      Py_XDECREF(sizes);
      Py_XDECREF(strides);
      Py_DECREF(out);
      return nullptr;
    }
    for (int64_t d = 0; d < r.ndim; ++d) {
      PyTuple_SET_ITEM(sizes, d, PyLong_FromLongLong(r.sizes[d]));
      PyTuple_SET_ITEM(strides, d, PyLong_FromLongLong(r.strides[d]));
    }
    PyObject* item = Py_BuildValue("(KNNiii)", static_cast<unsigned long long>(
                                       reinterpret_cast<uintptr_t>(r.data)),
                                   sizes, strides, r.dtype, r.device_type, r.device_index);
    if (item == nullptr) {
      Py_DECREF(out);
      return nullptr;
    }
    PyList_SET_ITEM(out, i, item);
  }
  return out;
}

template <typename Fn>
bool take(PyObject* addresses, const char* name, Fn* out) {
  PyObject* value = PyDict_GetItemString(addresses, name);  // borrowed
  if (value == nullptr) {
    *out = nullptr;
    return true;
  }
  void* p = PyLong_AsVoidPtr(value);
  if (p == nullptr && PyErr_Occurred()) return false;
  *out = reinterpret_cast<Fn>(p);
  return true;
}

PyObject* install(PyObject*, PyObject* addresses) {
  if (!PyDict_Check(addresses)) {
    PyErr_SetString(PyExc_TypeError, "install() takes a dict {symbol name: address}");
    return nullptr;
  }
  if (!take(addresses, "torch_tensor_from_pyobject", &owned_fn) ||
      !take(addresses, "torch_tensor_borrow_from_pyobject", &borrow_fn) ||
      !take(addresses, "aoti_torch_delete_tensor_object", &delete_fn) ||
      !take(addresses, "aoti_torch_get_data_ptr", &get_data_ptr) ||
      !take(addresses, "aoti_torch_get_dim", &get_dim) ||
      !take(addresses, "aoti_torch_get_sizes", &get_sizes) ||
      !take(addresses, "aoti_torch_get_strides", &get_strides) ||
      !take(addresses, "aoti_torch_get_dtype", &get_dtype) ||
      !take(addresses, "aoti_torch_get_device_type", &get_device_type) ||
      !take(addresses, "aoti_torch_get_device_index", &get_device_index))
    return nullptr;
  Py_RETURN_NONE;
}

PyObject* install_dlpack(PyObject*, PyObject* address) {
  void* p = PyLong_AsVoidPtr(address);
  if (p == nullptr && PyErr_Occurred()) return nullptr;
  const auto* api = static_cast<const DLPackExchangeAPI*>(p);
  dltensor_fn = api == nullptr ? nullptr : api->dltensor_from_py_object_no_sync;
  Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"launch_empty", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(launch_empty)),
     METH_FASTCALL, "launch_empty(a, b): the call and its two ints, no tensor (the floor)."},
    {"launch_unpack", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(launch_unpack)),
     METH_FASTCALL, "launch_unpack(*tensors, a, b): THPVariable_Check + THPVariable_Unpack reads."},
    {"launch_owned", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(launch_owned)),
     METH_FASTCALL, "launch_owned(*tensors, a, b): owned handle + 7 getters + delete per tensor."},
    {"launch_borrow", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(launch_borrow)),
     METH_FASTCALL, "launch_borrow(*tensors, a, b): borrowed handle + 7 getters per tensor."},
    {"launch_dlpack", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(launch_dlpack)),
     METH_FASTCALL, "launch_dlpack(*tensors, a, b): dltensor_from_py_object_no_sync per tensor."},
    {"last", last, METH_NOARGS,
     "last() -> [(data_ptr, sizes, strides, dtype, device_type, device_index)] of the last call."},
    {"install", install, METH_O, "install({symbol name: address}): the stable routes' functions."},
    {"install_dlpack", install_dlpack, METH_O,
     "install_dlpack(address): the DLPackExchangeAPI whose dltensor slot launch_dlpack calls (0: none)."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_bench_unpack_launcher",
                      "A launcher's argument intake on the private route and each stable one.",
                      -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit__bench_unpack_launcher() { return PyModule_Create(&module); }
