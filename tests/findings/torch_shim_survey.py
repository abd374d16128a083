"""Feed the hostile-input catalogue to torch's own conversion functions and classify each outcome.

Each case goes to ``torch_tensor_from_pyobject`` and to torch's DLPack exchange functions
in a child process; an outcome is a crash, an error, or a handle judged against the
truth. ``make survey`` writes ``--out`` (``proposal/findings/torch-shim.md``); how each
outcome is judged: ``tests/findings/README.md``. Run as ``python -P -m
findings.torch_shim_survey`` with ``tests/`` on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys

from hostile import cases, subproc
from hostile import dlpack_exchange_repro as dlx  # ctypes only; no torch here

ROOT = os.path.dirname(subproc.TESTS)
#: The DLPack exchange repro, as its command names it (from the repository root).
REPRO = os.path.relpath(os.path.abspath(dlx.__file__), ROOT)

PRELUDE = '''import ctypes, os, torch
lib = ctypes.PyDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"),
                   mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
lib.torch_tensor_from_pyobject.argtypes = [ctypes.py_object, ctypes.POINTER(ctypes.c_void_p)]
handle = ctypes.c_void_p()'''


def classify(case, result, crash):
    """``(verdict, detail)`` for one case's outcome on one torch."""
    if crash is not None:
        return "crash", f"{subproc.describe_returncode(crash.returncode)} in `{crash.entry}`"
    if result is None:
        return "not run", ""
    if result["outcome"] == "error":
        return "error", result["message"]
    meta = result["meta"]
    truth = result.get("truth")
    codes = result["codes"]
    if case.group in ("non-tensor", "impostor"):
        if truth and meta.get("impl") == truth["impl"]:
            return "forged", "handle accepted; it aliases the victim tensor's TensorImpl"
        return "garbage", f"handle accepted for a non-tensor: {_summary(meta)}"
    if case.group == "control":
        ok = (truth and meta.get("data_ptr") == truth["ptr"] and meta.get("sizes") ==
              truth["shape"] and meta.get("strides") == truth["strides"])
        return ("correct", _summary(meta)) if ok else ("wrong", _summary(meta))
    failed = [k for k, v in meta.items() if isinstance(v, str) and v.startswith("error")]
    if meta.get("layout") != codes["aoti_torch_layout_strided"]:
        extra = f"; also returns strides {meta.get('strides')}" if "strides" not in failed \
            else ""
        return "detectable", f"layout code {meta.get('layout')} (not strided){extra}"
    if failed:
        return "detectable", "; ".join(f"get_{k}: {meta[k][7:]}" for k in failed)
    if meta.get("data_ptr") in (None, 0):
        return "misleading", (f"strided layout, data_ptr 0 with sizes {meta.get('sizes')}; "
                              f"{_storage(meta)}")
    fabricated = _fabricated(meta, codes)
    if fabricated:
        return "misleading", fabricated
    if case.name.startswith(("conj", "neg")):
        return "misleading", ("plain strided handle; no stable-ABI getter exposes the "
                              "conjugate / negative bit, so the values read are wrong")
    return "misleading", f"plain strided handle: {_summary(meta)}"


def _fabricated(meta, codes):
    """The detail for a data pointer that is exactly storage offset x itemsize, i.e. a
    null base plus the offset (a tensor with elements whose storage holds no memory);
    None otherwise. Itemsizes come from the runner's dtype-code table."""
    ptr, offset, sizes = meta.get("data_ptr"), meta.get("storage_offset"), meta.get("sizes")
    itemsize = codes.get("itemsize", {}).get(str(meta.get("dtype")))
    if not (isinstance(ptr, int) and isinstance(offset, int) and itemsize
            and isinstance(sizes, list) and all(sizes)):
        return None
    if (ptr - offset * itemsize) % 2**64:
        return None
    return (f"fabricated data_ptr {ptr:#x} = storage offset {offset} x itemsize {itemsize} "
            f"over a null base; {_storage(meta)}")


def _storage(meta):
    """What the storage getters say (neither tells a consumer the base is null)."""
    return (f"storage_size {meta.get('storage_size')}, "
            f"has_storage {meta.get('torch_has_storage')}")


def _summary(meta):
    keys = ("layout", "data_ptr", "sizes", "strides", "dtype", "device_type")
    return ", ".join(f"{k}={meta.get(k)}" for k in keys)


def survey(python, isolate):
    """Run every case on one interpreter; returns (torch version, {case: (verdict, detail)})."""
    names = [c.name for c in cases.CASES]
    outcomes = ([subproc.run_cases("torch-shim", [n], python=python) for n in names]
                if isolate else [subproc.run_cases("torch-shim", names, python=python)])
    verdicts, version = {}, None
    for out in outcomes:
        version = version or out.torch
        for case in cases.CASES:
            if case.name in out.unavailable:
                verdicts[case.name] = ("n/a", out.unavailable[case.name])
            elif case.name in out.build_errors:
                verdicts[case.name] = ("n/a", out.build_errors[case.name])
            elif case.name in out.crashes or out.results.get(case.name):
                res = (out.results.get(case.name) or [None])[-1]
                verdicts[case.name] = classify(case, res, out.crashes.get(case.name))
    return version, verdicts


# --- torch's DLPack C exchange on objects that claim torch.Tensor ---------------------------
def repro_command(python, function, name):
    """The command line that reproduces one outcome, from the repository root."""
    return " ".join([*subproc.interpreter_args(python), REPRO, function, name])


def crash_frames(python, function, name, frames=2):
    """The innermost ``frames`` native frames of a crashing repro, rerun under gdb:
    ``["function (library)", ...]``; ``[]`` without gdb or when gdb shows none."""
    gdb = shutil.which("gdb")
    if gdb is None:
        return []
    cmd = [gdb, "-nx", "-q", "-batch", "-iex", "set debuginfod enabled off",
           "-ex", "run", "-ex", f"bt {frames}", "--args",
           *subproc.interpreter_args(python), os.path.join(ROOT, REPRO), function, name]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return []
    found = []
    for line in proc.stdout.splitlines():
        m = re.match(r"#\d+\s+(?:0x[0-9a-f]+ in )?(.+?)(?: \(\))?(?: from (\S+))?$", line)
        if m:
            where = f" (`{os.path.basename(m.group(2))}`)" if m.group(2) else ""
            found.append(f"`{m.group(1)}`{where}")
    return found[:frames]


def dlpack_classify(name, rc, events, stderr):
    """``(verdict, detail)`` for one repro child: its return code and JSON events."""
    starts = [e for e in events if e["event"] == "start"]
    results = [e for e in events if e["event"] == "result"]
    if rc < 0:
        entry = starts[-1]["function"] if starts else "the repro, before the call"
        return "crashed", f"{subproc.describe_returncode(rc)} in `{entry}`"
    if not results:
        tail = " ".join(stderr.strip().splitlines()[-1:])
        return "not run", f"{subproc.describe_returncode(rc)}: {tail}"
    res = results[-1]
    if res["outcome"] == "absent":
        return "n/a", "the function pointer is NULL in this torch"
    if res["outcome"] == "raised":
        verdict = "wrong" if name == "tensor" else "error"
        return verdict, f"returned with a Python error set: {res['type']}: {res['message']}"
    fields, truth = res.get("fields"), res.get("truth")
    if res["rc"] != 0:
        return ("wrong" if name == "tensor" else "error (no exception)",
                f"rc {res['rc']} without a Python error set")
    if truth is None:
        return "accepted", f"rc 0 for a non-tensor: {_dl_summary(fields)}"
    ok = fields is not None and all(fields[k] == truth[k] for k in truth) and \
        fields["byte_offset"] == 0
    if ok:  # no address in the report: it would change with every run
        return "correct", (f"rc 0, data = `t.data_ptr()`, ndim {fields['ndim']}, shape "
                           f"{fields['shape']}, strides {fields['strides']}")
    return "wrong", f"{_dl_summary(fields)}; expected {truth}"


def _dl_summary(fields):
    if not fields:
        return "no DLTensor"
    return (f"rc 0, data {fields['data']:#x}, ndim {fields['ndim']}, shape {fields['shape']}, "
            f"strides {fields['strides']}")


def dlpack_survey(python):
    """Every repro function x input on one interpreter, each in a child of its own.

    Returns ``{"hello": the child's versions, "verdicts": {(function, input): (verdict,
    detail)}, "frames": {(function, input): [...]}, "commands": {...}}``.
    """
    out = {"hello": None, "verdicts": {}, "frames": {}, "commands": {}}
    for function in dlx.FUNCTIONS:
        for name in dlx.INPUTS:
            rc, stdout, stderr = subproc.run_python(script=os.path.join(ROOT, REPRO),
                                                    args=[function, name], python=python,
                                                    timeout=300)
            events = []
            for line in stdout.splitlines():
                try:
                    events.append(json.loads(line))
                except ValueError:
                    continue
            for ev in events:
                if ev["event"] == "hello":
                    out["hello"] = out["hello"] or ev
            key = (function, name)
            out["verdicts"][key] = dlpack_classify(name, rc, events, stderr)
            out["commands"][key] = repro_command(python, function, name)
            if rc < 0:
                out["frames"][key] = crash_frames(python, function, name)
    return out


def render_dlpack(surveys, catalogue=()):
    """The report's section on torch's DLPack exchange, for ``[(torch version, survey of
    ``dlpack_survey``), ...]``: the table, then one sentence per torch bug. The inputs
    that the catalogue has too get rows with ``torch_tensor_from_pyobject``'s verdicts
    from ``catalogue`` (``[(torch version, verdicts), ...]``), for contrast."""
    versions = [v for v, _ in surveys]
    lines = [
        "## torch's DLPack exchange on objects that claim torch.Tensor", "",
        "torch's DLPack C exchange functions, read from the PyCapsule "
        "`torch.Tensor.__dlpack_c_exchange_api__` (`\"dlpack_exchange_api\"`, a "
        "`DLPackExchangeAPI*`), called through `ctypes.PYFUNCTYPE` (GIL held) with `id(obj)`: "
        "`dltensor_from_py_object_no_sync` into a caller-owned DLTensor, "
        "`managed_tensor_from_py_object_no_sync` followed by the returned tensor's deleter. "
        f"The ctypes structures mirror each torch's installed `ATen/dlpack.h` and are "
        f"checked against it before the call. Each function x input ran in a child "
        f"process of its own (`{REPRO}`); a child that died was rerun under gdb for the "
        f"frames it died in.", "",
        "| function (input) | " + " | ".join(f"torch {v}" for v in versions) + " |",
        "|---|" + "---|" * len(versions)]
    for function, fname in dlx.FUNCTIONS.items():
        for name, make in dlx.INPUTS.items():
            cells = []
            for _, survey in surveys:
                verdict, detail = survey["verdicts"].get((function, name), ("not run", ""))
                detail = detail.replace("|", "\\|").replace("\n", " ")[:200]
                cells.append(f"**{verdict}**: {detail}" if detail else f"**{verdict}**")
            lines.append(f"| `{fname}` (`{name}`: {_md(inspect_doc(make))}) | " +
                         " | ".join(cells) + " |")
    shared = [c for c in cases.CASES if c.name in dlx.INPUTS]
    for case in shared if catalogue else ():
        cells = []
        for _, verdicts in catalogue:
            verdict, detail = verdicts.get(case.name, ("not run", ""))
            detail = detail.replace("|", "\\|").replace("\n", " ")[:200]
            cells.append(f"**{verdict}**: {detail}" if detail else f"**{verdict}**")
        lines.append(f"| for contrast, `torch_tensor_from_pyobject` (`{case.name}`, the "
                     f"catalogue's input above) | " + " | ".join(cells) + " |")
    lines.append("")
    bugs = []
    for version, survey in surveys:
        hello = survey["hello"] or {}
        build = (f"torch {version} (git {hello.get('git', '?')[:12]}), "
                 f"{hello.get('implementation', 'CPython')} {hello.get('python', '?')}, "
                 f"DLPack {hello.get('api_version', '?')}")
        for function, fname in dlx.FUNCTIONS.items():
            for kind in ("crashed", "accepted", "wrong", "error (no exception)"):
                names = [n for n in dlx.INPUTS
                         if survey["verdicts"].get((function, n), ("",))[0] == kind]
                if not names:
                    continue
                first = (function, names[0])
                what = {"crashed": "kills the process with " +
                        survey["verdicts"][first][1].split(" in ")[0],
                        "accepted": "returns 0 (a DLTensor) for a non-tensor",
                        "wrong": "describes a real tensor wrongly",
                        "error (no exception)": "fails without setting a Python error"}[kind]
                frames = survey["frames"].get(first) or []
                at = f" (innermost frames: {' <- '.join(frames)})" if frames else ""
                bugs.append(
                    f"- **torch bug**: `{fname}` of {build} {what} on "
                    f"{', '.join(f'`{n}`' for n in names)}{at}; repro `{REPRO}`, command "
                    f"`{survey['commands'][first]}`.")
    lines += bugs or ["No torch bug found on these inputs."]
    lines.append("")
    return lines


def inspect_doc(func):
    """A function's docstring on one line."""
    return " ".join((func.__doc__ or "").split())


def _md(text: str) -> str:
    """A docstring's reST literals (double backticks) as markdown code spans."""
    return text.replace("``", "`")


def render(surveys, dlpack=()):
    """The markdown report for ``[(torch version, verdicts), ...]``, with the DLPack
    exchange section for ``[(torch version, dlpack_survey(...)), ...]`` when given."""
    today = datetime.date.today().isoformat()
    versions = [v for v, _ in surveys]
    lines = [
        "# torch's own `torch_tensor_from_pyobject` on hostile inputs",
        "",
        f"Generated by `tests/findings/torch_shim_survey.py` (`make survey`) on {today}: "
        f"torch {', '.join(versions)}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.machine()}. Do not edit by hand.",
        "",
        "Each input of `tests/hostile/cases.py` went to `torch_tensor_from_pyobject` "
        "called directly (`ctypes.PyDLL` on `libtorch_cpu.so`, GIL held) in a child "
        "process; a returned handle was read with the `aoti_torch_get_*` getters (and "
        "`torch_has_storage`) and deleted with `aoti_torch_delete_tensor_object`.",
        "",
        "A tensor with elements whose storage holds no memory (freed with "
        "`untyped_storage().resize_(0)`, or a placeholder) gets from "
        "`aoti_torch_get_data_ptr` the null base plus storage offset x itemsize: a "
        "**fabricated** address where the offset is not 0. The rows below say what the "
        "other getters report for it; the bridge refuses such a tensor when "
        "`data_ptr - storage_offset * itemsize` is 0.",
        "",
        "Verdicts: **crash** (the process died), **forged** / **garbage** (a handle for a "
        "non-tensor), **misleading** (a plain strided handle for a tensor whose memory "
        "a pointer + strides reader gets wrong), **detectable** (a handle whose layout "
        "or a getter's error tells the consumer), **error** (rc 1 with a message), "
        "**correct** (controls), **n/a** (this torch cannot build the input).",
        "",
    ]
    if dlpack:
        lines += ["The last table is torch's DLPack C exchange functions on a tensor and on "
                  "objects that claim `torch.Tensor`, with the torch bugs they show.", ""]
    counts = []
    for version, verdicts in surveys:
        tally = {}
        for verdict, _ in verdicts.values():
            tally[verdict] = tally.get(verdict, 0) + 1
        counts.append(f"- torch {version}: {len(verdicts)} inputs: " +
                      ", ".join(f"{n} {v}" for v, n in sorted(tally.items())))
    lines += ["## Summary", "", *counts, ""]
    for group, title in cases.GROUPS.items():
        lines += [f"## {title[0].upper()}{title[1:]}", "",
                  "| input | " + " | ".join(f"torch {v}" for v in versions) + " |",
                  "|---|" + "---|" * len(versions)]
        for case in [c for c in cases.CASES if c.group == group]:
            cells = []
            for _, verdicts in surveys:
                verdict, detail = verdicts.get(case.name, ("not run", ""))
                detail = detail.replace("|", "\\|").replace("\n", " ")[:160]
                cells.append(f"**{verdict}**: {detail}" if detail else f"**{verdict}**")
            lines.append(f"| `{case.name}`: {_md(case.doc)} | " + " | ".join(cells) + " |")
        lines.append("")
    if dlpack:
        lines += render_dlpack(dlpack, surveys)
    bad = [c for c in cases.CASES
           if any(v.get(c.name, ("",))[0] in ("crash", "forged", "garbage", "misleading")
                  for _, v in surveys)]
    lines += ["## Minimal reproductions", "",
              "Every input above whose verdict is crash, forged, garbage or misleading on "
              "some version; each runs as is after the prelude:", "", "```python",
              PRELUDE, "```", ""]
    for case in bad:
        call = ("obj = " + case.name + "(torch)" if case.run.__qualname__.startswith("obj_case")
                else None)
        lines += [f"### `{case.name}`", "", _md(case.doc), "", "```python", case.snippet]
        if call:
            lines += [call, "rc = lib.torch_tensor_from_pyobject(obj, ctypes.byref(handle))"]
        else:
            lines += ["# run it with consume = lambda obj, truth: "
                      "lib.torch_tensor_from_pyobject(obj, ctypes.byref(handle))"]
        lines += ["```", ""]
    return "\n".join(lines)


def main(argv=None):
    """Survey each ``--python`` interpreter and write the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="append", required=True,
                        help="a torch environment's interpreter (repeat for several)")
    parser.add_argument("--out", default="proposal/findings/torch-shim.md")
    parser.add_argument("--isolate", action="store_true",
                        help="one child process per case (slower, no shared state)")
    args = parser.parse_args(argv)
    surveys, dlpack = [], []
    for python in args.python:
        version, verdicts = survey(python, args.isolate)
        print(f"torch {version}: {len(verdicts)} inputs surveyed", file=sys.stderr)
        surveys.append((version, verdicts))
        exchange = dlpack_survey(python)
        print(f"torch {version}: DLPack exchange: {len(exchange['verdicts'])} calls",
              file=sys.stderr)
        dlpack.append((version, exchange))
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        f.write(render(surveys, dlpack) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
