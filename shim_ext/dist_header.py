"""The header-only release of the consumer header: one versioned tarball to vendor.

    python shim_ext/dist_header.py [--out build/dist]      (make dist-header)

writes ``torch-borrow-consumer-<version>.tar.gz`` (the version is the header's
``TORCH_BORROW_CONSUMER_VERSION``) holding, under ``torch-borrow-consumer-<version>/``:
``include/torch_borrow/`` (``consumer.h`` and every header it includes, found by
following its ``#include <torch_borrow/...>`` lines; ``consumer.pxd`` and the empty
``__init__.pxd`` for Cython; ``CHANGES.md``, what each version changed), ``examples/``
(the C, C++ and Cython consumers) and a ``README.md`` with the contents, the compile
line and the version policy. The archive is reproducible: sorted members, no owner, fixed times, so the same
sources give the same bytes. Prints the path written. Needs no torch.
"""

from __future__ import annotations

import argparse
import gzip
import io
import pathlib
import re
import sys
import tarfile

HERE = pathlib.Path(__file__).resolve().parent
INCLUDE = HERE / "include"
EXAMPLES = HERE / "examples"
INCLUDE_RE = re.compile(r"^#include <(torch_borrow/[\w.]+)>", re.M)

README = """\
# torch-borrow-consumer {version}

A header-only C reader of a torch tensor's metadata (data pointer, sizes, strides, dtype,
device) from a Python object, on the torch your users have: `torch_borrow/consumer.h`.
Vendor the `include/` folder into your source tree; nothing of it is needed at run time.

    cc -std=c11 -O2 -shared -fPIC -I<Python include> -Iinclude your_module.c -ldl

Import torch before the first read. The header finds torch's functions with `dlsym` in
what `import torch` loaded: no torch header or library on your compile or link line, so
one build per CPython version serves every torch it supports (2.13 and newer, tested).

## Contents

{contents}

## Versions

`TORCH_BORROW_CONSUMER_VERSION` is major * 10000 + minor * 100 + patch ({version} here).
A major release changes something a caller must adapt to (a call's signature, the
meaning of a field, the layout of `torch_borrow_meta`); a minor one adds calls or routes
and may refuse more inputs, never fewer; a patch release fixes without changing a call.
The optional `shim_ext` prototype is used only when its libraries pass a run-time
handshake (`torch_borrow_shim_abi()` equal to this header's `TORCH_BORROW_SHIM_ABI`,
{shim_abi} here); any other module named `shim_ext` is ignored with the reason.
The full documentation is the comment at the top of `include/torch_borrow/consumer.h`.
"""


def header_closure(root: pathlib.Path = INCLUDE) -> list[str]:
    """``torch_borrow/consumer.h`` and every header it includes, transitively, as paths
    relative to ``root``, sorted. Raises ``FileNotFoundError`` for an include that is not
    there."""
    seen, todo = set(), ["torch_borrow/consumer.h"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += INCLUDE_RE.findall((root / name).read_text())
    return sorted(seen)


def version(root: pathlib.Path = INCLUDE) -> str:
    """The header's ``TORCH_BORROW_CONSUMER_VERSION`` as ``major.minor.patch``."""
    text = (root / "torch_borrow" / "consumer.h").read_text()
    n = int(re.search(r"#define TORCH_BORROW_CONSUMER_VERSION (\d+)", text).group(1))
    return f"{n // 10000}.{n // 100 % 100}.{n % 100}"


def shim_abi(root: pathlib.Path = INCLUDE) -> int:
    """``TORCH_BORROW_SHIM_ABI`` of ``torch_borrow/abi.h``."""
    text = (root / "torch_borrow" / "abi.h").read_text()
    return int(re.search(r"#define TORCH_BORROW_SHIM_ABI (\d+)", text).group(1))


def members() -> dict[str, bytes]:
    """Archive path (below the top folder) -> bytes, for every file of the release."""
    out = {f"include/{name}": (INCLUDE / name).read_bytes() for name in header_closure()}
    for other in ("consumer.pxd", "__init__.pxd", "CHANGES.md"):
        out[f"include/torch_borrow/{other}"] = (INCLUDE / "torch_borrow" / other).read_bytes()
    for path in sorted(EXAMPLES.iterdir()):
        if path.suffix in (".c", ".cpp", ".pyx"):  # not build.py: it needs shim_ext
            out[f"examples/{path.name}"] = path.read_bytes()
    contents = "\n".join(f"- `{name}`" for name in sorted(out))
    out["README.md"] = README.format(version=version(), contents=contents,
                                     shim_abi=shim_abi()).encode()
    return out


def write(out_dir: pathlib.Path) -> pathlib.Path:
    """Write the tarball into ``out_dir`` (made if missing); returns its path."""
    top = f"torch-borrow-consumer-{version()}"
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in sorted(members().items()):
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{top}.tar.gz"
    with open(path, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0,
                                              filename="") as gz:
        gz.write(raw.getvalue())
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("build/dist"),
                        help="folder for the tarball (default: build/dist)")
    args = parser.parse_args(argv)
    print(write(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
