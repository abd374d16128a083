"""What ``python -m bridge info`` reports: the facts a reviewer asks for first."""

from __future__ import annotations

import platform
import sys

from bridge import _bridge, _resolve, _select, _support


def report() -> dict:
    """Torch and Python versions, the build's compiler, each path's availability and
    origin, the fallback's offset check and the path ``view`` would use. Imports torch."""
    import torch

    res = _select.resolution()
    try:
        active = _select.get_path()
    except _select.PathUnavailableError as exc:
        active = f"none ({exc})"
    return {
        "torch": torch.__version__,
        "torch_file": torch.__file__,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "python_compiler": platform.python_compiler(),
        "bridge_compiler": _bridge.COMPILER,
        "platform": platform.platform(),
        "sizeof_PyObject": _bridge.PYOBJECT_SIZE,
        "fallback_check": res.fallback_check,
        "paths": {p: info._asdict() for p, info in _select.available_paths().items()},
        "symbols": {name: sym.origin for name, sym in sorted(res.symbols.items())},
        "requested_path": _select.requested_path(),
        "active_path": active,
        "metadata_check": (f"{_resolve.CUSTOM_METADATA} ("
                           + res.symbols[_resolve.CUSTOM_METADATA].origin + ")"
                           if _resolve.CUSTOM_METADATA in res.symbols else
                           "none: shim_ext does not load; the pointer trick is not offered "
                           "and the owned path refuses a type whose __torch_dispatch__ is "
                           "not torch's default (torch_borrow/tables.h's rule, consumer.h's "
                           "owned route's too)"),
        "conj_neg": ("torch_is_conj / torch_is_neg getters ("
                     + res.symbols[_resolve.IS_CONJ].origin + ")"
                     if _resolve.IS_CONJ in res.symbols and _resolve.IS_NEG in res.symbols
                     else "torch.Tensor.is_conj() / .is_neg() at Python level (no "
                          "torch_is_conj / torch_is_neg in libtorch or shim_ext)"),
        "shim_ext_build": shim_ext_build(),
        "shim_ext_built_for": res.shim_ext_built_for,
        "verdict": verdict(res, active),
        "executable": sys.executable,
    }


def shim_ext_build() -> str:
    """How shim_ext was built here and why (``bridge/_support.py``'s rule, as ``setup.py``
    printed it at build time), checked against the module that loads."""
    route, why = _support.shim_ext_route()
    try:
        import shim_ext
        from shim_ext import _borrow
    except ImportError as exc:
        return f"not loadable ({exc}); setup.py's route here: {route} ({why})"
    actual = shim_ext.built_by(_borrow)
    if actual != route:
        return f"{actual} (but setup.py's route here is {route}: {why}; rebuild)"
    return f"{actual} ({why})"


def verdict(res, active: str) -> str:
    """One line: which path ``view()`` takes and whether that is the proposed borrow,
    or what stops it (a stale or missing shim_ext, with the fix)."""
    borrow = res.paths.get("borrow")
    if active == "borrow":
        return "OK: view() uses the borrowed handle (the proposed path)"
    if borrow is not None and borrow.available:
        return f"OK: the borrow is available; view() uses {active} because it was asked for"
    why = borrow.reason if borrow is not None else "not resolved"
    if res.stale_shim:
        return f"STALE: view() uses {active}, not the borrow: {why}"
    return f"NO BORROW: view() uses {active}: {why}"


def format_report(info: dict) -> str:
    """The report as aligned text lines."""
    lines = [
        f"torch            {info['torch']}  ({info['torch_file']})",
        f"python           {info['python']}  [{info['python_compiler']}]",
        f"bridge built by  {info['bridge_compiler']}",
        f"platform         {info['platform']}",
        f"fallback check   {info['fallback_check']}",
        "paths:",
    ]
    for name, p in info["paths"].items():
        state = f"available   from {p['origin']}" if p["available"] else f"unavailable: {p['reason']}"
        lines.append(f"  {name:<9} {state}")
    lines.append(f"view() uses      {info['active_path']} (requested: {info['requested_path']})")
    lines.append(f"metadata check   {info['metadata_check']}")
    lines.append(f"conj/neg bits    {info['conj_neg']}")
    lines.append(f"shim_ext built by {info['shim_ext_build']}")
    built_for = info["shim_ext_built_for"]
    lines.append(f"shim_ext built for torch {built_for}" if built_for else
                 "shim_ext built for (shim_ext._borrow does not load)")
    lines.append("symbols:")
    lines += [f"  {name:<44} {origin}" for name, origin in info["symbols"].items()]
    lines.append(f"verdict          {info['verdict']}")
    return "\n".join(lines)
