/* torch_borrow/thread_state.h: whether the calling thread has an attached thread state.
 *
 * The one attached-thread test of this project: the borrow (shim_ext/borrow.cpp),
 * consumer.h, the benchmarks' emulation of the interpreter fix, and the patches
 * (proposal/tools/make_patch.py copies the function between the BEGIN / END markers, renamed
 * THPUtils_hasAttachedThreadState, into torch/csrc/utils/attached_thread_state.h, which
 * the interpreter fix adds and the borrow patch includes). C99 and C++; Python.h only.
 *
 * "Attached" is what Py_INCREF / Py_DECREF and every other C-API call need: the thread
 * holds the GIL or, on a free-threaded build, has attached its thread state.
 *
 * Why not PyGILState_Check(): CPython 3.11 to 3.13 turn its check off for the whole
 * process once a subinterpreter is created (pylifecycle.c, new_interpreter:
 * gilstate.check_enabled = 0), after which it answers 1 on every thread, a detached one
 * and one Python never saw included. The tests below read state CPython keeps per
 * thread, which no subinterpreter changes.
 */
#ifndef TORCH_BORROW_THREAD_STATE_H
#define TORCH_BORROW_THREAD_STATE_H

#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>

/* PyThreadState_GetUnchecked() is public from CPython 3.13; before, it is
   _PyThreadState_UncheckedGet(), which PyTorch's own files reach under the public name
   through pythoncapi_compat.h. Named so here only for the function below (#undef after
   it), and only where that header is not included already: including it later still
   works. */
#if PY_VERSION_HEX < 0x030D0000 && !defined(PYTHONCAPI_COMPAT)
#define TORCH_BORROW__GET_UNCHECKED_DEFINED 1
#define PyThreadState_GetUnchecked _PyThreadState_UncheckedGet
#endif

/* BEGIN attached_thread_state */
// Whether the calling thread has an attached thread state: it holds the GIL
// or, on a free-threaded build, is attached. Exact on every CPython, also once
// a subinterpreter exists, which turns PyGILState_Check() into "yes" on every
// thread (CPython 3.11 to 3.13).
static inline int torch_borrow_thread_is_attached(void) {
  // From 3.12 the current thread state is thread-local: NULL exactly while
  // this thread is detached. Before, it is the GIL holder's, whichever thread
  // that is, so it must also be this thread's own.
  PyThreadState* tstate = PyThreadState_GetUnchecked();
#if PY_VERSION_HEX < 0x030C0000
  if (tstate != PyGILState_GetThisThreadState()) {
    return 0;
  }
#endif
  return tstate ? 1 : 0;
}
/* END attached_thread_state */

#ifdef TORCH_BORROW__GET_UNCHECKED_DEFINED
#undef PyThreadState_GetUnchecked
#undef TORCH_BORROW__GET_UNCHECKED_DEFINED
#endif

#endif /* TORCH_BORROW_THREAD_STATE_H */
