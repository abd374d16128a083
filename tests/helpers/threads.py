"""A test's threads, started, joined and checked one way: ``run_threads``."""

from __future__ import annotations

import threading
from typing import Callable, Iterable


def run_threads(workers: Iterable[Callable[[], object]],
                background: Iterable[Callable[[], object]] = (),
                stop: threading.Event | None = None) -> list[str]:
    """Run each of ``background`` (loops that end once ``stop`` is set) and each of
    ``workers`` in a thread of its own: the background threads start first, then the
    workers; once every worker has returned, ``stop`` is set and the background threads
    are joined. Returns what went wrong, one ``"<thread>: <type>: <message>"`` per
    exception a thread raised (an ``AssertionError`` a worker raises for a wrong value
    included; ``<thread>``: ``worker <i>`` or the background function's name); empty when
    every thread ran through."""
    errors: list[str] = []

    def guarded(name: str, fn: Callable[[], object]) -> threading.Thread:
        def run():
            try:
                fn()
            except BaseException as exc:  # reported to the test, with the thread's name
                errors.append(f"{name}: {type(exc).__name__}: {exc}")
        return threading.Thread(target=run, name=name)

    behind = [guarded(getattr(fn, "__name__", "background"), fn) for fn in background]
    front = [guarded(f"worker {i}", fn) for i, fn in enumerate(workers)]
    for th in behind + front:
        th.start()
    for th in front:
        th.join()
    if stop is not None:
        stop.set()
    for th in behind:
        th.join()
    return errors
