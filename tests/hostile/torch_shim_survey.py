"""Feed the hostile-input catalogue to torch's own ``torch_tensor_from_pyobject``.

For each torch interpreter given (``--python``), every case of ``cases.py`` goes to
``runner.py --target torch-shim`` in a child process (batched; a crash ends only its
child, and a new one resumes after the crashing case; ``--isolate`` gives each case a
child of its own). Each outcome is classified:

- crash: the child died (the signal, and the call it died in);
- error: rc 1 and torch's message (the clean outcome for a non-tensor);
- handle: rc 0, then what the stable ABI's getters said about the handle, judged
  against the truth: a correct handle for a control, a forged one for a non-tensor,
  and for a tensor without a pointer + strides description whether a consumer that
  reads the getters can tell (layout, data pointer error) or gets plain-looking
  metadata (conjugate / negative bits, null data pointer with elements, a data
  pointer fabricated from a null base and the storage offset).

Writes the markdown report (``--out``), with the torch versions and the date.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from hostile import cases, subproc  # noqa: E402

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


def _md(text: str) -> str:
    """A docstring's reST literals (double backticks) as markdown code spans."""
    return text.replace("``", "`")


def render(surveys):
    """The markdown report for ``[(torch version, verdicts), ...]``."""
    today = datetime.date.today().isoformat()
    versions = [v for v, _ in surveys]
    lines = [
        "# torch's own `torch_tensor_from_pyobject` on hostile inputs",
        "",
        f"Generated by `tests/hostile/torch_shim_survey.py` (`make survey`) on {today}: "
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
    parser.add_argument("--out", default="proposal/findings-torch-shim.md")
    parser.add_argument("--isolate", action="store_true",
                        help="one child process per case (slower, no shared state)")
    args = parser.parse_args(argv)
    surveys = []
    for python in args.python:
        version, verdicts = survey(python, args.isolate)
        print(f"torch {version}: {len(verdicts)} inputs surveyed", file=sys.stderr)
        surveys.append((version, verdicts))
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        f.write(render(surveys) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
