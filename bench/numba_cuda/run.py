"""numba-cuda's launch cost with torch arguments, per route (needs a CUDA device).

    python -P -m bench.numba_cuda.run --out DIR [--quick] [--processes K --rounds R]
                                      [--suite-passes K]

with ``bench`` importable (a make environment, or the GPU script's ``PYTHONPATH``). Writes
``numba-cuda-gpu-<gpu>-torch-<v>.{json,md}`` into DIR. Steps, each printed as it runs:
checks (every route's view equals cuda.core's; a kernel's writes through every argument
land; the route's counter equals the views numba-cuda asked for), attribution (where a
torch argument's launch cost goes, per argument, against a numba device array), the
in-process A/B (every route interleaved round by round with ``protocol.measure``; with
``--processes K`` the checks, attribution and A/B run in K fresh processes, each its own
order seed, their rounds pooled and each process's own median kept), then
numba-cuda's own ``tests/benchmarks/test_kernel_launch.py`` (copied out of the
installed package: pytest does not collect it with ``--pyargs``) and its tests that take
torch tensors, once per route in a fresh process through ``router_plugin``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import shutil
import string
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from statistics import median
from bench.native import torch_version

NAMES = string.ascii_lowercase  # 26 arguments, as numba-cuda's benchmark
CASES = [(1, "dispatch"), (1, "signature"), (26, "dispatch"), (26, "signature")]


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def kernels(cuda, arity: int):
    """``{"dispatch": k, "signature": k}``: an empty kernel of ``arity`` 1-D float32
    arguments, as a ``cuda.jit`` dispatcher and compiled for the explicit signature."""
    names = NAMES[:arity]
    ns = {}
    exec(f"def empty({', '.join(names)}):\n    return\n", ns)
    sig = "void({})".format(", ".join(["float32[::1]"] * arity))
    return {"dispatch": cuda.jit(ns["empty"]), "signature": cuda.jit(sig)(ns["empty"])}


def write_kernel(cuda, arity: int):
    """A ``cuda.jit`` kernel that stores ``base + 1000 * j + i`` at ``[i]`` of argument ``j``."""
    names = NAMES[:arity]
    body = "".join(f"    if _i < {n}.size:\n        {n}[_i] = _base + {1000 * j} + _i\n"
                   for j, n in enumerate(names))
    ns = {}
    exec(f"def write(_base, {', '.join(names)}):\n    _i = cuda.grid(1)\n{body}", {"cuda": cuda}, ns)
    return cuda.jit(ns["write"])


def check(torch, cuda, router) -> dict:
    """Views equal, writes land, counter exact on every route; returns what was checked."""
    t = torch.arange(24, dtype=torch.float32, device="cuda")
    tensors = [t, t.view(4, 6), t.view(4, 6)[:, 1::2], t.view(4, 6).t(),
               torch.empty(0, device="cuda"), torch.zeros(3, 5, dtype=torch.float64,
                                                           device="cuda")[1:]]
    router.check(tensors)
    done = {"views_equal": {"routes": router.routes[1:], "tensors": len(tensors),
                            "streams": [-1, 0]}}
    writes = {}
    for arity in (1, 26):
        w = write_kernel(cuda, arity)
        for route in router.routes:
            router.use(route)
            args = [torch.zeros(130, dtype=torch.float32, device="cuda") for _ in range(arity)]
            before = router.counts.get(route, 0)
            w[2, 128](7, *args)
            torch.cuda.synchronize()
            for j, a in enumerate(args):
                want = 7 + 1000 * j + torch.arange(130, dtype=torch.float32, device="cuda")
                assert torch.equal(a, want), f"{route}: argument {j} of {arity}: writes missing"
            writes[f"{route}/{arity}"] = router.counts.get(route, 0) - before
    done["writes_landed"] = sorted(writes)
    counts = {}
    for arity, jit in CASES:
        k = kernels(cuda, arity)[jit][128, 128]
        args = [torch.empty(128, dtype=torch.float32, device="cuda") for _ in range(arity)]
        k(*args)  # compiles the dispatcher's overload
        for route in router.routes[1:]:
            router.use(route)
            before = router.counts[route]
            for _ in range(10):
                k(*args)
            got = router.counts[route] - before
            per_arg = 2 if jit == "dispatch" else 1  # typing + argument preparation
            counts[f"{route}/{arity}/{jit}"] = {"views": got, "expected": 10 * arity * per_arg}
    router.use("shipped")
    torch.cuda.synchronize()
    done["views_per_10_launches"] = counts
    return done


def stats(samples, ref=None, counts=None) -> dict:
    """Median / best / stdev of per-round ns; with ``ref``, the paired per-round ratio's
    median and its 95% percentile-bootstrap interval (``proposal.stats.median_ci``, the
    reports' and the RFC's; none with fewer than 3 rounds or no spread), or its range
    where scipy is missing. With ``counts`` (rounds per fresh process, the samples pooled
    in process order) of two or more processes, each process's own median
    (``process_medians_ns``) and, with ``ref``, its own median ratio
    (``ratio_by_process``)."""
    import numpy as np

    a = np.asarray(samples, float)
    out = {"median_ns": float(np.median(a)), "best_ns": float(a.min()),
           "stdev_ns": float(a.std(ddof=1)) if len(a) > 1 else 0.0, "rounds": len(a)}
    edges = None
    if counts and len(counts) > 1:
        if sum(counts) != len(a):
            raise ValueError(f"{len(a)} rounds, but the processes' counts add up to "
                             f"{sum(counts)}")
        edges = np.cumsum([0] + list(counts))
    if edges is not None:
        out["process_medians_ns"] = [float(np.median(a[x:y]))
                                     for x, y in zip(edges[:-1], edges[1:])]
    if ref is not None:
        r = a / np.asarray(ref, float)
        out["ratio_median"] = float(np.median(r))
        if edges is not None:
            out["ratio_by_process"] = [float(np.median(r[x:y]))
                                       for x, y in zip(edges[:-1], edges[1:])]
        from proposal.stats import median_ci

        try:
            _, low, high = median_ci(r)
        except ImportError:  # no scipy where this runs
            out["ratio_range"] = [float(r.min()), float(r.max())]
        else:
            if not np.isnan(low):
                out["ratio_ci"] = [low, high]
    return out


def attribution(torch, cuda, router, rounds: int, calls: int) -> dict:
    """Where a torch argument's launch cost goes, per argument (ns), on ``shipped``: the
    raw rounds, ``{"samples_ns": {contender: [ns per call]}, "parts": [...],
    "route_parts": [...], "errors": {part: why it could not run}}`` (``attribution_table``
    summarises them)."""
    from bench import protocol as interleave
    from numba.cuda.cudadrv.devicearray import _to_strided_memory_view
    from numba.cuda.typing.typeof import Purpose, typeof

    router.use("shipped")
    t = torch.empty(128, dtype=torch.float32, device="cuda")
    d = cuda.device_array(128, dtype="float32")
    sig = kernels(cuda, 1)["signature"]
    cfg = sig[128, 128]
    cfg(t)
    kern = next(iter(sig.overloads.values()))
    ty = kern.argument_types[0]
    stream = cfg.stream
    handle = getattr(stream, "handle", stream)
    ns = {"t": t, "d": d, "typeof": typeof, "P": Purpose.argument, "tsmv":
          _to_strided_memory_view, "S": stream, "H": handle, "smv": router.smv,
          "prep": kern._prepare_args, "ty": ty}
    parts = {
        "typing (dispatch only): typeof(x)": ("typeof(t, P)", "typeof(d, P)"),
        "argument view: _to_strided_memory_view(x, stream)": ("tsmv(t, stream=S)",
                                                              "tsmv(d, stream=S)"),
        "argument preparation: _Kernel._prepare_args": ("prep(ty, t, S, [], [])",
                                                        "prep(ty, d, S, [], [])"),
    }
    import numpy as np
    from numba.cuda import types
    from numba.cuda.cudadrv import driver as _driver
    from numba.cuda.dispatcher import _LAUNCH_CONFIG_KW, _dispatcher
    from numba.cuda.np import numpy_support
    from numba.cuda.typing import typeof as typeof_module

    disp = kernels(cuda, 1)["dispatch"]
    dcfg = disp[128, 128]
    dcfg(t)
    ns.update(ctx=typeof_module._TypeofContext(Purpose.argument),
              tdl=typeof_module._typeof_dlpack, sup=numpy_support, f32=np.dtype("float32"),
              types=types, drv=_driver, disp=disp, call=_dispatcher.Dispatcher._cuda_call,
              kw={_LAUNCH_CONFIG_KW: dcfg}, dv=router.smv.from_dlpack(t, stream_ptr=-1))
    # The pieces inside the parts above, on the torch argument (numba-cuda 0.30's code).
    parts["overload selection (dispatch only): Dispatcher._cuda_call"] = (
        "call(disp, t, **kw)", "call(disp, d, **kw)")
    route_parts = {
        "  typing: getattr(x, '_numba_type_', None) (absent on a tensor)":
            "getattr(t, '_numba_type_', None)",
        "  typing: getattr(x, '__dlpack__', None) (a bound method)": "getattr(t, '__dlpack__', None)",
        "  typing: _typeof_dlpack(x.__dlpack__)": "tdl(t.__dlpack__, ctx)",
        "  typing: a new view's .dtype (resolved lazily)":
            "smv.from_dlpack(t, stream_ptr=-1).dtype",
        "  typing: numpy_support.from_dtype(float32)": "sup.from_dtype(f32)",
        "  typing: types.Array(float32, 1, 'C')": "types.Array(types.float32, 1, 'C', readonly=False)",
        "  view: drv.is_device_memory(x)": "drv.is_device_memory(t)",
        "  view: getattr(x.dtype, 'type', None) (absent on torch.dtype)":
            "getattr(t.dtype, 'type', None)",
        "  preparation: size, itemsize, ptr, shape, strides of a view":
            "(dv.size, dv.dtype.itemsize, dv.ptr, dv.shape, dv._layout.strides_in_bytes)",
        "cuda.core view, stream_ptr=-1 (typing's)": "smv.from_dlpack(t, stream_ptr=-1)",
        "cuda.core view, launch stream (preparation's)": "smv.from_dlpack(t, stream_ptr=H)"}
    # Each route's bare view, timed with its context held (the interpreter fix installed
    # for owned + fix), as the A/B runs it.
    timed = getattr(router.consumer, "timed", None)
    held = {}
    for r in router.routes[2:]:
        view, held[f"view on route {r}"] = (timed(r) if timed is not None else
                                            (router.consumer.viewer(r), contextlib.nullcontext))
        ns[f"v_{r}"] = view
        route_parts[f"view on route {r}"] = f"v_{r}(t)"
    def runs(stmt):  # a statement this numba-cuda cannot run is said, not timed
        try:
            eval(stmt, ns)
            return None
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"

    contenders, errors = [], {}
    for name, (tstmt, dstmt) in list(parts.items()):
        err = runs(tstmt) or runs(dstmt)
        if err:
            errors[name], _ = err, parts.pop(name)
            continue
        contenders += [interleave.statement(f"{name} | torch", tstmt, ns),
                       interleave.statement(f"{name} | device_array", dstmt, ns)]
    for name, stmt in list(route_parts.items()):
        err = runs(stmt)
        if err:
            errors[name], _ = err, route_parts.pop(name)
            continue
        c = interleave.statement(name, stmt, ns)
        if name in held:
            def run(n, _run=c.run, _held=held[name]):
                with _held():
                    return _run(n)

            c = interleave.Contender(name, run)
        contenders.append(c)
    samples = interleave.measure(contenders, rounds, calls, warmup=calls)
    torch.cuda.synchronize()
    return {"samples_ns": samples, "parts": list(parts), "route_parts": list(route_parts),
            "errors": errors}


def attribution_table(raw: dict, counts=None) -> dict:
    """``{part: {"torch": stats, "device_array": stats, "torch_minus_device_array_ns"}}``
    (route parts: ``torch`` alone; a part that could not run: ``{"error": why}``) from
    ``attribution``'s raw rounds, ``counts`` rounds per process as ``stats`` takes them."""
    import numpy as np

    samples = raw["samples_ns"]
    out = {name: {"error": why} for name, why in raw["errors"].items()}
    for name in raw["parts"]:
        tt, dd = samples[f"{name} | torch"], samples[f"{name} | device_array"]
        out[name] = {"torch": stats(tt, counts=counts), "device_array": stats(dd, counts=counts),
                     "torch_minus_device_array_ns": float(np.median(np.subtract(tt, dd)))}
    for name in raw["route_parts"]:
        out[name] = {"torch": stats(samples[name], counts=counts)}
    return out


def ab(torch, cuda, router, rounds: int, calls: dict) -> dict:
    """Every route and a device-array baseline, per case, interleaved round by round in
    this process; the raw rounds, ``{"samples_ns": {"<arity>/<jit>/<route>": [ns per
    launch]}, "routes": [...]}`` (``ab_table`` summarises them)."""
    from bench import protocol as interleave

    contenders = []
    for arity, jit in CASES:
        cfg = kernels(cuda, arity)[jit][128, 128]
        tens = [torch.empty(128, dtype=torch.float32, device="cuda") for _ in range(arity)]
        devs = [cuda.device_array(128, dtype="float32") for _ in range(arity)]
        cfg(*tens)
        cfg(*devs)
        for route in router.routes + ["device_array"]:
            args = devs if route == "device_array" else tens

            def run(n, route=route, args=args, cfg=cfg):
                router.use("shipped" if route == "device_array" else route)
                torch.cuda.synchronize()
                t0 = time.perf_counter_ns()
                for _ in range(n):
                    cfg(*args)
                dt = time.perf_counter_ns() - t0
                return dt / n

            contenders.append(interleave.Contender(f"{arity}/{jit}/{route}", run))
    # Every contender of a case sees the same calls; the 26-argument ones fewer per round.
    by_case = {}
    for c in contenders:
        arity = int(c.name.split("/")[0])
        by_case.setdefault(arity, []).append(c)
    samples = {}
    for arity, cs in by_case.items():
        samples.update(interleave.measure(cs, rounds, calls[arity], warmup=calls[arity]))
    router.use("shipped")
    return {"samples_ns": samples, "routes": router.routes + ["device_array"]}


def ab_table(raw: dict, counts=None) -> dict:
    """``{"<arity>/<jit>": {route: stats against the borrow, "vs_shipped": stats against
    the route as shipped, "per_argument_over_device_array_ns"}}`` from ``ab``'s raw
    rounds, ``counts`` rounds per process as ``stats`` takes them."""
    import numpy as np

    samples = raw["samples_ns"]
    out = {}
    for arity, jit in CASES:
        case = f"{arity}/{jit}"
        ref = samples.get(f"{case}/borrow")
        base = np.asarray(samples[f"{case}/device_array"])
        rows = {}
        for route in raw["routes"]:
            s = samples[f"{case}/{route}"]
            rows[route] = stats(s, ref, counts)
            rows[route]["vs_shipped"] = stats(s, samples[f"{case}/shipped"])
            rows[route]["per_argument_over_device_array_ns"] = float(
                np.median((np.asarray(s) - base) / arity))
        out[case] = rows
    return out


def merge_raw(parts: list[dict]) -> dict:
    """One ``attribution`` / ``ab`` raw result from several processes' (the same
    contenders): every contender's rounds concatenated in process order. Raises
    ``ValueError`` when the processes timed other contenders."""
    from bench import processes

    return {**parts[0], "samples_ns": processes.pool_rounds([p["samples_ns"] for p in parts])}


def numba_file(name: str) -> pathlib.Path:
    import numba.cuda

    return pathlib.Path(numba.cuda.__file__).parent / name


def torch_test_files() -> list[pathlib.Path]:
    """numba-cuda's test modules that use torch tensors (benchmarks left out)."""
    root = numba_file("tests")
    def uses_torch(p):
        text = p.read_text(errors="ignore")
        return "import torch" in text or 'importorskip("torch")' in text

    return sorted(p for p in root.rglob("test_*.py")
                  if "benchmarks" not in p.parts and uses_torch(p))


def pytest_route(route: str, args: list[str], tmp: pathlib.Path, cwd=None) -> dict:
    """One fresh pytest process on ``route`` (the plugin); its junit counts and views."""
    counts, junit = tmp / f"counts-{route}.json", tmp / f"junit-{route}.xml"
    env = dict(os.environ, TORCH_BORROW_NUMBA_ROUTE=route,
               TORCH_BORROW_NUMBA_COUNTS=str(counts))
    cmd = [sys.executable, "-P", "-m", "pytest", "-p", "bench.numba_cuda.router_plugin", "-p",
           "no:cacheprovider", "-q", "-rs", f"--junitxml={junit}", *args]
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
    res = {"returncode": proc.returncode, "tail": tail}
    if junit.exists():
        suite = ET.parse(junit).getroot()
        suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
        res.update({k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")})
    if counts.exists():
        res["views"] = json.loads(counts.read_text())["views"]
    return res


#: The benchmark file's tests the appendix tabulates, re-run in every further pass.
SUITE_SELECT = "test_many_args and signature and (torch or device_array)"
SUITE_PAIR = ("test_many_args[signature-torch]", "test_many_args[signature-device_array]")


def numba_suite(router, quick: bool, tmp: pathlib.Path, passes: int = 1) -> dict:
    """numba-cuda's launch benchmark file and its torch tests, once per route, each in a
    fresh process; with ``passes`` > 1, ``SUITE_SELECT``'s two tests again in ``passes - 1``
    further fresh processes per route (the routes' order rotated per pass), so each
    route's torch / device-array ratio comes from ``passes`` processes
    (``benchmark[route]["pair_by_process"]``: per pass ``[torch ns, device-array ns]``)."""
    bench_src = numba_file("tests/benchmarks/test_kernel_launch.py")
    copy = tmp / "test_kernel_launch.py"
    shutil.copy(bench_src, copy)
    out = {"benchmark_file": str(bench_src), "benchmark": {}, "tests": {},
           "test_files": [str(p) for p in torch_test_files()], "passes": passes}

    def results(js):
        return {b["name"]: {"median_ns": b["stats"]["median"] * 1e9,
                            "min_ns": b["stats"]["min"] * 1e9,
                            "stddev_ns": b["stats"]["stddev"] * 1e9,
                            "rounds": b["stats"]["rounds"]}
                for b in json.loads(js.read_text())["benchmarks"]} if js.exists() else {}

    routes = list(router.routes)
    for k in range(passes):
        for route in routes[k % len(routes):] + routes[:k % len(routes)]:
            say(f"numba-cuda's test_kernel_launch.py on route {route}"
                + (f" (pass {k + 1} of {passes}: {SUITE_SELECT})" if k else ""))
            js = tmp / f"bench-{route}-{k}.json"
            opts = ["--benchmark-disable"] if quick else [f"--benchmark-json={js}",
                                                         "--benchmark-min-rounds=20"]
            if k:
                opts += ["-k", SUITE_SELECT]
            res = pytest_route(route, [str(copy), *opts], tmp, cwd=tmp)
            got = results(js)
            if k == 0:
                res["results"] = got
                out["benchmark"][route] = res
                if out["test_files"]:
                    say(f"numba-cuda's torch tests on route {route}")
                    out["tests"][route] = pytest_route(route, out["test_files"], tmp, cwd=tmp)
            elif res["returncode"]:  # a later pass's failure fails the route
                out["benchmark"][route]["returncode"] = res["returncode"]
                out["benchmark"][route].setdefault("later_failures", []).append(res["tail"])
            if all(n in got for n in SUITE_PAIR):
                out["benchmark"][route].setdefault("pair_by_process", []).append(
                    [got[n]["median_ns"] for n in SUITE_PAIR])
    return out


def where(r: dict) -> str:
    """How the A/B's and the attribution's rounds were taken, in words."""
    counts = r.get("process_rounds") or []
    if len(counts) > 1:
        return (f"{len(counts)} fresh processes x {counts[0]} interleaved rounds each, the "
                "contenders' starting order shuffled per process, rounds pooled")
    return "one process, interleaved"


def spread(values, unit: str = "x") -> str:
    """``"lo .. hi (k processes)"`` of per-process figures; "" from one process."""
    if not values:
        return ""
    return f"{min(values):.4f}{unit} .. {max(values):.4f}{unit} ({len(values)} processes)"


def markdown(r: dict) -> str:
    """The section the RFC's numba-cuda row renders from (also saved as .md)."""
    lines = [f"# numba-cuda launches with torch arguments, per route", "",
             f"numba-cuda {r['versions']['numba-cuda']}, cuda-core {r['versions']['cuda-core']}, "
             f"torch {r['versions']['torch']}, CPython {r['versions']['python']}, "
             f"{r['gpu']}; {'quick run, no evidence' if r['quick'] else where(r)}.",
             "", "Routes:", ""]
    lines += [f"- `{k}`: {v}" for k, v in r["labels"].items()]
    c = r["checks"]
    lines += ["", "## Checks", ""]
    if "failed" in c:
        lines.append(f"- FAILED: {c['failed']}")
    else:
        v = c["views_equal"]
        lines.append(f"- every rebound route's view equals cuda.core's field by field: routes "
                     f"{', '.join(v['routes'])}; {v['tensors']} tensors; stream_ptr "
                     f"{v['streams']}")
        lines.append(f"- a kernel's writes through every argument landed (1 and 26 "
                     f"arguments): {', '.join(c['writes_landed'])}")
        lines.append("- views counted per 10 launches (route/arguments/jit: counted of "
                     "expected): " + "; ".join(f"{k} {x['views']}/{x['expected']}"
                                              for k, x in c["views_per_10_launches"].items()))
    lines += [f"- FAILED: {f}" for f in r.get("failures", [])]
    lines += ["", "## In-process A/B, ns per launch (median over rounds)", "",
              "| case | route | median | best | stdev | / borrow [95%] | per process: / borrow | "
              "per argument over device_array |", "|---|---|---:|---:|---:|---|---|---:|"]
    for case, rows in r["ab"].items():
        for route, s in rows.items():
            ci = s.get("ratio_ci") or s.get("ratio_range")
            rb = (f"{s['ratio_median']:.4f}x" + (f" [{ci[0]:.4f}, {ci[1]:.4f}]" if ci else "")
                  if "ratio_median" in s else "")
            lines.append(f"| {case} | {route} | {s['median_ns']:.0f} | {s['best_ns']:.0f} | "
                         f"{s['stdev_ns']:.0f} | {rb} | {spread(s.get('ratio_by_process'))} | "
                         f"{s['per_argument_over_device_array_ns']:.0f} |")
    lines += ["", "## Attribution per torch argument (shipped route), ns", "",
              "| part | torch | device_array | torch - device_array |", "|---|---:|---:|---:|"]
    for name, s in r["attribution"].items():
        dd = s.get("device_array")
        if "error" in s:
            lines.append(f"| {name} | not run: {s['error']} | | |")
        elif dd is None:
            lines.append(f"| {name} | {s['torch']['median_ns']:.0f} | | |")
        else:
            lines.append(f"| {name} | {s['torch']['median_ns']:.0f} | {dd['median_ns']:.0f} | "
                         f"{s['torch_minus_device_array_ns']:.0f} |")
    suite = r.get("numba")
    if suite:
        lines += ["", "## numba-cuda's own benchmark (test_kernel_launch.py), median us per launch",
                  ""]
        routes = list(suite["benchmark"])
        names = sorted({n for v in suite["benchmark"].values() for n in v.get("results", {})})
        lines += ["| test | " + " | ".join(routes) + " |", "|---|" + "---:|" * len(routes)]
        for n in names:
            cells = [f"{suite['benchmark'][rt].get('results', {}).get(n, {}).get('median_ns', float('nan')) / 1e3:.2f}"
                     for rt in routes]
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
        lines += ["", "| route | benchmark file (passed / tests) | torch tests (failures+errors / tests) | views counted |",
                  "|---|---|---|---|"]
        for rt in routes:
            b, t = suite["benchmark"][rt], suite["tests"].get(rt, {})
            lines.append(f"| {rt} | rc {b['returncode']}, {b.get('tests', '?')} tests | "
                         f"{t.get('failures', 0) + t.get('errors', 0) if t else '-'} / {t.get('tests', '-')} | "
                         f"{b.get('views', '-')} / {t.get('views', '-')} |")
        pairs = {rt: suite["benchmark"][rt].get("pair_by_process") or [] for rt in routes}
        if any(len(v) > 1 for v in pairs.values()):
            lines += ["", f"26 arguments with a signature, torch / device arrays of the same "
                      f"process, from {suite.get('passes')} fresh processes per route (the "
                      "first the whole file, then its two tests alone; the routes' order "
                      "rotated per pass): median of the processes' ratios (their range)", "",
                      "| route | torch, us | device arrays, us | torch / device arrays |",
                      "|---|---:|---:|---|"]
            for rt, v in pairs.items():
                if v:
                    ratio = [t / d for t, d in v]
                    lines.append(f"| {rt} | {median([t for t, _ in v]) / 1e3:.1f} | "
                                 f"{median([d for _, d in v]) / 1e3:.1f} | "
                                 f"{median(ratio):.2f}x ({min(ratio):.2f}x .. "
                                 f"{max(ratio):.2f}x) |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=pathlib.Path, default=pathlib.Path("build/gpu-out"))
    p.add_argument("--quick", action="store_true", help="a few rounds: checks that it runs")
    p.add_argument("--no-suite", action="store_true",
                   help="skip numba-cuda's own benchmark file and tests")
    p.add_argument("--stem", help="file name stem instead of numba-cuda-gpu-<gpu>-torch-<v>")
    p.add_argument("--suite-passes", type=int, default=1,
                   help="fresh processes per route for numba-cuda's own benchmark file "
                   "(default 1; K > 1: the whole file once, then its two tabulated tests "
                   "K - 1 more times, about 11 s per route and pass)")
    from bench import processes

    processes.add_process_options(p, "60; quick: 3")
    a = p.parse_args(argv)
    processes.check_process_options(p, a)
    if a.suite_passes < 1:
        p.error("--suite-passes must be at least 1")
    import platform

    # The write check launches 2 blocks; numba-cuda's low-occupancy warning says nothing here.
    os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
    import torch
    from importlib import metadata
    from numba import cuda

    from bench.numba_cuda import router as numba_router

    say("router: building the consumer's routes for CUDA tensors")
    router = numba_router.Router(torch)
    gpu = torch.cuda.get_device_name(0)
    short = "".join(c for c in gpu.split()[-1].lower() if c.isalnum() or c in "-_.")
    stem = a.stem or f"numba-cuda-gpu-{short}-torch-{torch_version(torch)}"
    r = {"quick": a.quick, "gpu": gpu, "labels": router.labels,
         "versions": {"torch": torch.__version__, "python": platform.python_version(),
                      **{d: metadata.version(d) for d in ("numba-cuda", "cuda-core", "numpy")}}}
    failures = []
    rounds = a.rounds or (3 if a.quick else 60)
    if a.processes > 1:
        # checks, attribution and the A/B in fresh processes, each its own order seed;
        # their rounds pooled, each process's own median kept (numba-cuda's suite below
        # runs a fresh process per route anyway).
        rc, paths, seeds = processes.fresh_processes(
            "bench.numba_cuda.run", a.processes, stem, ["--no-suite", f"--rounds={rounds}"],
            a.order_seed)
        if rc:
            return rc
        kids = [json.loads(path.read_text()) for path in paths]
        r["checks"], r["counts"] = kids[0]["checks"], kids[0].get("counts")
        failures += [f"process {k}: {f}" for k, kid in enumerate(kids)
                     for f in kid.get("failures", [])]
        raw = {part: merge_raw([kid["raw"][part] for kid in kids])
               for part in ("attribution", "ab")}
        r["processes"] = [{"order_seed": seed} for seed in seeds]
        r["process_rounds"] = [n for kid in kids for n in kid["process_rounds"]]
    else:
        say("checks: views equal cuda.core's, writes land, counters exact")
        try:
            r["checks"] = check(torch, cuda, router)
        except AssertionError as exc:  # said, saved, and the run goes on to its figures
            r["checks"] = {"failed": str(exc)}
            failures.append(f"checks: {exc}")
        miscounted = {k: v for k, v in r["checks"].get("views_per_10_launches", {}).items()
                      if v["views"] != v["expected"]}
        if miscounted:
            failures.append(f"view counts differ from the launches' arguments: {miscounted}")
        say(f"attribution ({rounds} rounds)")
        raw = {"attribution": attribution(torch, cuda, router, rounds,
                                          200 if a.quick else 2000)}
        say(f"in-process A/B ({rounds} rounds)")
        raw["ab"] = ab(torch, cuda, router, rounds, {1: 50 if a.quick else 400,
                                                     26: 10 if a.quick else 60})
        r["counts"] = dict(router.counts)
        r["process_rounds"] = [rounds]
    counts = r["process_rounds"]
    r["attribution"] = attribution_table(raw["attribution"], counts)
    r["ab"] = ab_table(raw["ab"], counts)
    r["raw"] = raw
    a.out.mkdir(parents=True, exist_ok=True)
    if a.process_only:  # a failed check is the parent's to report, with the figures
        r["failures"] = failures
        (a.out / f"{stem}.json").write_text(json.dumps(r, indent=1) + "\n")
        return 0
    if not a.no_suite:
        with tempfile.TemporaryDirectory() as tmp:
            r["numba"] = numba_suite(router, a.quick, pathlib.Path(tmp), a.suite_passes)
    (a.out / f"{stem}.json").write_text(json.dumps(r, indent=1) + "\n")
    md = markdown(r)
    (a.out / f"{stem}.md").write_text(md)
    print(md)
    bad = [rt for rt, v in r.get("numba", {}).get("tests", {}).items()
           if v.get("failures", 0) + v.get("errors", 0)]
    bad += [rt for rt, v in r.get("numba", {}).get("benchmark", {}).items() if v["returncode"]]
    if bad:
        failures.append(f"numba-cuda's tests failed on: {sorted(set(bad))}")
    r["failures"] = failures
    (a.out / f"{stem}.json").write_text(json.dumps(r, indent=1) + "\n")
    (a.out / f"{stem}.md").write_text(markdown(r))
    for f in failures:
        print("FAILED:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
