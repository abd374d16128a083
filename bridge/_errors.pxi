# The cold paths: every refusal's words and exception type, and the checks that run
# Python code (where torch_is_conj / shim_ext's check are missing). The reader
# (_bridge_read.h) decides; ``_refuse`` gets the stage that failed and says why, in the
# reader's own words (torch_borrow/reader.h, which consumer.h's refusals use too) for
# the reader's stages.

cdef str _reader_words(int stage, const torch_borrow_fields* x, layout_name=None):
    """The one reader's words for a refusal at ``stage`` (``TORCH_BORROW_READ_*``) from
    the fields read (torch_borrow/reader.h, ``torch_borrow_read_words``)."""
    cdef char buf[8192]
    name = None if layout_name is None else str(layout_name).encode("utf-8", "replace")
    torch_borrow_read_words(stage, x, NULL if name is None else <const char*>name, b"viewed",
                            buf, sizeof(buf))
    return (<bytes>buf).decode("utf-8", "replace")


cdef object _take_pending_exception():
    """The Python exception a failing call left set (torch ran __torch_dispatch__ code
    that raised), cleared so that we may run Python code again; None if there is none."""
    cdef PyObject* etype = NULL
    cdef PyObject* evalue = NULL
    cdef PyObject* etb = NULL
    if PyErr_Occurred() == NULL:
        return None
    PyErr_Fetch(&etype, &evalue, &etb)
    PyErr_NormalizeException(&etype, &evalue, &etb)
    exc = None if evalue == NULL else <object>evalue
    if exc is not None and etb != NULL:
        PyException_SetTraceback(exc, <object>etb)
    Py_XDECREF(etype)
    Py_XDECREF(evalue)
    Py_XDECREF(etb)
    return exc


cdef tuple _failure():
    """``(message, cause)``: torch's per-thread message, read before anything else can
    overwrite it, and the pending Python exception (or None); the cause's text stands in
    when torch has no message."""
    cdef torch_borrow_what_fn get_what = bridge_installed_state().what_fn
    cdef const char* raw = NULL if get_what == NULL else get_what()
    what = None if raw == NULL else (<bytes>raw).decode("utf-8", "replace")
    cause = _take_pending_exception()
    if not what and cause is not None:
        what = repr(cause)
    cdef bytes b = what.encode("utf-8", "replace") if what else None
    what = (<bytes>torch_borrow_what_words(NULL if b is None else <const char*>b,
                                           get_what != NULL)).decode("utf-8", "replace")
    return what, cause


cdef int _raise_handle_error(int path) except -1:
    """A handle call failed (the C core's words, ``torch_borrow_call_failed_words``)."""
    cdef char buf[1024]
    what, cause = _failure()
    cdef bytes b = what.encode("utf-8", "replace")
    cdef bytes name = (b"torch_tensor_from_pyobject" if path == OWNED
                       else b"torch_tensor_borrow_from_pyobject")
    raise BufferError(torch_borrow_call_failed_words(name, b, buf, sizeof(buf))
                      .decode("utf-8", "replace")) from cause


cdef int _raise_getter_error(object obj, tuple failure=None) except -1:
    """A getter failed: torch's message (``failure``, ``_failure()``'s pair where the
    caller took it already), in the C core's words (``torch_borrow_getter_failed_words``)."""
    cdef char buf[1024]
    what, cause = _failure() if failure is None else failure
    cdef bytes b = what.encode("utf-8", "replace")
    raise BufferError(torch_borrow_getter_failed_words(Py_TYPE(obj).tp_name, b, buf,
                                                       sizeof(buf))
                      .decode("utf-8", "replace")) from cause


cdef int _raise_custom_metadata(object obj, int32_t reasons, int32_t layout,
                                const Installed* st) except -1:
    """The refusal of a tensor whose metadata is not plain C++ state (``reasons``: the
    ``TORCH_BORROW_CUSTOM_*`` bits of ``torch_borrow_custom_metadata``, negative for an
    undefined tensor; ``layout`` its layout code, -1 where that is custom), in the C
    core's words (``torch_borrow/tables.h``, ``torch_borrow_custom_refusal_words``, as
    consumer.h's): one message per cause on every path, with what the dispatch keys
    name the tensor (nested, vmap-batched, sparse)."""
    cdef char buf[1024]
    name = (<dict>st.layout_names).get(layout)
    bname = None if name is None else str(name).encode("utf-8", "replace")
    torch_borrow_custom_refusal_words(&st.keys, obj, reasons, layout, st.t.strided,
                                      NULL if bname is None else <const char*>bname,
                                      b"viewed", buf, sizeof(buf))
    raise BufferError((<bytes>buf).decode("utf-8", "replace"))


cdef int _raise_not_tensor(object obj) except -1:
    """``obj`` is not a tensor: the C core's words (``torch_borrow/tables.h``,
    ``torch_borrow_not_a_tensor_words``, as consumer.h's)."""
    cdef char buf[512]
    raise TypeError(torch_borrow_not_a_tensor_words(obj, buf, sizeof(buf))
                    .decode("utf-8", "replace"))


cdef int _raise_layout(int32_t layout, const Installed* st) except -1:
    cdef torch_borrow_fields x
    x.layout = layout
    raise BufferError(_reader_words(TORCH_BORROW_READ_LAYOUT, &x,
                                    (<dict>st.layout_names).get(layout)))


cdef int _raise_bad_dtype(bridge_view* v, const Installed* st) except -1:
    """The resolution's reason for a refused dtype (``bridge._resolve``: it names the
    torch.dtype), else the reader's words."""
    cdef dict refused = <dict>st.refused_dtypes if st.refused_dtypes != NULL else {}
    cdef int32_t code = v.m.dtype
    if 0 <= code < NCODES and code in refused:
        raise BufferError(refused[code])
    raise BufferError(_reader_words(BRIDGE_E_DTYPE, &v.m))


cdef int _raise_math_bit(bint conj) except -1:
    raise BufferError(_reader_words(TORCH_BORROW_READ_CONJ if conj else TORCH_BORROW_READ_NEG,
                                    NULL))


cdef int _check_bits_slow "bridge_cold_bits_slow"(object obj, const Installed* st) except -1:
    """Refuse conjugate and negative views when no torch_is_conj / torch_is_neg exists:
    through torch.Tensor.is_conj / .is_neg (about 100 ns each), with __torch_function__
    disabled (subclasses and modes alike) so that nothing in Python answers for the tensor.
    Runs before any handle exists: it executes Python code."""
    cdef PyObject* args[1]
    args[0] = <PyObject*>obj
    no_torch_function = <object>st.no_torch_function
    with no_torch_function():
        conj = PyObject_Vectorcall(<object>st.is_conj, args, 1, NULL) is True
        neg = PyObject_Vectorcall(<object>st.is_neg, args, 1, NULL) is True
    if conj or neg:
        _raise_math_bit(conj)
    return 0


cdef int _raise_dispatch(object obj, const Installed* st) except -1:
    """Without shim_ext's check, the owned path refused ``obj`` before the handle: its
    type's ``__torch_dispatch__`` is not torch's default (``torch_borrow/tables.h``'s
    rule, in its words)."""
    cdef char buf[1024]
    raise BufferError(torch_borrow_dispatch_words(&st.keys, obj, buf, sizeof(buf))
                      .decode("utf-8", "replace"))


cdef int _raise_unchecked_read(object obj, bridge_view* v, int stage,
                               const Installed* st) except -1:
    """Without shim_ext's check, a read on the owned path stopped at ``stage`` (the
    owned handle still held): named by the tensor's dispatch keys where a key of the
    rule's table names it (``torch_borrow/tables.h``, ``torch_borrow_keys_name``, as
    consumer.h's owned route names it: a nested, vmap-batched or functional tensor, whose
    getter fails with torch's internal words or reads a placeholder), else the read's own
    words. Torch's message and any pending exception are taken first: the key set is
    read through Python."""
    cdef char buf[1024]
    failure = _failure() if stage == BRIDGE_E_GETTER else (None, None)
    if torch_borrow_keys_name(&st.keys, obj, buf, sizeof(buf)):
        raise BufferError(buf.decode("utf-8", "replace")) from failure[1]
    if stage == BRIDGE_E_GETTER:
        return _raise_getter_error(obj, failure)
    return _refuse_read(v, stage, st)


cdef int _raise_borrow_error(object obj, const Installed* st) except -1:
    """A refused borrow: the message every path gives for a tensor whose metadata is not
    plain C++ state (shim_ext's check tells which cause), else torch's message."""
    cdef int32_t layout = -1
    cdef int32_t reasons = 0
    if st.custom_metadata != NULL:
        reasons = st.custom_metadata(<void*>obj, &layout)
    if reasons > 0:
        what, cause = _failure()  # clear torch's message and any pending exception
        return _raise_custom_metadata(obj, reasons, layout, st)
    return _raise_handle_error(BORROW)


cdef int _refuse "bridge_cold_refuse"(object obj, bridge_view* v, int stage,
                                      const bridge_failure* f, const Installed* st) except -1:
    """The words of the reader's refusal at ``stage`` (``BRIDGE_E_*``, _bridge_read.h),
    from what it read (``v``: the view's fields; ``f``: the rest): always raises."""
    if stage == BRIDGE_E_TYPE:
        return _raise_not_tensor(obj)
    if (stage == BRIDGE_E_BORROW or stage == BRIDGE_E_RESOLVING
            or stage == BRIDGE_E_NOT_INSTALLED) and not bridge_is_tensor(obj, st):
        # The borrow path leaves the real-type check to the borrow (_bridge_read.h,
        # bridge_gate): the same refusal as every other path's gate.
        if stage == BRIDGE_E_BORROW:
            _failure()  # clear torch's message and any pending exception
        return _raise_not_tensor(obj)
    if stage == BRIDGE_E_RESOLVING:
        raise RuntimeError("the bridge is being re-resolved; try again")
    if stage == BRIDGE_E_NOT_INSTALLED:
        if 0 <= f.path < NPATHS:
            raise RuntimeError(f"path {PATHS[f.path]!r} is not installed now (the bridge was "
                               f"re-resolved meanwhile); try again")
        raise ValueError(f"no path has code {f.path}")
    if stage == BRIDGE_E_BORROW:
        return _raise_borrow_error(obj, st)
    if stage == BRIDGE_E_CUSTOM:
        return _raise_custom_metadata(obj, f.reasons, f.layout, st)
    if stage == BRIDGE_E_DISPATCH:
        return _raise_dispatch(obj, st)
    if stage == BRIDGE_E_OWNED:
        return _raise_handle_error(OWNED)
    if (f.path == OWNED and st.custom_metadata == NULL
            and BRIDGE_E_GETTER <= stage <= BRIDGE_E_OUTSIDE):  # the read's stages
        return _raise_unchecked_read(obj, v, stage, st)
    if stage == BRIDGE_E_GETTER:
        return _raise_getter_error(obj)
    return _refuse_read(v, stage, st)


cdef int _refuse_read(bridge_view* v, int stage, const Installed* st) except -1:
    """The reader's own words for a read that stopped at ``stage`` (past its getters:
    ``BRIDGE_E_LAYOUT`` to ``BRIDGE_E_OUTSIDE``), from the fields it read."""
    if stage == BRIDGE_E_LAYOUT:
        return _raise_layout(v.m.layout, st)
    if stage == BRIDGE_E_DTYPE:
        return _raise_bad_dtype(v, st)
    if (stage == BRIDGE_E_CONJ or stage == BRIDGE_E_NEG or stage == BRIDGE_E_META
            or stage == BRIDGE_E_DEVICE or stage == BRIDGE_E_NO_MEMORY
            or stage == BRIDGE_E_OUTSIDE):
        raise BufferError(_reader_words(stage, &v.m))
    raise SystemError(f"bridge: unknown refusal stage {stage}")
