"""The launcher workload ``bench/callgrind.py`` counts (``bench/launcher_workload.py``):
its statements read the right values, its shapes are distinct, the views of the last
call stay alive beside the new ones, and the rows, steps and the bound on them are
computed as the report states (on made-up counts: every figure checked is computed from
them)."""

from __future__ import annotations

import timeit

import pytest
import torch

import bridge
from bench import launcher_workload as lw
from helpers.expect import expected_paths


def test_each_launch_has_distinct_shapes_of_one_to_four_dims():
    for k in lw.KS:
        shapes = lw.launch_shapes(k)
        assert len(shapes) == k == len(set(shapes))
        assert {len(s) for s in shapes} <= {1, 2, 3, 4}
    assert {len(s) for s in lw.launch_shapes(8)} == {1, 2, 3, 4}


@pytest.mark.skipif(not expected_paths()["borrow"], reason="no borrow on this torch "
                    "(asserted in test_availability)")
def test_the_statements_view_the_right_tensors_and_keep_the_last_calls_views():
    """Run once, the held views describe the launch's tensors as torch does; run again,
    the first call's views were alive until the second call's were all made."""
    ns = lw.namespace(torch, bridge)
    statements = lw.statements()
    for name, (stmt, per) in statements.items():
        timeit.Timer(stmt, globals=ns).timeit(1)
    for k in lw.KS:
        views, tensors = ns[f"held{k}"][0], ns[f"ts{k}"]
        assert len(views) == k
        for v, t in zip(views, tensors):
            assert (v.ptr, v.shape, v.strides) == (t.data_ptr(), tuple(t.shape), t.stride())
            assert (v.dtype, v.device_type, v.device_index) == (t.dtype, t.device.type, -1)
        kept = ns[f"kept{k}"][0]  # the anchor keeps its arguments alike
        assert len(kept) == k and all(a is b for a, b in zip(kept, tensors))
        # the launch alone is the anchor, less its reads and nothing else
        assert statements[f"launch_bare_{k}"][0] == statements[f"launch_hand_{k}"][0].replace(
            f"    {lw.FIVE}\n", "")
        first = ns[f"held{k}"][0]
        timeit.Timer(statements[f"launch_view_{k}"][0], globals=ns).timeit(1)
        second = ns[f"held{k}"][0]
        assert first is not second and not {id(v) for v in first} & {id(v) for v in second}
    for d in lw.DIMS:
        t = ns[f"td{d}"]
        v = bridge.view(t)
        assert (v.ptr, v.shape, v.strides) == (t.data_ptr(), (2,) * d, t.stride())


def _made_up_counts():
    per_call = {}
    for k in lw.KS:
        per_call[f"py:launch_view_{k}"] = 2000.0 * k + 500
        per_call[f"py:launch_hand_{k}"] = 4000.0 * k
        per_call[f"py:launch_bare_{k}"] = 100.0 * k + 400
    for d in lw.DIMS:
        cliff = 150 if d >= 9 else 0
        per_call[f"py:dims_view_borrow_{d}"] = 800.0 + 13 * d + cliff
        per_call[f"py:dims_view_read_{d}"] = 1900.0 + 25 * d
    return per_call


def test_launch_rows_are_per_tensor_with_the_goal_at_its_ks():
    rows = lw.launch_rows(_made_up_counts())
    assert [r["k"] for r in rows] == list(lw.KS)
    one = rows[0]
    assert one["view"] == 2500.0 and one["hand"] == 4000.0 and one["ratio"] == 2500 / 4000
    assert one["bare"] == 500.0 and one["reads_ratio"] == (2500 - 500) / (4000 - 500)
    assert [r["status"] for r in rows] == ["missed", "met", "met", "reported"]


def test_the_dims_bound_finds_a_step_and_passes_a_straight_line():
    rows = lw.dims_rows(_made_up_counts())
    assert rows[0]["borrow_step"] is None and rows[9]["borrow_step"] == 13 + 150
    borrow = lw.slope_check(rows, "view_borrow")
    assert borrow["slope"] == pytest.approx(13.0) and borrow["bound"] == pytest.approx(26.0)
    assert (borrow["worst_d"], borrow["worst_step"], borrow["ok"]) == (9, 163.0, False)
    read = lw.slope_check(rows, "view_read")
    assert read["ok"] is True and read["worst_step"] == pytest.approx(25.0)
