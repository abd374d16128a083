"""Hostile inputs on every path: an exception with a clear message, never a crash.

The DLPack consumers' convention: ``TypeError`` when the object's real type
(``Py_TYPE``, not ``__class__``) does not derive from ``torch.Tensor``, the message naming
that type; ``BufferError`` for a tensor pointer + sizes + strides cannot describe
(sparse and other layouts, nested, quantized, sub-byte, meta, fake, functionalized,
functorch wrappers, storage-less wrapper subclasses, conjugate / negative views). Every
case of ``tests/hostile/cases.py`` runs in child processes (``hostile.subproc``; a crash
fails exactly its case) through each path's ``view_<path>``, ``view`` after ``set_path``
and ``_native_loop``, beside dense controls that must match torch's accessors.
"""

import re

import pytest
import torch

import bridge
from bridge import _resolve, _select
from helpers.expect import expected_paths
from helpers.parity import VIEWS
from hostile import cases, subproc

PATHS = [p for p in bridge.PATHS if expected_paths()[p]]
#: torch < 2.13 exports no torch_exception_get_what_without_backtrace: where a getter
#: fails, the bridge cannot read torch's message and says that instead.
WHAT_EXPORTED = _resolve.WHAT in _select.resolution().symbols
NO_WHAT = f"no message ({_resolve.WHAT} is not exported by this torch)"
ENTRIES = ("view_path", "set_path+view", "native_loop")

#: Cases whose test must fail until the bridge fix named in the reason lands.
PENDING: dict[str, str] = {}


@pytest.fixture(scope="module")
def outcome():
    """Every catalogue case through every available path, in child processes."""
    return subproc.run_cases("bridge", [c.name for c in cases.CASES], paths=PATHS)


def _params():
    for case in cases.CASES:
        for path in PATHS:
            marks = ([pytest.mark.xfail(strict=True, reason=PENDING[case.name])]
                     if case.name in PENDING else [])
            yield pytest.param(case, path, id=f"{case.name}-{path}", marks=marks)


@pytest.mark.parametrize("case, path", list(_params()))
def test_hostile_input(outcome, case, path):
    assert case.name not in outcome.crashes, str(outcome.crashes[case.name])
    assert case.name not in outcome.build_errors, outcome.build_errors[case.name]
    if case.name in outcome.unavailable:
        pytest.skip(outcome.unavailable[case.name])  # e.g. a dtype this torch lacks
    results = {r["entry"]: r for r in outcome.results[case.name] if r["path"] == path}
    assert sorted(results) == sorted(ENTRIES), results
    for entry, r in results.items():
        where = f"{case.name} via {path}/{entry}"
        if case.expect == "view":
            assert r["outcome"] == "returned", f"{where}: {r}"
            if entry != "native_loop":  # the loop returns ns per call, not a view
                assert r["match"], f"{where}: {r['fields']} != torch's {r['expected']}"
            continue
        assert r["outcome"] == "raised", f"{where} returned {r.get('fields', r['type'])}"
        assert r["type"] == case.expect, f"{where}: {r['type']}: {r['message']}"
        message = case.message
        if not WHAT_EXPORTED and message.startswith("^cannot read the metadata of this "):
            message = message.split(": ", 1)[0] + ": " + re.escape(NO_WHAT) + "$"
        assert re.search(message, r["message"]), f"{where}: {r['message']!r}"
        if case.expect == "TypeError":
            # The real type, then the end or a hint after "; ".
            named = re.search(f"got {re.escape(r['real_type'])}(; |$)", r["message"])
            assert named, f"{where}: {r['message']!r}"


def test_catalogue_covers_every_group():
    groups = {c.group for c in cases.CASES}
    assert groups == set(cases.GROUPS)
    assert len({c.name for c in cases.CASES}) == len(cases.CASES)


def test_children_resume_after_a_crash(tmp_path, monkeypatch):
    """The harness itself: a child killed by SIGSEGV in case "b" is a recorded crash at
    the entry it died in, and case "c" still runs, in a second child."""
    fake_runner = tmp_path / "runner.py"
    fake_runner.write_text(
        "import ctypes, json, sys\n"
        "names = sys.argv[sys.argv.index('--cases') + 1].split(',')\n"
        "def emit(**e): print(json.dumps(e), flush=True)\n"
        "emit(event='hello', torch='none')\n"
        "for n in names:\n"
        "    emit(event='case', case=n)\n"
        "    emit(event='start', case=n, path='p', entry='e')\n"
        "    if n == 'b': ctypes.string_at(0)\n"
        "    emit(event='result', case=n, path='p', entry='e')\n"
        "    emit(event='done', case=n)\n")
    monkeypatch.setattr(subproc, "RUNNER", str(fake_runner))
    out = subproc.run_cases("bridge", ["a", "b", "c"])
    assert out.children == 2
    assert list(out.crashes) == ["b"]
    crash = out.crashes["b"]
    assert (crash.path, crash.entry) == ("p", "e") and crash.returncode < 0
    assert "SIGSEGV" in str(crash)
    assert [len(out.results[n]) for n in "abc"] == [1, 0, 1]


# --- the check in front of the pointer offset ------------------------------------------------
def test_python_cannot_forge_a_tensor_type():
    """Every Python-level way to make an object's real type derive from torch.Tensor
    without a THPVariable layout is refused by CPython itself."""
    class Plain:
        pass

    with pytest.raises(TypeError, match="__class__ assignment"):
        Plain().__class__ = torch.Tensor
    with pytest.raises(TypeError):
        Plain.__bases__ = (torch.Tensor,)

    class Meta(type):
        def mro(cls):
            return (cls, torch.Tensor, torch._C.TensorBase, object)

    with pytest.raises(TypeError, match="unsuitable layout"):
        Meta("Forged", (), {})
    with pytest.raises(TypeError, match="not safe"):
        object.__new__(type("Sub", (torch.Tensor,), {}))


def test_a_real_subclass_is_a_tensor_whatever_it_claims():
    class Shy(torch.Tensor):
        __class__ = property(lambda self: int)

    t = torch.arange(3.0).as_subclass(Shy)
    assert t.__class__ is int  # it lies ...
    for path in PATHS:
        assert VIEWS[path](t).ptr == torch.Tensor.data_ptr(t)  # ... in vain


@pytest.mark.parametrize("path", PATHS)
def test_exception_types_are_what_dlpack_consumers_raise(path):
    """The split the module docstring states: TypeError for the wrong kind of object,
    BufferError (not a TypeError subclass) for a tensor that cannot be exported."""
    view = VIEWS[path]
    with pytest.raises(TypeError):
        view(object())
    with pytest.raises(BufferError):
        view(torch.eye(2).to_sparse())
    assert issubclass(BufferError, Exception) and not issubclass(BufferError, TypeError)
