// Prototype declarations of torch_tensor_borrow_from_pyobject and of the two
// flag getters a metadata-only consumer needs to be correct (torch_is_conj,
// torch_is_neg: the stable ABI has no other way to see those bits).
//
// The blocks between the BEGIN/END markers are, byte for byte, what
// the patches in proposal/patches/ add to the 2.16 block of
// torch/csrc/stable/c/shim.h (tests/proposal/test_patches.py checks that they do not
// drift). The longer contract (what "borrowed" means, its precedents, the GIL)
// is in the docs note the patch adds. Everything outside the markers exists
// only so that the prototype compiles against an installed torch whose
// headers predate the version block it lives in.
#pragma once

#include <torch/csrc/inductor/aoti_torch/c/shim.h>

#if __has_include(<torch/csrc/stable/version.h>)
#include <torch/csrc/stable/version.h>
#endif

#ifndef TORCH_VERSION_2_16_0
#define TORCH_VERSION_2_16_0 (((0ULL + 2) << 56) | ((0ULL + 16) << 48))
#endif

// The installed headers announce their own (older) feature version, which
// would hide the 2.16 block. The prototype is built outside libtorch, so it
// declares the block unconditionally for the span of the hunk.
#pragma push_macro("TORCH_FEATURE_VERSION")
#undef TORCH_FEATURE_VERSION
#define TORCH_FEATURE_VERSION TORCH_VERSION_2_16_0

#ifdef __cplusplus
extern "C" {
#endif

#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_16_0

// BEGIN shim.h borrow
// Borrow the at::Tensor a Python torch.Tensor holds, with no refcount change,
// as torch::stable::Tensor::get() borrows. The caller has an attached thread
// state and keeps py_obj alive. Fails (AOTI_TORCH_FAILURE, *ret unchanged) for
// a non-tensor and a tensor whose metadata is not plain C++ state (the Python
// dispatch key; sizes, strides, device or layout computed by a subclass or in
// Python): if the caller runs no Python between the borrow and the handle's
// last use, the stable getters on the handle run none either. It may be passed
// as an input of one operator call; borrow again after it returns (a mode the
// call enters sees one reference fewer than with an owning handle; swap_tensors
// refuses under both). Never delete it (aoti_torch_delete_tensor_object), wrap
// it in torch::stable::Tensor, box it in a StableIValue (torch_call_dispatcher,
// StableList) or pass it as the dst of aoti_torch_assign_tensors.
AOTI_TORCH_EXPORT AOTITorchError torch_tensor_borrow_from_pyobject(
    void* py_obj,
    AtenTensorHandle* ret); // returns borrowed reference
// END shim.h borrow

// BEGIN shim.h conj-neg
// Returns whether the tensor's conjugate bit is set: a lazy conj() view, whose
// memory holds the unconjugated values until resolve_conj().
AOTI_TORCH_EXPORT AOTITorchError
torch_is_conj(AtenTensorHandle tensor, bool* ret_is_conj);

// Returns whether the tensor's negative bit is set: a lazy negative view (the
// imaginary part of a conj() view, say), whose memory holds the unnegated
// values until resolve_neg().
AOTI_TORCH_EXPORT AOTITorchError
torch_is_neg(AtenTensorHandle tensor, bool* ret_is_neg);
// END shim.h conj-neg

#endif // TORCH_FEATURE_VERSION >= TORCH_VERSION_2_16_0

#ifdef __cplusplus
} // extern "C"
#endif

#pragma pop_macro("TORCH_FEATURE_VERSION")
