// The prototype's counterpart of torch/csrc/PyObjectConversion.h: the interface
// through which the libtorch-side entry points (shim_ext._entry, entry.cpp) reach
// the libtorch_python-side implementation (shim_ext._borrow, borrow.cpp), which
// registers itself when shim_ext.load() imports it. Upstream's interface lives in
// libtorch and cannot gain a method outside PyTorch, so the prototype has its own
// with the method the borrow patch appends; the entry points then pay what the patch's
// would: a call into another library, a load of the registered pointer and a
// virtual call.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/python_stub.h>

namespace torch_borrow::detail {

struct BorrowConversionInterface {
  virtual ~BorrowConversionInterface() = default;

  // The method the borrow patch appends to PyObjectConversionInterface.
  virtual const at::Tensor& tensor_borrow_from_pyobject(PyObject* obj)
      const = 0;
};

// The registered implementation; before shim_ext._borrow registers one, a no-op
// whose method errors (like torch::detail::getPyObjectConversionImpl()).
const BorrowConversionInterface& getBorrowConversionImpl();

} // namespace torch_borrow::detail
