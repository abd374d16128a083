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

Handle sources (``AtenTensorHandle`` is an ``at::Tensor*``): owned,
``torch_tensor_from_pyobject`` (torch 2.14+, a new reference, deleted once read);
borrow, ``torch_tensor_borrow_from_pyobject`` (libtorch's, or shim_ext's prototype);
fallback, ``THPVariable::cdata`` at ``(char*)obj + sizeof(PyObject)`` (torch 2.10+,
installed only once ``bridge._resolve`` proved the offset). All three read through the
same getters behind the same checks, so their views are identical field by field.

Threads: what ``_install_*`` sets up is one immutable snapshot, published with one
release store, read with one acquire load and never freed; a view writes nothing
shared (per-thread counters; the freelist only with a GIL). What that promises a
caller, and what it does not (a concurrent mutation of the same tensor): README.md,
"Threads and free-threaded CPython".
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
    torch_borrow_what_fn, torch_borrow_fields, torch_borrow_getter_symbol,
    torch_borrow_getter_symbols, torch_borrow_getters, torch_borrow_getters_complete,
    TORCH_BORROW_NGETTERS,
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
