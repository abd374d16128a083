#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>

using torch::stable::Tensor;

bool my_is_conj(Tensor t) {
  return t.is_conj();
}

bool my_is_neg(Tensor t) {
  return t.is_neg();
}

STABLE_TORCH_LIBRARY_FRAGMENT(STABLE_LIB_NAME, m) {
  m.def("my_is_conj(Tensor t) -> bool");
  m.def("my_is_neg(Tensor t) -> bool");
}

STABLE_TORCH_LIBRARY_IMPL(STABLE_LIB_NAME, CompositeExplicitAutograd, m) {
  m.impl("my_is_conj", TORCH_BOX(&my_is_conj));
  m.impl("my_is_neg", TORCH_BOX(&my_is_neg));
}

// The Conjugate and Negative fallbacks resolve a conjugate or negative view
// before a CompositeExplicitAutograd kernel sees it (aten::is_conj and
// aten::is_neg are fallthroughs there). Registered at those keys too, the
// kernels receive the view itself.
STABLE_TORCH_LIBRARY_IMPL(STABLE_LIB_NAME, Conjugate, m) {
  m.impl("my_is_conj", TORCH_BOX(&my_is_conj));
  m.impl("my_is_neg", TORCH_BOX(&my_is_neg));
}

STABLE_TORCH_LIBRARY_IMPL(STABLE_LIB_NAME, Negative, m) {
  m.impl("my_is_conj", TORCH_BOX(&my_is_conj));
  m.impl("my_is_neg", TORCH_BOX(&my_is_neg));
}
