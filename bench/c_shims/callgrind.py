"""Instructions per call of scenario F (ATen ops through torch's generated C shims),
counted by callgrind: ``make callgrind-c-shims`` (also run by ``make callgrind``).

Per op of ``consumer.OPS`` on 32x32 float32 CPU tensors, in one valgrind process
(``bench/callgrind.py``'s method: ``n1, n2, n1`` calls per configuration, per call
``(I(n2) - I(n1)) / (n2 - n1)``, the two ``n1`` counts the repeat check), the same loops
as the timed scenario (``child``: ``handles:<route>`` split by part, ``op`` with one
intra-op thread, ``ccall:<route>``, the Python-level ``call:<route>``). Writes
``<out>/<stem>.json`` (every figure) and ``<stem>.md``, ``<stem>`` defaulting to
``callgrind-c-shims-torch-<v>``. Run with ``python -P -m bench.c_shims.callgrind``.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
TOGGLES = ("c_shims_handles_loop", "c_shims_op_loop", "c_shims_call_loop")
#: calls per run, (n1, n2): handle loops; op loops and Python calls (each a whole op: its
#: allocations vary from call to call by some hundred instructions, so many calls)
N_HANDLES = (1_000, 11_000)
N_OPS = (100, 1_100)


def child(args) -> int:
    """Under valgrind: every configuration as ``n1, n2, n1`` runs, one dump each."""
    import timeit

    import torch

    import bridge  # noqa: F401  (the package the borrow's symbols come from)
    from bench.c_shims import consumer as cs
    from bench.native import peers_native

    torch.set_num_threads(1)
    peers = peers_native.NativePeers(torch, bridge)
    consumer = cs.Consumer(torch)
    configs = []  # (label, run(n), (n1, n2))
    for op in cs.OPS:
        if consumer.shims[op]["cpu"] is None:
            continue
        ts = cs.inputs(torch, op, 32, "cpu")
        for route in consumer.routes():
            configs.append((f"handles:{route}:{op}",
                            lambda n, r=route, ts=ts: consumer.handles_loop(r, n, *ts),
                            N_HANDLES))
        configs.append((f"op::{op}", lambda n, op=op, ts=ts: consumer.op_loop(op, n, *ts),
                        N_OPS))
        for route in consumer.routes():
            configs.append((f"ccall:{route}:{op}",
                            lambda n, r=route, op=op, ts=ts: consumer.call_loop(op, r, n, *ts),
                            N_OPS))
        for route in consumer.routes():
            f, head = consumer.function(op, route)
            timer = timeit.Timer("f(*head, *ts)", globals={"f": f, "head": head, "ts": ts})

            def run(n, r=route, timer=timer):
                with consumer.route_context(r):
                    peers.callgrind("toggle")
                    timer.timeit(n)
                    peers.callgrind("toggle")
            # the op runs inside each call: as few calls as the op loop
            configs.append((f"call:{route}:{op}", run, N_OPS))
    for _, run, _ in configs:  # every lazy binding resolved, every error raised, here
        run(2)
    if peers.callgrind("start") != 1:
        print("not under valgrind, or peers_native built without <valgrind/callgrind.h>",
              file=sys.stderr)
        return 2
    peers.callgrind("zero")
    labels = []
    for label, run, (n1, n2) in configs:
        for k, n in enumerate((n1, n2, n1)):
            run(n)
            peers.callgrind("dump", f"{label}|{n}|{k}")
            labels.append(f"{label}|{n}|{k}")
    plan = {"configs": [(label, n) for label, _, n in configs], "labels": labels,
            "torch": torch.__version__, "python": sys.version.split()[0],
            "labels_routes": consumer.labels, "unavailable": consumer.reasons,
            "shims": consumer.shims, "arity": cs.ARITY, "num_threads": torch.get_num_threads(),
            "to_pyobject": consumer.to_pyobject}
    pathlib.Path(args.plan).write_text(json.dumps(plan))
    return 0


def summarize(plan: dict, dumps: dict, attribute: bool = True) -> dict:
    """``{label: {"per_call", "repeat", "parts"?}}`` from the dumps (``parts``: the
    C loops' instructions by ``callgrind.PARTS``; the Python-level calls have none)."""
    from bench import callgrind as cg

    out = {}
    for label, (n1, n2) in plan["configs"]:
        if attribute and not label.startswith("call:"):
            per_call, repeat, split, _ = cg.counts(dumps, label, n1, n2)
            parts = {k: round(v, 1) for k, v in cg.attribution(split).items()}
        else:
            a, b, a2 = (dumps[f"{label}|{n}|{k}"][1] for k, n in enumerate((n1, n2, n1)))
            per_call, repeat, parts = (b - a2) / (n2 - n1), a2 - a, None
        out[label] = {"per_call": round(per_call, 1), "repeat": repeat,
                      **({"parts": parts} if parts else {})}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=HERE.parent / "results")
    parser.add_argument("--stem", help="default callgrind-c-shims-torch-<v>")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--keep", type=pathlib.Path, help="keep the dumps in this folder")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--plan", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args)
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        parser.error("valgrind (with callgrind_annotate) is not on PATH")
    import torch

    import bridge
    from bench import callgrind as cg
    from bench.c_shims import consumer as cs
    from bench import machine_info
    from bench.native import peers_native

    # Build everything here: compiling under valgrind is slow.
    if peers_native.NativePeers(torch, bridge).callgrind("dump") == -1:
        parser.error("bench/native/peers_native.c was built without <valgrind/callgrind.h>")
    cs.Consumer(torch)
    work = args.keep or pathlib.Path(tempfile.mkdtemp(prefix="cg-c-shims-"))
    work.mkdir(parents=True, exist_ok=True)
    for old in work.glob("callgrind.out*"):
        old.unlink()
    plan_file = work / "plan.json"
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
           *(f"--toggle-collect={t}" for t in TOGGLES),
           f"--separate-callers={cg.SEPARATE_CALLERS}", "--dump-instr=no",
           f"--callgrind-out-file={work / 'callgrind.out'}",
           args.python, "-P", str(pathlib.Path(__file__).resolve()), "--child",
           "--plan", str(plan_file)]
    print("counting the C-shim consumer under callgrind (a few minutes)...", flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or not plan_file.exists():
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        print(f"callgrind run failed (exit {proc.returncode})", file=sys.stderr)
        return 1
    plan = json.loads(plan_file.read_text())
    dumps = cg.read_dumps(work, "callgrind.out")
    missing = [label for label in plan["labels"] if label not in dumps]
    if missing:
        print(f"no dump for {missing} (files in {work})", file=sys.stderr)
        return 1
    figures = summarize(plan, dumps)
    stem = args.stem or f"callgrind-c-shims-torch-{plan['torch'].split('+')[0]}"
    args.out.mkdir(parents=True, exist_ok=True)
    data = {"torch": plan["torch"], "python": plan["python"], "valgrind": cg.valgrind_version(),
            "cpu_model": machine_info.cpu_model(), "labels": plan["labels_routes"],
            "unavailable": plan["unavailable"], "shims": plan["shims"], "arity": plan["arity"],
            "num_threads": plan["num_threads"], "to_pyobject": plan["to_pyobject"],
            "n": {"handles": N_HANDLES, "ops": N_OPS}, "per_call": figures}
    (args.out / f"{stem}.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    from bench.c_shims import report as c_shims_report

    text = c_shims_report.instructions_md(data)
    (args.out / f"{stem}.md").write_text(text + "\n")
    print(text)
    print(f"\nsaved {args.out / stem}.json and .md")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
