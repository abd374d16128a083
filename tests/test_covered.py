"""``python -m covered`` (``make coverage``): paths cut to the checkout, gcov's branches
kept per translation unit, and a lost line or branch outcome named and failed."""

from __future__ import annotations

import json

from covered.__main__ import c_set, main, missing, product_path, python_set


def _gcov(unit, header, lines):
    return {"data_file": "/b/x.gcda", "files": [
        {"file": unit, "lines": []},
        {"file": header, "lines": [{"line_number": n, "count": c, "branches": [
            {"count": b} for b in branches]} for n, c, branches in lines]}]}


def test_paths_are_cut_to_the_product_folder():
    site = "/v/lib/python3.11/site-packages"
    assert product_path(f"{site}/bridge/_resolve.py") == "bridge/_resolve.py"
    assert product_path("/w/b/build/torch-2.15.0/bridge/_bridge_read.h") == "bridge/_bridge_read.h"
    assert product_path("/w/shim_ext/include/torch_borrow/reader.h") == \
        "shim_ext/include/torch_borrow/reader.h"
    assert product_path("/usr/include/python3.11/object.h") is None


def test_branches_are_kept_per_unit_and_lines_merged():
    reader = "/w/shim_ext/include/torch_borrow/reader.h"
    got = c_set([_gcov("/w/bridge/_bridge.c", reader, [(10, 3, [1, 0]), (11, 0, [])]),
                 _gcov("/t/shim_ext/examples/consumer.c", reader, [(10, 0, [0, 2]),
                                                                  (11, 1, [])])])
    assert got == {"shim_ext/include/torch_borrow/reader.h": {
        "lines": [10, 11],
        "branches": [["bridge/_bridge.c", 10, 0], ["shim_ext/examples/consumer.c", 10, 1]]}}


def test_a_lost_item_is_named_and_fails(tmp_path, capsys):
    report = {"files": {"/s/bridge/_select.py": {"executed_lines": [1, 2, 5],
                                                 "executed_branches": [[2, 5]]}}}
    assert python_set(report) == {"bridge/_select.py": {"lines": [1, 2, 5],
                                                        "branches": [[2, 5]]}}
    base = {"python": python_set(report), "c": {}}
    now = {"python": {"bridge/_select.py": {"lines": [1, 2], "branches": []}}, "c": {}}
    assert missing(base, now) == ["python bridge/_select.py:5 line",
                                  "python bridge/_select.py: branch [2, 5]"]
    assert missing(base, base) == []
    (tmp_path / "cov.json").write_text(json.dumps(report))
    (tmp_path / "base.json").write_text(json.dumps({**now, "label": "smaller"}))
    out = tmp_path / "summary.json"
    args = ["--python", str(tmp_path / "cov.json"), "--gcov-dir", str(tmp_path), "--out", str(out)]
    assert main(args + ["--baseline", str(tmp_path / "base.json")]) == 0  # more than the baseline
    (tmp_path / "base.json").write_text(json.dumps({**base, "label": "larger",
                                                    "python": {"bridge/_select.py": {
                                                        "lines": [1, 2, 5, 9], "branches": []}}}))
    assert main(args + ["--baseline", str(tmp_path / "base.json")]) == 1
    assert "not covered now: python bridge/_select.py:9 line" in capsys.readouterr().out
