"""proposal/tools/dlpack_device_check.py, the DLPack series' cases on a GPU machine's
torch: the series applies to the two base files it changes, and the edits it makes for a
torch without the read-only exchange table still find their lines in the patched cases
(compiling and running them is the tool's own run: bench/gpu/run.sh --dlpack-only)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from helpers.paths import ROOT


@pytest.fixture(scope="module")
def tool():
    path = ROOT / "proposal" / "tools" / "dlpack_device_check.py"
    spec = importlib.util.spec_from_file_location("dlpack_device_check", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("dlpack_device_check", module)
    spec.loader.exec_module(module)
    return module


def test_the_series_applies_and_every_narrowing_finds_its_line(tool, tmp_path, monkeypatch):
    tree = tool.patched_tree(tmp_path)
    text = (tree / tool.make_patch.TEST_DLPACK).read_text()
    for case in (c for cases in tool.make_patch.DLPACK_TESTS.values() for c in cases):
        assert f"def {case}(self" in text
    import torch

    monkeypatch.delattr(torch._C, "_const_dlpack_exchange_api", raising=False)
    assert tool.narrow_to_writable(tree) is True
    narrowed = (tree / tool.make_patch.TEST_DLPACK).read_text()
    assert "_const_dlpack_exchange_api" not in narrowed
    for writable in tool.WRITABLE_ONLY.values():
        assert writable in narrowed
