"""The interpreter fix's own code, cut out of the patch at build time.

Patch 0001 comes in two series (``SERIES``): on main's ``torch/csrc/PyInterpreter.cpp``
(``proposal/patches/``, whose incref / decref take ``pybind11::gil_scoped_acquire``, as
v2.15.0 does) and on the stored copy as pytorch/pytorch#189128's branch has it
(``proposal/patches/pr-189128/``, ``torch::detail::SafeGilScopedAcquire``). The fast path
the patch adds is the same lines in both. The patch of the chosen series that changes
``torch/csrc/PyInterpreter.cpp`` (found by what it changes, not by its name) is applied with
``git apply`` to that series' base, in a temporary folder; out of the patched file, never
retyped, come ``ConcretePyInterpreterVTable::incref`` / ``::decref``, and beside them
every file the patch adds (``torch/csrc/utils/attached_thread_state.h``, the
attached-thread test they call). ``write_include`` writes the methods, with ``#line``
directives into the patched file, to ``patched_interpreter.inc`` and the added files
at their paths, which ``patched_interpreter.cpp`` compiles against torch 2.15's
headers and ``safe_gil.h`` (#189128's ``SafeGilScopedAcquire``).

The series is ``PATCHED_INTERPRETER_SERIES`` from the environment, ``pr-189128`` when
unset: what the benchmarks and ``tests/bench`` build (their guard counters count
#189128's class). ``make patch-check`` builds ``main`` too, and ``PATCHED_INTERPRETER_CONTROL
=no-fast-path`` (its negative control: the attached-thread test answers no, so every call
takes the slow path) in a build folder of its own.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import re
import tempfile
import tomllib

from proposal.fixes.cut import ExtractionError, apply_to_base, braced_end, line_of

REPO = pathlib.Path(__file__).resolve().parent.parent.parent
PATCHES = REPO / "proposal" / "patches"
REL = "torch/csrc/PyInterpreter.cpp"
#: The vendored copy: pytorch/pytorch 02d90f32 as stored, #189128's lines included
#: (BASE.toml: main's file is this copy without them).
BASE = REPO / "proposal" / "third_party" / "pytorch" / REL
INCLUDE_NAME = "patched_interpreter.inc"
#: The methods taken from the patched file, in the order they are written out.
METHODS = ("decref", "incref")
#: Each series' folder under ``PATCHES``: main's, and #189128's branch.
SERIES = {"main": "", "pr-189128": "pr-189128"}
DEFAULT_SERIES = "pr-189128"
SERIES_ENV = "PATCHED_INTERPRETER_SERIES"
CONTROL_ENV = "PATCHED_INTERPRETER_CONTROL"


def series() -> str:
    """The series this process builds (``SERIES_ENV``, else ``DEFAULT_SERIES``)."""
    name = os.environ.get(SERIES_ENV, DEFAULT_SERIES)
    if name not in SERIES:
        raise ExtractionError(f"{SERIES_ENV}={name!r}: expected one of {sorted(SERIES)}")
    return name


def base_text(name: str | None = None) -> str:
    """The base ``PyInterpreter.cpp`` of series ``name``: the vendored copy for
    ``pr-189128``; for ``main``, that copy without #189128's lines, as
    ``upstream_base.py`` assembles it (BASE.toml's row, its SHA-256 checked)."""
    if (name or series()) == "pr-189128":
        return BASE.read_text()
    with (REPO / "proposal" / "third_party" / "pytorch" / "BASE.toml").open("rb") as f:
        (row,) = [r for r in tomllib.load(f)["file"] if r["path"] == REL]
    text = BASE.read_text()
    for edit in row["without"]:
        if text.count(edit["old"]) != edit["count"]:
            raise ExtractionError(f"{REL}: {row['pr']}'s lines are not in the vendored copy "
                                  f"{edit['count']} times: {edit['old']!r}")
        text = text.replace(edit["old"], edit["new"])
    if hashlib.sha256(text.encode()).hexdigest() != row["sha256"]:
        raise ExtractionError(f"{REL}: main's base differs from BASE.toml's sha256")
    return text


def interpreter_patch(name: str | None = None) -> pathlib.Path:
    """The one patch of series ``name`` (its folder of ``proposal/patches/``) whose diff
    changes ``torch/csrc/PyInterpreter.cpp``.

    Raises ``ExtractionError`` when none or more than one does."""
    folder = PATCHES / SERIES[name or series()]
    found = [p for p in sorted(folder.glob("*.patch"))
             if f"+++ b/{REL}\n" in p.read_text(errors="replace")]
    if len(found) != 1:
        raise ExtractionError(f"expected exactly one patch in {folder} that changes {REL}, "
                              f"found {[p.name for p in found]}")
    return found[0]


def sources() -> list[pathlib.Path]:
    """What the extracted code depends on, for a build's is-it-stale check: every patch
    (which one changes the file is decided at build time), the base and this module.
    Never raises, so importing a build script that lists these cannot fail."""
    return [*sorted(PATCHES.glob("*.patch")), *sorted(PATCHES.glob("pr-*/*.patch")), BASE,
            BASE.parents[2] / "BASE.toml", pathlib.Path(__file__).resolve(),
            pathlib.Path(__file__).resolve().with_name("cut.py")]


def added_files(patch: pathlib.Path) -> list[str]:
    """The paths of the files ``patch`` creates (``--- /dev/null``)."""
    return re.findall(r"^--- /dev/null\n\+\+\+ b/(\S+)$", patch.read_text(), re.M)


def patched_files(patch: pathlib.Path, name: str | None = None) -> dict[str, str]:
    """``{path: text}``: series ``name``'s base ``PyInterpreter.cpp`` with ``patch`` applied,
    and each file the patch adds (``git apply``, only those files)."""
    with tempfile.TemporaryDirectory(prefix="interpreter-base-") as tmp:
        base = pathlib.Path(tmp) / "PyInterpreter.cpp"
        base.write_text(base_text(name))
        return apply_to_base(base, REL, [patch], [REL, *added_files(patch)])


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
    files, base = patched_files(patch), base_text()
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
    return {"patch": patch.name, "series": series(),
            "patch_sha256": hashlib.sha256(patch.read_bytes()).hexdigest(),
            "base_sha256": hashlib.sha256(base.encode()).hexdigest(),
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
    # Only around the cut code, never inside it: main's slow path (pybind11's guard)
    # counted as safe_gil.h counts #189128's; the negative control's fast path off.
    pybind11_guard = any("pybind11::gil_scoped_acquire" in body for _, _, body in got["pieces"])
    control = os.environ.get(CONTROL_ENV, "")
    if control not in ("", "no-fast-path"):
        raise ExtractionError(f"{CONTROL_ENV}={control!r}: expected no-fast-path or nothing")
    before, after = [], []
    if pybind11_guard:
        before.append("#define gil_scoped_acquire counted_gil_scoped_acquire")
        after.append("#undef gil_scoped_acquire")
    if control:
        before.append("#define THPUtils_hasAttachedThreadState() false")
        after.append("#undef THPUtils_hasAttachedThreadState")
    lines += before
    for name, line, body in got["pieces"]:
        lines += [f"// {name}", f'#line {line} "{REL} (patched by {got["patch"]})"', body]
    lines += after
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
