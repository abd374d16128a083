/* torch_borrow/libraries.h: the one search for torch's shared libraries in a process,
 * which every front end resolves torch's functions through (consumer.h's resolution in
 * torch_borrow/resolve.h; the bridge through bridge/_tables.pxi's _TorchLibraries), so
 * a function is found in the same library whoever looks.
 *
 * The order, first found wins:
 *   1. torch/lib's libraries, by stem (torch_borrow_library_stems): libtorch_cpu (the
 *      stable C ABI), libtorch_python, libtorch, libc10, libtorch_cuda (the current CUDA
 *      stream; absent from a CPU build), each as <stem>.so, then <stem>.dylib;
 *   2. torch._C's own handle ("torch._C's dependencies"): a look-up through it searches
 *      every library torch._C depends on, which finds libtorch where a distribution keeps
 *      it outside torch/lib.
 * Each is opened with dlopen(RTLD_NOLOAD), so nothing is loaded that `import torch` did
 * not load, and nothing enters the global symbol namespace. Off POSIX (no RTLD_NOLOAD) the
 * list is empty, and every front end says torch's libraries are not found.
 *
 * The handles are kept for good, never dlclose'd: an RTLD_NOLOAD open only adds a
 * reference to a library torch keeps loaded for the life of the process (CPython never
 * unloads an extension module), so a handle, and every address found through it, stays
 * valid wherever a front end keeps it. The search calls nothing it finds (dlsym only).
 *
 * C99 and C++; needs Python.h and the GIL (it reads torch.__file__ and
 * torch._C.__file__). Cold path: resolution only, never a read.
 */
#ifndef TORCH_BORROW_LIBRARIES_H
#define TORCH_BORROW_LIBRARIES_H

#include <Python.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* torch/lib's libraries in search order; libtorch_cpu first: it exports the stable ABI. */
#define TORCH_BORROW_NLIBRARY_STEMS 5
static const char* const torch_borrow_library_stems[TORCH_BORROW_NLIBRARY_STEMS] = {
    "libtorch_cpu", "libtorch_python", "libtorch", "libc10", "libtorch_cuda"};

/* The stems (each found once, as .so or .dylib) and torch._C's handle. */
#define TORCH_BORROW_MAX_LIBRARIES (TORCH_BORROW_NLIBRARY_STEMS + 1)
#define TORCH_BORROW_TORCH_C_ORIGIN "torch._C's dependencies"

/* torch's loaded libraries, in the search order: n of them, each a dlopen handle (kept
   for good) and its origin (the file name, or TORCH_BORROW_TORCH_C_ORIGIN). */
typedef struct torch_borrow_libraries {
  int n;
  void* handle[TORCH_BORROW_MAX_LIBRARIES];
  char origin[TORCH_BORROW_MAX_LIBRARIES][32];
} torch_borrow_libraries;

/* A file's handle if it is loaded already, else NULL (RTLD_NOLOAD: never loads it). */
static inline void* torch_borrow__loaded(const char* path) {
#ifdef RTLD_NOLOAD
  void* lib = dlopen(path, RTLD_NOLOAD | RTLD_LAZY);
  if (!lib) (void)dlerror(); /* not loaded (or no such file): not an error here */
  return lib;
#else
  (void)path;
  return NULL;
#endif
}

/* obj.<attr>.__file__ (attr NULL: obj.__file__) into buf; 0, or -1 where it has none or
   it does not fit. Leaves no Python exception set. */
static inline int torch_borrow__file_of(PyObject* obj, const char* attr, char* buf,
                                        size_t n) {
  PyObject* owner = attr ? PyObject_GetAttrString(obj, attr) : (Py_INCREF(obj), obj);
  PyObject* file = owner ? PyObject_GetAttrString(owner, "__file__") : NULL;
  const char* path = file && PyUnicode_Check(file) ? PyUnicode_AsUTF8(file) : NULL;
  int ok = path && (size_t)snprintf(buf, n, "%s", path) < n;
  Py_XDECREF(file);
  Py_XDECREF(owner);
  PyErr_Clear();
  return ok ? 0 : -1;
}

/* Fills out with torch's loaded libraries (torch: the imported module), in the order
   above. Returns out->n (0: none loaded, or off POSIX). Needs the GIL; leaves no Python
   exception set; calls no function of torch's libraries. */
static inline int torch_borrow_libraries_open(PyObject* torch, torch_borrow_libraries* out) {
  char path[4096];
  size_t dir;
  int i, e;
  static const char* const exts[] = {".so", ".dylib"};
  out->n = 0;
#ifdef RTLD_NOLOAD
  if (torch_borrow__file_of(torch, NULL, path, sizeof path) == 0 && strrchr(path, '/')) {
    dir = (size_t)(strrchr(path, '/') - path); /* torch/__init__.py -> torch/ */
    for (i = 0; i < TORCH_BORROW_NLIBRARY_STEMS; ++i)
      for (e = 0; e < 2; ++e) {
        void* lib;
        if ((size_t)snprintf(path + dir, sizeof path - dir, "/lib/%s%s",
                             torch_borrow_library_stems[i], exts[e]) >= sizeof path - dir)
          continue;
        if (!(lib = torch_borrow__loaded(path))) continue;
        out->handle[out->n] = lib;
        snprintf(out->origin[out->n], sizeof out->origin[0], "%s%s",
                 torch_borrow_library_stems[i], exts[e]);
        ++out->n;
        break; /* one file per stem */
      }
  }
  if (torch_borrow__file_of(torch, "_C", path, sizeof path) == 0) {
    void* lib = torch_borrow__loaded(path);
    if (lib) {
      out->handle[out->n] = lib;
      snprintf(out->origin[out->n], sizeof out->origin[0], "%s", TORCH_BORROW_TORCH_C_ORIGIN);
      ++out->n;
    }
  }
#else
  (void)torch, (void)path, (void)dir, (void)i, (void)e, (void)exts;
#endif
  return out->n;
}

/* name's address in the first of libs that exports it, or NULL; *at (where not NULL):
   that library's index in libs, -1 where none has it. dlsym only: nothing is called. */
static inline void* torch_borrow_libraries_find(const torch_borrow_libraries* libs,
                                                const char* name, int* at) {
  int i;
  for (i = 0; i < libs->n; ++i) {
    void* fn = dlsym(libs->handle[i], name);
    if (fn) {
      if (at) *at = i;
      return fn;
    }
  }
  (void)dlerror(); /* a miss is an answer, not an error left for the caller */
  if (at) *at = -1;
  return NULL;
}

#endif /* TORCH_BORROW_LIBRARIES_H */
