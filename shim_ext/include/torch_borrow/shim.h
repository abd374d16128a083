// Prototype declarations of torch_tensor_borrow_from_pyobject and of the two
// flag getters a metadata-only consumer needs to be correct (torch_is_conj,
// torch_is_neg: the stable ABI has no other way to see those bits).
//
// The block between the BEGIN/END markers is, byte for byte, the hunk that
// proposal/patches/ adds to torch/csrc/stable/c/shim.h (tests/test_proposal.py
// checks that the two do not drift). Everything outside the markers exists
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

// BEGIN shim.h hunk
/**
 * The beginning of all shims added in 2.16.0 onwards.
 */
#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_16_0

// Borrow the at::Tensor held by a Python torch.Tensor (or an instance of a
// subclass) as an AtenTensorHandle, without allocating and without touching
// any refcount. The handle aliases the tensor stored inside the Python
// object: it is valid exactly as long as py_obj is alive, and it must never
// be passed to aoti_torch_delete_tensor_object, nor be the destination of
// aoti_torch_assign_tensors (that would replace the Python object's tensor
// behind its back). It always denotes the tensor py_obj holds now: `t.data =
// ...`, `t.set_(...)` and torch.utils.swap_tensors show through it, so
// re-read metadata after calling back into Python: what the getters return
// (the sizes and strides arrays, the data pointer) may change or be freed by
// any Python code, including a garbage collection, so copy it first. Use it
// to read metadata (aoti_torch_get_data_ptr, _get_sizes, _get_strides,
// _get_dtype, ...) while the caller keeps py_obj alive; take an owning
// handle with torch_tensor_from_pyobject (or aoti_torch_new_tensor_handle on
// the borrowed one) when the tensor must outlive py_obj.
//
// py_obj must be an instance of torch.Tensor or of a subclass, by its real
// type (Py_TYPE), not by isinstance(), which an object can fool through
// __class__. On failure (null argument, GIL not held, not a tensor,
// undefined tensor) returns AOTI_TORCH_FAILURE, leaves *ret unchanged and
// stores the message for torch_exception_get_what(). See the Python interop
// section above for the libtorch_python / GIL contract.
AOTI_TORCH_EXPORT AOTITorchError torch_tensor_borrow_from_pyobject(
    void* py_obj,
    AtenTensorHandle* ret); // returns borrowed reference

// Whether the tensor's conjugate bit is set (a lazy conj() of a complex
// tensor): its memory then holds the unconjugated values. A consumer that
// reads the data pointer must refuse such a tensor or conjugate what it
// reads; resolve_conj() materializes the values.
AOTI_TORCH_EXPORT AOTITorchError
torch_is_conj(AtenTensorHandle tensor, bool* ret_is_conj);

// Whether the tensor's negative bit is set (a lazy negation, as in
// x.conj().imag, on any dtype): its memory then holds the values' negation.
// resolve_neg() materializes the values.
AOTI_TORCH_EXPORT AOTITorchError
torch_is_neg(AtenTensorHandle tensor, bool* ret_is_neg);

#endif // TORCH_FEATURE_VERSION >= TORCH_VERSION_2_16_0
// END shim.h hunk

#ifdef __cplusplus
} // extern "C"
#endif

#pragma pop_macro("TORCH_FEATURE_VERSION")
