// The nanobind peer: what a kernel author binding with nanobind (3.x) pays to receive
// one tensor. Built by bench/native/peers_bindings.py through nanobind's CMake
// (bench/native/bindings/CMakeLists.txt) into build/bench-<torch>/nanobind/.
//
// empty()      no argument, no conversion: the library's call floor.
// ndarray(t)   one nb::ndarray<> argument (nanobind imports it through the tensor's
//              __dlpack__), then reads what a view reads: data pointer (byte offset
//              included), ndim, sizes, strides, dtype, device type and index, into a
//              volatile sink so the reads stay. Returns None, like empty().
// describe(t)  the same reads returned as a tuple, for the correctness check made
//              outside timing (bench/native/peers_bindings.py compares it with torch's own).
#include <cstdint>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

namespace nb = nanobind;

namespace {

volatile std::uintptr_t sink;

void empty() {}

void ndarray(nb::ndarray<> a) {
  std::uintptr_t acc = reinterpret_cast<std::uintptr_t>(a.data());
  const std::size_t ndim = a.ndim();
  for (std::size_t i = 0; i < ndim; ++i)
    acc += static_cast<std::uintptr_t>(a.shape(i)) ^ static_cast<std::uintptr_t>(a.stride(i));
  const nb::dlpack::dtype dt = a.dtype();
  acc += dt.code + dt.bits + dt.lanes + ndim;
  acc += static_cast<std::uintptr_t>(a.device_type()) + static_cast<std::uintptr_t>(a.device_id());
  sink = acc;
}

nb::tuple describe(nb::ndarray<> a) {
  nb::list shape, strides;
  for (std::size_t i = 0; i < a.ndim(); ++i) {
    shape.append(a.shape(i));
    strides.append(a.stride(i));
  }
  const nb::dlpack::dtype dt = a.dtype();
  return nb::make_tuple(reinterpret_cast<std::uintptr_t>(a.data()), nb::tuple(shape),
                        nb::tuple(strides), nb::make_tuple(dt.code, dt.bits, dt.lanes),
                        a.device_type(), a.device_id());
}

}  // namespace

NB_MODULE(_bench_nanobind, m) {
  m.def("empty", &empty);
  m.def("ndarray", &ndarray);
  m.def("describe", &describe);
}
