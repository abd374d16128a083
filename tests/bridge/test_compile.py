"""Views under ``torch.compile``: a graph break, never a traced call.

The first view of a process inside a compiled function works with ``fullgraph=False``
(a graph break: the view is made eagerly on the real tensor) and is refused with
dynamo's own ``torch._dynamo.exc.Unsupported`` at compile time with ``fullgraph=True``,
before the bridge runs; on the eager, aot_eager and inductor backends. Compile state and
the bridge's resolution are per process, so each case runs in a fresh child (forked
after ``import torch``: ``helpers.forkserver``).
"""

from __future__ import annotations

import pytest

from helpers.child import run_ok


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
    out = run_ok(COMPILE.format(backend=backend, fullgraph=fullgraph), timeout=300,
                 forked=True)
    assert out.strip().endswith("OK"), out


def test_available_paths_first_inside_torch_compile():
    out = run_ok("""
import torch, bridge
from helpers.expect import expected_paths
def f(x):
    return x + 1, bridge.available_paths()
y, paths = torch.compile(f, backend="eager")(torch.ones(2))
assert {p: i.available for p, i in paths.items()} == expected_paths(), paths
print("OK")
""", timeout=300, forked=True)
    assert out.strip().endswith("OK")
