#pragma once
// A working stand-in for torch::detail::SafeGilScopedAcquire, the GIL guard that
// PyTorch's main branch uses in torch/csrc/PyInterpreter.cpp (stored copy read at
// pytorch/pytorch 02d90f320cf11bb96f3ae2165cb9e092f4b6f626: `SafeGilScopedAcquire
// gil; if (!gil) return;` in incref, decref, try_incref and refcnt) and that torch
// 2.15's headers lack. Its definition is not among the stored sources read for this
// project; what it does is taken from the pull request that adds it,
// pytorch/pytorch#189128 ("Gil acquire bool conversion"): it wraps
// pybind11::gil_scoped_acquire, catches what that constructor throws, reports
// success through an explicit bool conversion, refuses when Python is not
// initialized or is finalizing, and checks Py_IsFinalizing() both before and after
// acquiring, disarming the pybind11 guard if finalization began meanwhile so that
// its destructor does not call PyThreadState_DeleteCurrent. Behaviour, per state of
// the calling thread:
//   attached (holds the GIL): acquires (pybind11 nests: a counter, no lock), true;
//   detached, with a thread state: takes the GIL, true; gives it back on exit;
//   native thread Python never saw: a new thread state, the GIL, true; both gone
//     on exit;
//   Py_IsFinalizing() or !Py_IsInitialized(): touches nothing, false (the caller
//     leaks the reference rather than touch a dying interpreter).
// Benchmark-only (bench/native/patched_interpreter.cpp compiles the patch's incref /
// decref against it); tests/test_internal_fixes.py tests it on its own.
//
// The hooks below count what the guard did, so the tests can tell the patch's fast
// path (no guard constructed) from its slow path (a guard constructed), per state.

#include <atomic>
#include <cstdint>
#include <optional>

#include <pybind11/pybind11.h> // gil_scoped_acquire (gil.h alone leaves a cast<> undefined)
#include <torch/csrc/python_headers.h>
#include <torch/csrc/utils/pythoncapi_compat.h>

namespace safe_gil_stand_in {
// Counters, relaxed: they order nothing, they only count.
struct Counts {
  std::atomic<std::uint64_t> constructed{0}; // every guard
  std::atomic<std::uint64_t> acquired{0}; // true: the GIL was held in its scope
  std::atomic<std::uint64_t> refused_finalizing{0}; // false: finalizing / not initialized
  std::atomic<std::uint64_t> refused_exception{0}; // false: gil_scoped_acquire threw
};
inline Counts counts;

inline void bump(std::atomic<std::uint64_t>& c) {
  c.fetch_add(1, std::memory_order_relaxed);
}

inline bool finalizing_or_gone() {
  return !Py_IsInitialized() || Py_IsFinalizing();
}
} // namespace safe_gil_stand_in

namespace torch::detail {

class SafeGilScopedAcquire {
 public:
  SafeGilScopedAcquire() noexcept {
    using namespace safe_gil_stand_in;
    bump(counts.constructed);
    if (finalizing_or_gone()) {
      bump(counts.refused_finalizing);
      return;
    }
    try {
      gil_.emplace();
    } catch (...) { // e.g. no new thread state could be made
      bump(counts.refused_exception);
      return;
    }
    if (Py_IsFinalizing()) {
      // Finalization began while this thread waited: keep the state pybind11
      // made, but never let its destructor delete it (not allowed once
      // finalizing).
      gil_->disarm();
      bump(counts.refused_finalizing);
      return;
    }
    acquired_ = true;
    bump(counts.acquired);
  }
  ~SafeGilScopedAcquire() = default;
  SafeGilScopedAcquire(const SafeGilScopedAcquire&) = delete;
  SafeGilScopedAcquire& operator=(const SafeGilScopedAcquire&) = delete;
  SafeGilScopedAcquire(SafeGilScopedAcquire&&) = delete;
  SafeGilScopedAcquire& operator=(SafeGilScopedAcquire&&) = delete;

  explicit operator bool() const noexcept {
    return acquired_;
  }

 private:
  std::optional<pybind11::gil_scoped_acquire> gil_;
  bool acquired_ = false;
};

} // namespace torch::detail
