"""The paired statistics of the report: medians of per-round differences and ratios
with 95% percentile-bootstrap intervals (``median_ci``: ``proposal.stats``', the one
bootstrap the RFC's figures use too; 9,999 resamples, fixed seed, so a report is
reproducible from its JSON), their formats, and the goals' verdicts."""

from __future__ import annotations

import numpy as np

from proposal.stats import median_ci


def ns(b, stat: str) -> float:
    """pytest-benchmark's stat (seconds per call) in ns."""
    return b["stats"][stat] * 1e9


# --- paired statistics ----------------------------------------------------------------------
def paired(a, b, kind: str = "diff", confidence: float = 0.95):
    """Median over rounds of ``a_r - b_r`` (kind ``"diff"``, ns) or ``a_r / b_r``
    (``"ratio"``), with a percentile-bootstrap ``confidence`` interval of that median.
    Returns ``(centre, low, high)``; the interval is (nan, nan) with fewer than 3 rounds."""
    return median_ci(a - b if kind == "diff" else a / b, confidence)


def fmt_ci(c, unit=""):
    centre, low, high = c
    if np.isnan(low):
        return f"{centre:+.2f}{unit} [no interval]" if unit == " ns" else f"{centre:.3f}{unit}"
    if unit == " ns":
        return f"{centre:+.2f} ns [{low:+.2f}, {high:+.2f}]"
    return f"{centre:.3f}x [{low:.3f}, {high:.3f}]"


def verdict(c, limit, better="below"):
    """'met' / 'missed' / 'undecided' for an interval against ``limit``."""
    centre, low, high = c
    if np.isnan(low):
        low = high = centre
        suffix = " (no interval)"
    else:
        suffix = ""
    if better == "below":
        return ("met" if high <= limit else "missed" if low > limit else "undecided") + suffix
    return ("met" if low >= limit else "missed" if high < limit else "undecided") + suffix


def fmt_x(c) -> str:
    """A ratio and its interval, to the digits a glance needs (2 decimals, 1 from 10x)."""
    digits = 1 if c[0] >= 10 else 2 if c[0] >= 0.1 else 3
    if np.isnan(c[1]):
        return f"{c[0]:.{digits}f}x"
    return f"{c[0]:.{digits}f}x [{c[1]:.{digits}f}, {c[2]:.{digits}f}]"
