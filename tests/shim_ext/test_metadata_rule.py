"""The borrow's rule: no Python runs during a view.

``torch_tensor_borrow_from_pyobject`` refuses a tensor whose metadata is not plain C++
state: the Python dispatch key, or sizes, strides, device or layout computed by a
TensorImpl subclass or in Python (c10's ``custom_*`` / ``python_custom_*`` policies). With
that, if the caller runs no Python between the borrow and the handle's last use, the
stable getters on the handle run none either. The bridge makes the same check on the
owned and pointer-trick paths (shim_ext's ``torch_borrow_custom_metadata``), so every
path refuses the same tensors with the same message, before any getter.

Each hostile tensor here counts every call of its ``__torch_dispatch__`` (and of an
active ``TorchDispatchMode``'s): a refusal must come with a count of zero.
"""

from __future__ import annotations

import ctypes
import re
import warnings

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import bridge
from bridge import _bridge, _resolve
from helpers.expect import torch_answer, view_fields
from helpers.parity import assert_parity, assert_refused_alike, paths_here
from helpers.expect import TORCH as _TORCH_VERSION

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
CALLS: list[str] = []  # every __torch_dispatch__ / mode call made while a case ran


def _record(cls, func, types, args=(), kwargs=None):
    """Count the call and answer the metadata queries of a 3x4 float32 tensor (torch asks
    them while it builds wrappers around one); anything else is not implemented."""
    CALLS.append(str(func))
    answers = {torch.ops.aten.sym_size.default: (3, 4), torch.ops.aten.sym_stride.default: (4, 1),
               torch.ops.aten.size.default: (3, 4), torch.ops.aten.stride.default: (4, 1),
               torch.ops.aten.sym_storage_offset.default: 0, torch.ops.aten.sym_numel.default: 12,
               torch.ops.aten.dim.default: 2}
    return answers.get(func, NotImplemented)


class _Wrapper(torch.Tensor):
    """A wrapper subclass (DTensor's shape) whose every dispatch is recorded."""
    __torch_dispatch__ = classmethod(_record)


def _wrapper(policy, device):
    kwargs = {} if policy is None else {"dispatch_sizes_strides_policy": policy}
    return torch.Tensor._make_wrapper_subclass(_Wrapper, (3, 4), dtype=torch.float32,
                                               device=device, **kwargs)


def _functional_around_wrapper(device):
    """A C++ FunctionalTensorWrapper around a Python-sizes wrapper: no Python key and no
    Python-custom bit on the outer TensorImpl, yet its sizes reach the inner
    ``__torch_dispatch__``."""
    return torch._to_functional_tensor(_wrapper("sizes", device))


def _python_policy(kind, when):
    """``_make_subclass(..., dispatch_<kind>=True)`` on a class that has no
    ``__torch_dispatch__`` (``never``), or gains one after the instance exists
    (``after``): torch decides the Python key once, when the object is made, but asks
    the interpreter for the device / layout on every call."""
    def make(device):
        cls = type(f"Policy_{kind}_{when}", (torch.Tensor,), {})
        t = torch.Tensor._make_subclass(cls, torch.zeros(4, device=device), False,
                                        **{f"dispatch_{kind}": True})
        if when == "after":
            cls.__torch_dispatch__ = classmethod(_record)
        return t
    return make


def _fake(device):
    from torch._subclasses.fake_tensor import FakeTensorMode
    return FakeTensorMode().from_tensor(torch.zeros(3, device=device))


def _nested(layout):
    def make(device):
        with warnings.catch_warnings():  # "nested tensors are a prototype feature"
            warnings.simplefilter("ignore")
            return torch.nested.nested_tensor(
                [torch.zeros(2, device=device), torch.zeros(3, device=device)], layout=layout)
    return make


PY_KEY = r"^this .*'s TensorImpl carries torch's Python dispatch key"
SIZES = r"^this .*'s sizes and strides are computed by a TensorImpl subclass"
DEVICE = r"^this .*'s device or layout is computed by a TensorImpl subclass or in Python"
NESTED = SIZES + r" .*\(it is a nested tensor, with no single sizes / strides"

#: name -> (maker(device), the refusal's pattern): each has a non-default policy or the key.
REFUSED = {
    "wrapper-no-policy": (lambda d: _wrapper(None, d), PY_KEY),
    "wrapper-sizes-policy": (lambda d: _wrapper("sizes", d), PY_KEY),
    "wrapper-strides-policy": (lambda d: _wrapper("strides", d), PY_KEY),
    "functional-around-wrapper": (_functional_around_wrapper, SIZES),
    "functional-plain": (lambda d: torch._to_functional_tensor(torch.zeros(3, device=d)),
                         SIZES),
    "dispatch-device-never": (_python_policy("device", "never"), DEVICE),
    "dispatch-device-after": (_python_policy("device", "after"), DEVICE),
    "dispatch-layout-never": (_python_policy("layout", "never"), DEVICE),
    "dispatch-layout-after": (_python_policy("layout", "after"), DEVICE),
    "fake-tensor": (_fake, PY_KEY),
    "nested-strided": (_nested(torch.strided), NESTED),
    "nested-jagged": (_nested(torch.jagged), PY_KEY),
}


class _Mode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        CALLS.append(f"mode: {func}")
        return func(*args, **(kwargs or {}))


@pytest.fixture(params=["no-mode", "mode"])
def mode(request):
    """Every case outside and inside a TorchDispatchMode that records what it sees."""
    CALLS.clear()
    if request.param == "mode":
        with _Mode():
            yield request.param
    else:
        yield request.param


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", REFUSED)
def test_every_path_refuses_alike_and_runs_no_python(name, device, mode):
    make, pattern = REFUSED[name]
    t = make(device)
    CALLS.clear()
    bridge.reset_path_counts()
    msg = assert_refused_alike(t)  # every path, view / set_path / _native_loop
    assert CALLS == [], f"{name}: Python ran: {CALLS}"
    assert set(bridge.path_counts().values()) == {0}
    assert re.search(pattern, msg), msg


def _borrow_fn():
    res = _resolve.resolve(_bridge.PYOBJECT_SIZE)
    assert _resolve.BORROW in res.symbols, "shim_ext builds on every supported torch"
    fn = ctypes.PYFUNCTYPE(ctypes.c_int32, ctypes.py_object, ctypes.POINTER(ctypes.c_void_p))(
        res.symbols[_resolve.BORROW].address)
    what = res.symbols.get(_resolve.WHAT)
    what = None if what is None else ctypes.CFUNCTYPE(ctypes.c_char_p)(what.address)
    return fn, what


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", REFUSED)
def test_the_c_entry_itself_refuses(name, device):
    """Not only the bridge: the C function fails (AOTI_TORCH_FAILURE), leaves ``*ret``
    as it was, names itself and the rule in torch's per-thread message, and runs no
    Python."""
    borrow, what = _borrow_fn()
    t = REFUSED[name][0](device)
    CALLS.clear()
    sentinel = ctypes.c_void_p(0x5EED)
    assert borrow(t, ctypes.byref(sentinel)) == 1
    assert sentinel.value == 0x5EED
    assert CALLS == []
    if what is not None:
        assert what().decode().startswith(
            "torch_tensor_borrow_from_pyobject: the tensor's metadata is not plain C++ "
            "state"), what()


class _PlainSubclass(torch.Tensor):
    pass


#: Tensors whose metadata is plain C++ state: every path views them exactly.
PLAIN = {
    "tensor": lambda d: torch.arange(12.0, device=d).reshape(3, 4)[:, 1:],
    "plain-subclass": lambda d: torch.arange(6.0, device=d).as_subclass(_PlainSubclass),
    "parameter": lambda d: torch.nn.Parameter(torch.randn(4, 5, device=d)),
    "requires-grad": lambda d: torch.randn(3, device=d, requires_grad=True) * 2,
    "class-gains-dispatch-later": lambda d: _gains_dispatch_later(d),
}


def _gains_dispatch_later(device):
    """A subclass without any Python policy that gains ``__torch_dispatch__`` after the
    instance exists: its TensorImpl has no key and no policy, so torch never asks Python
    for its metadata, and it is viewed."""
    cls = type("Late", (torch.Tensor,), {})
    t = torch.arange(4.0, device=device).as_subclass(cls)
    cls.__torch_dispatch__ = classmethod(_record)
    return t


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", PLAIN)
def test_plain_tensors_still_borrow(name, device, mode):
    t = PLAIN[name](device)
    want = torch_answer(t)
    views = {"owned": bridge.view_owned, "borrow": bridge.view_borrow,
             "fallback": bridge.view_fallback}
    CALLS.clear()
    got = {p: view_fields(views[p](t)) for p in paths_here()}
    assert CALLS == [], CALLS  # no view ran Python, not even the mode
    assert got == {p: want for p in paths_here()}
    if device == "cpu":  # the parity helper reads the bytes through the pointer
        assert_parity(t)
    borrow, _ = _borrow_fn()
    h = ctypes.c_void_p()
    assert borrow(t, ctypes.byref(h)) == 0 and h.value == id(t) + _bridge.PYOBJECT_SIZE


def test_plain_tensors_are_viewed_with_the_borrow_path():
    t = torch.randn(2, 3)
    assert bridge.view(t).path == "borrow" and view_fields(bridge.view(t)) == torch_answer(t)


def test_swap_tensors_cannot_see_a_borrowed_handle():
    """``torch.utils.swap_tensors`` refuses while the TensorImpl's use count is above one:
    an owned handle raises the count, a borrowed one does not, so the swap goes through
    under a live borrow (the handle then points at the other tensor: the contract calls it
    unspecified, and the caller must not swap while it holds one)."""
    borrow, _ = _borrow_fn()
    a, b = torch.zeros(3), torch.ones(3)
    h = ctypes.c_void_p()
    assert borrow(a, ctypes.byref(h)) == 0
    assert a._use_count() == 1  # the borrow is not counted
    torch.utils.swap_tensors(a, b)  # so nothing stops the swap
    assert a.sum().item() == 3
    res = _resolve.resolve(_bridge.PYOBJECT_SIZE)
    if _resolve.OWNED not in res.symbols:
        return  # torch < 2.14: no owned handle to compare with
    owned_fn = ctypes.PYFUNCTYPE(ctypes.c_int32, ctypes.py_object,
                                 ctypes.POINTER(ctypes.c_void_p))(res.symbols[_resolve.OWNED].address)
    delete = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(res.symbols[_resolve.DELETE].address)
    owned = ctypes.c_void_p()
    assert owned_fn(a, ctypes.byref(owned)) == 0
    try:
        assert a._use_count() == 2  # the owned handle is counted
        with pytest.raises(RuntimeError):  # torch's wording differs by version
            torch.utils.swap_tensors(a, b)
    finally:
        delete(owned)
    torch.utils.swap_tensors(a, b)  # the owned handle gone, the swap goes through


def test_without_shim_ext_the_pointer_trick_is_not_offered():
    """Without shim_ext's check nothing could tell a tensor whose getters run Python
    behind a bare pointer: the pointer trick is then unavailable (with that reason). The
    owned path reads by ``torch_borrow/tables.h``'s rule (consumer.h's owned route's): a
    plain subclass is viewed exactly; a type whose ``__torch_dispatch__`` is not torch's
    default is refused before the handle; a tensor whose getters would reach Python (a
    Python device policy, the Python key) makes them fail, refused, never read."""
    from bridge import _select
    try:
        paths = _select._resolve_again(hide={_resolve.HIDE_SHIM_EXT}).paths
        assert not paths["fallback"].available
        assert "needs shim_ext's torch_borrow_custom_metadata" in paths["fallback"].reason
        with pytest.raises(bridge.PathUnavailableError, match="torch_borrow_custom_metadata"):
            bridge.view_fallback(torch.ones(2))
        if not paths["owned"].available:
            return  # torch < 2.14
        t = torch.randn(3, 4)
        assert view_fields(bridge.view_owned(t)) == torch_answer(t)
        sub = torch.randn(5, 6)[1:, ::2].as_subclass(_PlainSubclass)  # offset, strides
        v = bridge.view_owned(sub)
        assert (v.ptr, v.shape, v.strides) == (sub.data_ptr(), tuple(sub.shape), sub.stride())
        assert view_fields(v) == torch_answer(sub)
        with pytest.raises(BufferError, match="overrides __torch_dispatch__"):
            bridge.view_owned(_python_policy("device", "after")("cpu"))
        with pytest.raises(BufferError, match="^cannot read the metadata of this Policy_"):
            bridge.view_owned(_python_policy("device", "never")("cpu"))
        from hostile import cases
        with pytest.raises(BufferError, match=PY_KEY):
            bridge.view_owned(cases.exact_tensor_with_python_key(torch))
    finally:
        _select._resolve_again()
    assert paths_here()  # restored


# --- why every policy bit is refused, not only the Python ones --------------------------------
# The borrow refuses C++ policies too (TensorImpl subclasses' custom sizes / strides), though
# only Python can free what a borrowed handle points at. Each case shows what the refused
# bit does through torch's *owned* handle, which accepts them all: Python run by a C++
# policy, or getters that answer values describing no memory.

def _owned_getters():
    """``(owned, delete, get)`` through the bridge's resolution, the GIL held across each
    call (``PYFUNCTYPE``); ``get(name, handle)`` returns the getter's value or ``None`` when
    it fails. Only on a torch that exports ``torch_tensor_from_pyobject`` (2.14+)."""
    res = _resolve.resolve(_bridge.PYOBJECT_SIZE)
    if _resolve.OWNED not in res.symbols:
        assert TORCH < (2, 14), f"torch {torch.__version__} must export {_resolve.OWNED}"
        pytest.skip(f"torch {torch.__version__} has no {_resolve.OWNED} (2.14+)")
    handle_out = ctypes.POINTER(ctypes.c_void_p)
    owned = ctypes.PYFUNCTYPE(ctypes.c_int32, ctypes.py_object, handle_out)(
        res.symbols[_resolve.OWNED].address)
    delete = ctypes.PYFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(
        res.symbols[_resolve.DELETE].address)
    types = {"aoti_torch_get_dim": ctypes.c_int64, "aoti_torch_get_data_ptr": ctypes.c_void_p,
             "aoti_torch_get_device_type": ctypes.c_int32, "aoti_torch_get_layout": ctypes.c_int32,
             "aoti_torch_get_sizes": ctypes.POINTER(ctypes.c_int64),
             "aoti_torch_get_strides": ctypes.POINTER(ctypes.c_int64)}
    fns = {name: ctypes.PYFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(kind))(
        res.symbols[name].address) for name, kind in types.items()}

    def get(name, handle):
        value = types[name]()
        if fns[name](handle, ctypes.byref(value)) != 0:
            return None
        if name in ("aoti_torch_get_sizes", "aoti_torch_get_strides"):
            return tuple(value[i] for i in range(get("aoti_torch_get_dim", handle)))
        return value.value or 0 if name == "aoti_torch_get_data_ptr" else value.value

    return owned, delete, get


TORCH = _TORCH_VERSION.release[:2]


def _through_owned_handle(t) -> dict:
    """What the owned handle's getters answer for ``t`` (``None``: the getter failed), and
    the borrow's answer for the same object (1: refused)."""
    owned, delete, get = _owned_getters()
    borrow, _ = _borrow_fn()
    handle = ctypes.c_void_p()
    assert owned(t, ctypes.byref(handle)) == 0, "torch's owned shim accepts every tensor"
    try:
        got = {k: get(f"aoti_torch_get_{k}", handle) for k in ("data_ptr", "sizes", "strides")}
    finally:
        delete(handle)
    got["borrow"] = borrow(t, ctypes.byref(ctypes.c_void_p()))
    return got


def _custom_bits(t) -> int:
    res = _resolve.resolve(_bridge.PYOBJECT_SIZE)
    fn = ctypes.PYFUNCTYPE(ctypes.c_int32, ctypes.py_object, ctypes.POINTER(ctypes.c_int32))(
        res.symbols[_resolve.CUSTOM_METADATA].address)
    return fn(t, ctypes.byref(ctypes.c_int32()))


PYTHON_KEY, CUSTOM_STRIDES, CUSTOM_SIZES = 1, 2, 4  # torch_borrow/abi.h's TORCH_BORROW_CUSTOM_*


#: A refused tensor per policy bit whose getter runs Python through an owned handle: the
#: bit, and the getter that runs it. The C++ bit is the one a rule of Python bits would miss.
RUNS_PYTHON = {
    "functional-around-wrapper": (CUSTOM_SIZES, "aoti_torch_get_sizes"),
    "wrapper-sizes-policy": (PYTHON_KEY, "aoti_torch_get_sizes"),
    "dispatch-device-after": (8, "aoti_torch_get_device_type"),  # TORCH_BORROW_CUSTOM_DEVICE
    "dispatch-layout-after": (16, "aoti_torch_get_layout"),  # TORCH_BORROW_CUSTOM_LAYOUT
}


@pytest.mark.parametrize("name", RUNS_PYTHON)
def test_each_refused_bit_runs_python_through_an_owned_handle(name):
    """torch's owned handle accepts these; one getter on it runs the tensor's Python
    (``__torch_dispatch__``). A FunctionalTensorWrapper (a C++ custom-sizes policy, no
    Python key) around a Python-sizes wrapper runs the inner one, so a rule of Python
    bits alone would lend it. The borrow refuses each without running Python."""
    bit, getter = RUNS_PYTHON[name]
    t = REFUSED[name][0]("cpu")
    bits = _custom_bits(t)
    assert bits & bit and (bit == PYTHON_KEY or not bits & PYTHON_KEY), (name, bits)
    owned, delete, get = _owned_getters()
    handle = ctypes.c_void_p()
    assert owned(t, ctypes.byref(handle)) == 0
    try:
        CALLS.clear()
        try:
            get(getter, handle)
        except TypeError:  # the wrapper answers only the queries it knows
            pass
        assert CALLS, f"{name}: {getter} ran no Python"
    finally:
        delete(handle)
    borrow, _ = _borrow_fn()
    CALLS.clear()
    assert borrow(t, ctypes.byref(ctypes.c_void_p())) == 1 and CALLS == []


def test_cpp_policies_describe_no_memory_through_an_owned_handle():
    """C++ policies without Python: the owned handle's getters describe memory that is
    not there, where torch's own accessors refuse or differ; the borrow refuses each.
    mkldnn (custom strides): a data pointer and strides for an opaque blocked buffer whose
    ``data_ptr()`` torch refuses; inside ``functionalize`` (custom sizes): sizes with a
    null data pointer; inside ``vmap`` (custom strides): the per-example shape of a batch."""
    seen = {}
    if torch.backends.mkldnn.is_available():
        t = torch.ones(2, 2).to_mkldnn()
        with pytest.raises(RuntimeError, match="doesn't have storage"):
            t.data_ptr()
        seen["mkldnn"] = (_custom_bits(t), CUSTOM_STRIDES, _through_owned_handle(t))
        assert seen["mkldnn"][2]["data_ptr"], "the owned handle answers a data pointer"

    def functional(x):
        seen["functional"] = (_custom_bits(x), CUSTOM_SIZES, _through_owned_handle(x))
        return x + 1

    def batched(x):
        seen["vmap"] = (_custom_bits(x), CUSTOM_STRIDES, _through_owned_handle(x))
        return x

    torch.func.functionalize(functional)(torch.ones(3, 4))
    torch.vmap(batched)(torch.arange(12.0).reshape(3, 4))
    assert seen["functional"][2]["sizes"] == (3, 4) and seen["functional"][2]["data_ptr"] == 0
    assert seen["vmap"][2]["sizes"] == (4,)  # the memory is 3 x 4
    for name, (bits, bit, got) in seen.items():
        assert bits & (PYTHON_KEY | bit) == bit, (name, bits)
        assert got["borrow"] == 1, name
