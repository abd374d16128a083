/* The one reader (bridge._bridge): type gate, handle, the layout, seven
 * aoti_torch_get_* getters, storage offset and size, torch_is_conj / torch_is_neg,
 * and every check, written straight into a view's fields. C decides; the words of
 * each refusal are Cython's (bridge/_errors.pxi: bridge_cold.refuse gets the stage
 * that failed and what was read), so a refusal's message and type are one function's.
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
  uintptr_t ptr;       /* first element, storage offset included */
  int64_t ndim;
  int64_t* sizes;      /* -> inline_dims, or into heap */
  int64_t* strides;
  PyObject* heap;      /* bytes holding 2 * ndim int64 beyond BRIDGE_INLINE_DIMS */
  PyObject* shape_t;   /* tuples made on first use (under a critical section), kept */
  PyObject* strides_t; /* by a freed view for its next fill (_bridge_view.h) */
  /* The resolution the view was made under: its dtype and device names are looked
     up there when read (snapshots are never freed nor changed). */
  const bridge_installed* st;
  int32_t dtype;
  int32_t device_type;
  int32_t device_index;
  int8_t itemsize;
  int8_t path;
  int8_t tuples_checked; /* 1: shape_t / strides_t were checked against this fill */
  int64_t inline_dims[2 * BRIDGE_INLINE_DIMS];
  /* What shape_t / strides_t were made from: ndim (-1: nothing yet), then, up to
     BRIDGE_INLINE_DIMS dimensions, the sizes and strides. Written only where a tuple is
     made, never by a fill: the fill costs nothing more, and a read compares. */
  int64_t tuple_ndim;
  int64_t tuple_dims[2 * BRIDGE_INLINE_DIMS];
} bridge_view;

/* Where a read stopped (0: it did not). BRIDGE_E_RAISED: a Python exception is set. */
enum {
  BRIDGE_OK = 0,
  BRIDGE_E_RAISED,
  BRIDGE_E_TYPE,          /* the real type does not derive from torch.Tensor */
  BRIDGE_E_RESOLVING,     /* the snapshot has no tables: a re-resolution is under way */
  BRIDGE_E_NOT_INSTALLED, /* the path is not in this snapshot */
  BRIDGE_E_BORROW,        /* torch_tensor_borrow_from_pyobject refused */
  BRIDGE_E_CUSTOM,        /* torch_borrow_custom_metadata: reasons, layout */
  BRIDGE_E_OWNED,         /* torch_tensor_from_pyobject failed */
  BRIDGE_E_GETTER,        /* a getter returned an error */
  BRIDGE_E_LAYOUT,        /* not strided: layout */
  BRIDGE_E_CONJ,
  BRIDGE_E_NEG,
  BRIDGE_E_DTYPE,         /* no itemsize for the dtype code */
  BRIDGE_E_META,
  BRIDGE_E_DEVICE,        /* a device type code the table does not know */
  BRIDGE_E_NO_MEMORY,     /* elements, but the storage holds no memory: offset */
  BRIDGE_E_OUTSIDE        /* elements outside the storage: offset, nbytes, last */
};

/* What the refusal's words need beyond the view's fields. */
typedef struct {
  int32_t reasons; /* BRIDGE_E_CUSTOM */
  int32_t layout;  /* BRIDGE_E_CUSTOM (-1: custom), BRIDGE_E_LAYOUT */
  int64_t offset;  /* storage offset, in elements */
  int64_t nbytes;  /* the storage's size */
  int64_t last;    /* one past the furthest byte the elements reach (saturated) */
  AtenTensorHandle owned; /* an owned handle to delete after the words are made */
  int path;        /* the path asked for (BRIDGE_E_NOT_INSTALLED) */
} bridge_failure;

/* The cold paths, in Cython, installed by the module at import (bridge/_errors.pxi,
   bridge/_view.pxi): each returns -1 with an exception set (refuse always does). */
typedef struct {
  int (*refuse)(PyObject* obj, bridge_view* v, int stage, const bridge_failure* f,
                const bridge_installed* st);
  /* torch.Tensor.is_conj / .is_neg at Python level (no torch_is_conj in this torch) */
  int (*bits_slow)(PyObject* obj, const bridge_installed* st);
  /* the owned path's checks without shim_ext's torch_borrow_custom_metadata */
  int (*without_shim_ext)(PyObject* obj, const bridge_installed* st);
  /* view(): choose the default path (Python: bridge._select); returns it or -1 */
  int (*choose)(void);
  /* view_<path>(): PathUnavailableError unless the path can run */
  int (*require)(int path);
  /* the privateuse1 device's name, as torch names it now (new reference) */
  PyObject* (*privateuse1_name)(const bridge_installed* st);
  PyObject* (*repr)(PyObject* view);
} bridge_cold_fns;
static bridge_cold_fns bridge_cold;

/* Whether the elements a tensor describes reach outside its storage's nbytes: storage
   offset plus, per dimension, (size - 1) * stride, in elements, times the itemsize.
   torch never makes negative strides, but they are counted towards the low end all
   the same (the slow path, in 128 bits, saturating, so no size or stride overflows
   it). Returns 0 (inside, or no elements), 1 (reaches past the end), 2 (before the
   start); *last is one past the furthest byte (saturated). */
__attribute__((noinline)) static int bridge_outside_storage_slow(
    int64_t ndim, const int64_t* sizes, const int64_t* strides, int64_t offset,
    int64_t itemsize, int64_t nbytes, int64_t* last) {
  const __int128 cap = (__int128)1 << 100;
  __int128 hi = offset, lo = offset;
  for (int64_t i = 0; i < ndim; ++i) {
    __int128 d = (__int128)(sizes[i] - 1) * strides[i];
    if (d >= 0) {
      hi += d;
      if (hi > cap) hi = cap;
    } else {
      lo += d;
      if (lo < -cap) lo = -cap;
    }
  }
  __int128 end = (hi + 1) * itemsize;
  *last = end > (__int128)INT64_MAX ? INT64_MAX : (int64_t)end;
  if (lo < 0) return 2;
  return end > nbytes ? 1 : 0;
}
static inline int bridge_outside_storage(int64_t ndim, const int64_t* sizes,
                                         const int64_t* strides, int64_t offset,
                                         int64_t itemsize, int64_t nbytes, int64_t* last) {
  int64_t hi = offset, d, end; /* hi: the furthest element, in elements */
  int bad = offset < 0;        /* a negative term or an overflow: the slow path */
  for (int64_t i = 0; i < ndim; ++i) {
    if (sizes[i] == 0) {
      *last = 0;
      return 0; /* no elements */
    }
    bad |= (sizes[i] < 0) | (strides[i] < 0);
    bad |= __builtin_mul_overflow(sizes[i] - 1, strides[i], &d);
    bad |= __builtin_add_overflow(hi, d, &hi);
  }
  bad |= __builtin_add_overflow(hi, (int64_t)1, &end);
  bad |= __builtin_mul_overflow(end, itemsize, &end);
  if (bad)
    return bridge_outside_storage_slow(ndim, sizes, strides, offset, itemsize, nbytes, last);
  *last = end;
  return end > nbytes;
}

/* The real type, never isinstance(): __class__ can lie, the memory layout cannot. */
static inline int bridge_is_tensor(PyObject* obj, const bridge_installed* st) {
  PyTypeObject* tp = Py_TYPE(obj);
  if (tp == st->tensor_tp || tp == st->parameter_tp) return tp != NULL;
  return st->tensor_tp != NULL && PyType_IsSubtype(tp, st->tensor_tp);
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
  if (bridge_cold.bits_slow(obj, st) < 0) return BRIDGE_E_RAISED;
  if (!bridge_is_tensor(obj, st)) return BRIDGE_E_TYPE;
  return BRIDGE_OK;
}

/* Room for v->ndim dimensions each in v->sizes / v->strides. */
static inline int bridge_dims(bridge_view* v) {
  if (__builtin_expect(v->ndim <= BRIDGE_INLINE_DIMS, 1)) {
    v->sizes = v->inline_dims;
  } else {
    /* A fresh bytes object nobody else sees yet: ours to fill. Not GC-tracked, so
       allocating it runs no Python code. */
    PyObject* heap = PyBytes_FromStringAndSize(NULL, 2 * v->ndim * (Py_ssize_t)sizeof(int64_t));
    if (heap == NULL) return BRIDGE_E_RAISED;
    Py_XSETREF(v->heap, heap);
    v->sizes = (int64_t*)PyBytes_AS_STRING(heap);
  }
  v->strides = v->sizes + v->ndim;
  return BRIDGE_OK;
}

/* Sizes and strides, copied out of the TensorImpl (p, q: what the two getters
   returned; nothing but the strides getter, C++ reading the same TensorImpl, runs
   between the first getter and the copy), and in the same pass the furthest element
   they reach from the storage offset, in elements: *hi. Returns 1 where the cheap sum
   cannot be trusted (a negative term, a size or stride of 2^28 or more, over 64
   dimensions, a negative offset: the overflow-checked bridge_outside_storage decides),
   else 0. Below those bounds no term reaches 2^56 and no sum of 64 of them 2^62, so
   the unsigned sum is exact. A size 0 (no elements) is looked for only where a check
   fails (bridge_no_elements). */
#define BRIDGE_CHEAP_BITS 28
BRIDGE_INLINE int bridge_copy_dims(bridge_view* v, const int64_t* p, const int64_t* q,
                                   int64_t offset, int64_t* hi) {
  /* restrict: the view's arrays and the TensorImpl's never overlap. */
  int64_t* __restrict sizes = v->sizes;
  int64_t* __restrict strides = v->strides;
  const int64_t* __restrict ps = p;
  const int64_t* __restrict qs = q;
  int64_t n = v->ndim;
  uint64_t any = 0, sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t size = ps[i], stride = qs[i];
    sizes[i] = size;
    strides[i] = stride;
    any |= (uint64_t)size | (uint64_t)stride;
    sum += ((uint64_t)size - 1) * (uint64_t)stride; /* wraps; used only when exact */
  }
  if (__builtin_expect((any >> BRIDGE_CHEAP_BITS) != 0 || n > 64 || offset < 0, 0)) {
    *hi = 0; /* unused: the caller takes the checked path */
    return 1;
  }
  return __builtin_add_overflow(offset, (int64_t)sum, hi);
}

/* A tensor without elements (a zero size; a product could overflow, so look for the
   zero) needs neither memory nor room in its storage: torch reports its pointer as 0. */
static int bridge_no_elements(const bridge_view* v) {
  for (int64_t i = 0; i < v->ndim; ++i)
    if (v->sizes[i] == 0) return 1;
  return 0;
}

/* The checks on what the getters returned. aoti_torch_get_data_ptr returns
   TensorImpl::data(): the storage's base plus itemsize * storage_offset bytes, never
   checking that the base exists, and null for a tensor without elements (data_impl in
   c10/core/TensorImpl.h, 2.13-2.15). A freed storage (untyped_storage().resize_(0)) or
   a placeholder one (functional, lazy) has a null base, so at a non-zero offset the
   getter fabricates a small, plausible address: the base, ptr - offset * itemsize in
   unsigned arithmetic (the exact inverse of torch's sum), is the proof. No memory is
   fine only for a tensor without elements (bridge_no_elements), whose pointer
   torch reports as 0. Then the elements must lie inside the storage's nbytes. */
BRIDGE_INLINE int bridge_check(bridge_view* v, const bridge_installed* st,
                               bridge_failure* f, int slow, int64_t hi) {
  int32_t dtype = v->dtype, device = v->device_type;
  int64_t end;
  if (__builtin_expect((uint32_t)dtype >= BRIDGE_NCODES || st->itemsize[dtype] <= 0, 0))
    return BRIDGE_E_DTYPE;
  if (__builtin_expect(device == st->device_meta, 0)) return BRIDGE_E_META;
  if (__builtin_expect((uint32_t)device >= BRIDGE_NDEVICES || !st->device_known[device], 0))
    return BRIDGE_E_DEVICE;
  int64_t itemsize = v->itemsize = st->itemsize[dtype];
  if (__builtin_expect(
          v->ptr == 0 || v->ptr - (uintptr_t)f->offset * (uintptr_t)itemsize == 0, 0))
    return bridge_no_elements(v) ? BRIDGE_OK : BRIDGE_E_NO_MEMORY;
  if (__builtin_expect(!slow && !__builtin_add_overflow(hi, (int64_t)1, &end) &&
                           !__builtin_mul_overflow(end, itemsize, &end) &&
                           end <= f->nbytes, 1)) {
    f->last = end;
    return BRIDGE_OK;
  }
  if (bridge_outside_storage(v->ndim, v->sizes, v->strides, f->offset, itemsize, f->nbytes,
                             &f->last))
    return BRIDGE_E_OUTSIDE;
  return BRIDGE_OK;
}

/* The metadata through one handle, straight into v. */
BRIDGE_INLINE int bridge_read(AtenTensorHandle h, bridge_view* v, const bridge_installed* st,
                              bridge_failure* f) {
  const bridge_getters* g = &st->g;
  int64_t *p, *q, hi;
  int rc, slow;
  if (g->layout(h, &f->layout)) return BRIDGE_E_GETTER;
  if (__builtin_expect(f->layout != st->layout_strided, 0)) return BRIDGE_E_LAYOUT;
  if (g->data_ptr(h, (void**)&v->ptr) || g->storage_offset(h, &f->offset) ||
      g->dim(h, &v->ndim))
    return BRIDGE_E_GETTER;
  if ((rc = bridge_dims(v)) != BRIDGE_OK) return rc;
  if (g->sizes(h, &p) || g->strides(h, &q)) return BRIDGE_E_GETTER;
  slow = bridge_copy_dims(v, p, q, f->offset, &hi);
  if (g->dtype(h, &v->dtype) || g->device_type(h, &v->device_type) ||
      g->device_index(h, &v->device_index))
    return BRIDGE_E_GETTER;
  if (g->is_conj != NULL) {
    bool flag = 0;
    if (g->is_conj(h, &flag)) return BRIDGE_E_GETTER;
    if (flag) return BRIDGE_E_CONJ;
    if (g->is_neg(h, &flag)) return BRIDGE_E_GETTER;
    if (flag) return BRIDGE_E_NEG;
  }
  if (g->storage_size(h, &f->nbytes)) return BRIDGE_E_GETTER;
  return bridge_check(v, st, f, slow, hi);
}

/* A handle for obj (through the gate already) on path, its metadata read into v. Every
   path refuses the same tensors first: those whose metadata is not plain C++ state (the
   borrow by itself; the owned and pointer-trick paths through shim_ext's
   torch_borrow_custom_metadata), so from here to the view nothing but C++ runs.
   Everything comes from the one snapshot st; a path it lacks (chosen under another
   snapshot) is a refusal, never a call through a null pointer. An owned handle that
   failed a check is left in f->owned, for the caller to delete once the words are made. */
BRIDGE_INLINE int bridge_acquire_read(PyObject* obj, int path, bridge_view* v,
                                      const bridge_installed* st, bridge_failure* f) {
  AtenTensorHandle h;
  int rc;
  if (__builtin_expect(!st->getters_ok, 0)) return BRIDGE_E_RESOLVING;
  if (path == BRIDGE_BORROW && st->borrow_fn != NULL) {
    if (st->borrow_fn(obj, &h)) return BRIDGE_E_BORROW; /* borrowed: THPVariable::cdata */
    return bridge_read(h, v, st, f);
  }
  if (path == BRIDGE_FALLBACK && st->fallback_ok && st->custom_metadata != NULL) {
    f->layout = -1;
    if ((f->reasons = st->custom_metadata(obj, &f->layout)) != 0) return BRIDGE_E_CUSTOM;
    h = (AtenTensorHandle)((char*)obj + st->fallback_offset); /* borrowed */
    return bridge_read(h, v, st, f);
  }
  if (path == BRIDGE_OWNED && st->owned_fn != NULL) {
    if (st->custom_metadata != NULL) {
      f->layout = -1;
    if ((f->reasons = st->custom_metadata(obj, &f->layout)) != 0) return BRIDGE_E_CUSTOM;
    } else if (bridge_cold.without_shim_ext(obj, st) < 0) {
      return BRIDGE_E_RAISED;
    }
    if (st->owned_fn(obj, &h)) return BRIDGE_E_OWNED; /* new reference: ours to delete */
    if ((rc = bridge_read(h, v, st, f)) != BRIDGE_OK) {
      f->owned = h;
      return rc;
    }
    st->delete_fn(h);
    return BRIDGE_OK;
  }
  return BRIDGE_E_NOT_INSTALLED;
}

/* Gate (unless gate is 0: the native loop's handle + read alone), handle and read; on
   a refusal the words (an exception set) and -1. */
BRIDGE_INLINE int bridge_fill(PyObject* obj, int path, bridge_view* v,
                              const bridge_installed* st, int gate) {
  bridge_failure f;
  int rc = BRIDGE_OK;
  f.owned = NULL;
  f.path = path;
  if ((!gate || __builtin_expect((rc = bridge_gate(obj, path, st)) == BRIDGE_OK, 1)) &&
      __builtin_expect((rc = bridge_acquire_read(obj, path, v, st, &f)) == BRIDGE_OK, 1))
    return 0;
  if (rc != BRIDGE_E_RAISED) bridge_cold.refuse(obj, v, rc, &f, st);
  if (f.owned != NULL) st->delete_fn(f.owned);
  return -1;
}

/* The gate alone, with its words (the native loop's gate outside a critical section). */
static inline int bridge_gate_or_raise(PyObject* obj, const bridge_installed* st) {
  bridge_failure f;
  int rc = bridge_gate(obj, -1, st);
  if (__builtin_expect(rc == BRIDGE_OK, 1)) return 0;
  f.owned = NULL;
  f.path = -1;
  if (rc != BRIDGE_E_RAISED) bridge_cold.refuse(obj, NULL, rc, &f, st);
  return -1;
}

#endif /* BRIDGE_READ_H */
