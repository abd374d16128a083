"""Faults from public bug reports: each class on every path.

1. Tables read once go stale: privateuse1's name, renamed after the first view
   (``torch.utils.rename_privateuse1_backend``), is torch's current one in every view.
2. The first view inside ``torch.compile``: works with ``fullgraph=False`` (a graph break,
   the view made eagerly), and with ``fullgraph=True`` dynamo's own ``Unsupported`` error
   at compile time, before the bridge runs; eager, aot_eager and inductor, a fresh
   process each (compile state and the bridge's resolution are per process).
3. Dispatch subclasses are decided by the tensor's Python dispatch key, as torch's
   dispatcher decides: a metaclass, descriptor, ``__getattr__`` or instance attribute
   can neither hide a ``__torch_dispatch__`` torch calls nor fake one it does not, and
   no view reads sizes a Python ``dim()`` claims past the buffer ``size()`` returned.
4. Every device type torch can describe is in the table, with torch's own name; a code
   torch names not is refused as unknown (fault injection).
5. A view whose elements reach past its storage's nbytes (``untyped_storage().resize_(n)``
   under it) is refused with a BufferError saying why, on every entry point.
6. A tensor without the Python key whose device or layout torch computes in Python
   (``_make_subclass(..., dispatch_device=True)`` / ``dispatch_layout=True``), viewed
   under a TorchDispatchMode that lies or frees the storage when asked: refused before
   any getter (its metadata is not plain C++ state), never a view of freed memory nor a
   crash; a plain tensor under a mode is viewed as without one.
"""

from __future__ import annotations

import re
import warnings

import pytest
import torch

import bridge
from bridge import _bridge, _resolve, _select
from helpers.expect import torch_answer, view_fields
from helpers.parity import assert_parity, paths_here
from hostile import cases, subproc

VIEW = {"owned": bridge.view_owned, "borrow": bridge.view_borrow,
        "fallback": bridge.view_fallback}


def _child(code, timeout=None):
    kwargs = {} if timeout is None else {"timeout": timeout}
    rc, out, err = subproc.run_python(code, **kwargs)
    assert rc == 0, f"{subproc.describe_returncode(rc)}\n{out[-2000:]}\n{err[-4000:]}"
    return out


def _refused_on_every_entry(t, view_on, path, pattern):
    """``t`` is refused with a BufferError matching ``pattern`` by the path's view
    function, by ``view`` after ``set_path``, and by ``_native_loop``; one message."""
    with pytest.raises(BufferError) as direct:
        view_on(t)
    bridge.set_path(path)
    with pytest.raises(BufferError) as via_view:
        bridge.view(t)
    with pytest.raises(BufferError) as via_loop:
        _bridge._native_loop(t, path, 1)
    msg = str(direct.value)
    assert str(via_view.value) == str(via_loop.value) == msg
    assert re.search(pattern, msg), msg
    return msg


# --- 1. privateuse1's name after a rename ------------------------------------------------------
def test_privateuse1_name_is_torchs_before_a_rename():
    bridge.available_paths()  # the table exists
    code = int(torch._C._autograd.DeviceType.PrivateUse1)
    assert _bridge._device_name(code) == torch._C._get_privateuse1_backend_name()
    assert _bridge._device_names()[code] == torch._C._get_privateuse1_backend_name()


RENAME = """
import torch, bridge
from bridge import _bridge
from helpers.expect import expected_paths, torch_answer, view_fields
code = int(torch._C._autograd.DeviceType.PrivateUse1)
t = torch.arange(6.0).reshape(2, 3)
if {before}:
    for p, ok in expected_paths().items():
        if ok:
            assert view_fields(getattr(bridge, "view_" + p)(t)) == torch_answer(t)
    assert _bridge._device_name(code) == torch._C._get_privateuse1_backend_name() == "privateuseone"
torch.utils.rename_privateuse1_backend("foo")
assert torch._C._get_privateuse1_backend_name() == "foo"
bridge.available_paths()
assert _bridge._device_name(code) == "foo", _bridge._device_name(code)
assert _bridge._device_names()[code] == "foo"
assert torch.device("foo", 0).type == _bridge._device_name(code)
for p, ok in expected_paths().items():  # every path still views, cpu named cpu
    if ok:
        assert view_fields(getattr(bridge, "view_" + p)(t)) == torch_answer(t)
print("OK")
"""


@pytest.mark.parametrize("before", [True, False], ids=["after-first-view", "before-first-view"])
def test_privateuse1_rename_is_seen(before):
    """A privateuse1 tensor cannot be made on this CPU-only build, so the name lookup
    every view's ``device_type`` goes through is checked against torch's own name."""
    assert _child(RENAME.format(before=before)).startswith("OK")


def test_other_tables_are_torchs_own():
    """The cached tables that cannot change: dtype codes (every dtype viewed reports
    torch's dtype, checked by the parity suite) and device names, which equal torch's."""
    bridge.available_paths()
    names = _bridge._device_names()
    for member, value in torch._C._autograd.DeviceType.__members__.items():
        assert int(value) in names, member
    assert names[int(torch._C._autograd.DeviceType.CPU)] == "cpu"
    assert names[int(torch._C._autograd.DeviceType.Meta)] == "meta"


# --- 2. the first view inside torch.compile -----------------------------------------------------
COMPILE = """
import torch, bridge
from bridge import _select
from helpers.expect import expected_paths, torch_answer, view_fields
backend = {backend!r}
assert _select._resolution is None  # nothing resolved: the first use is compiled

def first(x):
    y = x * 2
    return y, bridge.view(y)

if {fullgraph}:
    try:
        torch.compile(first, backend=backend, fullgraph=True)(torch.ones(3))
    except torch._dynamo.exc.Unsupported as exc:
        assert "bridge._bridge.view" in str(exc), exc
    else:
        raise AssertionError("fullgraph=True traced bridge.view")
    assert _select._resolution is None  # refused at compile time, before the bridge ran
    torch._dynamo.reset()

x = torch.arange(6.0).reshape(2, 3)
y, v = torch.compile(first, backend=backend)(x)
assert view_fields(v) == torch_answer(y) and v.obj is y, (view_fields(v), torch_answer(y))

def each(x, fn):
    return fn(x[:, 1:])

for p, ok in expected_paths().items() if backend != "inductor" else ():
    if ok:
        fn = getattr(bridge, "view_" + p)
        v = torch.compile(each, backend=backend)(x, fn)
        assert view_fields(v) == torch_answer(x[:, 1:]) and v.path == p, p
print("OK")
"""


@pytest.mark.parametrize("backend, fullgraph", [
    ("eager", False), ("eager", True), ("aot_eager", False), ("aot_eager", True),
    ("inductor", False)])
def test_first_view_inside_torch_compile(backend, fullgraph):
    out = _child(COMPILE.format(backend=backend, fullgraph=fullgraph), timeout=300)
    assert out.strip().endswith("OK"), out


def test_available_paths_first_inside_torch_compile():
    out = _child("""
import torch, bridge
from helpers.expect import expected_paths
def f(x):
    return x + 1, bridge.available_paths()
y, paths = torch.compile(f, backend="eager")(torch.ones(2))
assert {p: i.available for p, i in paths.items()} == expected_paths(), paths
print("OK")
""", timeout=300)
    assert out.strip().endswith("OK")


# --- 3. dispatch subclasses, judged by the Python dispatch key ---------------------------------
DISABLED = torch._C._disabled_torch_dispatch_impl


# dim() says 9, size() gives one size: a read of dim() sizes from size()'s buffer goes out
# of bounds. The hostile catalogue's own dispatch function, unwrapped from its classmethod.
_lying_dispatch = cases._lying_sizes(torch).__func__


def _wrapper(cls):
    return torch.Tensor._make_wrapper_subclass(cls, (3, 4), dtype=torch.float32,
                                               dispatch_sizes_strides_policy="sizes")


class _HideMeta(torch._C._TensorMeta):
    """Answers ``__torch_dispatch__`` with torch's disabled default once told to."""
    hiding = False

    def __getattribute__(cls, name):
        if name == "__torch_dispatch__" and _HideMeta.hiding:
            return DISABLED
        return super().__getattribute__(name)


class _MetaHidden(torch.Tensor, metaclass=_HideMeta):
    __torch_dispatch__ = classmethod(_lying_dispatch)


class _Flip:
    """A descriptor: the real dispatch while the tensor is made, the disabled one after."""
    hiding = False

    def __get__(self, obj, owner=None):
        if _Flip.hiding:
            return DISABLED
        return _lying_dispatch.__get__(owner)


class _DescriptorHidden(torch.Tensor):
    __torch_dispatch__ = _Flip()


class _GetattrHidden(torch.Tensor):
    """``__torch_dispatch__`` deleted from the class after the tensor was made; the
    instance's ``__getattr__`` answers the disabled one."""
    __torch_dispatch__ = classmethod(_lying_dispatch)

    def __getattr__(self, name):
        if name == "__torch_dispatch__":
            return DISABLED
        raise AttributeError(name)


def _hidden_by_metaclass():
    t = _wrapper(_MetaHidden)
    _HideMeta.hiding = True
    return t


def _hidden_by_descriptor():
    t = _wrapper(_DescriptorHidden)
    _Flip.hiding = True
    return t


def _hidden_by_getattr():
    t = _wrapper(_GetattrHidden)
    del _GetattrHidden.__torch_dispatch__
    return t


def _exact_tensor_with_the_key():
    """An exact torch.Tensor made while torch.Tensor.__torch_dispatch__ was patched."""
    orig = torch.Tensor.__dict__["__torch_dispatch__"]
    torch.Tensor.__torch_dispatch__ = classmethod(_lying_dispatch)
    try:
        return _wrapper(torch.Tensor)
    finally:
        torch.Tensor.__torch_dispatch__ = orig


HIDDEN = {"metaclass": _hidden_by_metaclass, "descriptor": _hidden_by_descriptor,
          "getattr": _hidden_by_getattr, "exact-tensor": _exact_tensor_with_the_key}


@pytest.fixture
def unhidden():
    yield
    _HideMeta.hiding = _Flip.hiding = False
    if "__torch_dispatch__" not in _GetattrHidden.__dict__:
        _GetattrHidden.__torch_dispatch__ = classmethod(_lying_dispatch)


@pytest.mark.parametrize("make", HIDDEN.values(), ids=HIDDEN.keys())
def test_hidden_torch_dispatch_is_refused(unhidden, make, path, view_on):
    t = make()
    if make is _hidden_by_metaclass:  # torch itself asks Python, which disagrees
        assert t.dim() == 9 and t.shape == (2,)
    assert t._python_dispatch
    bridge.reset_path_counts()
    _refused_on_every_entry(t, view_on, path, cases.PY_DISPATCH.format(type(t).__qualname__))
    assert set(bridge.path_counts().values()) == {0}


class _Plain(torch.Tensor):
    pass


class _GetattrFaker(torch.Tensor):
    def __getattr__(self, name):  # any missing attribute, __torch_dispatch__ included
        if name == "__torch_dispatch__":
            return classmethod(_lying_dispatch).__get__(None, type(self))
        raise AttributeError(name)


def _fake_by_instance_attribute():
    t = torch.arange(12.0).reshape(3, 4)[:, 1:].as_subclass(_Plain)
    t.__torch_dispatch__ = classmethod(_lying_dispatch)
    return t


def _fake_by_class_assignment():
    class Late(torch.Tensor):
        pass
    t = torch.arange(12.0).reshape(4, 3).t().as_subclass(Late)
    Late.__torch_dispatch__ = classmethod(_lying_dispatch)  # after the tensor was made
    return t


def _fake_by_swapped_class():
    t = torch.arange(6.0).as_subclass(_Plain)
    t.__class__ = _MetaHidden  # a type with __torch_dispatch__; the TensorImpl has no key
    return t


FAKED = {"instance-attribute": _fake_by_instance_attribute,
         "getattr": lambda: torch.arange(8.0)[2:].as_subclass(_GetattrFaker),
         "class-attribute-after": _fake_by_class_assignment,
         "swapped-class": _fake_by_swapped_class}


@pytest.mark.parametrize("make", FAKED.values(), ids=FAKED.keys())
def test_faked_torch_dispatch_is_viewed(make):
    """torch's dispatcher never calls a ``__torch_dispatch__`` the TensorImpl has no key
    for: its sizes are C++'s own, and every path views the tensor exactly."""
    t = make()
    assert not t._python_dispatch
    assert_parity(t)


def test_python_sizes_policy_without_the_key_is_refused(path, view_on):
    """``_make_subclass(..., dispatch_sizes_strides_policy=...)`` for a class torch sees
    no ``__torch_dispatch__`` on: a Python sizes policy without the key, refused before
    any getter (a getter would ask Python)."""
    t = torch.Tensor._make_subclass(_Plain, torch.ones(3), False,
                                    dispatch_sizes_strides_policy="sizes")
    assert not t._python_dispatch
    _refused_on_every_entry(t, view_on, path, r"^this _Plain's sizes and strides are computed "
                                              r"by a TensorImpl subclass")


# --- 4. device types ----------------------------------------------------------------------------
def test_every_device_type_torch_names_is_known():
    bridge.available_paths()
    names = _bridge._device_names()
    want = {}
    for member, value in torch._C._autograd.DeviceType.__members__.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want[int(value)] = torch.device(member.lower()).type
        except RuntimeError:  # torch.device does not parse it ("metal"): c10's own name
            want[int(value)] = member.lower()
    want[int(torch._C._autograd.DeviceType.PrivateUse1)] = \
        torch._C._get_privateuse1_backend_name()
    assert names == want
    devices, pu1 = _resolve.device_types(torch)  # the stable ABI's codes agree with it
    assert devices == want and pu1 == int(torch._C._autograd.DeviceType.PrivateUse1)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_device_types_made_here(device, path, view_on):
    t = torch.arange(6.0, device=device).reshape(2, 3)
    if device == "meta":
        _refused_on_every_entry(t, view_on, path, r"^a meta tensor has no data")
    else:
        v = view_on(t)
        assert v.device_type == "cpu" and view_fields(v) == torch_answer(t)
        imported = torch.from_dlpack(t.__dlpack__())  # a DLPack import: kDLCPU
        assert view_on(imported).device_type == imported.device.type == "cpu"


@pytest.fixture
def hidden():
    def hide(*names):
        _select._resolve_again(hide=names)
    try:
        yield hide
    finally:
        _select._resolve_again()


def test_a_code_torch_does_not_name_is_refused_as_unknown(hidden):
    """The one refusal the table leaves: a device type code torch names not. Without
    torch's enum and the meta code's symbol, meta tensors carry such a code."""
    hidden(_resolve.HIDE_DEVICE_ENUM, "aoti_torch_device_type_meta")
    assert int(torch._C._autograd.DeviceType.Meta) not in _bridge._device_names()
    for p in paths_here():
        with pytest.raises(BufferError, match=r"^device type code \d+ is unknown to the "
                                              r"bridge: torch names no such"):
            VIEW[p](torch.empty(2, device="meta"))
        assert VIEW[p](torch.ones(2)).device_type == "cpu"


# --- 5. views reaching past their storage ------------------------------------------------------
PAST = r"^the tensor's elements reach past the end of its storage: storage offset \d+ "


def _shrunk(make, keep_bytes):
    t = make()
    t.untyped_storage().resize_(keep_bytes)
    return t


#: (tensor maker over a fresh 64-float storage, bytes the storage keeps). Each reaches
#: past what is kept by at least one byte.
SHRUNK = {
    "offset-view": (lambda: torch.zeros(64)[16:32].view(4, 4), 32),
    "one-byte-short": (lambda: torch.zeros(64, dtype=torch.uint8)[1:], 63),
    "whole-tensor": (lambda: torch.zeros(8, 8), 64 * 4 - 4),
    "transposed": (lambda: torch.zeros(8, 8).t(), 200),
    "stepped": (lambda: torch.zeros(64)[::9], 64 * 4 - 1),
    "expanded-stride-0": (lambda: torch.zeros(64)[60:61].expand(5, 3), 60 * 4 + 3),
    "0-d-at-offset": (lambda: torch.zeros(64)[63], 63 * 4),
    "9-dims": (lambda: torch.zeros([2] * 9, dtype=torch.float16), 1000),
    "parameter": (lambda: torch.nn.Parameter(torch.zeros(4, 8)), 64),
    "subclass": (lambda: torch.zeros(64)[8:].as_subclass(_Plain), 100),
}


@pytest.mark.parametrize("make, keep", SHRUNK.values(), ids=SHRUNK.keys())
def test_shrunk_storage_is_refused(make, keep, path, view_on):
    t = _shrunk(make, keep)
    assert t.untyped_storage().nbytes() == keep
    extent = (t.storage_offset() + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
              + 1) * t.element_size()
    assert t.numel() and extent > keep  # the premise: torch describes bytes past the end
    bridge.reset_path_counts()
    msg = _refused_on_every_entry(t, view_on, path, PAST)
    assert f"reach byte {extent}, but the storage holds {keep} bytes" in msg, msg
    assert "resize_()" in msg
    assert set(bridge.path_counts().values()) == {0}


#: Tensors that fit their storage exactly, or hold no elements: viewed.
FITTING = {
    "exact-fit": (lambda: torch.arange(64.0)[16:32].view(4, 4), 128),
    "expanded-stride-0-fits": (lambda: torch.arange(64.0)[:1].expand(7, 9), 4),
    "stepped-fits": (lambda: torch.arange(64.0)[::9], 64 * 4),
    "zero-elements-at-offset": (lambda: torch.zeros(64)[40:40].view(0, 4), 16),
}


@pytest.mark.parametrize("make, keep", FITTING.values(), ids=FITTING.keys())
def test_tensors_inside_their_storage_are_viewed(make, keep):
    t = _shrunk(make, keep)
    assert_parity(t, read=t.numel() > 0)


def test_storage_grown_back_is_viewed_again(path, view_on):
    base = torch.arange(64.0)
    t = base[16:32].view(4, 4).t()
    base.untyped_storage().resize_(64)
    _refused_on_every_entry(t, view_on, path, PAST)
    base.untyped_storage().resize_(256)
    base.copy_(torch.arange(64.0))
    assert view_fields(view_on(t)) == torch_answer(t)


# --- 6. device / layout computed in Python without the key, under a dispatch mode -----------
_MODE_CHILD = """
import ctypes, torch, bridge
from torch.utils._python_dispatch import TorchDispatchMode

class Plain(torch.Tensor):
    pass

KIND = {kind!r}
t = torch.Tensor._make_subclass(Plain, torch.zeros(1 << 20), False,
                                **{{"dispatch_" + ("layout" if KIND == "flip" else "device"): True}})

class Mode(TorchDispatchMode):
    n = 0
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if KIND == "grow" and func is torch.ops.prim.device.default:
            s = t.untyped_storage(); s.resize_(s.nbytes() + 4096)  # the old block is freed
            return torch.device("cpu")
        if KIND == "lie" and func is torch.ops.prim.device.default:
            return torch.device("cuda", 3)
        if KIND == "flip" and func is torch.ops.prim.layout.default:
            Mode.n += 1
            return torch.sparse_coo if Mode.n % 2 else torch.strided
        return func(*args, **(kwargs or {{}}))

view = getattr(bridge, "view_" + {path!r})
try:
    with Mode():
        v = view(t)
except BufferError as exc:
    print("refused:", exc)
else:
    print("VIEWED", v)
plain = torch.randn(3, 4)
with Mode():
    v = view(plain)
assert (v.ptr, v.shape, v.strides, v.device_type) == (
    plain.data_ptr(), (3, 4), (4, 1), "cpu"), v
print("plain ok")
"""


@pytest.mark.parametrize("kind", ["grow", "lie", "flip"])
@pytest.mark.parametrize("path", paths_here())
def test_python_device_or_layout_without_the_key_under_a_mode_is_refused(kind, path):
    out = _child(_MODE_CHILD.format(kind=kind, path=path))
    assert "refused: " in out and "VIEWED" not in out, out
    assert "INTERNAL ASSERT" not in out, out  # the bridge's own words, not torch's
    assert "plain ok" in out, out
