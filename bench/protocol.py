"""Interleaved rounds: the seed's protocol, for any set of contenders.

pytest-benchmark's own loop times one callable to completion before the next, so on a
shared machine a burst of load lands on whichever contender ran then. Here every round
runs every contender once, in an order that rotates from round to round (``measure``;
its starting order from ``start_order``), so drift hits all alike and round ``r`` of one
contender pairs with round ``r`` of another; the garbage collector is off for the whole
measurement, warm-up included. ``record`` hands the per-round samples to
pytest-benchmark, so its stats, groups, JSON and tables are the ones reported.
"""

from __future__ import annotations

import gc
import os
import random
import timeit
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Contender:
    """One thing to time: ``run(n)`` makes ``n`` calls and returns ns per call.

    ``name`` is its key in the results; ``level`` is ``"python"`` (timed by ``timeit``
    around a Python statement) or ``"native"`` (timed in C by the callee).
    """

    name: str
    run: Callable[[int], float]
    level: str = "python"


def statement(name: str, stmt: str, namespace: dict, context=None) -> Contender:
    """A Python-level contender: ``stmt`` (e.g. ``"f(t)"``) compiled by ``timeit`` into
    its own loop, so no extra Python call wraps it; ``namespace`` holds its names.
    ``context``: a factory of a context manager held around each timed loop (an
    internal fix installed for the round, not per call), or None."""
    timer = timeit.Timer(stmt, globals=namespace)
    if context is None:
        return Contender(name, lambda n: timer.timeit(n) / n * 1e9, "python")

    def run(n: int) -> float:
        with context():
            return timer.timeit(n) / n * 1e9

    return Contender(name, run, "python")


#: The environment variable that seeds each measurement's starting order (unset: the
#: list's order, as given).
ORDER_SEED_ENV = "BENCH_ORDER_SEED"


def start_order(contenders: list[Contender]) -> list[Contender]:
    """The order round 0 runs ``contenders`` in: the list's, or, with ``ORDER_SEED_ENV``
    set, a shuffle seeded by its value and the contenders' names (so each measurement
    of a process has its own order, reproducible from the seed). ``python -m bench
    --processes`` gives every process its own seed, so which contender follows which
    differs between processes and a position effect averages out across them."""
    seed = os.environ.get(ORDER_SEED_ENV)
    if not seed:
        return list(contenders)
    order = list(contenders)
    random.Random(f"{seed}:{','.join(c.name for c in contenders)}").shuffle(order)
    return order


#: ``[names in round-0 order, ...]`` of every ``measure`` call of this process.
ORDERS: list[list[str]] = []


def native(name: str, loop: Callable[[int], float]) -> Contender:
    """A native contender: ``loop(n)`` times ``n`` calls in C and returns ns per call."""
    return Contender(name, loop, "native")


def measure(contenders: list[Contender], rounds: int, calls: int, warmup: int) -> dict:
    """Run ``rounds`` interleaved rounds of ``calls`` calls per contender.

    ``warmup`` calls per contender come first (untimed for the results). Round ``r``
    runs the contenders in ``start_order(contenders)`` rotated by ``r``. Returns
    ``{name: [ns per call in round 0, round 1, ...]}`` (lists in round order, so index
    ``r`` pairs across contenders).
    """
    contenders = start_order(contenders)
    ORDERS.append([c.name for c in contenders])
    gc_was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for c in contenders:
            c.run(warmup)
        samples = {c.name: [] for c in contenders}
        k = len(contenders)
        for r in range(rounds):
            for c in contenders[r % k:] + contenders[:r % k]:
                samples[c.name].append(c.run(calls))
        return samples
    finally:
        if gc_was_enabled:
            gc.enable()


def record(benchmark, samples_ns: list[float], calls: int, **extra) -> None:
    """Hand one contender's per-round samples (ns per call) to pytest-benchmark.

    Each round counts as ``calls`` iterations, so pytest-benchmark's stats are per call
    (in seconds, its unit). The raw samples, in round order, also go to
    ``benchmark.extra_info["samples_ns"]`` for the paired statistics of ``bench.report``,
    with ``extra`` (path, level, label, correctness checks, ...). pytest-benchmark has no
    public call for rounds measured elsewhere, so this uses ``BenchmarkFixture._make_stats``,
    the constructor its own ``pedantic`` uses (checked to exist, with a clear error if a
    release removes it).
    """
    make_stats = getattr(benchmark, "_make_stats", None)
    if make_stats is None:
        raise RuntimeError("this pytest-benchmark has no BenchmarkFixture._make_stats; "
                           "bench/protocol.py needs a release that has (4.x, 5.x)")
    benchmark._mode = "interleaved rounds (bench/protocol.py)"
    meta = make_stats(calls)
    for ns in samples_ns:
        meta.update(ns * calls * 1e-9)
    benchmark.extra_info.update(extra)
    benchmark.extra_info["calls_per_round"] = calls
    benchmark.extra_info["samples_ns"] = [round(x, 4) for x in samples_ns]
