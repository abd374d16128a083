/* torch_borrow/reader.h: the one reader of a tensor handle's metadata, shared by the
 * bridge (bridge/_bridge_read.h) and torch_borrow/consumer.h. Given an AtenTensorHandle
 * (borrowed or owned: the front end makes and deletes it), it calls the stable ABI's
 * aoti_torch_get_* getters (torch/csrc/inductor/aoti_torch/c/shim.h) and torch_is_conj /
 * torch_is_neg, copies what they return, and makes every check a pointer + strides reader
 * needs: strided layout, neither bit set, a whole-byte dtype, not meta, a device torch
 * names, memory present for a tensor with elements, every element inside the storage's
 * bytes. Each check and each refusal's words live here and nowhere else; the front ends
 * add what is theirs: the handle, room for the dimensions, the type and custom-metadata
 * refusals, and the exception a refusal becomes.
 *
 * C99 and C++, GCC or Clang on a 64-bit target (the extent test's slow path counts in
 * __int128); needs no Python or torch header. No function here runs Python code or
 * allocates.
 */
#ifndef TORCH_BORROW_READER_H
#define TORCH_BORROW_READER_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <torch_borrow/abi.h>

/* The reader is inlined into each front end's read: one frame from its call. */
#define TORCH_BORROW_READER_INLINE static inline __attribute__((always_inline))

/* Dtype codes the tables cover (c10::ScalarType has fewer than 64 today). */
#define TORCH_BORROW_NCODES 256
/* Device type codes the tables cover (c10::DeviceType has fewer than 32 today). */
#define TORCH_BORROW_NDEVICES 64

/* The stable ABI's getters a handle is read with (torch/csrc/inductor/aoti_torch/c/
   shim.h), each as X(symbol, field, type): the one place their names are written. The
   layout comes first, so that a sparse tensor is refused before its data pointer is
   asked for; the storage offset proves that the data pointer's base exists (with
   data_ptr), the storage's size (nbytes) that the elements lie inside it. Each front end
   looks every symbol up by this list: torch_borrow/resolve.h expands it, the bridge
   (Cython, which cannot) walks torch_borrow_getter_symbols(). */
#define TORCH_BORROW_GETTER_LIST(X)                                                     \
  X("aoti_torch_get_layout", layout, torch_borrow_get_i32_fn)                           \
  X("aoti_torch_get_data_ptr", data_ptr, torch_borrow_get_ptr_fn)                       \
  X("aoti_torch_get_storage_offset", storage_offset, torch_borrow_get_i64_fn)           \
  X("aoti_torch_get_storage_size", storage_size, torch_borrow_get_i64_fn)               \
  X("aoti_torch_get_dim", dim, torch_borrow_get_i64_fn)                                 \
  X("aoti_torch_get_sizes", sizes, torch_borrow_get_i64p_fn)                            \
  X("aoti_torch_get_strides", strides, torch_borrow_get_i64p_fn)                        \
  X("aoti_torch_get_dtype", dtype, torch_borrow_get_i32_fn)                             \
  X("aoti_torch_get_device_type", device_type, torch_borrow_get_i32_fn)                 \
  X("aoti_torch_get_device_index", device_index, torch_borrow_get_i32_fn)
#define TORCH_BORROW_NGETTERS 10

/* The getters a handle is read with, resolved once by the front end: a field per
   TORCH_BORROW_GETTER_LIST entry, in its order, then the flag getters. */
typedef struct torch_borrow_getters {
#define TORCH_BORROW__GETTER_FIELD(symbol, field, type) type field;
  TORCH_BORROW_GETTER_LIST(TORCH_BORROW__GETTER_FIELD)
#undef TORCH_BORROW__GETTER_FIELD
  /* NULL: no C function for the bits in this torch; the front end judges them first */
  torch_borrow_get_flag_fn is_conj;
  torch_borrow_get_flag_fn is_neg;
} torch_borrow_getters;

/* A getter's symbol and the offset of its field in torch_borrow_getters. */
typedef struct torch_borrow_getter_symbol {
  const char* name;
  size_t offset;
} torch_borrow_getter_symbol;

/* TORCH_BORROW_GETTER_LIST as a table of TORCH_BORROW_NGETTERS entries, in its order: for
   a front end that cannot expand the macro (the bridge's install, in Cython). */
static inline const torch_borrow_getter_symbol* torch_borrow_getter_symbols(void) {
#define TORCH_BORROW__GETTER_ENTRY(symbol, field, type) \
  {symbol, offsetof(torch_borrow_getters, field)},
  static const torch_borrow_getter_symbol table[TORCH_BORROW_NGETTERS] = {
      TORCH_BORROW_GETTER_LIST(TORCH_BORROW__GETTER_ENTRY)};
#undef TORCH_BORROW__GETTER_ENTRY
  return table;
}

/* 1 when every getter of TORCH_BORROW_GETTER_LIST was found (the flag getters aside),
   else 0: no route reads without all ten. */
static inline int torch_borrow_getters_complete(const torch_borrow_getters* g) {
#define TORCH_BORROW__GETTER_FOUND(symbol, field, type) g->field != NULL &&
  return TORCH_BORROW_GETTER_LIST(TORCH_BORROW__GETTER_FOUND) 1;
#undef TORCH_BORROW__GETTER_FOUND
}

/* What the checks compare against, learnt once at resolution from torch's codes. */
typedef struct torch_borrow_tables {
  int32_t strided; /* aoti_torch_layout_strided() */
  int32_t meta;    /* aoti_torch_device_type_meta() */
  int8_t itemsize[TORCH_BORROW_NCODES];      /* per dtype code: bytes; 0 unknown, -1 refused */
  int8_t device_known[TORCH_BORROW_NDEVICES]; /* per device type code: torch names it */
} torch_borrow_tables;

/* What a read gives. sizes / strides point at room the front end provides for ndim
   values each (torch_borrow_read_tail copies into it). */
typedef struct torch_borrow_fields {
  void* ptr;        /* data_ptr(): the first element, storage offset applied */
  int64_t ndim;
  int64_t* sizes;   /* elements */
  int64_t* strides; /* elements, not bytes */
  int64_t offset;   /* storage offset, elements */
  int64_t nbytes;   /* the storage's size, bytes */
  int32_t dtype;    /* aoti_torch_dtype_* code */
  int32_t device_type;  /* aoti_torch_device_type_* code (c10::DeviceType) */
  int32_t device_index; /* -1: none (CPU) */
  int32_t layout;       /* aoti_torch_layout_* code */
  int8_t itemsize;      /* bytes per element of dtype (the tables' type); set by the check */
} torch_borrow_fields;

/* Where a read stopped. Front ends number their own stages from TORCH_BORROW_READ_NSTAGES. */
enum {
  TORCH_BORROW_READ_OK = 0,
  TORCH_BORROW_READ_RAISED,    /* the front end's room failed: a Python exception is set */
  TORCH_BORROW_READ_GETTER,    /* a getter returned an error (torch's message is pending) */
  TORCH_BORROW_READ_LAYOUT,    /* not strided: layout */
  TORCH_BORROW_READ_CONJ,      /* the conjugate bit */
  TORCH_BORROW_READ_NEG,       /* the negative bit */
  TORCH_BORROW_READ_DTYPE,     /* no whole-byte itemsize for the dtype code */
  TORCH_BORROW_READ_META,      /* a meta tensor */
  TORCH_BORROW_READ_DEVICE,    /* a device type code torch names no device for */
  TORCH_BORROW_READ_NO_MEMORY, /* elements, but the storage holds no memory: ptr, offset */
  TORCH_BORROW_READ_OUTSIDE,   /* elements outside the storage: offset, nbytes */
  TORCH_BORROW_READ_NSTAGES
};

/* --- the extent test --------------------------------------------------------------- */

/* Whether the elements a tensor describes reach outside its storage's nbytes: storage
   offset plus, per dimension, (size - 1) * stride, in elements, times the itemsize.
   torch never makes negative strides, but they are counted towards the low end all the
   same (the slow path, in 128 bits, saturating, so no size or stride overflows it).
   Returns 0 (inside, or no elements), 1 (reaches past the end), 2 (before the start);
   *last is one past the furthest byte (saturated). */
__attribute__((noinline)) static int torch_borrow_outside_storage_slow(
    int64_t ndim, const int64_t* sizes, const int64_t* strides, int64_t offset,
    int64_t itemsize, int64_t nbytes, int64_t* last) {
  const __int128 cap = (__int128)1 << 100;
  __int128 hi = offset, lo = offset, end;
  int64_t i;
  for (i = 0; i < ndim; ++i) {
    __int128 d;
    if (sizes[i] == 0) {
      *last = 0;
      return 0; /* no elements */
    }
    d = (__int128)(sizes[i] - 1) * strides[i];
    if (d >= 0) {
      hi += d;
      if (hi > cap) hi = cap;
    } else {
      lo += d;
      if (lo < -cap) lo = -cap;
    }
  }
  end = (hi + 1) * itemsize;
  *last = end > (__int128)INT64_MAX ? INT64_MAX : (int64_t)end;
  if (lo < 0) return 2;
  return end > nbytes ? 1 : 0;
}
static inline int torch_borrow_outside_storage(int64_t ndim, const int64_t* sizes,
                                               const int64_t* strides, int64_t offset,
                                               int64_t itemsize, int64_t nbytes,
                                               int64_t* last) {
  int64_t hi = offset, d, end; /* hi: the furthest element, in elements */
  int bad = offset < 0;        /* a negative term or an overflow: the slow path */
  int64_t i;
  for (i = 0; i < ndim; ++i) {
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
    return torch_borrow_outside_storage_slow(ndim, sizes, strides, offset, itemsize, nbytes,
                                             last);
  *last = end;
  return end > nbytes;
}

/* --- the read ----------------------------------------------------------------------- */

/* The layout (refused unless strided), the data pointer, the storage offset and the
   number of dimensions. The front end then gives x->sizes / x->strides room for
   x->ndim values each, and calls torch_borrow_read_tail. */
TORCH_BORROW_READER_INLINE int torch_borrow_read_head(const torch_borrow_getters* g,
                                                      const torch_borrow_tables* t,
                                                      AtenTensorHandle h,
                                                      torch_borrow_fields* x) {
  if (g->layout(h, &x->layout)) return TORCH_BORROW_READ_GETTER;
  if (__builtin_expect(x->layout != t->strided, 0)) return TORCH_BORROW_READ_LAYOUT;
  if (g->data_ptr(h, &x->ptr) || g->storage_offset(h, &x->offset) ||
      g->dim(h, &x->ndim))
    return TORCH_BORROW_READ_GETTER;
  return TORCH_BORROW_READ_OK;
}

/* Sizes and strides, copied out of the TensorImpl (p, q: what the two getters returned;
   nothing but the strides getter, C++ reading the same TensorImpl, runs between the
   first getter and the copy), and in the same pass the furthest element they reach from
   the storage offset, in elements: *hi. Returns 1 where the cheap sum cannot be trusted
   (a negative term, a size or stride of 2^28 or more, over 64 dimensions, a negative
   offset: the overflow-checked torch_borrow_outside_storage decides), else 0. Below
   those bounds no term reaches 2^56 and no sum of 64 of them 2^62, so the unsigned sum
   is exact. A size 0 (no elements) is looked for only where a check fails. changed:
   NULL (a constant: the compare is compiled out), or where to store the bits in which
   the room's values before the copy differ from those after, for a front end that keeps
   something made from the last values read into the same room (the bridge's tuples). */
#define TORCH_BORROW_CHEAP_BITS 28
TORCH_BORROW_READER_INLINE int torch_borrow_copy_dims(torch_borrow_fields* x,
                                                      const int64_t* p, const int64_t* q,
                                                      int64_t* hi, uint64_t* changed) {
  /* restrict: the front end's room and the TensorImpl's arrays never overlap. */
  int64_t* __restrict sizes = x->sizes;
  int64_t* __restrict strides = x->strides;
  const int64_t* __restrict ps = p;
  const int64_t* __restrict qs = q;
  int64_t n = x->ndim, offset = x->offset, i;
  uint64_t any = 0, sum = 0, diff = 0;
  for (i = 0; i < n; ++i) {
    int64_t size = ps[i], stride = qs[i];
    if (changed != NULL) diff |= (uint64_t)(sizes[i] ^ size) | (uint64_t)(strides[i] ^ stride);
    sizes[i] = size;
    strides[i] = stride;
    any |= (uint64_t)size | (uint64_t)stride;
    sum += ((uint64_t)size - 1) * (uint64_t)stride; /* wraps; used only when exact */
  }
  if (changed != NULL) *changed = diff;
  if (__builtin_expect((any >> TORCH_BORROW_CHEAP_BITS) != 0 || n > 64 || offset < 0, 0)) {
    *hi = 0; /* unused: the caller takes the checked path */
    return 1;
  }
  return __builtin_add_overflow(offset, (int64_t)sum, hi);
}

/* A tensor without elements (a zero size; a product could overflow, so look for the
   zero) needs neither memory nor room in its storage: torch reports its pointer as 0. */
static inline int torch_borrow_no_elements(const torch_borrow_fields* x) {
  int64_t i;
  for (i = 0; i < x->ndim; ++i)
    if (x->sizes[i] == 0) return 1;
  return 0;
}

/* The checks on the fields read (by the getters, or by another source that fills x:
   consumer.h's DLPack route, with slow = 1). aoti_torch_get_data_ptr returns
   TensorImpl::data(): the storage's base plus itemsize * storage_offset bytes, never
   checking that the base exists, and null for a tensor without elements (data_impl in
   c10/core/TensorImpl.h, 2.13-2.15). A freed storage (untyped_storage().resize_(0)) or a
   placeholder one (functional, lazy) has a null base, so at a non-zero offset the getter
   fabricates a small, plausible address: the base, ptr - offset * itemsize in unsigned
   arithmetic (the exact inverse of torch's sum), is the proof. No memory is fine only
   for a tensor without elements, whose pointer torch reports as 0. Then the elements
   must lie inside the storage's nbytes (hi: torch_borrow_copy_dims's sum, unless slow). */
TORCH_BORROW_READER_INLINE int torch_borrow_check(const torch_borrow_tables* t,
                                                  torch_borrow_fields* x, int slow,
                                                  int64_t hi) {
  int32_t dtype = x->dtype, device = x->device_type;
  int64_t end, last, itemsize; /* last: unused here (the words find it again) */
  if (__builtin_expect((uint32_t)dtype >= TORCH_BORROW_NCODES || t->itemsize[dtype] <= 0, 0))
    return TORCH_BORROW_READ_DTYPE;
  if (__builtin_expect(device == t->meta, 0)) return TORCH_BORROW_READ_META;
  if (__builtin_expect((uint32_t)device >= TORCH_BORROW_NDEVICES || !t->device_known[device],
                       0))
    return TORCH_BORROW_READ_DEVICE;
  itemsize = x->itemsize = t->itemsize[dtype];
  if (__builtin_expect(x->ptr == NULL ||
                           (uintptr_t)x->ptr - (uintptr_t)x->offset * (uintptr_t)itemsize == 0,
                       0)) {
    return torch_borrow_no_elements(x) ? TORCH_BORROW_READ_OK : TORCH_BORROW_READ_NO_MEMORY;
  }
  if (__builtin_expect(!slow && !__builtin_add_overflow(hi, (int64_t)1, &end) &&
                           !__builtin_mul_overflow(end, itemsize, &end) && end <= x->nbytes,
                       1))
    return TORCH_BORROW_READ_OK;
  if (torch_borrow_outside_storage(x->ndim, x->sizes, x->strides, x->offset, itemsize,
                                   x->nbytes, &last))
    return TORCH_BORROW_READ_OUTSIDE;
  return TORCH_BORROW_READ_OK;
}

/* The rest of the read, into the room the front end gave: sizes and strides, dtype,
   device, the conj / neg bits (where g has their functions), the storage's size, then
   torch_borrow_check. changed: torch_borrow_copy_dims's (0 where the getters fail
   before the copy, which then leaves the room as it was). */
TORCH_BORROW_READER_INLINE int torch_borrow_read_tail(const torch_borrow_getters* g,
                                                      const torch_borrow_tables* t,
                                                      AtenTensorHandle h,
                                                      torch_borrow_fields* x,
                                                      uint64_t* changed) {
  int64_t *p, *q, hi;
  int slow;
  if (changed != NULL) *changed = 0;
  if (g->sizes(h, &p) || g->strides(h, &q)) return TORCH_BORROW_READ_GETTER;
  slow = torch_borrow_copy_dims(x, p, q, &hi, changed);
  if (g->dtype(h, &x->dtype) || g->device_type(h, &x->device_type) ||
      g->device_index(h, &x->device_index))
    return TORCH_BORROW_READ_GETTER;
  if (g->is_conj != NULL) {
    bool flag = 0;
    if (g->is_conj(h, &flag)) return TORCH_BORROW_READ_GETTER;
    if (flag) return TORCH_BORROW_READ_CONJ;
    if (g->is_neg(h, &flag)) return TORCH_BORROW_READ_GETTER;
    if (flag) return TORCH_BORROW_READ_NEG;
  }
  if (g->storage_size(h, &x->nbytes)) return TORCH_BORROW_READ_GETTER;
  return torch_borrow_check(t, x, slow, hi);
}

/* --- the words of a refusal --------------------------------------------------------- */

/* The words of the stages that need no field, for a front end that judges the same
   thing another way (consumer.h's key-set check); TORCH_BORROW_WORDS_META ends with the
   front end's verb. */
#define TORCH_BORROW_WORDS_CONJ                                                          \
  "the tensor has its conjugate bit set: its memory holds the unconjugated values; call " \
  ".resolve_conj() first"
#define TORCH_BORROW_WORDS_NEG                                                           \
  "the tensor has its negative bit set: its memory holds the unnegated values; call "   \
  ".resolve_neg() first"
#define TORCH_BORROW_WORDS_META "a meta tensor has no data; only tensors with storage can be "

/* Appends to buf (n bytes, NUL-terminated, cut short where it is full). */
__attribute__((format(printf, 4, 5))) static inline size_t torch_borrow_words_add(
    char* buf, size_t n, size_t at, const char* fmt, ...) {
  va_list ap;
  int k;
  if (at >= n) return at;
  va_start(ap, fmt);
  k = vsnprintf(buf + at, n - at, fmt, ap);
  va_end(ap);
  return k < 0 ? at : at + (size_t)k;
}

/* The words of a refusal for a tensor whose metadata is not plain C++ state (bits:
   the TORCH_BORROW_CUSTOM_* bits of torch_borrow_custom_metadata, > 0; type_name: the
   object's type as tp_name gives it) into buf (n > 0 bytes): one text per cause, the
   first of the Python dispatch key, sizes or strides computed by a TensorImpl subclass,
   a device or layout computed elsewhere. Returns buf. */
static inline const char* torch_borrow_custom_words(int32_t bits, const char* type_name,
                                                    char* buf, size_t n) {
  if (n == 0) return buf;
  if (bits & TORCH_BORROW_CUSTOM_PYTHON_KEY)
    /* named by the key, not by the class: a __class__ reassigned to torch.Tensor keeps
       the TensorImpl, and its key, of the subclass that made it */
    snprintf(buf, n, "this %s's TensorImpl carries torch's Python dispatch key (a subclass "
             "that overrides __torch_dispatch__ made it): its metadata is computed in "
             "Python and cannot be read safely through a handle; view a plain tensor "
             "instead", type_name);
  else if (bits & (TORCH_BORROW_CUSTOM_SIZES | TORCH_BORROW_CUSTOM_STRIDES))
    snprintf(buf, n, "this %s's sizes and strides are computed by a TensorImpl subclass "
             "(functionalized, vmap-batched, symbolic or other wrapper tensors): they are "
             "not plain C++ state and cannot be read safely through a handle; view the "
             "underlying plain tensor instead", type_name);
  else
    snprintf(buf, n, "this %s's device or layout is computed by a TensorImpl subclass or "
             "in Python (torch.Tensor._make_subclass(..., dispatch_device=True or "
             "dispatch_layout=True)): reading it could run Python code, so it cannot be "
             "read safely through a handle; view a plain tensor instead", type_name);
  return buf;
}

/* Whether a refusal by shim_ext's metadata check (bits > 0, the TORCH_BORROW_CUSTOM_* bits
   of torch_borrow_custom_metadata; layout: the layout code it reports, -1 where the
   layout itself is custom; strided: the tables' code) is worded as the tensor's layout
   (TORCH_BORROW_READ_LAYOUT's words) rather than as its bits (torch_borrow_custom_words):
   the one place the order is decided, for every front end. A layout known not to be
   strided comes first: "a tensor with layout _mkldnn ... (call .to_dense() first)" says
   what the tensor is and what to do with it, where the custom-sizes words an opaque
   TensorImpl (MKL-DNN's, sparse ones') also earns name only how torch stores it, and
   point at wrapper tensors it is not. The Python key comes before the layout: such a
   tensor's metadata, its layout included, is whatever Python answers. */
static inline int torch_borrow_custom_names_layout(int32_t bits, int32_t layout,
                                                   int32_t strided) {
  return !(bits & TORCH_BORROW_CUSTOM_PYTHON_KEY) && layout >= 0 && layout != strided;
}

/* values as Python writes a tuple of ints: (), (5,), (2, 3). */
static inline size_t torch_borrow_words_tuple(char* buf, size_t n, size_t at,
                                              const int64_t* values, int64_t count) {
  int64_t i;
  at = torch_borrow_words_add(buf, n, at, "(");
  for (i = 0; i < count; ++i)
    at = torch_borrow_words_add(buf, n, at, i ? ", %lld" : "%lld", (long long)values[i]);
  return torch_borrow_words_add(buf, n, at, count == 1 ? ",)" : ")");
}

/* The words of a refusal at stage (TORCH_BORROW_READ_LAYOUT .. _OUTSIDE; layout_name:
   the front end's name for x->layout, or NULL) from the fields read, into buf (n > 0
   bytes; x is not read for _CONJ and _NEG, and may be NULL there). verb, "viewed" or
   "read": the front end's. Returns buf; an empty string for _GETTER, whose words are
   torch's message (the front end has it). A front end that knows why torch has a dtype
   without a whole-byte element (quantized, sub-byte) says so in place of _DTYPE's. */
static inline const char* torch_borrow_read_words(int stage, const torch_borrow_fields* x,
                                                  const char* layout_name, const char* verb,
                                                  char* buf, size_t n) {
  size_t at = 0;
  if (n == 0) return buf;
  buf[0] = '\0';
  switch (stage) {
    case TORCH_BORROW_READ_LAYOUT:
      if (layout_name != NULL)
        at = torch_borrow_words_add(buf, n, at, "a tensor with layout %s", layout_name);
      else
        at = torch_borrow_words_add(buf, n, at, "a tensor with layout code %d", (int)x->layout);
      torch_borrow_words_add(buf, n, at,
                             " has no pointer + strides description; only strided tensors "
                             "can be %s (call .to_dense() first)", verb);
      break;
    case TORCH_BORROW_READ_CONJ:
      torch_borrow_words_add(buf, n, at, "%s", TORCH_BORROW_WORDS_CONJ);
      break;
    case TORCH_BORROW_READ_NEG:
      torch_borrow_words_add(buf, n, at, "%s", TORCH_BORROW_WORDS_NEG);
      break;
    case TORCH_BORROW_READ_DTYPE:
      torch_borrow_words_add(buf, n, at,
                             "dtype code %d has no whole-byte element a pointer + strides "
                             "reader can describe (quantized, sub-byte, or newer than the "
                             "table made at resolution)",
                             (int)x->dtype);
      break;
    case TORCH_BORROW_READ_META:
      torch_borrow_words_add(buf, n, at, "%s%s", TORCH_BORROW_WORDS_META, verb);
      break;
    case TORCH_BORROW_READ_DEVICE:
      torch_borrow_words_add(buf, n, at,
                             "device type code %d is unknown to the reader: torch names no "
                             "such c10::DeviceType (torch._C._autograd.DeviceType), so no "
                             "view can say which device the pointer belongs to",
                             (int)x->device_type);
      break;
    case TORCH_BORROW_READ_NO_MEMORY:
      at = torch_borrow_words_add(buf, n, at,
                                  "the tensor has elements but its storage holds no memory (");
      if (x->ptr)
        at = torch_borrow_words_add(buf, n, at,
                                    "data_ptr() reports %#llx, which is storage offset %lld x "
                                    "%d bytes past address 0",
                                    (unsigned long long)(uintptr_t)x->ptr,
                                    (long long)x->offset,
                                    (int)x->itemsize);
      else
        at = torch_borrow_words_add(buf, n, at, "its data pointer is null");
      torch_borrow_words_add(buf, n, at,
                             "): the storage was freed or resized to zero (untyped_storage()"
                             ".resize_(0)), or the tensor is a placeholder without data "
                             "(functionalized, lazy or fake); view it once its storage holds "
                             "data again (untyped_storage().resize_(nbytes)), or view the "
                             "real tensor instead");
      break;
    case TORCH_BORROW_READ_OUTSIDE: {
      /* Which end, and the furthest byte, by the overflow-checked test (a cold path). */
      int64_t last;
      int where = torch_borrow_outside_storage_slow(x->ndim, x->sizes, x->strides, x->offset,
                                                    x->itemsize, x->nbytes, &last);
      if (where == 2) { /* a negative stride or offset: torch makes neither */
        at = torch_borrow_words_add(buf, n, at,
                                    "the tensor's elements reach before the start of its "
                                    "storage (storage offset %lld, strides ",
                                    (long long)x->offset);
        at = torch_borrow_words_tuple(buf, n, at, x->strides, x->ndim);
        torch_borrow_words_add(buf, n, at,
                               "): no pointer + strides view can describe them safely");
        break;
      }
      at = torch_borrow_words_add(buf, n, at,
                                  "the tensor's elements reach past the end of its storage: "
                                  "storage offset %lld and its sizes ",
                                  (long long)x->offset);
      at = torch_borrow_words_tuple(buf, n, at, x->sizes, x->ndim);
      at = torch_borrow_words_add(buf, n, at, " and strides ");
      at = torch_borrow_words_tuple(buf, n, at, x->strides, x->ndim);
      torch_borrow_words_add(buf, n, at,
                             " (x %d bytes) reach byte %lld, but the storage holds %lld bytes; "
                             "it was shrunk under the tensor (untyped_storage().resize_()), so "
                             "its pointer would describe memory past the allocation; grow the "
                             "storage back to at least %lld bytes or view a tensor that fits "
                             "in it",
                             (int)x->itemsize, (long long)last, (long long)x->nbytes,
                             (long long)last);
      break;
    }
    default:
      break;
  }
  return buf;
}

#endif /* TORCH_BORROW_READER_H */
