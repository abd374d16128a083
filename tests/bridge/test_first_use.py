"""A first use inside a mode or a functional transform: no user code runs, nothing is bent.

The first ``bridge.view`` / ``bridge.available_paths()`` (and a C consumer's first
``torch_borrow_read``) resolves for the whole process: it makes probe tensors and reads
them. When that first use happens under a ``TorchFunctionMode``, a ``TorchDispatchMode``,
a ``FakeTensorMode``, ``torch.func.functionalize``, ``torch.func.vmap`` or inside
``torch.compile``, the probes must still be plain tensors read by torch's C++ code alone:

- no user mode code runs (the modes here record every call and raise from it);
- the process ends up in the state a first use outside would leave: the same
  ``available_paths()``, the same path, the same ``python -m bridge info`` report (its
  JSON, made in the same process), the same consumer route and reason;
- every tensor gets the answer it gets outside: one tensor of each torch dtype, viewed
  after the context is left, equals (or is refused as) in a fresh process that never saw
  the context; a plain tensor viewed inside equals torch's own accessors. The transformed
  tensors themselves (functional, batched, fake) are refused, by design.

The samples are read inside the context too (every read's Python, on the consumer's
routes without shim_ext, runs there). Each case runs in its own child process (the first
use is process-wide), compared with a reference child whose first use is outside any
context; the children are forked after ``import torch`` (``helpers.forkserver``).
"""

from __future__ import annotations

import json

import pytest

from helpers.child import run_ok
from helpers.expect import expected_paths
from helpers.consumers import expected_route

CONTEXTS = ("none", "torch_function_mode", "torch_dispatch_mode", "fake_tensor_mode",
            "functionalize", "vmap", "compile")

# The child: the first use named by FIRST inside the context named by CONTEXT, then the
# state and each dtype's answer outside, as one JSON line. Every mode records each call
# it gets and raises from it; nothing else in the child runs under a mode.
_CHILD = r'''
import json, sys, warnings
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch._subclasses.fake_tensor import FakeTensorMode
from helpers.expect import torch_answer, view_fields

CONTEXT, FIRST, BUILT, UNGUARDED = {context!r}, {first!r}, {built!r}, {unguarded!r}
calls = []
if UNGUARDED:  # a switch this torch lacks: the set-up cannot turn the transform off
    del torch._C._DisableFuncTorch

class RecordingFunctionMode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        calls.append("__torch_function__ " + getattr(func, "__name__", repr(func)))
        raise RuntimeError("user TorchFunctionMode code ran")

class RecordingDispatchMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        calls.append("__torch_dispatch__ " + str(func))
        raise RuntimeError("user TorchDispatchMode code ran")

class RecordingFakeTensorMode(FakeTensorMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        calls.append("FakeTensorMode " + str(func))
        return super().__torch_dispatch__(func, types, args, kwargs)

if FIRST.startswith("consumer"):
    from proposal.toolchain import load_extension
    import pathlib
    consumer = load_extension("borrow_consumer_c", pathlib.Path(BUILT))
    read = consumer.view
    def answer(t):  # what consumer.view returns, from torch's own accessors
        return (t.data_ptr(), tuple(t.shape), t.stride())
    def fields(v):
        return v[:3]
else:
    import bridge
    read = bridge.view
    answer, fields = torch_answer, view_fields

plain = torch.arange(12.0).reshape(3, 4)[:, 1:]
expected = answer(plain)
inside = {{}}
# One tensor of every dtype torch can allocate, and torch's answer, made before any context.
samples = {{}}
for d in sorted({{v for v in vars(torch).values() if isinstance(v, torch.dtype)}}, key=str):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = torch.empty(2, 3, dtype=d)[:, 1:]
    except Exception:
        continue
    samples[str(d)] = (t, answer(t))

def outcomes():
    got = {{}}
    for name, (t, want) in samples.items():
        try:
            v = read(t)
        except Exception as exc:
            got[name] = type(exc).__name__ + ": " + str(exc)
        else:
            got[name] = "ok" if fields(v) == want else "WRONG " + repr(v)
    return got

def first_use(transformed=None):
    # The first use: a plain tensor from outside, then (in a transform) the transformed one.
    try:
        if FIRST == "available_paths":
            bridge.available_paths()
        elif FIRST.startswith("consumer:"):  # a route forced: its own set-up, inside
            route = FIRST.partition(":")[2]
            name, _, noshim = route.partition("-")
            inside["route"] = consumer._resolve(name, shim_ext=not noshim and name != "dlpack")
        inside["plain"] = fields(read(plain)) == expected
    except RuntimeError as exc:  # PathUnavailableError; the consumer's "no route"
        inside["plain"] = "unavailable: " + str(exc)
        return
    inside["dtypes"] = outcomes()
    if transformed is not None:
        try:
            read(transformed)
        except BufferError:
            inside["transformed"] = "refused"
        else:
            inside["transformed"] = "VIEWED"

def body(x):
    first_use(x)
    return x + 1

if CONTEXT == "none":
    first_use()
elif CONTEXT == "torch_function_mode":
    with RecordingFunctionMode():
        first_use()
elif CONTEXT == "torch_dispatch_mode":
    with RecordingDispatchMode():
        first_use()
elif CONTEXT == "fake_tensor_mode":
    with RecordingFakeTensorMode():
        first_use()
elif CONTEXT == "functionalize":
    torch.func.functionalize(body)(torch.ones(3))
elif CONTEXT == "vmap":
    torch.func.vmap(body)(torch.ones(2, 3))
elif CONTEXT == "compile":
    torch._dynamo.config.suppress_errors = False
    torch.compile(body, backend="aot_eager")(torch.ones(3))
else:
    raise SystemExit("unknown context " + CONTEXT)

# Outside: the state, and every sample's answer again.
out = {{"calls": calls, "inside": inside}}
if FIRST.startswith("consumer"):
    route, why, checks, seconds = consumer.route_info()
    out["state"] = {{"route": route, "why": why, "checks": checks}}
else:
    import contextlib, io
    from bridge import __main__ as cli
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        cli.main(["info", "--json"])
    out["state"] = {{"info": json.loads(buf.getvalue()),
                    "paths": {{p: list(i) for p, i in bridge.available_paths().items()}},
                    "active": bridge.get_path()}}
out["dtypes"] = outcomes()
print("RESULT " + json.dumps(out, sort_keys=True, default=str))
'''


def _run(context: str, first: str, built: str = "", unguarded: bool = False) -> dict:
    out = run_ok(_CHILD.format(context=context, first=first, built=built,
                               unguarded=unguarded), forked=True)
    line = next(l for l in out.splitlines() if l.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


@pytest.fixture(scope="module")
def built(built_examples):
    return str(built_examples)


_reference = {}


def _reference_for(first, built=""):
    """The fresh process whose first use is outside any context (computed once)."""
    if first not in _reference:
        _reference[first] = _run("none", first, built)
    return _reference[first]


def _assert_like_outside(got, ref, context):
    assert got["calls"] == [], f"user mode code ran during the first use: {got['calls'][:8]}"
    assert got["inside"]["plain"] is True, got["inside"]
    if context in ("functionalize", "vmap", "compile"):
        # The transformed tensor itself is refused (compile: a real tensor at a graph break).
        assert got["inside"]["transformed"] == (
            "VIEWED" if context == "compile" else "refused"), got["inside"]
    assert got["state"] == ref["state"]
    assert got["dtypes"] == ref["dtypes"]
    # Read inside the context, each sample gets the answer it gets outside too.
    assert got["inside"]["dtypes"] == ref["dtypes"]
    assert "ok" in got["dtypes"].values() and not any(
        v.startswith("WRONG") for v in got["dtypes"].values()), got["dtypes"]


@pytest.mark.parametrize("context", CONTEXTS[1:])
@pytest.mark.parametrize("first", ["view", "available_paths"])
def test_bridge_first_use_in_context_is_as_outside(context, first):
    ref = _reference_for(first)
    assert ref["calls"] == [] and ref["state"]["paths"]
    assert {p: i[0] for p, i in ref["state"]["paths"].items()} == expected_paths()
    _assert_like_outside(_run(context, first), ref, context)


@pytest.mark.skipif(expected_route() is None, reason="no consumer route on this torch "
                                                     "(asserted in test_consumer_example)")
@pytest.mark.parametrize("context", CONTEXTS[1:])
def test_consumer_first_read_in_context_is_as_outside(built, context):
    ref = _reference_for("consumer", built)
    assert ref["state"]["route"] == expected_route()
    _assert_like_outside(_run(context, "consumer", built), ref, context)


@pytest.mark.parametrize("route", ["owned-noshim", "dlpack"])
@pytest.mark.parametrize("context", CONTEXTS[1:])
def test_consumer_routes_without_shim_ext_set_up_as_outside(built, context, route):
    """The routes that read through Python (the key-set check, DLPack's storage reads),
    resolved inside the context (``torch_borrow_init_route``, as on a machine without
    shim_ext), then read inside and outside it."""
    if route == "owned-noshim" and not expected_paths()["owned"]:
        pytest.skip("torch's owned shim ships in 2.14+ (asserted in test_availability)")
    first = "consumer:" + route
    ref = _reference_for(first, built)
    assert ref["inside"]["route"] == route.partition("-")[0]
    got = _run(context, first, built)
    assert got["inside"].get("route") == ref["inside"]["route"], got["inside"]
    _assert_like_outside(got, ref, context)


@pytest.mark.parametrize("first", ["view", "available_paths", "consumer"])
def test_a_transform_the_set_up_cannot_turn_off_leaves_nothing_kept(built, first):
    """Without ``torch._C._DisableFuncTorch`` (as on a torch that lacked it) a first use
    inside ``torch.func.functionalize`` meets functional probes: it is refused with the
    reason, nothing is kept, and the next use outside sets up as a fresh process does."""
    if first == "consumer" and expected_route() is None:
        pytest.skip("no consumer route on this torch (asserted in test_consumer_example)")
    ref = _reference_for(first, built if first == "consumer" else "")
    got = _run("functionalize", first, built if first == "consumer" else "", unguarded=True)
    assert got["calls"] == []
    assert str(got["inside"]["plain"]).startswith("unavailable: "), got["inside"]
    assert "could not turn off" in got["inside"]["plain"], got["inside"]
    assert "Functionalize" in got["inside"]["plain"] or "wrapped" in got["inside"]["plain"]
    assert got["state"] == ref["state"]
    assert got["dtypes"] == ref["dtypes"]


def test_a_forked_child_is_a_fresh_process_after_import_torch():
    """What the cases above rely on: a forked child has torch and nothing of this project
    imported, and ends as a started one would (its exit status, a signal, its output)."""
    from helpers.forkserver import run_forked

    rc, out, err = run_forked(
        "import sys\nprint(sorted(m for m in sys.modules if m.partition('.')[0] in "
        "('bridge', 'shim_ext', 'bench', 'helpers')), 'torch' in sys.modules, __name__)\n"
        "print('to stderr', file=sys.stderr)\nsys.exit(3)")
    assert (rc, out, err) == (3, "[] True __main__\n", "to stderr\n")
    rc, _, _ = run_forked("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
    assert rc == -11
    rc, _, err = run_forked("raise ValueError('boom')")
    assert rc == 1 and "ValueError: boom" in err
    rc, _, _ = run_forked("import time\ntime.sleep(60)", timeout=0.5)
    assert rc == -9
