"""What a result was measured on: CPU (model, clock), load, Python, torch, compilers, date.

Recorded into every result file (pytest-benchmark's ``machine_info`` and the
report's footer), so a figure never travels without its context.
"""

from __future__ import annotations

import datetime
import os
import pathlib
import platform
import subprocess


def _cpuinfo() -> dict:
    """The first processor's fields of /proc/cpuinfo (``{}`` where there is none)."""
    fields = {}
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if not line.strip():
                break  # the first processor's block ends at the first blank line
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
    except OSError:
        pass
    return fields


def _lscpu() -> dict:
    """``lscpu``'s fields (``{}`` where it is missing or fails)."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10,
                             env={**os.environ, "LC_ALL": "C"}).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    return {k.strip(): v.strip() for k, _, v in (l.partition(":") for l in out.splitlines()) if v}


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (else ``platform.processor()``)."""
    return _cpuinfo().get("model name") or platform.processor() or "unknown"


def cpu_clock() -> dict:
    """The CPU's clock and identity, as far as this machine tells.

    ``mhz``: /proc/cpuinfo's ``cpu MHz`` of the first processor (the current clock;
    under a hypervisor usually the host's nominal one); ``max_mhz`` / ``min_mhz``:
    ``lscpu``'s ``CPU max MHz`` / ``CPU min MHz`` (None where the kernel exposes no
    cpufreq data, as in most VMs); ``family`` / ``model`` / ``stepping`` and
    ``hypervisor`` (lscpu's ``Hypervisor vendor``) name a CPU whose model string is
    generic (``AMD EPYC``).
    """
    info, ls = _cpuinfo(), _lscpu()

    def number(text):
        try:
            return round(float(text), 1)
        except (TypeError, ValueError):
            return None

    return {"mhz": number(info.get("cpu MHz")), "max_mhz": number(ls.get("CPU max MHz")),
            "min_mhz": number(ls.get("CPU min MHz")), "vendor": info.get("vendor_id"),
            "family": info.get("cpu family"), "model": info.get("model"),
            "stepping": info.get("stepping"), "hypervisor": ls.get("Hypervisor vendor")}


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages (what ``uptime`` prints); [] where unknown."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def collect() -> dict:
    """Everything that names the measurement's context, as a JSON-ready dict."""
    import torch
    from importlib import metadata

    from bridge import _bridge

    def version(dist):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    return {
        "cpu_model": cpu_model(),
        "cpu_clock": cpu_clock(),
        "cpu_count": os.cpu_count(),
        "load_average_at_start": load_average(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "bridge_compiler": _bridge.COMPILER,
        "pytest_benchmark": version("pytest-benchmark"),
        "cuda_core": version("cuda-core"),
        "cython": version("cython"),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
