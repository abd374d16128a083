"""The import structure of the Python packages (``shim_ext``, ``bridge``, ``proposal``,
``bench``): no import circle, and no arrow from a lower part back up (``shim_ext`` below
``bridge``, both below ``proposal``, all three below ``bench``). Imports inside functions
count: a lazy import is still an arrow. ``proposal`` (the patches' tools and the fixes
built from them) imports nothing from ``bench``, not even in the scripts its tools run in
child processes."""

from __future__ import annotations

import ast
import pathlib
import re

import pytest
from helpers.paths import ROOT

PACKAGES = ("shim_ext", "bridge", "proposal", "bench")
#: compiled modules (no ``.py``), each a leaf: ``_bridge.pyx`` imports no package module
COMPILED = ("bridge._bridge", "shim_ext._entry", "shim_ext._borrow")
#: each package's rank: an import may only go to a package of the same or a lower rank
RANK = {"shim_ext": 0, "bridge": 1, "proposal": 2, "bench": 3}
#: folders of no package module: evidence, code to copy, PyTorch's files and the files the
#: patches add to them
NOT_MODULES = {"results", "examples", "third_party", "patch_src"}


def modules() -> dict[str, pathlib.Path | None]:
    """Every module of ``PACKAGES``, dotted name -> its file (None: compiled)."""
    found: dict[str, pathlib.Path | None] = dict.fromkeys(COMPILED)
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if NOT_MODULES & set(parts[:-1]):
                continue
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def import_graph(mods: dict[str, pathlib.Path | None]) -> dict[str, set[str]]:
    """module -> the package modules it imports (at module level or inside functions)."""
    graph: dict[str, set[str]] = {name: set() for name in mods}
    for name, path in mods.items():
        if path is None:
            continue
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    kept = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(kept + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                           for a in node.names]
            else:
                continue
            graph[name].update(t for t in targets if t in mods and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


@pytest.fixture(scope="module")
def graph():
    return import_graph(modules())


def test_the_graph_sees_the_packages(graph):
    # the graph is not empty by accident: the known arrows are there
    assert "bridge._select" in graph["bridge"]
    assert "shim_ext" in graph["bridge._resolve"]
    assert "proposal.toolchain" in graph["proposal.fixes.internal_fixes_build"]
    assert "proposal.fixes.internal_fixes" in graph["bench.routes"]


def test_no_import_circle(graph):
    assert cycles(graph) == []


def test_no_arrow_back_up(graph):
    upward = sorted((a, b) for a, targets in graph.items() for b in targets
                    if RANK[b.split(".")[0]] > RANK[a.split(".")[0]])
    assert upward == []


def test_proposal_imports_nothing_from_bench(graph):
    """Not by an import statement, and not in the Python a tool hands to a child process
    as a string (``patch_check.py``'s ``INSTALL_AND_TEST``): every file under proposal/."""
    assert sorted((a, b) for a, targets in graph.items() for b in targets
                  if a.split(".")[0] == "proposal" and b.split(".")[0] == "bench") == []
    statement = re.compile(r"^\s*(from\s+bench(\.\w+)*\s+import|import\s+bench\b)", re.M)
    found = []
    for path in sorted((ROOT / "proposal").rglob("*.py")):
        text = path.read_text()
        found += [f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
                  for m in statement.finditer(text)]
    assert found == []


def test_the_circle_check_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]


def test_consumer_h_is_the_interface_alone():
    """consumer.h holds the types, the calls' documentation and the contract; its
    implementation lives in the headers it includes, so no function is defined in it."""
    folder = ROOT / "shim_ext" / "include" / "torch_borrow"
    text = (folder / "consumer.h").read_text()
    assert len(text.splitlines()) <= 300
    assert "static inline" not in text
    for name in re.findall(r"^#include <torch_borrow/(\w+\.h)>", text, re.M):
        assert (folder / name).is_file(), name


#: the stable ABI's getters every route reads through (torch/csrc/inductor/aoti_torch/c/shim.h)
GETTER_SYMBOLS = ("layout", "data_ptr", "storage_offset", "storage_size", "dim", "sizes",
                  "strides", "dtype", "device_type", "device_index")
#: the prototype's own headers (torch_borrow/prototype/, which the patch series copies
#: blocks out of) and the two it shares with the core: they call the getters (and name
#: them in comments), they do not resolve them
PROTOTYPE_HEADERS = ("shim.h", "pyobject.h", "conversion.h", "thread_state.h",
                     "metadata_policy.h", "abi.h")


def test_each_getter_symbol_is_named_in_one_file():
    """The resolution's code (bridge/ and shim_ext/, the prototype's own headers aside)
    writes each getter's symbol name once, as a string: torch_borrow/reader.h's
    TORCH_BORROW_GETTER_LIST, which consumer.h's resolution expands and the bridge's
    install walks (bridge._bridge.GETTERS)."""
    files = [p for folder in ("bridge", "shim_ext") for p in (ROOT / folder).rglob("*")
             if p.is_file() and p.suffix in (".py", ".pyx", ".pxi", ".pxd", ".h", ".c", ".cpp")
             and p.name not in PROTOTYPE_HEADERS]
    texts = {p.relative_to(ROOT).as_posix(): p.read_text() for p in files}
    for name in GETTER_SYMBOLS:
        symbol = re.compile(r"[\"']aoti_torch_get_%s[\"']" % name)
        found = sorted(path for path, text in texts.items() if symbol.search(text))
        assert found == ["shim_ext/include/torch_borrow/reader.h"], (name, found)


def private_resolver_uses(path: pathlib.Path) -> list[str]:
    """Where ``path`` reaches a private name of ``bridge._resolve``: ``from
    bridge._resolve import _x``, or ``_x`` read off the module, under any name it is
    imported as (``from bridge import _resolve``, ``import bridge._resolve as r``)."""
    tree = ast.parse(path.read_text())
    aliases, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "bridge._resolve":
            found += [f"{path.name}:{node.lineno} {a.name}" for a in node.names
                      if a.name.startswith("_")]
        elif isinstance(node, ast.ImportFrom) and node.module == "bridge":
            aliases |= {a.asname or a.name for a in node.names if a.name == "_resolve"}
        elif isinstance(node, ast.Import):
            aliases |= {a.asname for a in node.names if a.name == "bridge._resolve" and a.asname}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__")):
            base = node.value
            if isinstance(base, ast.Name) and base.id in aliases:
                found.append(f"{path.name}:{node.lineno} {base.id}.{node.attr}")
            elif (isinstance(base, ast.Attribute) and base.attr == "_resolve"
                  and isinstance(base.value, ast.Name) and base.value.id == "bridge"):
                found.append(f"{path.name}:{node.lineno} bridge._resolve.{node.attr}")
    return found


def test_bench_uses_only_public_names_of_the_resolver():
    """The benchmarks find torch's functions through bridge._resolve's documented calls
    (resolve, find_symbol, find_prototyped, prove_handle, the symbol-name constants),
    never its internals, so the resolution may move into the C core under them."""
    found = [use for path in sorted((ROOT / "bench").rglob("*.py"))
             for use in private_resolver_uses(path)]
    assert found == []


def test_the_private_name_check_finds_one(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from bridge import _resolve\nimport bridge._resolve as r\n"
                     "from bridge._resolve import _lookup\n"
                     "_resolve._loaded_libraries(t)\nr._lookup_prototype('x', [], ())\n"
                     "_resolve.find_symbol(t, 'x')\n")
    assert [u.split(" ", 1)[1] for u in private_resolver_uses(probe)] == [
        "_lookup", "_resolve._loaded_libraries", "r._lookup_prototype"]


#: each refusal of a tensor, by a phrase of its words: the C core writes each once
#: (torch_borrow/reader.h: the read's; tables.h: the rest), and both front ends (the
#: bridge, consumer.h) say it through the core's functions
REFUSAL_PHRASES = (
    "expected a torch.Tensor (or an instance of a subclass)", "holds no defined tensor",
    "cannot read the metadata of this", "no message (torch_exception_get_what",
    "TensorImpl carries torch's Python dispatch key",
    "sizes and strides are computed by a TensorImpl subclass",
    "device or layout is computed by a TensorImpl subclass",
    " has no pointer + strides description", "storage holds no memory",
    "reach past the end of its storage", "a meta tensor has no data",
    "has its conjugate bit set", "has its negative bit set",
    "overrides __torch_dispatch__: its metadata", "a nested tensor, with no single sizes",
    "is quantized: ", "is a sub-byte dtype", "%s failed: %s")


def files_saying(phrase: str, texts: dict[str, str]) -> list[str]:
    """The files of ``texts`` (path -> text) with ``phrase`` inside a string literal (on
    one line, after an opening quote): words a program says, not a comment about them."""
    said = re.compile(r"[\"'][^\"'\n]*" + re.escape(phrase))
    return sorted(path for path, text in texts.items() if said.search(text))


def test_each_refusal_is_worded_in_one_file():
    """No front end words a refusal of its own: each phrase is in one non-test file of
    bridge/ and shim_ext/ (the prototype's own headers aside: PyTorch's code, with
    PyTorch's messages)."""
    files = [p for folder in ("bridge", "shim_ext") for p in (ROOT / folder).rglob("*")
             if p.is_file() and p.suffix in (".py", ".pyx", ".pxi", ".pxd", ".h", ".c", ".cpp")
             and p.name not in PROTOTYPE_HEADERS and "examples" not in p.parts
             and p.name not in ("borrow.cpp", "entry.cpp")]
    texts = {p.relative_to(ROOT).as_posix(): p.read_text() for p in files}
    found = {phrase: files_saying(phrase, texts) for phrase in REFUSAL_PHRASES}
    assert {phrase: len(paths) for phrase, paths in found.items()} == dict.fromkeys(
        REFUSAL_PHRASES, 1), found


def test_the_wording_check_finds_two():
    texts = {"a.pxi": 'raise TypeError(f"expected a torch.Tensor (or an instance of a '
                      'subclass), got {x}")',
             "b.h": 'snprintf(buf, n, "expected a torch.Tensor (or an instance of a subclass)");',
             "c.h": "/* expected a torch.Tensor (or an instance of a subclass) */"}
    assert files_saying(REFUSAL_PHRASES[0], texts) == ["a.pxi", "b.h"]


#: files outside the tests that open a library which is not torch's, and which one; every
#: other open must be libraries.h's search
NOT_TORCH_OPENS = {
    "shim_ext/include/torch_borrow/tables.h": "shim_ext's own loaded module (the ABI handshake)",
    "bench/native/peers_native.py": "the benchmark's own built loops",
    "bench/scenarios/conftest.py": "the CUDA driver, libcuda.so.1",
}
#: a call that opens a shared library: C's dlopen, ctypes' CDLL / PyDLL / LoadLibrary
LIBRARY_OPEN = re.compile(r"\b(dlopen|CDLL|PyDLL|LoadLibrary)\s*\(")
#: what names a torch library inside such a call
TORCH_LIBRARY = re.compile(r"libtorch|libc10|torch\.__file__|torch\._C|_C\.__file__")


def library_opens(path: pathlib.Path) -> list[str]:
    """The text of each library-opening call in ``path`` (its arguments to the closing
    parenthesis of the line), comments and docstrings left out: Python by its syntax tree,
    C and Cython with their comments and docstrings stripped."""
    text = path.read_text()
    if path.suffix == ".py":
        return [ast.get_source_segment(text, node) or "" for node in ast.walk(ast.parse(text))
                if isinstance(node, ast.Call) and LIBRARY_OPEN.match(
                    (getattr(node.func, "attr", None) or getattr(node.func, "id", "")) + "(")]
    if path.suffix in (".pyx", ".pxi", ".pxd"):
        text = re.sub(r'"""(.|\n)*?"""', "", text)
        text = re.sub(r"#[^\n]*", "", text)
    else:
        text = re.sub(r"/\*(.|\n)*?\*/", "", text)
        text = re.sub(r"//[^\n]*", "", text)
    return [text[m.start():text.find("\n", m.start())] for m in LIBRARY_OPEN.finditer(text)]


def test_torch_libraries_are_opened_in_one_file():
    """Every dlopen / ctypes.CDLL of a torch library outside the tests is the C core's one
    search (torch_borrow/libraries.h), which consumer.h's resolution and the bridge
    (bridge/_tables.pxi's _TorchLibraries) both use; the other opens are of libraries
    that are not torch's, each named in NOT_TORCH_OPENS."""
    files = [p for folder in ("bridge", "shim_ext", "bench") for p in (ROOT / folder).rglob("*")
             if p.is_file() and p.suffix in (".py", ".pyx", ".pxi", ".pxd", ".h", ".c", ".cpp")
             and "tests" not in p.relative_to(ROOT).parts]
    opens = {p.relative_to(ROOT).as_posix(): library_opens(p) for p in files}
    openers = sorted(path for path, calls in opens.items() if calls)
    assert [p for p in openers if p not in NOT_TORCH_OPENS] == [
        "shim_ext/include/torch_borrow/libraries.h"], openers
    for path in NOT_TORCH_OPENS:
        assert opens[path], f"{path} opens no library any more: drop it from NOT_TORCH_OPENS"
        assert not [c for c in opens[path] if TORCH_LIBRARY.search(c)], (path, opens[path])


def test_the_library_open_check_finds_one(tmp_path):
    c = tmp_path / "probe.h"
    c.write_text('/* dlopen(x) in a comment */\nvoid* l = dlopen("libtorch_cpu.so", 0);\n')
    py = tmp_path / "probe.py"
    py.write_text('"""ctypes.CDLL(x) in a docstring"""\nimport ctypes\n'
                  'lib = ctypes.CDLL(torch._C.__file__)\n')
    assert library_opens(c) == ['dlopen("libtorch_cpu.so", 0);']
    assert library_opens(py) == ["ctypes.CDLL(torch._C.__file__)"]
    assert all(TORCH_LIBRARY.search(s) for s in library_opens(c) + library_opens(py))
