"""What torch's own accessors and the bridge do when a tensor changes under them, with and
without a GIL: facts per interpreter, the counters, ``PyGILState_Check()`` across threads,
torch's critical sections, and every reader against every mutation, each in child
processes. ``make race-survey`` -> ``proposal/findings/free-threaded.md`` (and its JSON);
``--render JSON`` redoes the report. What each step does: ``tests/findings/README.md``.
Run as ``python -P -m findings.race_survey`` with ``tests/`` on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys

from hostile import subproc

THREADS = 8
READERS = ("t.shape", "t.stride()", "data_ptr, shape, stride", "view_fallback",
           "view_borrow", "view_owned")
#: The last one frees what a reader may be reading: the mutator swaps a fresh tensor into
#: ``t`` and drops the other one, the only owner of ``t``'s previous TensorImpl (and, from
#: the second swap on, of its storage), so a borrowed handle's tensor (the at::Tensor in
#: ``t``, whose TensorImpl a reader may have loaded) is freed under the reader.
MUTATIONS = ("t.data = x", "t.set_(x)", "swap_tensors(t, u)", "swap_tensors(t, u); del u")
#: The readers whose handle or pointer outlives nothing but the call: the question of the
#: last mutation, asked of each path (owned only where torch exports it: 2.14+).
FREED_READERS = ("view_borrow", "view_fallback", "view_owned")

FACTS = r'''
import ctypes, json, os, subprocess, sys, threading, time
gil = getattr(sys, "_is_gil_enabled", lambda: True)
out = {"python": sys.version.split()[0], "gil_at_start": gil()}
import torch
out["torch"] = torch.__version__
out["gil_after_torch"] = gil()
import bridge
from bridge import _bridge, _resolve
out["gil_after_bridge_import"] = gil()
t = torch.ones(2)
paths = bridge.available_paths()
for p, info in paths.items():
    if info.available:
        getattr(bridge, "view_" + p)(t)
out["gil_after_views"] = gil()
out["free_threaded"] = bool(_bridge.FREE_THREADED)
out["pyobject_size"] = _bridge.PYOBJECT_SIZE
out["tensor_basicsize"] = torch._C.TensorBase.__basicsize__
out["offset_proof"] = _resolve.prove_fallback_offset(torch, _bridge.PYOBJECT_SIZE)[1]
out["paths"] = {p: [i.available, i.origin, i.reason] for p, i in paths.items()}

# Counters: THREADS threads x 100,000 views of one shared tensor.
n = 100_000
view = getattr(bridge, "view_" + next(p for p in ("fallback", "borrow", "owned")
                                      if paths[p].available))
bridge.reset_path_counts()
def count():
    for _ in range(n):
        view(t)
ths = [threading.Thread(target=count) for _ in range(@THREADS@)]
[th.start() for th in ths]; [th.join() for th in ths]
out["counters"] = [sum(bridge.path_counts().values()), @THREADS@ * n]

# PyGILState_Check while another thread is attached: thread A checks, then runs a long
# C call that never detaches its thread state (sum over a range runs in C, with no eval
# loop to hand a GIL over), then checks again; thread B loops on PyGILState_Check()
# meanwhile. With a GIL, B stalls for all of A's call; without one, B keeps running and
# gets 1 too: "attached", not "exclusive". The machine's load does not blur this.
check = ctypes.pythonapi.PyGILState_Check
check.restype = ctypes.c_int
go, done = threading.Event(), threading.Event()
a_answers, b_answers, window, stamps = [], set(), [], []
def thread_a():
    go.wait()
    time.sleep(0.05)
    a_answers.append(check())
    t0 = time.perf_counter()
    sum(range(3 * 10**7))
    window.extend([t0, time.perf_counter()])
    a_answers.append(check())
    done.set()
def thread_b():
    go.set()
    while not done.is_set():
        b_answers.add(check())
        stamps.append(time.perf_counter())
ths = [threading.Thread(target=thread_b), threading.Thread(target=thread_a)]
[th.start() for th in ths]; [th.join() for th in ths]
t0, t1 = window
inside = [s for s in stamps if t0 <= s <= t1]
points = [t0, *inside, t1]
out["gilstate"] = {"a": a_answers, "b": sorted(b_answers), "a_call_ms": round((t1 - t0) * 1e3, 1),
                   "b_calls_during": len(inside),
                   "b_longest_stall_ms": round(max(y - x for x, y in zip(points, points[1:])) * 1e3, 1)}

# Does torch's Python binding take per-object locks anywhere? Its imports say.
lib = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_python.so")
try:
    nm = subprocess.run(["nm", "-D", "--undefined-only", lib], capture_output=True,
                        text=True, check=True).stdout
    out["torch_python_locks"] = sorted({line.split()[-1] for line in nm.splitlines()
                                        if "PyCriticalSection" in line or "PyMutex" in line})
except (OSError, subprocess.CalledProcessError) as exc:
    out["torch_python_locks"] = f"nm failed: {exc}"

# Do torch's setters and getters take the tensor's per-object lock? A thread holds a
# critical section on t (Py_BEGIN_CRITICAL_SECTION, through the C API; it spins without
# detaching, so the section stays held) for HOLD seconds while this thread runs one
# operation: an operation that locks t waits for the rest of HOLD; one that does not
# returns at once. list.append under a section on the list is the control.
import gc
HOLD = 0.5
waits = None
if out["free_threaded"] and hasattr(ctypes.pythonapi, "PyCriticalSection_Begin"):
    api = ctypes.pythonapi
    api.PyCriticalSection_Begin.argtypes = [ctypes.c_void_p, ctypes.py_object]
    api.PyCriticalSection_End.argtypes = [ctypes.c_void_p]

    def waited(obj, op):
        section = ctypes.create_string_buffer(64)  # PyCriticalSection: two words
        held = threading.Event()

        def holder():
            api.PyCriticalSection_Begin(section, obj)
            held.set()
            end = time.perf_counter() + HOLD
            while time.perf_counter() < end:
                pass
            api.PyCriticalSection_End(section)
        th = threading.Thread(target=holder)
        th.start()
        held.wait()
        t0 = time.perf_counter()
        op()
        dt = time.perf_counter() - t0
        th.join()
        return round(dt * 1e3, 3)

    gc.disable()
    t, x, u, lst = torch.randn(3, 4), torch.randn(5), torch.randn(2, 2), []
    waits = {
        "t.data = x": waited(t, lambda: setattr(t, "data", x)),
        "t.set_(x)": waited(t, lambda: t.set_(torch.randn(4))),
        # swap_tensors assigns __class__ and __dict__ first (CPython locks t for those),
        # then swaps the at::Tensors in C++: time that step alone too.
        "torch.utils.swap_tensors(t, u)": waited(t, lambda: torch.utils.swap_tensors(t, u)),
        "torch._C._swap_tensor_impl(t, u) (its C++ step)":
            waited(t, lambda: torch._C._swap_tensor_impl(t, u)),
        "t.shape": waited(t, lambda: t.shape),
        "t.stride()": waited(t, lambda: t.stride()),
        "t.data_ptr()": waited(t, lambda: t.data_ptr()),
        "control: lst.append(1), section held on lst": waited(lst, lambda: lst.append(1)),
    }
    gc.enable()
out["critical_section_waits_ms"] = waits
out["critical_section_hold_ms"] = HOLD * 1e3
print(json.dumps(out))
'''

RACE = r'''
import json, sys, threading, time
import torch, bridge
reader, mutation, seconds, locked = @READER@, @MUTATION@, @SECONDS@, @LOCKED@
# Candidates of different ranks: one with more dimensions than a TensorImpl keeps inline
# (5), so t.data = x reallocates the sizes/strides array under the readers.
cands = [torch.randn(3, 4), torch.randn(2, 6).t(), torch.zeros(*([1] * 7), 3),
         torch.arange(12.0)[::2]]
freeing = mutation == "swap_tensors(t, u); del u"
# The freeing mutation swaps in fresh clones (new pointers; a clone of the strided
# candidate is contiguous): judge shape and strides only, the clones'.
answers = [(None, tuple(k.shape), tuple(k.stride())) for k in (c.clone() for c in cands)]
if not freeing:
    answers += [(c.data_ptr(), tuple(c.shape), tuple(c.stride())) for c in cands]
    answers = answers[len(cands):]
t = cands[0].clone(); t.data = cands[0]
u = cands[1].clone(); u.data = cands[1]
lock = threading.Lock()
stop = threading.Event()
if reader == "none":
    read = None
elif reader == "t.shape":
    read = lambda: (None, tuple(t.shape), None)
elif reader == "t.stride()":
    read = lambda: (None, None, tuple(t.stride()))
elif reader == "data_ptr, shape, stride":
    read = lambda: (t.data_ptr(), tuple(t.shape), tuple(t.stride()))
else:
    f = getattr(bridge, reader)
    def read():
        v = f(t)
        return v.ptr, v.shape, v.strides

def judge(r):
    for a in answers:
        if all(x is None or y is None or x == y for x, y in zip(r, a)):
            return "exact"
    return "mixed"

counts = {"exact": 0, "mixed": 0, "raised": 0}
mixed_example = []
def reader_loop():
    while not stop.is_set():
        try:
            if locked:
                with lock:
                    r = read()
            else:
                r = read()
        except Exception as exc:
            counts["raised"] += 1
            continue
        verdict = judge(r)
        counts[verdict] += 1
        if verdict == "mixed" and not mixed_example:
            mixed_example.append(repr(r))

mutations = [0]
def mutator():
    k = 0
    while not stop.is_set():
        k = (k + 1) % len(cands)
        if locked:
            lock.acquire()
        try:
            if mutation == "t.data = x":
                t.data = cands[k]
            elif mutation == "t.set_(x)":
                t.set_(cands[k])
            elif freeing:
                fresh = cands[k].clone()
                torch.utils.swap_tensors(t, fresh)
                del fresh  # the last reference to t's previous TensorImpl: freed here
            else:
                torch.utils.swap_tensors(t, u)
        finally:
            if locked:
                lock.release()
        mutations[0] += 1

threads = []
if read is not None:
    threads += [threading.Thread(target=reader_loop) for _ in range(@READERS@)]
if mutation != "none":
    threads.append(threading.Thread(target=mutator))
for th in threads:
    th.start()
time.sleep(seconds)
stop.set()
for th in threads:
    th.join()
print(json.dumps({"counts": counts, "mutations": mutations[0],
                  "mixed_example": mixed_example[0] if mixed_example else None}))
'''


def run_facts(python):
    rc, out, err = subproc.run_python(FACTS.replace("@THREADS@", str(THREADS)),
                                      python=python, timeout=600)
    if rc != 0:
        raise RuntimeError(f"facts child failed on {python}: "
                           f"{subproc.describe_returncode(rc)}\n{err[-3000:]}")
    return json.loads(out.splitlines()[-1])


def run_race(python, reader, mutation, seconds, locked=False, readers=3):
    """One child: ``(crashed: str | None, counts: dict | None)``."""
    code = (RACE.replace("@READER@", repr(reader)).replace("@MUTATION@", repr(mutation))
            .replace("@SECONDS@", repr(seconds)).replace("@LOCKED@", repr(locked))
            .replace("@READERS@", str(readers)))
    rc, out, err = subproc.run_python(code, python=python, timeout=120 + 10 * seconds)
    if rc != 0:
        return subproc.describe_returncode(rc), None
    return None, json.loads(out.splitlines()[-1])


def survey(python, trials, seconds, progress):
    facts = run_facts(python)
    available = [r for r in READERS if not r.startswith("view_")
                 or facts["paths"][r.removeprefix("view_")][0]]
    rows = []
    plan = ([(r, m, False) for r in available for m in MUTATIONS]
            + [(r, "none", False) for r in available]
            + [("none", m, False) for m in MUTATIONS]
            + [(r, m, True) for r in available if r.startswith("view_") for m in MUTATIONS])
    for i, (reader, mutation, locked) in enumerate(plan, 1):
        progress(f"{python}: [{i}/{len(plan)}] {reader} vs {mutation}"
                 f"{' (locked)' if locked else ''}")
        row = {"reader": reader, "mutation": mutation, "locked": locked, "crashes": [],
               "exact": 0, "mixed": 0, "raised": 0, "mutations": 0, "example": None}
        for _ in range(trials):
            crash, res = run_race(python, reader, mutation, seconds, locked)
            if crash:
                row["crashes"].append(crash)
                continue
            for k in ("exact", "mixed", "raised"):
                row[k] += res["counts"][k]
            row["mutations"] += res["mutations"]
            row["example"] = row["example"] or res["mixed_example"]
        rows.append(row)
    return facts, rows


def _cell(row, trials):
    crashed = len(row["crashes"])
    parts = []
    if crashed:
        kinds = sorted(set(row["crashes"]))
        parts.append(f"**crashed {crashed}/{trials}** ({', '.join(kinds)})")
    if row["reader"] != "none":
        total = row["exact"] + row["mixed"] + row["raised"]
        parts.append(f"{row['mixed']:,} mixed / {total:,} reads"
                     + (f", {row['raised']:,} raised" if row["raised"] else ""))
    else:
        parts.append(f"{row['mutations']:,} mutations")
    return "; ".join(parts)


def render(results, trials, seconds, now):
    lines = [
        "# torch's accessors and the bridge under a concurrent mutation, with and without a GIL",
        "",
        f"Generated by `tests/findings/race_survey.py` (`make race-survey`) on {now}, "
        f"{platform.machine()}, {os.cpu_count()} CPUs. Do not edit: rerun it.",
        "",
        "Each interpreter below ran the same children: facts, then reader threads "
        f"({3} per child) reading one tensor `t` while one thread mutates it, "
        f"{trials} children of {seconds} s per pair. A read is *exact* when its "
        "pointer, shape and strides are one candidate tensor's, *mixed* when they "
        "combine two; a crashed child is counted, not retried.",
        "",
    ]
    for python, (facts, rows) in results.items():
        build = "free-threaded" if facts["free_threaded"] else "with the GIL"
        lines += [f"## CPython {facts['python']} ({build}), torch {facts['torch']}", "",
                  "| fact | value |", "|---|---|",
                  f"| `sys._is_gil_enabled()` at start / after `import torch` / after "
                  f"`import bridge` / after a view on each path | {facts['gil_at_start']} / "
                  f"{facts['gil_after_torch']} / {facts['gil_after_bridge_import']} / "
                  f"{facts['gil_after_views']} |",
                  f"| `sizeof(PyObject)` compiled into the bridge; "
                  f"`torch.Tensor.__basicsize__` | {facts['pyobject_size']}; "
                  f"{facts['tensor_basicsize']} |",
                  f"| fallback offset proof | {facts['offset_proof']} |"]
        for p, (ok, origin, reason) in facts["paths"].items():
            lines.append(f"| path `{p}` | {'available: ' + origin if ok else reason} |")
        made, expected = facts["counters"]
        lines += [f"| `path_counts()` after {THREADS} threads x 100,000 views | {made:,} of "
                  f"{expected:,} |",
                  f"| `PyGILState_Check()` in thread A before and after a C call of "
                  f"{facts['gilstate']['a_call_ms']} ms that keeps A's thread state attached; "
                  f"thread B calling it in a loop meanwhile | A: {facts['gilstate']['a']}; "
                  f"B: {facts['gilstate']['b']}, {facts['gilstate']['b_calls_during']:,} calls "
                  f"during A's call, longest stall {facts['gilstate']['b_longest_stall_ms']} ms |",
                  f"| per-object lock symbols `libtorch_python.so` imports | "
                  f"{', '.join(facts['torch_python_locks']) or 'none'} |"]
        waits = facts.get("critical_section_waits_ms")
        if waits:
            hold = facts["critical_section_hold_ms"]
            for op, ms in waits.items():
                lines.append(f"| `{op}` while another thread holds a critical section on "
                             f"the object for {hold:.0f} ms: waited | {ms} ms |")
        lines.append("")
        readers = [r for r in READERS if any(row["reader"] == r for row in rows)]
        lines += ["| reader \\ mutation | " + " | ".join(f"`{m}`" for m in MUTATIONS)
                  + " | no mutator |", "|---" * (len(MUTATIONS) + 2) + "|"]
        for r in readers:
            cells = []
            for m in (*MUTATIONS, "none"):
                row = next(x for x in rows if x["reader"] == r and x["mutation"] == m
                           and not x["locked"])
                cells.append(_cell(row, trials))
            lines.append(f"| `{r}` | " + " | ".join(cells) + " |")
        cells = [_cell(next(x for x in rows if x["reader"] == "none" and x["mutation"] == m),
                       trials) for m in MUTATIONS]
        lines += [f"| no reader | " + " | ".join(cells) + " | |", ""]
        locked = [x for x in rows if x["locked"]]
        if locked:
            lines += ["Readers and mutator taking one `threading.Lock` around each read and "
                      "each mutation (what the bridge's documentation asks of a caller that "
                      "mutates shared tensors):", "",
                      "| reader \\ mutation | " + " | ".join(f"`{m}`" for m in MUTATIONS)
                      + " |", "|---" * (len(MUTATIONS) + 1) + "|"]
            for r in readers:
                if not r.startswith("view_"):
                    continue
                cells = [_cell(next(x for x in locked if x["reader"] == r
                                    and x["mutation"] == m), trials) for m in MUTATIONS]
                lines.append(f"| `{r}` | " + " | ".join(cells) + " |")
            lines.append("")
        missing = [(r, facts["paths"][r.removeprefix("view_")][2]) for r in READERS
                   if r.startswith("view_") and not facts["paths"][r.removeprefix("view_")][0]]
        if missing:
            lines += ["Readers not run here (their path does not exist on this torch):", ""]
            lines += [f"- `{r}`: {why}" for r, why in missing]
            lines.append("")
        freed = "swap_tensors(t, u); del u"
        lines += [f"A handle whose tensor is freed under the reader (`{freed}`: the mutator "
                  "swaps a fresh tensor into `t` and drops the other, freeing the TensorImpl "
                  "the reader may have loaded), per path, without and with the lock:", ""]
        for r in FREED_READERS:
            if any(why for x, why in missing if x == r):
                lines.append(f"- `{r}`: not on torch {facts['torch']} (no owned shim)")
                continue
            plain = next(x for x in rows if x["reader"] == r and x["mutation"] == freed
                         and not x["locked"])
            held = next(x for x in rows if x["reader"] == r and x["mutation"] == freed
                        and x["locked"])
            lines.append(f"- `{r}`: without the lock {_cell(plain, trials)}; with it "
                         f"{_cell(held, trials)}")
        lines.append("")
        examples = [(x["reader"], x["mutation"], x["example"]) for x in rows if x["example"]]
        if examples:
            lines += ["Mixed reads, one example each (pointer, shape, strides; None: not "
                      "read by that reader):", ""]
            lines += [f"- `{r}` vs `{m}`: `{e}`" for r, m, e in examples]
            lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", action="append",
                        help="an interpreter with torch and this package (repeatable)")
    parser.add_argument("--render", metavar="JSON",
                        help="redo the report from a previous run's raw results")
    parser.add_argument("--out", default="proposal/findings/free-threaded.md",
                        help="the markdown report (default proposal/findings/free-threaded.md)")
    parser.add_argument("--trials", type=int, default=3,
                        help="children per reader x mutation pair (default 3)")
    parser.add_argument("--seconds", type=float, default=1.0,
                        help="how long each child races (default 1.0)")
    args = parser.parse_args(argv)
    if args.render:
        with open(args.render) as f:
            raw = json.load(f)
    elif not args.python:
        parser.error("--python is required (or --render)")
    else:
        raw = {"trials": args.trials, "seconds": args.seconds,
               "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
                   timespec="seconds"),
               "results": {}}
        for python in args.python:
            raw["results"][python] = survey(
                python, args.trials, args.seconds,
                lambda msg: print(msg, file=sys.stderr, flush=True))
        with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
            json.dump(raw, f, indent=1)
    text = render(raw["results"], raw["trials"], raw["seconds"], raw["date"])
    with open(args.out, "w") as f:
        f.write(text + "\n")
    print(text)
    print(f"\nwritten: {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
