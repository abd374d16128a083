"""The consumer examples (shim_ext/examples/consumer.cpp, its plain-C twin consumer.c and
the README's minimal.c), all on torch_borrow/consumer.h, built against the running torch:
they agree with torch's own accessors and the bridge, refuse what the bridge refuses with
the same exception type, and take the route this torch must offer (libtorch's borrow, else
the prototype's, else torch's owned shim, else torch's DLPack exchange API), on every
route forced in turn (ROUTES: owned with and without shim_ext's C check, dlpack).

Where no route can read a tensor the examples refuse every view cleanly: asserted here,
and the tests that need a working route skip with that narrow reason."""

from __future__ import annotations

import ctypes
import importlib
import importlib.util
import os
import subprocess
import sys
import textwrap
import types
import warnings

import pytest
import torch

import bridge
import shim_ext
from proposal.toolchain import load_extension
from helpers.consumers import (CASES, MODULES, ROUTES, Plain, expected_route,
                               expected_route_without_shim_ext, expected_tuple, force,
                               libtorch_exports, make, needs_route)
from helpers.expect import TORCH, expected_paths
from hostile import cases as hostile_cases

@pytest.fixture(scope="module")
def built(built_examples):
    for name in MODULES:  # loaded from their files: importable by name from here on
        load_extension(name, built_examples)
    return built_examples


@pytest.fixture(params=MODULES)
def consumer(request, built):
    mod = importlib.import_module(request.param)
    yield mod
    mod._resolve()  # a test may have forced a route: back to the first that exists


# --- the route -------------------------------------------------------------------------------
def test_route_is_the_one_this_torch_must_offer(consumer):
    assert consumer.route() == expected_route()
    if expected_route() is None:  # free-threaded 3.13 with torch 2.12: refused, cleanly
        with pytest.raises(RuntimeError, match="no route: .*shim_ext"):
            consumer.view(torch.zeros(2))


def test_released_torch_takes_the_prototype_route(consumer):
    """torch <= 2.15 exports no borrow; with shim_ext built (everywhere cffi builds) the
    route is the prototype's, on 2.13 (no owned shim) as on 2.14 and 2.15."""
    if TORCH.release[:2] > (2, 15):
        pytest.skip("a torch newer than 2.15 may export the borrow itself")
    assert not libtorch_exports("torch_tensor_borrow_from_pyobject")
    assert consumer.route() == "prototype"


def test_forced_libtorch_route(consumer):
    if libtorch_exports("torch_tensor_borrow_from_pyobject"):
        assert consumer._resolve("libtorch") == "libtorch"
        return
    # no route: every view is a RuntimeError naming what is missing, the type unjudged
    assert consumer._resolve("libtorch") is None
    for x in (torch.zeros(2), "not a tensor"):
        with pytest.raises(RuntimeError, match="exports no torch_tensor_borrow_from_pyobject"):
            consumer.view(x)


def test_forced_owned_route(consumer):
    if not expected_paths()["owned"]:  # torch 2.13: no owned shim, so no such route
        assert consumer._resolve("owned") is None
        with pytest.raises(RuntimeError, match="torch_tensor_from_pyobject"):
            consumer.view(torch.zeros(2))
        return
    assert consumer._resolve("owned") == "owned"


# --- what a view reports ----------------------------------------------------------------------
@needs_route
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("case", CASES)
def test_view_equals_torch(consumer, route, case):
    """Every case viewed as torch's accessors give it, on every route; on the dlpack route
    (no handle to ask) a dtype is known only by the stable ABI's aoti_torch_dtype_<name>:
    where this torch exports none for it (torch 2.11 has none for float8_e8m0fnu or
    float4_e2m1fn_x2), the read is refused, never guessed."""
    force(consumer, route)
    t = make(case)
    name = str(t.dtype).removeprefix("torch.")
    if route == "dlpack" and not libtorch_exports(f"aoti_torch_dtype_{name}"):
        with pytest.raises(BufferError, match=r"no aoti_torch_dtype_\* code"):
            consumer.view(t)
        return
    assert consumer.view(t) == expected_tuple(t)


@needs_route
@pytest.mark.parametrize("route", ROUTES)
def test_no_reference_is_kept(consumer, route):
    """A borrowed handle takes no reference; an owned one is deleted on every exit path,
    the refusals after the handle included."""
    force(consumer, route)
    resized = torch.randn(4)[1:]
    resized.untyped_storage().resize_(0)
    tensors = [torch.randn(3), torch.randn(3, dtype=torch.complex64).conj(),
               torch.randn(3, 3).to_sparse(), resized, torch.empty(2, device="meta")]
    before = [t._use_count() for t in tensors]
    for t in tensors:
        for _ in range(100):
            try:
                consumer.view(t)
            except BufferError:
                pass
    assert [t._use_count() for t in tensors] == before


# --- what a view refuses, as the bridge does --------------------------------------------------
class LyingClass:
    __class__ = property(lambda self: torch.Tensor)


class Dispatching(torch.Tensor):
    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def _resized(offset):
    t = torch.randn(10)[offset:]
    t.untyped_storage().resize_(0)
    return t


def _quantized():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.quantize_per_tensor(torch.randn(3), 0.1, 0, torch.qint8)


def _csr():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Sparse CSR tensor support is in beta state"
        return torch.randn(3, 3).to_sparse_csr()


def _nested():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.nested.nested_tensor([torch.randn(2), torch.randn(3)])


REFUSED = {
    "lying __class__": LyingClass,
    "None": lambda: None,
    "int": lambda: 3,
    "conj view": lambda: torch.randn(3, dtype=torch.complex64).conj(),
    "neg view": lambda: torch.randn(3, dtype=torch.complex64).conj().imag,
    "sparse coo": lambda: torch.randn(3, 3).to_sparse(),
    "sparse csr": _csr,
    "storage resized to 0, offset": lambda: _resized(2),
    "storage resized to 0": lambda: _resized(0),
    "meta": lambda: torch.empty(3, device="meta"),
    "__torch_dispatch__ subclass": lambda: torch.randn(3).as_subclass(Dispatching),
    # The hostile catalogue's cases that fool an attribute lookup or reach past memory:
    # the Python dispatch key is read from the TensorImpl, the extent against the storage.
    "dispatch hidden by a metaclass": lambda: hostile_cases.dispatch_hidden_by_metaclass(torch),
    "Python sizes without the key": lambda: hostile_cases.python_sizes_policy_without_key(torch),
    "storage shrunk under a view": lambda: hostile_cases.storage_shrunk_under_view(torch),
    "storage shrunk by one byte": lambda: hostile_cases.storage_shrunk_by_one_byte(torch),
    "quantized": _quantized,
    "nested": _nested,
}


def bridge_error(x):
    try:
        bridge.view(x)
    except Exception as exc:  # noqa: BLE001 (the type is what is compared)
        return type(exc)
    pytest.fail("the bridge views it")


@needs_route
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("case", REFUSED)
def test_refuses_what_the_bridge_refuses(consumer, route, case):
    force(consumer, route)
    x = REFUSED[case]()
    expected = bridge_error(x)
    assert expected in (TypeError, BufferError)
    with pytest.raises(expected):
        consumer.view(x)


@needs_route
def test_more_dimensions_than_the_limit_are_refused(consumer):
    with pytest.raises(BufferError, match="more dimensions than TORCH_BORROW_MAX_DIMS "
                                          r"\(64\)"):
        consumer.view(torch.empty([1] * 65))


@needs_route
def test_a_library_may_raise_the_dimension_limit(tmp_path, monkeypatch):
    """TORCH_BORROW_MAX_DIMS defined before the include: torch allows more than 64
    dimensions, and a build with 80 reads a 65-dimensional tensor as torch describes it
    and refuses 81 naming its own limit (a child process: the module name is taken)."""
    from helpers.consumers import build

    monkeypatch.setenv("EXAMPLE_CFLAGS", "-DTORCH_BORROW_MAX_DIMS=80")
    path = build.build("consumer.c", tmp_path)
    child = textwrap.dedent(f"""
        import importlib.util, torch
        spec = importlib.util.spec_from_file_location("borrow_consumer_c", {str(path)!r})
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        t = torch.empty([1] * 64 + [3]).transpose(0, 64)
        got = mod.view(t)
        assert got[:3] == (t.data_ptr(), tuple(t.shape), t.stride()), got
        try:
            mod.view(torch.empty([1] * 81))
        except BufferError as e:
            assert "more dimensions than TORCH_BORROW_MAX_DIMS (80)" in str(e), e
        else:
            raise AssertionError("81 dimensions read")
        """)
    proc = subprocess.run([sys.executable, "-P", "-c", child], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_without_flag_getters_every_view_is_refused(consumer):
    """Without torch_is_conj / torch_is_neg a conj view would read as plain values: refused
    rather than guessed, for every tensor."""
    if consumer._resolve(flags=False) is None:
        with pytest.raises(RuntimeError, match="no route"):
            consumer.view(torch.zeros(2))
        return
    with pytest.raises(BufferError, match="conjugate / negative bits"):
        consumer.view(torch.zeros(2))


def test_shim_ext_built_for_another_torch_is_not_used(consumer, monkeypatch):
    """The prototype's THPVariable side has the layout of the torch it was built for: one
    built for another torch is refused, as the bridge refuses it. The owned route needs
    its metadata check too, so no route is left, and every view says why."""
    if libtorch_exports("torch_tensor_borrow_from_pyobject"):
        pytest.skip("libtorch exports the borrow: the prototype is not consulted")
    # A _borrow built the way the real _entry was (cffi, or setuptools where cffi cannot
    # build), so that load() judges the torch it names, not a mismatch of builds.
    from shim_ext import _entry

    fake = types.ModuleType("shim_ext._borrow")
    if shim_ext.built_by(_entry) == shim_ext.CFFI:
        fake.lib = types.SimpleNamespace(torch_borrow_built_for=lambda: None)
        fake.ffi = types.SimpleNamespace(string=lambda raw: b"1.0.0")
    else:
        fake.BUILT_BY = shim_ext.built_by(_entry)
        fake.torch_borrow_built_for = lambda: b"1.0.0"
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "shim_ext._borrow", fake)
        m.setattr(shim_ext, "_loaded", None)  # load() judges the fake, as in a fresh process
        route = consumer._resolve()
    assert route == expected_route_without_shim_ext()
    if hasattr(consumer, "route_info"):  # the C module says why (its own resolution)
        why = consumer.route_info()[1]
        assert "built for torch 1.0.0" in why and why.startswith(route + ":"), why
    t = torch.randn(3, 4)[1:]
    assert consumer.view(t) == expected_tuple(t)
    with pytest.raises(BufferError, match="negative bit"):
        consumer.view(torch._neg_view(torch.ones(3)))


def test_every_supported_torch_has_a_route_without_shim_ext(consumer):
    """shim_ext left out: torch's owned shim on 2.14+, its DLPack exchange API on 2.13;
    plain tensors, subclasses without __torch_dispatch__ and Parameters view."""
    route = consumer._resolve(shim_ext=False)
    assert route == expected_route_without_shim_ext()
    assert route == ("owned" if TORCH.release[:2] >= (2, 14) else "dlpack") or \
        libtorch_exports("torch_tensor_borrow_from_pyobject")
    for t in (torch.randn(4, 5)[1:, ::2], torch.nn.Parameter(torch.randn(3)),
              torch.randn(3).as_subclass(Plain), torch.tensor(2.5)):
        assert consumer.view(t) == expected_tuple(t)


class Meta(ctypes.Structure):
    """torch_borrow_meta (torch_borrow/consumer.h)."""
    _fields_ = [("data", ctypes.c_void_p), ("dim", ctypes.c_int64),
                ("sizes", ctypes.c_int64 * 64), ("strides", ctypes.c_int64 * 64),
                ("dtype", ctypes.c_int32), ("device_type", ctypes.c_int32),
                ("device_index", ctypes.c_int32), ("itemsize", ctypes.c_int32),
                ("storage_offset", ctypes.c_int64), ("storage_nbytes", ctypes.c_int64),
                ("status", ctypes.c_int32), ("message", ctypes.c_char * 512)]


#: torch_borrow/consumer.h's status codes
ST_OK, ST_NO_GIL, ST_UNAVAILABLE, ST_NOT_A_TENSOR, ST_REFUSED, ST_NO_TORCH = range(6)


def _read_fn(consumer, dll):
    fn = getattr(dll(consumer.__file__), f"{consumer.__name__}_read")
    fn.argtypes, fn.restype = [ctypes.py_object, ctypes.POINTER(Meta)], ctypes.c_int
    return fn


def test_without_the_gil_nothing_is_touched(consumer):
    """The C entry point returns TORCH_BORROW_NO_GIL, raising nothing and reading nothing,
    when the calling thread holds no GIL (ctypes.CDLL releases it around the call)."""
    meta = Meta(dim=-7)
    assert _read_fn(consumer, ctypes.CDLL)(torch.randn(3), ctypes.byref(meta)) == ST_NO_GIL
    assert meta.dim == -7 and meta.status == ST_NO_GIL and b"GIL" in meta.message


@needs_route
def test_c_entry_point_with_the_gil(consumer):
    """What a kernel library calls from its own C code (ctypes.PyDLL keeps the GIL): the
    fields, and a refusal as a status and a message, no exception set."""
    base = torch.randn(3, 4)
    t = base[1:]
    meta = Meta()
    assert _read_fn(consumer, ctypes.PyDLL)(t, ctypes.byref(meta)) == ST_OK
    assert (meta.data, meta.dim, tuple(meta.sizes[:2]), tuple(meta.strides[:2]),
            meta.device_index, meta.itemsize, meta.storage_offset, meta.storage_nbytes) == (
        t.data_ptr(), 2, (2, 4), (4, 1), -1, 4, t.storage_offset(),
        t.untyped_storage().nbytes())
    conj = t.to(torch.complex64).conj()
    assert _read_fn(consumer, ctypes.PyDLL)(conj, ctypes.byref(meta)) == ST_REFUSED
    assert meta.status == ST_REFUSED and b"conjugate" in meta.message
    assert _read_fn(consumer, ctypes.PyDLL)(3, ctypes.byref(meta)) == ST_NOT_A_TENSOR


# --- first use, in a fresh interpreter ---------------------------------------------------------
def _run(built, code):
    # the consumers' folder first, and whatever this interpreter already had (an install
    # into a --target folder on PYTHONPATH, as the GPU script makes one)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(built), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-P", "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.parametrize("name", MODULES)
def test_import_torch_first(built, name):
    out = _run(built, f"""
        import {name} as c
        try:
            c.route()
        except RuntimeError as exc:
            print(exc)
        """)
    assert "import torch before the first read" in out


@pytest.mark.skipif(not expected_paths()["borrow"], reason="no borrow here (asserted in "
                    "test_availability)")
@pytest.mark.parametrize("name", MODULES)
@pytest.mark.parametrize("first", ["consumer", "bridge"])
def test_the_consumer_registers_the_prototype_itself(built, name, first):
    """No caller has to call shim_ext.load(): the consumer calls it at first use (the
    one registration of _borrow's implementation with _entry), and the bridge's call,
    before or after, finds it done."""
    _run(built, f"""
        import torch, bridge, shim_ext, {name} as c
        t = torch.randn(3, 4)[:, 1:]
        if {first!r} == "bridge":
            assert bridge.view_borrow(t).ptr == t.data_ptr()
            assert shim_ext._loaded is not None
        assert c.route() == {expected_route()!r}
        assert shim_ext._loaded is not None, "the consumer did not register the prototype"
        assert c.view(t)[:3] == (t.data_ptr(), (3, 3), (4, 1))
        assert bridge.view_borrow(t).shape == (3, 3)
        assert c.view(t)[:3] == (t.data_ptr(), (3, 3), (4, 1))
        """)


@needs_route
@pytest.mark.parametrize("route", ROUTES)
def test_nested_tensor_message_asks_for_no_bug_report(consumer, route):
    """Both consumers refuse a nested tensor before any getter (its metadata is not plain
    C++ state: the borrow refuses it by itself, the owned route asks shim_ext's check), so
    torch's "Internal error ... Please file an issue" never reaches the user; the message
    names the policy (shim_ext's torch_borrow_custom_metadata), on every torch."""
    force(consumer, route)
    match = (r"a nested tensor" if route in ("owned-noshim", "dlpack") else
             r"sizes and strides are computed by a TensorImpl subclass.*\(it is a nested "
             r"tensor")
    with pytest.raises(BufferError, match=match) as info:
        consumer.view(_nested())
    assert "Please file an issue" not in str(info.value)


@needs_route
@pytest.mark.parametrize("route", ROUTES)
def test_a_class_that_gains_torch_dispatch_later_is_refused(consumer, route):
    """A tensor made with Python sizes while its class had no __torch_dispatch__, the
    class given a lying one afterwards (dim() 9, one size): refused on every route, never
    read (the Python-level check looks __torch_dispatch__ up on every read)."""
    from hostile.cases import _lying_sizes

    class Late(torch.Tensor):
        pass

    t = torch.Tensor._make_subclass(Late, torch.ones(3), False,
                                    dispatch_sizes_strides_policy="sizes")
    Late.__torch_dispatch__ = _lying_sizes(torch)
    force(consumer, route)
    with pytest.raises(BufferError):
        consumer.view(t)
    plain = torch.ones(2).as_subclass(Late)  # no Python sizes, but the class now dispatches
    with pytest.raises(BufferError, match="__torch_dispatch__|Python dispatch key|"
                                          "not plain C\\+\\+ state"):
        consumer.view(plain)
