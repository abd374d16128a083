"""The ask, re-derived from the consumers that exist: each real consumer's cost on the route
it takes today, on the cheapest stable route it could take today, and with each proposed
patch, in instructions per call on each CPython counted; and which patch helps it most.

The counts come from committed JSON: ``bench/results/consumers-[<tag>-]torch-<v>.json``
(``python -P -m bench.consumers``: cuda.core's tensor bridge, tvm-ffi, the private-unpack
launcher) and ``callgrind-c-shims-[<tag>-]torch-<v>.json`` (the C-shim
consumer). ``derive(files)`` returns one ``Row`` per consumer and setup; ``render.py``
writes the table and the Summary's per-consumer lines from the same rows, so the two
cannot disagree.

A fix's saving (0001, the DLPack series, both) is the cheapest stable route today minus
the cheapest route the consumer can take with it. The borrow's is what it saves *beyond
both fixes* (the ask without new ABI), counted with the interpreter fix installed where a
copy remains in the consumer's own path: whether a consumer needs new ABI at all. A saving
below ``NOISE`` instructions on some CPython is not counted as help: counts through
torch's bindings move by 10-25 between processes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: (file tag, CPython) of the counted interpreters, in the table's order
CPYTHONS = (("", "3.11"), ("cp312-", "3.12"), ("cp313-", "3.13"))
#: what a consumer may gain from, in the table's order: each fix alone, both fixes (the
#: ask without new ABI), and the borrow (with the interpreter fix where a copy remains)
PATCHES = ("0001", "dlpack", "fixes", "borrow")
PATCH_WORDS = {"0001": "the interpreter fix (0001)", "dlpack": "the DLPack series",
               "fixes": "both fixes", "borrow": "the borrow (0003)"}
#: instructions a saving must exceed on every CPython to count as help
NOISE = 25


@dataclass(frozen=True)
class Spec:
    """One consumer setup: where its counts are (``source``: ``"consumers"`` or
    ``"c_shims"``), the config keys of each cell (the cheapest of a cell's keys is taken),
    why a patch cannot apply (``reasons``), the patches whose route the consumer does not
    take (``not_taken``: shown, never counted as help) and ``k``, its tensors per call."""

    consumer: str
    route_today: str
    cited: str
    setup: str
    source: str
    today: tuple
    stable: tuple
    patched: dict
    reasons: dict = field(default_factory=dict)
    not_taken: dict = field(default_factory=dict)
    note: str = ""
    k: int = 1


def _launcher(k: int) -> Spec:
    key = lambda route, p="today": f"launcher|{route}|{p}|{k}"  # noqa: E731
    return Spec(
        "private-unpack launcher", "`THPVariable_Check` + `THPVariable_Unpack` (private)",
        "facebookexperimental/triton#1498; pytorch/pytorch#180507",
        f"{k} tensor{'s' if k > 1 else ''} + 2 ints, one `METH_FASTCALL` call", "consumers",
        today=(key("unpack"),), stable=(key("owned"), key("dlpack")),
        patched={"0001": (key("owned", "0001"), key("dlpack", "0001")),
                 "dlpack": (key("dlpack", "dlpack"),),
                 "fixes": (key("owned", "0001"), key("dlpack", "dlpack")),
                 "borrow": (key("borrow"),)}, k=k)


def _tvm(k: int) -> Spec:
    key = lambda p="today": f"tvm_ffi|managed|{p}|{k}"  # noqa: E731
    return Spec(
        "tvm-ffi", "`managed_tensor_from_py_object_no_sync` (owning)",
        "apache/tvm-ffi 620fece9 `python/tvm_ffi/cython/function.pxi`",
        f"{k} tensor{'s' if k > 1 else ''}, a function of tvm-ffi's own build", "consumers",
        today=(key(),), stable=(key(),),
        patched={"0001": (key("0001"),), "dlpack": (key("dlpack"),),
                 "fixes": (key("0001+dlpack"),)},
        reasons={"borrow": "its `ffi::Tensor` owns what it is given"}, k=k)


SPECS = (
    Spec("C shims", "`torch_tensor_from_pyobject` (owned) into `aoti_torch_cpu_*`",
         "`torch/csrc/inductor/aoti_torch/generated/c_shim_cpu.h`",
         "`addmm_out` 32x32, 4 tensors, the whole call", "c_shims",
         today=("owned",), stable=("owned",),
         patched={"0001": ("owned_fixed",), "fixes": ("owned_fixed",),
                  "borrow": ("borrow_fixed",)},
         reasons={"dlpack": "takes handles"}, k=4),
    Spec("cuda.core", "pointer trick + 7 getters (private)",
         "NVIDIA/cuda-python 0c31df19 `cuda_core/cuda/core/_tensor_bridge.pyx`",
         "fill one `StridedMemoryView`", "consumers",
         today=("cuda_core|pointer|today|1",), stable=("cuda_core|owned|today|1",),
         patched={"0001": ("cuda_core|owned|0001|1",), "dlpack": ("cuda_core|dlpack|dlpack|1",),
                  "fixes": ("cuda_core|owned|0001|1",),
                  "borrow": ("cuda_core|borrow|today|1",)},
         not_taken={"dlpack": "it reads handles, not the exchange API: NVIDIA/cuda-python#1439"},
         note="stable today: the owned shim, as its seed PR wrote it"),
    _tvm(1), _tvm(8), _launcher(1), _launcher(3), _launcher(8),
)


@dataclass
class Row:
    """A ``Spec`` evaluated on the counted CPythons: ``values[cell]`` is a list with one
    count (or None) per CPython, for cells ``today``, ``stable`` and each patch;
    ``saving[patch]`` per CPython: stable today minus the fix's count, or for the borrow,
    both fixes' count minus the borrow's (``base[patch]`` the count it is taken from)."""

    spec: Spec
    pythons: list
    values: dict
    saving: dict
    base: dict
    missing: list

    def helps(self, patch: str) -> bool:
        """Whether ``patch`` saves more than ``NOISE`` on every CPython counted."""
        s = self.saving.get(patch)
        return bool(s) and all(x is not None and x > NOISE for x in s)

    def best(self) -> str | None:
        """The fix (no new ABI) with the largest saving on every CPython, or None when none
        helps; the borrow is judged on its own (``helps("borrow")``)."""
        helping = [p for p in PATCHES if p != "borrow" and self.helps(p)
                   and p not in self.spec.not_taken]
        return max(helping, key=lambda p: min(self.saving[p])) if helping else None


def _cell(data: dict | None, spec: Spec, keys: tuple):
    if data is None:
        return None
    if spec.source == "c_shims":
        pc = data.get("per_call", {})
        got = [pc[f"ccall:{k}:addmm_out"]["per_call"] for k in keys
               if f"ccall:{k}:addmm_out" in pc]
    else:
        got = [data["per_call"][k] for k in keys if k in data.get("per_call", {})]
    return min(got) if got else None


def derive(files: dict) -> list[Row]:
    """``files``: ``{("consumers" | "c_shims", tag): loaded JSON or None}`` for every tag of
    ``CPYTHONS``; one ``Row`` per ``SPECS`` entry."""
    rows = []
    for spec in SPECS:
        datas = [files.get((spec.source, tag)) for tag, _ in CPYTHONS]
        values = {"today": [_cell(d, spec, spec.today) for d in datas],
                  "stable": [_cell(d, spec, spec.stable) for d in datas]}
        for patch, keys in spec.patched.items():
            values[patch] = [_cell(d, spec, keys) for d in datas]
        base = {p: "fixes" if p == "borrow" and "fixes" in values else "stable"
                for p in spec.patched}
        saving = {p: [None if s is None or v is None else s - v
                      for s, v in zip(values[base[p]], values[p])] for p in spec.patched}
        missing = [f"{spec.consumer} ({spec.setup}) on CPython {py}"
                   for (tag, py), d, v in zip(CPYTHONS, datas, values["today"])
                   if d is None or v is None]
        pythons = [(d or {}).get("python", py) for (_, py), d in zip(CPYTHONS, datas)]
        rows.append(Row(spec, pythons, values, saving, base, missing))
    return rows


def _range(values, form) -> str:
    lo, hi = min(values), max(values)
    return form(lo) if form(lo) == form(hi) else f"{form(lo)} to {form(hi)}"


def verdicts(rows: list[Row]) -> list[tuple[str, str]]:
    """``[(consumer, sentence)]``: per consumer (its rows together), which fixes help it
    and by how much, what the borrow adds beyond both fixes (or why it cannot serve it),
    and, where it ships a private route, what its cheapest stable route with the patches
    costs over that route. Every figure is a range over the consumer's rows and the
    CPythons counted; a row with a missing count is left out."""
    count = lambda x: f"{x:,.0f}"  # noqa: E731
    share = lambda x: f"{100 * x:.1f}%"  # noqa: E731
    out = []
    for consumer in dict.fromkeys(r.spec.consumer for r in rows):
        mine = [r for r in rows if r.spec.consumer == consumer and not r.missing]
        if not mine:
            continue
        spec, words = mine[0].spec, []
        for patch in ("0001", "dlpack"):
            if patch in spec.reasons or patch not in spec.patched:
                continue
            got = [(x, x / v) for r in mine for x, v in zip(r.saving[patch], r.values["stable"])]
            helps = all(r.helps(patch) for r in mine)
            text = (f"{PATCH_WORDS[patch]} saves {_range([x for x, _ in got], count)} "
                    f"instructions ({_range([y for _, y in got], share)})")
            if patch in spec.not_taken:
                text += f", on a route it does not take ({spec.not_taken[patch]})"
                if all(v is not None and t is not None and v < t for r in mine
                       for v, t in zip(r.values[patch], r.values["today"])):
                    text += ", below even the private route it ships"
            elif not helps:
                text += f", not beyond {NOISE} on every row"
            words.append(text)
        if "borrow" in spec.reasons:
            words.append(f"the borrow cannot serve it ({spec.reasons['borrow']})")
        else:
            got = [(x, x / v) for r in mine
                   for x, v in zip(r.saving["borrow"], r.values[r.base["borrow"]])]
            xs = [x for x, _ in got]
            if all(r.helps("borrow") for r in mine):
                words.append(f"**the borrow saves a further {_range(xs, count)} "
                             f"({_range([y for _, y in got], share)}) beyond both fixes**")
            else:
                words.append("the borrow saves nothing beyond both fixes ("
                             + _range([-x for x in xs], lambda v: f"{v:+,.0f}") + ")")
        if any(t is not None and s is not None and t < s for r in mine
               for t, s in zip(r.values["today"], r.values["stable"])):
            over = []
            for r in mine:
                cells = [p for p in PATCHES if p in r.values and p not in spec.not_taken]
                for i, t in enumerate(r.values["today"]):
                    best = min(r.values[p][i] for p in cells)
                    over.append((best - t, (best - t) / t))
            words.append("its cheapest stable route with the patches costs "
                         + _range([x for x, _ in over], lambda v: f"{v:+,.0f}") + " ("
                         + _range([y for _, y in over], lambda v: f"{100 * v:+.1f}%")
                         + ") over the private route it ships")
        ks = sorted({r.spec.k for r in mine})
        per = (f"per call of {ks[0]} to {ks[-1]} tensors, " if len(ks) > 1 else "")
        out.append((consumer, per + "; ".join(words) + "."))
    return out
