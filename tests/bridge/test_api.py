"""The public API: names, path selection, counters, errors, the info command."""

import subprocess
import sys

import pytest
import torch

import bridge
from helpers.expect import expected_paths, torch_answer, view_fields


def test_all_public_names_exist():
    for name in bridge.__all__:
        assert hasattr(bridge, name), name


def test_view_matches_torch(view_on, path):
    t = torch.randn(32, 32)
    v = view_on(t)
    assert view_fields(v) == torch_answer(t)
    assert v.path == path
    assert v.obj is t


def test_view_keeps_the_tensor_alive(view_on):
    t = torch.arange(6, dtype=torch.int64).reshape(2, 3)
    v = view_on(t)
    ptr = t.data_ptr()
    del t
    assert v.obj.data_ptr() == ptr
    assert v.obj.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_set_path_routes_view(path):
    bridge.set_path(path)
    assert bridge.get_path() == path
    assert bridge.requested_path() == path
    assert bridge.view(torch.ones(3)).path == path


def test_using_path_restores(path):
    bridge.set_path("auto")
    before = bridge.get_path()
    with bridge.using_path(path) as chosen:
        assert chosen == path == bridge.view(torch.ones(1)).path
    assert bridge.get_path() == before
    assert bridge.requested_path() == "auto"


def test_using_path_restores_after_an_error(path):
    with pytest.raises(TypeError):
        with bridge.using_path(path):
            bridge.view(None)
    assert bridge.requested_path() == "auto"


def test_unknown_path_is_a_value_error():
    with pytest.raises(ValueError, match="unknown path 'fast'"):
        bridge.set_path("fast")


def test_unavailable_path_says_why():
    missing = [p for p, ok in expected_paths().items() if not ok]
    if not missing:
        pytest.skip("every path is available on this torch")
    for p in missing:
        with pytest.raises(bridge.PathUnavailableError, match=p):
            bridge.set_path(p)


def test_counters_count_each_view_once(view_on, path):
    bridge.reset_path_counts()
    t = torch.zeros(2)
    for _ in range(5):
        view_on(t)
    with pytest.raises(TypeError):
        view_on(object())
    counts = bridge.path_counts()
    assert counts == {p: (5 if p == path else 0) for p in counts}


def test_not_a_tensor_is_a_type_error(view_on):
    for bad in (None, 1, 2.0, [1, 2], "t", torch.float32, torch.device("cpu")):
        with pytest.raises(TypeError, match="expected a torch.Tensor"):
            view_on(bad)


def test_conjugate_and_negative_views_are_refused(view_on):
    c = torch.randn(3, dtype=torch.complex64)
    with pytest.raises(BufferError, match="resolve_conj"):
        view_on(c.conj())
    with pytest.raises(BufferError, match="resolve_neg"):
        view_on(c.conj().imag)
    assert view_on(c.conj().resolve_conj()).ptr != c.data_ptr()


def test_sparse_and_meta_are_refused(view_on):
    with pytest.raises(BufferError, match="sparse_coo"):
        view_on(torch.eye(3).to_sparse())
    with pytest.raises(BufferError, match="meta"):
        view_on(torch.empty(3, device="meta"))


def test_view_cannot_be_made_directly():
    with pytest.raises(TypeError):
        bridge.TensorView()


def test_native_loop_returns_ns_per_call(path):
    ns = bridge._bridge._native_loop(torch.ones(4), path, 1000)
    assert 0 < ns < 1e6


def test_native_loop_times_a_critical_section_around_handle_and_read_alone(path):
    t = torch.ones(4)
    assert 0 < bridge._bridge._native_loop(t, path, 100, critical_section=True, gate=False)
    with pytest.raises(ValueError, match="pass gate=False"):
        bridge._bridge._native_loop(t, path, 100, critical_section=True)


def test_info_command_reports_the_checks():
    out = subprocess.run([sys.executable, "-P", "-m", "bridge", "info"], check=True,
                         capture_output=True, text=True).stdout
    assert "metadata check   torch_borrow_custom_metadata (shim_ext/" in out, out
    assert "conj/neg bits    " in out, out


def test_info_command_reports_paths():
    out = subprocess.run([sys.executable, "-P", "-m", "bridge", "info"], check=True,
                         capture_output=True, text=True).stdout
    assert torch.__version__ in out
    for name, ok in expected_paths().items():
        assert any(line.split()[:2] == [name, "available" if ok else "unavailable:"]
                   for line in out.splitlines()), out


def test_not_a_tensor_names_what_it_got(view_on):
    """The message names the type as a user wrote it (``None``, ``int``), and points an
    array at the zero-copy way to a tensor."""
    import numpy as np

    class Exporter:
        def __dlpack__(self, stream=None):
            raise AssertionError("never called")

    cases = [(None, "got None$"), (1, "got int$"),
             (np.zeros(3), r"got numpy.ndarray; view torch.from_numpy\(a\)"),
             (Exporter(), r"Exporter; it has __dlpack__: view torch.from_dlpack\(x\)")]
    for bad, message in cases:
        with pytest.raises(TypeError, match=message):
            view_on(bad)


def test_nested_tensor_error_asks_for_no_bug_report(view_on):
    import warnings

    with warnings.catch_warnings():  # "nested tensors are a prototype feature"
        warnings.simplefilter("ignore")
        nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    with pytest.raises(BufferError, match=r"\.unbind\(\)") as info:
        view_on(nested)
    assert "Please file an issue" not in str(info.value)


def test_repr_prints_the_device_as_torch_does(view_on):
    v = view_on(torch.zeros(2, 3))
    assert f"device='{torch.zeros(1).device}'" in repr(v) and "cpu:-1" not in repr(v)
    assert f"shape={tuple(v.shape)}" in repr(v) and f"ptr={v.ptr:#x}" in repr(v)


def test_a_tensor_that_requires_grad_is_viewed_like_data_ptr(view_on):
    """Viewed, as ``t.data_ptr()`` allows it (``__dlpack__`` refuses it): a view reads
    metadata; README.md says what writing through ``ptr`` bypasses."""
    t = torch.randn(4, 4, requires_grad=True)
    assert view_fields(view_on(t)) == torch_answer(t)


def _stale_child(code: str) -> str:
    """Run ``code`` in a child whose torch reports another version than shim_ext was
    built for (the borrow is then stale), returning its stdout."""
    prelude = ("import warnings, torch\n"
               "torch.__version__ = '0.0.0+other'\n"
               "import bridge\n")
    out = subprocess.run([sys.executable, "-P", "-c", prelude + code], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_stale_shim_ext_leaves_no_path_without_the_owned_shim():
    """Without the owned shim (torch < 2.14) a stale shim_ext leaves no path: the borrow
    is refused, and the pointer trick needs shim_ext's metadata check. The error says
    each path's reason, the rebuild command among them."""
    if expected_paths()["owned"] or not expected_paths()["borrow"]:
        pytest.skip("the owned shim exists here: test_auto_warns_once_... covers it")
    out = _stale_child(
        "try:\n    bridge.view(torch.zeros(2))\n"
        "except bridge.PathUnavailableError as e:\n    print('refused:', e)\n")
    assert out.startswith("refused: no path can run on this torch: "), out
    assert "shim_ext was built for torch" in out and "pip install" in out, out
    assert "needs shim_ext's torch_borrow_custom_metadata" in out, out


def test_auto_warns_once_when_it_passes_over_a_stale_borrow():
    if not expected_paths()["borrow"]:
        pytest.skip("no borrow on this torch (asserted in test_availability)")
    if not expected_paths()["owned"]:
        pytest.skip("no owned shim: a stale shim_ext leaves no path (the test above)")
    out = _stale_child(
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    bridge.view(torch.zeros(2)); bridge.set_path('auto'); bridge.view(torch.zeros(2))\n"
        "stale = [x for x in w if issubclass(x.category, bridge.StaleShimWarning)]\n"
        "print(len(stale), bridge.get_path())\n"
        "assert stale[0].filename == '<string>', stale[0].filename  # the user's line\n"
        "print(stale[0].message)\n"
        "from bridge import _info\n"
        "print(_info.report()['verdict'])\n")
    first, message, verdict = out.splitlines()[:3]
    count, path = first.split()
    want = "owned"
    assert (count, path) == ("1", want), out
    assert "shim_ext was built for torch" in message and "pip install" in message, message
    assert verdict.startswith(f"STALE: view() uses {want}, not the borrow"), verdict


def test_info_prints_the_torch_shim_ext_was_built_for_and_a_verdict():
    out = subprocess.run([sys.executable, "-P", "-m", "bridge", "info"], capture_output=True,
                         text=True, timeout=300).stdout
    import shim_ext
    from shim_ext import _borrow

    assert f"shim_ext built for torch {shim_ext.built_for(_borrow)}\n" in out, out
    last = out.rstrip().splitlines()[-1]
    assert last.startswith("verdict          "), last
    if expected_paths()["borrow"]:
        assert "OK: view() uses the borrowed handle" in last, last
