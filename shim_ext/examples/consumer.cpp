// A kernel library's read of a torch.Tensor's metadata through PyTorch's stable
// C ABI, with a borrowed handle: the pattern to copy. A CPython extension,
// borrow_consumer, exposing
//
//   view(obj)  -> (data_ptr, sizes, strides, dtype code, device type code, device index)
//   route()    -> "libtorch" | "prototype" | "owned" | None: where the handle comes from
//   _resolve(route=None, flags=True) -> route(): look the symbols up again (tests only)
//
// and, for C callers, borrow_consumer_read(obj, &meta) (the same read into a struct).
//
// Build (shim_ext/examples/build.py does it): torch's headers for the declarations
// (torch.utils.cpp_extension.include_paths(), plus shim_ext/include for the
// prototype's), -std=c++20 for torch >= 2.14 (c++17 before), and no torch library
// on the link line: every torch function is found with dlsym at first use, in the
// libraries `import torch` loaded, so this module loads on a torch that lacks some
// of them and the choice is made by symbol presence, never by version. Once torch
// ships the borrow (torch/csrc/stable/c/shim.h declares it), drop load_prototype and
// shim_ext/include: nothing else changes.
//
// Ownership, said once:
// - torch_tensor_borrow_from_pyobject returns a BORROWED handle: it aliases the
//   at::Tensor inside the Python object, is valid while that object lives (the
//   caller's reference keeps it alive for the whole call), and is never deleted.
//   Never pass it to aoti_torch_delete_tensor_object, never wrap it in
//   torch::stable::Tensor (its destructor deletes), never box it in a
//   StableIValue (boxed stacks, torch_call_dispatcher, StableList take
//   ownership). To keep the tensor beyond the object, make an owned one:
//   aoti_torch_new_tensor_handle(borrowed, &owned).
// - torch_tensor_from_pyobject (torch 2.14+) returns an OWNED handle (a new
//   heap at::Tensor): the caller deletes it on every exit path (OwnedHandle below).

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>

// Declarations only (nothing below calls these names directly): decltype(&f)
// makes the compiler check every looked-up pointer against torch's own header.
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch_borrow/abi.h>  // torch_borrow_custom_metadata's type (prototype-only)
#include <torch_borrow/shim.h> // the borrow and torch_is_conj / torch_is_neg

namespace {

// torch_tensor_from_pyobject has the borrow's signature; its header exists on 2.14+ only.
using FromPyObject = decltype(&torch_tensor_borrow_from_pyobject);
using IsFlag = decltype(&torch_is_conj);
using What = const char* (*)(); // torch_exception_get_what_without_backtrace, 2.13+

constexpr int kMaxDims = 64; // a kernel library has its own rank limit
constexpr int kCodes = 256;  // c10::ScalarType codes the dtype table covers

template <class F>
F sym(void* lib, const char* name) {
  return lib ? reinterpret_cast<F>(dlsym(lib, name)) : nullptr;
}

// Everything the first use finds; published once, never freed (a view on another
// thread may still be reading it when _resolve replaces it).

struct Api {
  const char* route = nullptr; // nullptr: no route; `why` says what is missing
  std::string why;
  FromPyObject borrow = nullptr; // libtorch's or the prototype's
  FromPyObject owned = nullptr;  // torch_tensor_from_pyobject, when route is "owned"
  decltype(&aoti_torch_delete_tensor_object) del = nullptr;
  IsFlag is_conj = nullptr, is_neg = nullptr; // both or neither
  std::string no_flags;                       // why they are missing
  decltype(&aoti_torch_get_layout) layout = nullptr;
  decltype(&aoti_torch_get_data_ptr) data_ptr = nullptr;
  decltype(&aoti_torch_get_storage_offset) storage_offset = nullptr;
  decltype(&aoti_torch_get_dim) dim = nullptr;
  decltype(&aoti_torch_get_sizes) sizes = nullptr;
  decltype(&aoti_torch_get_strides) strides = nullptr;
  decltype(&aoti_torch_get_dtype) dtype = nullptr;
  decltype(&aoti_torch_get_device_type) device_type = nullptr;
  decltype(&aoti_torch_get_device_index) device_index = nullptr;
  What what = nullptr;
  int32_t strided = -1, meta = -1;
  int8_t itemsize[kCodes] = {}; // bytes per dtype code; 0: not a dtype we view
  PyObject* tensor_type = nullptr; // torch.Tensor, kept for good
  // shim_ext's torch_borrow_custom_metadata: the borrow's refusal rule, asked on the
  // owned route (the borrow makes it by itself).
  torch_borrow_custom_metadata_fn custom = nullptr;
  decltype(&aoti_torch_get_storage_size) storage_size = nullptr;
};

std::atomic<const Api*> g_api{nullptr};

// Whether any element lies outside [0, nbytes) of the storage: storage offset plus,
// per dimension, (size - 1) * stride elements, times the itemsize. No elements: never.
// In 128 bits, saturated, so no size or stride overflows it; a negative stride or
// offset (torch makes none) counts as outside.
bool outside_storage(int64_t ndim, const int64_t* sizes, const int64_t* strides,
                     int64_t offset, int64_t itemsize, int64_t nbytes) {
  for (int64_t i = 0; i < ndim; ++i) {
    if (sizes[i] == 0) return false;
  }
  const __int128 cap = static_cast<__int128>(1) << 100;
  __int128 last = offset; // the furthest element, in elements
  for (int64_t i = 0; i < ndim; ++i) {
    __int128 step = (static_cast<__int128>(sizes[i]) - 1) * strides[i];
    if (step < 0 || last < 0) return true;
    last = std::min(last + step, cap);
  }
  return (last + 1) * itemsize > nbytes;
}

std::string utf8(PyObject* s, const char* otherwise) {
  const char* u = s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : nullptr;
  PyErr_Clear();
  return u ? u : otherwise;
}

// The pending Python exception as text, cleared (a lookup that failed is a reason).
std::string take_error() {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyObject* s = value ? PyObject_Str(value) : nullptr;
  std::string out = utf8(s, "unknown error");
  Py_XDECREF(s);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  PyErr_Clear();
  return out;
}

std::string module_file(PyObject* mod) {
  PyObject* f = PyObject_GetAttrString(mod, "__file__");
  std::string out = utf8(f, "");
  Py_XDECREF(f);
  return out;
}

// The prototype (shim_ext): its _entry library exports the entry points and
// torch_borrow_set_impl; its _borrow library holds the THPVariable side and
// torch_borrow_impl. We register the implementation ourselves, as shim_ext.load()
// does, so no caller needs to know the prototype exists; registering is one store of
// the same pointer, so it does not matter who (bridge, shim_ext.load(), us) goes first.
// Returns "" on success, else why the prototype cannot be used.
std::string load_prototype(PyObject* torch, FromPyObject* borrow, IsFlag* conj, IsFlag* neg,
                           torch_borrow_custom_metadata_fn* custom) {
  PyObject* b = PyImport_ImportModule("shim_ext._borrow");
  if (!b) return "shim_ext._borrow does not import (" + take_error() + ")";
  // _borrow has THPVariable's layout compiled in: refuse one built for another torch,
  // as the bridge does. shim_ext.load() alone does not check this.
  PyObject* ver = PyObject_GetAttrString(torch, "__version__");
  PyObject* lib = PyObject_GetAttrString(b, "lib");
  PyObject* ffi = PyObject_GetAttrString(b, "ffi");
  PyObject* raw = lib ? PyObject_CallMethod(lib, "torch_borrow_built_for", nullptr) : nullptr;
  PyObject* built = ffi && raw ? PyObject_CallMethod(ffi, "string", "O", raw) : nullptr;
  std::string why, running = utf8(ver, "?");
  if (!built || !PyBytes_Check(built)) {
    why = "cannot read which torch shim_ext._borrow was built for (" + take_error() + ")";
  } else if (PyBytes_AsString(built) != running) {
    why = std::string("shim_ext was built for torch ") + PyBytes_AsString(built) +
        " but torch " + running + " is running: rebuild it";
  }
  Py_XDECREF(ver), Py_XDECREF(lib), Py_XDECREF(ffi), Py_XDECREF(raw), Py_XDECREF(built);
  PyObject* e = why.empty() ? PyImport_ImportModule("shim_ext._entry") : nullptr;
  if (why.empty() && !e) why = "shim_ext._entry does not import (" + take_error() + ")";
  if (!why.empty()) {
    Py_XDECREF(e), Py_DECREF(b);
    return why;
  }
  // Both are loaded now; RTLD_NOLOAD only hands back their handles.
  void* elib = dlopen(module_file(e).c_str(), RTLD_NOLOAD | RTLD_LAZY);
  void* blib = dlopen(module_file(b).c_str(), RTLD_NOLOAD | RTLD_LAZY);
  Py_DECREF(e), Py_DECREF(b);
  auto set_impl = sym<void (*)(const void*)>(elib, "torch_borrow_set_impl");
  auto impl = sym<const void* (*)()>(blib, "torch_borrow_impl");
  *borrow = sym<FromPyObject>(elib, "torch_tensor_borrow_from_pyobject");
  *conj = sym<IsFlag>(elib, "torch_is_conj");
  *neg = sym<IsFlag>(elib, "torch_is_neg");
  *custom = sym<torch_borrow_custom_metadata_fn>(blib, "torch_borrow_custom_metadata");
  if (!set_impl || !impl || !*borrow || !*conj || !*neg || !*custom) {
    *borrow = nullptr, *conj = *neg = nullptr, *custom = nullptr;
    return "shim_ext's libraries lack an expected symbol";
  }
  set_impl(impl()); // what shim_ext.load() does
  return "";
}

// The dtypes this consumer views, by the stable ABI's names for their codes: a
// code not listed (quantized, sub-byte, bits, anything newer) is refused.
struct DtypeName {
  const char* fn;
  int8_t itemsize;
};
constexpr DtypeName kDtypes[] = {
    {"aoti_torch_dtype_bool", 1},          {"aoti_torch_dtype_uint8", 1},
    {"aoti_torch_dtype_int8", 1},          {"aoti_torch_dtype_int16", 2},
    {"aoti_torch_dtype_int32", 4},         {"aoti_torch_dtype_int64", 8},
    {"aoti_torch_dtype_uint16", 2},        {"aoti_torch_dtype_uint32", 4},
    {"aoti_torch_dtype_uint64", 8},        {"aoti_torch_dtype_float16", 2},
    {"aoti_torch_dtype_bfloat16", 2},      {"aoti_torch_dtype_float32", 4},
    {"aoti_torch_dtype_float64", 8},       {"aoti_torch_dtype_complex32", 4},
    {"aoti_torch_dtype_complex64", 8},     {"aoti_torch_dtype_complex128", 16},
    {"aoti_torch_dtype_float8_e5m2", 1},   {"aoti_torch_dtype_float8_e4m3fn", 1},
    {"aoti_torch_dtype_float8_e5m2fnuz", 1}, {"aoti_torch_dtype_float8_e4m3fnuz", 1},
    {"aoti_torch_dtype_float8_e8m0fnu", 1},  {"aoti_torch_dtype_float4_e2m1fn_x2", 1},
};

// Find everything, in this order: libtorch's own borrow (a torch that ships it),
// the prototype's, torch's owned shim. `only` names the one route to try (tests);
// `flags` false leaves torch_is_conj / torch_is_neg out (tests). Returns nullptr with
// a Python exception set when torch is not imported yet.
const Api* resolve(const char* only, bool flags) {
  PyObject* name = PyUnicode_FromString("torch");
  PyObject* torch = name ? PyImport_GetModule(name) : nullptr; // never imports it
  Py_XDECREF(name);
  PyObject* tensor = torch ? PyObject_GetAttrString(torch, "Tensor") : nullptr;
  // libtorch_cpu exports the stable C ABI; RTLD_NOLOAD: only if `import torch` loaded it.
  void* lib = tensor ? dlopen("libtorch_cpu.so", RTLD_NOLOAD | RTLD_LAZY) : nullptr;
  if (!lib) {
    Py_XDECREF(tensor), Py_XDECREF(torch);
    PyErr_Clear();
    PyErr_SetString(PyExc_RuntimeError, "import torch before the first view");
    return nullptr;
  }
  Api* a = new Api;
  a->tensor_type = tensor; // kept for good
  a->storage_size = sym<decltype(a->storage_size)>(lib, "aoti_torch_get_storage_size");
  a->layout = sym<decltype(a->layout)>(lib, "aoti_torch_get_layout");
  a->data_ptr = sym<decltype(a->data_ptr)>(lib, "aoti_torch_get_data_ptr");
  a->storage_offset = sym<decltype(a->storage_offset)>(lib, "aoti_torch_get_storage_offset");
  a->dim = sym<decltype(a->dim)>(lib, "aoti_torch_get_dim");
  a->sizes = sym<decltype(a->sizes)>(lib, "aoti_torch_get_sizes");
  a->strides = sym<decltype(a->strides)>(lib, "aoti_torch_get_strides");
  a->dtype = sym<decltype(a->dtype)>(lib, "aoti_torch_get_dtype");
  a->device_type = sym<decltype(a->device_type)>(lib, "aoti_torch_get_device_type");
  a->device_index = sym<decltype(a->device_index)>(lib, "aoti_torch_get_device_index");
  a->what = sym<What>(lib, "torch_exception_get_what_without_backtrace");
  auto strided = sym<int32_t (*)()>(lib, "aoti_torch_layout_strided");
  auto meta = sym<int32_t (*)()>(lib, "aoti_torch_device_type_meta");
  a->strided = strided ? strided() : -1;
  a->meta = meta ? meta() : -1;
  for (const DtypeName& d : kDtypes) {
    auto code = sym<int32_t (*)()>(lib, d.fn);
    if (code && code() >= 0 && code() < kCodes) a->itemsize[code()] = d.itemsize;
  }
  bool getters = a->layout && a->data_ptr && a->storage_offset && a->dim && a->sizes &&
      a->strides && a->dtype && a->device_type && a->device_index && strided && meta &&
      a->storage_size;

  auto want = [only](const char* r) { return !only || std::string(only) == r; };
  FromPyObject torch_borrow = sym<FromPyObject>(lib, "torch_tensor_borrow_from_pyobject");
  IsFlag conj = sym<IsFlag>(lib, "torch_is_conj"), neg = sym<IsFlag>(lib, "torch_is_neg");
  FromPyObject proto_borrow = nullptr;
  IsFlag proto_conj = nullptr, proto_neg = nullptr;
  // Always: the owned route makes the borrow's check through shim_ext's helper.
  std::string proto_why = load_prototype(torch, &proto_borrow, &proto_conj, &proto_neg,
                                         &a->custom);
  FromPyObject owned = sym<FromPyObject>(lib, "torch_tensor_from_pyobject");
  a->del = sym<decltype(a->del)>(lib, "aoti_torch_delete_tensor_object");
  if (!getters) {
    a->why = "libtorch_cpu lacks an aoti_torch_get_* getter or code";
  } else if (want("libtorch") && torch_borrow) {
    a->route = "libtorch", a->borrow = torch_borrow;
  } else if (want("prototype") && proto_borrow) {
    a->route = "prototype", a->borrow = proto_borrow;
  } else if (want("owned") && owned && a->del && a->custom) {
    a->route = "owned", a->owned = owned;
  } else {
    auto skip = [&](const char* r, const std::string& why) { return want(r) ? why : "skipped"; };
    a->why = "no route: libtorch: " +
        skip("libtorch", "libtorch_cpu exports no torch_tensor_borrow_from_pyobject") +
        "; prototype: " + skip("prototype", proto_borrow ? "" : proto_why) + "; owned: " +
        skip("owned", owned ? "no torch_borrow_custom_metadata (shim_ext) to refuse tensors "
                              "whose getters run Python"
                            : "libtorch_cpu exports no torch_tensor_from_pyobject (torch 2.14+)");
  }
  // The flags read any handle, borrowed or owned: libtorch's first, else the prototype's.
  if (!flags) {
    a->no_flags = "the flag getters were left out (_resolve(flags=False))";
  } else if (conj && neg) {
    a->is_conj = conj, a->is_neg = neg;
  } else if (proto_conj && proto_neg) {
    a->is_conj = proto_conj, a->is_neg = proto_neg;
  } else {
    a->no_flags = "libtorch_cpu exports no torch_is_conj / torch_is_neg, and the "
                  "prototype: " + proto_why;
  }
  Py_DECREF(torch);
  return a;
}

const Api* get_api() {
  const Api* a = g_api.load(std::memory_order_acquire);
  if (a) return a;
  // Another thread may resolve at the same time (resolve runs Python code): both
  // results are equal and the registration is idempotent; the first one published wins.
  const Api* mine = resolve(nullptr, true);
  if (!mine) return nullptr;
  if (g_api.compare_exchange_strong(a, mine, std::memory_order_acq_rel)) return mine;
  return a; // lost the race: ours is leaked, like every replaced Api
}

int fail(PyObject* type, const std::string& msg) {
  PyErr_SetString(type, msg.c_str());
  return -1;
}

// A stable-ABI call returned an error: torch's per-thread message, as BufferError.
int call_failed(const Api* a, const char* call) {
  if (PyErr_Occurred()) return -1; // Python code behind the call raised: keep that
  const char* w = a->what ? a->what() : nullptr;
  return fail(PyExc_BufferError, std::string(call) + " failed: " + (w ? w : "no message"));
}

// An owned handle, deleted on every return path of the scope that holds it.
struct OwnedHandle {
  decltype(&aoti_torch_delete_tensor_object) del;
  AtenTensorHandle h = nullptr;
  ~OwnedHandle() {
    if (h) del(h); // an error here cannot be reported; it never happens for a valid handle
  }
};

} // namespace

// What view() returns, for C callers. sizes and strides are copied, in elements;
// data includes the storage offset.
struct BorrowConsumerMeta {
  void* data;
  int64_t dim;
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxDims];
  int32_t dtype;        // c10::ScalarType code (aoti_torch_dtype_*())
  int32_t device_type;  // aoti_torch_device_type_*()
  int32_t device_index; // -1 for CPU
};

// Read obj's metadata into *m. Returns 0; -1 with a Python exception set; -2 when the
// calling thread does not hold the GIL (no attached thread state): then nothing was
// touched and no exception could be raised. obj is the caller's reference, kept alive.
extern "C" __attribute__((visibility("default"))) int borrow_consumer_read(
    PyObject* obj, BorrowConsumerMeta* m) {
  // 1. The GIL: the borrow and the owned shim require it, and so does raising.
  if (!PyGILState_Check()) return -2;
  const Api* a = get_api();
  if (!a) return -1;
  if (!a->route) return fail(PyExc_RuntimeError, a->why);
  // 2. The real type: PyObject_TypeCheck reads Py_TYPE, so an object claiming
  // __class__ = torch.Tensor fails (isinstance() would let it through).
  PyTypeObject* tp = Py_TYPE(obj);
  if (!PyObject_TypeCheck(obj, reinterpret_cast<PyTypeObject*>(a->tensor_type))) {
    return fail(PyExc_TypeError, std::string("expected a torch.Tensor, got ") + tp->tp_name);
  }
  // 3. Metadata that is plain C++ state: the borrow refuses any other tensor by itself
  // (a __torch_dispatch__ subclass, nested, functional, vmap-batched: their getters may
  // run Python, which may change or free the tensor between two getters); the owned
  // route asks shim_ext's helper the same question, in C++.
  if (a->owned) {
    int32_t layout = -1;
    if (int32_t custom = a->custom(obj, &layout)) {
      return fail(PyExc_BufferError, std::string("this ") + tp->tp_name + "'s metadata is not "
                  "plain C++ state (torch_borrow_custom_metadata: " + std::to_string(custom) +
                  "): its getters may run Python");
    }
  }
  // 4. Without torch_is_conj / torch_is_neg a lazy conj() or neg view would read as
  // plain values: refuse every tensor rather than guess.
  if (!a->is_conj) {
    return fail(PyExc_BufferError, "cannot read the conjugate / negative bits: " + a->no_flags);
  }
  // From here on nothing runs Python code: only C++ inside torch.
  AtenTensorHandle h = nullptr;
  OwnedHandle owned{a->del};
  if (a->borrow) {
    // BORROWED: aliases the at::Tensor inside obj. Nothing to delete.
    if (a->borrow(obj, &h)) return call_failed(a, "torch_tensor_borrow_from_pyobject");
  } else {
    // OWNED from here: a new heap at::Tensor, deleted by `owned` on every return below.
    if (a->owned(obj, &h)) return call_failed(a, "torch_tensor_from_pyobject");
    owned.h = h;
  }
  // 5. The layout first: a sparse tensor has no data pointer to ask for.
  int32_t layout;
  if (a->layout(h, &layout)) return call_failed(a, "aoti_torch_get_layout");
  if (layout != a->strided) {
    return fail(PyExc_BufferError, "only strided tensors have a pointer + strides "
                "description (call .to_dense() first)");
  }
  // 6. The seven getters (and the storage offset, for the check below). sizes and
  // strides point into the TensorImpl: copy them at once.
  int64_t offset, *p;
  if (a->data_ptr(h, &m->data) || a->storage_offset(h, &offset) || a->dim(h, &m->dim)) {
    return call_failed(a, "aoti_torch_get_data_ptr / _storage_offset / _dim");
  }
  if (m->dim > kMaxDims) return fail(PyExc_BufferError, "more dimensions than kMaxDims");
  if (a->sizes(h, &p)) return call_failed(a, "aoti_torch_get_sizes");
  for (int64_t i = 0; i < m->dim; ++i) m->sizes[i] = p[i];
  if (a->strides(h, &p)) return call_failed(a, "aoti_torch_get_strides");
  for (int64_t i = 0; i < m->dim; ++i) m->strides[i] = p[i];
  if (a->dtype(h, &m->dtype) || a->device_type(h, &m->device_type) ||
      a->device_index(h, &m->device_index)) {
    return call_failed(a, "aoti_torch_get_dtype / _device_type / _device_index");
  }
  // 7. The conj / neg bits: memory that holds unconjugated / unnegated values.
  bool conj = false, neg = false;
  if (a->is_conj(h, &conj) || a->is_neg(h, &neg)) return call_failed(a, "torch_is_conj / _neg");
  if (conj || neg) {
    return fail(PyExc_BufferError, conj ? "the conjugate bit is set: call .resolve_conj() first"
                                        : "the negative bit is set: call .resolve_neg() first");
  }
  // 8. A dtype with whole-byte elements and no scale / zero point.
  int8_t itemsize = m->dtype >= 0 && m->dtype < kCodes ? a->itemsize[m->dtype] : 0;
  if (itemsize == 0) {
    return fail(PyExc_BufferError, "dtype code " + std::to_string(m->dtype) +
                " is not one this consumer views (quantized, sub-byte or unknown)");
  }
  if (m->device_type == a->meta) return fail(PyExc_BufferError, "a meta tensor has no data");
  // 9. A storage that holds memory. The data pointer is the storage's base plus
  // offset * itemsize, and torch never checks the base: a freed storage
  // (untyped_storage().resize_(0)) or a placeholder one has a null base, and at a
  // non-zero offset the getter returns a small, plausible address. Fine only for a
  // tensor without elements (a zero size), which torch reports with pointer 0.
  auto ptr = reinterpret_cast<uintptr_t>(m->data);
  if (ptr == 0 || ptr - static_cast<uintptr_t>(offset) * itemsize == 0) {
    bool empty = false;
    for (int64_t i = 0; i < m->dim; ++i) empty = empty || m->sizes[i] == 0;
    if (!empty) {
      return fail(PyExc_BufferError, "the tensor has elements but its storage holds no "
                  "memory (freed, resized to zero, or a placeholder)");
    }
  }
  // 10. Elements that reach past the storage: shrinking a storage under a view
  // (untyped_storage().resize_(n)) leaves sizes and strides describing memory that
  // is gone, and every getter still reports them.
  int64_t nbytes;
  if (a->storage_size(h, &nbytes)) return call_failed(a, "aoti_torch_get_storage_size");
  if (outside_storage(m->dim, m->sizes, m->strides, offset, itemsize, nbytes)) {
    return fail(PyExc_BufferError, "the tensor's elements reach past its storage's " +
                std::to_string(nbytes) + " bytes");
  }
  return 0; // `owned` deletes an owned handle here; a borrowed one is simply dropped
}

namespace {

PyObject* view(PyObject*, PyObject* obj) {
  BorrowConsumerMeta m;
  if (borrow_consumer_read(obj, &m)) return nullptr; // METH_O: the GIL is held, never -2
  PyObject* sizes = PyTuple_New(m.dim);
  PyObject* strides = PyTuple_New(m.dim);
  for (int64_t i = 0; sizes && strides && i < m.dim; ++i) {
    PyTuple_SET_ITEM(sizes, i, PyLong_FromLongLong(m.sizes[i]));
    PyTuple_SET_ITEM(strides, i, PyLong_FromLongLong(m.strides[i]));
  }
  if (PyErr_Occurred()) {
    Py_XDECREF(sizes), Py_XDECREF(strides);
    return nullptr;
  }
  return Py_BuildValue("(NNNiii)", PyLong_FromVoidPtr(m.data), sizes, strides, m.dtype,
                       m.device_type, m.device_index);
}

PyObject* route(PyObject*, PyObject*) {
  const Api* a = get_api();
  if (!a) return nullptr;
  if (!a->route) Py_RETURN_NONE;
  return PyUnicode_FromString(a->route);
}

// Test hook: resolve again with one route only (or all), with or without the flags.
PyObject* resolve_again(PyObject* self, PyObject* args, PyObject* kwargs) {
  const char* only = nullptr;
  int flags = 1;
  static const char* kw[] = {"route", "flags", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|zp", const_cast<char**>(kw), &only, &flags)) {
    return nullptr;
  }
  const Api* a = resolve(only, flags);
  if (!a) return nullptr;
  g_api.store(a, std::memory_order_release); // the old one is leaked: never freed
  return route(self, nullptr);
}

PyMethodDef methods[] = {
    {"view", view, METH_O,
     "view(tensor) -> (data_ptr, sizes, strides, dtype code, device type code, device index)"},
    {"route", route, METH_NOARGS, "Where handles come from: 'libtorch', 'prototype', 'owned' or None."},
    {"_resolve", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(resolve_again)),
     METH_VARARGS | METH_KEYWORDS, "_resolve(route=None, flags=True) -> route() (tests only)"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "borrow_consumer",
                      "A stable-ABI consumer of torch_tensor_borrow_from_pyobject.", -1,
                      methods, nullptr, nullptr, nullptr, nullptr};

} // namespace

PyMODINIT_FUNC PyInit_borrow_consumer() {
  PyObject* m = PyModule_Create(&module);
#ifdef Py_GIL_DISABLED
  // No state but the published Api: safe without the GIL (concurrent mutation of a
  // tensor being viewed is the caller's to prevent, with or without a GIL).
  if (m) PyUnstable_Module_SetGIL(m, Py_MOD_GIL_NOT_USED);
#endif
  return m;
}
