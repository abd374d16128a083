# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: freethreading_compatible=True
"""The bridge's hot path: tensor -> TensorView through one of three handle sources.

Nothing here imports torch or looks a symbol up: ``bridge._select`` resolves the
symbols (``bridge._resolve``), installs their addresses with ``_install_symbols`` /
``_install_tables`` and hands this module its cold-path callables
(``_install_callables``), so nothing here imports ``_select`` back. A view is C from
the Python call to the filled object (``_bridge_view.h``: a METH_O builtin, a C view
type; ``_bridge_read.h``: its front end to the one reader, ``torch_borrow/reader.h``);
Cython keeps the cold paths and the API, one concern a file:

- ``_bridge_c.pxi``: the C side, declared once;
- ``_install.pxi``: what ``_select`` installs, the chosen path;
- ``_errors.pxi``: every refusal's words, the checks that run Python code;
- ``_view.pxi``: ``TensorView`` and the view functions, device names;
- ``_native.pxi``: counters, ``_dtype_code``, ``_native_loop``;
- ``_tables.pxi``: the dtype and device tables, by ``torch_borrow/tables.h``'s rules.

Handle sources (``AtenTensorHandle`` is an ``at::Tensor*``, torch/csrc/inductor/
aoti_torch/c/shim.h):

- owned: ``torch_tensor_from_pyobject`` (torch 2.14+, new reference), deleted
  with ``aoti_torch_delete_tensor_object`` once the metadata is read;
- borrow: ``torch_tensor_borrow_from_pyobject`` (libtorch's, or ``shim_ext``'s
  prototype), borrowed reference, nothing to delete;
- fallback: ``(char*)obj + sizeof(PyObject)``, the address of ``THPVariable::cdata``
  on torch 2.10+, installed only after ``bridge._resolve`` proved the offset for
  the running torch.

All three read the metadata with the same seven ``aoti_torch_get_*`` getters
(and the storage offset, which proves the data pointer's base exists), behind the
same checks, so their views are identical field by field.

Threads and free-threaded CPython (``freethreading_compatible``: importing this
module leaves the GIL off on a ``--disable-gil`` build):

- What ``_install_symbols`` / ``_install_tables`` set up is one immutable snapshot
  (``Installed``), published with a single release store and read by a view with one
  acquire load: a view uses the old snapshot or the new one, never a mix. Snapshots
  are never freed (a view may still be reading one; they are replaced only when the
  bridge re-resolves, once per process outside the tests).
- A view writes nothing shared: the per-path counters are per thread (``path_counts``
  sums them), the snapshot is only read, and the view object is the caller's own (the
  freelist of freed views exists only with a GIL).
- Many threads may view the same tensors at once: each view is exact.
- A view is *not* atomic with respect to a concurrent change of the same tensor's
  metadata (``t.data = ...``, ``t.set_(...)``, ``resize_``, in-place view ops,
  ``torch.utils.swap_tensors``): the getters read the TensorImpl while the mutator
  rewrites it, which can crash or mix two tensors' fields. torch's own ``t.shape`` /
  ``t.stride()`` race the same way, and torch's setters take no per-object lock that a
  reader could share, so the caller must order the mutation and the views (a
  ``threading.Lock`` around both). A GIL helps only against mutations that hold it
  throughout (the ``t.data`` setter, ``swap_tensors``): nothing runs between the handle
  and the copy. ATen's in-place operators (``set_``, ``resize_``) release the GIL.
"""

cimport cython
from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc
from cpython.exc cimport PyErr_Fetch, PyErr_NormalizeException, PyErr_Occurred
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_XDECREF, Py_XINCREF
from libc.stdint cimport int8_t, int32_t, int64_t, uint64_t, uintptr_t
from libc.string cimport memcpy
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

# The stable C ABI (bridge/_abi.pxd: shim_ext/include/torch_borrow/abi.h).
from bridge._abi cimport (
    AtenTensorHandle, torch_borrow_custom_metadata_fn, torch_borrow_delete_fn,
    torch_borrow_from_pyobject_fn, torch_borrow_get_flag_fn, torch_borrow_get_i32_fn,
    torch_borrow_get_i64_fn, torch_borrow_get_i64p_fn, torch_borrow_get_ptr_fn,
    torch_borrow_what_fn, TORCH_BORROW_CUSTOM_PYTHON_KEY, TORCH_BORROW_CUSTOM_SIZES,
    TORCH_BORROW_CUSTOM_STRIDES, torch_borrow_custom_words, torch_borrow_fields,
    torch_borrow_getters,
    torch_borrow_read_words, torch_borrow_tables, TORCH_BORROW_READ_CONJ,
    TORCH_BORROW_READ_LAYOUT, TORCH_BORROW_READ_NEG,
)


cdef extern from "Python.h":
    PyTypeObject* Py_TYPE(object o)
    object PyObject_Vectorcall(object callable, PyObject** args, size_t nargsf, PyObject* kwnames)
    int PyException_SetTraceback(object ex, object tb) except -1


include "_bridge_c.pxi"
include "_install.pxi"
include "_errors.pxi"
include "_view.pxi"
include "_native.pxi"
include "_tables.pxi"
