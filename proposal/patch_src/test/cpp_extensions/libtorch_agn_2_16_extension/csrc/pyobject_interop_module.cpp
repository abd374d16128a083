#include <Python.h>

#include <torch/csrc/stable/pyobject.h>
#include <torch/csrc/stable/tensor.h>

// Importable (abi3) module functions that exercise the 2.16 stable shims that
// take a tensor from Python, as libtorch_agn_2_15_extension's module exercises
// the 2.15 ones: a raw PyObject arrives straight from Python (no dispatcher
// boxing, so no dispatch key's fallback touches the tensor first), and the GIL
// is naturally held. The module links only libtorch; the conversion is
// serviced by the vtable that libtorch_python registers.

namespace {

// Tensor::is_conj() / is_neg() (torch_is_conj / torch_is_neg) on the tensor
// tensor_from_pyobject (2.14) returns: the view itself, bits and all.
PyObject* is_conj(PyObject* /*self*/, PyObject* obj) {
  try {
    return PyBool_FromLong(torch::stable::tensor_from_pyobject(obj).is_conj());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

PyObject* is_neg(PyObject* /*self*/, PyObject* obj) {
  try {
    return PyBool_FromLong(torch::stable::tensor_from_pyobject(obj).is_neg());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

PyMethodDef methods[] = {
    {"is_conj", is_conj, METH_O, nullptr},
    {"is_neg", is_neg, METH_O, nullptr},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT,
    "_interop",
    nullptr,
    -1,
    methods,
    nullptr,
    nullptr,
    nullptr,
    nullptr};

} // namespace

// PyMODINIT_FUNC (not a bare extern "C") so the init symbol is dllexported on
// Windows; without it the .pyd omits PyInit__interop and the import fails.
PyMODINIT_FUNC PyInit__interop(void) {
  return PyModule_Create(&moduledef);
}
