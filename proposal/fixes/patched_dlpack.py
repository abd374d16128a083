"""The DLPack fix's own code, cut out of the patched file at build time.

The DLPack series (``proposal/patches/dlpack/*.patch``, in order) is applied with
``git apply`` to the base copy of ``torch/csrc/Module.cpp`` in ``proposal/third_party/pytorch/``,
in a temporary folder; out of the patched file, never retyped, come both structs'
``DLTensorFromPyObjectNoSync`` and ``ManagedTensorFromPyObjectNoSync``
(``TorchDLPackExchangeAPI``'s and the read-only ``TorchConstDLPackExchangeAPI``'s) and
every file-scope function they call, directly or through each other, that the series
adds (``DLTensorFromPyObjectNonOwning``, ``DLPackCheckTensor``). ``write_include`` writes them, each under a ``#line`` directive
naming its line in the patched file, to ``patched_dlpack.inc``, which
``patched_dlpack.cpp`` compiles against the installed torch's headers; each method sits
in a struct of its own struct's name that declares nothing else.

The series' fourth patch also adds an inline accessor to ``c10/core/TensorImpl.h``
(``TensorImpl::has_custom_metadata()``), which its code calls: ``write_tensor_impl``
writes the installed torch's header with the series' hunks of that file applied, for a
build to put first on its include path (the accessor adds no field, so the library is
unchanged).

``cut(patched, base)`` does the cutting on any text (``make patch-check`` runs it on the
file as ``git am`` patched it, patch by patch); ``extract()`` on the committed series.
"""

from __future__ import annotations

import hashlib
import pathlib
import re

from proposal.fixes.cut import ExtractionError, apply_to_base, braced_end, line_of

REPO = pathlib.Path(__file__).resolve().parent.parent.parent
PATCHES = REPO / "proposal" / "patches" / "dlpack"
REL = "torch/csrc/Module.cpp"
BASE = REPO / "proposal" / "third_party" / "pytorch" / REL
INCLUDE_NAME = "patched_dlpack.inc"
#: The header the series also changes (an inline accessor its code calls).
TENSOR_IMPL_H = "c10/core/TensorImpl.h"
#: The structs whose methods are cut, in the order written out.
STRUCTS = ("TorchDLPackExchangeAPI", "TorchConstDLPackExchangeAPI")
#: The exchange slots' methods cut out of each struct: the non-owning export, and the
#: managed (owning) export that tvm-ffi calls for every torch argument.
METHODS = ("DLTensorFromPyObjectNoSync", "ManagedTensorFromPyObjectNoSync")
METHOD = METHODS[0]
#: torch._C._to_dlpack / _to_dlpack_versioned (to_dlpack, __dlpack__) and the templates they
#: call, in the file's order: cut too when ``to_dlpack`` is asked for (``make patch-check``
#: runs the series' to_dlpack cases against them; the benchmarks need only the exchange
#: functions).
TO_DLPACK = ("DLPack_Capsule_Destructor", "THPModule_toDLPackImpl", "THPModule_toDLPack",
             "THPModule_toDLPackVersioned")


def series() -> list[pathlib.Path]:
    """The DLPack patches in order; raises ``ExtractionError`` when there are none or one
    of them does not change ``Module.cpp``."""
    found = sorted(PATCHES.glob("000*.patch"))
    if not found:
        raise ExtractionError(f"no DLPack patches in {PATCHES}")
    for patch in found:
        if f"+++ b/{REL}\n" not in patch.read_text(errors="replace"):
            raise ExtractionError(f"{patch.name} does not change {REL}")
    return found


def sources() -> list[pathlib.Path]:
    """What the extracted code depends on, for a build's is-it-stale check (never raises)."""
    return [*sorted(PATCHES.glob("000*.patch")), BASE, pathlib.Path(__file__).resolve(),
            pathlib.Path(__file__).resolve().with_name("cut.py")]


def patched_text(patches: list[pathlib.Path]) -> str:
    """The base ``Module.cpp`` with ``patches`` applied in order (``git apply``, that file)."""
    return apply_to_base(BASE, REL, patches)[REL]


def method(text: str, struct: str, name: str = METHOD) -> tuple[int, str]:
    """``(line, text)`` of ``struct``'s one ``name`` definition (a static method)."""
    head = re.search(rf"^struct {struct} : public \w+ {{\n", text, flags=re.M)
    if head is None:
        raise ExtractionError(f"no struct {struct}")
    end = braced_end(text, head.start())
    found = [m for m in re.finditer(rf"^  static int {name}\(\s*void\* py_obj,",
                                    text, flags=re.M) if head.start() < m.start() < end]
    if len(found) != 1:
        raise ExtractionError(f"{struct}: expected one {name}, found {len(found)}")
    start = found[0].start()
    return line_of(text, start), text[start:braced_end(text, start)]


def function(text: str, name: str) -> tuple[int, str] | None:
    """``(line, text)`` of the file-scope function ``name`` (a line starting ``static``),
    or None when the text defines none."""
    found = list(re.finditer(rf"^static [\w:<>\*& ]+?\b{re.escape(name)}\(", text, flags=re.M))
    if not found:
        return None
    if len(found) != 1:
        raise ExtractionError(f"{name} is defined {len(found)} times")
    start = found[0].start()
    return line_of(text, start), text[start:braced_end(text, start)]


def template(text: str, name: str) -> tuple[int, str]:
    """``(line, text)`` of the file-scope function ``name``, a ``template <class T>`` or a
    ``static`` one."""
    found = list(re.finditer(rf"^(?:template <class T>\n|static )[\w:<>\*& ]+?\b{re.escape(name)}\(",
                             text, flags=re.M))
    if len(found) != 1:
        raise ExtractionError(f"expected one definition of {name}, found {len(found)}")
    start = found[0].start()
    return line_of(text, start), text[start:braced_end(text, start)]


def cut(patched: str, base: str, to_dlpack: bool = False) -> list[tuple[str, int, str]]:
    """The pieces to compile, helpers first (in the patched file's order), then, with
    ``to_dlpack``, the ``TO_DLPACK`` functions (as the patched file has them, changed or
    not), then the methods (``METHODS`` of each of ``STRUCTS``): ``[(name, first line in
    the patched file, text)]``. Raises ``ExtractionError`` when a method is unchanged from
    the base (nothing of the patch to build) or a struct or method is missing."""
    extra = [(name, *template(patched, name)) for name in TO_DLPACK] if to_dlpack else []
    methods = []
    for struct in STRUCTS:
        for name in METHODS:
            line, body = method(patched, struct, name)
            if body == method(base, struct, name)[1]:
                raise ExtractionError(f"the series leaves {struct}::{name} unchanged")
            methods.append((f"{struct}::{name}", line, body))
    helpers: dict[str, tuple[int, str]] = {}
    todo = [body for _, _, body in methods + extra]
    while todo:
        for name in sorted(set(re.findall(r"\b([A-Z][A-Za-z0-9]+)\(", todo.pop()))):
            if name in helpers or name in METHODS or function(base, name) is not None:
                continue
            found = function(patched, name)
            if found is not None:
                helpers[name] = found
                todo.append(found[1])
    if not helpers:
        raise ExtractionError("the patched methods call no function the series adds")
    ordered = sorted(helpers.items(), key=lambda item: item[1][0])
    return [(name, line, body) for name, (line, body) in ordered] + extra + methods


def extract(patches: list[pathlib.Path] | None = None) -> dict:
    """The committed series' pieces: ``{"patches": [names], "patch_sha256": {name: ...},
    "base_sha256": ..., "pieces": cut(...)}``."""
    patches = series() if patches is None else patches
    return {"patches": [p.name for p in patches],
            "patch_sha256": {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in patches},
            "base_sha256": hashlib.sha256(BASE.read_bytes()).hexdigest(),
            "pieces": cut(patched_text(patches), BASE.read_text())}


def write_tensor_impl(folder: pathlib.Path, patches: list[pathlib.Path] | None = None
                      ) -> pathlib.Path | None:
    """Write ``folder/c10/core/TensorImpl.h``: the installed torch's header with the hunks of
    ``patches`` (default: the committed series) that change it, applied by ``git apply``;
    ``folder`` must come first on the include path. Returns its path, or None when no
    patch changes that header. Raises ``ExtractionError`` when the hunks do not apply to
    this torch's header."""
    import torch.utils.cpp_extension as cpp_extension

    patches = series() if patches is None else patches
    touching = [p for p in patches
                if f"+++ b/{TENSOR_IMPL_H}\n" in p.read_text(errors="replace")]
    if not touching:
        return None
    installed = [pathlib.Path(d) / TENSOR_IMPL_H for d in cpp_extension.include_paths()
                 if (pathlib.Path(d) / TENSOR_IMPL_H).exists()]
    if not installed:
        raise ExtractionError(f"the installed torch has no {TENSOR_IMPL_H}")
    out = folder / TENSOR_IMPL_H
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(apply_to_base(installed[0], TENSOR_IMPL_H, touching)[TENSOR_IMPL_H])
    return out


def include_text(pieces: list[tuple[str, int, str]], origin: str) -> str:
    """``patched_dlpack.inc``: each piece under ``#line N "<origin>"``; a struct's methods
    inside one struct of its name (public, nothing else declared)."""
    lines = [f"// Generated by proposal/fixes/patched_dlpack.py from {origin}: these",
             "// definitions cut out of the patched file, unedited. Do not edit; rebuild."]
    open_struct = None
    for name, line, body in pieces:
        struct = name.split("::")[0] if "::" in name else None
        if struct != open_struct:
            if open_struct is not None:
                lines.append("};")
            if struct is not None:
                lines += [f"struct {struct} {{", " public:"]
            open_struct = struct
        lines += [f"// {name}", f'#line {line} "{origin}"', body]
    if open_struct is not None:
        lines.append("};")
    return "\n".join(lines) + "\n"


def write_include(folder: pathlib.Path, patched: str | None = None,
                  origin: str | None = None, to_dlpack: bool = False) -> dict:
    """Write ``folder/patched_dlpack.inc`` from the committed series, with
    ``write_tensor_impl``'s header (or from ``patched``, a patched ``Module.cpp``'s text,
    named ``origin``, whose caller supplies the header; with ``to_dlpack``, the
    ``TO_DLPACK`` functions too, which ``patched_dlpack.cpp`` compiles when
    ``PATCHED_DLPACK_TO_DLPACK`` is defined); returns what was cut."""
    if patched is None:
        got = extract()
        write_tensor_impl(folder)
        origin = f"{REL} (patched by DLPack {', '.join(n[:4] for n in got['patches'])})"
    else:
        got = {"patches": [], "pieces": cut(patched, BASE.read_text(), to_dlpack)}
        origin = origin or REL
    folder.mkdir(parents=True, exist_ok=True)
    (folder / INCLUDE_NAME).write_text(include_text(got["pieces"], origin))
    return got


if __name__ == "__main__":
    import sys

    out = write_include(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path("."))
    for name, line, _ in out["pieces"]:
        print(f"{', '.join(out['patches'])}: {name} (patched file line {line})")
