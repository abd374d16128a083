// Whether a tensor's metadata is plain C++ state: the prototype of the public
// accessor the proposal adds to c10::TensorImpl (c10/core/TensorImpl.h),
// TensorImpl::has_custom_metadata(), in the DLPack series (its fourth patch),
// which the borrow patch calls too.
//
// c10::TensorImpl answers sizes(), strides(), dim(), numel(), device() and
// layout() from its own fields unless a policy bit sends them elsewhere: a
// TensorImpl subclass's virtual *_custom() (nested, functional, vmap-batched,
// sparse, ...: custom_sizes_strides_, custom_device_, custom_layout_), or the
// Python interpreter (python_custom_*: __torch_dispatch__ subclasses made with
// dispatch_sizes_strides_policy=, dispatch_device=True, dispatch_layout=True),
// and symbolic sizes are custom too. refresh_*_policy() folds those into
// sizes_strides_policy_, device_policy_ and layout_policy_ (2.15 header,
// around lines 2913-2930), which are protected. A tensor with none of them and
// without the Python dispatch key has metadata getters that read the
// TensorImpl and run no Python and no virtual call.
#pragma once

#include <c10/core/TensorImpl.h>
#include <torch_borrow/abi.h>

#include <cstdint>

namespace torch_borrow::detail {

// Reads the protected bit-fields through a class that derives from
// c10::TensorImpl and adds nothing. Formally a cast to a type the object does
// not have (no pointer to a bit-field member exists, so there is no other way
// from outside c10); it names only c10::TensorImpl's own members, at the
// offsets this torch's header gives them. The patch adds a real accessor.
struct TensorImplPolicies final : c10::TensorImpl {
  TensorImplPolicies() = delete;

  static bool custom_metadata(const c10::TensorImpl& impl) {
    const auto& self = static_cast<const TensorImplPolicies&>(impl);
    return self.sizes_strides_policy_ != 0 || self.device_policy_ ||
        self.layout_policy_ || impl.is_python_dispatch();
  }

  // The policies behind a refusal, as torch_borrow/abi.h's
  // TORCH_BORROW_CUSTOM_* bits, for a caller's message.
  static uint32_t reasons(const c10::TensorImpl& impl) {
    const auto& self = static_cast<const TensorImplPolicies&>(impl);
    uint32_t r = 0;
    if (impl.is_python_dispatch()) {
      r |= TORCH_BORROW_CUSTOM_PYTHON_KEY;
    }
    if (self.sizes_strides_policy_ ==
        static_cast<uint8_t>(SizesStridesPolicy::CustomStrides)) {
      r |= TORCH_BORROW_CUSTOM_STRIDES;
    } else if (self.sizes_strides_policy_ != 0) {
      r |= TORCH_BORROW_CUSTOM_SIZES;
    }
    if (self.device_policy_) {
      r |= TORCH_BORROW_CUSTOM_DEVICE;
    }
    if (self.layout_policy_) {
      r |= TORCH_BORROW_CUSTOM_LAYOUT;
    }
    return r;
  }
};

// TensorImpl::has_custom_metadata() of the patched header.
inline bool has_custom_metadata(const c10::TensorImpl& impl) {
  return TensorImplPolicies::custom_metadata(impl);
}

} // namespace torch_borrow::detail
