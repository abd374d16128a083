/* bridge.TensorView as a C type, and the four view functions as METH_O builtins: one
 * call from Python to the filled view, no Python-level frame. A freed view goes on a
 * freelist (GIL builds only) and is initialised by hand when reused; every view is
 * GC-tracked once filled (t.attr = view(t) is a cycle). Attributes go through a
 * tp_getattro fast path on the interned names, the getset table behind it (dir(),
 * help(), names that are not interned). A freed view on the freelist keeps its shape and
 * strides tuples and its ptr int: the next view made from it returns them again where
 * its sizes and strides (its address) are the same values (the invariants beside
 * bridge_view's tuple_ndim and ptr_int). The list is last in, first out: a loop that
 * frees each view before the next builds the tuples once for tensors of one shape and
 * makes no int for one tensor; a caller that keeps a call's views until its next call
 * (a launcher) gets each back for the same tensor where it frees them in reverse order
 * (the benchmark's launcher workload); otherwise a view reads another's values, and
 * makes its own.
 */
#ifndef BRIDGE_VIEW_H
#define BRIDGE_VIEW_H

#include <inttypes.h>

#include "_bridge_read.h"

/* The first use of a view's tuples runs in a critical section on the view (a no-op
   with the GIL; CPython 3.13+ has the macros on every build). */
#if PY_VERSION_HEX < 0x030D0000
#define Py_BEGIN_CRITICAL_SECTION(op) {
#define Py_END_CRITICAL_SECTION() }
#endif

static PyTypeObject bridge_view_type;

/* The attribute getters stay out of line: the fast path is then a chain of compares
   that jumps to one of them, with no frame of its own. The measurement build
   (BRIDGE_EAGER_VALUES) inlines them into the view's making instead, as a view type
   that makes its values there would. */
#if BRIDGE_EAGER_VALUES
#define BRIDGE_NOINLINE static inline
#else
#define BRIDGE_NOINLINE static __attribute__((noinline))
#endif

/* Views freed on this interpreter, for reuse: no freelist without a GIL (a shared list
   would be a write every thread makes). */
#define BRIDGE_FREELIST 32
#if !BRIDGE_FREE_THREADED
/* pymalloc serves requests up to 512 bytes: a view, with its GC header (two pointers),
   is one such block. */
_Static_assert(sizeof(bridge_view) + 2 * sizeof(void*) <= 512,
               "a view must stay a pymalloc block: fewer inline dimensions");
static bridge_view* bridge_free_views[BRIDGE_FREELIST];
static int bridge_nfree = 0;
#endif

/* A new, empty, untracked view: allocated before the gate and the handle, since
   allocating a GC object may run the collector (any Python code). Only the fields a
   dealloc reads are set; the reader fills the rest. */
BRIDGE_INLINE bridge_view* bridge_view_alloc(void) {
  bridge_view* v;
#if !BRIDGE_FREE_THREADED
  if (__builtin_expect(bridge_nfree > 0, 1)) {
    v = bridge_free_views[--bridge_nfree];
#if defined(Py_REF_DEBUG) || defined(Py_TRACE_REFS)
    (void)PyObject_Init((PyObject*)v, &bridge_view_type);
#else
    /* What PyObject_Init does for an object of a static type whose ob_type is already
       set (a freed view keeps it), less its tracemalloc hook: one store. */
    Py_SET_REFCNT(v, 1);
#endif
  } else
#endif
  {
    v = PyObject_GC_New(bridge_view, &bridge_view_type);
    if (v == NULL) return NULL;
    /* What a dealloc reads; a freed view has them so already (its dealloc cleared them),
       and the reader sets the rest. */
    v->obj = NULL;
    v->heap = NULL;
    v->shape_t = NULL;
    v->strides_t = NULL;
    v->tuple_ndim = -1;
    v->tuple_half = 0;
    v->st = NULL;
    v->ptr_int = NULL;
  }
  return v;
}

/* What a view owns beyond its tensor. */
__attribute__((noinline)) static void bridge_view_release(bridge_view* v) {
  Py_CLEAR(v->shape_t);
  Py_CLEAR(v->strides_t);
  Py_CLEAR(v->heap);
  Py_CLEAR(v->ptr_int);
  v->tuple_ndim = -1;
}

static void bridge_view_dealloc(PyObject* self) {
  bridge_view* v = (bridge_view*)self;
  PyObject_GC_UnTrack(self);
  Py_CLEAR(v->obj);
#if !BRIDGE_FREE_THREADED
  if (bridge_nfree < BRIDGE_FREELIST) {
    /* The tuples stay with the freed view, for the next fill into the same room
       (bridge_view's invariant): immutable objects, owned by the view on the list.
       Those of more than BRIDGE_INLINE_DIMS dimensions go with the heap room. */
    if (__builtin_expect(v->heap != NULL, 0) || v->tuple_ndim > BRIDGE_INLINE_DIMS)
      bridge_view_release(v);
    bridge_free_views[bridge_nfree++] = v;
    return;
  }
#endif
  bridge_view_release(v);
  PyObject_GC_Del(self);
}

static int bridge_view_traverse(PyObject* self, visitproc visit, void* arg) {
  bridge_view* v = (bridge_view*)self;
  Py_VISIT(v->obj);
  Py_VISIT(v->shape_t);
  Py_VISIT(v->strides_t);
  return 0;
}

static int bridge_view_clear(PyObject* self) {
  bridge_view* v = (bridge_view*)self;
  Py_CLEAR(v->obj);
  Py_CLEAR(v->shape_t);
  Py_CLEAR(v->strides_t);
  return 0;
}

#if BRIDGE_EAGER_VALUES
static inline int bridge_view_make_six(PyObject* v);
#endif

/* The filled view: what it keeps, counted on this thread, then tracked. */
BRIDGE_INLINE PyObject* bridge_view_finish(bridge_view* v, PyObject* obj, int path,
                                           const bridge_installed* st) {
  Py_INCREF(obj);
  v->obj = obj;
  v->path = (int8_t)path;
  v->tuples_checked = 0; /* beside path: one store with it */
  v->st = st;
  bridge_count(path); /* this thread's own counter: no shared write */
  PyObject_GC_Track((PyObject*)v);
#if BRIDGE_EAGER_VALUES
  if (bridge_view_make_six((PyObject*)v) != 0) {
    Py_DECREF(v);
    return NULL;
  }
#endif
  return (PyObject*)v;
}

/* One snapshot for the whole view: a concurrent re-resolution publishes another, and
   this view keeps reading the one it loaded (snapshots are never freed): with ready
   (a constant), st, which the caller found ready for path (bridge_ready); else the one
   published after the allocation, which the read checks. */
BRIDGE_INLINE PyObject* bridge_view_on(PyObject* obj, int path, const bridge_installed* st,
                                       int ready) {
  bridge_view* v = bridge_view_alloc();
  int flags = BRIDGE_FILL_GATE | (ready ? BRIDGE_FILL_READY : 0);
  if (v == NULL) return NULL;
  if (!ready) st = bridge_installed_state();
  if (__builtin_expect(bridge_fill(obj, path, v, st, flags) != 0, 0)) {
    Py_DECREF(v);
    return NULL;
  }
  return bridge_view_finish(v, obj, path, st);
}

/* --- the four functions ------------------------------------------------------------- */
static inline int bridge_ready(const bridge_installed* st, int path) {
  switch (path) {
    case BRIDGE_OWNED: return st->getters_ok && st->owned_fn != NULL;
    case BRIDGE_BORROW: return st->getters_ok && st->borrow_fn != NULL;
    default: return st->getters_ok && st->fallback_ok && st->custom_metadata != NULL;
  }
}

/* view() on any path but a ready borrow: the path as chosen (or chosen now), read under
   the snapshot published after the allocation, which the read checks. Out of line, so
   that view() holds the borrow's reader alone. */
__attribute__((noinline)) static PyObject* bridge_view_chosen(PyObject* obj) {
  int path = bridge_active_path();
  if (__builtin_expect(path < 0, 0) && (path = bridge_cold_choose()) < 0) return NULL;
  return bridge_view_on(obj, path, NULL, 0);
}

/* The active path: where it is the borrow and the snapshot is ready for it, what
   view_borrow does, the path a constant (the reader inlined for it alone, as in
   BRIDGE_PATH_FN), instead of the general way's checks of a path known only at run
   time; otherwise bridge_view_chosen. */
static PyObject* bridge_fn_view(PyObject* module, PyObject* obj) {
  if (__builtin_expect(bridge_active_path() == BRIDGE_BORROW, 1)) {
    const bridge_installed* st = bridge_installed_state();
    if (__builtin_expect(bridge_ready(st, BRIDGE_BORROW), 1))
      return bridge_view_on(obj, BRIDGE_BORROW, st, 1);
  }
  return bridge_view_chosen(obj);
}

/* A path's own function: readiness is asked once, of the snapshot the view reads;
   where it is not ready, require resolves (or raises) and the read checks the snapshot
   it then finds. */
#define BRIDGE_PATH_FN(name, code)                                                 \
  static PyObject* bridge_fn_##name(PyObject* module, PyObject* obj) {             \
    const bridge_installed* st = bridge_installed_state();                        \
    if (__builtin_expect(bridge_ready(st, code), 1))                               \
      return bridge_view_on(obj, code, st, 1);                                     \
    if (bridge_cold_require(code) < 0) return NULL;                                \
    return bridge_view_on(obj, code, NULL, 0);                                     \
  }
BRIDGE_PATH_FN(view_owned, BRIDGE_OWNED)
BRIDGE_PATH_FN(view_borrow, BRIDGE_BORROW)
BRIDGE_PATH_FN(view_fallback, BRIDGE_FALLBACK)

/* --- attributes ----------------------------------------------------------------------- */
/* Made once (bridge_view_type_ready) and kept for good: the empty tuple (a 0-d tensor's
   shape and strides), and the ints a device index takes most (-1, a CPU tensor, to
   BRIDGE_NSMALL - 2), so reading one is a load and an incref, not a call into CPython. */
#define BRIDGE_NSMALL 64
static PyObject* bridge_empty_tuple;
static PyObject* bridge_small_ints[BRIDGE_NSMALL]; /* index i + 1 holds the int i */

static PyObject* bridge_int_tuple(const int64_t* values, int64_t n) {
  PyObject* out = PyTuple_New(n);
  if (out == NULL) return NULL;
  for (int64_t i = 0; i < n; ++i) {
    PyObject* item = PyLong_FromLongLong(values[i]);
    if (item == NULL) {
      Py_DECREF(out);
      return NULL;
    }
    PyTuple_SET_ITEM(out, i, item);
  }
  return out;
}

/* The slow half of a tuple's read: the tuples the view has are not this fill's
   (bridge_view_tuple_check said so), or the one asked for was never made. Drop both if
   they are stale (a tuple of ints runs no Python code when freed), then make the one
   asked for from this fill. A new reference, or NULL with an exception set. */
__attribute__((noinline)) static PyObject* bridge_view_tuple_make(bridge_view* v, int strides,
                                                                  int current) {
  int64_t n = v->m.ndim;
  PyObject** slot = strides ? &v->strides_t : &v->shape_t;
  if (!current) {
    Py_CLEAR(v->shape_t);
    Py_CLEAR(v->strides_t);
    v->tuple_ndim = (int32_t)n;
  }
  v->tuple_half = (int8_t)(v->m.sizes != v->inline_dims); /* the next fill writes the other */
  v->tuples_checked = 1; /* until the view's next fill (bridge_view_finish) */
  if (*slot == NULL) *slot = bridge_int_tuple(strides ? v->m.strides : v->m.sizes, n);
  Py_XINCREF(*slot);
  return *slot;
}

/* Once per fill: whether the tuples the view has are this fill's (bridge_view: their
   values are still in the room, compared where the fill wrote the other half). When
   they are and the one asked for is made, the check is all there is: a function that
   calls nothing on that way (the make is its tail call), so it saves no registers. */
__attribute__((noinline)) static PyObject* bridge_view_tuple_check(bridge_view* v,
                                                                   int strides) {
  int64_t n = v->m.ndim;
  PyObject* t = strides ? v->strides_t : v->shape_t;
  const int64_t* now = v->m.sizes; /* the strides follow the sizes */
  const int64_t* made = v->inline_dims + v->tuple_half * 2 * BRIDGE_HALF_DIMS;
  int current = v->tuple_ndim == n;
  uint64_t diff = 0;
  _Static_assert(BRIDGE_HALF_DIMS >= 2, "one or two dimensions fit a half");
  if (__builtin_expect(current && (uint64_t)(n - 1) < 2, 1)) {
    /* One or two dimensions, the most common: two or four compares, no loop, tested
       first. Where made is now (the fill wrote into the tuples' own half), each compare
       is of a value with itself. */
    diff = (uint64_t)(made[0] ^ now[0]) | (uint64_t)(made[2 * n - 1] ^ now[2 * n - 1]);
    if (n == 2) diff |= (uint64_t)(made[1] ^ now[1]) | (uint64_t)(made[2] ^ now[2]);
  } else if (current && n <= BRIDGE_HALF_DIMS) {
    for (int64_t i = 0; made != now && i < 2 * n; ++i) diff |= (uint64_t)(made[i] ^ now[i]);
  }
  current = current && diff == 0;
  if (__builtin_expect(!current || t == NULL, 0))
    return bridge_view_tuple_make(v, strides, current);
  v->tuple_half = (int8_t)(now != v->inline_dims); /* the next fill writes the other */
  v->tuples_checked = 1; /* until the view's next fill (bridge_view_finish) */
  Py_INCREF(t);
  return t;
}

/* A view may be shared between threads: without a GIL, two first uses at once would
   race on the fields (a lost reference, or a read of a tuple being replaced), hence the
   critical section around the check, the reset and the first use. */
BRIDGE_INLINE PyObject* bridge_view_tuple(bridge_view* v, int strides) {
  PyObject* t;
  /* A 0-d tensor's sizes and strides are the empty tuple, whatever the view kept: no
     check, no make, and the kept tuples stay as they are (bridge_view's invariant is
     about them, not about this). ndim is the fill's, fixed once the view is made. */
  if (v->m.ndim == 0) {
    Py_INCREF(bridge_empty_tuple);
    return bridge_empty_tuple;
  }
  Py_BEGIN_CRITICAL_SECTION(v);
  t = strides ? v->strides_t : v->shape_t;
  if (__builtin_expect(t != NULL && v->tuples_checked, 1))
    Py_INCREF(t);
  else
    t = bridge_view_tuple_check(v, strides);
  Py_END_CRITICAL_SECTION();
  return t;
}


/* The int kept per address (bridge_view's ptr_int): an address is a two-digit int, a
   heap object, so a view refilled for the same tensor would otherwise make and free one
   per read. With a GIL nothing runs between the compare and the store (an int's
   free runs no Python code); without one, a shared view would race on the field. */
#if !BRIDGE_FREE_THREADED
/* The int for another address: made, kept in place of the last. Out of line, so that
   the read of a kept int saves no registers and makes no frame. */
__attribute__((noinline)) static PyObject* bridge_ptr_int_make(bridge_view* v) {
  PyObject* p = PyLong_FromVoidPtr(v->m.ptr);
  if (p == NULL) return NULL;
  Py_XSETREF(v->ptr_int, p);
  v->ptr_value = v->m.ptr;
  Py_INCREF(p);
  return p;
}
#endif
BRIDGE_NOINLINE PyObject* bridge_get_ptr(PyObject* self, void* c) {
  bridge_view* v = (bridge_view*)self;
#if BRIDGE_FREE_THREADED
  return PyLong_FromVoidPtr(v->m.ptr);
#else
  PyObject* p = v->ptr_int;
  if (__builtin_expect(p == NULL || v->ptr_value != v->m.ptr, 0)) return bridge_ptr_int_make(v);
  Py_INCREF(p);
  return p;
#endif
}
BRIDGE_NOINLINE PyObject* bridge_get_shape(PyObject* self, void* c) {
  bridge_view* v = (bridge_view*)self;
  return bridge_view_tuple(v, 0);
}
BRIDGE_NOINLINE PyObject* bridge_get_strides(PyObject* self, void* c) {
  bridge_view* v = (bridge_view*)self;
  return bridge_view_tuple(v, 1);
}
BRIDGE_NOINLINE PyObject* bridge_get_dtype(PyObject* self, void* c) {
  bridge_view* v = (bridge_view*)self;
  PyObject* d = v->st != NULL ? v->st->dtype_objs[v->m.dtype] : NULL;
  if (d == NULL) d = Py_None;
  Py_INCREF(d);
  return d;
}
static PyObject* bridge_device_name(const bridge_installed* st, int32_t code) {
  PyObject* name = NULL;
  if ((uint32_t)code < BRIDGE_NDEVICES) {
    if (code == st->device_privateuse1) return bridge_cold_privateuse1_name(st);
    name = st->device_names[code];
  }
  if (name == NULL) name = Py_None;
  Py_INCREF(name);
  return name;
}
BRIDGE_NOINLINE PyObject* bridge_get_device_type(PyObject* self, void* c) {
  bridge_view* v = (bridge_view*)self;
  if (v->st == NULL) Py_RETURN_NONE;
  return bridge_device_name(v->st, v->m.device_type);
}
BRIDGE_NOINLINE PyObject* bridge_get_device_index(PyObject* self, void* c) {
  int32_t index = ((bridge_view*)self)->m.device_index;
  if (__builtin_expect((uint32_t)(index + 1) < BRIDGE_NSMALL, 1)) {
    PyObject* made = bridge_small_ints[index + 1];
    Py_INCREF(made);
    return made;
  }
  return PyLong_FromLong(index);
}
static PyObject* bridge_get_ndim(PyObject* self, void* c) {
  return PyLong_FromLongLong(((bridge_view*)self)->m.ndim);
}
static PyObject* bridge_get_dtype_code(PyObject* self, void* c) {
  return PyLong_FromLong(((bridge_view*)self)->m.dtype);
}
static PyObject* bridge_get_itemsize(PyObject* self, void* c) {
  return PyLong_FromLong(((bridge_view*)self)->m.itemsize);
}
static PyObject* bridge_path_names[BRIDGE_NPATHS]; /* "owned", "borrow", "fallback" */
static PyObject* bridge_get_path(PyObject* self, void* c) {
  PyObject* name = bridge_path_names[((bridge_view*)self)->path];
  Py_INCREF(name);
  return name;
}
static PyObject* bridge_get_obj(PyObject* self, void* c) {
  PyObject* obj = ((bridge_view*)self)->obj;
  if (obj == NULL) obj = Py_None;
  Py_INCREF(obj);
  return obj;
}

#if BRIDGE_EAGER_VALUES
/* The measurement build's fill (BRIDGE_EAGER_VALUES): each of the six values made as its
   getter makes it (the tuples checked or made, the ptr int kept or made: each kept by the
   view, as the getters keep them), then released, where a view type with member slots
   would store it and release it when the view is freed. A lower bound of that type's
   cost: the six stores are not made, and the compiler may fold a reference taken and
   released here. */
#define BRIDGE_MAKE(getter)               \
  do {                                    \
    PyObject* value = getter(v, NULL);    \
    if (value == NULL) return -1;         \
    Py_DECREF(value);                     \
  } while (0)
static inline int bridge_view_make_six(PyObject* v) {
  BRIDGE_MAKE(bridge_get_ptr);
  BRIDGE_MAKE(bridge_get_shape);
  BRIDGE_MAKE(bridge_get_strides);
  BRIDGE_MAKE(bridge_get_dtype);
  BRIDGE_MAKE(bridge_get_device_type);
  BRIDGE_MAKE(bridge_get_device_index);
  return 0;
}
#undef BRIDGE_MAKE
#endif

/* The interned names of the six attributes a reader asks for most, in that order. */
static PyObject *bridge_s_ptr, *bridge_s_shape, *bridge_s_strides, *bridge_s_dtype,
    *bridge_s_device_type, *bridge_s_device_index;

/* A name in compiled code is interned: one pointer compare per attribute, before
   CPython's generic look-up (the type's MRO, then the descriptor). */
static PyObject* bridge_view_getattro(PyObject* self, PyObject* name) {
  if (name == bridge_s_ptr) return bridge_get_ptr(self, NULL);
  if (name == bridge_s_shape) return bridge_get_shape(self, NULL);
  if (name == bridge_s_strides) return bridge_get_strides(self, NULL);
  if (name == bridge_s_dtype) return bridge_get_dtype(self, NULL);
  if (name == bridge_s_device_type) return bridge_get_device_type(self, NULL);
  if (name == bridge_s_device_index) return bridge_get_device_index(self, NULL);
  return PyObject_GenericGetAttr(self, name);
}

/* TensorView(ptr=0x..., shape=(...), strides=(...), dtype=torch.float32, device='cuda:0',
   path='borrow'): the device as torch prints it (no index for -1), through the getters. */
static PyObject* bridge_view_repr(PyObject* self) {
  bridge_view* v = (bridge_view*)self;
  PyObject* out = NULL;
  PyObject* shape = bridge_get_shape(self, NULL);
  PyObject* strides = shape == NULL ? NULL : bridge_get_strides(self, NULL);
  PyObject* dtype = strides == NULL ? NULL : bridge_get_dtype(self, NULL);
  PyObject* device = dtype == NULL ? NULL : bridge_get_device_type(self, NULL);
  if (device != NULL) {
    char ptr[2 + 2 * sizeof(uintptr_t) + 1];
    PyObject* path = bridge_path_names[v->path];
    snprintf(ptr, sizeof ptr, "0x%" PRIxPTR, (uintptr_t)v->m.ptr);
    if (v->m.device_index < 0)
      out = PyUnicode_FromFormat(
          "TensorView(ptr=%s, shape=%S, strides=%S, dtype=%S, device='%S', path='%S')", ptr,
          shape, strides, dtype, device, path);
    else
      out = PyUnicode_FromFormat(
          "TensorView(ptr=%s, shape=%S, strides=%S, dtype=%S, device='%S:%d', path='%S')", ptr,
          shape, strides, dtype, device, (int)v->m.device_index, path);
  }
  Py_XDECREF(shape);
  Py_XDECREF(strides);
  Py_XDECREF(dtype);
  Py_XDECREF(device);
  return out;
}

static PyObject* bridge_view_new(PyTypeObject* tp, PyObject* args, PyObject* kwargs) {
  PyErr_SetString(PyExc_TypeError, "TensorView is made by bridge.view(tensor), not directly");
  return NULL;
}

/* Docstrings (tp_doc, getset, functions) are the module's: bridge/_view.pxi passes them,
   each by the name it documents (bridge_view_type_ready, bridge_function). */
static PyGetSetDef bridge_view_getset[] = {
    {"obj", bridge_get_obj, NULL, NULL, NULL},
    {"ptr", bridge_get_ptr, NULL, NULL, NULL},
    {"shape", bridge_get_shape, NULL, NULL, NULL},
    {"strides", bridge_get_strides, NULL, NULL, NULL},
    {"ndim", bridge_get_ndim, NULL, NULL, NULL},
    {"dtype", bridge_get_dtype, NULL, NULL, NULL},
    {"dtype_code", bridge_get_dtype_code, NULL, NULL, NULL},
    {"itemsize", bridge_get_itemsize, NULL, NULL, NULL},
    {"device_type", bridge_get_device_type, NULL, NULL, NULL},
    {"device_index", bridge_get_device_index, NULL, NULL, NULL},
    {"path", bridge_get_path, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef bridge_functions[] = {
    {"view", bridge_fn_view, METH_O, NULL},
    {"view_owned", bridge_fn_view_owned, METH_O, NULL},
    {"view_borrow", bridge_fn_view_borrow, METH_O, NULL},
    {"view_fallback", bridge_fn_view_fallback, METH_O, NULL},
    {NULL, NULL, 0, NULL}};

/* The type, once (module import). attr_docs: {name: bytes}, one docstring per getset
   entry and no other; the bytes are the module's constants, kept alive by it for good. */
static PyObject* bridge_view_type_ready(const char* doc, PyObject* attr_docs) {
  Py_ssize_t n = 0;
  for (PyGetSetDef* g = bridge_view_getset; g->name != NULL; ++g, ++n) {
    PyObject* d = PyDict_GetItemString(attr_docs, g->name); /* borrowed */
    if (d == NULL || !PyBytes_Check(d)) {
      PyErr_Format(PyExc_SystemError, "bridge: no docstring (bytes) for TensorView.%s", g->name);
      return NULL;
    }
    g->doc = PyBytes_AS_STRING(d);
  }
  if (PyDict_Size(attr_docs) != n) {
    PyErr_SetString(PyExc_SystemError, "bridge: a docstring names no TensorView attribute");
    return NULL;
  }
  bridge_view_type.tp_name = "bridge._bridge.TensorView";
  bridge_view_type.tp_basicsize = sizeof(bridge_view);
  bridge_view_type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
  bridge_view_type.tp_doc = doc;
  bridge_view_type.tp_dealloc = bridge_view_dealloc;
  bridge_view_type.tp_traverse = bridge_view_traverse;
  bridge_view_type.tp_clear = bridge_view_clear;
  bridge_view_type.tp_getattro = bridge_view_getattro;
  bridge_view_type.tp_repr = bridge_view_repr;
  bridge_view_type.tp_getset = bridge_view_getset;
  bridge_view_type.tp_new = bridge_view_new;
  if ((bridge_s_ptr = PyUnicode_InternFromString("ptr")) == NULL ||
      (bridge_s_shape = PyUnicode_InternFromString("shape")) == NULL ||
      (bridge_s_strides = PyUnicode_InternFromString("strides")) == NULL ||
      (bridge_s_dtype = PyUnicode_InternFromString("dtype")) == NULL ||
      (bridge_s_device_type = PyUnicode_InternFromString("device_type")) == NULL ||
      (bridge_s_device_index = PyUnicode_InternFromString("device_index")) == NULL ||
      (bridge_path_names[0] = PyUnicode_InternFromString("owned")) == NULL ||
      (bridge_path_names[1] = PyUnicode_InternFromString("borrow")) == NULL ||
      (bridge_path_names[2] = PyUnicode_InternFromString("fallback")) == NULL ||
      (bridge_empty_tuple = PyTuple_New(0)) == NULL)
    return NULL;
  for (int i = 0; i < BRIDGE_NSMALL; ++i)
    if ((bridge_small_ints[i] = PyLong_FromLong(i - 1)) == NULL) return NULL;
  if (PyType_Ready(&bridge_view_type) < 0) return NULL;
  Py_INCREF(&bridge_view_type);
  return (PyObject*)&bridge_view_type;
}

/* A scratch view for the native loop (a new reference, untracked, never filled). */
static PyObject* bridge_view_scratch(void) { return (PyObject*)bridge_view_alloc(); }

/* The view function called name, as a builtin of module_name, with doc (kept alive by
   the module for good). */
static PyObject* bridge_function(const char* name, const char* doc, PyObject* module_name) {
  for (PyMethodDef* f = bridge_functions; f->ml_name != NULL; ++f) {
    if (strcmp(f->ml_name, name) == 0) {
      f->ml_doc = doc;
      return PyCFunction_NewEx(f, NULL, module_name);
    }
  }
  PyErr_Format(PyExc_SystemError, "bridge: no view function %s", name);
  return NULL;
}

#endif /* BRIDGE_VIEW_H */
