"""The catalogue of hostile inputs, and what a safe consumer must do with each.

A case is a function ``run(torch, consume)`` that builds one input, in whatever context
it needs (inside ``torch.vmap``, under ``FakeTensorMode``, with a forged word in an
object's memory), and calls ``consume(obj, truth)`` there. ``truth`` is the real tensor
whose metadata an honest handle would describe (``None`` when there is none). The same
catalogue feeds the bridge (``tests/bridge/test_hostile.py``) and torch's own
``torch_tensor_from_pyobject`` (``torch_shim_survey.py``).

Expectations follow the DLPack consumers' convention: ``TypeError`` for an object of
the wrong kind (judged by its real type, never by ``__class__`` or ``isinstance``),
``BufferError`` for a tensor that pointer + sizes + strides cannot describe, and a
correct view for the controls. Each case's docstring is its one-line description in
the survey's report; its source is the survey's minimal reproduction.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import inspect
import struct
import warnings
from dataclasses import dataclass
from typing import Callable

#: The groups, in report order.
GROUPS = {
    "non-tensor": "objects that are not tensors",
    "impostor": "objects that pretend to be tensors",
    "no-description": "tensors that pointer + sizes + strides cannot describe",
    "control": "dense strided tensors (controls: a correct view is expected)",
}


class CaseUnavailable(Exception):
    """The running torch cannot build this input (e.g. a dtype it does not have)."""


def head_size() -> int:
    """``sizeof(PyObject)`` as compiled into the bridge: the fallback's offset, where a
    forged word must sit to fool it (16; 32 on a free-threaded build). An object's first
    field (a float's value, the first ``__slots__`` slot) sits there too."""
    from bridge._bridge import PYOBJECT_SIZE

    if PYOBJECT_SIZE != object.__basicsize__:
        raise RuntimeError(f"bridge._bridge was compiled with sizeof(PyObject) = "
                           f"{PYOBJECT_SIZE}, the running interpreter has "
                           f"{object.__basicsize__}: rebuild it for this interpreter")
    return PYOBJECT_SIZE


@dataclass(frozen=True)
class Case:
    """One hostile input: ``expect`` is "TypeError", "BufferError" or "view";
    ``message`` a regular expression the exception's message must match."""

    name: str
    group: str
    expect: str
    message: str
    run: Callable
    source: Callable

    @property
    def doc(self) -> str:
        """The case's description: its docstring's first paragraph, on one line."""
        return " ".join(inspect.getdoc(self.source).split("\n\n")[0].split())

    @property
    def snippet(self) -> str:
        """The source that builds the input (the survey's minimal reproduction)."""
        lines = inspect.getsource(self.source).splitlines()
        return "\n".join(line for line in lines if not line.startswith("@"))


CASES: list[Case] = []
#: Every TypeError names the object's real type; the runner checks the exact name.
NOT_A_TENSOR = r"^expected a torch\.Tensor \(or an instance of a subclass\), got "
#: A subclass overriding __torch_dispatch__ computes its metadata in Python, which could
#: change the tensor between two getters: refused at the type gate, before any handle.
#: Judged by the TensorImpl's Python dispatch key, as torch's dispatcher judges it.
PY_DISPATCH = (r"^this {}'s TensorImpl carries torch's Python dispatch key \(a subclass "
               r"that overrides __torch_dispatch__ made it\): its metadata is computed in "
               r"Python and cannot be read safely through a handle")


def _register(group, expect, message, run, source):
    CASES.append(Case(source.__name__, group, expect, message, run, source))
    return source


def obj_case(group, expect, message=""):
    """Register ``make(torch) -> obj``: consumed as is; the truth is obj for controls."""
    def deco(make):
        def run(torch, consume):
            obj = make(torch)
            return consume(obj, obj if expect == "view" else None)
        return _register(group, expect, message, run, make)
    return deco


def ctx_case(group, expect, message=""):
    """Register a generator ``make(torch)`` that yields ``(obj, truth)`` once and
    cleans up after the consumer ran (forged memory is restored there)."""
    def deco(make):
        def run(torch, consume):
            with contextlib.contextmanager(make)(torch) as (obj, truth):
                return consume(obj, truth)
        return _register(group, expect, message, run, make)
    return deco


def call_case(group, expect, message=""):
    """Register ``make(torch, consume)``: it calls ``consume`` itself, in a context
    (inside vmap, grad, ...) and returns its result."""
    def deco(make):
        return _register(group, expect, message, make, make)
    return deco


def victim(torch):
    """A real 3x4 float32 tensor whose TensorImpl the forged objects point at."""
    return torch.arange(12, dtype=torch.float32).reshape(3, 4)


def _dtype(torch, name):
    dtype = getattr(torch, name, None)
    if dtype is None:
        raise CaseUnavailable(f"torch {torch.__version__} has no torch.{name}")
    return dtype


# --- objects that are not tensors -----------------------------------------------------------
@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def none(torch):
    """None."""
    return None


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def python_int(torch):
    """A Python int."""
    return 7


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def int_equal_to_cdata(torch):
    """The int ``t._cdata``: a real tensor's TensorImpl address as a Python int."""
    return victim(torch)._cdata


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def python_float(torch):
    """A Python float."""
    return 1.5


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def python_complex(torch):
    """A Python complex."""
    return 1 + 2j


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def python_bool(torch):
    """True."""
    return True


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def python_str(torch):
    """A str."""
    return "tensor"


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def python_bytearray(torch):
    """A 48-byte bytearray (a buffer as large as a THPVariable)."""
    return bytearray(48)


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def python_memoryview(torch):
    """A memoryview of a tensor's own bytes (via numpy)."""
    return memoryview(victim(torch).numpy())


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def python_list(torch):
    """A list of floats."""
    return [1.0, 2.0, 3.0]


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def list_of_tensors(torch):
    """A list holding one tensor."""
    return [victim(torch)]


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def python_tuple(torch):
    """A tuple of ints."""
    return (1, 2, 3)


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def python_dict(torch):
    """A dict."""
    return {"data": 1}


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def numpy_array(torch):
    """A numpy array sharing a tensor's memory (``t.numpy()``)."""
    return victim(torch).numpy()


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def numpy_scalar(torch):
    """A numpy float32 scalar."""
    import numpy
    return numpy.float32(1.0)


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def untyped_storage(torch):
    """A ``torch.UntypedStorage`` (``t.untyped_storage()``)."""
    return victim(torch).untyped_storage()


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def typed_storage(torch):
    """A ``torch.TypedStorage`` (``torch.FloatStorage(3)``, deprecated but public)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.FloatStorage(3)


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def torch_dtype(torch):
    """``torch.float32``."""
    return torch.float32


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def torch_device(torch):
    """``torch.device("cpu")``."""
    return torch.device("cpu")


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def torch_size(torch):
    """``torch.Size([3, 4])``."""
    return torch.Size([3, 4])


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def torch_layout(torch):
    """``torch.strided`` (a layout object)."""
    return torch.strided


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def tensor_class(torch):
    """The class ``torch.Tensor`` itself (a type object, not an instance)."""
    return torch.Tensor


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def torch_module(torch):
    """The ``torch`` module."""
    return torch


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def dlpack_capsule(torch):
    """A DLPack PyCapsule (``t.__dlpack__()``)."""
    return victim(torch).__dlpack__()


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def torch_generator(torch):
    """A ``torch.Generator``."""
    return torch.Generator()


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def nn_module(torch):
    """A ``torch.nn.Linear`` module (holds tensors, is not one)."""
    return torch.nn.Linear(2, 2)


@obj_case("non-tensor", "TypeError", NOT_A_TENSOR)
def ctypes_pointer_to_impl(torch):
    """A ``ctypes.c_void_p`` holding a real tensor's TensorImpl address."""
    return ctypes.c_void_p(victim(torch)._cdata)


@ctx_case("non-tensor", "TypeError", NOT_A_TENSOR)
def float_word16_is_cdata(torch):
    """A C-level object (a float) whose word at offset sizeof(PyObject) (16; 32
    free-threaded) is a real tensor's TensorImpl*."""
    t = victim(torch)
    obj = struct.unpack("<d", struct.pack("<Q", t._cdata))[0]  # PyFloatObject.ob_fval
    assert ctypes.c_uint64.from_address(id(obj) + head_size()).value == t._cdata
    yield obj, t


# --- objects that pretend to be tensors -----------------------------------------------------
@obj_case("impostor", "TypeError", NOT_A_TENSOR)
def lying_class(torch):
    """An object whose ``__class__`` claims ``torch.Tensor`` (isinstance() says True)."""
    class Liar:
        __class__ = property(lambda self: torch.Tensor)
    return Liar()


@obj_case("impostor", "TypeError", NOT_A_TENSOR)
def mock_spec_tensor(torch):
    """``unittest.mock.Mock(spec=torch.Tensor)`` (isinstance() says True)."""
    from unittest import mock
    return mock.Mock(spec=torch.Tensor)


@obj_case("impostor", "TypeError", NOT_A_TENSOR)
def magicmock_spec_set_tensor(torch):
    """``unittest.mock.NonCallableMagicMock(spec_set=torch.Tensor)``."""
    from unittest import mock
    return mock.NonCallableMagicMock(spec_set=torch.Tensor)


@obj_case("impostor", "TypeError", NOT_A_TENSOR)
def magicmock(torch):
    """A bare ``unittest.mock.MagicMock()`` (answers every attribute)."""
    from unittest import mock
    return mock.MagicMock()


@obj_case("impostor", "TypeError", NOT_A_TENSOR)
def weakref_proxy(torch):
    """``weakref.proxy(t)`` of a live tensor (its ``__class__`` is torch.Tensor)."""
    import weakref
    t = victim(torch)
    torch._hostile_keepalive = t  # keep the referent alive while the proxy is consumed
    return weakref.proxy(t)


@obj_case("impostor", "TypeError", NOT_A_TENSOR)
def delegating_proxy(torch):
    """A proxy that forwards every attribute to a tensor and claims its class."""
    class Proxy:
        def __init__(self, target):
            object.__setattr__(self, "_target", target)

        def __getattr__(self, name):
            return getattr(object.__getattribute__(self, "_target"), name)

        __class__ = property(lambda self: type(object.__getattribute__(self, "_target")))
    return Proxy(victim(torch))


@obj_case("impostor", "TypeError", NOT_A_TENSOR)
def torch_function_tensor_like(torch):
    """A tensor-like with ``__torch_function__`` (``torch.overrides.is_tensor_like``)."""
    class TensorLike:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return NotImplemented
    return TensorLike()


@obj_case("impostor", "TypeError", NOT_A_TENSOR)
def buffer_protocols_duck(torch):
    """An object exposing ``__dlpack__`` / ``__array_interface__`` for a tensor's memory."""
    t = victim(torch)

    class Duck:
        __array_interface__ = {"data": (t.data_ptr(), False), "shape": (3, 4),
                               "typestr": "<f4", "version": 3}

        def __dlpack__(self, stream=None):
            return t.__dlpack__()

        def __dlpack_device__(self):
            return t.__dlpack_device__()
    Duck.keepalive = t
    return Duck()


@ctx_case("impostor", "TypeError", NOT_A_TENSOR)
def slots_word16_is_cdata(torch):
    """A ``__slots__`` object shaped like a THPVariable, claiming ``__class__`` torch.Tensor,
    whose word at offset sizeof(PyObject) (16; 32 free-threaded) is a real tensor's
    TensorImpl*."""
    class Forged:
        __slots__ = ("cdata", "hooks", "post_hooks")  # CPython sorts slots: cdata first
        __class__ = property(lambda self: torch.Tensor)
    t = victim(torch)
    obj = Forged()
    obj.cdata = None
    word = ctypes.c_void_p.from_address(id(obj) + head_size())  # the first slot
    assert word.value == id(None)
    gc.disable()  # the collector would visit the slot as a PyObject*
    word.value = t._cdata  # refcounts untouched: the slot is restored below
    try:
        yield obj, t
    finally:
        word.value = id(None)
        gc.enable()


@ctx_case("impostor", "TypeError", NOT_A_TENSOR)
def float_subclass_word16_is_cdata(torch):
    """A float subclass claiming ``__class__`` torch.Tensor whose word at offset
    sizeof(PyObject) (16; 32 free-threaded: ``ob_fval``) is a real tensor's TensorImpl*."""
    class ForgedFloat(float):
        __class__ = property(lambda self: torch.Tensor)
    t = victim(torch)
    obj = ForgedFloat(struct.unpack("<d", struct.pack("<Q", t._cdata))[0])
    assert ctypes.c_uint64.from_address(id(obj) + head_size()).value == t._cdata
    yield obj, t


# --- tensors that pointer + sizes + strides cannot describe ---------------------------------
LAYOUT = r"^a tensor with layout {} has no pointer \+ strides description"


@obj_case("no-description", "BufferError", LAYOUT.format("sparse_coo"))
def sparse_coo(torch):
    """A sparse COO tensor (``t.to_sparse()``)."""
    return torch.eye(3).to_sparse()


def _sparse(torch, fmt, *args):
    with warnings.catch_warnings():  # "sparse CSR support is in beta"
        warnings.simplefilter("ignore")
        return getattr(torch.eye(4), f"to_sparse_{fmt}")(*args)


@obj_case("no-description", "BufferError", LAYOUT.format("sparse_csr"))
def sparse_csr(torch):
    """A sparse CSR tensor."""
    return _sparse(torch, "csr")


@obj_case("no-description", "BufferError", LAYOUT.format("sparse_csc"))
def sparse_csc(torch):
    """A sparse CSC tensor."""
    return _sparse(torch, "csc")


@obj_case("no-description", "BufferError", LAYOUT.format("sparse_bsr"))
def sparse_bsr(torch):
    """A sparse BSR tensor (2x2 blocks)."""
    return _sparse(torch, "bsr", (2, 2))


@obj_case("no-description", "BufferError", LAYOUT.format("sparse_bsc"))
def sparse_bsc(torch):
    """A sparse BSC tensor (2x2 blocks)."""
    return _sparse(torch, "bsc", (2, 2))


@obj_case("no-description", "BufferError", LAYOUT.format("_mkldnn"))
def mkldnn(torch):
    """An MKL-DNN (oneDNN) opaque tensor (``t.to_mkldnn()``)."""
    if not torch.backends.mkldnn.is_available():
        raise CaseUnavailable("this torch is built without MKL-DNN")
    return torch.ones(2, 3).to_mkldnn()


@obj_case("no-description", "BufferError",
          r"^this Tensor's sizes and strides are computed by a TensorImpl subclass .*"
          r"\(it is a nested tensor, with no single sizes / strides: view its components, "
          r"\.unbind\(\)")
def nested_strided(torch):
    """A nested tensor with the strided layout (``torch.nested.nested_tensor``)."""
    with warnings.catch_warnings():  # "nested tensors are a prototype feature"
        warnings.simplefilter("ignore")
        return torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])


@obj_case("no-description", "BufferError", PY_DISPATCH.format("NestedTensor"))
def nested_jagged(torch):
    """A nested tensor with the jagged layout (a Python wrapper subclass)."""
    return torch.nested.nested_tensor([torch.ones(2, 4), torch.ones(3, 4)],
                                      layout=torch.jagged)


QUANTIZED = r"^torch\.q\w+ is quantized: .*call \.dequantize\(\) first"


@obj_case("no-description", "BufferError", QUANTIZED)
def quantized_per_tensor(torch):
    """A per-tensor quantized quint8 tensor."""
    return torch.quantize_per_tensor(torch.ones(3), 0.1, 0, torch.quint8)


@obj_case("no-description", "BufferError", QUANTIZED)
def quantized_per_channel(torch):
    """A per-channel quantized qint8 tensor."""
    return torch.quantize_per_channel(torch.ones(2, 3), torch.tensor([0.1, 0.2]),
                                      torch.tensor([0, 0]), 0, torch.qint8)


SUB_BYTE = r"^torch\.u?int\d is a sub-byte dtype without a fixed itemsize in bytes"


@obj_case("no-description", "BufferError", SUB_BYTE)
def sub_byte_uint4(torch):
    """A ``torch.uint4`` tensor (two elements per byte)."""
    return torch.empty(4, dtype=_dtype(torch, "uint4"))


@obj_case("no-description", "BufferError", SUB_BYTE)
def sub_byte_int1(torch):
    """A ``torch.int1`` tensor."""
    return torch.empty(8, dtype=_dtype(torch, "int1"))


@obj_case("no-description", "BufferError", r"^a meta tensor has no data")
def meta(torch):
    """A tensor on the meta device (shape only, no storage)."""
    return torch.empty(3, 4, device="meta")




@obj_case("no-description", "BufferError", PY_DISPATCH.format("FakeTensor"))
def fake(torch):
    """A FakeTensor made under ``FakeTensorMode``, consumed outside the mode."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        return torch.empty(3, 4)


@call_case("no-description", "BufferError", PY_DISPATCH.format("FakeTensor"))
def fake_inside_mode(torch, consume):
    """A FakeTensor consumed while ``FakeTensorMode`` is active."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        return consume(torch.empty(3, 4), None)


#: A tensor with elements whose storage holds no memory: torch's data pointer
#: is the null base plus storage offset x itemsize, a small address nobody allocated.
NO_MEMORY = r"^the tensor has elements but its storage holds no memory \("
NO_STORAGE = (r"^cannot read the metadata of this Tensor: "
              r"Cannot access data pointer of Tensor that doesn't have storage")
#: A tensor whose sizes and strides a TensorImpl subclass computes (vmap's BatchedTensor,
#: the FunctionalTensorWrapper): not plain C++ state, refused by the borrow itself and, on
#: the other paths, by the same check before any getter.
CUSTOM_SIZES = (r"^this {}'s sizes and strides are computed by a TensorImpl subclass "
                r"\(functionalized, vmap-batched, symbolic or other wrapper tensors\)")


@call_case("no-description", "BufferError", CUSTOM_SIZES.format("Tensor"))
def inside_vmap(torch, consume):
    """The argument as ``torch.vmap``'s function sees it (a BatchedTensor)."""
    out = []
    torch.vmap(lambda x: (out.append(consume(x, None)), x.sum())[1])(torch.ones(2, 3))
    return out[0]


@call_case("no-description", "BufferError", NO_STORAGE)
def inside_grad(torch, consume):
    """The argument as ``torch.func.grad``'s function sees it (a GradTrackingTensor)."""
    out = []
    torch.func.grad(lambda x: (out.append(consume(x, None)), x.sum())[1])(torch.ones(3))
    return out[0]


@call_case("no-description", "BufferError", NO_STORAGE)
def inside_jvp(torch, consume):
    """The primal as ``torch.func.jvp``'s function sees it (a dual, wrapped tensor)."""
    out = []
    torch.func.jvp(lambda x: (out.append(consume(x, None)), x * 2)[1],
                   (torch.ones(3),), (torch.ones(3),))
    return out[0]


@call_case("no-description", "BufferError", CUSTOM_SIZES.format("Tensor"))
def inside_functionalize(torch, consume):
    """The argument as ``torch.func.functionalize``'s function sees it
    (a FunctionalTensorWrapper)."""
    out = []
    torch.func.functionalize(lambda x: (out.append(consume(x, None)), x + 1)[1])(torch.ones(3))
    return out[0]


@call_case("no-description", "BufferError", CUSTOM_SIZES.format("Tensor"))
def inside_functionalize_offset_view(torch, consume):
    """``x[1:]`` inside ``torch.func.functionalize``: a placeholder storage at storage
    offset 1 (torch's data pointer is 0x4)."""
    out = []
    torch.func.functionalize(
        lambda x: (out.append(consume(x[1:], None)), x + 1)[1])(torch.ones(3))
    return out[0]


@obj_case("no-description", "BufferError", NO_MEMORY)
def freed_storage(torch):
    """A tensor whose storage was resized to 0 bytes (``untyped_storage().resize_(0)``,
    as FSDP frees parameters): a null data pointer at storage offset 0."""
    t = torch.ones(3, 4)
    t.untyped_storage().resize_(0)
    return t


@obj_case("no-description", "BufferError", NO_MEMORY)
def freed_storage_at_offset(torch):
    """A float32 view at storage offset 16 of a storage resized to 0 bytes: torch's data
    pointer is 0x40, the null base plus 16 x 4 bytes."""
    flat = torch.zeros(64)
    p = flat[16:32].view(4, 4)
    flat.untyped_storage().resize_(0)
    return p


@obj_case("no-description", "BufferError", NO_MEMORY)
def null_storage_beyond_4gib(torch):
    """A transposed float64 tensor at storage offset 2**33 (2**36 bytes) over a storage
    whose base is null (``torch._C._construct_storage_from_data_pointer(0, ...)``):
    torch's data pointer is 0x1000000000; nothing is allocated."""
    storage = torch._C._construct_storage_from_data_pointer(
        0, torch.device("cpu"), (2**33 + 12) * 8)
    return torch.empty(0, dtype=torch.float64).set_(storage, 2**33, (4, 3), (1, 4))


@obj_case("no-description", "BufferError", PY_DISPATCH.format(".*Wrapper"))
def wrapper_subclass(torch):
    """A ``_make_wrapper_subclass`` tensor (shape and dtype, no storage), as tensor
    subclasses such as DTensor build them."""
    class Wrapper(torch.Tensor):
        @staticmethod
        def __new__(cls, shape):
            return torch.Tensor._make_wrapper_subclass(cls, shape, dtype=torch.float32)

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            raise NotImplementedError(str(func))
    return Wrapper((3, 4))


@obj_case("no-description", "BufferError", PY_DISPATCH.format(".*Strider"))
def wrapper_subclass_python_strides(torch):
    """A wrapper subclass whose strides come from ``__torch_dispatch__``
    (``dispatch_sizes_strides_policy="strides"``), which raises."""
    class Strider(torch.Tensor):
        @staticmethod
        def __new__(cls, shape):
            return torch.Tensor._make_wrapper_subclass(
                cls, shape, dtype=torch.float32, dispatch_sizes_strides_policy="strides")

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            raise NotImplementedError(str(func))
    return Strider((3, 4))


def _lying_sizes(torch):
    """A ``__torch_dispatch__`` whose ``dim()`` (9) disagrees with its ``size()`` (one
    size): a reader copying dim() sizes out of size()'s buffer reads out of bounds."""
    def dispatch(cls, func, types, args=(), kwargs=None):
        if func is torch.ops.aten.dim.default:
            return 9
        if func is torch.ops.aten.sym_size.default:
            return (2,)
        if func is torch.ops.aten.sym_stride.default:
            return (1,)
        if func is torch.ops.aten.sym_numel.default:
            return 2
        return NotImplemented
    return classmethod(dispatch)


@obj_case("no-description", "BufferError", PY_DISPATCH.format(".*MetaHidden"))
def dispatch_hidden_by_metaclass(torch):
    """A wrapper subclass with Python sizes whose ``dim()`` and ``size()`` disagree, its
    metaclass answering ``__torch_dispatch__`` with torch's disabled default once made
    (the TensorImpl keeps torch's Python dispatch key)."""
    disabled = torch._C._disabled_torch_dispatch_impl
    made = []

    class Hiding(torch._C._TensorMeta):
        def __getattribute__(cls, name):
            if name == "__torch_dispatch__" and made:
                return disabled
            return super().__getattribute__(name)

    class MetaHidden(torch.Tensor, metaclass=Hiding):
        __torch_dispatch__ = _lying_sizes(torch)

    t = torch.Tensor._make_wrapper_subclass(MetaHidden, (3, 4), dtype=torch.float32,
                                            dispatch_sizes_strides_policy="sizes")
    made.append(True)
    return t


@obj_case("no-description", "BufferError", PY_DISPATCH.format("Tensor"))
def exact_tensor_with_python_key(torch):
    """An exact ``torch.Tensor`` carrying the Python dispatch key, with Python sizes: made
    while ``torch.Tensor.__torch_dispatch__`` was monkeypatched, restored afterwards."""
    orig = torch.Tensor.__dict__["__torch_dispatch__"]
    torch.Tensor.__torch_dispatch__ = _lying_sizes(torch)
    try:
        return torch.Tensor._make_wrapper_subclass(torch.Tensor, (3, 4), dtype=torch.float32,
                                                   dispatch_sizes_strides_policy="sizes")
    finally:
        torch.Tensor.__torch_dispatch__ = orig


@obj_case("no-description", "BufferError", CUSTOM_SIZES.format("Policy"))
def python_sizes_policy_without_key(torch):
    """``_make_subclass(..., dispatch_sizes_strides_policy="sizes")`` of a class without
    ``__torch_dispatch__``: Python sizes without the Python dispatch key (a getter would
    ask Python, which raises an internal assert; refused before any getter)."""
    class Policy(torch.Tensor):
        pass
    return torch.Tensor._make_subclass(Policy, torch.ones(3), False,
                                       dispatch_sizes_strides_policy="sizes")


#: A view whose elements reach past its storage's nbytes.
PAST_STORAGE = r"^the tensor's elements reach past the end of its storage: storage offset "


@obj_case("no-description", "BufferError", PAST_STORAGE)
def storage_shrunk_under_view(torch):
    """A float32 view at storage offset 16 of a 64-float storage shrunk to 32 bytes
    (``untyped_storage().resize_(32)``): torch's pointer and sizes describe 96 bytes past
    the allocation."""
    flat = torch.zeros(64)
    p = flat[16:32].view(4, 4)
    flat.untyped_storage().resize_(32)
    return p


@obj_case("no-description", "BufferError", PAST_STORAGE)
def storage_shrunk_by_one_byte(torch):
    """A uint8 tensor whose storage lost its last byte (``resize_(nbytes - 1)``)."""
    t = torch.zeros(64, dtype=torch.uint8)
    t.untyped_storage().resize_(63)
    return t


CONJ = (r"^the tensor has its conjugate bit set: its memory holds the unconjugated "
        r"values; call \.resolve_conj\(\) first")
NEG = (r"^the tensor has its negative bit set: its memory holds the unnegated values; "
       r"call \.resolve_neg\(\) first")


@obj_case("no-description", "BufferError", CONJ)
def conj_bit(torch):
    """A lazy ``conj()`` of a complex tensor (conjugate bit set)."""
    return torch.tensor([1 + 2j, 3 - 4j]).conj()


@obj_case("no-description", "BufferError", NEG)
def neg_bit_imag_of_conj(torch):
    """``x.conj().imag``: a float view with the negative bit set."""
    return torch.tensor([1 + 2j, 3 - 4j]).conj().imag


@obj_case("no-description", "BufferError", NEG)
def neg_bit_neg_view(torch):
    """``torch._neg_view(x)`` of a real tensor (negative bit set)."""
    return torch._neg_view(torch.ones(3))


@obj_case("no-description", "BufferError", CONJ)
def conj_bit_subclass_hiding_it(torch):
    """A conjugate view of a subclass whose ``__torch_function__`` answers
    ``is_conj()`` / ``is_neg()`` with False."""
    class Hider(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func in (torch.Tensor.is_conj, torch.Tensor.is_neg):
                return False
            return super().__torch_function__(func, types, args, kwargs or {})
    return torch.tensor([1 + 2j, 3 - 4j]).conj().as_subclass(Hider)


# --- controls: dense strided tensors -------------------------------------------------------
@obj_case("control", "view")
def dense(torch):
    """A contiguous 3x4 float32 tensor."""
    return victim(torch)


@obj_case("control", "view")
def strided_with_offset(torch):
    """A transposed, stepped slice: non-contiguous, storage offset 4."""
    return torch.arange(60.0).reshape(6, 10)[1:, ::3].t()


@obj_case("control", "view")
def zero_elements(torch):
    """A 0x5 tensor (no elements)."""
    return torch.empty(0, 5)


@obj_case("control", "view")
def zero_elements_freed_storage(torch):
    """A 0x4 view at storage offset 16 of a storage resized to 0 bytes (no elements: its
    pointer is 0, as torch reports it)."""
    flat = torch.zeros(64)
    z = flat[16:16].view(0, 4)
    flat.untyped_storage().resize_(0)
    return z


@obj_case("control", "view")
def zero_dim(torch):
    """A 0-d int64 scalar tensor."""
    return torch.tensor(5)


@obj_case("control", "view")
def nine_dims(torch):
    """A 9-dimensional tensor (more dimensions than a view stores inline)."""
    return torch.zeros([2] * 9, dtype=torch.float16)


@obj_case("control", "view")
def expanded_stride_zero(torch):
    """``expand``: a stride of 0."""
    return torch.ones(3, 1).expand(3, 5)


@obj_case("control", "view")
def channels_last(torch):
    """A 4-D tensor in channels_last memory format."""
    return torch.ones(2, 3, 4, 5).to(memory_format=torch.channels_last)


@obj_case("control", "view")
def parameter(torch):
    """A ``torch.nn.Parameter`` (a subclass)."""
    return torch.nn.Parameter(torch.ones(2, 2))


@obj_case("control", "view")
def subclass_lying_class(torch):
    """A real tensor subclass whose ``__class__`` claims ``int``: its real type decides."""
    class Shy(torch.Tensor):
        __class__ = property(lambda self: int)
    return torch.ones(4).as_subclass(Shy)


@obj_case("control", "view")
def resolved_conj(torch):
    """``x.conj().resolve_conj()``: the bit cleared, values materialized."""
    return torch.tensor([1 + 2j, 3 - 4j]).conj().resolve_conj()


@obj_case("control", "view")
def complex32(torch):
    """A complex32 (chalf) tensor."""
    return torch.zeros(3, dtype=torch.complex32)


@obj_case("control", "view")
def float8_e4m3fn(torch):
    """A float8_e4m3fn tensor."""
    return torch.zeros(3, dtype=_dtype(torch, "float8_e4m3fn"))


@obj_case("control", "view")
def bool_tensor(torch):
    """A bool tensor."""
    return torch.tensor([True, False])


@obj_case("control", "view")
def requires_grad_non_leaf(torch):
    """A non-leaf tensor of an autograd graph."""
    return torch.ones(3, requires_grad=True) * 2


@obj_case("control", "view")
def inference_tensor(torch):
    """A tensor made under ``torch.inference_mode()``."""
    with torch.inference_mode():
        return torch.ones(3)


@obj_case("control", "view")
def from_numpy(torch):
    """``torch.from_numpy`` of a numpy array (memory owned by numpy)."""
    import numpy
    return torch.from_numpy(numpy.arange(6, dtype=numpy.int32).reshape(2, 3))


@obj_case("control", "view")
def dispatch_faked_by_instance_attribute(torch):
    """A plain subclass instance given a ``__torch_dispatch__`` instance attribute: torch's
    dispatcher never calls it (no Python dispatch key), so it is a dense tensor."""
    class Plain(torch.Tensor):
        pass
    t = torch.arange(12.0).reshape(3, 4)[:, 1:].as_subclass(Plain)
    t.__torch_dispatch__ = _lying_sizes(torch)
    return t


@obj_case("control", "view")
def expanded_inside_shrunk_storage(torch):
    """An expanded (stride 0) 7x9 view of one float whose storage was shrunk to that
    float's 4 bytes: every element lies inside the storage."""
    t = torch.arange(64.0)[:1].expand(7, 9)
    t.untyped_storage().resize_(4)
    return t


def by_name() -> dict[str, Case]:
    """The catalogue as ``{name: Case}``."""
    return {c.name: c for c in CASES}
