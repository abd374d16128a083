"""One contract over the two front ends that read a tensor's metadata: the bridge
(``bridge.view`` after ``bridge.set_path``) and the C header ``torch_borrow/consumer.h``
(the example extension ``borrow_consumer_c``, its route forced as
``helpers.consumers.force`` does).

Every input, the whole hostile catalogue (``tests/hostile/cases.py``) and the parity
tensors (``helpers.consumers.CASES``, and every ``torch.dtype`` as a 2x3 slice with a
storage offset), goes through both front ends on one route pair, and both must give

- the same verdict: a view whose pointer, shape and strides are torch's own
  ``data_ptr()``, ``shape`` and ``stride()`` (and, between the two, the same dtype code
  and device index), or the same exception type;
- the same message class: the refusal rule the message names (``MESSAGE_CLASSES``:
  "not a tensor", "not strided", "Python dispatch key", "no memory", ...), not its exact
  words, which differ by design (the bridge "views", consumer.h "reads"; consumer.h adds
  what the dispatch keys name the tensor, and cuts at its message size).

The route pairs (``PAIRS``): the bridge's owned path with consumer.h's owned route,
shim_ext present; the same without shim_ext (consumer.h's "owned-noshim"); the
bridge's borrow with consumer.h's own choice ("auto": libtorch's borrow or the
prototype's). consumer.h's "dlpack" route has no bridge counterpart: it is held to
torch's accessors alone (a view equal to them, or the exception type the catalogue
expects). "Without shim_ext" is real absence for both front ends: the child blocks
``import shim_ext`` (``sys.modules["shim_ext"] = None``) before the bridge, the consumer
or anything else of this project is imported, as on a machine where it was never built
(the bridge then offers neither the borrow nor the pointer trick, which is checked).

Each pair runs in one child process (a hostile input may crash a reader; a crash then
fails that pair's tests with the child's output, not the run): all pairs at once, forked
from one process that imported torch, once per test session (the first xdist worker
runs them, the others read its JSON). The module runs in about 20 s on 2 cores.

Where the two front ends disagree today the case is marked ``xfail(strict=True)`` with
the rule that differs (``DISAGREEMENTS``): it fails loudly once they agree, and the mark
must then go.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap
import warnings
from dataclasses import dataclass

import pytest
import torch

from helpers import cases as parity
from helpers.consumers import CASES as CONSUMER_CASES
from helpers.consumers import ROUTES, build, expected_route, libtorch_exports
from hostile import cases, subproc


@dataclass(frozen=True)
class Pair:
    """A route pair: ``bridge`` is the ``bridge.set_path`` name (None: no bridge
    counterpart), ``route`` a ``helpers.consumers.ROUTES`` entry, ``shim_ext``
    "present" or "absent" (its import blocked in the child)."""

    name: str
    bridge: str | None
    route: str
    shim_ext: str


PAIRS = [p for p in (Pair("owned", "owned", "owned", "present"),
                     Pair("owned-noshim", "owned", "owned-noshim", "absent"),
                     Pair("borrow-auto", "borrow", "auto", "present"),
                     Pair("dlpack", None, "dlpack", "present"))
         if p.route in ROUTES]  # no owned route before torch 2.14 (test_pairs_are_...)
BRIDGE_PAIRS = [p for p in PAIRS if p.bridge is not None]


def _dtype_input(dtype):
    return lambda: torch.empty(3, 3, dtype=dtype)[1:]


def _builds(make) -> bool:
    try:
        with warnings.catch_warnings():  # "experimental dtype" notices
            warnings.simplefilter("ignore")
            make()
    except Exception:  # noqa: BLE001 (torch cannot make one: nothing to read)
        return False
    return True


def parity_inputs(consumer_cases, dtypes):
    """The parity tensors by name: consumer.h's own cases (every one viewable), and every
    dtype whose 2x3 slice torch can make on the CPU (not the quantized ones, which the
    catalogue makes its own way)."""
    return {**{f"parity {name}": make for name, make in consumer_cases.items()},
            **{f"dtype {parity.dtype_name(d)}": _dtype_input(d) for d in dtypes
               if _builds(_dtype_input(d))}}


PARITY = parity_inputs(CONSUMER_CASES, parity.torch_dtypes())
#: Every input by name: the catalogue's, then the parity tensors.
INPUTS = [c.name for c in cases.CASES] + list(PARITY)

#: The refusal rules a message can name, most specific first (consumer.h's message may
#: add "(it is <what the dispatch keys name it>)" after a broader rule's words: the
#: named kind wins). A message matching none is its own class, compared word for word.
MESSAGE_CLASSES = [
    ("not a tensor", r"^expected a torch\.Tensor\b"),
    ("Python dispatch key", r"Python dispatch key|overrides __torch_dispatch__"),
    ("not strided", r"has no pointer \+ strides description; only strided"
                    r"|(refused: |it is )a sparse (compressed )?tensor"),
    ("nested", r"(^|refused: |it is )a nested tensor"),
    ("TensorImpl-subclass sizes", r"sizes and strides are computed by a TensorImpl subclass"
                                  r"|(refused: |it is )a (vmap-batched|functional) tensor"),
    ("custom device or layout",
     r"device or layout is computed by a TensorImpl subclass or in Python"),
    ("no storage", r"doesn't have storage|it has no storage of its own"),
    ("no memory", r"storage holds no memory"),
    ("past the storage", r"elements reach past the end of its storage"),
    ("meta", r"a meta tensor has no data"),
    ("conjugate bit", r"has its conjugate bit set"),
    ("negative bit", r"has its negative bit set"),
    ("quantized", r"is quantized: "),
    ("sub-byte", r"is a sub-byte dtype"),
    ("no dtype code", r"has no aoti_torch_dtype_\* code"),
    ("torch's own error", r"^cannot read the metadata of this |getter .*failed: "
                          r"|read failed \("),
]


def message_class(message: str) -> str:
    """The refusal rule ``message`` names (``MESSAGE_CLASSES``), else the message."""
    for name, pattern in MESSAGE_CLASSES:
        if re.search(pattern, message):
            return name
    return "unclassified: " + message


# --- where the two front ends disagree today -----------------------------------------------
#: (pair, input) -> the rule that differs, each a strict xfail. Checked against PAIRS and
#: INPUTS below. None today: without shim_ext both follow torch_borrow/tables.h's rule
#: (the type's __torch_dispatch__, then the key set naming a read that stopped), and
#: reader.h's torch_borrow_custom_names_layout orders a custom-metadata refusal for both.
DISAGREEMENTS: dict[tuple[str, str], str] = {}


def _params(pairs):
    for pair in pairs:
        for name in INPUTS:
            reason = DISAGREEMENTS.get((pair.name, name))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(pair, name, id=f"{pair.name}-{name}", marks=marks)


# --- the children ----------------------------------------------------------------------------
#: One process imports torch (and pays torch's own lazy set-up of jagged nested tensors,
#: about 2 s) once, then forks one child per pair at once, before anything of this project
#: is imported: a child blocks shim_ext first where its pair says so. Each child writes
#: <pair>.json (its stderr to <pair>.err); the launcher prints each child's exit status.
LAUNCHER = textwrap.dedent(r"""
    import json, os, sys, traceback, warnings
    warnings.filterwarnings("ignore", message=r".*use of fork\(\) may lead to deadlocks")
    import torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.nested.nested_tensor([torch.ones(2, 4), torch.ones(3, 4)], layout=torch.jagged)


    def run_pair(folder, shim_ext, bridge_path, route):
        if shim_ext == "absent":
            sys.modules["shim_ext"] = None  # import shim_ext raises ImportError
        import bridge
        from pathlib import Path
        from proposal.toolchain import load_extension
        from hostile import cases
        from helpers import cases as parity
        from helpers.consumers import CASES
        from contract.test_front_ends import parity_inputs

        c = load_extension("borrow_consumer_c", Path(folder))
        if route != "auto":  # as helpers.consumers.force
            name, _, noshim = route.partition("-")
            c._resolve(name, shim_ext=not noshim and name != "dlpack")
        if bridge_path != "-":
            bridge.set_path(bridge_path)
        info = {"route": c.route_info()[:2], "bridge": None if bridge_path == "-" else
                bridge.get_path(), "shim_ext_blocked": sys.modules.get("shim_ext", 0) is None,
                "available": {k: v.available for k, v in bridge.available_paths().items()}}

        def outcome(read, obj, truth):
            try:
                got = read(obj)
            except Exception as exc:
                return {"verdict": type(exc).__name__, "message": str(exc)}
            want = None if truth is None else [truth.data_ptr(), list(truth.shape),
                                               list(truth.stride()), truth.get_device()]
            got = [got[0], list(got[1]), list(got[2]), got[3], got[4]]
            return {"verdict": "view" if want and got[:3] == want[:3] else "wrong view",
                    "fields": got, "torch": want}

        def via_bridge(obj):
            v = bridge.view(obj)
            return v.ptr, v.shape, v.strides, v.dtype_code, v.device_index

        def via_header(obj):
            got = c.view(obj)
            return got[0], got[1], got[2], got[3], got[5]

        def consume(obj, truth):  # both front ends on the very same object
            return {"bridge": None if bridge_path == "-" else outcome(via_bridge, obj, truth),
                    "header": outcome(via_header, obj, truth)}

        results = {}
        for case in cases.CASES:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    results[case.name] = case.run(torch, consume)
                except cases.CaseUnavailable as exc:
                    results[case.name] = {"unavailable": str(exc)}
        for name, make in parity_inputs(CASES, parity.torch_dtypes()).items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    t = make()
                except Exception as exc:  # torch cannot make it here (no CUDA device)
                    results[name] = {"unavailable": f"{type(exc).__name__}: {exc}"}
                    continue
                results[name] = consume(t, t)
        return {"info": info, "results": results}


    folder, children = sys.argv[1], {}
    for spec in sys.argv[2:]:
        pair, shim_ext, bridge_path, route = spec.split(":")
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                os.dup2(os.open(os.path.join(folder, pair + ".err"),
                                os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
                result = run_pair(folder, shim_ext, bridge_path, route)
                with open(os.path.join(folder, pair + ".json"), "w") as f:
                    json.dump(result, f)
                status = 0
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stderr.flush()
                os._exit(status)
        children[pid] = pair
    while children:
        pid, status = os.wait()
        print(json.dumps([children.pop(pid), os.waitstatus_to_exitcode(status)]), flush=True)
""")


def _run_children(folder) -> dict:
    """Build ``borrow_consumer_c`` into ``folder``, run every pair's child at once, and
    return ``{pair name: the child's JSON, or {"error": how it ended}}``."""
    try:
        build.build("consumer.c", folder)
    except subprocess.CalledProcessError as exc:
        return {p.name: {"error": f"{' '.join(exc.cmd)}\n{exc.stdout}{exc.stderr}"}
                for p in PAIRS}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (subproc.TESTS, os.environ.get("PYTHONPATH")) if p))
    specs = [f"{p.name}:{p.shim_ext}:{p.bridge or '-'}:{p.route}" for p in PAIRS]
    try:
        proc = subprocess.run([*subproc.interpreter_args(), "-c", LAUNCHER, str(folder), *specs],
                              capture_output=True, text=True, timeout=300, env=env)
        ended = dict(json.loads(line) for line in proc.stdout.splitlines()
                     if line.startswith("["))
        launcher = f"the launcher: {subproc.describe_returncode(proc.returncode)}\n" \
                   f"{proc.stderr[-3000:]}"
    except subprocess.TimeoutExpired as exc:
        ended, launcher = {}, f"the launcher ran past {exc.timeout} s"
    out = {}
    for p in PAIRS:
        if ended.get(p.name) == 0:
            out[p.name] = json.loads((folder / f"{p.name}.json").read_text())
            continue
        err = folder / f"{p.name}.err"
        how = (subproc.describe_returncode(ended[p.name]) if p.name in ended
               else "never reported")
        out[p.name] = {"error": f"child {how}\n"
                                f"{err.read_text()[-4000:] if err.exists() else ''}\n"
                                f"{launcher}"}
    return out


@pytest.fixture(scope="session")
def outcomes(tmp_path_factory):
    """Every pair's child results, computed once per session: under xdist the first
    worker to get here runs the children and the others wait on its lock and read the
    same JSON (the workers' base folders share a parent only within one session)."""
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    folder = shared / "front_ends"
    with FileLock(str(shared / "front_ends.lock")):
        done = folder / "outcomes.json"
        if not done.exists():
            folder.mkdir(exist_ok=True)
            done.write_text(json.dumps(_run_children(folder)))
        return json.loads(done.read_text())


def _result(outcomes, pair, name):
    got = outcomes[pair.name]
    assert "error" not in got, f"the {pair.name} child failed: {got['error']}"
    result = got["results"][name]
    if "unavailable" in result:
        pytest.skip(f"torch {torch.__version__} cannot build it: {result['unavailable']}")
    return result


def _described(o) -> str:
    if "message" in o:
        return f"{o['verdict']}: {o['message']}"
    return f"{o['verdict']} {o['fields']} (torch: {o['torch']})"


# --- the tests -------------------------------------------------------------------------------
def test_pairs_are_every_route_this_torch_offers():
    """Each consumer.h route has its pair, and the owned pairs exist exactly where
    torch exports ``torch_tensor_from_pyobject`` (2.14+): no pair is left out quietly."""
    assert sorted(p.route for p in PAIRS) == sorted(ROUTES)
    owned = libtorch_exports("torch_tensor_from_pyobject")
    assert ("owned" in [p.name for p in PAIRS]) == owned
    assert ("owned-noshim" in [p.name for p in PAIRS]) == owned


def test_every_disagreement_names_a_real_pair_and_input():
    """A stale entry in DISAGREEMENTS (a renamed case, a pair gone) fails here, not
    silently; every entry names the rule that differs."""
    every_pair = {"owned", "owned-noshim", "borrow-auto", "dlpack"}
    assert {p.name for p in PAIRS} <= every_pair
    for (pair, name), reason in DISAGREEMENTS.items():
        assert pair in every_pair, pair
        known_dtype = name.startswith("dtype ") and not hasattr(torch, name[6:])
        assert name in INPUTS or known_dtype, name  # a dtype this torch lacks: not run
        assert len(reason) > 60, reason


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.name)
def test_each_child_ran_the_routes_its_pair_names(outcomes, pair):
    """The child took the routes the pair names, with shim_ext as the pair says: a
    fallback to another route would compare the wrong front ends."""
    got = outcomes[pair.name]
    assert "error" not in got, f"the {pair.name} child failed: {got['error']}"
    info = got["info"]
    want = expected_route() if pair.route == "auto" else pair.route.split("-")[0]
    assert info["route"][0] == want, info["route"]
    assert info["bridge"] == pair.bridge
    assert info["shim_ext_blocked"] == (pair.shim_ext == "absent")
    if pair.shim_ext == "absent":  # the bridge without shim_ext: no pointer trick at all
        assert info["available"]["fallback"] is False, info
        assert info["available"]["borrow"] == libtorch_exports(
            "torch_tensor_borrow_from_pyobject"), info
    assert len(got["results"]) == len(INPUTS)


@pytest.mark.parametrize("pair, name", list(_params(BRIDGE_PAIRS)))
def test_both_front_ends_give_one_verdict(outcomes, pair, name):
    """bridge.view and consumer.h on one route pair: the same verdict (a view equal to
    torch's accessors, with the same dtype code and device index, or the same exception
    type) and the same message class."""
    result = _result(outcomes, pair, name)
    b, h = result["bridge"], result["header"]
    where = f"{name} on {pair.name}:\n  bridge:     {_described(b)}\n  consumer.h: {_described(h)}"
    assert b["verdict"] != "wrong view" and h["verdict"] != "wrong view", where
    assert b["verdict"] == h["verdict"], where
    if b["verdict"] == "view":
        assert b["fields"] == h["fields"], where
    else:
        assert message_class(b["message"]) == message_class(h["message"]), where


def _no_dtype_code(name) -> bool:
    """A parity dtype the stable ABI names no aoti_torch_dtype_<name> for on this torch
    (bcomplex32, the bits types): without a handle, the DLPack route cannot tell which
    dtype a read has, so it refuses it by design (a refusal, never a guess)."""
    return name.startswith("dtype ") and not libtorch_exports(
        "aoti_torch_dtype_" + name.removeprefix("dtype "))


def _torch_verdict(name) -> str:
    """What torch says the input is: the catalogue's expectation for its cases; for the
    parity tensors a view, but quantized and sub-byte dtypes, which no reader can
    describe as pointer + strides (helpers.cases.refusal_kind)."""
    by_name = cases.by_name()
    if name in by_name:
        return by_name[name].expect
    dtype = getattr(torch, name.removeprefix("dtype "), None)
    if name.startswith("dtype ") and parity.refusal_kind(dtype):
        return "BufferError"
    return "view"


@pytest.mark.parametrize("pair, name", list(_params([p for p in PAIRS if p.bridge is None])))
def test_the_dlpack_route_answers_as_torch(outcomes, pair, name):
    """consumer.h's DLPack route, which has no bridge counterpart: a view equal to
    torch's accessors (device index included) where torch's answer is a view, else the
    exception type the catalogue expects, with a message of a named class (the
    refused dtypes': their own rule)."""
    h = _result(outcomes, pair, name)["header"]
    want = _torch_verdict(name)
    if want == "view" and _no_dtype_code(name):
        assert h["verdict"] == "BufferError", f"{name}: {_described(h)}"
        assert message_class(h["message"]) == "no dtype code", _described(h)
        return
    assert h["verdict"] == want, f"{name}: {_described(h)}"
    if want == "view":
        assert h["fields"][4] == h["torch"][3], _described(h)
    else:
        kind = message_class(h["message"])
        assert not kind.startswith("unclassified"), kind
        if name.startswith("dtype "):
            assert kind == parity.refusal_kind(getattr(torch, name[6:])), kind


@pytest.mark.parametrize("message, kind", [
    ("expected a torch.Tensor (or an instance of a subclass), got None", "not a tensor"),
    ("this Tensor's sizes and strides are computed by a TensorImpl subclass (...) (it is a "
     "sparse tensor (call .to_dense() first))", "not strided"),
    ("this FakeTensor's TensorImpl carries torch's Python dispatch key (...) (it is torch's "
     "Python dispatch key (a __torch_dispatch__ subclass, FakeTensor, a jagged nested "
     "tensor)", "Python dispatch key"),
    ("this Tensor is refused: a nested tensor, with no single sizes / strides: view its "
     "components, .unbind(), or a padded copy, .to_padded_tensor(0)", "nested"),
    ("this Tensor is refused: a vmap-batched tensor (...)", "TensorImpl-subclass sizes"),
    ("something new", "unclassified: something new"),
])
def test_message_classes_name_the_rule_not_the_words(message, kind):
    """The classifier itself: the kind consumer.h appends in "(it is ...)" wins over the
    broader rule before it, a kind named in passing does not, and an unknown text is
    its own class (so two unknown texts agree only word for word)."""
    assert message_class(message) == kind
