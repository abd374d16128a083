// The batched metadata read (batched_read.h), built against the installed torch's
// headers for the routes table only: the fill reads the at::Tensor the handle points at
// with the same accessors the aoti_torch_get_* getters use, in one call.
// torch_tensor_borrow_metadata_from_pyobject takes its handle from the borrow
// (shim_ext's torch_tensor_borrow_from_pyobject, registered by batched_read_init), so
// it refuses what the borrow refuses.

#include "batched_read.h"

#include <ATen/core/Tensor.h>
#include <torch/csrc/inductor/aoti_torch/utils.h>

#include <atomic>

namespace {

std::atomic<torch_borrow_from_pyobject_fn> g_borrow{nullptr};

void fill(const at::Tensor& t, TorchTensorMetadata* ret) {
  // Each of layout() and device() is read once.
  const at::Layout layout = t.layout();
  const at::Device device = t.device();
  const bool strided = layout == at::kStrided;
  ret->data_ptr = strided ? t.data_ptr() : nullptr;
  ret->sizes = t.sizes().data();
  ret->strides = strided ? t.strides().data() : nullptr;
  ret->dim = t.dim();
  ret->storage_offset = strided ? t.storage_offset() : 0;
  ret->storage_nbytes = strided ? static_cast<int64_t>(t.storage().nbytes()) : 0;
  ret->dtype = static_cast<int32_t>(t.scalar_type());
  ret->device_type = static_cast<int32_t>(device.type());
  ret->device_index = static_cast<int32_t>(device.index());
  ret->layout = static_cast<int32_t>(layout);
  ret->is_conj = t.is_conj();
  ret->is_neg = t.is_neg();
}

} // namespace

extern "C" {

__attribute__((visibility("default"))) void batched_read_init(uintptr_t borrow) {
  g_borrow.store(reinterpret_cast<torch_borrow_from_pyobject_fn>(borrow),
                 std::memory_order_release);
}

__attribute__((visibility("default"))) AOTITorchError torch_tensor_get_metadata(
    AtenTensorHandle tensor,
    TorchTensorMetadata* ret) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    TORCH_CHECK(ret != nullptr, "ret must not be null");
    fill(*torch::aot_inductor::tensor_handle_to_tensor_pointer(tensor), ret);
  });
}

__attribute__((visibility("default"))) AOTITorchError
torch_tensor_borrow_metadata_from_pyobject(void* py_obj, TorchTensorMetadata* ret) {
  AtenTensorHandle h = nullptr;
  torch_borrow_from_pyobject_fn borrow = g_borrow.load(std::memory_order_acquire);
  if (borrow == nullptr || borrow(py_obj, &h) != 0) {
    return 1; // AOTI_TORCH_FAILURE; the borrow's message stays torch's
  }
  return torch_tensor_get_metadata(h, ret);
}

} // extern "C"
