/* The bridge's front end to the one reader (torch_borrow/reader.h, which consumer.h
 * shares): type gate, handle, room for the dimensions, then the reader's getters and
 * checks, written straight into a view's fields. C decides; the words of each refusal
 * are made in one place (bridge/_errors.pxi: bridge_cold_refuse gets the stage that
 * failed, and asks the reader for the words of the reader's own stages), so a
 * refusal's message and type are one function's.
 */
#ifndef BRIDGE_READ_H
#define BRIDGE_READ_H

#include "_bridge_state.h"

/* The reader is inlined into each view function: one frame from the call to the view. */
#define BRIDGE_INLINE static inline __attribute__((always_inline))

/* What a view holds: the C struct behind bridge.TensorView (bridge/_bridge_view.h). */
typedef struct {
  PyObject_HEAD
  PyObject* obj;       /* the tensor (strong); NULL until the view is filled */
  /* What the reader read (m.sizes -> inline_dims, or into heap; m.strides after them). */
  torch_borrow_fields m;
  PyObject* heap;      /* bytes holding 2 * ndim int64 beyond BRIDGE_INLINE_DIMS */
  PyObject* shape_t;   /* tuples made on first use (under a critical section), kept */
  PyObject* strides_t; /* by a freed view for its next fill (_bridge_view.h) */
  /* The resolution the view was made under: its dtype and device names are looked
     up there when read (snapshots are never freed nor changed). */
  const bridge_installed* st;
  int8_t path;
  /* The tuples the view has (shape_t, strides_t) were made from tuple_ndim dimensions
     (-1: none, or stale), whose sizes and strides are still in the view's room: up to
     BRIDGE_HALF_DIMS, in half tuple_half of inline_dims, which a fill leaves alone (it
     writes the other half), and a read compares with the fill's half once per fill
     (tuples_checked); up to BRIDGE_INLINE_DIMS, in the whole of inline_dims, and a fill
     that writes other values there, or any narrower fill, sets tuple_ndim to -1;
     beyond, in heap, which goes when the view is freed. A tuple's make sets them from
     the fill it reads (bridge_read, bridge_read_tail_kept, bridge_view_tuple_make). So a
     freed view keeps its tuples on the freelist, and the next view made from it returns
     them where its values are the same. */
  int8_t tuples_checked; /* 1: shape_t / strides_t were found this fill's */
  int8_t tuple_half;
  int32_t tuple_ndim;
  /* The int the ptr attribute returned last, made from ptr_value (GIL builds; NULL
     until then): kept by the view, and by a freed view on the freelist (unless its
     heap room or wide tuples are released with it), and returned again by a read whose
     m.ptr is ptr_value, so a view of the tensor a freed view had returns the same int
     instead of making one. Without a GIL it stays NULL. */
  PyObject* ptr_int;
  void* ptr_value;
  int64_t inline_dims[2 * BRIDGE_INLINE_DIMS];
} bridge_view;

/* Where a read stopped (0: it did not): the reader's stages, then the bridge's own.
   BRIDGE_E_RAISED: a Python exception is set. */
enum {
  BRIDGE_OK = TORCH_BORROW_READ_OK,
  BRIDGE_E_RAISED = TORCH_BORROW_READ_RAISED,
  BRIDGE_E_GETTER = TORCH_BORROW_READ_GETTER, /* a getter returned an error */
  BRIDGE_E_LAYOUT = TORCH_BORROW_READ_LAYOUT, /* not strided: m.layout */
  BRIDGE_E_CONJ = TORCH_BORROW_READ_CONJ,
  BRIDGE_E_NEG = TORCH_BORROW_READ_NEG,
  BRIDGE_E_DTYPE = TORCH_BORROW_READ_DTYPE, /* no itemsize for the dtype code */
  BRIDGE_E_META = TORCH_BORROW_READ_META,
  BRIDGE_E_DEVICE = TORCH_BORROW_READ_DEVICE, /* a device type code torch names no device for */
  BRIDGE_E_NO_MEMORY = TORCH_BORROW_READ_NO_MEMORY, /* elements, but no memory */
  BRIDGE_E_OUTSIDE = TORCH_BORROW_READ_OUTSIDE,     /* elements outside the storage */
  BRIDGE_E_TYPE = TORCH_BORROW_READ_NSTAGES, /* the real type does not derive from torch.Tensor */
  BRIDGE_E_RESOLVING,     /* the snapshot has no tables: a re-resolution is under way */
  BRIDGE_E_NOT_INSTALLED, /* the path is not in this snapshot */
  BRIDGE_E_BORROW,        /* torch_tensor_borrow_from_pyobject refused */
  BRIDGE_E_CUSTOM,        /* torch_borrow_custom_metadata: reasons, layout */
  BRIDGE_E_DISPATCH,      /* without it: the type's __torch_dispatch__ is not torch's */
  BRIDGE_E_OWNED          /* torch_tensor_from_pyobject failed */
};

/* What the refusal's words need beyond the view's fields. */
typedef struct {
  int32_t reasons; /* BRIDGE_E_CUSTOM */
  int32_t layout;  /* BRIDGE_E_CUSTOM (-1: custom) */
  AtenTensorHandle owned; /* an owned handle to delete after the words are made */
  int path;        /* the path asked for (BRIDGE_E_NOT_INSTALLED) */
} bridge_failure;

/* The cold paths: declared here, defined in Cython under these names (bridge/_errors.pxi,
   bridge/_view.pxi: `cdef int _refuse "bridge_cold_refuse"(...)`), so C calls them by
   name and Cython declares nothing back. Each int one returns -1 with an exception set
   (refuse always does); privateuse1_name returns NULL with one. */
static int bridge_cold_refuse(PyObject* obj, bridge_view* v, int stage, const bridge_failure* f,
                              const bridge_installed* st);
/* torch.Tensor.is_conj / .is_neg at Python level (no torch_is_conj in this torch) */
static int bridge_cold_bits_slow(PyObject* obj, const bridge_installed* st);
/* view(): choose the default path (Python: bridge._select); returns it or -1 */
static int bridge_cold_choose(void);
/* view_<path>(): PathUnavailableError unless the path can run */
static int bridge_cold_require(int path);
/* the privateuse1 device's name, as torch names it now (new reference, or NULL) */
static PyObject* bridge_cold_privateuse1_name(const bridge_installed* st);

/* The real type, never isinstance(): __class__ can lie, the memory layout cannot. */
static inline int bridge_is_tensor(PyObject* obj, const bridge_installed* st) {
  return torch_borrow_is_tensor(obj, st->tensor_tp, st->parameter_tp);
}

/* The gate in front of every handle. Without torch_is_conj / torch_is_neg the bits are
   asked at Python level, which runs Python code: the type is then judged again, since
   that code may have changed it (__class__ assignment, swap_tensors). After this,
   nothing but C++ runs until the view is filled. The borrow makes the same real-type
   check itself (PyObject_TypeCheck against torch.Tensor, before it reads anything), so
   on that path it is left to the borrow, and a refusal is worded as the TypeError it
   is (_errors.pxi, _refuse). */
BRIDGE_INLINE int bridge_gate(PyObject* obj, int path, const bridge_installed* st) {
  if (__builtin_expect(st->g.is_conj != NULL, 1)) {
    if (path == BRIDGE_BORROW) return BRIDGE_OK;
    return __builtin_expect(bridge_is_tensor(obj, st), 1) ? BRIDGE_OK : BRIDGE_E_TYPE;
  }
  if (!bridge_is_tensor(obj, st)) return BRIDGE_E_TYPE;
  if (bridge_cold_bits_slow(obj, st) < 0) return BRIDGE_E_RAISED;
  if (!bridge_is_tensor(obj, st)) return BRIDGE_E_TYPE;
  return BRIDGE_OK;
}

/* The tail of a read into the whole of inline_dims where the view keeps tuples made
   from it, of as many dimensions (9 to BRIDGE_INLINE_DIMS), out of the common path: the
   tail also says whether it wrote other values there than those (bridge_view). */
__attribute__((noinline)) static int bridge_read_tail_kept(AtenTensorHandle h, bridge_view* v,
                                                           const bridge_installed* st) {
  uint64_t changed;
  int rc;
  v->m.sizes = v->inline_dims;
  v->m.strides = v->m.sizes + v->m.ndim;
  rc = torch_borrow_read_tail(&st->g, &st->t, h, &v->m, &changed);
  if (changed != 0) v->tuple_ndim = -1; /* whatever rc: the room was written */
  return rc;
}

/* Room in a heap for more than BRIDGE_INLINE_DIMS dimensions: a fresh bytes object
   nobody else sees yet, ours to fill. Not GC-tracked, so allocating it runs no Python
   code. */
__attribute__((noinline)) static int bridge_heap_room(bridge_view* v) {
  PyObject* heap = PyBytes_FromStringAndSize(NULL, 2 * v->m.ndim * (Py_ssize_t)sizeof(int64_t));
  if (heap == NULL) return BRIDGE_E_RAISED;
  Py_XSETREF(v->heap, heap);
  v->m.sizes = (int64_t*)PyBytes_AS_STRING(heap);
  return BRIDGE_OK;
}

/* The metadata through one handle, straight into v: the reader's head, room for the
   dimensions, the reader's tail (torch_borrow/reader.h). The room (bridge_view): up to
   BRIDGE_HALF_DIMS, the half of inline_dims the view's tuples were not made from, so
   the copy is the reader's alone (tuples made from the whole of it are stale once a
   half is written); up to BRIDGE_INLINE_DIMS, the whole of it (bridge_read_tail_kept
   where tuples of that ndim were made from it); beyond, a heap. */
BRIDGE_INLINE int bridge_read(AtenTensorHandle h, bridge_view* v, const bridge_installed* st) {
  int64_t n;
  int rc = torch_borrow_read_head(&st->g, &st->t, h, &v->m);
  if (__builtin_expect(rc != BRIDGE_OK, 0)) return rc;
  n = v->m.ndim;
  if (__builtin_expect((uint64_t)n <= BRIDGE_HALF_DIMS, 1)) {
    if (__builtin_expect(v->tuple_ndim > BRIDGE_HALF_DIMS, 0)) v->tuple_ndim = -1;
    v->m.sizes = v->inline_dims + (v->tuple_half ^ 1) * 2 * BRIDGE_HALF_DIMS;
  } else {
    if (v->tuple_ndim == n && n <= BRIDGE_INLINE_DIMS) return bridge_read_tail_kept(h, v, st);
    v->tuple_ndim = -1; /* any tuples were made from what this fill writes over */
    if (n <= BRIDGE_INLINE_DIMS)
      v->m.sizes = v->inline_dims;
    else if ((rc = bridge_heap_room(v)) != BRIDGE_OK)
      return rc;
  }
  v->m.strides = v->m.sizes + n;
  return torch_borrow_read_tail(&st->g, &st->t, h, &v->m, NULL);
}

/* A handle for obj (through the gate already) on path, its metadata read into v. Every
   path refuses the same tensors first: those whose metadata is not plain C++ state (the
   borrow by itself; the owned and pointer-trick paths through shim_ext's
   torch_borrow_custom_metadata), so from here to the view nothing but C++ runs. Without
   shim_ext the owned path reads by torch_borrow/tables.h's rule (consumer.h's owned
   route's too): a type whose __torch_dispatch__ is not torch's default is refused
   before the handle; the owning handle's getters are C++ or fail (refused, and named by
   the key set: _errors.pxi, _refuse).
   Everything comes from the one snapshot st; a path it lacks (chosen under another
   snapshot) is a refusal, never a call through a null pointer; ready: the caller found
   path ready in st itself (bridge_ready), so that is not asked twice. An owned handle
   that failed a check is left in f->owned, for the caller to delete once the words are
   made. */
BRIDGE_INLINE int bridge_acquire_read(PyObject* obj, int path, bridge_view* v,
                                      const bridge_installed* st, bridge_failure* f,
                                      int ready) {
  AtenTensorHandle h;
  int rc;
  if (__builtin_expect(!ready && !st->getters_ok, 0)) return BRIDGE_E_RESOLVING;
  if (path == BRIDGE_BORROW && (ready || st->borrow_fn != NULL)) {
    if (st->borrow_fn(obj, &h)) return BRIDGE_E_BORROW; /* borrowed: THPVariable::cdata */
    return bridge_read(h, v, st);
  }
  if (path == BRIDGE_FALLBACK && (ready || (st->fallback_ok && st->custom_metadata != NULL))) {
    f->layout = -1;
    if ((f->reasons = st->custom_metadata(obj, &f->layout)) != 0) return BRIDGE_E_CUSTOM;
    h = (AtenTensorHandle)((char*)obj + st->fallback_offset); /* borrowed */
    return bridge_read(h, v, st);
  }
  if (path == BRIDGE_OWNED && (ready || st->owned_fn != NULL)) {
    if (st->custom_metadata != NULL) {
      f->layout = -1;
      if ((f->reasons = st->custom_metadata(obj, &f->layout)) != 0) return BRIDGE_E_CUSTOM;
    } else if (__builtin_expect(!torch_borrow_dispatch_is_default(&st->keys, obj), 0)) {
      return BRIDGE_E_DISPATCH;
    }
    if (st->owned_fn(obj, &h)) return BRIDGE_E_OWNED; /* new reference: ours to delete */
    if ((rc = bridge_read(h, v, st)) != BRIDGE_OK) {
      f->owned = h;
      return rc;
    }
    st->delete_fn(h);
    return BRIDGE_OK;
  }
  return BRIDGE_E_NOT_INSTALLED;
}

/* What bridge_fill does beyond the handle and the read: the gate (the native loop's
   handle + read alone go without it), and whether st was found ready for the path. */
enum { BRIDGE_FILL_GATE = 1, BRIDGE_FILL_READY = 2 };

/* Gate, handle and read (flags: BRIDGE_FILL_*); on a refusal the words (an exception
   set) and -1. */
BRIDGE_INLINE int bridge_fill(PyObject* obj, int path, bridge_view* v,
                              const bridge_installed* st, int flags) {
  bridge_failure f;
  int rc = BRIDGE_OK;
  f.owned = NULL;
  f.path = path;
  if ((!(flags & BRIDGE_FILL_GATE) ||
       __builtin_expect((rc = bridge_gate(obj, path, st)) == BRIDGE_OK, 1)) &&
      __builtin_expect((rc = bridge_acquire_read(obj, path, v, st, &f,
                                                 flags & BRIDGE_FILL_READY)) == BRIDGE_OK,
                       1))
    return 0;
  if (rc != BRIDGE_E_RAISED) bridge_cold_refuse(obj, v, rc, &f, st);
  if (f.owned != NULL) st->delete_fn(f.owned);
  return -1;
}

#endif /* BRIDGE_READ_H */
