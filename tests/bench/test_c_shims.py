"""The C-shim consumer (``bench/c_shims/c_shims.cpp``): ATen ops called from C
through torch's generated C shims on tensors from Python, input handles by each route.

Results equal torch's (``torch.equal``) for every op and route on CPU and, where present,
CUDA tensors; under a ``TorchDispatchMode`` the generated CPU shims of add and mm_out run
no op the mode sees, while ``aoti_torch_aten_amax`` and ops that call other ops enter the
dispatcher; autograd records what each kernel records; a bad argument is a Python
exception with torch's message and releases the owned handles taken before it; a tensor
the borrow refuses raises before the op. Skipped only where cffi is missing
(free-threaded 3.13).
"""

from __future__ import annotations

import ctypes
import importlib.util
import sys

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import bridge  # noqa: F401  (the borrow's symbols: shim_ext, loaded by the bridge)

if importlib.util.find_spec("cffi") is None:
    pytest.skip("no cffi in this environment (free-threaded CPython 3.13): the owned "
                "prototype and the internal fixes are built with cffi", allow_module_level=True)

from bench.c_shims import consumer as cs
from helpers.expect import TORCH as _TORCH_VERSION

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
#: ops whose generated device shim calls the kernel directly and whose kernel calls no
#: other op: the mode sees nothing
DIRECT = ("add", "mm_out")
#: each op's own aten overload (what the mode would see if the shim dispatched it)
OWN_OVERLOAD = {"add": "aten.add.Tensor", "amax": "aten.amax.default",
                "median": "aten.median.default", "mm_out": "aten.mm.out",
                "addmm_out": "aten.addmm.out"}


@pytest.fixture(scope="module")
def consumer():
    return cs.Consumer(torch)


@pytest.fixture(params=cs.ROUTES)
def route(request, consumer):
    r = request.param
    if r == "owned_fixed" and not consumer.available[r]:
        pytest.skip(f"owned_fixed: {consumer.reasons[r]}")  # needs the internal fixes' build
    assert consumer.available[r], consumer.reasons.get(r)  # owned: torch's or the prototype
    return r


TORCH = _TORCH_VERSION.release[:2]


def shim_or_fail(consumer, op, device):
    """torch 2.15 exports every shim used here (checked); an older torch may lack one:
    then that op is not available here, said, and the others still run."""
    if consumer.shims[op][device] is None:
        assert TORCH < (2, 15), consumer.shim_reasons[(op, device)]
        pytest.skip(consumer.shim_reasons[(op, device)])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", cs.OPS)
@pytest.mark.parametrize("size", [32, 7])
def test_result_equals_torch(consumer, route, device, op, size):
    shim_or_fail(consumer, op, device)
    tensors = cs.inputs(torch, op, size, device)
    got = consumer.call(op, route, *tensors)
    if op.endswith("_out"):
        assert got is None
        got = tensors[0]
    want = cs.reference(torch, op, tensors)
    assert got.device == want.device and got.dtype == want.dtype
    assert got.shape == want.shape
    assert torch.equal(got, want)
    if op.endswith("_out"):  # really written: the zeros are gone
        assert not torch.equal(got, torch.zeros_like(got))


@pytest.mark.parametrize("device", DEVICES)
def test_inputs_unchanged_and_out_aliased(consumer, device):
    shim_or_fail(consumer, "mm_out", device)
    out, a, b = cs.inputs(torch, "mm_out", 16, device)
    a0, b0, ptr = a.clone(), b.clone(), out.data_ptr()
    assert consumer.call("mm_out", "borrow", out, a, b) is None
    assert out.data_ptr() == ptr  # written in place, not replaced
    assert torch.equal(a, a0) and torch.equal(b, b0)


@pytest.mark.parametrize("device", DEVICES)
def test_subclass_parameter_and_view_inputs(consumer, route, device):
    shim_or_fail(consumer, "add", device)
    class Plain(torch.Tensor):
        pass

    a = torch.randn(16, 16, device=device)
    inputs = [a.as_subclass(Plain), torch.nn.Parameter(a.clone()), a.t(), a[2:10, 3:11]]
    for x in inputs:
        y = torch.randn(x.shape, device=device)
        assert torch.equal(consumer.call("add", route, x, y), torch.add(x.detach(), y))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", cs.OPS)
def test_dispatch_mode_probe(consumer, device, op):
    shim_or_fail(consumer, op, device)
    seen = cs.dispatch_probe(torch, consumer, op, "borrow", device)
    if op == "amax":  # the device-generic c_shim_aten.h shim calls at::amax: the dispatcher
        assert seen == [OWN_OVERLOAD[op]], seen
    elif op in DIRECT and device == "cpu":  # checked on torch 2.15's CPU kernels
        assert seen == [], seen
    else:  # the kernel is called directly; at most the ops it calls in turn are seen
        assert OWN_OVERLOAD[op] not in seen, seen


class _DuringAmax(TorchDispatchMode):
    """Runs ``action`` once when ``aten.amax`` reaches the mode, recording what it raised."""

    def __init__(self, action):
        super().__init__()
        self.action, self.raised = action, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten.amax.default:
            try:
                self.action()
            except RuntimeError as exc:
                self.raised.append(str(exc))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("device", DEVICES)
def test_an_op_call_may_change_the_tensor_in_place_but_not_swap_it(consumer, route, device):
    """What an operator call can do to a tensor whose handle it was given, through Python it
    enters (``aoti_torch_aten_amax`` reaches a ``TorchDispatchMode``): change it in place, on
    every route alike (an owned handle shares the TensorImpl), so what was read before the
    call is stale after it; ``torch.utils.swap_tensors``, the one change that would move a
    borrowed handle and not an owning one, is refused on every route while the op runs (the
    dispatcher's copies of the argument raise its use count)."""
    shim_or_fail(consumer, "amax", device)
    a, b = torch.ones(4, 4, device=device), torch.zeros(2, 3, device=device)
    swap = _DuringAmax(lambda: torch.utils.swap_tensors(a, b))
    with swap:
        consumer.call("amax", route, a)
    assert len(swap.raised) == 1 and "use_count" in swap.raised[0], swap.raised
    assert a.shape == (4, 4) and b.shape == (2, 3) and torch.equal(a, torch.ones_like(a))
    resize = _DuringAmax(lambda: a.resize_(2, 3))
    with resize:
        consumer.call("amax", route, a)
    assert resize.raised == [] and a.shape == (2, 3) and a.stride() == (3, 1)


#: the grad_fn each op would get through the dispatcher
OWN_BACKWARD = {"add": "AddBackward0", "amax": "AmaxBackward0", "median": "MedianBackward0",
                "mm_out": "MmBackward0", "addmm_out": "AddmmBackward0"}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", cs.OPS)
def test_autograd_not_recorded_by_device_shims(consumer, device, op):
    shim_or_fail(consumer, op, device)
    tensors = cs.inputs(torch, op, 8, device, requires_grad=True)
    res = cs.result(op, tensors, consumer.call(op, "borrow", *tensors))
    inputs = tensors[1:] if op.endswith("_out") else tensors
    assert all(t.requires_grad for t in inputs)
    name = None if res.grad_fn is None else type(res.grad_fn).__name__
    if op == "amax":  # through the dispatcher, Autograd key included
        assert name == OWN_BACKWARD[op] and res.requires_grad
    elif op in DIRECT:
        assert name is None and not res.requires_grad, name
    else:  # never the op's own backward; addmm's CPU kernel's copy_ of c into out is
        # recorded (CopyBackwards: a graph without the matmul)
        assert name != OWN_BACKWARD[op], name


def test_errors_carry_torch_messages(consumer, route):
    shim_or_fail(consumer, "add", "cpu")
    shim_or_fail(consumer, "mm_out", "cpu")

    def torch_says(text):  # before torch 2.13 torch logs the message and returns 1
        if consumer.torch_messages:
            return text
        return r"no message \(this torch exports no torch_exception_get_what_without_backtrace\)"

    a = torch.zeros(2)
    # the owned prototype (torch < 2.14) keeps its own message; the borrow has torch's
    refusal = (r"expected torch\.Tensor, got object"
               if consumer.torch_messages or route.startswith("owned") else torch_says(""))
    with pytest.raises(RuntimeError, match=r"tensor argument 2 \(object\).*" + refusal):
        consumer.call("add", route, a, object())
    with pytest.raises(RuntimeError,
                       match=r"add: " + torch_says(r"The size of tensor a \(2\) must match")):
        consumer.call("add", route, a, torch.zeros(3))
    with pytest.raises(RuntimeError, match=r"mm_out: " + torch_says(
            r"(mm: )?mat1 and mat2 shapes cannot be multiplied")):
        consumer.call("mm_out", route, torch.zeros(2, 2), torch.zeros(2, 3), torch.zeros(2, 3))
    with pytest.raises(TypeError, match="add takes 2 tensors, got 1"):
        consumer.call("add", route, a)


def test_owned_handles_released_on_every_path(consumer):
    shim_or_fail(consumer, "add", "cpu")
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    before = (sys.getrefcount(a), a._use_count(), b._use_count())
    f, head = consumer.function("add", "owned")
    for _ in range(10**4):
        f(*head, a, b)
    # torch's refusals build a c10::Error with a backtrace (about a millisecond each): a
    # few hundred show a leak as well as more would (the counts are compared exactly)
    for _ in range(200):
        try:  # the first handle taken, the second refused: the first must be deleted
            f(*head, a, None)
        except RuntimeError:
            pass
        try:  # both taken, the op refuses: both deleted
            f(*head, a, torch.zeros(3))
        except RuntimeError:
            pass
    assert (sys.getrefcount(a), a._use_count(), b._use_count()) == before


def test_loops_report_positive_ns_and_refuse_bad_input(consumer, route):
    shim_or_fail(consumer, "mm_out", "cpu")
    ts = cs.inputs(torch, "mm_out", 8, "cpu")
    assert consumer.handles_loop(route, 100, *ts) > 0
    assert consumer.op_loop("mm_out", 5, *ts) > 0
    # the owned prototype (torch < 2.14) keeps its own message; a torch before 2.13
    # exports no getter for torch's
    says = ("expected torch.Tensor" if consumer.torch_messages or route.startswith("owned")
            else r"no message \(this torch exports no torch_exception_get_what_without_backtrace\)")
    with pytest.raises(RuntimeError, match=says):
        consumer.handles_loop(route, 10, ts[0], 1.5)
    with pytest.raises(TypeError):
        consumer.op_loop("mm_out", 5, *ts[:2])


def _borrow_accepts(t) -> bool:
    from bridge import _bridge as core
    from bridge import _resolve

    sym = _resolve.resolve(core.PYOBJECT_SIZE).symbols[_resolve.BORROW]
    fn = ctypes.PYFUNCTYPE(ctypes.c_int32, ctypes.py_object,
                           ctypes.POINTER(ctypes.c_void_p))(sym.address)
    h = ctypes.c_void_p()
    return fn(t, ctypes.byref(h)) == 0


def test_nested_tensor_refused_by_the_borrow(consumer):
    shim_or_fail(consumer, "median", "cpu")
    nt = torch.nested.nested_tensor([torch.zeros(2), torch.ones(3)])
    # A borrow that accepted it would hand the dense CPU kernel a NestedTensorImpl:
    # torch's median shim then returns a value computed from nothing (tensor(0.)), as it
    # does through the owned handle. The borrow refuses a tensor whose metadata is not
    # plain C++ state, so the consumer gets an error instead.
    assert not _borrow_accepts(nt)
    with pytest.raises(RuntimeError, match="borrow handle of tensor argument 1"):
        consumer.call("median", "borrow", nt)


def test_prototypes_for_older_torch(consumer):
    """2.14's owned shim and torch_tensor_to_pyobject built for this torch (what a torch
    without them, e.g. 2.11, runs): the same results, their own error messages."""
    proto = cs.Consumer(torch, prototypes=True)
    try:
        _check_prototypes(proto)
    finally:  # the extension holds one set of addresses: put torch's own back
        cs.Consumer(torch)
    shim_or_fail(consumer, "mm_out", "cpu")
    out, a, b = cs.inputs(torch, "mm_out", 5, "cpu")
    consumer.call("mm_out", "owned", out, a, b)
    assert torch.equal(out, a @ b)


def _check_prototypes(proto):
    assert proto.to_pyobject.startswith("2.14's torch_tensor_to_pyobject, built for torch")
    assert proto.labels["owned"].startswith("owned (2.14's implementation")
    for op in [op for op in cs.OPS if proto.shims[op]["cpu"]]:
        for route in ("owned", "borrow"):
            tensors = cs.inputs(torch, op, 9, "cpu")
            got = cs.result(op, tensors, proto.call(op, route, *tensors))
            assert torch.equal(got, cs.reference(torch, op, tensors))
    with pytest.raises(RuntimeError, match="expected torch.Tensor, got object"):
        proto.call("mm_out", "owned", torch.zeros(2, 2), torch.zeros(2, 2), object())
