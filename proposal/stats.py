"""The one interval of a median this repository computes: a 95% percentile bootstrap with
``scipy.stats.bootstrap`` (9,999 resamples, a fixed seed, so a report or the RFC renders
the same from the same JSON). The benchmark reports (``bench.report.stats``, which adds
the paired differences and ratios, formats and verdicts) and ``tools/render.py`` (the
RFC's and the appendix's figures) both use it.

numpy is imported with this module; scipy at the first interval.
"""

from __future__ import annotations

import numpy as np

#: resamples of every bootstrap
RESAMPLES = 9_999
#: the seed of every bootstrap's generator (``numpy.random.default_rng``)
SEED = 20261129


def median_ci(values, confidence: float = 0.95):
    """``(median, low, high)`` of per-round ``values``, the interval a percentile bootstrap
    of the median (``RESAMPLES``, fixed ``SEED``); (nan, nan) with fewer than 3 rounds or
    no spread. Raises ImportError without scipy."""
    from scipy import stats

    values = np.asarray(values)
    centre = float(np.median(values))
    if len(values) < 3 or np.ptp(values) == 0:
        return centre, float("nan"), float("nan")
    res = stats.bootstrap((values,), np.median, confidence_level=confidence,
                          n_resamples=RESAMPLES, method="percentile",
                          rng=np.random.default_rng(SEED))
    return centre, float(res.confidence_interval.low), float(res.confidence_interval.high)
