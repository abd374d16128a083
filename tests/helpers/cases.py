"""The tensors the parity suite runs on: every dtype torch exposes, and layouts built
from them.

Dtypes are enumerated from ``torch`` itself (every ``torch.dtype`` object in
``vars(torch)``), so a dtype a new release adds is covered, and held to parity, without
editing a test. Each is classified here by its name only, independently of the bridge's
own table: quantized (``qint*`` / ``quint*``) and sub-byte (``int1``..``int7``,
``uint1``..``uint7``) dtypes must be refused by every path; every other dtype must be
viewed exactly as torch reports it.

Layout builders take a dtype and return a tensor whose bytes are all set from a
pattern (``filled``), so a pointer that is off by any small amount reads different
bytes. Only metadata operations and torch's own copies build them; nothing here goes
through the bridge.
"""

from __future__ import annotations

import math
import re
import warnings
from typing import Callable, NamedTuple

import pytest
import torch


def torch_dtypes() -> list[torch.dtype]:
    """Every distinct ``torch.dtype`` exposed as an attribute of ``torch`` (aliases such
    as ``torch.half`` counted once), sorted by name."""
    return sorted({v for v in vars(torch).values() if isinstance(v, torch.dtype)}, key=str)


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.float8_e4m3fn`` -> ``"float8_e4m3fn"`` (test ids and messages)."""
    return str(dtype).removeprefix("torch.")


def refusal_kind(dtype: torch.dtype) -> str | None:
    """``"quantized"``, ``"sub-byte"``, or None for a dtype every path must view.

    Quantized dtypes hold integers that mean nothing without a scale and zero point;
    ``int1``..``int7`` / ``uint1``..``uint7`` have no whole-byte element (torch reports
    ``element_size() == 1`` for them all the same). Packed dtypes with a whole-byte
    element (``float4_e2m1fn_x2``, ``bits4x2``, ...) are viewable: one element is one byte.
    """
    name = dtype_name(dtype)
    if name.startswith(("qint", "quint")):
        return "quantized"
    if re.fullmatch(r"u?int[1-7]", name):
        return "sub-byte"
    return None


def cpu_allocation_error(dtype: torch.dtype) -> str | None:
    """Why torch itself cannot allocate a CPU tensor of ``dtype``, or None if it can."""
    try:
        with warnings.catch_warnings():  # "experimental dtype" notices
            warnings.simplefilter("ignore")
            torch.empty(2, dtype=dtype)
    except Exception as exc:  # any failure is torch's own answer, reported verbatim
        return f"{type(exc).__name__}: {exc}"
    return None


#: Dtypes every path must view / must refuse on the running torch.
VIEWABLE = [d for d in torch_dtypes() if refusal_kind(d) is None]
REFUSED = [d for d in torch_dtypes() if refusal_kind(d) is not None]


def filled(shape, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    """A contiguous CPU tensor of ``shape`` whose bytes follow a pattern of period 251.

    Byte ``i`` of the storage is ``(131 * i + 7 + 29 * seed) % 251`` (its parity for
    bool, whose only valid bytes are 0 and 1), so neighbouring elements differ. Built as
    uint8 and reinterpreted with ``Tensor.view(dtype)``: works for every dtype whatever
    its arithmetic support. The values may be NaN for floating dtypes: compare bytes.
    """
    numel = math.prod(shape)
    if numel == 0:
        return torch.empty(shape, dtype=dtype)
    nbytes = numel * dtype.itemsize
    raw = (torch.arange(nbytes, dtype=torch.int64) * 131 + 7 + 29 * seed) % 251
    if dtype == torch.bool:
        raw %= 2
    return raw.to(torch.uint8).view(dtype).reshape(shape)


def many_dims(ndim: int) -> tuple[int, ...]:
    """A shape of ``ndim`` dimensions with few elements: size 2 every fifth dim, else 1
    (2 ** ceil(ndim / 5) elements)."""
    return tuple(2 if i % 5 == 0 else 1 for i in range(ndim))


class Layout(NamedTuple):
    """A named way to build a tensor of a given dtype."""

    name: str
    build: Callable[[torch.dtype], torch.Tensor]


def _set_on_shared_storage(d):
    base = filled((40,), d)
    return torch.empty(0, dtype=d).set_(base.untyped_storage(), 5, (3, 4), (1, 3))


#: Layouts held to parity for every viewable dtype. Dimension counts go past the eight of
#: one of a view's two inline rooms, past the sixteen it stores inline, and up to 64 (a
#: view's heap-stored sizes and strides).
LAYOUTS = [
    Layout("0-d", lambda d: filled((), d)),
    Layout("1-element", lambda d: filled((1,), d)),
    Layout("1-d", lambda d: filled((7,), d)),
    Layout("2-d", lambda d: filled((3, 5), d)),
    Layout("4-d", lambda d: filled((2, 3, 4, 5), d)),
    Layout("zero-size-1-d", lambda d: filled((0,), d)),
    Layout("zero-size-middle-dim", lambda d: filled((3, 0, 4), d)),
    Layout("zero-size-slice", lambda d: filled((4, 6), d)[:, 3:3]),
    Layout("8-dims", lambda d: filled(many_dims(8), d)),
    Layout("9-dims", lambda d: filled(many_dims(9), d)),
    Layout("9-dims-permuted", lambda d: filled((2, 1, 3, 1, 2, 1, 1, 2, 1), d).permute(
        8, 0, 7, 1, 6, 2, 5, 3, 4)),
    Layout("16-dims", lambda d: filled(many_dims(16), d)),
    Layout("17-dims", lambda d: filled(many_dims(17), d)),
    Layout("25-dims-reversed", lambda d: filled(many_dims(25), d).permute(*range(24, -1, -1))),
    Layout("40-dims-sliced", lambda d: filled(many_dims(40), d)[1:]),
    Layout("63-dims", lambda d: filled(many_dims(63), d)),
    Layout("transposed", lambda d: filled((3, 4), d).t()),
    Layout("permuted", lambda d: filled((2, 3, 4, 5), d).permute(2, 0, 3, 1)),
    Layout("mT-batched", lambda d: filled((2, 3, 4), d).mT),
    Layout("movedim", lambda d: filled((2, 3, 4), d).movedim(0, -1)),
    Layout("sliced-with-steps", lambda d: filled((6, 8), d)[1::2, ::3]),
    Layout("step-past-the-end", lambda d: filled((10,), d)[3::7]),
    Layout("storage-offset", lambda d: filled((5, 6), d)[2:, 1:]),
    Layout("select", lambda d: filled((4, 5, 6), d).select(1, 3)),
    Layout("narrow", lambda d: filled((8, 3), d).narrow(0, 5, 2)),
    Layout("split-last-piece", lambda d: filled((10, 4), d).split(3)[3]),
    Layout("unbind-column", lambda d: filled((3, 4), d).unbind(1)[2]),
    Layout("expanded-stride-0", lambda d: filled((3, 1), d).expand(3, 4)),
    Layout("expanded-0-d", lambda d: filled((), d).expand(2, 3)),
    Layout("broadcast-to-new-dims", lambda d: filled((4,), d).broadcast_to((2, 3, 4))),
    Layout("channels-last-2d", lambda d: filled((2, 3, 4, 5), d).contiguous(
        memory_format=torch.channels_last)),
    Layout("channels-last-3d", lambda d: filled((2, 3, 2, 4, 5), d).contiguous(
        memory_format=torch.channels_last_3d)),
    Layout("channels-last-size-1-dims", lambda d: filled((1, 3, 1, 1), d).contiguous(
        memory_format=torch.channels_last)),
    Layout("as-strided-overlapping", lambda d: filled((20,), d).as_strided((4, 3), (2, 1), 3)),
    Layout("as-strided-zero-stride", lambda d: filled((20,), d).as_strided((3, 2, 2), (0, 5, 1), 4)),
    Layout("unfold-windows", lambda d: filled((10,), d).unfold(0, 4, 2)),
    Layout("diagonal", lambda d: filled((4, 4), d).diagonal()),
    Layout("diagonal-offset", lambda d: filled((4, 5), d).diagonal(1)),
    Layout("squeeze-unsqueeze", lambda d: filled((3, 1, 4), d).squeeze(1).unsqueeze(0).unsqueeze(-1)),
    Layout("view-of-view-of-view", lambda d: filled((6, 7, 8), d)[1:, ::2].transpose(0, 2)[1:3]
           .unsqueeze(1).expand(2, 3, 4, 5)),
    Layout("set-on-shared-storage", _set_on_shared_storage),
]


# --- the dtype x layout shape -------------------------------------------------------------
# A dtype enters a view only through its itemsize and its refusal; a layout only through
# the dimension rooms, strides and offset. So the full cross product (1,148 to 1,927 cases
# a test) reaches no branch that these shapes miss: every layout with one dtype of each
# itemsize, every other dtype on two layouts, each refused dtype once. `make coverage`
# holds them to that (the covered lines and branch outcomes of the cross product are a
# subset of the shape's).

#: The dtype of each itemsize (1, 2, 4, 8, 16 bytes) that runs on every layout.
ITEMSIZE_DTYPES = (torch.uint8, torch.float16, torch.float32, torch.int64, torch.complex128)


def _case(dtype: torch.dtype, layout: Layout):
    return pytest.param(dtype, layout, id=f"{dtype_name(dtype)}-{layout.name}")


def dtype_layout_cases(dtypes, layouts=None) -> list:
    """``pytest.param(dtype, layout)`` for ``parametrize("dtype, layout", ...)``: every
    layout with each ``ITEMSIZE_DTYPES`` member found in ``dtypes``, every other viewable
    dtype of ``dtypes`` on two layouts (taken in rotation, so every layout sees other
    dtypes too), each refused one on one layout. Ids are ``<dtype>-<layout>``; the list is
    the same in every process (xdist's workers collect it alike)."""
    layouts = LAYOUTS if layouts is None else layouts
    dtypes = list(dtypes)
    cases = [_case(d, lay) for lay in layouts for d in ITEMSIZE_DTYPES if d in dtypes]
    others = [d for d in dtypes if d not in ITEMSIZE_DTYPES]
    k = 0
    for d in others:
        for _ in range(1 if refusal_kind(d) else 2):
            cases.append(_case(d, layouts[k % len(layouts)]))
            k += 1
    return cases


def layout_cases(dtypes, layouts=None) -> list:
    """The lighter shape for a second flag of a test that runs ``dtype_layout_cases`` on
    its first: every layout once (its dtype rotating through the ``ITEMSIZE_DTYPES`` in
    ``dtypes``), and each refused dtype of ``dtypes`` once."""
    layouts = LAYOUTS if layouts is None else layouts
    dtypes = list(dtypes)
    reps = [d for d in ITEMSIZE_DTYPES if d in dtypes]
    cases = [_case(reps[i % len(reps)], lay) for i, lay in enumerate(layouts)]
    refused = [d for d in dtypes if refusal_kind(d)]
    return cases + [_case(d, layouts[i % len(layouts)]) for i, d in enumerate(refused)]


def flagged(flag, cases: list, flag_id: str | None = None) -> list:
    """``cases`` with ``flag`` put in front of each: ``parametrize("flag, dtype, layout",
    [*flagged(a, dtype_layout_cases(...)), *flagged(b, layout_cases(...))])``; ids
    ``<flag_id>-<dtype>-<layout>`` (``flag_id`` defaults to ``str(flag)``)."""
    name = str(flag) if flag_id is None else flag_id
    return [pytest.param(flag, *c.values, id=f"{name}-{c.id}") for c in cases]
