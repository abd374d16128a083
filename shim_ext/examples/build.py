"""Build the consumer examples: one compiler call each, no torch library on the link line.

    python shim_ext/examples/build.py OUT_DIR      # builds all four, prints the commands

- ``minimal.c`` -> ``minimal``: the README's consumer (C11);
- ``launcher.c`` -> ``launcher``: the README's kernel launcher, ``add(a, b, out)`` (C11);
- ``consumer.c`` -> ``borrow_consumer_c``: the full C consumer (C11);
- ``cython_consumer.pyx`` -> ``cython_consumer``: the same read in Cython, cimporting
  ``torch_borrow/consumer.pxd`` (``build_cython``);
- ``consumer.cpp`` -> ``borrow_consumer``: the same in C++17 (``-std=c++20`` for torch
  >= 2.14, whose headers need it): torch's include folder is added only so that its
  ``static_assert`` s can compare ``torch_borrow/abi.h``'s types with torch's own.

Each includes ``torch_borrow/consumer.h`` from ``shim_ext.get_include()`` and finds torch's
functions with ``dlsym`` in what ``import torch`` loaded: ``import torch`` before the first
read.
"""

from __future__ import annotations

import os
import pathlib
import shlex
import subprocess
import sys
import sysconfig

HERE = pathlib.Path(__file__).resolve().parent
#: source file -> module name
EXAMPLES = {"minimal.c": "minimal", "consumer.cpp": "borrow_consumer",
            "consumer.c": "borrow_consumer_c", "launcher.c": "launcher"}


def include_dir() -> str:
    """``shim_ext.get_include()`` of this checkout (the installed one's is the same)."""
    return str(HERE.parent / "include")


def _flags() -> list[str]:
    """Extra compiler flags for the examples alone, from ``$EXAMPLE_CFLAGS`` (``make
    coverage`` sets ``-O0 --coverage`` there; not CFLAGS, which every other build of the
    process would take too)."""
    return shlex.split(os.environ.get("EXAMPLE_CFLAGS", ""))


def command(source: str, out_dir: pathlib.Path) -> list[str]:
    """The compiler command that builds ``source`` (a key of EXAMPLES) into ``out_dir``."""
    out = pathlib.Path(out_dir) / (EXAMPLES[source] + sysconfig.get_config_var("EXT_SUFFIX"))
    includes = ["-I" + sysconfig.get_paths()["include"], "-I" + include_dir()]
    common = ["-O2", "-fPIC", "-shared", "-fvisibility=hidden", "-Wall", "-Wextra"]
    if source.endswith(".c"):
        return [os.environ.get("CC", "cc"), "-std=c11", *common, *_flags(), *includes,
                str(HERE / source), "-o", str(out), "-ldl"]
    import torch
    from packaging.version import Version

    std = "c++20" if Version(torch.__version__).release >= (2, 14) else "c++17"
    torch_include = pathlib.Path(torch.__file__).parent / "include"
    return [os.environ.get("CXX", "c++"), f"-std={std}", *common, *_flags(), *includes,
            "-I" + str(torch_include), str(HERE / source), "-o", str(out), "-ldl"]


def build(source: str, out_dir: pathlib.Path) -> pathlib.Path:
    """Compile ``source`` into ``out_dir``; returns the module's path. Raises
    CalledProcessError with the compiler's output on failure (warnings are errors)."""
    cmd = command(source, out_dir)
    cmd.insert(1, "-Werror")
    pathlib.Path(out_dir).mkdir(parents=True, exist_ok=True)
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return pathlib.Path(cmd[cmd.index("-o") + 1])


def cython_command(out_dir: pathlib.Path) -> list[list[str]]:
    """The two commands that build ``cython_consumer.pyx`` into ``out_dir``: Cython with
    the header folder on its include path (it cimports ``torch_borrow/consumer.pxd``),
    then the C compiler as for the C examples."""
    out = pathlib.Path(out_dir)
    c_file = out / "cython_consumer.c"
    so = out / ("cython_consumer" + sysconfig.get_config_var("EXT_SUFFIX"))
    return [[sys.executable, "-m", "cython", "-3", "-I", include_dir(),
             str(HERE / "cython_consumer.pyx"), "-o", str(c_file)],
            [os.environ.get("CC", "cc"), "-std=c11", "-O2", "-fPIC", "-shared",
             "-I" + sysconfig.get_paths()["include"], "-I" + include_dir(), str(c_file),
             "-o", str(so), "-ldl"]]


def build_cython(out_dir: pathlib.Path) -> pathlib.Path:
    """Build ``cython_consumer`` into ``out_dir``; returns the module's path. Raises
    CalledProcessError with the tools' output on failure."""
    pathlib.Path(out_dir).mkdir(parents=True, exist_ok=True)
    for cmd in cython_command(out_dir):
        subprocess.run(cmd, check=True, capture_output=True, text=True)
    return pathlib.Path(cython_command(out_dir)[1][-2])


if __name__ == "__main__":
    out_dir = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    for src in EXAMPLES:
        print(shlex.join(command(src, out_dir)))
        try:
            print("->", build(src, out_dir))
        except subprocess.CalledProcessError as exc:
            sys.exit(exc.stdout + exc.stderr)
    for cmd in cython_command(out_dir):
        print(shlex.join(cmd))
    try:
        print("->", build_cython(out_dir))
    except subprocess.CalledProcessError as exc:
        sys.exit(exc.stdout + exc.stderr)
