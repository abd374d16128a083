"""Instructions per call of each path's native loop, counted by callgrind (``make callgrind``).

For every available path (owned / borrow / fallback) this runs
``bridge._bridge._native_loop(t, path, n)`` (``t``: a 32x32 float32 CPU tensor) under
``valgrind --tool=callgrind --toggle-collect='__pyx_pw_*_native_loop'``: only what
that call executes is counted, its callees included (the type gate, the handle, the getters,
torch's and CPython's code they reach). Instructions, not seconds: the count does not
depend on the machine's load, only on the binaries (Python, torch, the bridge and its
compiler), so the file this writes is committed as it comes out.

How the counts are taken and split (one valgrind process, n1 / n2 / n1 calls, the
routes and their parts, a view's parts): bench/README.md, "How `make callgrind`
counts".

Writes ``<out>/callgrind-torch-<v>.md`` (``<v>``: torch's version without the local
tag; ``--stem`` names it otherwise) and prints it, with ``<stem>.json`` beside it (the
instructions per call of every configuration and the goals, for ``report.py``). Run with ``python -P`` from the repository root (``make callgrind``).
"""

from __future__ import annotations

import argparse
import collections
import inspect
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

from bridge import PATHS

HERE = pathlib.Path(__file__).resolve().parent
#: the reader values a bridge with a ``reader`` argument may accept
READERS = ("getters", "batched")
#: functions whose calls are counted, callees included; each pattern must match one frame
#: of a call's stack (a second match toggles collection off again): Cython's Python
#: wrapper of ``_native_loop``, never the implementation it calls, which the compiler
#: may keep as a function of its own (``__pyx_pf_..._native_loop.constprop.0``)
TOGGLES = ("__pyx_pw_*_native_loop", "peers_*_loop")
#: callers kept with each function's cost (the attribution needs the chain up to the
#: frame that decides a cost's part: at most a few levels above a leaf)
SEPARATE_CALLERS = 12
#: functions below this many self instructions per call are summed into "other"
MIN_SHARE = 0.5
#: Python-level statements on ``t`` (compiled by ``timeit``, as the benchmarks time them),
#: counted with collection toggled on around each loop (client request, ``peers_native``):
#: the goals' numerators and their fair anchors. ``view_read`` reads what ``five_tuple``
#: gives (the device as its type and index: two reads where torch has one object);
#: ``view_borrow_ptr`` is the same fact as ``data_ptr``.
STATEMENTS = {
    "empty": "empty(t)",
    "data_ptr": "t.data_ptr()",
    "five_tuple": "(t.data_ptr(), t.shape, t.stride(), t.dtype, t.device)",
    "view_borrow": "view_borrow(t)",
    "view_borrow_ptr": "view_borrow(t).ptr",
    "view_read": "v = view(t); (v.ptr, v.shape, v.strides, v.dtype, v.device_type, "
                 "v.device_index)",
}
#: The goals, in instructions: (key, what, numerator, denominator, target for CPython
#: 3.11, for 3.12+). Numerators and denominators name a statement (``py:``) or a bridge
#: configuration (``path|reader``). The same goals' time ratios are in the benchmark
#: report (``report.py``), which reads this file's JSON beside its own.
GOALS = (
    ("G1", "view(t) + reading ptr, shape, strides, dtype, device / the hand-written "
           "five-tuple", "py:view_read", "py:five_tuple", 0.55, 0.55),
    ("G2", "view_borrow(t) / t.data_ptr()", "py:view_borrow", "py:data_ptr", 1.05, 1.00),
    ("G3", "native: borrow + getters / pointer trick + getters (the bridge's "
           "_native_loop, one reader)", "borrow|", "fallback|", 0.90, 0.85),
)


# --- the child: runs under valgrind ------------------------------------------------------
def supported_readers(loop, t, path) -> tuple[list, dict]:
    """``([reader, ...], {reader: why not})``: ``[None]`` when ``loop`` takes no
    ``reader`` argument (then it is never passed), else each of ``READERS`` it accepts
    (tried once with ``n=1``)."""
    try:
        takes = "reader" in inspect.signature(loop).parameters
    except (TypeError, ValueError):  # no signature: ask the function itself
        try:
            loop(t, path, 1, reader=READERS[0])
            takes = True
        except TypeError:
            takes = False
        except ValueError:
            takes = True
    if not takes:
        return [None], {}
    ok, why = [], {}
    for reader in READERS:
        try:
            loop(t, path, 1, reader=reader)
            ok.append(reader)
        except (TypeError, ValueError, RuntimeError) as exc:
            why[reader] = f"{type(exc).__name__}: {exc}"
    return ok, why


#: the ks of the launches of one ndim, each against both anchors (the mixed shapes' are
#: the workload's own, k = 26 too: ``bench/launcher_workload.py``)
LAUNCH_KS = (1, 3, 8)


def launch_statements() -> dict:
    """``{name: (source, tensors per call)}``: the launches counted in every process, the
    mixed shapes at every k of the workload, the other shapes at ``LAUNCH_KS``."""
    from bench import launcher_workload as lw

    out = lw.statements(ks=lw.KS, dims=(), anchors=tuple(lw.ANCHORS))
    out.update(lw.statements(ks=LAUNCH_KS, dims=(), shapes=lw.SHAPES[1:],
                             anchors=tuple(lw.ANCHORS)))
    out["view_attr"] = (VIEW_ATTR, 1)
    out["view_six"] = (VIEW_SIX, 1)
    out["slot_attr"] = (SLOT_ATTR, 1)
    return out


#: one attribute read of a view made beforehand (``vh``), the cheapest of the six: what
#: CPython's attribute load into the view's getter costs, beside the launches
VIEW_ATTR = "vh.dtype"
#: the six reads of a launch on that view alone: the statement whose self cost in the
#: bridge's own functions (``BRIDGE_OWN``) is what trimming the bridge could save
VIEW_SIX = "(vh.ptr, vh.shape, vh.strides, vh.dtype, vh.device_type, vh.device_index)"
#: the bridge's own functions: its view type's ``tp_getattro``, getters and tuple code
#: (``bridge/_bridge_view.h``) and Cython's, each with what was inlined into it
BRIDGE_OWN = re.compile(r"^(bridge_|__pyx_)")
#: the same load where CPython specialises it (``LOAD_ATTR_SLOT``): a member slot of an
#: object of a class with ``__slots__`` (``so``), filled when the object was made
SLOT_ATTR = "so.a"


class SlotHolder:
    """One member slot, ``a``: what ``SLOT_ATTR`` reads."""

    __slots__ = ("a",)

    def __init__(self, a):
        self.a = a


#: the tensors a launch statement's two loops view, about (the loop lengths are these
#: divided by the tensors per call): fewer than the other statements' calls, since a
#: launch is counted in several processes; the difference of the two is still 2,000
#: tensors, which averages out the rare costs (a list's growth, an arena's)
LAUNCH_TENSORS = (200, 2200)


def launch_lengths(per: int) -> tuple[int, int]:
    """The two loop lengths of a statement viewing ``per`` tensors a call:
    ``LAUNCH_TENSORS`` divided by it, so every launch views about as many tensors."""
    return max(1, LAUNCH_TENSORS[0] // per), max(2, LAUNCH_TENSORS[1] // per)


def child(args) -> int:
    """Under valgrind: run each configuration as ``n1, n2, n1`` calls, one dump each
    (``--launcher-only``: the launch statements alone)."""
    import torch

    import bridge
    from bench.native import peers_native
    from bridge import _bridge as core

    peers = peers_native.NativePeers(torch, bridge)
    if args.launcher_only:
        return child_launcher(args, torch, bridge, peers)
    if args.eager_child:
        return child_eager(args, torch, bridge, peers)
    t = torch.randn(32, 32, dtype=torch.float32)
    paths = [p for p, info in bridge.available_paths().items()
             if info.available and p in args.paths]
    unavailable = {p: info.reason for p, info in bridge.available_paths().items()
                   if not info.available and p in args.paths}
    readers, reader_why = supported_readers(core._native_loop, t, paths[0]) if paths else ([None], {})
    configs = [(p, r) for p in paths for r in readers]
    for p, r in configs:  # errors surface here, and every lazy binding is resolved
        core._native_loop(t, p, 10, **({} if r is None else {"reader": r}))
    from bench import routes

    fixes, fixes_reason = routes.load_fixes(torch)
    available = {p: info.available for p, info in bridge.available_paths().items()}
    route_runs, route_why = routes.contenders(t, peers, fixes, available, fixes_reason)
    for run in route_runs.values():
        run(10)
    if peers.callgrind("start") != 1:
        print("callgrind child: not under valgrind, or peers_native built without "
              "<valgrind/callgrind.h>", file=sys.stderr)
        return 2
    peers.callgrind("zero")
    labels = []
    for p, r in configs:
        kw = {} if r is None else {"reader": r}
        for k, n in enumerate((args.n1, args.n2, args.n1)):
            core._native_loop(t, p, n, **kw)
            label = f"{p}|{r or ''}|{n}|{k}"
            peers.callgrind("dump", label)
            labels.append(label)
    for name, run in route_runs.items():
        for k, n in enumerate((args.n1, args.n2, args.n1)):
            run(n)
            label = f"route:{name}||{n}|{k}"
            peers.callgrind("dump", label)
            labels.append(label)
    import timeit

    from bench import launcher_workload

    ns = {"t": t, "view": bridge.view, "view_borrow": bridge.view_borrow,
          "empty": peers.empty_function()}
    count_statements(args, peers, labels, {name: timeit.Timer(stmt, globals=ns)
                                           for name, stmt in STATEMENTS.items()})
    # The workload after, in its own globals: its tensors and held views would change
    # the process's state (the views' freelist, the look-ups) under the statements above.
    workload_ns = launcher_workload.namespace(torch, bridge)
    workload = launcher_workload.statements(ks=(), shapes=())  # the dims series
    count_statements(args, peers, labels, {name: timeit.Timer(stmt, globals=workload_ns)
                                           for name, (stmt, _) in workload.items()})
    lengths = count_launches(args, torch, bridge, peers, labels)
    plan = {"configs": configs, "labels": labels, "unavailable": unavailable,
            "routes": list(route_runs), "route_unavailable": route_why,
            "statements": list(STATEMENTS), "launcher": list(workload) + list(lengths),
            "lengths": lengths,
            "python_full": sys.version,
            "reader_unavailable": reader_why, "n1": args.n1, "n2": args.n2,
            "torch": torch.__version__, "python": sys.version.split()[0],
            "bridge_compiler": core.COMPILER, "native_compiler": peers.compiler,
            "reader_argument": readers != [None]}
    pathlib.Path(args.plan).write_text(json.dumps(plan))
    return 0


def count_statements(args, peers, labels: list, timers: dict, lengths=None) -> None:
    """Each timer run ``n1, n2, n1`` times (``lengths[name]`` where given) with collection
    toggled on around the loop, one dump each, its labels appended to ``labels``."""
    for timer in timers.values():
        timer.timeit(10)
    for name, timer in timers.items():
        n1, n2 = (lengths or {}).get(name, (args.n1, args.n2))
        for k, n in enumerate((n1, n2, n1)):
            peers.callgrind("toggle")
            timer.timeit(n)
            peers.callgrind("toggle")
            label = f"py:{name}||{n}|{k}"
            peers.callgrind("dump", label)
            labels.append(label)


def count_launches(args, torch, bridge, peers, labels: list) -> dict:
    """The launch statements (``launch_statements``), in globals of their own: their
    ``{name: [n1, n2]}``."""
    import timeit

    from bench import launcher_workload as lw

    ns = lw.namespace(torch, bridge, dims=(), shapes=lw.SHAPES)
    ns["vh"] = bridge.view(ns["ts1"][0])
    ns["so"] = SlotHolder(ns["vh"].dtype)
    statements = launch_statements()
    lengths = {name: launch_lengths(per)
               for name, (_, per) in statements.items()}
    count_statements(args, peers, labels, {name: timeit.Timer(stmt, globals=ns)
                                           for name, (stmt, _) in statements.items()}, lengths)
    return {name: list(n) for name, n in lengths.items()}


def child_launcher(args, torch, bridge, peers) -> int:
    """``--launcher-only``: the launch statements alone, in a process of their own."""
    if peers.callgrind("start") != 1:
        print("callgrind child: not under valgrind", file=sys.stderr)
        return 2
    peers.callgrind("zero")
    labels = []
    lengths = count_launches(args, torch, bridge, peers, labels)
    pathlib.Path(args.plan).write_text(json.dumps(
        {"labels": labels, "launcher": list(lengths), "lengths": lengths, "n1": args.n1,
         "n2": args.n2, "python": sys.version.split()[0], "torch": torch.__version__,
         "configs": [], "statements": []}))
    return 0


#: what the measurement build (``bench/native/eager_bridge_build.py``) is counted on:
#: ``t.data_ptr()`` and ``view_borrow(t)`` of ``STATEMENTS``, and the dims series'
#: ``view_borrow`` of a tensor of each number of dimensions
EAGER_STATEMENTS = ("data_ptr", "view_borrow")


def child_eager(args, torch, bridge, peers) -> int:
    """``--eager-child``: ``EAGER_STATEMENTS`` and the dims series' ``view_borrow`` with the
    bridge built to make each view's six values when made (``BRIDGE_EAGER_VALUES``), first
    on ``sys.path``; refuses to count any other build."""
    import timeit

    from bench import launcher_workload
    from bridge import _bridge as core

    if not getattr(core, "EAGER_VALUES", False):
        print(f"callgrind child: {core.__file__} is not the BRIDGE_EAGER_VALUES build",
              file=sys.stderr)
        return 2
    if peers.callgrind("start") != 1:
        print("callgrind child: not under valgrind", file=sys.stderr)
        return 2
    peers.callgrind("zero")
    labels = []
    t = torch.randn(32, 32, dtype=torch.float32)
    ns = {"t": t, "view_borrow": bridge.view_borrow}
    count_statements(args, peers, labels, {name: timeit.Timer(STATEMENTS[name], globals=ns)
                                           for name in EAGER_STATEMENTS})
    workload_ns = launcher_workload.namespace(torch, bridge, ks=(), shapes=())
    dims = {name: stmt for name, (stmt, _) in
            launcher_workload.statements(ks=(), shapes=()).items()
            if name.startswith("dims_view_borrow_")}
    count_statements(args, peers, labels, {name: timeit.Timer(stmt, globals=workload_ns)
                                           for name, stmt in dims.items()})
    pathlib.Path(args.plan).write_text(json.dumps(
        {"labels": labels, "statements": list(EAGER_STATEMENTS) + list(dims),
         "n1": args.n1, "n2": args.n2, "python": sys.version.split()[0],
         "torch": torch.__version__, "bridge": core.__file__}))
    return 0


def eager_totals(folder: pathlib.Path) -> dict:
    """``{"eager:<statement>": instructions per call}`` of the measurement build's process
    (``child_eager``) whose dumps and plan are in ``folder``; empty where there are none."""
    plan_file = folder / "plan.json"
    if not plan_file.exists():
        return {}
    plan = json.loads(plan_file.read_text())
    dumps = read_dumps(folder, "callgrind.out")
    return {f"eager:{name}": total_per_call(dumps, f"py:{name}|", plan["n1"], plan["n2"])
            for name in plan["statements"]}


# --- the parent: runs valgrind, reads the dumps, writes the report --------------------------
def read_dumps(folder: pathlib.Path, stem: str) -> dict:
    """``{label: (path of the dump, total instructions)}`` from callgrind's dump files."""
    out = {}
    for f in folder.glob(f"{stem}*"):
        text = f.read_text(errors="replace")
        m = re.search(r"^desc: Trigger: Client Request: (.*)$", text, re.M)
        total = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
        if m and total:
            out[m.group(1).strip()] = (f, int(total.group(1)))
    return out


ANNOTATE_LINE = re.compile(r"^\s*([\d,]+)\s+(?:\([\d.\s]+%\)\s+)?(\S.*)$")


def self_costs(dump: pathlib.Path) -> tuple[dict, dict]:
    """``({context: self instructions}, {function: library file name})`` of one dump,
    from ``callgrind_annotate``. A context is ``function'caller'caller's caller...``
    (``--separate-callers``); a context's lines (one per source file its inlined code
    came from; only some name the library) are summed under it."""
    proc = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100",
                           str(dump)], capture_output=True, text=True, check=True)
    costs, libs = collections.Counter(), {}
    started = False
    for line in proc.stdout.splitlines():
        if re.search(r"file:function", line):
            started = True
            continue
        if not started:
            continue
        m = ANNOTATE_LINE.match(line)
        if not m:
            if line.startswith("--") and costs:
                break  # the per-file source annotations follow
            continue
        where = m.group(2)
        obj = re.search(r"\[(.*)\]\s*$", where)
        name = re.sub(r"\s*\[.*\]\s*$", "", where)
        name = name.split(":", 1)[1] if ":" in name else name
        if obj:
            libs[leaf(name)] = os.path.basename(obj.group(1))
        costs[name] += int(m.group(1).replace(",", ""))
    return costs, libs


def leaf(context: str) -> str:
    """The function of a ``function'caller'...`` context."""
    return context.split("'", 1)[0]


def by_function(split: dict) -> dict:
    """``{context: cost}`` summed per function (the contexts' leaves)."""
    out = collections.Counter()
    for context, cost in split.items():
        out[leaf(context)] += cost
    return out


# --- attribution: each self cost to one part ------------------------------------------------
#: The parts, in table order, with what each holds.
PARTS = {
    "fill": "the metadata fill / getters (aoti_torch_get_*, toDLPackNonOwning, the batched fill)",
    "type": "the type check and the metadata-policy check (torch_borrow_custom_metadata)",
    "thread": "the attached-thread check (the unchecked thread-state read; before CPython 3.12 also this thread's own state, PyGILState_GetThisThreadState; PyGILState_Check where torch's own functions ask it)",
    "alloc": "allocation and free (malloc, free, new, delete)",
    "atomics": "refcount atomics out of line (intrusive_ptr release)",
    "pyobject": "PyObject incref/decref (TensorImpl -> interpreter), without the GIL acquisitions",
    "gil": "the GIL acquisitions inside that incref/decref (pybind11::gil_scoped_acquire)",
    "entry": "entry points, casters and vtable hops (their inlined checks and refcount updates)",
    "loop": "the consumer's own loop (calls, reading the results)",
    "other": "anything no rule names",
}
#: Outer parts: a cost belongs to them if any frame of its chain matches (first rule
#: first), so what the GIL acquisition and the incref/decref call (pthread_getspecific,
#: PyGILState_Check inside the fix) stays with them.
OUTER_RULES = (
    ("gil", re.compile(r"gil_scoped_acquire|SafeGilScopedAcquire|pybind11::detail::get_internals")),
    ("pyobject", re.compile(r"PyInterpreterVTable::(incref|decref)|fixed_(incref|decref)|"
                            r"(incref|decref)_pyobject|PyObjectSlot::(incref|decref)")),
)
#: Inner parts: the innermost frame that matches decides.
INNER_RULES = (
    ("alloc", re.compile(r"^(malloc|free|_int_free|_int_malloc|cfree|tcache\w*|__libc_\w+|"
                         r"operator new|operator delete)")),
    ("thread", re.compile(r"^(PyGILState_(Check|GetThisThreadState)|"
                          r"_?PyThreadState_(UncheckedGet|GetUnchecked)|"
                          r"torch_borrow_thread_is_attached|THPUtils_hasAttachedThreadState)")),
    ("type", re.compile(r"PyType_IsSubtype|THPVariable_Check|_bridge__gate$|"
                        r"torch_borrow_custom_metadata|TensorImplPolicies")),
    ("atomics", re.compile(r"intrusive_ptr<.*>::(reset_not_null_|retain_|reset_)")),
    ("fill", re.compile(r"aoti_torch_get_|toDLPack|getDLDataType|getDLContext|DLDevice|"
                        r"TensorImpl::has_storage|torch_is_(conj|neg)|\(anonymous namespace\)::fill|"
                        r"torch_tensor_get_metadata|memcpy")),
    ("entry", re.compile(r"torch_tensor_from_pyobject|torch_tensor_borrow|PyObjectConversion|"
                         r"BorrowConversion|ConversionImpl|aoti_torch_delete_tensor_object|"
                         r"FromPyObjectNoSync|type_caster|dltensor_borrowed|[Dd]eleter|"
                         r"tensor_borrow_from_pyobject|ATenDLMTensor")),
    ("loop", re.compile(r"^(peers_|route_once|read_seven|metadata_once|__pyx_)")),
)


def part_of(context: str) -> str:
    """The part (a key of ``PARTS``) that one ``function'caller'...`` cost belongs to."""
    frames = context.split("'")
    for part, rule in OUTER_RULES:
        if any(rule.search(f) for f in frames):
            return part
    for f in frames:
        for part, rule in INNER_RULES:
            if rule.search(f):
                return part
    return "other"


def attribution(split: dict) -> dict:
    """``{part: instructions per call}`` of one configuration's ``{context: per call}``."""
    out = dict.fromkeys(PARTS, 0.0)
    for context, cost in split.items():
        out[part_of(context)] += cost
    return out


def valgrind_version() -> str:
    try:
        return subprocess.run(["valgrind", "--version"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def counts(dumps: dict, stem: str, n1: int, n2: int) -> tuple[float, int, dict, dict]:
    """``(instructions per call, repeat check, {context: per call}, {function: library})``
    of the configuration whose dump labels start with ``stem`` (``"path|reader"``)."""
    a, b, a2 = (dumps[f"{stem}|{n}|{k}"] for k, n in enumerate((n1, n2, n1)))
    (big, lib_big), (small, lib_small) = self_costs(b[0]), self_costs(a2[0])
    split = {c: (big[c] - small.get(c, 0)) / (n2 - n1) for c in big}
    return (b[1] - a2[1]) / (n2 - n1), a2[1] - a[1], split, {**lib_small, **lib_big}


def routes_section(plan: dict, dumps: dict) -> list[str]:
    """The routes table (instructions per call, ratios) and the attribution table."""
    from bench import routes

    n1, n2 = plan["n1"], plan["n2"]
    got = {name: counts(dumps, f"route:{name}|", n1, n2) for name in plan.get("routes", [])}
    if not got and not plan.get("route_unavailable"):
        return []
    ref = {k: got[k][0] for k in ("fallback_getters", "borrow_batched") if k in got}
    lines = ["## Routes", "",
             "Every route a native consumer has from a Python tensor to its metadata (data "
             "pointer, ndim, sizes, strides, dtype, device type and index), as C loops "
             "(`bench/routes.py`): torch's own functions (status *today*), the same with an "
             "internal fix (`proposal/fixes/internal_fixes.cpp`: the interpreter fix installed "
             "for the loop, or a DLPack exchange table with another "
             "`dltensor_from_py_object_no_sync`), and the proposed functions (*new ABI*). "
             "The fixed DLPack row runs the DLPack patches' own function "
             "(`proposal/patches/dlpack/`), cut out of the patched `torch/csrc/Module.cpp` "
             "at build time (`proposal/fixes/patched_dlpack.py`) and compiled against torch "
             "2.15's headers; the rows marked *prototype* run the earlier hand-written "
             "version, which had no conj/neg refusal and an attached-thread check of its own. "
             "*(part)* rows are pieces of a route. The interpreter fix rows run "
             "the patch's own `incref` / `decref`, cut out of the patched "
             "`torch/csrc/PyInterpreter.cpp` at build time (`proposal/fixes/patched_interpreter.py`) "
             "with the header the patch adds, and compiled against torch 2.15's headers and "
             "main's `torch::detail::SafeGilScopedAcquire` (`proposal/fixes/safe_gil.h`: the "
             "class as `torch/csrc/Exceptions.h` defines it at pytorch/pytorch 02d90f32): the "
             "patch's code on torch 2.15, not a build of PyTorch's main branch. The rows "
             "marked *emulation* run the earlier hand-written copy of the same test (its slow "
             "path torch 2.15's own methods).", "",
             "| route | status | instructions per call | ratio to pointer trick + getters | "
             "ratio to borrow + batched | repeat check |",
             "|---|---|---:|---:|---:|---:|"]
    for route in routes.ROUTES:
        label = route.label + (" (part)" if route.part else "")
        if route.name not in got:
            why = plan.get("route_unavailable", {}).get(route.name, "not run")
            lines.append(f"| {label} | {route.status} | unavailable: {why} | | | |")
            continue
        c, rep, _, _ = got[route.name]
        ratios = [f"{c / ref[k]:.3f}x" if k in ref else "" for k in
                  ("fallback_getters", "borrow_batched")]
        lines.append(f"| {label} | {route.status} | {c:.1f} | {ratios[0]} | {ratios[1]} | "
                     f"{rep:+d} |")
    lines += patch_vs_emulation(got)
    lines += ["", "## Attribution", "",
              "Each route's instructions per call by part. Every self cost callgrind reports "
              f"(with {SEPARATE_CALLERS} levels of callers, `--separate-callers`) goes to one "
              "part, by `bench/callgrind.py`'s `OUTER_RULES` (a frame anywhere in the chain) "
              "and then `INNER_RULES` (the innermost matching frame); the parts add up to the "
              "total. Inlined code counts where it was inlined: a check or a refcount update "
              "compiled into an entry point is counted under *entry*.", ""]
    lines += [f"- **{k}**: {v}" for k, v in PARTS.items()]
    lines += ["", "| route | " + " | ".join(PARTS) + " | total |",
              "|---|" + "---:|" * (len(PARTS) + 1)]
    for route in routes.ROUTES:
        if route.name not in got:
            continue
        c, _, split, _ = got[route.name]
        parts = attribution(split)
        lines.append(f"| {route.label} | " + " | ".join(f"{parts[k]:.0f}" for k in PARTS) +
                     f" | {c:.0f} |")
    return lines + [""]


#: (route with the patch's code, the same route with the emulation)
PATCH_VS_EMULATION = (("owned_fixed", "owned_fixed_emulation"),
                      ("dlpack_no_sync_fixed", "dlpack_no_sync_fixed_emulation"))


def patch_vs_emulation(got: dict) -> list[str]:
    """Lines saying, per pair of ``PATCH_VS_EMULATION`` counted here, the patch's code
    against the emulation (instructions per call and the difference)."""
    from bench import routes

    lines = []
    for patch, emulation in PATCH_VS_EMULATION:
        if patch in got and emulation in got:
            a, b = got[patch][0], got[emulation][0]
            what = routes.BY_NAME[patch].label.removesuffix(" + interpreter fix")
            lines.append(f"- {what} + interpreter fix: the patch's code {a:.1f} instructions "
                         f"per call, the emulation {b:.1f}: {a - b:+.1f} ({a / b - 1:+.1%}).")
    if lines:
        lines = ["", "The interpreter fix, the patch's code against the emulation (same run):",
                 ""] + lines
    return lines


def totals(plan: dict, dumps: dict) -> dict:
    """``{key: instructions per call}`` for every configuration of the run: ``path|reader``
    (the bridge), ``route:<name>`` and ``py:<statement>``."""
    n1, n2 = plan["n1"], plan["n2"]
    out = {}
    for p, r in plan["configs"]:
        out[f"{p}|{r or ''}"] = counts(dumps, f"{p}|{r or ''}", n1, n2)[0]
    for name in plan.get("routes", []):
        out[f"route:{name}"] = counts(dumps, f"route:{name}|", n1, n2)[0]
    for name in plan.get("statements", []):
        out[f"py:{name}"] = counts(dumps, f"py:{name}|", n1, n2)[0]
    out.update(launch_totals(plan, dumps))
    out.update(bridge_own(plan, dumps))
    out.update(plan.get("eager", {}))
    return out


def total_per_call(dumps: dict, stem: str, n1: int, n2: int) -> float:
    """Instructions per call of one statement from its dumps' totals alone (what
    ``counts`` gives first, without splitting the dumps by function)."""
    return (dumps[f"{stem}|{n2}|1"][1] - dumps[f"{stem}|{n1}|2"][1]) / (n2 - n1)


def launch_totals(plan: dict, dumps: dict) -> dict:
    """``{"py:<statement>": instructions per call}`` of the workload's statements of one
    process (the launches at their own loop lengths)."""
    lengths = plan.get("lengths", {})
    return {f"py:{name}": total_per_call(dumps, f"py:{name}|",
                                         *lengths.get(name, (plan["n1"], plan["n2"])))
            for name in plan.get("launcher", [])}


def bridge_own(plan: dict, dumps: dict) -> dict:
    """``{"own:view_six": instructions per call}``: the self cost of the bridge's own
    functions (``BRIDGE_OWN``) within ``VIEW_SIX``, split from its dumps by function;
    empty where the run has no such statement."""
    if "view_six" not in plan.get("launcher", []):
        return {}
    n1, n2 = plan.get("lengths", {}).get("view_six", (plan["n1"], plan["n2"]))
    split = by_function(counts(dumps, "py:view_six|", n1, n2)[2])
    return {"own:view_six": sum(c for f, c in split.items() if BRIDGE_OWN.match(f))}


def goals(plan: dict, per_call: dict) -> list[dict]:
    """The goals in instructions: one dict per goal (key, what, ratio, target, status)."""
    modern = tuple(int(x) for x in plan["python"].split(".")[:2]) >= (3, 12)
    rows = []
    for key, what, num, den, target_311, target_312 in GOALS:
        target = target_312 if modern else target_311
        if num in per_call and den in per_call and per_call[den]:
            ratio = per_call[num] / per_call[den]
            rows.append({"goal": key, "what": what, "ratio": round(ratio, 4),
                         "numerator": per_call[num], "denominator": per_call[den],
                         "target": target, "status": "met" if ratio <= target else "missed"})
        else:
            rows.append({"goal": key, "what": what, "ratio": None, "target": target,
                         "status": "not counted (a configuration is unavailable here)"})
    return rows


def python_section(plan: dict, per_call: dict) -> list[str]:
    """The Python-level statements and the goals, in instructions."""
    if not plan.get("statements"):
        return []
    lines = ["## Python level", "",
             "Each statement compiled by `timeit` on `t` (as the benchmarks time it), counted "
             "with collection toggled on around its loop; the difference of two loop lengths "
             "removes the toggles and the loop's setup.", "",
             "| statement | instructions per call | ratio to the five-tuple |", "|---|---:|---:|"]
    anchor = per_call.get("py:five_tuple")
    for name in plan["statements"]:
        c = per_call[f"py:{name}"]
        lines.append(f"| `{STATEMENTS[name]}` | {c:.1f} | "
                     f"{(f'{c / anchor:.3f}x' if anchor else '')} |")
    same, fact = per_call.get("py:view_borrow_ptr"), per_call.get("py:data_ptr")
    if same and fact:
        lines += ["", f"The same fact both ways: `{STATEMENTS['view_borrow_ptr']}` / "
                      f"`{STATEMENTS['data_ptr']}` = {same:.1f} / {fact:.1f} = "
                      f"{same / fact:.3f}x."]
    lines += ["", f"## Goals (instructions, CPython {plan['python']})", "",
              "| goal | what | instructions: numerator / denominator | ratio | target | status |",
              "|---|---|---:|---:|---:|---|"]
    for g in goals(plan, per_call):
        if g["ratio"] is None:
            lines.append(f"| {g['goal']} | {g['what']} | | | <= {g['target']:.2f}x | "
                         f"{g['status']} |")
        else:
            lines.append(f"| {g['goal']} | {g['what']} | {g['numerator']:.0f} / "
                         f"{g['denominator']:.0f} | {g['ratio']:.3f}x | <= {g['target']:.2f}x | "
                         f"{g['status']} |")
    return lines + [""]


def launcher_section(per_call: dict, processes: list | None = None,
                     g2_target: float | None = None) -> list[str]:
    """A launcher's workload (``bench/launcher_workload.py``): per tensor by k, then every
    shape against both anchors with the spread between processes, then the dims series
    with its steps and the bound on them. ``g2_target``: G2's target on the counted
    Python (``GOALS``), for the margin ``launch_why`` states."""
    from bench import launcher_workload as lw

    every = lw.launch_rows(processes or [per_call])
    launch = [r for r in every if r["shape"] == "mixed" and r["anchor"] == "device"]
    dims = lw.dims_rows(per_call)
    if not launch and not dims:
        return []
    lines = ["## A launcher's workload", "",
             "One call views k float32 CPU tensors of distinct shapes (1 to 4 dimensions) and "
             f"reads `{lw.SIX}` of each, the previous call's views still alive; the anchor "
             f"reads `{lw.FIVE}` of the same tensors and keeps them as its arguments, "
             "the same way (`bench/launcher_workload.py`). Instructions per tensor (a call's "
             "count divided by k, the Python loop and the kept list included on both "
             f"sides). Goal: the ratio at most {lw.GOAL_RATIO:.2f}x at k = "
             f"{', '.join(map(str, lw.GOAL_KS))}. The launch alone is the anchor's loop and "
             "argument list reading nothing, which both sides pay; the last column is the "
             "ratio of what each side adds to it.", "",
             "| k tensors per call | view + six attributes | hand-written five reads | ratio "
             "| goal | the launch alone | ratio of the rest |",
             "|---:|---:|---:|---:|---|---:|---:|"]

    def opt(x, fmt):
        return "" if x is None else format(x, fmt)

    lines += [f"| {r['k']} | {r['view']:.1f} | {r['hand']:.1f} | {r['ratio']:.3f}x | "
              f"{r['status']} | {opt(r['bare'], '.1f')} | "
              f"{opt(r['reads_ratio'], '.3f')}{'x' if r['reads_ratio'] is not None else ''} |"
              for r in launch]
    lines += launch_grid(every, per_call, g2_target)
    lines += ["", "### Dimensions", "",
              "One tensor of d dimensions, every size 2: `view_borrow(t)` and `v = view(t); "
              f"{lw.SIX}`, instructions per call and the step from d - 1.", "",
              "| d | view_borrow(t) | step | view + six attributes | step |",
              "|---:|---:|---:|---:|---:|"]

    def step(x):
        return "" if x is None else f"{x:+.0f}"

    lines += [f"| {r['d']} | {r['view_borrow']:.0f} | {step(r['borrow_step'])} | "
              f"{r['view_read']:.0f} | {step(r['read_step'])} |" for r in dims]
    lines.append("")
    for key, label in (("view_borrow", "view_borrow(t)"), ("view_read", "view + six")):
        c = lw.slope_check(dims, key)
        if c["ok"] is None:
            continue
        lines.append(f"- {label}: mean step {c['slope']:.1f} per dimension for d = 1 to 8; "
                     f"the largest step above 8 is {c['worst_step']:+.0f} (d = {c['worst_d']}), "
                     f"{'within' if c['ok'] else 'over'} twice that ({c['bound']:.1f}).")
    return lines + [""]


def launch_grid(rows: list[dict], per_call: dict, g2_target: float | None = None) -> list[str]:
    """Every shape against both anchors, each ratio with its range over the processes,
    then the rows that miss the margin with the instructions they would have to shed and
    where the view side's instructions go (``launch_why``)."""
    from bench import launcher_workload as lw

    if not rows:
        return []
    n = max(r["processes"] for r in rows)
    shapes = {"mixed": "1 to 4 (distinct)",
              **{f"d{d}": f"{d}" for d in lw.LAUNCH_DIMS}}
    lines = ["", "### Every shape, both anchors, the spread between processes", "",
             f"The same launch with every tensor of d dimensions (first size i + 2, the others "
             f"2), against both anchors a launcher writes: `{lw.FIVE}` (*device*) and "
             f"`{lw.FIVE_GET_DEVICE}` (*get_device*, the device as its index, an int). "
             f"Counted in {n} fresh processes, each under its own PYTHONHASHSEED (0 to "
             f"{n - 1}); instructions per tensor are the first process's, the range is the "
             "ratio's over all of them (counts through torch's bindings and CPython's "
             "look-ups move by a few instructions from process to process). Goal: every "
             f"process at most {lw.GOAL_BAR:.3f}x ({lw.GOAL_RATIO:.2f}x less 2%) at k = "
             f"{', '.join(map(str, lw.GOAL_KS))}; *within the goal*: every process at most "
             f"{lw.GOAL_RATIO:.2f}x, not the margin.", "",
             "| dimensions | anchor | k | view + six attributes | hand-written reads | ratio "
             f"| range over {n} processes | goal |", "|---|---|---:|---:|---:|---:|---|---|"]
    lines += [f"| {shapes[r['shape']]} | {r['anchor']} | {r['k']} | {r['view']:.1f} | "
              f"{r['hand']:.1f} | {r['ratio']:.3f}x | {r['ratio_min']:.3f}x .. "
              f"{r['ratio_max']:.3f}x | {r['status']} |" for r in rows]
    short = [r for r in rows if r["k"] in lw.GOAL_KS and r["status"] != "met"]
    if short:
        lines += ["", f"Rows over {lw.GOAL_BAR:.3f}x in some process, with the instructions "
                  "per tensor the view side would have to shed for every process to be "
                  "within it:", ""]
        lines += [f"- {shapes[r['shape']]} dimensions, {r['anchor']}, k = {r['k']}: "
                  f"{r['ratio_max']:.3f}x at worst, {r['shed']:.0f} instructions per tensor "
                  "over." for r in short]
        lines += launch_why(short, per_call, g2_target)
    return lines


def launch_why(short: list[dict], per_call: dict, g2_target: float | None = None) -> list[str]:
    """Why the rows that miss do: where the view side's instructions go in the worst row
    of one ndim (the launch alone, ``view_borrow(t)`` of a tensor of that ndim from the
    dims series, the rest), what one read costs (``VIEW_ATTR``) against the load CPython
    specialises (``SLOT_ATTR``), what six such loads would save against the most any row
    has to shed, and the margin ``view_borrow(t)`` has under G2 (``g2_target`` times
    ``t.data_ptr()``; without it, 1.00x) for the fill that would need."""
    worst = max((r for r in short if r["shape"] != "mixed"), key=lambda r: r["shed"],
                default=None)
    if worst is None:
        return []
    d, k = int(worst["shape"][1:]), worst["k"]
    bare, borrow = per_call.get(f"py:launch_bare_{k}"), per_call.get(f"py:dims_view_borrow_{d}")
    attr, slot = per_call.get("py:view_attr"), per_call.get("py:slot_attr")
    g2_num, g2_den = per_call.get("py:view_borrow"), per_call.get("py:data_ptr")
    if None in (bare, borrow, attr, g2_num, g2_den):
        return []
    bare /= k
    reads = worst["view"] - bare - borrow
    target = 1.0 if g2_target is None else g2_target
    margin = target * g2_den - g2_num
    most = max(r["shed"] for r in short)
    lines = ["", f"Where the view side's {worst['view']:.0f} instructions per tensor go in the "
             f"row furthest over ({d} dimensions, {worst['anchor']}, k = {k}; "
             f"{worst['shed']:.0f} to shed): the launch alone {bare:.0f} (both sides pay "
             f"it), `view_borrow(t)` of a {d}-dimensional tensor {borrow:.0f} (the dimensions "
             f"series below), and {reads:.0f} for `view` over `view_borrow`, the six reads "
             f"and the tuple of them. One read, `{VIEW_ATTR}` of a view made beforehand, costs "
             f"{attr:.0f}: CPython's attribute load, generic for a type with its own "
             f"`tp_getattro`, into the view's getter; six are {6 * attr:.0f}."]
    if slot is not None:
        lines[-1] += (
            f" The load CPython specialises, `{SLOT_ATTR}` (a member slot filled when the "
            f"object was made, `LOAD_ATTR_SLOT`, 3.11 to 3.13), costs {slot:.0f}: six such "
            f"loads would save {6 * (attr - slot):.0f} per tensor, more than the "
            f"{most:.0f} the furthest of the rows over has to shed.")
    lines[-1] += (
        " Every specialised attribute load reads a value stored in the object (a member "
        "slot, the instance dictionary) or calls Python code (3.12 on: a property, "
        "`__getattribute__`); a getset attribute, or any attribute of a type with its own "
        "`tp_getattro`, is never specialised. So the rows over are met only with the six "
        "values stored when the view is made: the tuples' check (or their making), the "
        "address's int and the three other values then go into every `view_borrow(t)`, "
        f"which G2 bounds at {target:.2f}x `t.data_ptr()`: on this Python {g2_num:.0f} "
        f"instructions against {g2_den:.0f}, a margin of {margin:+.0f} instructions for "
        "all of that.")
    lines[-1] += eager_why(per_call, d, borrow, g2_num, target)
    own, six = per_call.get("own:view_six"), per_call.get("py:view_six")
    if own is not None and six is not None:
        over = [r for r in short if r["shed"] > own]
        lines[-1] += (
            f" Trimming the bridge instead: the six reads of a view made beforehand, "
            f"`{VIEW_SIX}`, cost {six:.0f}, of which {own:.0f} are the bridge's own "
            "instructions (the self cost of its view type's `tp_getattro`, getters and "
            "tuple code, inlined parts included); the rest is CPython's attribute loads, "
            "the tuple and the loop. ")
        if over:
            lines[-1] += (f"{len(over)} of the {len(short)} rows over "
                          f"{'has' if len(over) == 1 else 'have'} more than that to shed: a "
                          "bridge with no instructions of its own in the reads would still "
                          f"miss {'it' if len(over) == 1 else 'them'}. ")
        rest = [r for r in short if r["shed"] <= own]
        if rest:
            names = {"mixed": "1 to 4 dimensions"}
            need = "; ".join(f"{names.get(r['shape'], r['shape'][1:] + ' dimensions')}, "
                             f"{r['anchor']}: {own - r['shed']:.0f}" for r in rest)
            lines[-1] += (
                f"{'The other' if over else 'The'} {len(rest)} would need the bridge's "
                f"share cut from {own:.0f} to at most ({need}), while each getter still "
                "loads its value, takes a reference and returns, and `tp_getattro` still "
                "tells the six names apart.")
    return lines


def eager_why(per_call: dict, d: int, borrow: float, g2_num: float, target: float) -> str:
    """What the measurement build (``child_eager``) counted, against G2 (``target`` times
    ``t.data_ptr()``, both from that build's own process) and against this build
    (``g2_num``: its ``view_borrow(t)``; ``borrow``: its ``view_borrow`` of a
    ``d``-dimensional tensor), and what follows; without those counts, the reasoning's
    conclusion alone."""
    eager, den = per_call.get("eager:view_borrow"), per_call.get("eager:data_ptr")
    eager_d = per_call.get(f"eager:dims_view_borrow_{d}")
    if None in (eager, den, eager_d):
        return " So the way found here to meet these rows makes `view_borrow(t)` dearer."
    ratio = eager / den
    text = (" Counted: with the bridge built to make the six values when each view is made "
            "(`BRIDGE_EAGER_VALUES`, `bench/native/eager_bridge_build.py`, in a process of "
            "its own; a lower bound of a view type with member slots, whose six stores it "
            f"does not make), `view_borrow(t)` takes {eager:.0f} instructions against "
            f"{den:.0f} for `t.data_ptr()` in that process, {ratio:.3f}x "
            f"({eager - g2_num:+.0f} over this build's), and `view_borrow` of a "
            f"{d}-dimensional tensor {eager_d:.0f} ({eager_d - borrow:+.0f}).")
    if ratio > target:
        return text + (f" That is over G2's {target:.2f}x: met this way, these rows would "
                       "break G2, and the anchor stays as it is.")
    return text + (f" That is within G2's {target:.2f}x: a view type with member slots "
                   "could meet these rows; its six stores are still to be counted.")


# --- a view's parts, before and after ---------------------------------------------------------
#: The Python-level statements whose instructions are split into a view's parts.
VIEW_STATEMENTS = ("view_borrow", "view_read")
#: A view's parts, in table order (self cost of each function; the first rule that matches
#: its name decides). Code inlined into a function counts where it was inlined: the C
#: view functions (``bridge_fn_*``) hold the gate, the reader's checks and the fill.
VIEW_PARTS = {
    "call": "CPython's eval loop and call dispatch (timeit's loop included) and the "
            "attribute look-ups",
    "wrapper": "the function Python calls (the C METH_O view function, bridge_fn_*, "
               "with the gate, the fill and the reader's checks inlined into it)",
    "allocation": "the view object: allocation, GC tracking, dealloc, freelist",
    "frames": "the bridge's functions kept out of line (bridge_read_tail_kept, "
              "bridge_heap_room, bridge_view_release, ...) and Cython's helpers",
    "handle": "the borrow: its entry point, vtable hop, type / metadata checks and the "
              "attached-thread check",
    "getters": "the aoti_torch_get_* getters, torch_is_conj / torch_is_neg, the copies",
    "attributes": "making the attribute values (ints, tuples) and the getset functions",
    "other": "anything no rule names",
}
VIEW_RULES = (
    ("attributes", re.compile(r"^(PyLong_|_PyLong_|PyTuple_|_PyTuple_|tuple_|bridge_get_|"
                              r"bridge_view_getattro|bridge_view_tuple|bridge_int_tuple|"
                              r"__pyx_getprop_|__pyx_f_6bridge_7_bridge__int_tuple|"
                              r"getset_get|PyObject_GenericGetAttr|_PyObject_GenericGetAttr|"
                              r"_PyType_Lookup|find_name_in_mro|PyDescr|descr_)|__get__")),
    ("wrapper", re.compile(r"^(__pyx_pw_|__pyx_pf_|bridge_fn_)")),
    ("getters", re.compile(r"^(aoti_torch_get_|torch_is_(conj|neg)|c10::TensorImpl::|"
                           r"__memcpy|memcpy)")),
    ("handle", re.compile(r"torch_tensor_borrow|torch_borrow::|BorrowConversion|"
                          r"PyGILState_|PyThreadState_|PyThread_tss|pthread_getspecific|"
                          r"__tls_get_addr|THPVariable|PyType_IsSubtype|TensorImplPolicies")),
    ("allocation", re.compile(r"tp_new|tp_dealloc|_dealloc|GC_|_PyObject_GC|gc_alloc|"
                              r"PyObject_Malloc|PyObject_Free|_PyObject_Free|"
                              r"_PyObject_Malloc|pymalloc|_Py_Dealloc|PyObject_Init|"
                              r"memset|_PyTrash|_Py_NewReference|PyMem_|"
                              r"^(malloc|free|_int_free|_int_malloc)$")),
    ("frames", re.compile(r"^(__pyx_|bridge_)")),
    ("call", re.compile(r"_PyEval|PyEval|_PyObject_Vectorcall|PyObject_Vectorcall|"
                        r"cfunction_|_PyObject_MakeTpCall|PyObject_GetAttr|"
                        r"_Py_|method_vectorcall|vectorcall")),
)


def view_part_of(function: str) -> str:
    """The part (a key of ``VIEW_PARTS``) one function's self cost belongs to."""
    for part, rule in VIEW_RULES:
        if rule.search(function):
            return part
    return "other"


def view_parts(plan: dict, dumps: dict) -> dict:
    """``{statement: {part: instructions per call}}`` for ``VIEW_STATEMENTS``."""
    out = {}
    for name in VIEW_STATEMENTS:
        if name not in plan.get("statements", []):
            continue
        _, _, split, _ = counts(dumps, f"py:{name}|", plan["n1"], plan["n2"])
        parts = dict.fromkeys(VIEW_PARTS, 0.0)
        for function, cost in by_function(split).items():
            parts[view_part_of(function)] += cost
        out[name] = {k: round(v, 1) for k, v in parts.items()}
    return out


def baseline_file(stem: str) -> pathlib.Path:
    """Where the counts of the bridge before its C view type are kept for the
    before/after table: ``results/baseline/<stem>.json`` (written by this script on the
    earlier bridge, ``--out bench/results/baseline``)."""
    return HERE / "results" / "baseline" / f"{stem}.json"


def view_parts_section(parts: dict, before: dict | None) -> list[str]:
    """Each statement's instructions per part, after (this run) and before (the
    baseline's ``view_parts``, where it has them)."""
    if not parts:
        return []
    before = (before or {}).get("view_parts", {})
    lines = ["## A view's instructions by part", "",
             "Self instructions per call of each function the statement runs, each "
             "function in one part by `bench/callgrind.py`'s `VIEW_RULES` (first match); "
             "*before*: the same rules on the committed counts of the bridge before its C "
             "view type (`bench/results/baseline/`), *after*: this run.", ""]
    lines += [f"- **{k}**: {v}" for k, v in VIEW_PARTS.items()]
    for name, got in parts.items():
        old = before.get(name)
        lines += ["", f"`{STATEMENTS[name]}`", "",
                  "| part | before | after | change |" if old else "| part | after |",
                  "|---|---:|---:|---:|" if old else "|---|---:|"]
        for k in [*VIEW_PARTS, "total"]:
            a = sum(got.values()) if k == "total" else got[k]
            if old:
                b = sum(old.values()) if k == "total" else old.get(k, 0.0)
                lines.append(f"| {k} | {b:.0f} | {a:.0f} | {a - b:+.0f} |")
            else:
                lines.append(f"| {k} | {a:.0f} |")
    return lines + [""]


def report(plan: dict, dumps: dict, machine: dict, before: dict | None = None) -> str:
    """The markdown file: the routes and their attribution, then the bridge's native loop
    per path (instructions per call, then each configuration's functions)."""
    n1, n2 = plan["n1"], plan["n2"]
    per_call, repeat, split, libs = {}, {}, {}, {}
    for p, r in plan["configs"]:
        key = (p, r)
        per_call[key], repeat[key], ctx, lib = counts(dumps, f"{p}|{r or ''}", n1, n2)
        split[key] = by_function(ctx)
        libs.update(lib)
    readers = plan["reader_argument"]
    toggles = " ".join(f"--toggle-collect='{t}'" for t in TOGGLES)
    title = f"# Instruction counts: every route and each path's native loop, torch {plan['torch']}"
    lines = [title, "",
             "Generated by `bench/callgrind.py` (`make callgrind`); nothing here is typed by "
             "hand. Instructions are counted, not timed: the figures do not depend on the "
             "machine's load, only on the binaries named below.", "",
             f"- What: `t` a 32x32 float32 CPU tensor; the routes' C loops (`bench/routes.py`, "
             "section Routes) and `bridge._bridge._native_loop(t, path, "
             f"n{', reader=...' if readers else ''})`"
             " (section Bridge): per call the type gate, the handle (made and, "
             "for owned, deleted), the layout and metadata reads, the conj/neg bits and the "
             "bridge's checks, everything they call included.",
             f"- How: {machine['valgrind']}, `--tool=callgrind {toggles} "
             f"--separate-callers={SEPARATE_CALLERS}`, "
             "instrumentation started after the imports; one dump per call; instructions per "
             f"call = (I(n={n2}) - I(n={n1})) / {n2 - n1}, which removes the fixed part of a "
             f"call; repeat check: I(n={n1}) measured twice in the same process, difference "
             "shown (0: the count is exact).",
             f"- Binaries: Python {plan['python']}, torch {plan['torch']}, bridge built by "
             f"{plan['bridge_compiler']}, C loops by {plan['native_compiler']}; CPU "
             f"{machine['cpu_model']} (the count does not depend "
             "on it, the code paths a library picks at run time might). No date: the same "
             "binaries give the same file.",
             ""]
    statements = totals(plan, dumps)
    lines += python_section(plan, statements)
    g2 = next(g["target"] for g in goals(plan, statements) if g["goal"] == "G2")
    lines += launcher_section(statements, plan.get("launch_processes"), g2)
    lines += view_parts_section(view_parts(plan, dumps), before)
    lines += routes_section(plan, dumps)
    if plan["unavailable"]:
        lines += [f"- Unavailable here: " + "; ".join(f"{p}: {why}" for p, why in
                                                      plan["unavailable"].items()), ""]
    if plan["reader_unavailable"]:
        lines += [f"- Readers refused: " + "; ".join(f"{r}: {why}" for r, why in
                                                     plan["reader_unavailable"].items()), ""]
    fb = {r: per_call.get(("fallback", r)) for _, r in plan["configs"]}
    head = "| path |" + (" reader |" if readers else "") + \
        " instructions per call | minus fallback | ratio to fallback | repeat check |"
    lines += ["## Bridge: instructions per call of `_native_loop`", "", head,
              "|---|" + ("---|" if readers else "") + "---:|---:|---:|---:|"]
    for p, r in plan["configs"]:
        c, f = per_call[(p, r)], fb.get(r)
        lines.append(f"| {p} |" + (f" {r} |" if readers else "") + f" {c:.1f} | " +
                     (f"{c - f:+.1f} | {c / f:.3f}x |" if f else " | |") +
                     f" {repeat[(p, r)]:+d} |")
    lines += ["", "## Bridge: where each path's instructions go", "",
              f"Self instructions per call by function (callgrind_annotate, `--inclusive=no`), "
              f"functions under {MIN_SHARE} per call summed as \"other\". Names are as the "
              "binaries' symbols give them (`???`: no symbol).", ""]
    for p, r in plan["configs"]:
        costs = sorted(split[(p, r)].items(), key=lambda kv: -kv[1])
        shown = [(fn, c) for fn, c in costs if c >= MIN_SHARE]
        other = sum(c for fn, c in costs if c < MIN_SHARE)
        lines += [f"### {p}" + (f", reader {r}" if readers else ""), "",
                  "| function | library | instructions per call |", "|---|---|---:|"]
        lines += [f"| `{fn}` | {libs.get(fn, '?')} | {c:.1f} |" for fn, c in shown]
        lines += [f"| other | | {other:.1f} |",
                  f"| **total** | | **{per_call[(p, r)]:.1f}** |", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=HERE / "results",
                        help="folder for callgrind-torch-<v>.md (default bench/results)")
    parser.add_argument("--python", default=sys.executable,
                        help="the torch environment's python to run under valgrind "
                             "(default: this one)")
    parser.add_argument("--n1", type=int, default=1_000, help="calls of the short run (1000)")
    parser.add_argument("--n2", type=int, default=11_000, help="calls of the long run (11000)")
    parser.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS),
                        help="paths to count (default: every available one)")
    parser.add_argument("--stem", help="file name stem (default callgrind-torch-<v>; the "
                        "Makefile adds the interpreter's tag for a PYTHON other than its default)")
    parser.add_argument("--keep", type=pathlib.Path,
                        help="keep callgrind's dump files (and the run's plan) in this folder")
    parser.add_argument("--from-dumps", type=pathlib.Path, metavar="DIR",
                        help="no run: write the report from a folder --keep left")
    parser.add_argument("--processes", type=int, default=3,
                        help="fresh processes counting the launch statements, each under its "
                             "own PYTHONHASHSEED (0, 1, ...; the first is the main run): "
                             "the spread of each launch ratio (default 3)")
    parser.add_argument("--eager", action=argparse.BooleanOptionalAction, default=True,
                        help="also build the bridge with BRIDGE_EAGER_VALUES (views make their "
                             "six most-read values when made) and count view_borrow(t) with "
                             "it in a process of its own (default: on; needs Cython)")
    parser.add_argument("--launcher-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--eager-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--plan", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not 0 < args.n1 < args.n2:
        parser.error("need 0 < --n1 < --n2")
    if args.child:
        return child(args)
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        parser.error("valgrind (with callgrind_annotate) is not on PATH: apt-get install valgrind")
    from bench import launcher_workload, machine_info

    if args.from_dumps:
        work = args.from_dumps
    else:
        import torch

        import bridge
        from bench.native import peers_native

        # Build the C loops (with the client requests) here: compiling under valgrind is slow.
        if peers_native.NativePeers(torch, bridge).callgrind("dump") == -1:
            parser.error("bench/native/peers_native.c was built without <valgrind/callgrind.h> "
                         "(Debian's valgrind package installs it); rebuild after installing it")
        work = args.keep or pathlib.Path(tempfile.mkdtemp(prefix="cg-"))
        if run_valgrind(args, work) != 0:
            return 1
        for seed in range(1, args.processes):
            if run_valgrind(args, work / f"launcher-{seed}", seed, launcher_only=True) != 0:
                return 1
        if args.eager and run_eager(args, work / "eager") != 0:
            return 1
    plan_file = work / "plan.json"
    if not plan_file.exists():
        print(f"{plan_file} is missing: not a folder that --keep left", file=sys.stderr)
        return 1
    plan = json.loads(plan_file.read_text())
    plan["configs"] = [tuple(c) for c in plan["configs"]]
    plan["eager"] = eager_totals(work / "eager")
    dumps = read_dumps(work, "callgrind.out")
    missing = [l for l in plan["labels"] if l not in dumps]
    if missing:
        print(f"callgrind wrote no dump for {missing} (files in {work})", file=sys.stderr)
        return 1
    processes = [launch_totals(plan, dumps)]  # the main run's first, then the others
    for folder in sorted(work.glob("launcher-*"), key=lambda f: int(f.name.split("-")[1])):
        other = json.loads((folder / "plan.json").read_text())
        processes.append(launch_totals(other, read_dumps(folder, "callgrind.out")))
    plan["launch_processes"] = processes
    machine = {"valgrind": valgrind_version(), "cpu_model": machine_info.cpu_model()}
    stem = args.stem or f"callgrind-torch-{plan['torch'].split('+')[0]}"
    base = baseline_file(stem)
    before = json.loads(base.read_text()) if base.exists() else None
    text = report(plan, dumps, machine, before)
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"{stem}.md"
    out.write_text(text + "\n")
    # The figures as data, for report.py's goals table (instructions beside time).
    per_call = totals(plan, dumps)
    (args.out / f"{stem}.json").write_text(json.dumps(
        {"python": plan["python"], "torch": plan["torch"], "per_call": per_call,
         "goals": goals(plan, per_call), "view_parts": view_parts(plan, dumps),
         "launcher": launcher_workload.launch_rows(processes),
         "launch_seeds": list(range(len(processes))),
         "dims": launcher_workload.dims_rows(per_call)},
        indent=1, sort_keys=True) + "\n")
    print(text)
    print(f"\nsaved {out}" + (f"; dumps in {work}" if args.keep or args.from_dumps else ""))
    if not (args.keep or args.from_dumps):
        shutil.rmtree(work, ignore_errors=True)
    return 0


def run_eager(args, work: pathlib.Path) -> int:
    """Build the measurement bridge (``bench/native/eager_bridge_build.py``) into
    ``work`` and count ``child_eager``'s statements with it, first on the child's
    ``PYTHONPATH``; its dumps and plan land in ``work``."""
    from bench.native import eager_bridge_build

    print("building the bridge with BRIDGE_EAGER_VALUES (views make their six values when "
          "made)...", flush=True)
    try:
        first = eager_bridge_build.build(work / "build")
    except Exception as exc:  # Cython, setuptools and the compiler raise their own
        print(f"building the BRIDGE_EAGER_VALUES bridge failed: {type(exc).__name__}: {exc} "
              "(--no-eager leaves it out)", file=sys.stderr)
        return 1
    return run_valgrind(args, work, eager_first=first)


def run_valgrind(args, work: pathlib.Path, seed: int = 0, launcher_only: bool = False,
                 eager_first: pathlib.Path | None = None) -> int:
    """One valgrind process running ``--child`` (with ``--launcher-only``: the launch
    statements alone; with ``eager_first``, the folder of the measurement build, put first
    on its ``PYTHONPATH``: ``child_eager``) under string hash seed ``seed``; its dumps and
    plan land in ``work``."""
    work.mkdir(parents=True, exist_ok=True)
    for old in work.glob("callgrind.out*"):
        old.unlink()
    plan_file = work / "plan.json"
    plan_file.unlink(missing_ok=True)
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
           *(f"--toggle-collect={t}" for t in TOGGLES),
           f"--separate-callers={SEPARATE_CALLERS}", "--dump-instr=no",
           f"--callgrind-out-file={work / 'callgrind.out'}",
           args.python, "-P", str(pathlib.Path(__file__).resolve()), "--child",
           "--plan", str(plan_file), "--n1", str(args.n1), "--n2", str(args.n2),
           "--paths", *args.paths, *(["--launcher-only"] if launcher_only else []),
           *(["--eager-child"] if eager_first else [])]
    if eager_first:
        print("counting view_borrow(t) with that build in a fresh process under callgrind...",
              flush=True)
    elif launcher_only:
        print(f"running the launch statements in a fresh process (PYTHONHASHSEED={seed}) under "
              "callgrind...", flush=True)
    else:
        print(f"running {len(args.paths)} path(s) and the routes x (n={args.n1}, {args.n2}, "
              f"{args.n1}) under callgrind: a few minutes (importing torch under valgrind)...",
              flush=True)
    # A string hash seed per process, given: dict and set probe sequences (attribute and
    # name look-ups) differ with it, and with them the Python-level statements' counts by
    # a few instructions; the launches are counted under several, their spread reported.
    env = dict(os.environ, PYTHONHASHSEED=str(seed))
    if eager_first:
        env["PYTHONPATH"] = os.pathsep.join(
            [str(eager_first)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0 or not plan_file.exists():
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        print(f"callgrind run failed (exit {proc.returncode})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
