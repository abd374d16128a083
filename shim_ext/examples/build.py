"""Build the consumer examples against the installed torch: one compiler call each.

    python shim_ext/examples/build.py OUT_DIR      # builds both, prints the commands

- ``consumer.cpp`` -> ``borrow_consumer``: torch's headers for the declarations
  (``torch.utils.cpp_extension.include_paths()`` and ``shim_ext/include``),
  ``-std=c++20`` for torch >= 2.14 (their headers need it), ``-std=c++17`` before.
- ``consumer.c`` -> ``borrow_consumer_c``: plain C11, no torch header (``shim_ext/include``'s
  ``torch_borrow/abi.h`` for the stable ABI's types).

Neither links a torch library: each finds torch's functions with ``dlsym`` in what
``import torch`` loaded. ``import torch`` before importing them.
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
EXAMPLES = {"consumer.cpp": "borrow_consumer", "consumer.c": "borrow_consumer_c"}


def command(source: str, out_dir: pathlib.Path) -> list[str]:
    """The compiler command that builds ``source`` (a key of EXAMPLES) into ``out_dir``."""
    out = pathlib.Path(out_dir) / (EXAMPLES[source] + sysconfig.get_config_var("EXT_SUFFIX"))
    python = ["-I" + sysconfig.get_paths()["include"]]
    common = ["-O2", "-fPIC", "-shared", "-fvisibility=hidden", "-Wall", "-Wextra"]
    if source.endswith(".c"):
        return [os.environ.get("CC", "cc"), "-std=c11", *common, *python,
                "-I" + str(HERE.parent / "include"), str(HERE / source), "-o", str(out), "-ldl"]
    import torch
    import torch.utils.cpp_extension as cpp_extension
    from packaging.version import Version

    std = "c++20" if Version(torch.__version__).release >= (2, 14) else "c++17"
    torch_includes = ["-I" + p for p in (str(HERE.parent / "include"),
                                         *cpp_extension.include_paths())]
    return [os.environ.get("CXX", "c++"), f"-std={std}", *common,
            f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
            *python, *torch_includes, str(HERE / source), "-o", str(out), "-ldl"]


def build(source: str, out_dir: pathlib.Path) -> pathlib.Path:
    """Compile ``source`` into ``out_dir``; returns the module's path. Raises
    CalledProcessError with the compiler's output on failure."""
    cmd = command(source, out_dir)
    pathlib.Path(out_dir).mkdir(parents=True, exist_ok=True)
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return pathlib.Path(cmd[cmd.index("-o") + 1])


if __name__ == "__main__":
    out_dir = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    for src in EXAMPLES:
        print(shlex.join(command(src, out_dir)))
        try:
            print("->", build(src, out_dir))
        except subprocess.CalledProcessError as exc:
            sys.exit(exc.stdout + exc.stderr)
