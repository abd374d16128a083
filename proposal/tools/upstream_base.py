"""Assemble ``proposal/.upstream-base``: the PyTorch files the patches touch or need.

PyTorch's main branch at the commit ``third_party/pytorch/BASE.toml`` names, file by file
from a vendored copy, the torch 2.15.0 wheel's headers or a one-line text, each checked
against the SHA-256 the manifest records; ``--from-git DIR`` takes the vendored files from
a PyTorch clone. The sources in full: ``proposal/README.md``. Exits non-zero, naming the
file, if any checksum differs.

Usage: ``python proposal/tools/upstream_base.py [--out DIR] [--from-git PYTORCH_CLONE]``
with the torch 2.15.0 environment's interpreter (it reads that wheel's headers).
"""

from __future__ import annotations

import argparse
import hashlib
import pathlib
import shutil
import subprocess
import sys
import tomllib

HERE = pathlib.Path(__file__).resolve().parent
UPSTREAM = HERE.parent / "third_party" / "pytorch"
MANIFEST = UPSTREAM / "BASE.toml"
DEFAULT_OUT = HERE.parent / ".upstream-base"


def load_manifest() -> dict:
    """BASE.toml as a dict: ``main_commit``, ``wheel_commit``, ``wheel_version`` and ``file`` rows."""
    with MANIFEST.open("rb") as f:
        return tomllib.load(f)


def wheel_include(manifest: dict) -> pathlib.Path:
    """The include directory of the installed torch, which must be the manifest's wheel.

    Raises SystemExit when torch is missing or is another build.
    """
    try:
        import torch
    except ImportError:
        raise SystemExit("upstream_base.py needs torch " + manifest["wheel_version"]
                         + " installed (make patch-check builds that environment)") from None
    if torch.version.git_version != manifest["wheel_commit"]:
        raise SystemExit(f"torch {torch.__version__} ({torch.version.git_version}) is not the "
                         f"manifest's wheel {manifest['wheel_version']} ({manifest['wheel_commit']})")
    return pathlib.Path(torch.__file__).parent / "include"


def unguard(text: str) -> str:
    """Drop the guard that wheel packaging wraps around an internal header."""
    head = "#if !defined(TORCH_STABLE_ONLY) && !defined(TORCH_TARGET_VERSION)\n"
    tail_start = "\n#else\n#error "
    if not text.startswith(head) or tail_start not in text:
        raise SystemExit("expected the wheel's TORCH_STABLE_ONLY guard around the header")
    return text[len(head):text.rindex(tail_start) + 1]


def stored_bytes(row: dict, git_dir: pathlib.Path | None) -> bytes:
    """The vendored copy of ``row`` (or, with ``git_dir``, the file at its commit)."""
    if git_dir is not None:
        return subprocess.run(["git", "-C", str(git_dir), "show", f"{row['commit']}:{row['path']}"],
                              check=True, capture_output=True).stdout
    return (UPSTREAM / row["path"]).read_bytes()


def without_pr(row: dict, stored: bytes) -> bytes:
    """A ``vendored-without-pr`` row: the stored copy (its own ``stored_sha256``) with the
    lines an open pull request (``pr``) added put back as the released tag has them,
    each ``[[...without]]`` replacement made exactly ``count`` times.

    Raises SystemExit when the stored copy or a count differs from the manifest."""
    digest = hashlib.sha256(stored).hexdigest()
    if digest != row["stored_sha256"]:
        raise SystemExit(f"{row['path']} at {row['commit'][:12]}: stored sha256 {digest} differs "
                         f"from the manifest's {row['stored_sha256']}")
    text = stored.decode()
    for edit in row["without"]:
        found = text.count(edit["old"])
        if found != edit["count"]:
            raise SystemExit(f"{row['path']}: {row['pr']}'s {edit['old']!r} found {found} times, "
                             f"not {edit['count']}")
        text = text.replace(edit["old"], edit["new"])
    return text.encode()


def pr_variant_bytes(name: str) -> tuple[dict, bytes]:
    """``(row, bytes)`` of the ``[[pr_variant]]`` named ``name``: the stored copy as it is,
    the open pull request's lines included (checked against its ``sha256``)."""
    (row,) = [r for r in load_manifest().get("pr_variant", []) if r["name"] == name]
    data = (UPSTREAM / row["path"]).read_bytes()
    if hashlib.sha256(data).hexdigest() != row["sha256"]:
        raise SystemExit(f"pr_variant {name}: {row['path']} sha256 differs from BASE.toml")
    return row, data


def file_bytes(row: dict, manifest: dict, include: pathlib.Path | None,
               git_dir: pathlib.Path | None) -> bytes:
    """The content of one manifest row, from its source."""
    source, path = row["source"], row["path"]
    if source == "text":
        return row["text"].encode()
    if source == "vendored":
        return stored_bytes(row, git_dir)
    if source == "vendored-without-pr":
        return without_pr(row, stored_bytes(row, git_dir))
    if include is None:
        include = wheel_include(manifest)
    installed = include / path
    if source == "wheel":
        return installed.read_bytes()
    if source == "wheel-unguarded":
        return unguard(installed.read_text()).encode()
    if source == "wheel-plus-2.16":
        text = installed.read_text()
        line_2_15 = "#define TORCH_VERSION_2_15_0 (((0ULL + 2) << 56) | ((0ULL + 15) << 48))\n"
        return text.replace(line_2_15, line_2_15 + line_2_15.replace("15", "16")).encode()
    raise SystemExit(f"{path}: unknown source {source!r}")


def usage_linter_exports(row: dict, out: pathlib.Path, git_dir: pathlib.Path | None) -> bytes:
    """A ``usage-linter-exports`` row: the export list as the usage linter's writer (the
    ``[[excerpt]]`` make_patch.EXPORTS_WRITER) writes it in the assembled ``out`` from the
    versioned functions the base's linter finds, the same set the base's
    shim_function_versions.txt lists; the stored copy (``stored_sha256``, at ``commit``, an
    older tree's) must name no function that this one lacks.

    Raises SystemExit when the stored copy differs from the manifest or names one."""
    import importlib.util
    import re

    stored = stored_bytes(row, git_dir)
    digest = hashlib.sha256(stored).hexdigest()
    if digest != row["stored_sha256"]:
        raise SystemExit(f"{row['path']} at {row['commit'][:12]}: stored sha256 {digest} differs "
                         f"from the manifest's {row['stored_sha256']}")
    spec = importlib.util.spec_from_file_location("make_patch", HERE / "make_patch.py")
    make_patch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_patch)
    versions = out / make_patch.VERSIONS_TXT
    assembled = versions.read_bytes()
    make_patch.run_usage_linter_writer(out)  # writes both files; the registry stays the row's
    versions.write_bytes(assembled)
    data = (out / row["path"]).read_bytes()
    names = re.compile(rb"^    (\w+);$", re.M)
    lost = sorted(set(names.findall(stored)) - set(names.findall(data)))
    if lost:
        raise SystemExit(f"{row['path']}: the stored copy names {lost}, which the base lacks")
    return data


def assemble(out: pathlib.Path, git_dir: pathlib.Path | None = None) -> list[str]:
    """Write every manifest file under ``out`` (emptied first); return the paths written.

    Raises SystemExit naming the first file whose SHA-256 differs from the manifest.
    """
    manifest = load_manifest()
    include = None
    if any(row["source"].startswith("wheel") for row in manifest["file"]):
        include = wheel_include(manifest)
    if out.exists():
        shutil.rmtree(out)
    written = []
    # A generated row (usage-linter-exports) is written from the others, so after them.
    rows = sorted(manifest["file"], key=lambda row: row["source"] == "usage-linter-exports")
    for row in rows:
        if row["source"] == "usage-linter-exports":
            data = usage_linter_exports(row, out, git_dir)
        else:
            data = file_bytes(row, manifest, include, git_dir)
        digest = hashlib.sha256(data).hexdigest()
        if digest != row["sha256"]:
            raise SystemExit(f"{row['path']} ({row['source']} at {row['commit'][:12]}): sha256 "
                             f"{digest} differs from the manifest's {row['sha256']}")
        target = out / row["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        written.append(row["path"])
    return written


def main(argv: list[str] | None = None) -> int:
    """Assemble the base; print where and how many files."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT,
                        help="where to write the base tree (default: %(default)s)")
    parser.add_argument("--from-git", type=pathlib.Path, metavar="PYTORCH_CLONE",
                        help="read vendored files from this PyTorch clone at their commits")
    args = parser.parse_args(argv)
    written = assemble(args.out, args.from_git)
    print(f"{args.out}: {len(written)} files, every sha256 as in {MANIFEST.relative_to(HERE.parents[1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
