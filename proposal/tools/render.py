"""Fill the generated sections of proposal/RFC.md and proposal/appendix.md from committed JSON.

Every ``<!-- BEGIN generated: NAME -->`` block is rebuilt from the raw values of the
committed JSON in ``bench/results/`` and ``proposal/findings/`` (never from a rendered
table); a missing input renders as a placeholder naming it. ``--check`` exits 1 if either
file is not what rendering would produce. Each block's inputs: ``proposal/README.md``.
Every interval is ``proposal.stats.median_ci``, the benchmark reports' own bootstrap, so
it needs numpy and scipy: run it in the benchmark environment.

Usage: ``make rfc`` (``make rfc-check``: ``--check``), or in an environment with the bench
extra ``python -P proposal/tools/render.py [--results DIR] [--check]``.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import statistics
import sys

PROPOSAL = pathlib.Path(__file__).resolve().parent.parent
ROOT = PROPOSAL.parent
# The checkout after site-packages, for proposal.stats, as the environment's .pth puts it
# when run from the checkout's root: from anywhere else too.
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

from proposal import consumers  # noqa: E402 (the consumers' rows)
from proposal.stats import median_ci  # noqa: E402 (the reports' bootstrap)

RFC = PROPOSAL / "RFC.md"
APPENDIX = PROPOSAL / "appendix.md"
RESULTS = ROOT / "bench" / "results"
FREE_THREADED = PROPOSAL / "findings" / "free-threaded.json"
MARKER = re.compile(r"(<!-- BEGIN generated: ([\w-]+) -->\n)(.*?)(<!-- END generated: \2 -->)",
                    re.S)
DASH = "\u2014"  # a cell that cannot exist on that setup (its reason is given beside it)

# The routes table: (key in bench/routes.py, words for the RFC). Order is the table's.
ROUTES = (
    ("owned", "owned: `torch_tensor_from_pyobject` + 7 getters + delete"),
    ("owned_fixed", "owned + interpreter fix (0001)"),
    ("dlpack_no_sync", "DLPack `dltensor_from_py_object_no_sync`, today"),
    ("dlpack_patched", "fixed DLPack: the DLPack series (borrowed, real type, conj/neg refused)"),
    ("borrow_getters", "borrow (0003's code, out of tree) + 7 getters"),
    ("fallback_getters", "pointer trick + 7 getters (private layout)"),
)
# Every other route the files hold, for the appendix (same order as bench/routes.py).
MORE_ROUTES = (
    ("owned_fixed_emulation", "owned + interpreter fix, hand-written emulation"),
    ("dlpack_no_sync_fixed", "DLPack no_sync + interpreter fix"),
    ("dlpack_no_sync_fixed_emulation", "DLPack no_sync + interpreter fix, emulation"),
    ("dlpack_managed", "DLPack managed_tensor_from_py_object_no_sync + deleter"),
    ("dlpack_managed_fixed", "DLPack managed + deleter + interpreter fix"),
    ("dlpack_borrowed_checked", "DLPack prototype (hand-written, not the patch), thread check"),
    ("dlpack_borrowed", "DLPack prototype (hand-written, not the patch), no thread check"),
    ("borrow_batched", "borrow + batched read (withdrawn)"),
    ("borrow_one_call", "one call from the PyObject (withdrawn)"),
    ("getters7", "the 7 getters alone"),
    ("owned_handle_fixed", "the handle alone: owned + delete + interpreter fix"),
    ("borrow_handle", "the handle alone: borrow"),
    ("owned_handle", "the handle alone: owned + delete"),
    ("fallback_handle", "the handle alone: pointer trick"),
)
# A consumer's routes, canonical names and column heads.
CONSUMER_ROUTES = (("owned", "owned"), ("owned_fixed", "owned + fix"),
                   ("dlpack_fixed", "fixed DLPack"), ("borrow", "borrow"),
                   ("borrow_fixed", "borrow + fix"), ("pointer", "pointer trick"))
NO_NEW_ABI = ("owned", "owned_fixed", "dlpack_fixed")  # what torch can offer without 0003
# cuda.core's stable routes without new ABI: it reads handles, not the DLPack exchange API
HANDLE_ROUTES = ("owned", "owned_fixed")
# Timed runs made before the DLPack series existed timed its hand-written prototype as
# fixed DLPack (their JSON labels it so); such a cell is marked and this note added.
PROTOTYPE_MARK = "\u2020"
PROTOTYPE_LABEL = "borrowed reference + attached-thread check"
PROTOTYPE_NOTE = (f"{PROTOTYPE_MARK}: timed before the DLPack series existed, with its "
                  "hand-written prototype (no conj/neg refusal, an attached-thread check of "
                  "its own); the instruction counts are the series' code; `make "
                  "bench-evidence` and the GPU script re-time it")
OPS = ("add", "amax", "median", "mm_out", "addmm_out")  # bench/c_shims/consumer.py's order
LEAD_OP = "addmm_out"  # the C-shim row's op: the most tensor arguments (4)


class Render:
    """The loaded JSON and the warnings of one rendering."""

    def __init__(self, results: pathlib.Path, free_threaded: pathlib.Path = FREE_THREADED):
        self.results = results
        self.free_threaded = free_threaded
        self.warnings: list[str] = []
        self._cache: dict[pathlib.Path, dict] = {}
        self.prototype_marked = False  # a cell carries PROTOTYPE_MARK

    # --- files ------------------------------------------------------------------------
    def find(self, pattern: str, exclude: str | None = None) -> pathlib.Path | None:
        """The committed file matching ``pattern`` with the newest torch in its name."""
        found = [p for p in self.results.glob(pattern)
                 if p.is_file() and not (exclude and re.search(exclude, p.name))]
        return max(found, key=_torch_key) if found else None

    def json(self, path: pathlib.Path | None) -> dict | None:
        if path is None or not path.exists():
            return None
        if path not in self._cache:
            self._cache[path] = json.loads(path.read_text())
            self._cache[path]["_file"] = path.name  # which host: the GPU script names it
        return self._cache[path]

    def prototype_timed(self, name: str) -> bool:
        """Whether the timed file ``name`` (in ``results``) timed the DLPack prototype as
        fixed DLPack (its labels say so), not the DLPack series' code."""
        path = self.results / name.split(" ")[0]
        return path.is_file() and PROTOTYPE_LABEL in path.read_text()

    def missing(self, what: str) -> str:
        """Record a warning; the placeholder text that stands in the cell or block."""
        if what not in self.warnings:
            self.warnings.append(what)
        return f"_(not measured: {what})_"

    # --- the committed files, by role --------------------------------------------------
    def callgrind(self, tag: str) -> pathlib.Path | None:
        """Instruction counts: ``tag`` '' (CPython 3.11), 'cp312-', 'cp313-'."""
        return self.find(f"callgrind-{tag}torch-*.json")

    def timed(self, kind: str) -> pathlib.Path | None:
        """Timed runs: 'here' (3.11), 'here-cp313', 'gpu-host-cpu', 'gpu-cuda'."""
        return {"here": lambda: self.find("bench-torch-*.json"),
                "here-cp313": lambda: self.find("bench-cp313-torch-*.json"),
                "gpu-host-cpu": lambda: self.find("gpu-*-host-cpu-torch-*.json"),
                "gpu-cuda": lambda: self.find("gpu-*-torch-*.json", exclude=r"host-cpu")}[kind]()


def _torch_key(path: pathlib.Path) -> tuple[int, ...]:
    tail = path.name.rsplit("torch-", 1)[-1]
    return tuple(int(x) for x in re.findall(r"\d+", tail)[:3])


def rel(path: pathlib.Path) -> str:
    """``path`` relative to the repository root, for messages."""
    return os.path.relpath(path, ROOT)


def link(path: pathlib.Path) -> str:
    """A markdown link to ``path`` that works from proposal/."""
    return f"[`{path.name}`]({os.path.relpath(path, PROPOSAL)})"


def median(values) -> float:
    """The median of ``values`` (ns, instructions: whatever unit they are in)."""
    return statistics.median(values)


def fmt(value: float, digits: int = 0) -> str:
    """``value`` with thousands separators and ``digits`` decimals."""
    return f"{value:,.{digits}f}"


def pct(value: float) -> str:
    """A fraction as a percentage with one decimal."""
    return f"{100 * value:.1f}%"


def span(values, form=fmt) -> str:
    """'lo to hi' of ``values`` as ``form`` writes them (one value if they round alike)."""
    lo, hi = min(values), max(values)
    return form(lo) if form(lo) == form(hi) else f"{form(lo)} to {form(hi)}"


# --- reading the JSON -------------------------------------------------------------------------
def python_of(data: dict) -> str:
    """CPython version a result file was made with (callgrind files: ``python``; benchmark
    files: ``machine_info.bench.python``)."""
    return data.get("python") or data.get("machine_info", {}).get("bench", {}).get("python", "?")


def torch_of(data: dict) -> str:
    """The torch version a result file was made with."""
    return data.get("torch") or data.get("machine_info", {}).get("bench", {}).get("torch", "?")


def host_of(data: dict) -> str:
    """'here' (this repository's machine) or the GPU host's name, as ``bench/gpu/run.sh``
    names its files (``gpu-<gpu>-...``, ``c-shims-gpu-<gpu>-...``) and records the GPU."""
    bench = data.get("machine_info", {}).get("bench", {})
    gpu = bench.get("gpu") or data.get("evidence", {}).get("device") or {}
    if gpu.get("name"):
        return f"{gpu['name']} host"
    m = re.search(r"(?:^|-)gpu-([a-z0-9]+)-", data.get("_file", ""))
    return f"{m.group(1).upper()} host" if m else "here"


def benchmarks(data: dict, group: str) -> dict[str, dict]:
    """{param: extra_info} of the benchmarks whose group starts with ``group``."""
    return {b["param"]: b["extra_info"] for b in data.get("benchmarks", [])
            if b["group"].startswith(group)}


def samples(info: dict) -> list[float] | None:
    """Per-round ns of one benchmark (``samples_ns``; the launch step's ``wall_ns``)."""
    return info.get("samples_ns") or info.get("wall_ns")


def unavailable(data: dict, key: str) -> str | None:
    """Why a run has no ``key`` (its ``evidence.unavailable``), or None if it should."""
    ev = data.get("evidence", {})
    return ev.get("unavailable", {}).get(key) or ev.get("consumer", {}).get(
        "unavailable", {}).get(key)


def canonical(name: str) -> str | None:
    """A consumer's route name as one of CONSUMER_ROUTES (None: not a route the RFC shows)."""
    n = name.lower()
    fixed = "fix" in n
    if "dlpack" in n and (fixed or "borrow" in n):
        return "dlpack_fixed"
    if "owned" in n:
        return "owned_fixed" if fixed else "owned"
    if "borrow" in n:
        return "borrow_fixed" if fixed else "borrow"
    if n in ("pointer", "fallback"):
        return "pointer"
    return None


def consumer_routes(data: dict, group: str, prefix: str = "") -> dict[str, tuple[str, list]]:
    """{canonical route: (param, samples)} of one consumer's benchmarks. torch's own owned
    shim is preferred over the rebuilt 2.14 implementation where both ran."""
    out: dict[str, tuple[str, list]] = {}
    for param, info in benchmarks(data, group).items():
        if not param.startswith(prefix):
            continue
        route = canonical(param[len(prefix):])
        if route is None or samples(info) is None:
            continue
        if route in out and "prototype" in param:
            continue
        out[route] = (param, samples(info))
    return out


# --- the routes table -------------------------------------------------------------------------
def routes_columns(r: Render) -> list[tuple[str, str, pathlib.Path | None, dict | None]]:
    """(head, unit, file, data) per column: instructions on CPython 3.12, 3.13, 3.11, then ns."""
    cols = []
    for tag in ("cp312-", "cp313-", ""):
        path = r.callgrind(tag)
        data = r.json(path)
        head = f"CPython {python_of(data)}" if data else f"callgrind-{tag}torch-*.json"
        cols.append((head, "instr", path, data))
    for kind in ("here-cp313", "here", "gpu-host-cpu"):
        path = r.timed(kind)
        data = r.json(path)
        if data:
            where = host_of(data)
            head = f"CPython {python_of(data)}" + (
                f", {where}, torch {torch_of(data).split('+')[0]}" if where != "here" else "")
        else:
            head = kind
        cols.append((head, "ns", path, data))
    return cols


def route_cell(r: Render, unit: str, path, data, key: str,
               optional: bool = False) -> tuple[str, float | None]:
    """(cell text, value) of route ``key`` in one column: instructions per call from a
    callgrind file, or the median ns per call of a timed run; a dash where the run says why
    the route cannot exist (or ``optional``), else a placeholder and a warning."""
    if data is None:
        return r.missing(f"no {path or 'file'}"), None
    if unit == "instr":
        value = data.get("per_call", {}).get(f"route:{key}")
        if value is None:
            return r.missing(f"`{path.name}` has no `route:{key}`"), None
        return fmt(value), value
    info = benchmarks(data, "2c").get(f"route_{key}")
    old = benchmarks(data, "2c").get("route_dlpack_borrowed_checked")
    if key == "dlpack_patched" and info is None and old is not None and samples(old):
        r.prototype_marked = True
        return fmt(median(samples(old)), 1) + PROTOTYPE_MARK, None
    if info is None or samples(info) is None:
        reason = unavailable(data, f"route_{key}")
        if reason or optional:
            return DASH, None
        return r.missing(f"`{path.name}` has no `route_{key}`"), None
    value = median(samples(info))
    return fmt(value, 1), value


def render_routes(r: Render, rows=ROUTES) -> str:
    """The routes table: one row per ``rows`` entry, columns from :func:`routes_columns`."""
    cols = routes_columns(r)
    out = ["| route | " + " | ".join(f"{h}: {u}" for h, u, _, _ in cols) + " |",
           "|---|" + "---:|" * len(cols)]
    dashes = set()
    for key, words in rows:
        cells = []
        for head, unit, path, data in cols:
            text, _ = route_cell(r, unit, path, data, key, optional=(key, words) not in ROUTES)
            if text == DASH:
                dashes.add(f"{head}: " + (unavailable(data, f"route_{key}") or "not in that run"))
            cells.append(text)
        out.append(f"| {words} | " + " | ".join(cells) + " |")
    sources = ", ".join(link(p) for _, _, p, d in cols if d)
    note = (f"_Instructions per call (callgrind, deterministic), then median ns per call "
            f"(interleaved rounds); 32x32 float32 CPU tensor, torch "
            f"{', '.join(sorted({torch_of(d) for _, _, _, d in cols if d}))}. Files: {sources}."
            + (f" {DASH}: " + "; ".join(sorted(dashes)) + "." if dashes else "")
            + (f" {PROTOTYPE_NOTE}." if r.prototype_marked else "") + "_")
    r.prototype_marked = False
    return "\n".join(out + ["", note]) + "\n"


# --- the consumers ---------------------------------------------------------------------------
def c_shim_instr(data: dict, op: str) -> dict[str, float]:
    """{route: instructions of the whole call} of one op (handles, op, release)."""
    pc = data.get("per_call", {})
    return {route: pc[f"ccall:{route}:{op}"]["per_call"]
            for route in ("owned", "owned_fixed", "borrow", "borrow_fixed")
            if f"ccall:{route}:{op}" in pc}


def c_shim_exact(data: dict, op: str) -> bool:
    pc = data.get("per_call", {})
    return all(pc[k]["repeat"] == 0 for k in pc if k.startswith("ccall:") and k.endswith(f":{op}"))


def c_shim_times(data: dict, op: str, size: int) -> dict[str, list[float]]:
    """{route or 'op' / 'op_sync': per-round ns} of one op and size (group F1)."""
    out = {}
    for param, info in benchmarks(data, "F1").items():
        parts = param.split("-", 2)
        if len(parts) != 3 or parts[0] != op or parts[1] != str(size):
            continue
        name = parts[2]
        if name.startswith("ccall:"):
            out[name.split(":", 1)[1]] = samples(info)
        elif name in ("op", "op_sync"):
            out[name] = samples(info)
    return out


def c_shim_share(data: dict, op: str, size: int, a: str, b: str):
    """Median [95% CI] over rounds of (whole call a - whole call b) / the op's time (the
    op until the GPU ran it, on CUDA), paired by round; None where a route is missing."""
    t = c_shim_times(data, op, size)
    denom = t.get("op_sync") or t.get("op")
    if a not in t or b not in t or not denom:
        return None
    return median_ci([(x - y) / d for x, y, d in zip(t[a], t[b], denom)])


def c_shim_files(r: Render) -> dict[str, pathlib.Path | None]:
    return {"cg312": r.find("callgrind-c-shims-cp312-torch-*.json"),
            "cg313": r.find("callgrind-c-shims-cp313-torch-*.json"),
            "cg311": r.find("callgrind-c-shims-torch-*.json"),
            "cpu": r.find("c-shims-torch-*.json"),
            "gpu-cpu": r.find("c-shims-gpu-*-host-cpu-torch-*.json"),
            "gpu": r.find("c-shims-gpu-*-torch-*.json", exclude=r"host-cpu")}


def saving_words(r: Render, values: dict[str, float], unit: str, where: str,
                 reasons: dict[str, str], against: tuple = NO_NEW_ABI) -> str:
    """What the borrow saves over the cheapest of ``against`` (default: every route torch
    can offer without new ABI)."""
    mine = values.get("borrow_fixed", values.get("borrow"))
    others = {k: v for k, v in values.items() if k in against}
    if mine is None or not others:
        return r.missing(f"{where}: no borrow or no route without new ABI")
    best = min(others, key=others.get)
    words = dict(CONSUMER_ROUTES)
    lacking = [words[k] for k in ("owned_fixed", "dlpack_fixed")
               if k in against and k not in values and k not in reasons]
    text = (f"{fmt(others[best] - mine, 0 if unit == 'instr' else 1)} {unit} "
            f"({pct((others[best] - mine) / others[best])} of {words[best]})")
    if lacking:
        r.missing(f"{where}: no {' and no '.join(lacking)} row")
        text += f"; {', '.join(lacking)} not measured in this consumer yet"
    return text


def consumer_row(r: Render, name: str, setup: str, unit: str, values: dict[str, float],
                 reasons: dict[str, str], where: str, saving: str | None = None,
                 against: tuple = NO_NEW_ABI) -> str:
    """One row of the consumers table: a cell per CONSUMER_ROUTES route (``reasons``: why a
    route cannot exist in that consumer), then the saving column (``saving_words``)."""
    cells = []
    for route, _ in CONSUMER_ROUTES:
        if route in values:
            cell = fmt(values[route], 0 if unit == "instr" else (2 if unit == "us" else 1))
            if route == "dlpack_fixed" and unit != "instr" and r.prototype_timed(where):
                cell += PROTOTYPE_MARK
                r.prototype_marked = True
            cells.append(cell)
        else:
            cells.append(f"{DASH} ({reasons[route]})" if route in reasons else DASH)
    return (f"| {name} | {setup} | {unit} | " + " | ".join(cells) + " | "
            + (saving or saving_words(r, values, unit, where, reasons, against)) + " |")


# --- the consumers on their own routes (instructions) ----------------------------------------
def consumer_files(r: Render) -> tuple[dict, list]:
    """``({(source, tag): JSON or None}, [paths])`` of ``proposal.consumers``' inputs."""
    files, paths = {}, []
    for tag, _ in consumers.CPYTHONS:
        for source, pattern in (("consumers", f"consumers-{tag}torch-*.json"),
                                ("c_shims", f"callgrind-c-shims-{tag}torch-*.json")):
            path = r.find(pattern)
            files[(source, tag)] = r.json(path)
            if path is not None:
                paths.append(path)
    return files, paths


def counts_cell(values: list) -> str:
    """One count per CPython, ``a / b / c`` (``?`` where one is missing)."""
    return " / ".join("?" if v is None else fmt(v) for v in values)


def saving_cell(row) -> str:
    """Each fix's saving over the cheapest stable route today and the borrow's beyond both
    fixes, ``-a / -b / -c (p%)`` per CPython (p: the range of the percentages, of the count
    it is taken from; a negative saving is a cost); the fix that saves most in bold, and the
    borrow in bold where it helps; a route the consumer does not take in parentheses."""
    parts, best = [], row.best()
    for patch in consumers.PATCHES:
        s = row.saving.get(patch)
        if not s or any(x is None for x in s):
            continue
        shares = [x / v for x, v in zip(s, row.values[row.base[patch]])]
        name = "borrow, beyond both fixes" if row.base[patch] == "fixes" else patch
        text = (f"{name}: " + " / ".join(f"{-x:+,.0f}" if x else "0" for x in s)
                + f" ({span([-x for x in shares], lambda v: f'{100 * v:+.1f}%')})")
        if patch in row.spec.not_taken:
            text = f"({text}, not its route)"
        bold = patch == best or (patch == "borrow" and row.helps("borrow"))
        parts.append(f"**{text}**" if bold else text)
    if best is None:
        parts.append(f"no fix saves beyond {consumers.NOISE} instr")
    return "; ".join(parts)


def render_consumers(r: Render) -> str:
    """The consumers table: every real consumer on the route it takes today, the cheapest
    stable route it could take today, and each patch (``proposal.consumers``), in
    instructions per call on CPython 3.11 / 3.12 / 3.13; then each one's saving."""
    files, paths = consumer_files(r)
    rows = consumers.derive(files)
    cols = [consumers.PATCH_WORDS[p] for p in consumers.PATCHES]
    out = ["| consumer: its route today (source) | setup | today | cheapest stable today | "
           + " | ".join(f"+ {c}" for c in cols) + " | saving over stable today (instr, %) |",
           "|---|---|---:|---:|" + "---:|" * len(cols) + "---|"]
    for row in rows:
        gone = [r.missing(f"no count of {what}") for what in row.missing]
        spec = row.spec
        cells = []
        for patch in consumers.PATCHES:
            if patch in spec.reasons:
                cells.append(f"{DASH} ({spec.reasons[patch]})")
            elif patch in row.values:
                cells.append(counts_cell(row.values[patch]))
            else:
                cells.append(DASH)
        out.append(f"| **{spec.consumer}**: {spec.route_today} ({spec.cited}) | {spec.setup} | "
                   f"{counts_cell(row.values['today'])} | {counts_cell(row.values['stable'])} | "
                   + " | ".join(cells) + f" | {gone[0] if gone else saving_cell(row)} |")
    out.append("| **numba-cuda** (through cuda.core) | GPU only: timed below | | | | | | | |")
    pythons = [next((d["python"] for (src, t), d in files.items() if t == tag and d), py)
               for tag, py in consumers.CPYTHONS]
    notes = [f"{row.spec.consumer}: {row.spec.note}" for row in rows if row.spec.note]
    out += ["", "_Instructions per call (callgrind), CPython " + " / ".join(pythons)
            + ", torch 2.15, 32x32 float32 CPU tensors; the cheapest of a consumer's routes in "
            "each cell; a saving counts as help beyond "
            f"{consumers.NOISE} instructions on every CPython, and the patch that saves most is "
            "in bold. " + "; ".join(dict.fromkeys(notes)) + ". Files: "
            + ", ".join(link(p) for p in paths) + "._"]
    return "\n".join(out) + "\n"


def render_verdicts(r: Render) -> str:
    """The Summary's lines, one per consumer (``proposal.consumers.verdicts``), from the
    same rows as the consumers table."""
    files, _ = consumer_files(r)
    rows = consumers.derive(files)
    lines = [f"- **{name}**: {text}" for name, text in consumers.verdicts(rows)]
    return "\n".join(lines) + "\n" if lines else r.missing("no consumers-*.json") + "\n"


def render_consumers_time(r: Render) -> str:
    """The consumers in time: the seed's `StridedMemoryView` (CPU here, CUDA on the GPU
    host), its launch step (the largest N), and numba-cuda's own launch path (GPU only,
    its explicit-signature case) where its JSON exists. The C shims' times are
    appendix C's."""
    head = ("| consumer | setup | unit | " + " | ".join(w for _, w in CONSUMER_ROUTES)
            + " | the borrow saves over cuda.core's stable route today (owned, owned + fix) |")
    out = [head, "|---|---|---|" + "---:|" * len(CONSUMER_ROUTES) + "---|"]
    sources, notes = [], []
    # The seed's StridedMemoryView consumer, and its launch step.
    for kind in ("here", "gpu-cuda"):
        path = r.timed(kind)
        data = r.json(path)
        if data is None:
            out.append(f"| the seed's consumer | | | {r.missing(f'no {kind} benchmark file')} |")
            continue
        sources.append(path)
        found = consumer_routes(data, "6 seed consumer")
        extra = r.find(f"time-consumer-*torch-{torch_of(data).split('+')[0]}-*.json")
        for route, (param, s) in consumer_routes(
                {"benchmarks": [{"group": "t", "param": k, "extra_info": {"samples_ns": v}}
                                for k, v in (r.json(extra) or {}).get("ns_per_call", {}).items()]},
                "t").items():
            found.setdefault(route, (param, s))
        values = {k: median(s) for k, (_, s) in found.items()}
        reasons = {"borrow_fixed": "no copy to fix"}
        if unavailable(data, "owned") and "owned" in values:
            notes.append(f"on the {host_of(data)} the owned column is "
                         f"\"{data['evidence']['consumer']['labels'].get('owned_prototype', '')}\""
                         f" ({unavailable(data, 'owned')})")
        tensor = next(iter(benchmarks(data, "6 seed consumer").values()), {}).get("tensor", "")
        out.append(consumer_row(
            r, "**the seed's `StridedMemoryView`** (cuda.core, metadata in)" if kind == "here"
            else "the seed's `StridedMemoryView`",
            f"{tensor}, {host_of(data)}, CPython {python_of(data)}, torch {torch_of(data)}",
            "ns", values, reasons, path.name, against=HANDLE_ROUTES))
        if kind == "gpu-cuda":
            launch = benchmarks(data, "7 launch")
            arities = sorted({int(p.split("-")[0][1:]) for p in launch if p.startswith("N")})
            if not arities:
                gone = r.missing(f"`{path.name}` has no launch step")
                out.append(f"| launch step | | | {gone} |")
                continue
            n = max(arities)
            found = consumer_routes(data, "7 launch", prefix=f"N{n}-")
            lv = {k: median(s) / 1e3 for k, (_, s) in found.items()}
            out.append(consumer_row(
                r, "the seed's launch step (cuda.core `launch`)",
                f"{n} tensors per launch, host time per launch, {host_of(data)}", "us", lv,
                reasons, f"{path.name} launch N={n}", against=HANDLE_ROUTES))
    # numba-cuda's own benchmark, from its file or its absence.
    numba = r.find("numba-cuda-*.json")
    if numba is None:
        out.append("| numba-cuda's `test_kernel_launch.py` | | | "
                   + r.missing("no `bench/results/numba-cuda-*.json`: numba-cuda's own launch "
                               "benchmark has not been run into this repository") + " |")
    else:
        sources.append(numba)
        out += numba_rows(r, r.json(numba), against=HANDLE_ROUTES)[:1]
    note = ("_Per call (the launch step: per launch); instructions by callgrind, ns / us the "
            "median of interleaved rounds. Files: " + ", ".join(link(p) for p in sources)
            + (". " + "; ".join(notes)[:1].upper() + "; ".join(notes)[1:] if notes else "")
            + (f". {PROTOTYPE_NOTE}" if r.prototype_marked else "") + "._")
    r.prototype_marked = False
    return "\n".join(out + ["", note]) + "\n"


NUMBA_CASES = ("26/signature", "26/dispatch")  # the launches with the most bridging


def numba_where(data: dict, s: dict | None = None) -> str:
    """``"paired, one process"``, or ``"paired, 5 fresh processes: 0.990x .. 1.004x"`` (the
    range of the processes' own median ratios of the row ``s``)."""
    k = len(data.get("process_rounds") or [1])
    if k < 2:
        return "paired, one process"
    by = (s or {}).get("ratio_by_process")
    return (f"paired, {k} fresh processes" + (f": {min(by):.3f}x .. {max(by):.3f}x" if by
                                              else ""))


def numba_rows(r: Render, data: dict, against: tuple = NO_NEW_ABI) -> list[str]:
    """numba-cuda's own launch path (``bench/numba_cuda/run.py``): one row per NUMBA_CASES case,
    us per launch from the in-process A/B; the saving column is the paired per-round ratio
    of the cheapest of ``against`` to the borrow, with its 95% interval."""
    rows = []
    for case in NUMBA_CASES:
        ab = data.get("ab", {}).get(case)
        if not ab:
            rows.append(f"| numba-cuda | {case} | | {r.missing(data['_file'] + ' has no A/B case ' + case)} |")
            continue
        values, ratio = {}, {}
        for name, s in ab.items():
            route = canonical(name)
            if route is None or route in values:
                continue
            values[route] = s["median_ns"] / 1e3
            ratio[route] = s
        others = {k: v for k, v in values.items() if k in against}
        best = min(others, key=others.get) if others else None
        saving = None
        if best is not None and "ratio_median" in ratio[best]:
            s = ratio[best]
            lo, hi = s.get("ratio_ci") or s.get("ratio_range") or (float("nan"),) * 2
            saving = (f"{dict(CONSUMER_ROUTES)[best]} / borrow {s['ratio_median']:.3f}x "
                      f"[{lo:.3f}, {hi:.3f}] per launch ({numba_where(data, s)})")
        arity, jit = case.split("/")
        v = data["versions"]
        setup = (f"{arity} torch arguments, `cuda.jit` "
                 f"{'explicit signature' if jit == 'signature' else 'dispatch'}, host time per "
                 f"launch, {host_of(data)}, numba-cuda {v['numba-cuda']}, torch {v['torch']}")
        rows.append(consumer_row(
            r, "**numba-cuda's own launch path**" if case == NUMBA_CASES[0]
            else "numba-cuda's launch path", setup, "us", values,
            {"borrow_fixed": "no copy to fix"}, f"{data['_file']} {case}", saving))
    return rows


def render_numba(r: Render) -> str:
    """The appendix's numba-cuda section: the checks, the in-process A/B of every route (us
    per launch, x vs borrow with its 95% interval), where a torch argument's cost goes, and
    numba-cuda's own benchmark file run once per route (a fresh process each)."""
    path = r.find("numba-cuda-*.json")
    data = r.json(path)
    if data is None:
        return r.missing("no `bench/results/numba-cuda-*.json`") + "\n"
    v = data["versions"]
    out = [f"numba-cuda {v['numba-cuda']}, cuda-core {v['cuda-core']}, torch {v['torch']}, "
           f"CPython {v['python']}, numpy {v['numpy']}, {data['gpu']} ({link(path)}).", ""]
    c = data.get("checks", {})
    if "failed" in c or data.get("failures"):
        out.append(f"**Checks failed**: {c.get('failed') or '; '.join(data['failures'])}")
    else:
        counts = c.get("views_per_10_launches", {})
        exact = all(x["views"] == x["expected"] for x in counts.values())
        out.append(f"Checked before timing: every rebound route's view equal to cuda.core's field "
                   f"by field ({c['views_equal']['tensors']} tensors, `stream_ptr` -1 and the "
                   f"launch stream); a kernel's writes through each of 1 and 26 arguments landed "
                   f"on every route; the routes' counters {'equal' if exact else 'DIFFER from'} "
                   "the views numba-cuda asked for (2 per argument with `cuda.jit` dispatch, 1 "
                   "with an explicit signature).")
    out += ["", "| route | " + " | ".join(data["ab"]) + " |",
            "|---|" + "---:|" * len(data["ab"])]
    for route in next(iter(data["ab"].values())):
        cells = []
        for case, rows in data["ab"].items():
            s = rows[route]
            ci = s.get("ratio_ci") or s.get("ratio_range")
            cells.append(f"{s['median_ns'] / 1e3:.1f}" + (
                f" ({s['ratio_median']:.3f}x [{ci[0]:.3f}, {ci[1]:.3f}])" if ci else ""))
        label = data["labels"].get(route, "numba device arrays (the baseline)")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    k = len(data.get("process_rounds") or [1])
    out += ["", "_us per launch, median of interleaved rounds "
            + (f"pooled from {k} fresh processes, each its own order" if k > 1
               else "in one process")
            + " (x vs borrow, paired per round, 95% bootstrap interval); columns: arguments "
            "/ jit._", "",
            "Where a torch argument's cost goes (one argument, ns per call, the route as shipped):",
            "", "| part | torch | device array | torch - device array |", "|---|---:|---:|---:|"]
    for name, s in data["attribution"].items():
        if "error" in s:
            continue
        dd = s.get("device_array")
        out.append(f"| {name.strip()} | {s['torch']['median_ns']:.0f} | "
                   + (f"{dd['median_ns']:.0f} | {s['torch_minus_device_array_ns']:.0f} |"
                      if dd else "| |"))
    bench = data.get("numba", {}).get("benchmark", {})
    if bench:
        passes = data["numba"].get("passes") or 1
        out += ["", "numba-cuda's own `test_kernel_launch.py`, "
                + (f"{passes} fresh processes per route (the first runs the whole file, the "
                   "others its two tests below; the routes' order rotated per pass; the median "
                   "over processes, the range of the processes' own ratios in parentheses)"
                   if passes > 1 else "one fresh process per route")
                + " (pytest-benchmark median, us; torch / device arrays of the same process):",
                "", "| route | 26 torch, signature | 26 device arrays, signature | ratio | views |",
                "|---|---:|---:|---:|---:|"]
        for route, res in bench.items():
            got = res.get("results", {})
            pairs = res.get("pair_by_process") or []
            if len(pairs) < 2:
                t = got.get("test_many_args[signature-torch]", {}).get("median_ns")
                d = got.get("test_many_args[signature-device_array]", {}).get("median_ns")
                pairs = [[t, d]] if t and d else []
            if not pairs:
                continue
            ratios = [t / d for t, d in pairs]
            t = statistics.median(t for t, _ in pairs)
            d = statistics.median(d for _, d in pairs)
            rng = (f" ({min(ratios):.2f}x .. {max(ratios):.2f}x)" if len(pairs) > 1 else "")
            out.append(f"| {route} | {t / 1e3:.1f} | {d / 1e3:.1f} | "
                       f"{statistics.median(ratios):.2f}x{rng} | {res.get('views', 0):,} |")
        # The device-array control runs the same code on every route, so its spread over
        # the processes is the file's own noise: a route's ratio moves by as much.
        controls = []
        for res in bench.values():
            one = res.get("results", {}).get("test_many_args[signature-device_array]", {})
            pairs = res.get("pair_by_process") or [(None, one.get("median_ns"))]
            controls += [d for _, d in pairs if d]
        if len(controls) > 1:
            out += ["", f"The device-array control, the same code on every route, takes "
                    f"{min(controls) / 1e3:.1f} to {max(controls) / 1e3:.1f} us across these "
                    "processes: the file's own noise, so a difference between routes' ratios "
                    "within that spread is not the route's."]
        files = data.get("numba", {}).get("test_files", [])
        out += ["", f"Every route passed the file's {next(iter(bench.values())).get('tests', '?')}"
                f" tests; numba-cuda {v['numba-cuda']} ships "
                + ("no other test module that uses torch tensors." if not files else
                   f"{len(files)} more test modules that use torch tensors, run on every route.")]
    return "\n".join(out) + "\n"


# --- the ask, as sentences ------------------------------------------------------------------
def render_ask(r: Render) -> str:
    """The ask's figures as sentences: what each fix does to the routes, and what the borrow
    still saves the consumer that needs a handle, after the interpreter fix on both sides."""
    cg = {tag: r.json(r.callgrind(tag)) for tag in ("cp312-", "cp313-", "")}
    have = {t: d for t, d in cg.items() if d}
    if not have:
        return r.missing("no callgrind-*torch-*.json") + "\n"

    def route(d, k):
        return d.get("per_call", {}).get(f"route:{k}")

    def each(k1, k2=None, form=lambda a, b: f"{fmt(a)} to {fmt(b)}"):
        parts = []
        for d in have.values():
            a, b = route(d, k1), route(d, k2) if k2 else None
            if a is None or (k2 and b is None):
                parts.append(r.missing(f"callgrind {python_of(d)}: route {k1} or {k2}"))
                continue
            parts.append(f"{form(a, b)} on CPython {python_of(d)}")
        return ", ".join(parts)

    lines = [
        "- **The interpreter fix (0001)** takes the owned route from "
        + each("owned", "owned_fixed") + " (instructions per call), and DLPack's `no_sync` from "
        + each("dlpack_no_sync", "dlpack_no_sync_fixed") + ", with no new ABI.",
        "- **The DLPack series** (`dlpack/0001`-`0004`, its own code: real type, borrowed, "
        "conj/neg refused) takes `no_sync` from "
        + each("dlpack_no_sync", "dlpack_patched") + "; borrow + 7 getters costs "
        + each("borrow_getters", form=lambda a, b: fmt(a)) + ".",
    ]
    below = [d for d in have.values() if route(d, "dlpack_patched") is not None
             and route(d, "borrow_getters") is not None]
    if below:
        cheaper = all(route(d, "dlpack_patched") < route(d, "borrow_getters")
                      for d in below)
        lines[-1] += (" Fixed DLPack is " + ("below" if cheaper else "not below")
                      + " borrow + getters on every CPython counted.")
    # The handle consumer, per tensor argument, after the interpreter fix on both sides.
    files = c_shim_files(r)
    per_arg, shares = [], []
    for key in ("cg312", "cg313", "cg311"):
        d = r.json(files[key])
        if not d:
            continue
        for op in OPS:
            v = c_shim_instr(d, op)
            if c_shim_exact(d, op) and {"owned_fixed", "borrow_fixed"} <= set(v):
                per_arg.append((v["owned_fixed"] - v["borrow_fixed"]) / d["arity"][op])
                shares.append((v["owned_fixed"] - v["borrow_fixed"]) / v["owned_fixed"])
    # Every timed file, with how many ops' 95% intervals lie above zero: a range of medians
    # alone would let one noisy op's median stand for the borrow's saving.
    timed = []
    for key in ("gpu", "gpu-cpu", "cpu"):
        d = r.json(files[key])
        if not d:
            continue
        for size in (32, 1024):
            got = [g for g in (c_shim_share(d, op, size, "owned_fixed", "borrow_fixed")
                               for op in OPS) if g]
            if got:
                where = {"gpu": f"CUDA tensors on the {host_of(d)}",
                         "gpu-cpu": f"CPU tensors on the {host_of(d)}",
                         "cpu": "CPU tensors here"}[key]
                above = sum(lo > 0 for _, lo, _ in got)
                timed.append(f"{span([m for m, _, _ in got], pct)} at {size}x{size} ({where}; "
                             f"{above} of {len(got)} ops' 95% intervals above 0)")
    if per_arg:
        lines.append(
            "- **The borrow (0003)**, against the owned handle with the fix, in the consumer "
            "that needs a handle (C shims): " + span(per_arg) + " instructions per "
            "tensor argument, " + span(shares, pct) + " of the whole call's instructions "
            "(the ops whose counts are exact); in time, per op: " + "; ".join(timed) + ".")
    else:
        lines.append("- **The borrow (0003)**: " + r.missing("no callgrind-c-shims JSON"))
    return "\n".join(lines) + "\n"


# --- free-threaded ----------------------------------------------------------------------------
READER_WORDS = {"view_fallback": "pointer trick (`bridge.view_fallback`)",
                "view_borrow": "borrow (`bridge.view_borrow`)",
                "view_owned": "owned (`bridge.view_owned`)"}


def race_build(data: dict, free_threaded: bool):
    """(facts, rows) of the race survey's free-threaded or GIL build (None, None if absent)."""
    for info, rows in data.get("results", {}).values():
        if bool(info.get("free_threaded")) == free_threaded:
            return info, rows
    return None, None


def race_table(info: dict, rows: list, trials: int, locked: bool = False) -> list[str]:
    """Reader x mutation: crashed children of ``trials``, reads (exact + mixed + raised), mixed."""
    rows = [x for x in rows if x["locked"] == locked and "none" not in (x["reader"], x["mutation"])]
    mutations = list(dict.fromkeys(x["mutation"] for x in rows))
    readers = list(dict.fromkeys(x["reader"] for x in rows))
    cell = {(x["reader"], x["mutation"]): x for x in rows}
    out = ["| reader \\ mutation | " + " | ".join(f"`{m}`" for m in mutations) + " |",
           "|---|" + "---|" * len(mutations)]
    for reader in readers:
        cells = []
        for m in mutations:
            x = cell.get((reader, m))
            if x is None:
                cells.append(DASH)
                continue
            reads = x["exact"] + x["mixed"] + x["raised"]
            crash = f"**crashed {len(x['crashes'])}/{trials}**; " if x["crashes"] else ""
            raised = f", {fmt(x['raised'])} raised" if x["raised"] else ""
            cells.append(f"{crash}{fmt(reads)} reads, {fmt(x['mixed'])} mixed{raised}")
        words = READER_WORDS.get(reader, f"`{reader}`")
        out.append(f"| {words} | " + " | ".join(cells) + " |")
    return out


def race_summary(rows: list, trials: int) -> list[str]:
    """Per reader, in words: under which mutations a child crashed, which gave mixed reads,
    and how many reads it made in all (unlocked)."""
    rows = [x for x in rows if not x["locked"] and "none" not in (x["reader"], x["mutation"])]
    out = []
    for reader in dict.fromkeys(x["reader"] for x in rows):
        mine = [x for x in rows if x["reader"] == reader]
        crashed = [f"`{x['mutation']}` ({len(x['crashes'])}/{trials})"
                   for x in mine if x["crashes"]]
        mixed = [f"`{x['mutation']}`" for x in mine if x["mixed"]]
        reads = sum(x["exact"] + x["mixed"] + x["raised"] for x in mine)
        n_mixed = sum(x["mixed"] for x in mine)
        out.append(f"- {READER_WORDS.get(reader, '`' + reader + '`')}: "
                   + (f"crashed under {', '.join(crashed)}" if crashed else "no crash")
                   + f"; {fmt(reads)} reads, {fmt(n_mixed)} mixed"
                   + (f" (under {', '.join(mixed)})" if mixed else "") + ".")
    return out


def race_verdict(rows: list) -> str:
    """One sentence: which readers stayed clean under every unlocked mutation, if any."""
    unlocked = [x for x in rows
                if not x["locked"] and "none" not in (x["reader"], x["mutation"])]
    bad = {x["reader"] for x in unlocked if x["crashes"] or x["mixed"]}
    readers = list(dict.fromkeys(x["reader"] for x in unlocked))
    clean = [READER_WORDS.get(x, f"`{x}`") for x in readers if x not in bad]
    return ("Every reader, torch's own accessors included, crashed in some children or "
            "made mixed reads under some unlocked mutation." if not clean else
            f"Under every unlocked mutation without a crash or a mixed read: "
            f"{', '.join(clean)}; every other reader crashed or mixed under some mutation.")


def render_free_threaded_line(r: Render) -> str:
    """The RFC's line on the free-threaded build: which build, and ``race_verdict``."""
    data = r.json(r.free_threaded)
    info, rows = race_build(data, True) if data is not None else (None, None)
    if info is None:
        return r.missing(f"no free-threaded build in `{rel(r.free_threaded)}`") + "\n"
    return (f"On CPython {info['python']} (free-threaded), torch {info['torch']} "
            f"({link(r.free_threaded)}; appendix F), readers of one tensor another thread "
            f"mutates: {race_verdict(rows)}\n")


def render_free_threaded(r: Render, every: bool = False) -> str:
    """The free-threaded build's race table (``every``: both builds, totals, the locked runs)."""
    data = r.json(r.free_threaded)
    if data is None:
        return r.missing(f"no `{rel(r.free_threaded)}` (`make race-survey`)") + "\n"
    out = []
    for ft in ((True, False) if every else (True,)):
        info, rows = race_build(data, ft)
        if info is None:
            out.append(r.missing(f"`{r.free_threaded.name}` has no "
                                 f"{'free-threaded' if ft else 'GIL'} build"))
            continue
        kind = "free-threaded" if ft else "GIL"
        build = f"CPython {info['python']} ({kind}), torch {info['torch']}"
        absent = "; ".join(f"{p}: {v[2]}" for p, v in info.get("paths", {}).items() if not v[0])
        out += [f"_{build}; {data['trials']} children of {data['seconds']:g} s per cell; a read is "
                "*mixed* when its pointer, shape and strides come from two tensors"
                + (f"; {absent}" if absent else "") + f" ({link(r.free_threaded)})._", ""]
        out += race_table(info, rows, data["trials"]) + [""]
        out += [race_verdict(rows), ""]
        if every:
            out += ["In all, per reader (unlocked):", ""] + race_summary(rows, data["trials"])
            out += [""]
            out += ["With one `threading.Lock` around every read and mutation:", ""]
            out += race_table(info, rows, data["trials"], locked=True) + [""]
    return "\n".join(out).rstrip("\n") + "\n"


# --- the appendix's detail blocks ---------------------------------------------------------------
def render_c_shims(r: Render) -> str:
    """Per op: instructions per tensor argument (owned + fix minus borrow + fix) per CPython,
    and the time share of the op per setup and size."""
    files = c_shim_files(r)
    cgs = [(k, r.json(files[k])) for k in ("cg312", "cg313", "cg311") if r.json(files[k])]
    runs = [(k, r.json(files[k])) for k in ("cpu", "gpu-cpu", "gpu") if r.json(files[k])]
    if not cgs and not runs:
        return r.missing("no c-shims JSON") + "\n"
    head = ["op", "tensors"] + [f"instr per argument, CPython {python_of(d)}" for _, d in cgs]
    for _, d in runs:
        dev = d.get("evidence", {}).get("device", {}).get("type", "cpu")
        head += [f"share of the op, {s}x{s}, {dev.upper()}, {host_of(d)}" for s in (32, 1024)]
    out = ["| " + " | ".join(head) + " |", "|---|---:|" + "---:|" * (len(head) - 2)]
    for op in OPS:
        k = next((d["arity"][op] for _, d in cgs), "")
        cells = [op, str(k)]
        for _, d in cgs:
            v = c_shim_instr(d, op)
            ok = {"owned_fixed", "borrow_fixed"} <= set(v)
            cells.append((fmt((v["owned_fixed"] - v["borrow_fixed"]) / d["arity"][op])
                          + ("" if c_shim_exact(d, op) else " (inexact)")) if ok else DASH)
        for _, d in runs:
            for s in (32, 1024):
                c = c_shim_share(d, op, s, "owned_fixed", "borrow_fixed")
                cells.append(f"{pct(c[0])} [{pct(c[1])}, {pct(c[2])}]" if c else DASH)
        out.append("| " + " | ".join(cells) + " |")
    src = ", ".join(link(files[k]) for k in ("cg312", "cg313", "cg311", "cpu", "gpu-cpu", "gpu")
                    if files[k])
    return "\n".join(out + ["", "_Owned + interpreter fix minus borrow + interpreter fix, whole "
                            "call (handles, op, release); *inexact*: the op's count varies from "
                            "call to call (repeat check not 0); shares: median over rounds of "
                            "the paired difference over the op's time [95% bootstrap]. Files: "
                            + src + "._"]) + "\n"


def render_seed_all(r: Render) -> str:
    """Every route of the seed's consumer and of the launch step, as run."""
    out = []
    for kind in ("here", "here-cp313", "gpu-host-cpu", "gpu-cuda"):
        path = r.timed(kind)
        data = r.json(path)
        if data is None:
            continue
        groups = [("6 seed consumer", "the seed's consumer, ns per view")]
        groups += [(f"7 launch-bound step: a CUDA kernel with N tensor arguments bridged per "
                    f"launch, N={n}", f"launch step, {n} tensors, us per launch")
                   for n in sorted({int(p.split("-")[0][1:])
                                    for p in benchmarks(data, "7 launch")})]
        for group, words in groups:
            rows = benchmarks(data, group)
            if not rows:
                continue
            scale = 1e3 if "launch" in words else 1.0
            tensor = next(iter(rows.values())).get("tensor")
            out.append(f"**{words}**" + (f", {tensor} tensors" if tensor else "")
                       + f", {host_of(data)}, CPython {python_of(data)}, torch "
                       f"{torch_of(data)} ({link(path)}): " + "; ".join(
                           f"{info.get('label', p)}: {fmt(median(samples(info)) / scale, 2)}"
                           for p, info in rows.items() if samples(info)) + ".")
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n" if out else r.missing("no benchmark JSON") + "\n"


def render_conj(r: Render) -> str:
    """`torch_is_conj` against an owning handle + `torch_call_dispatcher`, ns, paired ratio."""
    parts = []
    for kind in ("here", "here-cp313", "gpu-host-cpu"):
        path = r.timed(kind)
        data = r.json(path)
        if data is None:
            continue
        rows = benchmarks(data, "2b")
        g, d = rows.get("conj_getter"), rows.get("conj_dispatcher")
        if not (g and d and samples(g) and samples(d)):
            parts.append(r.missing(f"`{path.name}` has no conj_getter / conj_dispatcher"))
            continue
        ratio = median_ci([b / a for a, b in zip(samples(g), samples(d))])
        parts.append(f"CPython {python_of(data)}, {host_of(data)} ({link(path)}): "
                     f"`torch_is_conj` {fmt(median(samples(g)), 1)} ns, a new owning handle + "
                     f"`torch_call_dispatcher(aten::is_conj)` {fmt(median(samples(d)), 1)} ns, "
                     f"{ratio[0]:.1f}x [{ratio[1]:.1f}, {ratio[2]:.1f}] paired")
    return ("; ".join(parts) + ".\n") if parts else r.missing("no timed runs") + "\n"


def render_dispatcher_flags(r: Render) -> str:
    """Appendix E's counts of reading the conj / neg bits through the dispatcher, as
    consumer.h's owned route without shim_ext does (a new handle, ``aten::is_neg``,
    ``aten::is_conj`` for a complex dtype), beside the same owned handle with shim_ext's C
    checks (its flag getters are 0002's functions): instructions per read over 64 distinct
    tensors in one C loop and the ratio to torch's DLPack exchange API alone on the same
    tensors (``bench/consumer_header.py``), per CPython."""
    parts = []
    for tag in ("", "cp313-"):
        path = r.find(f"callgrind-consumer-{tag}torch-*.json")
        data = r.json(path)
        per = (data or {}).get("instructions_per_call", {})
        if not all(k in per for k in ("route_owned_noshim_f32", "route_owned_noshim_c64",
                                      "route_owned_f32", "dlpack_exchange_f32",
                                      "dlpack_exchange_c64")):
            continue
        f32, c64 = per["dlpack_exchange_f32"], per["dlpack_exchange_c64"]
        parts.append(
            f"CPython {python_of(data)}, torch {torch_of(data)} ({link(path)}): through the "
            f"dispatcher {fmt(per['route_owned_noshim_f32'])} instructions per float32 read "
            f"({per['route_owned_noshim_f32'] / f32:.2f}x the exchange API alone) and "
            f"{fmt(per['route_owned_noshim_c64'])} per complex64 read "
            f"({per['route_owned_noshim_c64'] / c64:.2f}x); with C flag getters "
            f"{fmt(per['route_owned_f32'])} ({per['route_owned_f32'] / f32:.2f}x)")
    if not parts:
        return r.missing("no consumer.h counts over 64 tensors (`make callgrind-consumer`)") + "\n"
    return "; ".join(parts) + ".\n"


# --- putting it together ------------------------------------------------------------------------
BUILDERS = {
    "ask": render_ask,
    "routes": render_routes,
    "consumers": render_consumers,
    "consumers-time": render_consumers_time,
    "verdicts": render_verdicts,
    "free-threaded": render_free_threaded,
    "free-threaded-line": render_free_threaded_line,
    "routes-all": lambda r: render_routes(r, ROUTES + MORE_ROUTES),
    "c-shims": render_c_shims,
    "seed-all": render_seed_all,
    "conj-route": render_conj,
    "dispatcher-flags": render_dispatcher_flags,
    "free-threaded-all": lambda r: render_free_threaded(r, every=True),
    "numba-cuda": render_numba,
}


def render_all(results: pathlib.Path, free_threaded: pathlib.Path = FREE_THREADED):
    """({block name: text}, warnings) of one rendering."""
    r = Render(results, free_threaded)
    return {name: build(r) for name, build in BUILDERS.items()}, r.warnings


def render(text: str, generated: dict[str, str]) -> str:
    """``text`` with every generated block's content replaced."""
    def repl(m):
        name = m.group(2)
        if name not in generated:
            raise SystemExit(f"unknown generated section {name!r}")
        return m.group(1) + generated[name].rstrip("\n") + "\n" + m.group(4)
    return MARKER.sub(repl, text)


def main(argv: list[str] | None = None) -> int:
    """Render RFC.md and appendix.md in place (or, with --check, say whether they are current)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=pathlib.Path, default=RESULTS,
                        help="folder of the result files (default bench/results)")
    parser.add_argument("--check", action="store_true", help="exit 1 if a file is stale")
    parser.add_argument("files", nargs="*", type=pathlib.Path, default=[RFC, APPENDIX],
                        help="files to fill (default proposal/RFC.md proposal/appendix.md)")
    args = parser.parse_args(argv)
    generated, warnings = render_all(args.results)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    stale = []
    for path in args.files:
        old = path.read_text()
        new = render(old, generated)
        if args.check:
            if new != old:
                stale.append(path)
        else:
            path.write_text(new)
            print(f"rendered {rel(path)}")
    for path in stale:
        print(f"{rel(path)} is stale: run make rfc", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
