"""Run Python in a child process, so that a crash is a finding and not a dead test run.

``run_python`` runs a snippet (or a script) with the same interpreter and ``-P`` (never
the source tree's uncompiled ``bridge/``), and in ``-X dev`` when the parent runs in dev
mode; ``PYTHONMALLOC`` and the rest of the environment are inherited. ``run_cases``
feeds catalogue cases to ``runner.py`` in as few children as possible: when a child
dies, the call it died in is recorded as a crash and a new child resumes after it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field

RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runner.py")
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def interpreter_args(python=None):
    """The command prefix for a child: interpreter, ``-P``, and ``-X dev`` if we have it."""
    args = [python or sys.executable, "-P"]
    if python is None and sys.flags.dev_mode:
        args += ["-X", "dev"]
    return args


def run_python(code=None, *, script=None, args=(), timeout=300, python=None):
    """Run ``code`` (a snippet) or ``script`` in a fresh interpreter.

    Returns ``(returncode, stdout, stderr)``; a negative returncode is the signal that
    killed the child (``-11``: SIGSEGV). ``tests/`` is on the child's ``sys.path`` so a
    snippet can import ``helpers`` and ``hostile``.
    """
    cmd = interpreter_args(python)
    cmd += [script, *args] if script else ["-c", code, *args]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (TESTS, os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    return proc.returncode, proc.stdout, proc.stderr


def describe_returncode(rc):
    """``"signal 11 (SIGSEGV)"`` for a negative returncode, ``"exit status N"`` otherwise."""
    if rc < 0:
        try:
            return f"signal {-rc} ({signal.Signals(-rc).name})"
        except ValueError:
            return f"signal {-rc}"
    return f"exit status {rc}"


@dataclass
class Crash:
    """A child that died: in which call, how, and the end of what it printed."""

    case: str
    path: str | None
    entry: str | None
    returncode: int
    stderr_tail: str

    def __str__(self):
        where = f"{self.case} / {self.path} / {self.entry}" if self.path else \
            f"{self.case} / {self.entry}"
        return (f"child died in {where}: {describe_returncode(self.returncode)}\n"
                f"{self.stderr_tail}")


@dataclass
class Outcome:
    """What ``run_cases`` collected, keyed by case name."""

    results: dict = field(default_factory=dict)      # case -> [result event, ...]
    crashes: dict = field(default_factory=dict)      # case -> Crash
    unavailable: dict = field(default_factory=dict)  # case -> reason
    build_errors: dict = field(default_factory=dict)  # case -> "Type: message"
    children: int = 0
    torch: str | None = None


def run_cases(target, names, *, paths=("owned", "borrow", "fallback"), python=None,
              timeout=300):
    """Feed ``names`` to ``runner.py --target target``; resume after any crash.

    Returns an ``Outcome``. A case whose child died is in ``crashes`` (with the entry
    it died in), its results so far in ``results``; the next child starts with the
    case after it.
    """
    out = Outcome()
    todo = list(names)
    while todo:
        out.children += 1
        rc, stdout, stderr = run_python(
            script=RUNNER, python=python, timeout=timeout,
            args=["--target", target, "--cases", ",".join(todo), "--paths", ",".join(paths)])
        done, current, last_start = set(), None, None
        for line in stdout.splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                continue  # something the child printed itself (a warning, a message)
            kind = ev["event"]
            if kind == "hello":
                out.torch = ev["torch"]
            elif kind == "case":
                current, last_start = ev["case"], None
                out.results.setdefault(current, [])
            elif kind == "start":
                last_start = ev
            elif kind == "result":
                out.results[ev["case"]].append(ev)
                last_start = None
            elif kind == "unavailable":
                out.unavailable[ev["case"]] = ev["message"]
            elif kind == "build-error":
                out.build_errors[ev["case"]] = f"{ev['type']}: {ev['message']}"
            elif kind == "done":
                done.add(ev["case"])
                current = None
        if rc == 0 and current is None:
            break
        if current is None:  # died before (or between) cases: nothing to resume from
            raise RuntimeError(f"runner failed outside any case: "
                               f"{describe_returncode(rc)}\n{stderr[-3000:]}")
        out.crashes[current] = Crash(current, (last_start or {}).get("path"),
                                     (last_start or {}).get("entry"), rc, stderr[-3000:])
        todo = todo[todo.index(current) + 1:]
    return out
