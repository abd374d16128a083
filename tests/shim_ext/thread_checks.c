/* The attached-thread tests that tests/shim_ext/test_thread_checks.py compares, evaluated
 * in C on the calling thread or on a new native thread. Python.h and
 * torch_borrow/thread_state.h only: the test compiles it with the C compiler, no torch
 * header, and calls it through ctypes.CDLL (which releases the GIL around each call).
 *
 * Bit 0: the one attached-thread test (torch_borrow/thread_state.h, which the borrow,
 * consumer.h and the patches use); bit 1: PyGILState_Check(); bit 2: the unchecked
 * thread-state read is non-null (on CPython < 3.12 that read is the GIL holder's,
 * whichever thread it is); bit 3: PyGILState_GetThisThreadState() is non-null (this
 * thread HAS a thread state, attached or not). */
#include <torch_borrow/thread_state.h>

#include <pthread.h>
#include <time.h>

static int thread_checks_here(void) {
#if PY_VERSION_HEX >= 0x030D0000
  PyThreadState* unchecked = PyThreadState_GetUnchecked();
#else
  PyThreadState* unchecked = _PyThreadState_UncheckedGet();
#endif
  return (torch_borrow_thread_is_attached() ? 1 : 0) | (PyGILState_Check() ? 2 : 0) |
         (unchecked ? 4 : 0) | (PyGILState_GetThisThreadState() ? 8 : 0);
}

/* attach != 0: take the GIL first (PyGILState_Ensure); else ask as called (detached:
 * ctypes released the GIL), after wait_us microseconds, so that a thread waiting for the
 * GIL can take it. */
int thread_checks(int attach, int wait_us) {
  if (!attach) {
    if (wait_us > 0) {
      struct timespec ts = {wait_us / 1000000, (long)(wait_us % 1000000) * 1000L};
      nanosleep(&ts, NULL);
    }
    return thread_checks_here();
  }
  PyGILState_STATE g = PyGILState_Ensure();
  int bits = thread_checks_here();
  PyGILState_Release(g);
  return bits;
}

static void* on_thread(void* out) {
  *(int*)out = thread_checks_here();
  return NULL;
}

/* The same on a new native thread that never attached a thread state; -1 when no thread
 * could start. */
int thread_checks_on_foreign_thread(void) {
  int bits = -1;
  pthread_t worker;
  if (pthread_create(&worker, NULL, on_thread, &bits) != 0) {
    return -1;
  }
  pthread_join(worker, NULL);
  return bits;
}
