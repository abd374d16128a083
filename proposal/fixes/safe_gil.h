#pragma once
// torch::detail::SafeGilScopedAcquire as pytorch/pytorch#189128 defines it, for
// the interpreter fix's own incref / decref (patched_interpreter.cpp), which use
// it and which torch 2.15's headers cannot compile alone: 2.15 has no such class.
//
// The class is #189128's, verbatim: proposal/third_party/pytorch/excerpts/
// Exceptions.h.SafeGilScopedAcquire, cut from torch/csrc/Exceptions.h at
// pytorch/pytorch 02d90f320cf11bb96f3ae2165cb9e092f4b6f626 (BASE.toml's
// [[excerpt]] row checks its bytes). It wraps std::optional<pybind11::
// gil_scoped_acquire>; a constructor that throws is logged and the guard is
// false; once acquired, it disarm()s when Py_IsFinalizing(), so its destructor
// does not delete the thread state, and stays true. It has no finalization
// refusal of its own: the callers in PyInterpreter.cpp test Py_IsInitialized()
// first.
//
// The name the patch uses, torch::detail::SafeGilScopedAcquire, is a class
// derived from #189128's that only counts (constructed, converts to true), so the
// tests can tell the fast path (no guard) from the slow path (a guard) and see
// what the guard decided; it changes nothing of what #189128's class does.

#include <atomic>
#include <cstdint>
#include <exception>
#include <optional>

#include <c10/util/Logging.h>
#include <pybind11/pybind11.h> // gil_scoped_acquire (gil.h alone leaves a cast<> undefined)
#include <torch/csrc/python_headers.h>
#include <torch/csrc/utils/pythoncapi_compat.h> // Py_IsFinalizing before CPython 3.13

namespace upstream_main {
// NOLINTBEGIN
#include "Exceptions.h.SafeGilScopedAcquire"
// NOLINTEND
} // namespace upstream_main

namespace safe_gil_counts {
// Relaxed: they order nothing, they only count.
struct Counts {
  std::atomic<std::uint64_t> constructed{0}; // every guard
  std::atomic<std::uint64_t> acquired{0}; // converted to true
};
inline Counts counts;
} // namespace safe_gil_counts

namespace torch::detail {

class SafeGilScopedAcquire : public upstream_main::SafeGilScopedAcquire {
 public:
  SafeGilScopedAcquire() {
    using safe_gil_counts::counts;
    counts.constructed.fetch_add(1, std::memory_order_relaxed);
    if (static_cast<bool>(*this)) {
      counts.acquired.fetch_add(1, std::memory_order_relaxed);
    }
  }
};

} // namespace torch::detail
