/* The bridge's C state (bridge._bridge): what bridge._select installs, published as
 * one immutable snapshot, the chosen path, and the per-thread view counters.
 *
 * Declared for Cython once, in bridge/_bridge_c.pxi. The stable ABI's C types come
 * from shim_ext/include/torch_borrow/abi.h (every C type is declared once).
 */
#ifndef BRIDGE_STATE_H
#define BRIDGE_STATE_H

#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <torch_borrow/reader.h>
#include <torch_borrow/tables.h>

#ifdef Py_GIL_DISABLED
#define BRIDGE_FREE_THREADED 1
#else
#define BRIDGE_FREE_THREADED 0
#endif

/* A measurement build only (bench/callgrind.py builds it; never the package): every view
   makes its six most-read values when it is made, as a view type with member slots would
   have to, so that what that costs `view_borrow(t)` is counted, not argued. */
#ifndef BRIDGE_EAGER_VALUES
#define BRIDGE_EAGER_VALUES 0
#endif

#if defined(__clang__)
static const char* bridge_compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
static const char* bridge_compiler = "gcc " __VERSION__;
#else
static const char* bridge_compiler = "unknown";
#endif

enum {
  /* Path codes, in the order of bridge._bridge.PATHS. */
  BRIDGE_OWNED = 0,
  BRIDGE_BORROW = 1,
  BRIDGE_FALLBACK = 2,
  BRIDGE_NPATHS = 3,
  /* Dimensions stored inline in a view; more go to a bytes object it owns. Sixteen, so
     that no tensor up to 16 dimensions allocates more than its view (which stays one
     pymalloc block: _bridge_view.h asserts it). */
  BRIDGE_INLINE_DIMS = 16,
  /* Up to this many dimensions, the inline room is two rooms, used in turn while the
     view keeps tuples made from one of them (bridge_view). */
  BRIDGE_HALF_DIMS = BRIDGE_INLINE_DIMS / 2,
  /* The reader's tables' sizes (torch_borrow/reader.h) */
  BRIDGE_NCODES = TORCH_BORROW_NCODES,
  BRIDGE_NDEVICES = TORCH_BORROW_NDEVICES
};

/* One installation: filled by _install_symbols / _install_tables (bridge/_install.pxi),
 * never changed once published, never freed (a view may still read an old one). */
typedef struct {
  torch_borrow_getters g; /* what every path reads a handle with (torch_borrow/reader.h) */
  int getters_present; /* every getter resolved */
  int getters_ok;      /* ... and the tables installed: views may run */
  torch_borrow_from_pyobject_fn owned_fn;
  torch_borrow_delete_fn delete_fn;
  torch_borrow_from_pyobject_fn borrow_fn;
  torch_borrow_what_fn what_fn;
  /* shim_ext's torch_borrow_custom_metadata: the borrow's refusal rule, made on the
     owned and pointer-trick paths too (and, after a refused borrow, for the message). */
  torch_borrow_custom_metadata_fn custom_metadata;
  int fallback_ok;
  Py_ssize_t fallback_offset;
  PyTypeObject* tensor_tp;
  PyTypeObject* parameter_tp; /* torch.nn.Parameter: a subclass with Tensor's getters */
  /* Without custom_metadata, the owned path's rule (torch_borrow/tables.h, consumer.h's
     owned route's too): torch's __torch_dispatch__ default and the key-set table that
     names a refusal; its references are never released (nor is a snapshot). */
  torch_borrow_keys keys;
  /* Python objects, borrowed: the module's _kept list holds each for good. */
  PyObject* is_conj;             /* method descriptors torch.Tensor.is_conj / .is_neg */
  PyObject* is_neg;
  PyObject* no_torch_function; /* torch._C.DisableTorchFunction */
  /* The tables (_install_tables). */
  torch_borrow_tables t;      /* what the reader's checks compare against */
  int32_t device_privateuse1; /* its name is torch's current one, read when asked */
  PyObject* dtype_objs[BRIDGE_NCODES]; /* per dtype code: torch.dtype or NULL */
  PyObject* device_names[BRIDGE_NDEVICES]; /* "cpu", "cuda", ... or NULL */
  PyObject* refused_dtypes; /* dict: code -> reason */
  PyObject* layout_names;   /* dict: layout code -> "sparse_coo", ... */
} bridge_installed;

/* Before the first installation: no path runs. */
static bridge_installed bridge_nothing = {
    .fallback_offset = sizeof(PyObject),
    .t = {.strided = -1, .meta = -1},
    .device_privateuse1 = -1,
};
static bridge_installed* bridge_state = &bridge_nothing;
static int bridge_active = -1; /* the path view() uses; -1 until chosen */

/* A view loads the snapshot once (acquire) and reads only that one; an installation
   fills a fresh one, then publishes it (release). GCC/Clang builtins: plain loads and
   stores on x86-64, ordered ones on weaker CPUs. */
static inline const bridge_installed* bridge_installed_state(void) {
  return __atomic_load_n(&bridge_state, __ATOMIC_ACQUIRE);
}
static inline void bridge_publish(bridge_installed* st) {
  __atomic_store_n(&bridge_state, st, __ATOMIC_RELEASE);
}
static inline int bridge_active_path(void) {
  return __atomic_load_n(&bridge_active, __ATOMIC_RELAXED);
}
static inline void bridge_set_active(int path) {
  __atomic_store_n(&bridge_active, path, __ATOMIC_RELAXED);
}
/* The privateuse1 name once torch renamed it (final: torch allows one rename). */
static PyObject* bridge_privateuse1_final = NULL;
static inline PyObject* bridge_load_obj(PyObject** p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
static inline void bridge_store_obj(PyObject** p, PyObject* v) {
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* View counters, per thread: a view writes only its own thread's block (nothing
   shared, so threads viewing at once never contend for a cache line, GIL or not).
   Each block has one writer, so a relaxed load and store suffice; readers sum every
   block with relaxed loads. A thread's block is made at its first view, pushed on a
   list that is never shortened (a block outlives its thread: its counts stay in the
   totals), and is one cache line of its own. */
typedef struct bridge_counts_block {
  uint64_t n[BRIDGE_NPATHS];
  struct bridge_counts_block* next;
} __attribute__((aligned(64))) bridge_counts_block;
static bridge_counts_block* bridge_all_counts = NULL; /* the list, pushed with CAS */
/* initial-exec: a load at a fixed offset from the thread pointer, not a call to
   __tls_get_addr on every view (one pointer of the static TLS surplus glibc keeps for
   libraries loaded later). */
static __thread bridge_counts_block* bridge_my_counts
    __attribute__((tls_model("initial-exec"))) = NULL;

__attribute__((noinline)) static bridge_counts_block* bridge_new_counts(void) {
  bridge_counts_block* b = (bridge_counts_block*)aligned_alloc(64, sizeof *b);
  if (b == NULL) return NULL;
  memset(b, 0, sizeof *b);
  b->next = __atomic_load_n(&bridge_all_counts, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(&bridge_all_counts, &b->next, b, 1, __ATOMIC_RELEASE,
                                      __ATOMIC_RELAXED)) {
  }
  bridge_my_counts = b;
  return b;
}
static inline void bridge_count(int path) {
  bridge_counts_block* b = bridge_my_counts;
  if (__builtin_expect(b == NULL, 0) && (b = bridge_new_counts()) == NULL)
    return; /* out of memory: the view is made, not counted */
  __atomic_store_n(&b->n[path], __atomic_load_n(&b->n[path], __ATOMIC_RELAXED) + 1,
                   __ATOMIC_RELAXED);
}
static uint64_t bridge_counter(int path) { /* every thread's views, ever */
  uint64_t total = 0;
  for (bridge_counts_block* b = __atomic_load_n(&bridge_all_counts, __ATOMIC_ACQUIRE);
       b != NULL; b = b->next)
    total += __atomic_load_n(&b->n[path], __ATOMIC_RELAXED);
  return total;
}
static uintptr_t bridge_counts_address(void) { /* this thread's block (tests) */
  return (uintptr_t)bridge_my_counts;
}

#endif /* BRIDGE_STATE_H */
