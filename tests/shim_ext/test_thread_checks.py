"""The one attached-thread-state test is correct where the cheaper-looking ones are not.

The borrow (``shim_ext/borrow.cpp``), consumer.h and the patches ask whether the calling
thread has an attached thread state with one helper, ``torch_borrow/thread_state.h``: on
CPython 3.12+ the thread's own state pointer (``PyThreadState_GetUnchecked()``),
thread-local and NULL while detached; before 3.12 that same read (the GIL holder's,
whichever thread it is) compared with this thread's own state
(``PyGILState_GetThisThreadState()``). Checked here on: this thread attached; this thread
detached (a ctypes or cffi call releases the GIL); detached while another Python thread holds the
GIL; a native thread that never had a thread state. Two wrong tests are shown failing:
"the unchecked read is non-null" on CPython < 3.12 (true on a detached thread while
another holds the GIL) and "this thread has a thread state" (true on any detached Python
thread). ``PyGILState_Check()`` is right here, in a process without a subinterpreter;
``tests/shim_ext/test_subinterpreter.py`` shows it answering yes on every thread once one exists.
The evaluation lives in ``thread_checks.c`` beside this file (compiled here with the C
compiler, Python.h and the header only); the real borrow is checked too.
"""

from __future__ import annotations

import ctypes
import os
import pathlib
import subprocess
import sys
import sysconfig
import threading

import pytest
import torch

from helpers.expect import expected_paths
from helpers.paths import ROOT

MODERN = sys.version_info >= (3, 12)


class ThreadChecks:
    """``thread_checks.c`` built into ``folder`` and loaded with ``ctypes.CDLL``, whose
    calls release the GIL (so a plain call asks on a detached thread)."""

    #: the tests ``thread_checks`` evaluates, by bit
    THREAD_CHECKS = ("borrow", "PyGILState_Check", "unchecked thread state non-null",
                     "has a thread state")

    def __init__(self, folder: pathlib.Path):
        so = folder / "thread_checks.so"
        subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-O2", "-fPIC", "-shared",
                        "-Wall", "-Werror", "-I" + sysconfig.get_paths()["include"],
                        "-I" + str(ROOT / "shim_ext" / "include"),
                        str(pathlib.Path(__file__).with_name("thread_checks.c")), "-o", str(so),
                        "-pthread"], check=True, capture_output=True, text=True)
        self._lib = ctypes.CDLL(str(so))

    def thread_checks(self, where: str, wait_us: int = 0) -> dict[str, bool]:
        """``{test: answer}`` for each of ``THREAD_CHECKS`` on a thread that is:
        ``"attached"`` (this thread, GIL taken first), ``"detached"`` (this thread with
        the GIL released; ``wait_us`` microseconds pass first, so a thread waiting for
        the GIL can take it) or ``"foreign"`` (a new native thread that never had a
        thread state). The right answer is True only for ``"attached"``."""
        if where == "foreign":
            bits = self._lib.thread_checks_on_foreign_thread()
        else:
            bits = self._lib.thread_checks(int(where == "attached"), wait_us)
        assert bits >= 0, "the foreign thread could not start"
        return {name: bool(bits >> i & 1) for i, name in enumerate(self.THREAD_CHECKS)}


@pytest.fixture(scope="module")
def checks(tmp_path_factory):
    return ThreadChecks(tmp_path_factory.mktemp("thread_checks"))


def test_attached(checks):
    got = checks.thread_checks("attached")
    assert got["borrow"] and got["PyGILState_Check"] and got["has a thread state"]
    assert got["unchecked thread state non-null"]


def test_detached(checks):
    got = checks.thread_checks("detached")
    assert not got["borrow"] and not got["PyGILState_Check"]
    assert got["has a thread state"]  # wrong: this thread has one, detached
    assert not got["unchecked thread state non-null"]  # nobody holds the GIL now


def test_foreign_thread(checks):
    got = checks.thread_checks("foreign")
    assert got == dict.fromkeys(got, False)


def test_detached_while_another_thread_holds_the_gil(checks):
    """Another Python thread runs Python code (so holds the GIL most of the time) while
    this thread, detached, asks: the borrow's test never says attached; on CPython < 3.12
    the unchecked read does, at times (it is the other thread's state)."""
    stop = threading.Event()

    def spin():
        x = 0
        while not stop.is_set():
            x += 1

    other = threading.Thread(target=spin)
    other.start()
    seen = {name: False for name in checks.THREAD_CHECKS}
    try:
        for _ in range(200):
            got = checks.thread_checks("detached", wait_us=2000)  # the other thread takes it
            for name, answer in got.items():
                seen[name] |= answer
            if not MODERN and seen["unchecked thread state non-null"]:
                break
    finally:
        stop.set()
        other.join()
    assert not seen["borrow"] and not seen["PyGILState_Check"]
    if MODERN:
        assert not seen["unchecked thread state non-null"]  # thread-local: the borrow's test
    else:
        assert seen["unchecked thread state non-null"], (
            "on CPython < 3.12 the unchecked read should have named the other thread")


def test_the_borrow_refuses_a_detached_caller():
    """The real entry point, called through cffi (which releases the GIL): refused, *ret
    untouched; the same function called with the GIL held (ctypes.PYFUNCTYPE keeps it)
    succeeds on the same tensor, so the refusal is the thread test's."""
    if not expected_paths()["borrow"]:
        pytest.skip("no borrow on this torch or interpreter (asserted in test_availability)")
    pytest.importorskip("cffi", reason="shim_ext is built without cffi here (free-threaded "
                        "CPython 3.13): its entry points have no cffi handle to call through")
    import ctypes

    import shim_ext

    entry, _ = shim_ext.load()
    t = torch.randn(3)
    out = entry.ffi.new("AtenTensorHandle*")
    assert entry.lib.torch_tensor_borrow_from_pyobject(entry.ffi.cast("void*", id(t)), out) != 0
    assert out[0] == entry.ffi.NULL
    address = int(entry.ffi.cast("uintptr_t", entry.ffi.addressof(
        entry.lib, "torch_tensor_borrow_from_pyobject")))
    attached = ctypes.PYFUNCTYPE(ctypes.c_int32, ctypes.c_void_p,
                                 ctypes.POINTER(ctypes.c_void_p))(address)
    handle = ctypes.c_void_p()
    assert attached(id(t), ctypes.byref(handle)) == 0
    assert handle.value is not None
