"""The interpreter fix's own code, cut out of the patch at build time.

The one patch of ``proposal/patches/`` that changes ``torch/csrc/PyInterpreter.cpp``
(found by what it changes, not by its name) is applied with ``git apply`` to the base
copy in ``proposal/third_party/pytorch/``, in a temporary folder; out of the patched file, never
retyped, come ``ConcretePyInterpreterVTable::incref`` / ``::decref``, and beside them
every file the patch adds (``torch/csrc/utils/attached_thread_state.h``, the
attached-thread test they call). ``write_include`` writes the methods, with ``#line``
directives into the patched file, to ``patched_interpreter.inc`` and the added files
at their paths, which ``patched_interpreter.cpp`` compiles against torch 2.15's
headers and ``safe_gil.h`` (main's ``SafeGilScopedAcquire``).
"""

from __future__ import annotations

import hashlib
import pathlib
import re

from proposal.fixes.cut import ExtractionError, apply_to_base, braced_end, line_of

REPO = pathlib.Path(__file__).resolve().parent.parent.parent
PATCHES = REPO / "proposal" / "patches"
REL = "torch/csrc/PyInterpreter.cpp"
BASE = REPO / "proposal" / "third_party" / "pytorch" / REL
INCLUDE_NAME = "patched_interpreter.inc"
#: The methods taken from the patched file, in the order they are written out.
METHODS = ("decref", "incref")


def interpreter_patch() -> pathlib.Path:
    """The one patch of ``proposal/patches/`` whose diff changes ``torch/csrc/PyInterpreter.cpp``.

    Raises ``ExtractionError`` when none or more than one does."""
    found = [p for p in sorted(PATCHES.glob("*.patch"))
             if f"+++ b/{REL}\n" in p.read_text(errors="replace")]
    if len(found) != 1:
        raise ExtractionError(f"expected exactly one patch in {PATCHES} that changes {REL}, "
                              f"found {[p.name for p in found]}")
    return found[0]


def sources() -> list[pathlib.Path]:
    """What the extracted code depends on, for a build's is-it-stale check: every patch
    (which one changes the file is decided at build time), the base and this module.
    Never raises, so importing a build script that lists these cannot fail."""
    return [*sorted(PATCHES.glob("*.patch")), BASE, pathlib.Path(__file__).resolve(),
            pathlib.Path(__file__).resolve().with_name("cut.py")]


def added_files(patch: pathlib.Path) -> list[str]:
    """The paths of the files ``patch`` creates (``--- /dev/null``)."""
    return re.findall(r"^--- /dev/null\n\+\+\+ b/(\S+)$", patch.read_text(), re.M)


def patched_files(patch: pathlib.Path) -> dict[str, str]:
    """``{path: text}``: the base ``PyInterpreter.cpp`` with ``patch`` applied, and each
    file the patch adds (``git apply``, only those files)."""
    return apply_to_base(BASE, REL, [patch], [REL, *added_files(patch)])


def patched_text(patch: pathlib.Path) -> str:
    """The base ``PyInterpreter.cpp`` with ``patch`` applied."""
    return patched_files(patch)[REL]


def definition(text: str, head: re.Pattern) -> tuple[int, str]:
    """``(line number, text)`` of the one definition whose first line matches ``head``
    (at column 0, ending in ``{``), up to its matching closing brace; braces inside
    comments and literals are skipped."""
    matches = list(head.finditer(text))
    if len(matches) != 1:
        raise ExtractionError(f"expected one definition matching {head.pattern!r}, "
                              f"found {len(matches)}")
    start = matches[0].start()
    try:
        end = braced_end(text, start)
    except ExtractionError:
        raise ExtractionError(f"no closing brace for {head.pattern!r}") from None
    return line_of(text, start), text[start:end]


def _method_head(name: str) -> re.Pattern:
    return re.compile(rf"^void ConcretePyInterpreterVTable::{name}\(PyObject\* pyobj\) const \{{",
                      re.M)


def _function_head(name: str) -> re.Pattern:
    return re.compile(rf"^[A-Za-z_][\w:<>\s\*&]*?\b{re.escape(name)}\(\)\s*(noexcept\s*)?\{{", re.M)


def extract() -> dict:
    """The patch's incref / decref and the files it adds.

    Returns ``{"patch": file name, "patch_sha256": ..., "base_sha256": ..., "pieces":
    [(name, first line in the patched file, text), ...], "added": {path: text}}`` (the
    added files that the patched file includes).
    Raises ``ExtractionError`` when a method is missing or unchanged by the patch, or
    calls a function that neither the base nor the patch defines."""
    patch = interpreter_patch()
    files, base = patched_files(patch), BASE.read_text()
    patched = files[REL]
    # What the patched file includes of what the patch adds (not its test, say).
    added = {path: text for path, text in files.items()
             if path != REL and f"#include <{path}>" in patched}
    methods = []
    for name in METHODS:
        line, body = definition(patched, _method_head(name))
        _, before = definition(base, _method_head(name))
        if body == before:
            raise ExtractionError(f"{patch.name} leaves ConcretePyInterpreterVTable::{name} "
                                  "unchanged: nothing of the patch to build")
        methods.append((f"ConcretePyInterpreterVTable::{name}", line, body))
    called = sorted({m for _, _, body in methods
                     for m in re.findall(r"\b([A-Za-z_]\w*)\(\)", body)})
    # CPython's C API (Py_*, _Py*) comes from Python.h; any other name the base does
    # not call must be defined by what the patch adds.
    new = [name for name in called
           if not re.match(r"_?Py[A-Z_]", name) and not re.search(rf"\b{name}\(", base)]
    for name in new:
        if not any(_function_head(name).search(text) for text in added.values()):
            raise ExtractionError(f"the patched incref / decref call {name}(), which "
                                  f"{patch.name} neither adds in a new file nor the base has")
    if not new:
        raise ExtractionError(f"the patched incref / decref call no function that {patch.name} "
                              f"adds (looked for: {called})")
    return {"patch": patch.name,
            "patch_sha256": hashlib.sha256(patch.read_bytes()).hexdigest(),
            "base_sha256": hashlib.sha256(BASE.read_bytes()).hexdigest(),
            "pieces": methods, "added": added}


def write_include(folder: pathlib.Path) -> dict:
    """Write ``folder/patched_interpreter.inc`` (the methods, each under a ``#line``
    naming its line in the patched file) and each added file at its path under
    ``folder``; returns ``extract()``'s answer."""
    got = extract()
    lines = [f"// Generated by proposal/fixes/patched_interpreter.py: {got['patch']} applied to",
             f"// proposal/third_party/pytorch/{REL} (sha256 {got['base_sha256'][:16]}...), these",
             "// definitions cut out of the patched file, unedited. Do not edit; rebuild.",
             f"#define PATCHED_INTERPRETER_PATCH \"{got['patch']}\""]
    for name, line, body in got["pieces"]:
        lines += [f"// {name}", f'#line {line} "{REL} (patched by {got["patch"]})"', body]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / INCLUDE_NAME).write_text("\n".join(lines) + "\n")
    for path, text in got["added"].items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    return got


if __name__ == "__main__":
    import sys

    out = write_include(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path("."))
    for name, line, _ in out["pieces"]:
        print(f"{out['patch']}: {name} (patched file line {line})")
