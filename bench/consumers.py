"""Each real consumer of a torch tensor's metadata, counted on the route it takes, today
and with each proposed patch (``make callgrind-consumers``).

A consumer is a library's own call path, not a loop of ours around torch's functions:

- **cuda.core** fills a ``StridedMemoryView`` through its tensor bridge
  (``cuda_core/cuda/core/_tensor_bridge.pyx`` at NVIDIA/cuda-python 0c31df19: the
  THPVariable pointer trick + 7 ``aoti_torch_get_*`` getters); its seed PR tried torch's
  owned shim there. Here: ``bench/native/cuda_core_consumer.pyx``, the same fill from each
  route (``view_pointer``, ``view_owned``, ``view_borrow``, ``view_dlpack*``).
- **tvm-ffi** converts every torch argument with ``managed_tensor_from_py_object_no_sync``
  (the owning export) into an ``ffi::Tensor`` (``python/tvm_ffi/cython/function.pxi``,
  ``TVMFFIPyArgSetterDLPackExchangeAPI_``, in the installed apache-tvm-ffi and at
  apache/tvm-ffi 620fece9). Here: a function exported with tvm-ffi's own build
  (``bench/native/bindings/tvm_ffi_peer.cc``) called from Python with 1 and 8 tensors;
  "with the DLPack series" puts the series' managed function into torch's own table
  (``InternalFixes.managed_export_patched``), so tvm-ffi's call path runs it.
- **A private-unpack launcher** (a Triton launcher's ``_torch_bridge``,
  facebookexperimental/triton#1498; PyTorch's ``_FastCudaLauncher``, pytorch/pytorch#180507):
  one ``METH_FASTCALL`` call of k tensors and two ints, ``THPVariable_Check`` +
  ``THPVariable_Unpack`` per tensor (``bench/native/unpack_launcher.cpp``), beside the
  same launcher on each stable route.

"With 0001" runs each configuration with the interpreter fix installed
(``InternalFixes.interpreter_fix``: the patch's own ``incref`` / ``decref``); "the DLPack
series" is its functions cut out of the patched ``Module.cpp``; "borrow" is
``torch_tensor_borrow_from_pyobject`` as shim_ext builds it (0003's code).

Each configuration is a Python-level statement (``timeit``) counted with collection
toggled on around its loop by callgrind's client requests, ``n1``, ``n2``, ``n1`` calls,
one dump each: instructions per call = (count(n2) - count(n1)) / (n2 - n1), the loop's
own setup and the toggles removed. One process per run, ``PYTHONHASHSEED=0``; counts
through torch's bindings or pybind11 move by 10-25 instructions between processes.

Writes ``<out>/consumers-torch-<v>.json`` (``--stem`` names it otherwise; the Makefile
adds the interpreter's tag for a PYTHON other than its default) and a table beside it.
Run with ``python -P -m bench.consumers`` from the repository root.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass

HERE = pathlib.Path(__file__).resolve().parent
#: tensors per call of the launcher's rows
LAUNCHER_K = (1, 3, 8)
#: tensors per call of tvm-ffi's rows (its peer exports a 1- and an 8-tensor function)
TVM_K = (1, 8)


@dataclass(frozen=True)
class Config:
    """One counted statement: ``consumer`` (``cuda_core``, ``tvm_ffi``, ``launcher``),
    ``route`` (``pointer``, ``owned``, ``borrow``, ``dlpack``, ``managed``, ``unpack``,
    ``empty``), ``patches`` (what is installed: ``()`` today, ``("0001",)``,
    ``("dlpack",)``, ``("0001", "dlpack")``; the borrow is a route, not a patch,
    since it is a new function), ``k`` (tensors per call) and ``stmt`` (the statement)."""

    consumer: str
    route: str
    patches: tuple
    k: int
    stmt: str

    @property
    def name(self) -> str:
        return "|".join((self.consumer, self.route, "+".join(self.patches) or "today",
                         str(self.k)))


def configs() -> list[Config]:
    """Every configuration, in the order they are counted."""
    out = []
    for route, patches in (("pointer", ()), ("owned", ()), ("owned", ("0001",)),
                           ("borrow", ()), ("dlpack", ()), ("dlpack", ("0001",)),
                           ("dlpack", ("dlpack",))):
        fn = "view_dlpack_fixed" if patches == ("dlpack",) else f"view_{route}"
        out.append(Config("cuda_core", route, patches, 1, f"{fn}(t)"))
    out.append(Config("tvm_ffi", "empty", (), 0, "tvm_empty()"))
    for k in TVM_K:
        stmt = "tvm_tensor(t)" if k == 1 else f"tvm_tensor8({', '.join(f'ts[{i}]' for i in range(k))})"
        for patches in ((), ("0001",), ("dlpack",), ("0001", "dlpack")):
            out.append(Config("tvm_ffi", "managed", patches, k, stmt))
    out.append(Config("launcher", "empty", (), 0, "launch_empty(1, 2)"))
    for k in LAUNCHER_K:
        args = ", ".join(f"ts[{i}]" for i in range(k)) + ", 1, 2"
        for route, patches in (("unpack", ()), ("owned", ()), ("owned", ("0001",)),
                               ("borrow", ()), ("dlpack", ()), ("dlpack", ("0001",)),
                               ("dlpack", ("dlpack",))):
            out.append(Config("launcher", route, patches, k, f"launch_{route}({args})"))
    return out


# --- the child: runs under valgrind ------------------------------------------------------
class Setup:
    """Everything the statements need, built before counting starts: ``namespace`` (the
    statements' globals), ``context(config)`` (what to hold around a configuration's
    loop: the fixes it names, the DLPack table its launcher reads) and ``unavailable``
    (``{config name: why not}``)."""

    def __init__(self, torch):
        import bridge  # noqa: F401 (resolves the routes the consumers use)
        from bench import routes
        from bench.native import build_dir, built_module, torch_version
        from bench.native import cuda_core_consumer as cc
        from bench.native import peers_bindings
        from bench.native import unpack_launcher_build as ub
        from bridge import _bridge as core
        from bridge import _resolve
        from proposal.fixes.internal_fixes import torch_dlpack_api

        self.unavailable: dict[str, str] = {}
        self.fixes, self.fixes_reason = routes.load_fixes(torch)
        ts = [torch.randn(32, 32, dtype=torch.float32) for _ in range(max(LAUNCHER_K))]
        ns = {"t": ts[0], "ts": ts}
        self.info: dict = {}
        try:
            consumer = cc.Consumer(torch, "cpu")
            for route in ("pointer", "owned", "borrow", "dlpack", "dlpack_fixed"):
                if consumer.available.get(route):
                    ns[f"view_{route}"] = consumer.viewer(route)
            self.info["cuda_core"] = {"version": consumer.cuda_core_version,
                                      "labels": consumer.labels}
        except cc.Unavailable as exc:
            self.info["cuda_core"] = {"unavailable": str(exc)}
        tvm = peers_bindings.load("tvm_ffi", torch, quiet=True)
        self.info["tvm_ffi"] = tvm.info
        if tvm.available:
            ns.update(tvm_empty=tvm.empty, tvm_tensor=tvm.tensor,
                      tvm_tensor8=tvm.more["tensor8"])
        launcher = built_module(ub, build_dir(torch_version(torch)))
        res = _resolve.resolve(core.PYOBJECT_SIZE)
        launcher.install({name: s.address for name, s in res.symbols.items()})
        self.launcher = launcher
        self.torch_api = torch_dlpack_api(torch)
        self.fixed_api = self.fixes.dlpack_api_patched() if self.fixes and self.torch_api else 0
        ns.update({f"launch_{r}": getattr(launcher, f"launch_{r}")
                   for r in ("unpack", "owned", "borrow", "dlpack")})
        ns["launch_empty"] = launcher.launch_empty
        self.namespace = ns

    def why_not(self, config: Config) -> str | None:
        """Why ``config`` cannot run here, or None."""
        if "0001" in config.patches or "dlpack" in config.patches:
            if self.fixes is None:
                return f"the internal fixes are not built: {self.fixes_reason}"
        if config.route in ("dlpack", "managed") and not self.torch_api:
            return "this torch has no __dlpack_c_exchange_api__"
        fn = config.stmt.split("(")[0]
        if fn not in self.namespace:
            return {"cuda_core": f"cuda.core: {self.info['cuda_core'].get('unavailable', fn)}",
                    "tvm_ffi": f"tvm-ffi: {self.info['tvm_ffi'].get('unavailable', fn)}"}.get(
                        config.consumer, f"{fn} is not available")
        return None

    @contextlib.contextmanager
    def context(self, config: Config):
        """The patches ``config`` names, installed for its loop (and the launcher's DLPack
        table: torch's own, or the copy with the series' function)."""
        with contextlib.ExitStack() as stack:
            if config.consumer == "launcher" and config.route == "dlpack":
                fixed = "dlpack" in config.patches
                self.launcher.install_dlpack(self.fixed_api if fixed else self.torch_api)
            if "0001" in config.patches:
                stack.enter_context(self.fixes.interpreter_fix("patch"))
            if config.consumer == "tvm_ffi" and "dlpack" in config.patches:
                stack.enter_context(self.fixes.managed_export_patched())
            yield


def child(args) -> int:
    """Under valgrind: every configuration as ``n1, n2, n1`` calls, one dump each."""
    import gc
    import timeit

    import torch

    import bridge
    from bench.native import peers_native

    peers = peers_native.NativePeers(torch, bridge)
    setup = Setup(torch)
    todo, unavailable = [], {}
    for config in configs():
        why = setup.why_not(config)
        if why is None:
            timer = timeit.Timer(config.stmt, globals=setup.namespace)
            with setup.context(config):
                timer.timeit(10)  # errors surface here, and every lazy binding is resolved
            todo.append((config, timer))
        else:
            unavailable[config.name] = why
    if peers.callgrind("start") != 1:
        print("consumers child: not under valgrind, or peers_native built without "
              "<valgrind/callgrind.h>", file=sys.stderr)
        return 2
    gc.disable()  # no collection inside a counted loop
    labels = []
    for config, timer in todo:
        with setup.context(config):
            timer.timeit(10)
            for i, n in enumerate((args.n1, args.n2, args.n1)):
                peers.callgrind("toggle")
                timer.timeit(n)
                peers.callgrind("toggle")
                label = f"{config.name}|{n}|{i}"
                peers.callgrind("dump", label)
                labels.append(label)
    plan = {"configs": [asdict(c) | {"name": c.name} for c, _ in todo],
            "unavailable": unavailable, "labels": labels, "n1": args.n1, "n2": args.n2,
            "torch": torch.__version__, "python": sys.version.split()[0],
            "python_full": sys.version, "consumers": setup.info}
    pathlib.Path(args.plan).write_text(json.dumps(plan))
    return 0


# --- the parent: runs valgrind, reads the dumps, writes the results ----------------------
def per_call(plan: dict, dumps: dict) -> tuple[dict, dict]:
    """``({config name: instructions per call}, {config name: repeat difference})``: the
    difference of the n2 and the second n1 loop over ``n2 - n1``, and the two n1 loops'
    difference in instructions (how far a repeat moves)."""
    n1, n2 = plan["n1"], plan["n2"]
    out, repeat = {}, {}
    for c in plan["configs"]:
        a, b, a2 = (dumps[f"{c['name']}|{n}|{i}"][1] for i, n in enumerate((n1, n2, n1)))
        out[c["name"]] = round((b - a2) / (n2 - n1), 1)
        repeat[c["name"]] = a2 - a
    return out, repeat


def table(result: dict) -> str:
    """The counts as a markdown table, one row per configuration."""
    lines = [f"# Consumers on their own routes: instructions per call (CPython {result['python']}, "
             f"torch {result['torch']})", "",
             f"callgrind ({result['valgrind']}), {result['n1']:,} / {result['n2']:,} calls, "
             "one process, PYTHONHASHSEED=0; written by `python -P -m bench.consumers`. "
             "Patches: 0001 the interpreter fix, dlpack the DLPack series (their own code); "
             "borrow is 0003's function.", "",
             "| consumer | route | patches | tensors | statement | instructions per call |",
             "|---|---|---|---:|---|---:|"]
    for c in result["configs"]:
        lines.append(f"| {c['consumer']} | {c['route']} | {'+'.join(c['patches']) or 'today'} | "
                     f"{c['k']} | `{c['stmt']}` | {result['per_call'][c['name']]:,.1f} |")
    for name, why in result["unavailable"].items():
        lines.append(f"| {name} | — | | | not counted: {why} | |")
    return "\n".join(lines)


def run_valgrind(args, work: pathlib.Path) -> int:
    """One valgrind process running ``--child``; its dumps and plan land in ``work``."""
    work.mkdir(parents=True, exist_ok=True)
    for old in work.glob("callgrind.out*"):
        old.unlink()
    plan = work / "plan.json"
    plan.unlink(missing_ok=True)
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
           "--dump-instr=no", f"--callgrind-out-file={work / 'callgrind.out'}",
           args.python, "-P", "-m", "bench.consumers", "--child", "--plan", str(plan),
           "--n1", str(args.n1), "--n2", str(args.n2)]
    print(f"counting {len(configs())} configurations x (n={args.n1}, {args.n2}, {args.n1}) under "
          "callgrind: several minutes (importing torch under valgrind)...", flush=True)
    env = dict(os.environ, PYTHONHASHSEED="0")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0 or not plan.exists():
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        print(f"callgrind run failed (exit {proc.returncode})", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=HERE / "results",
                        help="folder for consumers-torch-<v>.{json,md} (default bench/results)")
    parser.add_argument("--python", default=sys.executable,
                        help="the torch environment's python to run under valgrind (default: this one)")
    parser.add_argument("--n1", type=int, default=1_000, help="calls of the short loop (1000)")
    parser.add_argument("--n2", type=int, default=6_000, help="calls of the long loop (6000)")
    parser.add_argument("--stem", help="file name stem (default consumers-torch-<v>)")
    parser.add_argument("--keep", type=pathlib.Path, help="keep callgrind's dumps in this folder")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--plan", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not 0 < args.n1 < args.n2:
        parser.error("need 0 < --n1 < --n2")
    if args.child:
        return child(args)
    if shutil.which("valgrind") is None:
        parser.error("valgrind is not on PATH: apt-get install valgrind")
    import torch

    import bridge
    from bench.callgrind import read_dumps, valgrind_version
    from bench.native import peers_native

    # Build every module here first: compiling under valgrind is slow.
    if peers_native.NativePeers(torch, bridge).callgrind("dump") == -1:
        parser.error("bench/native/peers_native.c was built without <valgrind/callgrind.h> "
                     "(Debian's valgrind package installs it); rebuild after installing it")
    Setup(torch)
    work = args.keep or pathlib.Path(tempfile.mkdtemp(prefix="cg-consumers-"))
    if run_valgrind(args, work) != 0:
        return 1
    plan = json.loads((work / "plan.json").read_text())
    dumps = read_dumps(work, "callgrind.out")
    missing = [label for label in plan["labels"] if label not in dumps]
    if missing:
        print(f"callgrind wrote no dump for {missing} (files in {work})", file=sys.stderr)
        return 1
    counts, repeat = per_call(plan, dumps)
    result = {"python": plan["python"], "python_full": plan["python_full"],
              "torch": plan["torch"], "valgrind": valgrind_version(), "n1": plan["n1"],
              "n2": plan["n2"], "configs": plan["configs"], "per_call": counts,
              "repeat": repeat, "unavailable": plan["unavailable"],
              "consumers": plan["consumers"]}
    stem = args.stem or f"consumers-torch-{plan['torch'].split('+')[0]}"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stem}.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    text = table(result)
    (args.out / f"{stem}.md").write_text(text + "\n")
    print(text)
    print(f"\nsaved {args.out / stem}.{{json,md}}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
