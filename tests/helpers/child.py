"""Run a snippet in a fresh interpreter and require that it succeeds.

For what only a fresh process shows: the first resolution, compile state, a module that
cannot be imported. ``tests/`` is on the child's ``sys.path`` (``hostile.subproc``).
"""

from __future__ import annotations

from hostile import subproc


def run_ok(code: str, timeout: float = 300) -> str:
    """Run ``code`` in a child interpreter (``python -P``) and return its stdout.

    Raises AssertionError with how the child ended (exit status or signal) and the end
    of its stdout and stderr when it does not exit with status 0. ``timeout`` in seconds.
    """
    rc, out, err = subproc.run_python(code, timeout=timeout)
    assert rc == 0, f"{subproc.describe_returncode(rc)}\n{out[-2000:]}\n{err[-4000:]}"
    return out
