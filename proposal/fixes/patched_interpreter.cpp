// The interpreter fix's own code: ConcretePyInterpreterVTable::incref / decref
// as the patch in proposal/patches/ writes them, compiled against torch 2.15's
// headers (never the bridge's; proposal/fixes/internal_fixes.cpp installs them).
//
// Generated at build time by proposal/fixes/patched_interpreter.py, from the patch
// applied to the base copy of torch/csrc/PyInterpreter.cpp, unedited:
// patched_interpreter.inc (the two methods cut out of the patched file) and
// torch/csrc/utils/attached_thread_state.h (the header the patch adds, whole).
// Around them, only what the rest of that file supplies: a class that declares
// the two methods (torch's ConcretePyInterpreterVTable derives from
// c10::impl::PyInterpreterVTable and has no data members; this one has neither
// base nor members, and its methods never read `this`), torch's
// pythoncapi_compat.h (Py_IsFinalizing before CPython 3.13, as main's includes
// bring it), and torch::detail::SafeGilScopedAcquire as #189128 defines it
// (safe_gil.h), which torch 2.15 lacks.
//
// The vtable slots get these methods' own addresses: a const member function
// that takes (PyObject*) is called, in the Itanium C++ ABI, as a function of
// (this, PyObject*), which is how torch's interpreter calls a slot. No wrapper
// and no counter runs on the fast path; the tests observe the paths through the
// guard's counters (slow path), the refcounts (fast path) and, with the GIL held
// elsewhere, whether a release waits for it.

#include <cstdint>
#include <cstring>
#include <exception>
#include <thread>
#include <type_traits>

#include <c10/core/impl/PyInterpreter.h>
#include <torch/csrc/python_headers.h>
#include <torch/csrc/utils/pythoncapi_compat.h>

#include <torch/csrc/utils/attached_thread_state.h> // generated: the patch's own header

#include "safe_gil.h"

// Main's series (incref / decref take pybind11::gil_scoped_acquire, as v2.15.0's do):
// patched_interpreter.inc then names this class instead, so the test build counts
// that slow path's guards in safe_gil.h's counters (constructed; acquired, which
// pybind11's guard always is), as #189128's class is counted. Unused by the
// #189128 series, which the benchmarks build.
namespace pybind11 {
class counted_gil_scoped_acquire : public gil_scoped_acquire {
 public:
  counted_gil_scoped_acquire() {
    using safe_gil_counts::counts;
    counts.constructed.fetch_add(1, std::memory_order_relaxed);
    counts.acquired.fetch_add(1, std::memory_order_relaxed);
  }
};
} // namespace pybind11

namespace patched {

// The patched file puts the class and the helper in an anonymous namespace:
// internal linkage, so the compiler may inline the helper, as in
// libtorch_python.
namespace {
struct ConcretePyInterpreterVTable {
  void incref(PyObject* pyobj) const;
  void decref(PyObject* pyobj) const;
};
} // namespace

// torch's methods have these signatures; a torch whose header changes them
// must not get a silently mismatched slot.
static_assert(std::is_same_v<
              decltype(&c10::impl::PyInterpreterVTable::incref),
              void (c10::impl::PyInterpreterVTable::*)(PyObject*) const>);
static_assert(std::is_same_v<
              decltype(&c10::impl::PyInterpreterVTable::decref),
              void (c10::impl::PyInterpreterVTable::*)(PyObject*) const>);

namespace {
#include "patched_interpreter.inc"
} // namespace

// Itanium C++ ABI: a pointer to a non-virtual member function is {function
// address, this-adjustment 0}.
template <class MemberPtr>
void* address_of(MemberPtr member) {
  struct Representation {
    std::uintptr_t ptr;
    std::ptrdiff_t adj;
  };
  static_assert(sizeof(MemberPtr) == sizeof(Representation));
  Representation r;
  std::memcpy(&r, &member, sizeof r);
  if ((r.ptr & 1) != 0 || r.adj != 0) {
    return nullptr; // virtual, or adjusted: not a plain function address
  }
  return reinterpret_cast<void*>(r.ptr);
}

} // namespace patched

// For internal_fixes.cpp (same module, hidden): the two slot addresses, null
// when the ABI is not the one assumed (install then refuses).
void* patched_interpreter_incref_slot() {
  return patched::address_of(&patched::ConcretePyInterpreterVTable::incref);
}
void* patched_interpreter_decref_slot() {
  return patched::address_of(&patched::ConcretePyInterpreterVTable::decref);
}
const char* patched_interpreter_patch() {
  return PATCHED_INTERPRETER_PATCH;
}

extern "C" {

// The guard's counters (safe_gil.h): constructed, converted to true.
void fixes_guard_counts(std::uint64_t* out) {
  auto& c = safe_gil_counts::counts;
  out[0] = c.constructed.load(std::memory_order_relaxed);
  out[1] = c.acquired.load(std::memory_order_relaxed);
}

// One guard on the calling thread, on its own (#189128's class, tested alone). Bits:
// 1 the guard converts to true; 2 PyGILState_Check() inside its scope; 4
// PyGILState_Check() after it; 8 this thread has a thread state after it.
// attach != 0 takes the GIL first (PyGILState_Ensure) and gives it back after.
int fixes_guard_probe_here(int attach) {
  PyGILState_STATE g{};
  if (attach) {
    g = PyGILState_Ensure();
  }
  int bits = 0;
  {
    torch::detail::SafeGilScopedAcquire gil;
    bits |= gil ? 1 : 0;
    bits |= (gil && PyGILState_Check()) ? 2 : 0;
  }
  bits |= PyGILState_Check() ? 4 : 0;
  bits |= PyGILState_GetThisThreadState() ? 8 : 0;
  if (attach) {
    PyGILState_Release(g);
  }
  return bits;
}

// The same on a new native thread that never had a thread state; -1 if no
// thread could start.
int fixes_guard_probe_on_foreign_thread(void) {
  int bits = -1;
  try {
    std::thread worker([&] { bits = fixes_guard_probe_here(0); });
    worker.join();
  } catch (const std::exception&) { // std::system_error
    return -1;
  }
  return bits;
}

} // extern "C"
