"""The benchmark tools' own logic, outside any timing: a binding peer that cannot run is
reported with its reason (never an exception), a peer that reads a tensor wrongly is
refused, and callgrind.py passes ``reader=`` only to a ``_native_loop`` that takes it."""

from __future__ import annotations

import pathlib
import sys

import pytest
import torch

sys.path.append(str(pathlib.Path(__file__).resolve().parent.parent / "bench"))

import callgrind  # noqa: E402
import peers_bindings  # noqa: E402


def test_a_binding_that_cannot_build_is_unavailable_with_its_reason(monkeypatch):
    def no_cmake(version, quiet):
        raise peers_bindings.Unavailable("cmake is not on PATH (nanobind builds through its CMake)")

    monkeypatch.setitem(peers_bindings.LOADERS, "nanobind", no_cmake)
    b = peers_bindings.load("nanobind", torch, quiet=True)
    assert not b.available and b.empty is None and b.tensor is None
    assert b.info == {"unavailable": "cmake is not on PATH (nanobind builds through its CMake)"}


def test_a_binding_that_is_not_installed_names_the_distribution(monkeypatch):
    from importlib import metadata

    def missing(dist):
        raise metadata.PackageNotFoundError(dist)

    monkeypatch.setattr(metadata, "version", missing)
    b = peers_bindings.load("tvm_ffi", torch, quiet=True)
    assert not b.available
    assert b.info["unavailable"] == "apache-tvm-ffi is not installed (pyproject's `bench` extra)"


def test_a_binding_that_reads_the_tensor_wrongly_is_refused(monkeypatch):
    t = torch.randn(4, 6)[1:, ::2]
    right = (t.data_ptr(), (3, 3), (6, 2), (2, 32, 1), 1, 0)
    assert peers_bindings.expected(t) == right
    peers_bindings.check("nanobind", lambda x: right, [t])  # the same answer passes
    wrong_ptr = (t.data_ptr() - 24, *right[1:])  # the storage offset forgotten
    with pytest.raises(AssertionError, match="nanobind reads"):
        peers_bindings.check("nanobind", lambda x: wrong_ptr, [t])

    def liar(version, quiet):
        return (lambda: None), (lambda x: None), (lambda x: wrong_ptr), {"version": "0"}

    monkeypatch.setitem(peers_bindings.LOADERS, "nanobind", liar)
    b = peers_bindings.load("nanobind", torch, quiet=True)
    assert not b.available and b.info["unavailable"].startswith("AssertionError: nanobind reads")


def test_tvm_ffi_flat_answer_is_read_back_in_torch_form():
    t = torch.randn(2, 3, 5).transpose(0, 2)
    flat = (t.data_ptr(), 3, *t.shape, *t.stride(), 2, 32, 1, 1, 0)
    assert peers_bindings._normalise("tvm_ffi", flat) == peers_bindings.expected(t)


def test_callgrind_passes_reader_only_to_a_loop_that_takes_it():
    t = torch.randn(2, 2)
    calls = []

    def old_loop(obj, path, n):
        calls.append((path, n))

    assert callgrind.supported_readers(old_loop, t, "fallback") == ([None], {})
    assert calls == []  # a signature without reader is never called with it

    def new_loop(obj, path, n, reader="getters"):
        if reader not in ("getters", "batched"):
            raise ValueError(f"unknown reader {reader!r}")
        calls.append((path, n, reader))

    assert callgrind.supported_readers(new_loop, t, "borrow") == (["getters", "batched"], {})
    assert calls == [("borrow", 1, "getters"), ("borrow", 1, "batched")]

    def getters_only(obj, path, n, reader="getters"):
        if reader != "getters":
            raise ValueError(f"unknown reader {reader!r}")

    ok, why = callgrind.supported_readers(getters_only, t, "borrow")
    assert ok == ["getters"] and why == {"batched": "ValueError: unknown reader 'batched'"}


@pytest.mark.parametrize("context, part", [
    # the acquisition's helpers stay with the acquisition, wherever they are called from
    ("pthread_getspecific@@GLIBC_2.34'PyThread_tss_get'pybind11::gil_scoped_acquire::"
     "gil_scoped_acquire()'torch::detail::(anonymous namespace)::ConcretePyInterpreterVTable::"
     "incref(_object*) const'c10::TensorImpl::incref_pyobject() const", "gil"),
    # the fix's own check is part of its incref, not the entry point's thread check
    ("PyGILState_Check'(anonymous namespace)::fixed_incref(c10::impl::PyInterpreterVTable "
     "const*, _object*)'c10::TensorImpl::incref_pyobject() const", "pyobject"),
    ("PyGILState_Check'torch_borrow::tensor_borrow_from_pyobject(_object*)'"
     "torch_tensor_borrow_from_pyobject'peers_handle_loop", "thread"),
    ("_int_free'free'operator delete(void*)'aoti_torch_delete_tensor_object'route_once", "alloc"),
    ("at::getDLDataType(at::Tensor const&)'at::toDLPackNonOwning(at::Tensor const&, DLTensor*, "
     "bool)'TorchDLPackExchangeAPI::DLTensorFromPyObjectNoSync(void*, DLTensor*)", "fill"),
    ("c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>::reset_not_null_("
     "c10::TensorImpl*)'aoti_torch_delete_tensor_object'route_once", "atomics"),
    ("torch_tensor_from_pyobject'route_once'peers_route_loop", "entry"),
    ("peers_dltensor_loop'_cffi_f_peers_dltensor_loop'cfunction_call", "loop"),
    ("Py_IsInitialized'somewhere_else", "other"),
])
def test_callgrind_puts_each_cost_in_one_part(context, part):
    assert callgrind.part_of(context) == part


def test_callgrind_attribution_adds_up():
    split = {"malloc'operator new(unsigned long)'torch_tensor_from_pyobject": 38.0,
             "aoti_torch_get_dim'route_once": 17.0, "route_once'peers_route_loop": 5.0}
    parts = callgrind.attribution(split)
    assert set(parts) == set(callgrind.PARTS)
    assert parts["alloc"] == 38.0 and parts["fill"] == 17.0 and parts["loop"] == 5.0
    assert sum(parts.values()) == sum(split.values())
