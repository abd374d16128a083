"""Threads: the bridge's threads contract, tested on every interpreter (free-threaded too).

The contract is README.md's "Threads and free-threaded CPython": the GIL stays off after
``import bridge`` on a free-threaded build; concurrent views of tensors no thread mutates
are exact and counted exactly; a view never mixes two installed states nor a path chosen
twice at once; a mutation under a lock the viewers share gives exact views; with the GIL,
a view is a consistent snapshot across ``t.data = ...`` and ``swap_tensors``. Scale:
``THREADS`` x ``VIEWS_PER_THREAD`` = 8 x 100,000 views per test (seconds on 2 cores).
"""

import os
import subprocess
import sys
import threading

import pytest
import torch

import bridge
from bridge import _bridge, _resolve, _select, _support
from helpers.expect import auto_path, expected_paths, torch_answer, view_fields
from helpers.parity import VIEWS
from helpers.threads import run_threads

THREADS = 8
VIEWS_PER_THREAD = 100_000
AVAILABLE = [p for p in bridge.PATHS if expected_paths()[p]]


@pytest.fixture(autouse=True)
def _fast_switching():
    """Switch threads every 50 us instead of 5 ms, so views and set_path interleave."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(5e-5)
    yield
    sys.setswitchinterval(before)


def _expected(t):
    return t.data_ptr(), tuple(t.shape), t.stride()


def _hammer(view, tensors, allowed):
    """Run THREADS threads of VIEWS_PER_THREAD views each (thread i views tensors[i]) while a
    switcher thread cycles set_path; returns ({path: views}, switches, errors)."""
    bridge.reset_path_counts()
    stop = threading.Event()
    seen = [dict.fromkeys(bridge.PATHS, 0) for _ in range(THREADS)]
    switches = [0]

    def worker(i):
        t = tensors[i]
        ptr, shape, strides = _expected(t)
        counts = seen[i]
        for _ in range(VIEWS_PER_THREAD):
            v = view(t)
            if v.ptr != ptr or v.shape != shape or v.strides != strides or v.obj is not t:
                raise AssertionError(f"wrong view {v!r}")
            counts[v.path] += 1

    def switcher():
        while not stop.is_set():
            for p in AVAILABLE:
                bridge.set_path(p)
                switches[0] += 1

    errors = run_threads([lambda i=i: worker(i) for i in range(THREADS)], [switcher], stop)
    total = {p: sum(s[p] for s in seen) for p in bridge.PATHS}
    assert not errors, errors[:5]
    assert set(p for p, n in total.items() if n) <= set(allowed), total
    return total, switches[0]


@pytest.mark.slow
@pytest.mark.parametrize("sharing", ["shared", "private"])
def test_view_while_the_path_switches(sharing):
    if sharing == "shared":
        tensors = [torch.randn(8, 8)[::2, 1:]] * THREADS
    else:
        tensors = [torch.randn(3, i + 1).t() for i in range(THREADS)]
    total, switches = _hammer(bridge.view, tensors, AVAILABLE)
    assert sum(total.values()) == THREADS * VIEWS_PER_THREAD
    assert bridge.path_counts() == total  # exactly: every view counted once, on its path
    assert switches > 1
    if len(AVAILABLE) > 1:  # the switching was seen by the workers
        assert sum(1 for n in total.values() if n) > 1, total


@pytest.mark.slow
@pytest.mark.parametrize("path", AVAILABLE)
def test_per_path_views_ignore_set_path(path):
    tensors = [torch.arange(float(i + 2)) for i in range(THREADS)]
    total, _ = _hammer(VIEWS[path], tensors, [path])
    assert total[path] == THREADS * VIEWS_PER_THREAD
    assert bridge.path_counts() == total


def _view_in_thread(t):
    box = []
    assert run_threads([lambda: box.append(bridge.view(t).path)]) == []
    return box[0]


def test_set_path_in_one_thread_changes_the_next_view_of_another():
    t = torch.ones(2)
    for path in AVAILABLE:
        bridge.set_path(path)
        assert _view_in_thread(t) == path


def test_set_path_from_another_thread_is_seen_here():
    t = torch.ones(2)
    for path in AVAILABLE:
        assert run_threads([lambda: bridge.set_path(path)]) == []
        assert bridge.view(t).path == path
        assert bridge.requested_path() == path


def test_using_path_is_not_thread_local():
    t = torch.ones(2)
    for path in AVAILABLE:
        with bridge.using_path(path):
            assert _view_in_thread(t) == path


# --- free-threading: the GIL stays off, reads are exact, state is published whole ----------
FREE_THREADED = _support.free_threaded()


def _gil_states(code: str) -> list[str]:
    """Run ``code`` (which prints ``sys._is_gil_enabled()`` at its steps) in a child
    interpreter without PYTHON_GIL, so that nothing but the child's own imports sets the
    GIL; its printed words."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_GIL"}
    done = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_import_bridge_leaves_the_gil_off_where_it_was_off():
    """In a fresh interpreter, warnings as errors (CPython warns, with a RuntimeWarning,
    when an extension that has not declared free-threading support re-enables the GIL):
    torch, bridge and a view through each available path leave sys._is_gil_enabled() as
    torch alone left it, and False on a free-threaded build."""
    code = (
        "import sys, warnings\n"
        "warnings.simplefilter('error')\n"
        "import torch\n"
        "gil = getattr(sys, '_is_gil_enabled', lambda: True)\n"
        "before = gil()\n"
        "import bridge\n"
        "for p, info in bridge.available_paths().items():\n"
        "    if info.available:\n"
        "        getattr(bridge, 'view_' + p)(torch.ones(2))\n"
        "bridge.view(torch.ones(2))\n"
        "print(before, gil())\n")
    before, after = states = _gil_states(code)
    assert after == before, states
    if FREE_THREADED:
        assert (before, after) == ("False", "False"), states


def test_shim_ext_and_the_borrow_leave_the_gil_off():
    """shim_ext's two libraries (setuptools' build on free-threaded 3.13: pymodule.c declares
    Py_MOD_GIL_NOT_USED; cffi's elsewhere), shim_ext.load(), and borrows through both
    readers from several threads at once leave sys._is_gil_enabled() as torch left it:
    False on a free-threaded build. Warnings are errors (CPython warns when an extension
    turns the GIL back on)."""
    code = (
        "import sys, threading, warnings\n"
        "warnings.simplefilter('error')\n"
        "import torch\n"
        "gil = getattr(sys, '_is_gil_enabled', lambda: True)\n"
        "before = gil()\n"
        "import shim_ext, shim_ext._entry, shim_ext._borrow\n"
        "after_import = gil()\n"
        "shim_ext.load()\n"
        "import bridge\n"
        "assert bridge.available_paths()['borrow'].available, bridge.available_paths()\n"
        "ts = [torch.randn(4, 5) for _ in range(4)]\n"
        "def work(t):\n"
        "    for _ in range(2000):\n"
        "        v = bridge.view_borrow(t)\n"
        "        assert (v.ptr, v.shape) == (t.data_ptr(), (4, 5))\n"
        "ths = [threading.Thread(target=work, args=(t,)) for t in ts]\n"
        "[th.start() for th in ths]; [th.join() for th in ths]\n"
        "print(before, after_import, gil())\n")
    before, after_import, after = states = _gil_states(code)
    assert before == after_import == after, states
    if FREE_THREADED:
        assert after == "False", states


@pytest.mark.skipif(not FREE_THREADED, reason="a build with a GIL has it on")
def test_this_suite_runs_without_the_gil():
    """Nothing this test process imported (pytest, hypothesis, numpy, torch, bridge)
    turned the GIL back on, so the threads below really run at once. (``make
    test-freethreaded`` sets PYTHON_GIL=0 because torch's first meta-device op imports
    triton, which would turn it on; the two tests above check torch, shim_ext and the
    bridge in children without PYTHON_GIL.)"""
    assert sys._is_gil_enabled() is False


def _shared_tensors():
    """Tensors of every shape class the bridge handles, each read by every thread."""
    base = torch.arange(2 * 3 * 4 * 5, dtype=torch.float64).reshape(2, 3, 4, 5)
    return [
        torch.randn(32, 32),
        torch.randn(8, 8)[::2, 1:],                      # strided, storage offset
        base.permute(3, 1, 0, 2),                         # permuted
        torch.zeros(0, 3),                                # no elements
        torch.tensor(3.5),                                # 0-d
        torch.ones(*([1] * 9), 2, dtype=torch.int64),     # more dims than stored inline
        torch.arange(10, dtype=torch.int16)[::3],
        torch.tensor([True, False]),
        torch.randn(4, 2, dtype=torch.complex64),         # complex, no conj bit
        torch.randn(6, dtype=torch.float16).expand(3, 6),  # zero stride
    ]


@pytest.mark.slow
def test_many_threads_view_shared_tensors_exactly(path, view_on):
    """THREADS threads start together and view the same tensors, each in its own order:
    every view equals torch's answer for its tensor, none fails, and the path's counter
    adds up exactly."""
    tensors = _shared_tensors()
    answers = [torch_answer(t) for t in tensors]
    rounds = 1000
    barrier = threading.Barrier(THREADS)

    def worker(i):
        order = list(range(len(tensors)))
        order = order[i % len(order):] + order[:i % len(order)]
        barrier.wait()
        for _ in range(rounds):
            for k in order:
                v = view_on(tensors[k])
                if v.obj is not tensors[k] or view_fields(v) != answers[k]:
                    raise AssertionError(f"{view_fields(v)} != {answers[k]}")

    bridge.reset_path_counts()
    errors = run_threads([lambda i=i: worker(i) for i in range(THREADS)])
    assert not errors, errors[:5]
    assert bridge.path_counts()[path] == THREADS * rounds * len(tensors)


def test_one_view_read_by_many_threads_at_once():
    """A view's shape and strides tuples are made on first use; threads that share a
    fresh view and read them at the same moment all get the same, right tuples."""
    t = torch.randn(5, 7).t()
    for _ in range(200):
        v = bridge.view(t)
        barrier = threading.Barrier(THREADS)
        got = []

        def reader():
            barrier.wait()
            got.append((v.shape, v.strides))

        assert run_threads([reader] * THREADS) == []
        assert all(g == ((7, 5), (1, 7)) for g in got), got
        assert len({(id(a), id(b)) for a, b in got}) == 1  # one tuple each, made once


def test_first_choice_is_race_free():
    """Nothing chosen yet; THREADS threads make their first view while another thread
    sets a path explicitly, all released at once: the explicit choice is never undone by
    a concurrent automatic one, and every view ran on one of the two."""
    t = torch.ones(3)
    explicit = [p for p in ("fallback", "owned", "borrow") if expected_paths()[p]][0]
    allowed = {auto_path(), explicit}
    for _ in range(100):
        bridge.set_path("auto")
        _bridge._activate(-1)  # un-chosen: the next view chooses
        barrier = threading.Barrier(THREADS + 1)
        seen = []

        def viewer():
            barrier.wait()
            seen.append(bridge.view(t).path)

        def chooser():
            barrier.wait()
            bridge.set_path(explicit)

        errors = run_threads([viewer] * THREADS + [chooser])
        assert not errors, errors
        assert set(seen) <= allowed, seen
        assert bridge.requested_path() == explicit
        assert bridge.get_path() == explicit


#: how many installed states the viewers of the test below must live through
RESOLUTIONS = 200


@pytest.mark.slow
def test_views_during_re_resolution_see_one_installed_state():
    """While one thread re-resolves over and over (each time installing new symbols and
    tables), viewers get either an exact view, with a dtype and device from one installed
    state, or the documented RuntimeError / PathUnavailableError: never a wrong value,
    another exception or a crash."""
    t = torch.randn(4, 3, dtype=torch.float64).t()
    answer = torch_answer(t)
    stop = threading.Event()
    outcomes = [dict(view=0, retry=0) for _ in range(THREADS)]
    resolutions = [0]

    def resolver():
        try:
            while not stop.is_set():
                _select._resolve_again(hide={_resolve.HIDE_FALLBACK_CHECK}
                                       if resolutions[0] % 2 else ())
                resolutions[0] += 1
        finally:
            _select._resolve_again()

    def viewer(i):
        # Until the resolver has installed RESOLUTIONS states (or 20,000 views): what
        # the test needs is views interleaved with many installs, not a fixed count.
        for k in range(20_000):
            if resolutions[0] >= RESOLUTIONS and outcomes[i]["view"]:
                break
            try:
                v = (bridge.view, bridge.view_fallback)[k % 2](t)
            except (RuntimeError, bridge.PathUnavailableError) as exc:
                if not isinstance(exc, bridge.PathUnavailableError):
                    assert "re-resolved" in str(exc), exc
                outcomes[i]["retry"] += 1
                continue
            if view_fields(v) != answer:
                raise AssertionError(f"{view_fields(v)} != {answer}")
            outcomes[i]["view"] += 1

    errors = run_threads([lambda i=i: viewer(i) for i in range(THREADS)], [resolver], stop)
    assert not errors, errors[:5]
    assert resolutions[0] >= RESOLUTIONS or all(
        o["view"] + o["retry"] == 20_000 for o in outcomes), (resolutions, outcomes)
    assert sum(o["view"] for o in outcomes) > 0, outcomes
    assert {p: i.available for p, i in bridge.available_paths().items()} == expected_paths()


# --- concurrent mutation: what is promised, and only that -----------------------------------
def _candidates():
    return [torch.randn(3, 4), torch.randn(2, 6).t(), torch.arange(12.0)[::2]]


def _mutable_pair():
    """``(candidates, answers, t, other)``: the tensors a mutated ``t`` may hold, torch's
    answer for each, ``t`` holding the first and ``other`` (for swaps) the second."""
    candidates = _candidates()
    answers = [torch_answer(c) for c in candidates]
    t = candidates[0].clone()
    t.data = candidates[0]
    other = candidates[1].clone()
    other.data = candidates[1]
    return candidates, answers, t, other


@pytest.mark.slow
@pytest.mark.parametrize("mutation", ["data", "set_", "swap_tensors"])
def test_mutation_ordered_by_a_lock_gives_exact_views(view_on, mutation):
    """On every interpreter: a thread that changes t (``t.data = x``, ``t.set_(x)``, or
    swaps it with another tensor) under a lock, and viewers that take the same lock
    around each view, get exact views of what t holds."""
    candidates, answers, t, other = _mutable_pair()
    lock = threading.Lock()
    current = [0]
    stop = threading.Event()

    def mutator():
        k = 0
        while not stop.is_set():
            k = (k + 1) % len(candidates)
            with lock:
                if mutation == "data":
                    t.data = candidates[k]
                elif mutation == "set_":
                    t.set_(candidates[k])
                else:
                    torch.utils.swap_tensors(t, other)
                    k = 1 - current[0]  # t now holds what other held
                current[0] = k

    def viewer():
        for _ in range(5_000):
            with lock:
                v = view_on(t)
                k = current[0]
            if view_fields(v) != answers[k]:
                raise AssertionError(f"{view_fields(v)} != {answers[k]}")

    errors = run_threads([viewer] * 4, [mutator], stop)
    assert not errors, errors[:5]


@pytest.mark.slow
@pytest.mark.skipif(FREE_THREADED, reason="not promised without a GIL: a view races a "
                    "concurrent t.data / swap_tensors as torch's own t.shape does (README, "
                    "proposal/findings/free-threaded.md); the locked variant above is")
@pytest.mark.parametrize("mutation", ["data", "swap_tensors"])
def test_with_the_gil_a_view_is_a_snapshot_while_another_thread_mutates(view_on, mutation):
    """With the GIL, nothing runs between the handle and the copy: while one thread keeps
    assigning ``t.data`` (or swapping t with another tensor), every view equals torch's
    answer for one of the tensors t can hold, never a mix of two."""
    candidates, answers, t, other = _mutable_pair()
    stop = threading.Event()

    def mutator():
        k = 0
        while not stop.is_set():
            k = (k + 1) % len(candidates)
            if mutation == "data":
                t.data = candidates[k]
            else:
                torch.utils.swap_tensors(t, other)

    def viewer():
        for _ in range(20_000):
            fields = view_fields(view_on(t))
            if fields not in answers:
                raise AssertionError(f"a view of no candidate: {fields}")

    errors = run_threads([viewer] * 4, [mutator], stop)
    assert not errors, errors[:5]


def test_a_view_writes_nothing_another_thread_writes():
    """The borrow path's per-view writes are the view object (the caller's own), the
    tensor's reference count (the view keeps the tensor alive) and the path counter,
    which is per thread: each thread gets a counter block of its own at its first view,
    at a distinct address, and ``path_counts()`` sums the blocks exactly."""
    from bridge import _bridge

    if "borrow" not in AVAILABLE:
        pytest.fail("the borrow must be available on every supported torch")
    t = torch.randn(4, 4)
    bridge.reset_path_counts()
    blocks, barrier = [], threading.Barrier(THREADS)

    def work():
        barrier.wait()  # all alive at once: no block address can be reused
        before = _bridge._counts_block()
        for _ in range(1000):
            bridge.view_borrow(t)
        blocks.append((before, _bridge._counts_block()))
        barrier.wait()

    assert run_threads([work] * THREADS) == []
    assert all(before == 0 and after != 0 for before, after in blocks), blocks
    addresses = [after for _, after in blocks]
    assert len(set(addresses)) == THREADS, addresses
    assert all(a % 64 == 0 for a in addresses)  # a cache line of its own
    assert bridge.path_counts()["borrow"] == THREADS * 1000
