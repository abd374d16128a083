# Owner(s): ["module: python frontend"]

"""A tensor's PyObject refcount touched from threads without the GIL.

A TensorImpl that a Python object owns increfs that object when its refcount goes
1 -> 2 and decrefs it on 2 -> 1 (c10/util/intrusive_ptr.h), through
ConcretePyInterpreterVTable::incref / decref. A thread with an attached thread
state may touch the refcount at once; any other thread must wait for the GIL.
Each test copies a tensor's at::Tensor on another thread while this thread holds
the GIL, and checks that the copy waits for it, also once a subinterpreter has
been created, after which CPython 3.11 to 3.13 answer yes to PyGILState_Check()
on every thread. A free-threaded build running without the GIL has nothing to
wait for: those cases are skipped there, by gil_enabled(), which is tested itself.
"""

import sys
import sysconfig
import types
import unittest

import torch
from torch.testing._internal.common_utils import IS_WINDOWS, run_tests, TestCase


CPP_SOURCE = r"""
#include <torch/csrc/autograd/python_variable.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

// obj's Python refcount while this (attached) thread holds a copy of its
// tensor, then after the copy is gone: the copy holds one reference.
std::vector<int64_t> refcounts_around_a_copy(py::handle obj) {
  TORCH_CHECK(THPVariable_Check(obj.ptr()), "expected a tensor");
  const at::Tensor& tensor = THPVariable_Unpack(obj.ptr());
  TORCH_CHECK(tensor.use_count() == 1, "the tensor must have no other owner");
  int64_t during = 0;
  {
    at::Tensor copy = tensor; // incref on 1 -> 2
    during = Py_REFCNT(obj.ptr());
  } // decref on 2 -> 1
  return {during, Py_REFCNT(obj.ptr())};
}

// Copies the at::Tensor inside obj on a new thread (its refcount goes 1 -> 2
// -> 1: incref and decref run there) while this thread holds the GIL for
// wait_ms, and returns whether the copy finished meanwhile. kind 0: a native
// thread Python never saw; kind 1: a thread with a Python thread state that
// it has detached (PyEval_SaveThread).
bool copy_finished_while_gil_held(py::handle obj, int64_t kind, int64_t wait_ms) {
  TORCH_CHECK(THPVariable_Check(obj.ptr()), "expected a tensor");
  const at::Tensor& tensor = THPVariable_Unpack(obj.ptr());
  TORCH_CHECK(tensor.use_count() == 1, "the tensor must have no other owner");
  std::atomic<int> stage{0};
  std::thread worker([&] {
    PyGILState_STATE gil{};
    PyThreadState* detached = nullptr;
    if (kind == 1) {
      gil = PyGILState_Ensure();
      detached = PyEval_SaveThread();
    }
    stage = 1;
    while (stage.load() != 2) {
      std::this_thread::yield();
    }
    {
      at::Tensor copy = tensor; // incref, then decref at the end of the scope
    }
    stage = 3;
    if (kind == 1) {
      PyEval_RestoreThread(detached);
      PyGILState_Release(gil);
    }
  });
  {
    py::gil_scoped_release no_gil; // let the worker make its thread state
    while (stage.load() != 1) {
      std::this_thread::yield();
    }
  }
  stage = 2; // this thread holds the GIL from here until the join
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (stage.load() != 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  const bool finished = stage.load() == 3;
  {
    py::gil_scoped_release no_gil;
    worker.join();
  }
  return finished;
}
"""

NATIVE_THREAD, DETACHED_THREAD = 0, 1


def gil_enabled(interpreter=sys):
    """Whether this process runs with the GIL: sys._is_gil_enabled() where it
    exists (3.13+; False on a free-threaded build running without it), else True."""
    is_gil_enabled = getattr(interpreter, "_is_gil_enabled", None)
    return True if is_gil_enabled is None else bool(is_gil_enabled())


NO_GIL = "no GIL to wait for: a free-threaded build running without it"


def create_subinterpreter():
    """Create and destroy a subinterpreter: PyGILState_Check() stays off for this
    process from then on (CPython 3.11 to 3.13)."""
    try:
        import _interpreters as interpreters  # 3.13+
    except ImportError:
        import _xxsubinterpreters as interpreters  # 3.11, 3.12
    interpreters.destroy(interpreters.create())


@unittest.skipIf(IS_WINDOWS, "std::thread and the extension build are tested on Linux")
class TestPyInterpreterThreads(TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        from torch.utils.cpp_extension import load_inline

        cls.ext = load_inline(
            name="test_pyinterpreter_threads_ext",
            cpp_sources=CPP_SOURCE,
            functions=["copy_finished_while_gil_held", "refcounts_around_a_copy"],
        )

    def assert_copies_wait_for_the_gil(self):
        for kind in (NATIVE_THREAD, DETACHED_THREAD):
            t = torch.randn(8)
            refcount = sys.getrefcount(t)
            finished = self.ext.copy_finished_while_gil_held(t, kind, 200)
            self.assertFalse(
                finished,
                f"a copy on thread kind {kind} touched the refcount without the GIL",
            )
            self.assertEqual(sys.getrefcount(t), refcount)
            self.assertEqual(t._use_count(), 1)

    def test_a_copy_on_an_attached_thread_holds_a_reference(self):
        t = torch.randn(8)
        refcount = sys.getrefcount(t)
        during, after = self.ext.refcounts_around_a_copy(t)
        self.assertEqual(during, after + 1)
        self.assertEqual(sys.getrefcount(t), refcount)
        self.assertEqual(t._use_count(), 1)

    @unittest.skipUnless(gil_enabled(), NO_GIL)
    def test_copies_on_threads_without_the_gil_wait_for_it(self):
        self.assert_copies_wait_for_the_gil()

    @unittest.skipUnless(gil_enabled(), NO_GIL)
    @unittest.skipIf(sys.version_info < (3, 11), "subinterpreter modules of 3.11+")
    def test_copies_wait_for_the_gil_once_a_subinterpreter_exists(self):
        # Turns PyGILState_Check() into "yes" on every thread for the rest of
        # this process; the other tests need no state of their own.
        create_subinterpreter()
        self.assert_copies_wait_for_the_gil()


class TestGilEnabled(TestCase):
    """The skip condition of the waiting cases."""

    def test_an_interpreter_without_is_gil_enabled_has_the_gil(self):
        self.assertTrue(gil_enabled(types.SimpleNamespace()))

    def test_it_follows_is_gil_enabled(self):
        for answer in (False, True):
            stand_in = types.SimpleNamespace(_is_gil_enabled=lambda answer=answer: answer)
            self.assertIs(gil_enabled(stand_in), answer)

    def test_this_build(self):
        # A default build always has the GIL; a free-threaded one may have it
        # switched back on (PYTHON_GIL=1), which sys._is_gil_enabled() reports.
        if sysconfig.get_config_var("Py_GIL_DISABLED"):
            self.assertEqual(gil_enabled(), sys._is_gil_enabled())
        else:
            self.assertTrue(gil_enabled())


if __name__ == "__main__":
    run_tests()
