// Two fixes a PyTorch maintainer could make inside torch, with no new ABI, run
// for real so the benchmarks can time torch's own functions with and without
// them and make patch-check can run the patches' tests against them
// (proposal/fixes/internal_fixes.py wraps this file; never used by the bridge).
//
// 1. The interpreter fix. Every at::Tensor copy of a tensor whose TensorImpl
//    has a PyObject increfs that PyObject on the refcount's 1 -> 2 step and
//    decrefs it on 2 -> 1 (c10/util/intrusive_ptr.h, TensorImpl::
//    incref_pyobject / decref_pyobject), through the global
//    c10::impl::PyInterpreter's vtable into ConcretePyInterpreterVTable::
//    incref / decref (torch/csrc/PyInterpreter.cpp), which acquire the GIL
//    even when the calling thread already has an attached thread state.
//    fixes_interpreter_install(code) points the interpreter's `vtable_` at a
//    copy of torch's own vtable in which those two slots are replaced by one of:
//    - kPatch (0, the default): the patch's own incref / decref
//      (proposal/patches/, the one that changes PyInterpreter.cpp), cut out of
//      the patched file at build time and compiled here against a working
//      main's torch::detail::SafeGilScopedAcquire (patched_interpreter.cpp,
//      safe_gil.h: the class as pytorch/pytorch 02d90f32 defines it): attached
//      and not finalizing -> Py_INCREF / Py_DECREF; otherwise the guard;
//    - kEmulation (1): fixed_incref / fixed_decref below, a hand-written copy of
//      the same test that forwards the slow path to torch 2.15's own method
//      (pybind11::gil_scoped_acquire) and counts both paths.
//    Every other slot is torch's own function pointer, copied, so every other
//    method behaves exactly as torch's. fixes_interpreter_uninstall() puts
//    torch's vtable back. The copy and the object that points at it are
//    static: a call that read the pointer before an uninstall still lands in
//    valid code.
//
//    ABI assumptions (x86-64 Linux, the Itanium C++ ABI that gcc and clang use
//    there; on AArch64 a member pointer keeps its virtual bit in the
//    adjustment, so slot_of() answers -1 and install refuses, failing safe): an object of a polymorphic class without data members is one
//    pointer to its vtable's first slot, preceded by offset-to-top and the
//    type_info pointer; a pointer to a virtual member function holds
//    1 + the slot's byte offset; a member function receives `this` as its
//    first argument. The slot count and the two slots' indices come from the
//    installed header at compile time (SlotCount below), so they follow the
//    torch this file is compiled against. ConcretePyInterpreterVTable has no
//    data members (torch/csrc/PyInterpreter.cpp), so its methods never read
//    through `this` beyond the vtable pointer.
//
// 2. DLPack without the copy. torch's dltensor_from_py_object_no_sync
//    (TorchDLPackExchangeAPI::DLTensorFromPyObjectNoSync, libtorch_python)
//    makes an owning at::Tensor copy (pybind11's caster), fills the DLTensor
//    with at::toDLPackNonOwning and destroys the copy. The copy buys nothing:
//    the DLTensor points into the TensorImpl that the caller's object keeps
//    alive. fixes_dltensor_borrowed<check>() is that function with a
//    real-type check and a borrowed reference (THPVariable_Unpack) instead,
//    with or without an attached-thread check. fixes_dlpack_api() hands out a
//    copy of torch's DLPackExchangeAPI whose dltensor_from_py_object_no_sync
//    slot is the prototype, so a consumer's loop calls it exactly as it calls
//    torch's.
//    fixes_dlpack_api_patched() does the same with the DLPack series' own
//    function (patched_dlpack.cpp: cut out of the patched Module.cpp), which
//    the "fixed DLPack" routes run; the prototype stays as a labelled row.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <thread>
#include <type_traits>

#include <ATen/DLConvertor.h>
#include <ATen/dlpack.h>
#include <vector>

#include <c10/core/impl/PyInterpreter.h>
#include <c10/core/impl/PyInterpreterHooks.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/python_headers.h>

#include "safe_gil.h" // #189128's guard, probed across finalization
#include <torch_borrow/thread_state.h> // the one attached-thread test

// patched_interpreter.cpp: the patch's own incref / decref (null when the
// member-pointer layout is not the Itanium ABI's).
void* patched_interpreter_incref_slot();
void* patched_interpreter_decref_slot();
const char* patched_interpreter_patch();
extern "C" void fixes_guard_counts(std::uint64_t* out);
// patched_dlpack.cpp: the DLPack series' own dltensor_from_py_object_no_sync
// (TorchConstDLPackExchangeAPI's when read_only != 0), cut out of the patched
// torch/csrc/Module.cpp at build time.
extern "C" void* patched_dlpack_slot(int read_only);

namespace {

using c10::impl::PyInterpreterVTable;

// Which code fills the two slots (fixes_interpreter_install's argument).
constexpr int kPatch = 0;
constexpr int kEmulation = 1;
// A negative control, never a route: the emulation with PyGILState_Check() as
// its test (0001's test before CPython 3.12 in its first version, and 2.15's
// is_tensor_pyobject's), which answers yes on every thread once a
// subinterpreter exists. The tests show it touching refcounts without the GIL.
constexpr int kGilStateCheck = 2;
int installed_code = -1; // while installed: kPatch, kEmulation or kGilStateCheck

char last_error[512];

void set_error(const char* what) {
  std::snprintf(last_error, sizeof last_error, "%s", what);
}

// --- the interpreter fix -------------------------------------------------------

// Itanium C++ ABI: a pointer to a virtual member function is {1 + byte offset
// of its slot, this-adjustment}.
template <class MemberPtr>
std::ptrdiff_t slot_of(MemberPtr member) {
  struct Representation {
    std::uintptr_t ptr;
    std::ptrdiff_t adj;
  };
  static_assert(sizeof(MemberPtr) == sizeof(Representation));
  Representation r;
  std::memcpy(&r, &member, sizeof r);
  if ((r.ptr & 1) == 0 || r.adj != 0) {
    return -1; // not a virtual function of the primary vtable
  }
  return static_cast<std::ptrdiff_t>((r.ptr - 1) / sizeof(void*));
}

// A virtual function appended to PyInterpreterVTable takes the slot after its
// last one: its index is the number of slots the installed header declares
// (the two destructor entries included). Never instantiated.
struct SlotCount : PyInterpreterVTable {
  virtual void one_past_the_last_slot() const = 0;
};

constexpr std::ptrdiff_t kMaxSlots = 256;
// [offset-to-top, type_info*, slot 0, slot 1, ...]: a copy of torch's vtable.
void* fixed_table[2 + kMaxSlots];
// The object the interpreter points at while the fix is installed: its only
// member is the vtable pointer, as for torch's stateless
// ConcretePyInterpreterVTable.
struct {
  void** vptr;
} fixed_object;
const PyInterpreterVTable* torch_vtable = nullptr; // torch's own, while installed
std::atomic<std::uint64_t> slow_calls{0}; // calls that took torch's acquisition
// Calls that took the fast path. A plain counter: the fast path runs with an
// attached thread state, which on a GIL build means holding the GIL (one
// instruction; not exact on a free-threaded build, where it is not used).
std::uint64_t fast_calls = 0;

// The replacements below have these methods' signatures (plus `this`); a torch
// whose header changes them must not get a silently mismatched slot.
static_assert(std::is_same_v<
              decltype(&PyInterpreterVTable::incref),
              void (PyInterpreterVTable::*)(PyObject*) const>);
static_assert(std::is_same_v<
              decltype(&PyInterpreterVTable::decref),
              void (PyInterpreterVTable::*)(PyObject*) const>);

const PyInterpreterVTable* fixed_vtable() {
  return reinterpret_cast<const PyInterpreterVTable*>(&fixed_object);
}

#if PY_VERSION_HEX >= 0x030D0000
inline bool finalizing() {
  return Py_IsFinalizing();
}
#else
inline bool finalizing() {
  return _Py_IsFinalizing();
}
#endif

// The emulation's attached-thread test is the patch's: the one helper of
// torch_borrow/thread_state.h (THPUtils_hasAttachedThreadState in the patch).
inline bool attached_thread_state() {
  return torch_borrow_thread_is_attached() != 0;
}

// The fixed methods, called as members (`this` first). `self` is the fixed
// object; torch's own method is called on torch's own object. The test is
// the interpreter patch's (proposal/patches/): attached and not finalizing, where the
// existing path's guard decides as before. Attached is the template argument.
template <bool (*Attached)()>
void fixed_incref(const PyInterpreterVTable* /*self*/, PyObject* pyobj) {
  if (!Py_IsInitialized()) {
    return; // as torch's: leak rather than touch a finalized interpreter
  }
  if (Attached() && !finalizing()) {
    ++fast_calls;
    Py_INCREF(pyobj);
    return;
  }
  slow_calls.fetch_add(1, std::memory_order_relaxed);
  torch_vtable->incref(pyobj);
}

template <bool (*Attached)()>
void fixed_decref(const PyInterpreterVTable* /*self*/, PyObject* pyobj) {
  if (!Py_IsInitialized()) {
    return;
  }
  if (Attached() && !finalizing()) {
    ++fast_calls;
    Py_DECREF(pyobj);
    return;
  }
  slow_calls.fetch_add(1, std::memory_order_relaxed);
  torch_vtable->decref(pyobj);
}

bool gil_state_check() {
  return PyGILState_Check() != 0;
}

// --- DLPack without the copy ---------------------------------------------------

// The message torch's exchange functions leave for a non-tensor object.
void raise_not_a_tensor(PyObject* obj) {
  PyErr_Format(
      PyExc_TypeError,
      "dltensor_from_py_object_no_sync: expected torch.Tensor, got %s",
      Py_TYPE(obj)->tp_name);
}

template <bool kCheckAttached>
int dltensor_borrowed(void* py_obj, DLTensor* out) {
  if (kCheckAttached && !attached_thread_state()) {
    return -1; // no thread state: no Python exception can be set
  }
  PyObject* obj = static_cast<PyObject*>(py_obj);
  // The real type, not THPVariable_Check (whose isinstance() fallback an
  // object passes by claiming a __class__): only a real THPVariable has the
  // layout THPVariable_Unpack reads.
  if (C10_UNLIKELY(
          THPVariableClass == nullptr ||
          !PyObject_TypeCheck(
              obj, reinterpret_cast<PyTypeObject*>(THPVariableClass)))) {
    raise_not_a_tensor(obj);
    return -1;
  }
  try {
    // Borrowed: the caller's object keeps this tensor, and the TensorImpl the
    // DLTensor points into, alive. No copy, no refcount traffic.
    const at::Tensor& tensor = THPVariable_Unpack(obj);
    at::toDLPackNonOwning(tensor, out);
    return 0;
  } catch (const std::exception& e) {
    // As torch's: its caller sees a RuntimeError carrying c10's message.
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return -1;
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "a non-standard C++ exception");
    return -1;
  }
}

DLPackExchangeAPI api_copies[2]; // [0]: with the attached check, [1]: without
DLPackExchangeAPI patched_api_copies[2]; // the DLPack series' code: [read_only]

} // namespace

extern "C" {

const char* fixes_last_error(void) {
  return last_error;
}

// The layout facts the fix depends on, from the installed header:
// out[0] = slot count, out[1] = incref's slot, out[2] = decref's slot.
void fixes_interpreter_layout(std::int64_t* out) {
  out[0] = slot_of(&SlotCount::one_past_the_last_slot);
  out[1] = slot_of(&PyInterpreterVTable::incref);
  out[2] = slot_of(&PyInterpreterVTable::decref);
}

// 0: installed; 1: already installed; -1: error (fixes_last_error says why).
// Takes the GIL itself (cffi calls arrive without it), so no Python thread
// copies a tensor while the table is filled; `vtable_` is then published with
// a release store (torch writes it plainly, PyInterpreter::disarm). A native
// thread copying tensors concurrently is the caller's to rule out.
static int install_with_gil(int code) {
  void* incref_slot = nullptr;
  void* decref_slot = nullptr;
  if (code == kPatch) {
    incref_slot = patched_interpreter_incref_slot();
    decref_slot = patched_interpreter_decref_slot();
  } else if (code == kEmulation) {
    incref_slot = reinterpret_cast<void*>(&fixed_incref<attached_thread_state>);
    decref_slot = reinterpret_cast<void*>(&fixed_decref<attached_thread_state>);
  } else if (code == kGilStateCheck) {
    incref_slot = reinterpret_cast<void*>(&fixed_incref<gil_state_check>);
    decref_slot = reinterpret_cast<void*>(&fixed_decref<gil_state_check>);
  } else {
    set_error("code must be 0 (the patch's), 1 (the emulation's) or 2 (PyGILState_Check)");
    return -1;
  }
  if (incref_slot == nullptr || decref_slot == nullptr) {
    set_error("the patch's incref / decref have no plain address (not the Itanium C++ ABI?)");
    return -1;
  }
  c10::impl::PyInterpreter* interp = c10::impl::getGlobalPyInterpreter();
  if (interp == nullptr || interp->vtable_ == nullptr) {
    set_error("no global PyInterpreter: import torch first");
    return -1;
  }
  const PyInterpreterVTable* current = interp->vtable_;
  if (current == fixed_vtable()) {
    return 1;
  }
  const std::ptrdiff_t n = slot_of(&SlotCount::one_past_the_last_slot);
  const std::ptrdiff_t inc = slot_of(&PyInterpreterVTable::incref);
  const std::ptrdiff_t dec = slot_of(&PyInterpreterVTable::decref);
  if (n <= 2 || n > kMaxSlots || inc < 0 || dec < 0 || inc >= n || dec >= n) {
    set_error("unexpected PyInterpreterVTable layout (not the Itanium C++ ABI?)");
    return -1;
  }
  void* const* torch_vptr = *reinterpret_cast<void* const* const*>(current);
  std::memcpy(fixed_table, torch_vptr - 2, sizeof(void*) * (2 + n));
  fixed_table[2 + inc] = incref_slot;
  fixed_table[2 + dec] = decref_slot;
  fixed_object.vptr = &fixed_table[2];
  torch_vtable = current;
  installed_code = code;
  __atomic_store_n(&interp->vtable_, fixed_vtable(), __ATOMIC_RELEASE);
  return 0;
}

int fixes_interpreter_install(int code) {
  PyGILState_STATE g = PyGILState_Ensure();
  int rc = install_with_gil(code);
  PyGILState_Release(g);
  return rc;
}

// 0: torch's vtable restored; 1: the fix was not installed; -1: the
// interpreter now points at a vtable neither ours nor torch's (left alone).
// With the GIL, as install.
static int uninstall_with_gil() {
  c10::impl::PyInterpreter* interp = c10::impl::getGlobalPyInterpreter();
  if (interp == nullptr) {
    set_error("no global PyInterpreter");
    return -1;
  }
  if (interp->vtable_ != fixed_vtable()) {
    if (torch_vtable == nullptr || interp->vtable_ == torch_vtable) {
      return 1;
    }
    set_error("the PyInterpreter's vtable was replaced by someone else");
    return -1;
  }
  __atomic_store_n(&interp->vtable_, torch_vtable, __ATOMIC_RELEASE);
  return 0;
}

int fixes_interpreter_uninstall(void) {
  PyGILState_STATE g = PyGILState_Ensure();
  int rc = uninstall_with_gil();
  PyGILState_Release(g);
  return rc;
}

// -1: not installed; else the code installed (kPatch, kEmulation, kGilStateCheck).
int fixes_interpreter_installed(void) {
  c10::impl::PyInterpreter* interp = c10::impl::getGlobalPyInterpreter();
  return interp != nullptr && interp->vtable_ == fixed_vtable() ? installed_code : -1;
}

// The file name of the patch whose incref / decref kPatch installs.
const char* fixes_patch_name(void) {
  return patched_interpreter_patch();
}

// The address the interpreter's vtable_ holds now (torch's or ours).
std::uintptr_t fixes_interpreter_vtable(void) {
  c10::impl::PyInterpreter* interp = c10::impl::getGlobalPyInterpreter();
  return interp ? reinterpret_cast<std::uintptr_t>(interp->vtable_) : 0;
}

void fixes_interpreter_counts(std::uint64_t* out) {
  out[0] = fast_calls;
  out[1] = slow_calls.load(std::memory_order_relaxed);
}

// Copy the at::Tensor behind `handle` (an at::Tensor*, borrowed) n times on a
// new native thread that never attaches a Python thread state: each copy's
// 1 -> 2 and 2 -> 1 steps reach the interpreter from a foreign thread. Called
// through cffi, which releases the GIL, so torch's acquisition can succeed.
// 0 on success, -1 on error.
int fixes_copy_on_foreign_thread(std::uintptr_t handle, std::int64_t n) {
  const at::Tensor* tensor = reinterpret_cast<const at::Tensor*>(handle);
  if (tensor == nullptr) {
    set_error("null handle");
    return -1;
  }
  int rc = 0;
  try {
    std::thread worker([&] {
      try {
        for (std::int64_t i = 0; i < n; i++) {
          at::Tensor copy = *tensor; // incref_pyobject on 1 -> 2
          if (!copy.defined()) {
            rc = -1;
          }
        } // decref_pyobject on 2 -> 1
      } catch (const std::exception& e) {
        set_error(e.what());
        rc = -1;
      } catch (...) {
        set_error("a non-standard exception");
        rc = -1;
      }
    });
    worker.join();
  } catch (const std::exception& e) { // std::system_error: no thread could start
    set_error(e.what());
    return -1;
  }
  return rc;
}

// Copy the at::Tensor behind `handle` (borrowed, of the Python object `obj`) n
// times on the calling thread: attached (attach != 0: PyGILState_Ensure first,
// as a C extension called from Python holds the GIL) or as called (cffi
// releases the GIL: a Python thread with a detached thread state). While the
// first copy is alive and the thread attached, *refcnt_during gets obj's
// refcount (-1 when detached: it is not read without the GIL). 0 on success.
int fixes_copy_here(std::uintptr_t handle, std::uintptr_t obj, std::int64_t n, int attach,
                    std::int64_t* refcnt_during) {
  const at::Tensor* tensor = reinterpret_cast<const at::Tensor*>(handle);
  if (tensor == nullptr || obj == 0) {
    set_error("null handle or object");
    return -1;
  }
  PyGILState_STATE g{};
  if (attach) {
    g = PyGILState_Ensure();
  }
  *refcnt_during = -1;
  int rc = 0;
  try {
    for (std::int64_t i = 0; i < n; i++) {
      at::Tensor copy = *tensor; // incref_pyobject on 1 -> 2
      if (i == 0 && attach) {
        *refcnt_during = Py_REFCNT(reinterpret_cast<PyObject*>(obj));
      }
      if (!copy.defined()) {
        rc = -1;
      }
    } // decref_pyobject on 2 -> 1
  } catch (const std::exception& e) {
    set_error(e.what());
    rc = -1;
  }
  if (attach) {
    PyGILState_Release(g);
  }
  return rc;
}

// Copy the at::Tensor behind `handle` once on a new thread (1 -> 2 -> 1: incref
// and decref run there) while this thread holds the GIL for wait_ms; 1 if the
// copy finished meanwhile (it touched the refcount without the GIL), 0 if it
// waited, -1 on error. kind 0: a native thread Python never saw; kind 1: a
// thread with a Python thread state, detached (PyEval_SaveThread). What
// test/test_pyinterpreter_threads.py (the interpreter fix's own test) does,
// here with no extension build of its own.
int fixes_copy_finished_while_gil_held(std::uintptr_t handle, int kind, int wait_ms) {
  const at::Tensor* tensor = reinterpret_cast<const at::Tensor*>(handle);
  if (tensor == nullptr || (kind != 0 && kind != 1)) {
    set_error("null handle, or kind not 0 (native) or 1 (detached)");
    return -1;
  }
  std::atomic<int> stage{0};
  int finished = -1;
  try {
    std::thread worker([&] {
      PyGILState_STATE g{};
      PyThreadState* detached = nullptr;
      if (kind == 1) {
        g = PyGILState_Ensure();
        detached = PyEval_SaveThread();
      }
      stage.store(1);
      while (stage.load() != 2) {
        std::this_thread::yield();
      }
      {
        at::Tensor copy = *tensor; // incref, then decref at the scope's end
      }
      stage.store(3);
      if (kind == 1) {
        PyEval_RestoreThread(detached);
        PyGILState_Release(g);
      }
    });
    while (stage.load() != 1) { // cffi called without the GIL: the worker takes it
      std::this_thread::yield();
    }
    PyGILState_STATE g = PyGILState_Ensure(); // held from here until the join
    stage.store(2);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
    while (stage.load() != 3 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    finished = stage.load() == 3 ? 1 : 0;
    PyGILState_Release(g);
    worker.join();
  } catch (const std::exception& e) { // std::system_error: no thread could start
    set_error(e.what());
    return -1;
  }
  return finished;
}

// --- copies alive across interpreter finalization --------------------------
// For the child process of tests/bench/test_internal_fixes.py: copies held in C++,
// released (a) during finalization, by fixes_release_held() called from a
// Python object's __del__ when the interpreter clears __main__, or (b) after
// it, by an atexit handler (exit() runs it once Py_FinalizeEx has returned).
// Each release reports to stderr what the interpreter fix saw, as one line.
// CPython 3.11-3.13 (Py_FinalizeEx) mark the runtime finalizing and not
// initialized in one step, before they clear the modules: both releases find
// Py_IsInitialized() false.
std::vector<at::Tensor> held[2]; // [0]: released in finalization, [1]: at exit
std::vector<PyObject*> held_objects; // the objects of held[0], for their refcounts

void report_guard(const char* when, long long refcnt_before, long long refcnt_after) {
  std::uint64_t c[2];
  fixes_guard_counts(c);
  std::fprintf(stderr,
               "%s: initialized=%d finalizing=%d refcnt_before=%lld refcnt_after=%lld "
               "guard_constructed=%llu guard_acquired=%llu\n",
               when, Py_IsInitialized(), int(Py_IsFinalizing()), // a runtime flag: safe to read
               refcnt_before, refcnt_after, (unsigned long long)c[0],
               (unsigned long long)c[1]);
  std::fflush(stderr);
}

// One guard on its own, on the finalizing thread: #189128's class acquires (a
// nested acquisition: this thread is attached) and disarms, so it is true.
// Never probed after finalization: #189128's guard has no Py_IsInitialized() test
// of its own (its callers make it), and a thread state made for a finalized
// interpreter is not to be had.
void report_probe(const char* when) {
  bool ok;
  {
    torch::detail::SafeGilScopedAcquire gil;
    ok = static_cast<bool>(gil);
  }
  std::fprintf(stderr, "%s: guard_true=%d\n", when, int(ok));
  std::fflush(stderr);
}

void release_at_exit() {
  report_guard("at-exit-before", -1, -1);
  held[1].clear(); // decref_pyobject after finalization: the patch leaks
  report_guard("at-exit-after", -1, -1);
}

// Hold one copy of the tensor behind `handle` (its Python object `obj`) until
// finalization (which = 0) or exit (which = 1). With the GIL, as a C
// extension holds it.
int fixes_hold(std::uintptr_t handle, std::uintptr_t obj, int which) {
  static bool registered = false;
  PyGILState_STATE g = PyGILState_Ensure();
  held[which ? 1 : 0].push_back(*reinterpret_cast<const at::Tensor*>(handle));
  if (!which) {
    held_objects.push_back(reinterpret_cast<PyObject*>(obj));
  }
  if (which && !registered) {
    registered = std::atexit(release_at_exit) == 0;
  }
  PyGILState_Release(g);
  return which && !registered ? -1 : 0;
}

// Release held[0] on this (attached) thread and report: called from __del__
// while the interpreter finalizes.
void fixes_release_held(void) {
  PyGILState_STATE g = PyGILState_Ensure();
  long long before = 0, after = 0;
  for (PyObject* o : held_objects) {
    before += Py_REFCNT(o);
  }
  report_guard("finalizing-before", before, -1);
  held[0].clear(); // decref_pyobject on each 2 -> 1
  for (PyObject* o : held_objects) {
    after += Py_REFCNT(o); // leaked (refused) or not, each object is still alive
  }
  report_guard("finalizing-after", before, after);
  report_probe("finalizing-probe");
  PyGILState_Release(g);
}

// A copy of torch's DLPackExchangeAPI (at `torch_api`) whose
// dltensor_from_py_object_no_sync is the borrowed prototype, with
// (check_attached != 0) or without the attached-thread check. The copy is
// static and keeps torch's other slots.
std::uintptr_t fixes_dlpack_api(std::uintptr_t torch_api, int check_attached) {
  const auto* api = reinterpret_cast<const DLPackExchangeAPI*>(torch_api);
  if (api == nullptr) {
    set_error("null DLPackExchangeAPI");
    return 0;
  }
  DLPackExchangeAPI& copy = api_copies[check_attached ? 0 : 1];
  copy = *api;
  copy.header.prev_api = nullptr;
  copy.dltensor_from_py_object_no_sync =
      check_attached ? &dltensor_borrowed<true> : &dltensor_borrowed<false>;
  return reinterpret_cast<std::uintptr_t>(&copy);
}

// A copy of one of torch's DLPackExchangeAPI tables (at `torch_api`: the
// writable one, or with read_only != 0 the read-only one) whose
// dltensor_from_py_object_no_sync is the DLPack series' own function
// (patched_dlpack.cpp: TorchDLPackExchangeAPI's or TorchConstDLPackExchangeAPI's,
// as the patches write them). Every other slot is torch's. The copy is static.
std::uintptr_t fixes_dlpack_api_patched(std::uintptr_t torch_api, int read_only) {
  const auto* api = reinterpret_cast<const DLPackExchangeAPI*>(torch_api);
  if (api == nullptr) {
    set_error("null DLPackExchangeAPI");
    return 0;
  }
  DLPackExchangeAPI& copy = patched_api_copies[read_only ? 1 : 0];
  copy = *api;
  copy.header.prev_api = nullptr;
  copy.dltensor_from_py_object_no_sync =
      reinterpret_cast<DLPackDLTensorFromPyObjectNoSync>(
          patched_dlpack_slot(read_only));
  return reinterpret_cast<std::uintptr_t>(&copy);
}

// One call of `api`'s dltensor_from_py_object_no_sync on `obj`, GIL held, for
// the equality tests: 0 and *out filled, or -1 with the Python exception's
// text in fixes_last_error (and the exception cleared).
int fixes_dltensor_once(std::uintptr_t api_addr, std::uintptr_t obj, DLTensor* out) {
  const auto* api = reinterpret_cast<const DLPackExchangeAPI*>(api_addr);
  PyGILState_STATE g = PyGILState_Ensure();
  int rc = api->dltensor_from_py_object_no_sync(reinterpret_cast<void*>(obj), out);
  if (rc != 0) {
    PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
    PyErr_Fetch(&type, &value, &tb);
    PyObject* text = value ? PyObject_Str(value) : nullptr;
    const char* msg = text ? PyUnicode_AsUTF8(text) : nullptr;
    std::snprintf(
        last_error,
        sizeof last_error,
        "%s: %s",
        type ? reinterpret_cast<PyTypeObject*>(type)->tp_name : "no exception",
        msg ? msg : "");
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_Clear();
  }
  PyGILState_Release(g);
  return rc;
}

} // extern "C"
