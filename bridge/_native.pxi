# Counters, diagnostics, and the native loop: the reader timed in C, without the
# Python call and the view object.
import threading as _threading

#: Dimensions a view stores inline; a tensor with more gives its view a bytes object too.
VIEW_INLINE_DIMS = INLINE_DIMS

_counts_lock = _threading.Lock()
# What path_counts() subtracts: the totals at the last reset_path_counts() (under _counts_lock).
cdef uint64_t _counts_base[NPATHS]


def path_counts():
    """Views made per path since the last reset, by every thread:
    ``{"owned": n, "borrow": n, "fallback": n}``.

    Each thread counts its own views in a block of its own (a view writes nothing that
    another thread writes), and this sums the blocks: exact once the viewing threads are
    done, a moment's snapshot while they run."""
    with _counts_lock:
        return {PATHS[i]: bridge_counter(i) - _counts_base[i] for i in range(NPATHS)}


def reset_path_counts():
    """Start the per-path view counts again from zero (for every thread: it records the
    totals, which ``path_counts`` subtracts; no thread's block is written)."""
    cdef int i
    with _counts_lock:
        for i in range(NPATHS):
            _counts_base[i] = bridge_counter(i)


def _counts_block():
    """The address of the calling thread's counter block (0 before its first view):
    distinct per thread, so no two threads' views write the same memory."""
    return bridge_counts_address()


def _dtype_code(obj, int path):
    """The c10::ScalarType code of ``obj`` read through ``path``, without any table
    (used by ``bridge._select`` to build the dtype table)."""
    cdef AtenTensorHandle h
    cdef int32_t code
    cdef int rc
    cdef const Installed* st = bridge_installed_state()
    if not bridge_is_tensor(obj, st):
        _raise_not_tensor(obj)
    if st.g.dtype == NULL:
        raise RuntimeError("aoti_torch_get_dtype not installed")
    if path == FALLBACK:
        if not st.fallback_ok:
            raise RuntimeError("fallback not installed")
        h = <AtenTensorHandle>((<char*><PyObject*>obj) + st.fallback_offset)
        rc = st.g.dtype(h, &code)
    else:
        fn = st.borrow_fn if path == BORROW else st.owned_fn
        if fn == NULL:
            raise RuntimeError(f"{PATHS[path]} not installed")
        if fn(<void*>obj, &h):
            _raise_handle_error(path)
        rc = st.g.dtype(h, &code)
        if path == OWNED:
            st.delete_fn(h)
    if rc:
        _raise_getter_error(obj)
    return code


cdef inline uint64_t _now_ns() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <uint64_t>ts.tv_sec * 1000000000ULL + <uint64_t>ts.tv_nsec


def _native_loop(obj, path, Py_ssize_t n, bint critical_section=False, bint gate=True):
    """Time ``n`` handle acquisitions + metadata reads of ``obj`` in C; ns per call.

    Each iteration is exactly what a view costs minus the Python call and the view
    object: the type gate, the handle (made and, for owned, deleted; refused first, on
    every path, for a tensor whose metadata is not plain C++ state), the layout, seven
    ``aoti_torch_get_*`` reads, the storage offset and size, the conj/neg bits, and the
    same checks ``view`` makes (the one reader, ``_bridge_read.h``'s ``bridge_fill``).
    ``path`` is a name from ``PATHS``. Raises what ``view`` raises, on the first
    iteration. ``gate=False`` leaves the type gate (and the Python-level conj/neg check
    where torch_is_conj is missing) out of the loop, after checking it once: handle +
    read alone. ``critical_section=True`` (with ``gate=False``) wraps each handle + read
    in a per-object critical section on ``obj`` (``Py_BEGIN_CRITICAL_SECTION``; a no-op
    with the GIL): what taking torch's per-tensor lock would cost, were torch's setters
    to take it (they do not); raises ValueError with the gate on.
    """
    cdef int p = PATHS.index(path)
    scratch = bridge_view_scratch()  # one scratch view, refilled, never tracked
    cdef bridge_view* v = <bridge_view*><PyObject*>scratch
    cdef Py_ssize_t i
    cdef uint64_t t0, t1
    cdef const Installed* st
    if n <= 0:
        raise ValueError("n must be positive")
    if critical_section and gate:
        raise ValueError("critical_section times handle + read alone: pass gate=False")
    _require(p)
    st = bridge_installed_state()
    bridge_fill(obj, p, v, st, 1)  # raise here, outside the timed loop
    t0 = _now_ns()
    if critical_section:
        for i in range(n):
            with cython.critical_section(obj):
                bridge_fill(obj, p, v, st, 0)
    else:
        for i in range(n):
            bridge_fill(obj, p, v, st, gate)
    t1 = _now_ns()
    return (t1 - t0) / <double>n
