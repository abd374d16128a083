"""Dispatch subclasses and Python-computed metadata: refused by torch's own rule.

A tensor is refused when its TensorImpl carries the Python dispatch key, as torch's
dispatcher decides: a metaclass, descriptor, ``__getattr__`` or instance attribute can
neither hide a ``__torch_dispatch__`` torch calls nor fake one it does not, and no view
reads sizes a Python ``dim()`` claims past the buffer ``size()`` returned. A tensor
without the key whose sizes, device or layout torch computes in Python
(``_make_subclass(..., dispatch_sizes_strides_policy=...)``, ``dispatch_device=True``,
``dispatch_layout=True``) is refused before any getter, under a TorchDispatchMode that
lies or frees the storage too; a plain tensor under a mode is viewed as without one.
"""

from __future__ import annotations

import pytest
import torch

import bridge
from helpers.child import run_ok
from helpers.parity import assert_parity, paths_here, refused_on_every_entry
from hostile import cases


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
def test_hidden_torch_dispatch_is_refused(unhidden, make, path):
    t = make()
    if make is _hidden_by_metaclass:  # torch itself asks Python, which disagrees
        assert t.dim() == 9 and t.shape == (2,)
    assert t._python_dispatch
    bridge.reset_path_counts()
    refused_on_every_entry(t, path, cases.PY_DISPATCH.format(type(t).__qualname__))
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


def test_python_sizes_policy_without_the_key_is_refused(path):
    """``_make_subclass(..., dispatch_sizes_strides_policy=...)`` for a class torch sees
    no ``__torch_dispatch__`` on: a Python sizes policy without the key, refused before
    any getter (a getter would ask Python)."""
    t = torch.Tensor._make_subclass(_Plain, torch.ones(3), False,
                                    dispatch_sizes_strides_policy="sizes")
    assert not t._python_dispatch
    refused_on_every_entry(t, path, r"^this _Plain's sizes and strides are computed "
                                              r"by a TensorImpl subclass")


# --- device or layout computed in Python without the key, under a dispatch mode -------------
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
    out = run_ok(_MODE_CHILD.format(kind=kind, path=path), forked=True)
    assert "refused: " in out and "VIEWED" not in out, out
    assert "INTERNAL ASSERT" not in out, out  # the bridge's own words, not torch's
    assert "plain ok" in out, out
