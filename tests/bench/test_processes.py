"""The evidence run's several processes, outside any timing: ``protocol.start_order``
(the list's order without a seed; a reproducible shuffle per seed and per set of
contenders with one), ``processes.merge_runs`` (pooled per-round samples in process order,
pytest-benchmark's own stats over them, the per-process split kept) and the report's
per-process figures (each the median of one process's own rounds, checked against
numpy on made-up samples)."""

from __future__ import annotations

import numpy as np
import pytest

from bench import __main__ as bench_main
from bench import processes
from bench import protocol
from bench import report

GROUP = "6 seed consumer: cuda.core StridedMemoryView via each route, 32x32 float32"


def contenders(names):
    return [protocol.Contender(n, lambda k: 0.0) for n in names]


def test_without_a_seed_the_order_is_the_lists(monkeypatch):
    monkeypatch.delenv(protocol.ORDER_SEED_ENV, raising=False)
    cs = contenders("abcdefg")
    assert [c.name for c in protocol.start_order(cs)] == list("abcdefg")


def test_a_seed_shuffles_reproducibly_and_differs_between_seeds(monkeypatch):
    cs = contenders([f"route{i}" for i in range(8)])
    orders = {}
    for seed in ("s-0", "s-1", "s-2", "s-3", "s-4"):
        monkeypatch.setenv(protocol.ORDER_SEED_ENV, seed)
        first = [c.name for c in protocol.start_order(cs)]
        assert first == [c.name for c in protocol.start_order(cs)]  # reproducible
        assert sorted(first) == sorted(c.name for c in cs)  # a permutation
        orders[seed] = tuple(first)
    assert len(set(orders.values())) > 1, orders


def test_measure_rotates_from_the_shuffled_order(monkeypatch):
    monkeypatch.setenv(protocol.ORDER_SEED_ENV, "x-1")
    ran = []
    cs = [protocol.Contender(n, lambda k, n=n: ran.append(n) or 1.0) for n in "abcd"]
    start = [c.name for c in protocol.start_order(cs)]
    protocol.measure(cs, rounds=4, calls=1, warmup=1)
    timed = ran[4:]  # after one warm-up call each
    for r in range(4):
        assert timed[4 * r:4 * r + 4] == start[r:] + start[:r]
    assert protocol.ORDERS[-1] == start


def bench(path, samples, calls=100, **extra):
    return {"group": GROUP, "name": f"test_consumer[{path}]",
            "fullname": f"bench/bench_consumer.py::test_consumer[{path}]",
            "params": {"route": path}, "param": path, "options": {},
            "stats": {"min": 0.0, "max": 0.0, "mean": 0.0, "stddev": 0.0, "rounds": 0,
                      "median": 0.0, "iqr": 0.0, "q1": 0.0, "q3": 0.0, "iqr_outliers": 0,
                      "stddev_outliers": 0, "outliers": "", "ld15iqr": 0.0, "hd15iqr": 0.0,
                      "ops": 0.0, "total": 0.0, "data": [], "iterations": calls},
            "extra_info": {"path": path, "label": path, "samples_ns": list(samples),
                           "calls_per_round": calls, **extra}}


def one_run(k, rng):
    borrow = 100 + 5 * k + rng.normal(0, 1, 6)
    return {"machine_info": {"bench": {"load_average_at_start": [k], "load_average_at_end":
                                       [k + 0.5]}},
            "datetime": f"t{k}", "benchmarks": [
                bench("borrow", borrow, wall_ns=list(borrow * 2)),
                bench("pointer", borrow * (0.97 + 0.01 * k), wall_ns=list(borrow))],
            "evidence": {"protocol": {"rounds": 6, "quick": False}, "consumer": {}}}


def test_merge_pools_the_rounds_and_keeps_the_split():
    # merge_runs recomputes pytest-benchmark's stats: a bench dependency (pyproject's
    # `bench` extra); .ci/run runs this file again once `make bench-quick` installed it.
    pytest.importorskip("pytest_benchmark")
    rng = np.random.default_rng(1)
    runs = [one_run(k, rng) for k in range(5)]
    merged = processes.merge_runs(runs, [f"s-{k}" for k in range(5)])
    by = {b["extra_info"]["path"]: b for b in merged["benchmarks"]}
    for path in ("borrow", "pointer"):
        b = by[path]
        want = [x for r in runs for x in next(
            c for c in r["benchmarks"] if c["extra_info"]["path"] == path)["extra_info"]
            ["samples_ns"]]
        assert b["extra_info"]["samples_ns"] == want
        assert b["extra_info"]["process_rounds"] == [6] * 5
        assert len(b["extra_info"]["wall_ns"]) == 30
        assert b["stats"]["rounds"] == 30
        assert b["stats"]["median"] == pytest.approx(np.median(want) * 1e-9)
        assert b["stats"]["min"] == pytest.approx(min(want) * 1e-9)
        assert b["stats"]["iterations"] == 100
    ev = merged["evidence"]
    assert ev["protocol"]["processes"] == 5 and ev["protocol"]["rounds_per_process"] == 6
    assert ev["protocol"]["rounds"] == 30
    assert [p["order_seed"] for p in ev["processes"]] == [f"s-{k}" for k in range(5)]
    assert merged["machine_info"]["bench"]["load_average_at_end"] == [4.5]

    r = report.Results(merged)
    assert report.process_count(r) == 5
    ratios = report.per_process(r, "6", "pointer", "borrow", "ratio")
    assert ratios == pytest.approx([0.97 + 0.01 * k for k in range(5)])
    medians = report.per_process(r, "6", "borrow", None, "value")
    assert medians == pytest.approx([float(np.median(
        runs[k]["benchmarks"][0]["extra_info"]["samples_ns"])) for k in range(5)])
    assert report.fmt_spread(ratios, "x") == "0.970x .. 1.010x (5 processes)"
    assert "Pooled from 5 fresh processes x 6 rounds" in report.processes_section(r)


def test_merge_refuses_runs_of_different_benchmarks():
    # merge_runs recomputes pytest-benchmark's stats: a bench dependency (pyproject's
    # `bench` extra); .ci/run runs this file again once `make bench-quick` installed it.
    pytest.importorskip("pytest_benchmark")
    rng = np.random.default_rng(2)
    a, b = one_run(0, rng), one_run(1, rng)
    b["benchmarks"].pop()
    with pytest.raises(ValueError, match="other benchmarks"):
        processes.merge_runs([a, b], ["s-0", "s-1"])


def test_one_process_says_so():
    rng = np.random.default_rng(3)
    r = report.Results(one_run(0, rng))
    assert report.per_process(r, "6", "pointer", "borrow", "ratio") is None
    assert report.fmt_spread(None, "x") == "one process"
    assert report.processes_section(r).startswith("_One process")


def test_quick_runs_stay_one_process():
    with pytest.raises(SystemExit):
        bench_main.main(["--quick", "--processes", "5"])


def test_the_host_note_and_the_stand_in_owned_shim_are_printed(tmp_path):
    """Where torch has no ``torch_tensor_from_pyobject``, sections 6 and 7 name the owned
    shim that stands in (the consumer's own label), after the run's host note."""
    rng = np.random.default_rng(4)
    data = one_run(0, rng)
    data["machine_info"]["bench"]["torch"] = "2.11.0+cu130"
    data["evidence"]["consumer"] = {
        "labels": {"owned_prototype": "owned (2.14's implementation, built for torch 2.11.0)",
                   "owned_fixed": "owned + interpreter fix (the patch's incref / decref), via "
                                  "owned (2.14's implementation, built for torch 2.11.0)"},
        "unavailable": {"owned": "torch 2.11.0+cu130 exports no torch_tensor_from_pyobject"}}
    path = tmp_path / "r.json"
    import json

    path.write_text(json.dumps(data))
    processes.add_host_note(path, "This host stays on torch 2.11.")
    line = report.owned_stand_in(report.Results(json.loads(path.read_text())))
    assert line.startswith("_This host stays on torch 2.11._ _torch 2.11.0+cu130: torch "
                           "2.11.0+cu130 exports no torch_tensor_from_pyobject")
    assert "\"owned (2.14's implementation, built for torch 2.11.0)\"" in line
    assert "is that build with the interpreter fix" in line
    del data["evidence"]["consumer"]["unavailable"]["owned"]
    assert report.owned_stand_in(report.Results(data)) == ""


# --- the runners around the suite: scenario F, consumer.h's timed row --------------------------

def test_fresh_processes_run_the_module_once_per_seed(tmp_path, monkeypatch):
    """Each child gets ``--process-only --out DIR --stem <stem>.p<k>``, the caller's
    arguments and its own ``BENCH_ORDER_SEED``; a failing child stops the series."""
    (tmp_path / "mod").mkdir()
    (tmp_path / "mod" / "echo_child.py").write_text(
        "import json, os, sys, pathlib\n"
        "a = sys.argv[1:]\n"
        "out = pathlib.Path(a[a.index('--out') + 1]); stem = a[a.index('--stem') + 1]\n"
        "(out / (stem + '.json')).write_text(json.dumps({'argv': a, "
        "'seed': os.environ.get('BENCH_ORDER_SEED')}))\n"
        "sys.exit(3 if '--fail' in a and stem.endswith('.p1') else 0)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "mod"))
    monkeypatch.setattr(processes, "PROCESS_DIR", tmp_path / "work")
    rc, paths, seeds = processes.fresh_processes("echo_child", 3, "s", ["--x", "1"], "pre")
    assert rc == 0 and seeds == ["pre-0", "pre-1", "pre-2"]
    import json

    got = [json.loads(p.read_text()) for p in paths]
    assert [g["seed"] for g in got] == seeds
    assert got[2]["argv"] == ["--process-only", "--out", str(tmp_path / "work" / "s"),
                              "--stem", "s.p2", "--x", "1"]
    rc, paths, seeds = processes.fresh_processes("echo_child", 3, "t", ["--fail"], "q")
    assert rc == 3 and seeds == ["q-0"] and len(paths) == 1


def _runners():
    from bench import consumer_header, freethreaded
    from bench.numba_cuda import run as numba_bench
    from bench.c_shims import run as c_shims_run

    return {"bench": bench_main.main, "c_shims_run": c_shims_run.main,
            "freethreaded": freethreaded.main, "numba_bench": numba_bench.main,
            "consumer_header": lambda a: consumer_header.main(["--no-count", "--time", *a])}


BAD_OPTIONS = [(["--processes", "0"], "--processes must be at least 1"),
               (["--rounds", "1"], "--rounds must be at least 2"),
               (["--quick", "--processes", "2"], "--quick runs one process")]


@pytest.mark.parametrize("runner,argv,says", [
    (runner, argv, says) for runner in ("bench", "c_shims_run", "freethreaded",
                                        "numba_bench", "consumer_header")
    for argv, says in BAD_OPTIONS
    if not (runner == "consumer_header" and "--quick" in argv)])  # it has no --quick
def test_the_runners_refuse_bad_process_options(runner, argv, says, capsys):
    """Refused while parsing, before torch (or numba) is imported or anything timed."""
    with pytest.raises(SystemExit) as exc:
        _runners()[runner](argv)
    assert exc.value.code == 2
    assert says in capsys.readouterr().err


def test_consumer_header_counts_in_one_process(capsys):
    from bench import consumer_header

    with pytest.raises(SystemExit) as exc:
        consumer_header.main(["--processes", "2"])
    assert exc.value.code == 2 and "--time" in capsys.readouterr().err


def scenario_f_run(processes: int, rng):
    """A made-up scenario-F JSON: add at 32x32, routes owned and borrow, ``processes``
    processes of 6 rounds, owned's whole call 40 ns per argument above the borrow's in
    process k plus 10 k."""
    k_rounds = [6] * processes
    n = sum(k_rounds)
    shift = np.repeat([40.0 + 10 * k for k in range(processes)], 6)
    op = 1000 + rng.normal(0, 5, n)
    rows = {"op": op, "handles:borrow": 20 + rng.normal(0, 1, n),
            "ccall:borrow": op + 40 + rng.normal(0, 1, n)}
    rows["handles:owned"] = rows["handles:borrow"] + 2 * shift
    rows["ccall:owned"] = rows["ccall:borrow"] + 2 * shift
    benches = []
    for name, s in rows.items():
        b = bench(name, s)
        b["group"] = "F1 C shims: handles per call vs the op, native loops"
        b["extra_info"].update(op="add", size=32)
        if processes > 1:
            b["extra_info"]["process_rounds"] = k_rounds
        benches.append(b)
    protocol = {"rounds": n, "quick": False}
    if processes > 1:
        protocol.update(processes=processes, rounds_per_process=6)
    return {"benchmarks": benches, "machine_info": {},
            "evidence": {"protocol": protocol,
                         "processes": [{"order_seed": f"s-{k}"} for k in range(processes)]}}


def test_scenario_f_gives_each_process_its_own_difference():
    pytest.importorskip("scipy")
    from bench.c_shims import report as csr

    rng = np.random.default_rng(5)
    f = csr.figures(csr.Run(scenario_f_run(4, rng)))["add"][32]["routes"]["owned"]
    # the per-argument difference of each process: its shift (2 arguments, 2 * shift)
    assert f["minus_borrow_per_arg_by_process"] == pytest.approx(
        [40.0 + 10 * k for k in range(4)], abs=1.5)
    assert f["handles_minus_borrow_per_arg_by_process"] == pytest.approx(
        [40.0 + 10 * k for k in range(4)], abs=1.5)
    text = csr.loops_md(csr.Run(scenario_f_run(4, rng)))
    assert "(4 processes)" in text and "Pooled from 4 fresh processes x 6 rounds" in text
    one = csr.Run(scenario_f_run(1, rng))
    assert csr.figures(one)["add"][32]["routes"]["owned"][
        "minus_borrow_per_arg_by_process"] is None
    assert "one process" in csr.loops_md(one) and "_One process" in csr.loops_md(one)


def test_consumer_header_pools_its_processes_rounds():
    pytest.importorskip("scipy")
    from bench import consumer_header as ch

    def one(k):
        base = {"five_tuple": 500.0, "view_read": 200.0, "header_c": 70.0 + k,
                "header_tuples": 250.0}
        return {"torch": "2.15.0", "python": "3.11", "device": "cpu", "route": "prototype",
                "rounds": 3, "calls": 10, "warmup": 1, "statements": ch.STATEMENTS,
                "labels": ch.LABELS, "process_rounds": [3], "order_seed": f"s-{k}",
                "ns_per_call": {n: [v + 0.1 * r for r in range(3)] for n, v in base.items()}}

    merged = ch.merge_times([one(k) for k in range(3)], ["s-0", "s-1", "s-2"])
    assert merged["process_rounds"] == [3, 3, 3] and merged["rounds"] == 9
    assert merged["ns_per_call"]["header_c"] == [70.0, 70.1, 70.2, 71.0, 71.1, 71.2,
                                                 72.0, 72.1, 72.2]
    assert "order_seed" not in merged and merged["processes"][1] == {"order_seed": "s-1"}
    text = ch.time_md(merged)
    assert "3 fresh processes x 3 interleaved rounds" in text
    assert "70.1 .. 72.1 (3 processes)" in text  # header_c's per-process medians
    ratios = [np.median([(70.0 + k + 0.1 * r) / (200.0 + 0.1 * r) for r in range(3)])
              for k in range(3)]
    assert f"{min(ratios):.3f}x .. {max(ratios):.3f}x (3 processes)" in text
    bad = one(1)
    del bad["ns_per_call"]["cview" if "cview" in bad["ns_per_call"] else "header_tuples"]
    with pytest.raises(ValueError, match="other statements"):
        ch.merge_times([one(0), bad], ["a", "b"])


def test_numba_bench_pools_its_processes_rounds():
    """numba-cuda's A/B and attribution from raw rounds (no numba needed): merged in
    process order, each process's own median ratio kept, refused when they differ."""
    from bench.numba_cuda import run as nb

    routes = ["shipped", "borrow", "owned", "device_array"]

    def raw(k):
        s = {}
        for arity, jit in nb.CASES:
            b = 1000.0 * arity + np.arange(4.0)
            for route, f in (("shipped", 0.99), ("borrow", 1.0), ("owned", 1.02 + 0.01 * k),
                             ("device_array", 0.5)):
                s[f"{arity}/{jit}/{route}"] = list(b * f)
        return {"samples_ns": s, "routes": routes}

    merged = nb.merge_raw([raw(k) for k in range(3)])
    assert len(merged["samples_ns"]["1/dispatch/owned"]) == 12
    table = nb.ab_table(merged, [4, 4, 4])
    owned = table["26/signature"]["owned"]
    assert owned["ratio_by_process"] == pytest.approx([1.02, 1.03, 1.04])
    assert owned["ratio_median"] == pytest.approx(1.03)
    assert len(owned["process_medians_ns"]) == 3
    assert "ratio_by_process" not in nb.ab_table(raw(0), [4])["26/signature"]["owned"]
    assert nb.spread(owned["ratio_by_process"]) == "1.0200x .. 1.0400x (3 processes)"
    assert nb.where({"process_rounds": [4, 4, 4]}).startswith("3 fresh processes x 4")
    assert nb.where({"process_rounds": [60]}) == "one process, interleaved"
    with pytest.raises(ValueError, match="add up to 4"):
        nb.stats([1.0, 2.0, 3.0], counts=[2, 2])
    bad = raw(1)
    bad["samples_ns"].pop("1/dispatch/owned")
    with pytest.raises(ValueError, match="other contenders"):
        nb.merge_raw([raw(0), bad])
    attr = {"samples_ns": {"p | torch": [5.0, 6.0, 7.0, 8.0], "p | device_array": [1.0] * 4,
                           "v": [3.0] * 4}, "parts": ["p"], "route_parts": ["v"],
            "errors": {"q": "TypeError: no"}}
    t = nb.attribution_table(nb.merge_raw([attr, attr]), [4, 4])
    assert t["q"] == {"error": "TypeError: no"}
    assert t["p"]["torch_minus_device_array_ns"] == pytest.approx(5.5)
    assert t["p"]["torch"]["process_medians_ns"] == [6.5, 6.5]


def test_freethreaded_pools_its_processes_rounds(tmp_path):
    from bench import freethreaded as ft

    def one(k):
        res = {name: {"median_ns": float(np.median(s)), "min_ns": min(s), "samples_ns": s,
                      "level": "python"}
               for name, s in (("view_borrow(t)", [60.0 + k, 61.0 + k, 62.0 + k]),
                               ("t.data_ptr()", [40.0, 41.0, 42.0 + k]))}
        return {"results": res, "protocol": {"rounds": 3, "calls": 10, "warmup": 1},
                "threads": {"view_borrow, own tensors": {"1": 50.0 + k, "2": 60.0 + k}},
                "machine": {"date_utc": f"d{k}", "load_average_at_start": [k]}}

    merged = ft.merge([one(k) for k in range(3)], ["s-0", "s-1", "s-2"])
    b = merged["results"]["view_borrow(t)"]
    assert b["samples_ns"] == [60.0, 61.0, 62.0, 61.0, 62.0, 63.0, 62.0, 63.0, 64.0]
    assert b["median_ns"] == 62.0 and b["min_ns"] == 60.0
    assert b["process_medians_ns"] == [61.0, 62.0, 63.0]
    assert merged["threads"]["view_borrow, own tensors"] == {"1": 51.0, "2": 61.0}
    assert merged["threads_by_process"]["view_borrow, own tensors"]["2"] == [60.0, 61.0, 62.0]
    assert merged["protocol"]["processes"] == 3 and merged["protocol"]["rounds"] == 9
    assert [p["order_seed"] for p in merged["processes"]] == ["s-0", "s-1", "s-2"]
    # the report pairs the borrow with the pointer trick per round, split per process
    merged["results"]["view_fallback(t)"] = {
        "median_ns": 50.0, "min_ns": 50.0, "level": "python",
        "samples_ns": [50.0] * 3 + [60.0] * 3 + [62.0] * 3}
    merged.update(label="x", python="3.13", free_threaded=True, torch="2.12", paths={},
                  bit_check="C", gil_enabled=False,
                  machine={"cpu_model": "c", "cpu_count": 2, "load_average_at_start": [0],
                           "cython": "3", "date_utc": "d"})
    path = tmp_path / "merged.json"
    import json

    path.write_text(json.dumps(merged))
    text = ft.report([path], None)
    # per process: 61/50, 62/60, 63/62 -> medians 1.220, 1.033, 1.016; pooled median 1.033
    assert "per round 1.033x (1.016x .. 1.220x over 3 processes)" in text
    bad = one(1)
    del bad["results"]["t.data_ptr()"]
    with pytest.raises(ValueError, match="other contenders"):
        ft.merge([one(0), bad], ["a", "b"])


def test_numba_suite_takes_each_routes_pair_from_every_pass(tmp_path, monkeypatch):
    """numba-cuda's own file per route: the whole file once, then its two tabulated tests
    in further fresh processes, the routes' order rotated; a later failure fails the route."""
    import json
    import pathlib
    import types

    from bench.numba_cuda import run as nb

    (tmp_path / "src").mkdir()
    src = tmp_path / "src" / "test_kernel_launch.py"
    src.write_text("")
    monkeypatch.setattr(nb, "numba_file", lambda name: src)
    monkeypatch.setattr(nb, "torch_test_files", lambda: [])
    calls = []

    def fake(route, args, tmp, cwd=None):
        k = len([c for c in calls if c[0] == route])
        calls.append((route, "-k" in args))
        js = next(a.split("=", 1)[1] for a in args if a.startswith("--benchmark-json="))
        names = list(nb.SUITE_PAIR) + ([] if "-k" in args else ["test_one_arg[x]"])
        t = {"a": 200.0, "b": 210.0}[route] + k
        pathlib.Path(js).write_text(json.dumps({"benchmarks": [
            {"name": n, "stats": {"median": (t if "torch" in n else 100.0) * 1e-6,
                                  "min": 0.0, "stddev": 0.0, "rounds": 20}} for n in names]}))
        failed = route == "b" and k == 2
        return {"returncode": 1 if failed else 0, "tail": ["boom"] if failed else []}

    monkeypatch.setattr(nb, "pytest_route", fake)
    out = nb.numba_suite(types.SimpleNamespace(routes=["a", "b"]), False, tmp_path, passes=3)
    assert [c[0] for c in calls] == ["a", "b", "b", "a", "a", "b"]  # rotated per pass
    assert [c[1] for c in calls] == [False, False, True, True, True, True]
    a, b = out["benchmark"]["a"], out["benchmark"]["b"]
    assert [x for pair in a["pair_by_process"] for x in pair] == pytest.approx(
        [200e3, 100e3, 201e3, 100e3, 202e3, 100e3])
    assert "test_one_arg[x]" in a["results"] and a["returncode"] == 0
    assert b["returncode"] == 1 and b["later_failures"] == [["boom"]]
    assert out["passes"] == 3


def test_numba_markdown_tabulates_the_suites_processes():
    from bench.numba_cuda import run as nb

    pair = [[200e3, 100e3], [210e3, 100e3], [190e3, 100e3]]
    r = {"versions": {"numba-cuda": "0.30", "cuda-core": "1.2", "torch": "2.11",
                      "python": "3.12"}, "gpu": "g", "quick": False, "labels": {},
         "checks": {"failed": "not run here"}, "ab": {}, "attribution": {},
         "process_rounds": [12] * 5,
         "numba": {"passes": 3, "tests": {}, "benchmark": {
             "borrow": {"returncode": 0, "tests": 12, "results": {}, "pair_by_process": pair}}}}
    text = nb.markdown(r)
    assert "from 3 fresh processes per route" in text
    assert "| borrow | 200.0 | 100.0 | 2.00x (1.90x .. 2.10x) |" in text
    assert "5 fresh processes x 12 interleaved rounds each" in text
