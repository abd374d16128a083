"""The benchmark tools' own logic, outside any timing: a binding peer that cannot run is
reported with its reason (never an exception), a peer that reads a tensor wrongly is
refused, callgrind.py passes ``reader=`` only to a ``_native_loop`` that takes it, and
bench.report's headline, chart and quick-run marks (on a made-up JSON: every figure checked
is computed from it) and the runner's file of pytest-benchmark's own tables."""

from __future__ import annotations


import pytest
import torch

from bench import callgrind
from bench.native import peers_bindings
from bench import report
from bench import processes
from helpers.paths import ROOT


def test_a_binding_that_cannot_build_is_unavailable_with_its_reason(monkeypatch):
    def no_cmake(version, quiet):
        raise peers_bindings.Unavailable("cmake is not on PATH (nanobind builds through its CMake)")

    monkeypatch.setitem(peers_bindings.LOADERS, "nanobind", no_cmake)
    b = peers_bindings.load("nanobind", torch, quiet=True)
    assert not b.available and b.empty is None and b.tensor is None
    assert b.info == {"unavailable": "cmake is not on PATH (nanobind builds through its CMake)"}


def test_a_binding_that_is_not_installed_names_the_distribution(monkeypatch):
    from importlib import metadata

    def missing(dist):
        raise metadata.PackageNotFoundError(dist)

    monkeypatch.setattr(metadata, "version", missing)
    b = peers_bindings.load("tvm_ffi", torch, quiet=True)
    assert not b.available
    assert b.info["unavailable"] == "apache-tvm-ffi is not installed (pyproject's `bench` extra)"


def test_a_binding_that_reads_the_tensor_wrongly_is_refused(monkeypatch):
    t = torch.randn(4, 6)[1:, ::2]
    right = (t.data_ptr(), (3, 3), (6, 2), (2, 32, 1), 1, 0)
    assert peers_bindings.expected(t) == right
    peers_bindings.check("nanobind", lambda x: right, [t])  # the same answer passes
    wrong_ptr = (t.data_ptr() - 24, *right[1:])  # the storage offset forgotten
    with pytest.raises(AssertionError, match="nanobind reads"):
        peers_bindings.check("nanobind", lambda x: wrong_ptr, [t])

    def liar(version, quiet):
        return (lambda: None), (lambda x: None), (lambda x: wrong_ptr), {}, {"version": "0"}

    monkeypatch.setitem(peers_bindings.LOADERS, "nanobind", liar)
    b = peers_bindings.load("nanobind", torch, quiet=True)
    assert not b.available and b.info["unavailable"].startswith("AssertionError: nanobind reads")


def test_tvm_ffi_flat_answer_is_read_back_in_torch_form():
    t = torch.randn(2, 3, 5).transpose(0, 2)
    flat = (t.data_ptr(), 3, *t.shape, *t.stride(), 2, 32, 1, 1, 0)
    assert peers_bindings._normalise("tvm_ffi", flat) == peers_bindings.expected(t)


def test_callgrind_passes_reader_only_to_a_loop_that_takes_it():
    t = torch.randn(2, 2)
    calls = []

    def old_loop(obj, path, n):
        calls.append((path, n))

    assert callgrind.supported_readers(old_loop, t, "fallback") == ([None], {})
    assert calls == []  # a signature without reader is never called with it

    def new_loop(obj, path, n, reader="getters"):
        if reader not in ("getters", "batched"):
            raise ValueError(f"unknown reader {reader!r}")
        calls.append((path, n, reader))

    assert callgrind.supported_readers(new_loop, t, "borrow") == (["getters", "batched"], {})
    assert calls == [("borrow", 1, "getters"), ("borrow", 1, "batched")]

    def getters_only(obj, path, n, reader="getters"):
        if reader != "getters":
            raise ValueError(f"unknown reader {reader!r}")

    ok, why = callgrind.supported_readers(getters_only, t, "borrow")
    assert ok == ["getters"] and why == {"batched": "ValueError: unknown reader 'batched'"}


@pytest.mark.parametrize("context, part", [
    # the acquisition's helpers stay with the acquisition, wherever they are called from
    ("pthread_getspecific@@GLIBC_2.34'PyThread_tss_get'pybind11::gil_scoped_acquire::"
     "gil_scoped_acquire()'torch::detail::(anonymous namespace)::ConcretePyInterpreterVTable::"
     "incref(_object*) const'c10::TensorImpl::incref_pyobject() const", "gil"),
    # the fix's own check is part of its incref, not the entry point's thread check
    ("PyGILState_Check'(anonymous namespace)::fixed_incref(c10::impl::PyInterpreterVTable "
     "const*, _object*)'c10::TensorImpl::incref_pyobject() const", "pyobject"),
    ("PyGILState_Check'torch_borrow::tensor_borrow_from_pyobject(_object*)'"
     "torch_tensor_borrow_from_pyobject'peers_handle_loop", "thread"),
    ("_int_free'free'operator delete(void*)'aoti_torch_delete_tensor_object'route_once", "alloc"),
    ("at::getDLDataType(at::Tensor const&)'at::toDLPackNonOwning(at::Tensor const&, DLTensor*, "
     "bool)'TorchDLPackExchangeAPI::DLTensorFromPyObjectNoSync(void*, DLTensor*)", "fill"),
    ("c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>::reset_not_null_("
     "c10::TensorImpl*)'aoti_torch_delete_tensor_object'route_once", "atomics"),
    ("torch_tensor_from_pyobject'route_once'peers_route_loop", "entry"),
    ("peers_dltensor_loop'_cffi_f_peers_dltensor_loop'cfunction_call", "loop"),
    ("Py_IsInitialized'somewhere_else", "other"),
])
def test_callgrind_puts_each_cost_in_one_part(context, part):
    assert callgrind.part_of(context) == part


def test_callgrind_attribution_adds_up():
    split = {"malloc'operator new(unsigned long)'torch_tensor_from_pyobject": 38.0,
             "aoti_torch_get_dim'route_once": 17.0, "route_once'peers_route_loop": 5.0}
    parts = callgrind.attribution(split)
    assert set(parts) == set(callgrind.PARTS)
    assert parts["alloc"] == 38.0 and parts["fill"] == 17.0 and parts["loop"] == 5.0
    assert sum(parts.values()) == sum(split.values())


# --- bench.report: the headline, the chart, a quick run -----------------------------------------
def fake_run(samples: dict, quick: bool = False, unavailable: dict | None = None) -> dict:
    """A benchmark JSON as ``python -m bench`` writes it, for ``{(group, name): samples_ns}``:
    pytest-benchmark's stats of the samples (seconds per call) and the samples themselves."""
    import numpy as np

    benchmarks = []
    for (group, name), ns in samples.items():
        s = np.asarray(ns, dtype=float) * 1e-9
        benchmarks.append({"group": f"{group} made-up group", "name": f"test[{name}]",
                           "extra_info": {"path": name, "samples_ns": list(ns)},
                           "stats": {"min": s.min(), "median": float(np.median(s)),
                                     "stddev": s.std(ddof=1)}})
    return {"benchmarks": benchmarks,
            "machine_info": {"bench": {"torch": "2.15.0", "python": "3.11.7",
                                       "cpu_model": "made-up CPU"}},
            "evidence": {"protocol": {"quick": quick, "rounds": 5},
                         "unavailable": unavailable or {}}}


BORROW = [50.0, 52.0, 51.0, 53.0, 54.0]
RUN = {
    (report.PEERS, "borrow"): BORROW,
    (report.PEERS, "owned"): [2 * x for x in BORROW],  # 2x the borrow in every round
    (report.PEERS, "empty"): [x / 5 for x in BORROW],
    (report.PEERS, "cuda_core"): [40 * x for x in BORROW],  # over OWN_SCALE x the borrow
    (report.NATIVE, "borrow"): [x / 2 for x in BORROW],
    (report.ROUTES, "route_dlpack_no_sync"): [3 * x / 4 for x in BORROW],
    (report.NATIVE, "owned"): [x for x in BORROW],
    (report.NATIVE, "typecheck"): [0.2, 0.2, 0.2, 0.2, 0.2],
}


def test_headline_has_python_and_native_apart_each_against_its_borrow():
    pytest.importorskip("scipy")  # the bootstrap intervals (pyproject's `bench` extra)
    r = report.Results(fake_run(RUN, unavailable={"dunder_dlpack": "made-up reason"}))
    text = report.headline(r)
    py, native = text.split("### Native C loop")
    assert py.startswith("### Python level")
    tables = {"py": py, "native": native}
    rows = {k: [line for line in v.splitlines() if line.startswith("| ")] for k, v in
            tables.items()}
    for k in rows:  # a header naming the column, then the rows, cheapest first
        assert "x vs borrow" in rows[k][0]
    py_rows, native_rows = rows["py"][1:], rows["native"][1:]
    label = report.label
    names = [row.split("|")[1].strip() for row in py_rows]
    assert names[:4] == [label(r, report.PEERS, "empty"),
                         f"**{label(r, report.PEERS, 'borrow')}**",
                         label(r, report.PEERS, "owned"), label(r, report.PEERS, "cuda_core")]
    assert all("unavailable: " in row for row in py_rows[4:])  # after the measured ones
    cells = {row.split("|")[1].strip().strip("*"): [c.strip() for c in row.split("|")[2:-1]]
             for row in py_rows + native_rows}
    assert cells[label(r, report.PEERS, "owned")][2] == "2.00x"  # the same ratio every round
    assert cells[label(r, report.PEERS, "cuda_core")][2] == "40.0x"
    assert cells[label(r, report.PEERS, "borrow")][2] == "1 (reference)"
    assert cells[label(r, report.PEERS, "dunder_dlpack")][0] == "unavailable: made-up reason"
    assert cells[label(r, report.ROUTES, "route_dlpack_no_sync")][2] == "1.50x"
    assert cells[label(r, report.NATIVE, "owned")][2] == "2.00x"
    # the native rows say how they read (one reader: the getters); none is in the Python table
    assert all("getters" in label(r, report.NATIVE, n) for n in ("borrow", "owned"))
    assert not any("getters" in row for row in py_rows)
    assert report.quick_banner(r) == "" and "not judged" not in report.terminal(r)


def test_a_quick_run_says_not_judged_on_goals_report_terminal_and_chart():
    pytest.importorskip("scipy")
    r = report.Results(fake_run(RUN, quick=True))
    assert all(status == "not judged (quick run)" for *_, status in report.goals(r)[:3])
    banner = report.quick_banner(r)
    assert "not judged" in banner
    md = report.markdown(r, "chart.svg")
    assert md.index(banner) < md.index("## Headline")
    assert report.terminal(r).startswith(banner)
    assert report.chart_title(r).startswith("QUICK RUN: not a measurement, not judged")
    assert "QUICK" not in report.chart_title(report.Results(fake_run(RUN)))


def test_the_chart_has_the_headline_rows_under_their_labels(tmp_path):
    pytest.importorskip("scipy")
    pytest.importorskip("matplotlib")
    r = report.Results(fake_run(RUN))
    panels = report.chart_panels(r)
    (_, native_rows, native_borrow, native_missing), (_, near, py_borrow, py_missing), \
        (_, far_rows, far_borrow, _) = panels
    assert [row.name for row in native_rows] == ["typecheck", "borrow", "route_dlpack_no_sync",
                                                "owned"]  # cheapest first
    assert [row.name for row in near] == ["empty", "borrow", "owned"]  # owned beside borrow
    assert [row.name for row in far_rows] == ["cuda_core"]  # over OWN_SCALE x, its own panel
    assert native_borrow.name == py_borrow.name == "borrow" and far_borrow is py_borrow
    assert {row.label for _, rows, _, _ in panels for row in rows} == {
        report.label(r, g, n) for g, n in RUN}  # the tables' labels
    assert "fallback" in {row.name for row in native_missing} & {row.name for row in py_missing}
    for name in ("chart.svg", "chart.png"):
        report.chart(r, tmp_path / name)
        assert (tmp_path / name).stat().st_size > 0


# --- the runner: pytest-benchmark's own tables into a file ------------------------------------------
def test_pytest_benchmark_tables_go_to_a_file(tmp_path, monkeypatch):
    pytest.importorskip("pytest_benchmark")
    source = ROOT / "bench" / "results" / \
        "bench-torch-2.15.0.json"
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "tables.txt"
    assert processes.pytest_benchmark_tables(source, out, tmp_path / "report.md")
    text = out.read_text()
    assert text.startswith("pytest-benchmark's own tables of bench-torch-2.15.0.json")
    assert "benchmark '2 native: handle + metadata per call" in text and "report.md" in text
    assert not (tmp_path / ".benchmarks").exists()  # its storage folder made elsewhere


def test_launch_section_reads_bridging_share_and_bound_from_the_samples():
    """Section 7 on made-up rounds: the bridging is the route minus ``ints`` paired by
    round, its share is of the route's host time, launches/s come from the wall time,
    and the verdict compares the launch alone with the GPU time."""
    pytest.importorskip("scipy")
    ints = [4000.0, 4100.0, 3900.0, 4050.0, 3950.0]
    run = fake_run({(report.LAUNCH, "ints"): ints,
                    (report.LAUNCH, "borrow"): [x + 1000 for x in ints],
                    (report.LAUNCH, "owned_prototype"): [x + 1500 for x in ints]})
    for b in run["benchmarks"]:
        b["extra_info"].update(arity=3, label=b["extra_info"]["path"],
                               wall_ns=[5000.0] * 5, gpu_ns=[2000.0] * 5)
    run["evidence"]["launch"] = {"kernel": "k", "grid": 4, "block": 256, "arch": "sm_90",
                                 "gpu_burst": 256, "arities": [3]}
    text = report.launch_section(report.Results(run))
    assert "**N = 3**" in text and "launch-bound: the host's launch alone" in text
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in text.splitlines() if line.startswith("| ") and "route" not in line}
    assert rows["ints"][1] == "200,000"  # 1e9 / 5000 ns wall per launch
    assert rows["borrow"][2].startswith("+1000.00 ns")
    assert rows["borrow"][3].startswith("20.0%")  # 1000 / 5000 at the median round
    assert rows["owned_prototype"][4].startswith("1.1")  # 5550 / 5050 at the median round
    gpu_bound = fake_run({(report.LAUNCH, "ints"): ints,
                          (report.LAUNCH, "borrow"): [x + 1000 for x in ints]})
    for b in gpu_bound["benchmarks"]:
        b["extra_info"].update(arity=1, label=b["extra_info"]["path"], wall_ns=[9000.0] * 5,
                               gpu_ns=[9000.0] * 5)
    gpu_bound["evidence"]["launch"] = {**run["evidence"]["launch"], "arities": [1]}
    text = report.launch_section(report.Results(gpu_bound))
    assert "GPU-bound: the kernel takes longer" in text
    borrow_row = next(line for line in text.splitlines() if line.startswith("| borrow "))
    assert "GPU-bound: not a host cost" in borrow_row  # no share where the host waited
    assert "needs CUDA" in report.launch_section(report.Results(fake_run({})))


def test_a_label_recorded_with_its_result_is_the_tables_label():
    data = fake_run(RUN)
    data["benchmarks"][0]["extra_info"]["label"] = "a label from the run"
    group = data["benchmarks"][0]["group"].split(" ")[0]
    r = report.Results(data)
    assert report.label(r, group, data["benchmarks"][0]["extra_info"]["path"]) == \
        "a label from the run"
    from bench import routes
    assert report.label(r, report.ROUTES, "route_owned") == routes.BY_NAME["owned"].label


def test_a_run_recorded_before_each_loop_was_timed_once_is_read_under_the_route():
    """Older runs timed DLPack's loop twice, as ``2 dlpack_dltensor`` too: the report reads
    that row where the route is missing, so a committed run still renders."""
    old = {k: v for k, v in RUN.items() if k != (report.ROUTES, "route_dlpack_no_sync")}
    old[(report.NATIVE, "dlpack_dltensor")] = RUN[(report.ROUTES, "route_dlpack_no_sync")]
    r = report.Results(fake_run(old))
    assert list(r.samples(report.ROUTES, "route_dlpack_no_sync")) == \
        RUN[(report.ROUTES, "route_dlpack_no_sync")]


def test_the_figures_are_the_reports_own_numbers():
    """``data["figures"]``: medians from the raw samples and the same paired ratios the
    tables print (bench/report/figures.py)."""
    pytest.importorskip("scipy")
    import numpy as np

    from bench.report.figures import SCHEMA, figures
    r = report.Results(fake_run(RUN))
    f = figures(r)
    assert f["schema"] == SCHEMA
    assert f["rows"][report.PEERS]["owned"]["median_ns"] == float(np.median(RUN[(report.PEERS,
                                                                              "owned")]))
    native = f["headline"]["native"]
    assert native["route_dlpack_no_sync"]["x_vs_borrow"][0] == pytest.approx(1.5)
    assert native["owned"]["x_vs_borrow"][0] == pytest.approx(2.0)
    assert f["headline"]["python"]["owned"]["x_vs_borrow"][0] == pytest.approx(2.0)
    assert f["owned_minus_borrow_ns"]["native"][0] == pytest.approx(
        float(np.median([x - x / 2 for x in BORROW])))
