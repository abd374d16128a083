"""The header-only release (shim_ext/dist_header.py, ``make dist-header``): a reproducible
tarball named by the header's version, holding every header consumer.h includes, and a
consumer compiled from the extracted tarball alone reads a tensor as torch does.
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys
import sysconfig
import tarfile

from helpers.paths import ROOT

SCRIPT = ROOT / "shim_ext" / "dist_header.py"


def _write(out: pathlib.Path) -> pathlib.Path:
    got = subprocess.run([sys.executable, "-P", str(SCRIPT), "--out", str(out)], check=True,
                         capture_output=True, text=True)
    return pathlib.Path(got.stdout.strip())


def test_the_tarball_is_versioned_complete_and_reproducible(tmp_path):
    first, second = _write(tmp_path / "a"), _write(tmp_path / "b")
    assert first.read_bytes() == second.read_bytes()  # same sources, same bytes
    n = int(re.search(r"#define TORCH_BORROW_CONSUMER_VERSION (\d+)",
                      (ROOT / "shim_ext/include/torch_borrow/consumer.h").read_text()).group(1))
    top = f"torch-borrow-consumer-{n // 10000}.{n // 100 % 100}.{n % 100}"
    assert first.name == top + ".tar.gz"
    with tarfile.open(first) as tar:
        names = set(tar.getnames())
        readme = tar.extractfile(f"{top}/README.md").read().decode()
    includes = set(re.findall(r"^#include <(torch_borrow/[\w.]+)>", "\n".join(
        p.read_text() for p in (ROOT / "shim_ext/include/torch_borrow").glob("*.h")
        if p.name in ("consumer.h", "resolve.h", "read_route.h", "next_to_read.h", "reader.h",
                      "tables.h", "libraries.h", "thread_state.h", "abi.h")),
        re.M))
    # the implementation headers consumer.h includes ship with it
    assert {"torch_borrow/resolve.h", "torch_borrow/read_route.h",
            "torch_borrow/next_to_read.h"} <= includes, includes
    assert includes <= {n.removeprefix(f"{top}/include/") for n in names}, includes
    for name in ("include/torch_borrow/consumer.h", "include/torch_borrow/consumer.pxd",
                 "include/torch_borrow/__init__.pxd", "examples/minimal.c", "README.md"):
        assert f"{top}/{name}" in names, name
    assert not any("shim.h" in n or "pyobject.h" in n for n in names)  # the prototype's own
    assert "## Versions" in readme and top.rsplit("-", 1)[1] in readme


def test_a_consumer_builds_from_the_tarball_alone(tmp_path):
    path = _write(tmp_path / "dist")
    with tarfile.open(path) as tar:
        tar.extractall(tmp_path / "x", filter="data")
    top = tmp_path / "x" / path.name.removesuffix(".tar.gz")
    so = tmp_path / ("minimal" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run(["cc", "-std=c11", "-O2", "-shared", "-fPIC", "-Wall", "-Werror",
                    "-I" + sysconfig.get_paths()["include"], "-I" + str(top / "include"),
                    str(top / "examples" / "minimal.c"), "-o", str(so), "-ldl"], check=True)
    # a child process: this one may have imported the installed examples' "minimal"
    check = ("import sys, torch; sys.path.insert(0, sys.argv[1]); import minimal; "
             "assert minimal.__file__.startswith(sys.argv[1]), minimal.__file__; "
             "t = torch.arange(12.0).reshape(3, 4).t(); "
             "assert minimal.view(t)[:3] == (t.data_ptr(), (4, 3), (1, 4)), minimal.view(t); "
             "print('read')")
    got = subprocess.run([sys.executable, "-P", "-c", check, str(tmp_path)], check=True,
                         capture_output=True, text=True)
    assert got.stdout.strip() == "read"
