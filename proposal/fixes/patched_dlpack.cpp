// The DLPack fix's own code: both exchange structs' DLTensorFromPyObjectNoSync
// and ManagedTensorFromPyObjectNoSync and the helpers they call (with
// PATCHED_DLPACK_TO_DLPACK, _to_dlpack and _to_dlpack_versioned too), as the DLPack
// series (proposal/patches/dlpack/) writes them in torch/csrc/Module.cpp,
// compiled against the installed torch's headers (never the bridge's;
// internal_fixes.cpp puts them into copies of torch's exchange tables, make
// patch-check runs test/test_dlpack.py's cases against them, and the consumer
// count puts the managed one into torch's own table for a measured loop).
//
// patched_dlpack.inc is generated at build time by proposal/fixes/patched_dlpack.py:
// the series applied to the base copy of Module.cpp, the definitions cut out of
// the patched file, unedited, each under a #line directive into that file.
// Around them, only what the rest of Module.cpp supplies: its includes (the
// ones these functions use) and, for each method, a struct of its struct's name
// (the real ones derive from DLPackExchangeAPI and declare the other slots;
// the methods are static and read none of that).

#ifdef PATCHED_DLPACK_TO_DLPACK
// fmt, which python_arg_parser.h calls, is not exported by torch's libraries.
#define FMT_HEADER_ONLY
#endif

#include <cstddef>
#include <exception>
#include <type_traits>

#include <ATen/DLConvertor.h>
#include <ATen/dlpack.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/python_headers.h>
#include <torch/version.h>
#ifdef PATCHED_DLPACK_TO_DLPACK
#include <c10/macros/Macros.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/python_arg_parser.h>
#endif

#if TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 14
// torch before 2.14 has toDLPackNonOwning(src, out) only, no
// toDLPackVersionedReadOnly, and no read-only exchange table; the series calls
// them with read_only, which is false for the table these versions have. Only benchmarks and tests on such a torch
// (2.13 in the test suite, 2.11 on the GPU host) reach this.
namespace at {
inline void toDLPackNonOwning(const Tensor& src, DLTensor* out, bool read_only) {
  TORCH_CHECK(!read_only, "torch before 2.14 has no read-only DLPack export");
  toDLPackNonOwning(src, out);
}
inline DLManagedTensorVersioned* toDLPackVersionedReadOnly(const Tensor&) {
  TORCH_CHECK(false, "torch before 2.14 has no read-only DLPack export");
}
} // namespace at
#endif

namespace patched_dlpack {
namespace {
#include "patched_dlpack.inc"

// A slot of DLPackExchangeAPI has this type; a struct whose method no longer
// matches it must not give a silently mismatched slot.
static_assert(std::is_same_v<
              decltype(&TorchDLPackExchangeAPI::DLTensorFromPyObjectNoSync),
              DLPackDLTensorFromPyObjectNoSync>);
static_assert(std::is_same_v<
              decltype(&TorchConstDLPackExchangeAPI::DLTensorFromPyObjectNoSync),
              DLPackDLTensorFromPyObjectNoSync>);
static_assert(std::is_same_v<
              decltype(&TorchDLPackExchangeAPI::ManagedTensorFromPyObjectNoSync),
              DLPackManagedTensorFromPyObjectNoSync>);
static_assert(std::is_same_v<
              decltype(&TorchConstDLPackExchangeAPI::ManagedTensorFromPyObjectNoSync),
              DLPackManagedTensorFromPyObjectNoSync>);
} // namespace
} // namespace patched_dlpack

extern "C" {

// The patch's dltensor_from_py_object_no_sync: TorchConstDLPackExchangeAPI's
// when read_only != 0, TorchDLPackExchangeAPI's otherwise.
__attribute__((visibility("default"))) void* patched_dlpack_slot(int read_only) {
  DLPackDLTensorFromPyObjectNoSync slot = read_only
      ? &patched_dlpack::TorchConstDLPackExchangeAPI::DLTensorFromPyObjectNoSync
      : &patched_dlpack::TorchDLPackExchangeAPI::DLTensorFromPyObjectNoSync;
  return reinterpret_cast<void*>(slot);
}

// The patch's managed_tensor_from_py_object_no_sync (the owning export), likewise.
__attribute__((visibility("default"))) void* patched_dlpack_managed_slot(int read_only) {
  DLPackManagedTensorFromPyObjectNoSync slot = read_only
      ? &patched_dlpack::TorchConstDLPackExchangeAPI::ManagedTensorFromPyObjectNoSync
      : &patched_dlpack::TorchDLPackExchangeAPI::ManagedTensorFromPyObjectNoSync;
  return reinterpret_cast<void*>(slot);
}

// Where the managed slot sits in a DLPackExchangeAPI (bytes).
__attribute__((visibility("default"))) std::size_t patched_dlpack_managed_offset(void) {
  return offsetof(DLPackExchangeAPI, managed_tensor_from_py_object_no_sync);
}

// Where the dltensor slot sits in a DLPackExchangeAPI, and the table's size (bytes).
__attribute__((visibility("default"))) void patched_dlpack_layout(std::size_t* out) {
  out[0] = offsetof(DLPackExchangeAPI, dltensor_from_py_object_no_sync);
  out[1] = sizeof(DLPackExchangeAPI);
}

#ifdef PATCHED_DLPACK_TO_DLPACK
// The series' torch._C._to_dlpack (versioned == 0) or _to_dlpack_versioned
// (patched_dlpack.py's TO_DLPACK, cut when asked for): a new builtin function.
__attribute__((visibility("default"))) PyObject* patched_dlpack_to_dlpack(int versioned) {
  static PyMethodDef methods[] = {
      {"_to_dlpack",
       reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(
           &patched_dlpack::THPModule_toDLPack)),
       METH_VARARGS | METH_KEYWORDS,
       nullptr},
      {"_to_dlpack_versioned",
       reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(
           &patched_dlpack::THPModule_toDLPackVersioned)),
       METH_VARARGS | METH_KEYWORDS,
       nullptr},
  };
  return PyCFunction_New(&methods[versioned ? 1 : 0], nullptr);
}
#endif

} // extern "C"
