"""Cutting C++ definitions out of a patched PyTorch file, never retyping them: what the
builds of the patches' own code share (``patched_interpreter.py``,
``patched_dlpack.py``). ``apply_to_base`` applies patches to a vendored base file in a
temporary folder; ``braced_end`` finds where a definition ends, braces inside comments
and literals skipped."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import tempfile


class ExtractionError(RuntimeError):
    """A patch or a patched file is not what the extraction expects (says what)."""


def apply_to_base(base: pathlib.Path, rel: str, patches: list[pathlib.Path],
                  wanted: list[str] | None = None) -> dict[str, str]:
    """``{path: text}``: ``base`` (the vendored copy of ``rel``) with ``patches`` applied in
    order by ``git apply``, limited to the files ``wanted`` (default: ``rel`` alone; files
    a patch creates may be named too). Raises ``ExtractionError`` when a patch does not
    apply."""
    wanted = wanted or [rel]
    with tempfile.TemporaryDirectory(prefix="patched-") as tmp:
        target = pathlib.Path(tmp) / rel
        target.parent.mkdir(parents=True)
        shutil.copyfile(base, target)
        for patch in patches:
            done = subprocess.run(["git", "apply", *(f"--include={w}" for w in wanted),
                                   str(patch)], cwd=tmp, capture_output=True, text=True)
            if done.returncode != 0:
                raise ExtractionError(f"{patch.name} does not apply to {base}: "
                                      f"{done.stderr.strip()}")
        return {w: (pathlib.Path(tmp) / w).read_text() for w in wanted}


def _skip_literal(text: str, i: int) -> int:
    """Index after the comment or string/char literal starting at ``i`` (``i`` if none)."""
    if text.startswith("//", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    if text.startswith("/*", i):
        end = text.find("*/", i + 2)
        if end < 0:
            raise ExtractionError("unterminated comment")
        return end + 2
    if text[i] in "\"'":
        quote, j = text[i], i + 1
        while j < len(text) and text[j] != quote:
            j += 2 if text[j] == "\\" else 1
        return j + 1
    return i


def braced_end(text: str, start: int) -> int:
    """Index just after the brace that closes the first ``{`` at or after ``start``;
    braces inside comments and string / char literals do not count. Raises
    ``ExtractionError`` when none closes."""
    i, depth = text.index("{", start), 0
    while i < len(text):
        j = _skip_literal(text, i)
        if j != i:
            i = j
            continue
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ExtractionError("no closing brace")


def line_of(text: str, index: int) -> int:
    """The 1-based line number of ``index`` in ``text``."""
    return text.count("\n", 0, index) + 1
