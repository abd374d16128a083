"""What a result was measured on: CPU, load, Python, torch, compilers, date.

Recorded into every result file (pytest-benchmark's ``machine_info`` and the
report's footer), so a figure never travels without its context.
"""

from __future__ import annotations

import datetime
import os
import pathlib
import platform


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (else ``platform.processor()``)."""
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


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
