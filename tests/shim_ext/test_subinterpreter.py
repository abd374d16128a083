"""Once a subinterpreter exists, every attached-thread test still answers for its own thread.

CPython 3.11 to 3.13 turn ``PyGILState_Check()`` off for the whole process when a
subinterpreter is created: from then on it answers 1 on every thread, a detached one and
one Python never saw included. Each test here runs in a fresh child process (the state
is process-wide), creates a subinterpreter there, and checks, on threads without the
GIL:

- the borrow (shim_ext's ``torch_tensor_borrow_from_pyobject``): a call from a thread
  without the GIL is refused, ``*ret`` untouched, also while another thread holds it;
- consumer.h's ``torch_borrow_read``: ``TORCH_BORROW_NO_GIL``, nothing read.

Both share one test, ``torch_borrow/thread_state.h``, with the interpreter fix's own
``incref`` / ``decref`` (checked the same way in ``tests/bench/test_internal_fixes.py``).
"""

from __future__ import annotations

import importlib.util
import json
import pathlib

import pytest

from helpers.child import SUBINTERPRETER, run_ok
from helpers.expect import expected_paths

if importlib.util.find_spec("cffi") is None:
    pytest.skip("no cffi in this environment (free-threaded CPython 3.13): the test "
                "helpers are built with cffi", allow_module_level=True)

BORROW_CHILD = SUBINTERPRETER + """
import ctypes, json, threading, torch
import shim_ext
entry, _ = shim_ext.load()
t = torch.randn(3)
address = int(entry.ffi.cast("uintptr_t", entry.ffi.addressof(
    entry.lib, "torch_tensor_borrow_from_pyobject")))
proto = (ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p))
with_gil = ctypes.PYFUNCTYPE(*proto)(address)     # keeps the GIL
without_gil = ctypes.CFUNCTYPE(*proto)(address)   # releases it around the call

def call(fn):
    handle = ctypes.c_void_p(0x5A5A)  # must come back untouched when refused
    rc = fn(id(t), ctypes.byref(handle))
    return rc, handle.value

out = {}
def probe(when):
    out[f"{when} with the GIL"] = call(with_gil)
    out[f"{when} detached"] = call(without_gil)
    out[f"{when} detached, another thread holding the GIL"] = \
        while_another_thread_holds_the_gil(lambda: call(without_gil))
probe("before")
create_subinterpreter()
probe("after")
print(json.dumps(out))
"""


def test_the_borrow_refuses_a_thread_without_the_gil_once_a_subinterpreter_exists():
    if not expected_paths()["borrow"]:
        pytest.skip("no borrow on this torch or interpreter (asserted in test_availability)")
    got = json.loads(run_ok(BORROW_CHILD).splitlines()[-1])
    for when in ("before", "after"):
        rc, handle = got[f"{when} with the GIL"]
        assert rc == 0 and handle not in (None, 0x5A5A), got
        assert got[f"{when} detached"] == [1, 0x5A5A], (when, got)
        assert all(r == [1, 0x5A5A]
                   for r in got[f"{when} detached, another thread holding the GIL"]), (when, got)


CONSUMER_CHILD = SUBINTERPRETER + """
import ctypes, json, pathlib, sys, threading, torch
import cffi, shim_ext
from proposal.toolchain import load_extension
build = pathlib.Path(sys.argv[1])
ffi = cffi.FFI()
ffi.cdef("int probe_read(void* obj, char* message, int n);")
ffi.set_source("_subinterpreter_consumer", '''
#include <torch_borrow/consumer.h>
int probe_read(void* obj, char* message, int n) {
  torch_borrow_meta m;
  int rc = torch_borrow_read((PyObject*)obj, &m);
  snprintf(message, (size_t)n, "%s", rc == TORCH_BORROW_OK ? "" : m.message);
  return rc;
}
''', include_dirs=[shim_ext.get_include()], define_macros=[("_CFFI_NO_LIMITED_API", None)])
ffi.compile(tmpdir=str(build))
mod = load_extension("_subinterpreter_consumer", build)
address = int(mod.ffi.cast("uintptr_t", mod.ffi.addressof(mod.lib, "probe_read")))
proto = (ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int)
with_gil = ctypes.PYFUNCTYPE(*proto)(address)
without_gil = ctypes.CFUNCTYPE(*proto)(address)
t = torch.randn(3)

def call(fn):
    buf = ctypes.create_string_buffer(512)
    rc = fn(id(t), buf, 512)
    return rc, buf.value.decode()

out = {}
out["first read, with the GIL"] = call(with_gil)
def probe(when):
    out[f"{when} detached"] = call(without_gil)
    out[f"{when} detached, another thread holding the GIL"] = \
        while_another_thread_holds_the_gil(lambda: call(without_gil))
    out[f"{when} with the GIL"] = call(with_gil)
probe("before")
create_subinterpreter()
probe("after")
print(json.dumps(out))
"""


def test_consumer_h_refuses_a_thread_without_the_gil_once_a_subinterpreter_exists(tmp_path):
    import re

    import shim_ext

    header = pathlib.Path(shim_ext.get_include(), "torch_borrow", "consumer.h").read_text()
    no_gil = int(re.search(r"TORCH_BORROW_NO_GIL = (\d+),", header).group(1))
    child = f"import sys; sys.argv = ['child', {str(tmp_path)!r}]\n" + CONSUMER_CHILD
    got = json.loads(run_ok(child).splitlines()[-1])
    assert got["first read, with the GIL"][0] == 0, got
    for when in ("before", "after"):
        assert got[f"{when} with the GIL"][0] == 0, (when, got)
        rc, message = got[f"{when} detached"]
        assert rc == no_gil and "GIL" in message, (when, got)
        assert all(r[0] == no_gil
                   for r in got[f"{when} detached, another thread holding the GIL"]), (when, got)
