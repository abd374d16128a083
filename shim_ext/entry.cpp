// The libtorch half of the prototype (shim_ext._entry): the stable C entry
// points, exactly as the patches add them to torch/csrc/shim_common.cpp, and
// the registration point of the Python-side implementation, as
// torch/csrc/PyObjectConversion.cpp holds upstream's. This library links libtorch
// but not libtorch_python, like libtorch itself; borrow.cpp (shim_ext._borrow)
// is the libtorch_python half. make_patch.py replaces the prototype's accessor
// (torch_borrow::detail::getBorrowConversionImpl) with upstream's
// (torch::detail::getPyObjectConversionImpl); tests/proposal/test_patches.py checks that
// the blocks below and the patches hold the same tokens.

#include <torch_borrow/abi.h>
#include <torch_borrow/prototype/conversion.h>
#include <torch_borrow/prototype/shim.h>

#include <torch/csrc/inductor/aoti_torch/utils.h>

#include <atomic>

namespace torch_borrow::detail {

namespace {

constexpr const char* kNoImplMsg =
    "torch_tensor_borrow_from_pyobject needs its Python-side implementation: "
    "call shim_ext.load() (the bridge does) after `import torch`.";

struct NoopBorrowConversion final : BorrowConversionInterface {
  const at::Tensor& tensor_borrow_from_pyobject(
      PyObject* /*obj*/) const override {
    TORCH_CHECK(false, kNoImplMsg);
  }
};

const NoopBorrowConversion noop_impl;
// Atomic: shim_ext.load() may register from one thread while another borrows (the
// module declares itself GIL-free on free-threaded builds). On x86-64 the acquire
// load is a plain load.
std::atomic<const BorrowConversionInterface*> g_impl{&noop_impl};

} // namespace

// Out of line, as upstream's getPyObjectConversionImpl() is (another
// translation unit of libtorch), so the entry point pays the same call.
C10_NOINLINE const BorrowConversionInterface& getBorrowConversionImpl() {
  return *g_impl.load(std::memory_order_acquire);
}

} // namespace torch_borrow::detail

extern "C" {

// The handshake (torch_borrow/abi.h): the ABI this library was built with,
// which a reader checks before it looks up anything else here.
AOTI_TORCH_EXPORT int32_t torch_borrow_shim_abi(void) {
  return TORCH_BORROW_SHIM_ABI;
}

// Called once by shim_ext.load() with the address shim_ext._borrow's
// torch_borrow_impl() returns; nullptr restores the no-op.
AOTI_TORCH_EXPORT void torch_borrow_set_impl(const void* impl) {
  torch_borrow::detail::g_impl.store(
      impl != nullptr
          ? static_cast<const torch_borrow::detail::BorrowConversionInterface*>(impl)
          : &torch_borrow::detail::noop_impl,
      std::memory_order_release);
}

// BEGIN shim_common.cpp borrow
AOTITorchError torch_tensor_borrow_from_pyobject(
    void* py_obj,
    AtenTensorHandle* ret) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    TORCH_CHECK(
        py_obj != nullptr,
        "torch_tensor_borrow_from_pyobject: py_obj must not be null");
    TORCH_CHECK(
        ret != nullptr,
        "torch_tensor_borrow_from_pyobject: ret must not be null");
    const at::Tensor& tensor =
        torch_borrow::detail::getBorrowConversionImpl()
            .tensor_borrow_from_pyobject(static_cast<PyObject*>(py_obj));
    // Borrowed: the handle is the address of the at::Tensor inside the
    // Python object. No copy, no refcount bump, nothing for the caller to
    // delete.
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast)
    auto* tensor_ptr = const_cast<at::Tensor*>(&tensor);
    *ret = torch::aot_inductor::tensor_pointer_to_tensor_handle(tensor_ptr);
  });
}
// END shim_common.cpp borrow

// BEGIN shim_common.cpp conj-neg
AOTITorchError torch_is_conj(AtenTensorHandle tensor, bool* ret_is_conj) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    TORCH_CHECK(
        ret_is_conj != nullptr, "torch_is_conj: ret_is_conj must not be null");
    *ret_is_conj =
        torch::aot_inductor::tensor_handle_to_tensor_pointer(tensor)->is_conj();
  });
}

AOTITorchError torch_is_neg(AtenTensorHandle tensor, bool* ret_is_neg) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    TORCH_CHECK(
        ret_is_neg != nullptr, "torch_is_neg: ret_is_neg must not be null");
    *ret_is_neg =
        torch::aot_inductor::tensor_handle_to_tensor_pointer(tensor)->is_neg();
  });
}
// END shim_common.cpp conj-neg

} // extern "C"
