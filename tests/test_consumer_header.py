"""torch_borrow/consumer.h, the installed header: found by shim_ext.get_include(),
compiling alone as C99 and C++17 with warnings as errors, the README's consumer
(shim_ext/examples/minimal.c, printed there verbatim) about twenty lines that agree with
torch, and the whole hostile catalogue (tests/hostile/cases.py) and every torch dtype
through the consumers built on it: the expected exception type (as the bridge raises it)
or a view equal to torch's own accessors, never a crash.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import sysconfig
import textwrap

import pytest
import torch

import bridge
from bench.native import load_extension
import shim_ext
from helpers import cases as parity_cases
from test_consumer_example import ROUTES, _unreadable, build, expected_tuple, needs_route

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "shim_ext" / "examples"
CONSUMERS = ("minimal", "borrow_consumer", "borrow_consumer_c")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("consumer_header")
    for src in build.EXAMPLES:
        try:
            build.build(src, out)
        except subprocess.CalledProcessError as exc:
            pytest.fail(f"{' '.join(exc.cmd)}\n{exc.stdout}{exc.stderr}")
    return out


# --- the header, installed -----------------------------------------------------------------
def test_get_include_is_the_installed_header_folder():
    """The installed package's folder (tests run with -P: never the checkout's), with the
    header in it, byte for byte the checkout's."""
    inc = pathlib.Path(shim_ext.get_include())
    assert inc.is_absolute() and inc.parent == pathlib.Path(shim_ext.__file__).parent
    for name in ("consumer.h", "abi.h"):
        assert (inc / "torch_borrow" / name).read_bytes() == (
            ROOT / "shim_ext" / "include" / "torch_borrow" / name).read_bytes()
    assert (pathlib.Path(shim_ext.__file__).parent / "examples" / "minimal.c").is_file()


@pytest.mark.parametrize("lang", ["c99", "c11", "c++17"])
def test_header_compiles_alone_without_warnings(tmp_path, lang):
    """No torch header, no torch library: Python's headers and the installed folder only."""
    src = tmp_path / ("tu.cpp" if lang.startswith("c++") else "tu.c")
    src.write_text("#include <torch_borrow/consumer.h>\n"
                   "int tu(PyObject* o, torch_borrow_meta* m) { return torch_borrow_read(o, m); }\n")
    cc = os.environ.get("CXX", "c++") if lang.startswith("c++") else os.environ.get("CC", "cc")
    cmd = [cc, f"-std={lang}", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
           "-I" + sysconfig.get_paths()["include"], "-I" + shim_ext.get_include(), str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_header_is_versioned_and_names_its_symbols():
    """Every torch symbol the header looks up is named in its leading comment (the dtype
    codes as aoti_torch_dtype_*; a getter family by its suffix, as the comment lists it)."""
    text = (pathlib.Path(shim_ext.get_include()) / "torch_borrow" / "consumer.h").read_text()
    assert re.search(r"#define TORCH_BORROW_CONSUMER_VERSION \d+", text)
    doc = " ".join(text[:text.index("#ifndef TORCH_BORROW_CONSUMER_H")].replace("*", " ").split())
    doc = doc.replace("_ ", "_")  # a name broken across lines
    symbols = set(re.findall(r'"((?:aoti_torch|torch)_[a-z0-9_]+)"', text))
    assert len(symbols) > 20
    for sym in symbols:
        if sym.startswith(("aoti_torch_dtype_", "aoti_torch_device_type_")) and sym != \
                "aoti_torch_device_type_meta":
            continue  # tables: "aoti_torch_dtype_* (the table below)", the device fallback
        suffix = sym.removeprefix("aoti_torch")
        assert sym in doc or (sym.startswith("aoti_torch_get_") and suffix in doc), sym
    assert "aoti_torch_dtype_" in doc and "torch._C._autograd.DeviceType" in doc


# --- the README's consumer ---------------------------------------------------------------------
def test_readme_shows_the_minimal_consumer_verbatim():
    readme = (ROOT / "README.md").read_text()
    source = (EXAMPLES / "minimal.c").read_text()
    assert "```c\n" + source + "```" in readme
    assert len(source.splitlines()) <= 25


@needs_route
@pytest.mark.parametrize("case", ["contiguous", "transposed, storage offset", "0-d",
                                  "expanded", "plain subclass", "complex64", "cuda"])
def test_minimal_consumer_equals_torch(built, case):
    from test_consumer_example import make

    minimal = load_extension("minimal", built)
    t = make(case)
    assert minimal.view(t) == expected_tuple(t)[:4]
    with pytest.raises(TypeError, match="expected a torch.Tensor, got int"):
        minimal.view(3)
    with pytest.raises(BufferError, match="conjugate"):
        minimal.view(torch.randn(2, dtype=torch.complex64).conj())


# --- every dtype, and the hostile catalogue ----------------------------------------------------
def _outcome(fn, x):
    try:
        return fn(x)
    except Exception as exc:  # noqa: BLE001 (the type is what is compared)
        return type(exc)


@needs_route
@pytest.mark.parametrize("route", ROUTES)
def test_every_dtype_as_the_bridge(built, route):
    """Each dtype torch exposes, 2x3 with a storage offset: viewed with the bridge's
    fields, or refused with the bridge's exception type (quantized, sub-byte)."""
    c = load_extension("borrow_consumer_c", built)
    if route == "owned":
        assert c._resolve("owned") == "owned"
    try:
        checked = 0
        for dtype in parity_cases.torch_dtypes():
            try:
                t = torch.empty(3, 3, dtype=dtype)[1:]
            except Exception:  # noqa: BLE001 (torch cannot make one: nothing to read)
                continue
            want = _outcome(bridge.view, t)
            got = _outcome(c.view, t)
            if isinstance(want, type):
                assert got is want, (dtype, got)
            else:
                assert got == expected_tuple(t), dtype
            checked += 1
        assert checked >= 20
    finally:
        c._resolve()


CHILD = textwrap.dedent("""
    import json, sys, warnings
    import torch, bridge
    from hostile import cases
    from pathlib import Path
    from bench.native import load_extension
    out = {}
    for name in sys.argv[2].split(","):
        c = load_extension(name, Path(sys.argv[1]))
        for route in sys.argv[3].split(","):
            if route == "owned" and c._resolve("owned") != "owned":
                continue
            for case in cases.CASES:
                def consume(obj, truth, c=c):
                    try:
                        got = c.view(obj)
                    except Exception as exc:
                        return type(exc).__name__, str(exc)
                    want = (truth.data_ptr(), tuple(truth.shape), tuple(truth.stride()))
                    return ("view" if truth is not None and got[:3] == want
                            else "wrong view"), repr((got, truth is not None))
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        out[f"{name}|{route}|{case.name}"] = [case.expect,
                                                              *case.run(torch, consume)]
                    except cases.CaseUnavailable as exc:
                        out[f"{name}|{route}|{case.name}"] = ["unavailable", str(exc), ""]
            c._resolve()
    print(json.dumps(out))
""")


@pytest.mark.skipif(_unreadable() is not None, reason=str(_unreadable()))
def test_hostile_catalogue_through_the_consumers(built):
    """Every case of the catalogue, in a child process (a crash fails the test with its
    output): the expected exception type, or a view equal to the real tensor's."""
    from hostile import cases

    routes = ",".join(r for r in ROUTES)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "tests"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-P", "-c", CHILD, str(built),
                           "borrow_consumer,borrow_consumer_c", routes],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads(proc.stdout.splitlines()[-1])
    assert len(results) >= 2 * len(cases.CASES)
    wrong = {k: v for k, v in results.items() if v[0] != "unavailable" and v[0] != v[1]}
    assert not wrong, json.dumps(wrong, indent=1)
