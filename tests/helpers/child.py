"""Run a snippet in a fresh interpreter and require that it succeeds.

For what only a fresh process shows: the first resolution, compile state, a module that
cannot be imported. ``tests/`` is on the child's ``sys.path`` (``hostile.subproc``).
"""

from __future__ import annotations

from hostile import subproc


def run_ok(code: str, timeout: float = 300, forked: bool = False) -> str:
    """Run ``code`` in a child interpreter (``python -P``) and return its stdout.

    ``forked``: in a child forked from ``helpers.forkserver``'s server, which has imported
    torch already (for snippets that begin with ``import torch``; no interpreter start).
    Raises AssertionError with how the child ended (exit status or signal) and the end
    of its stdout and stderr when it does not exit with status 0. ``timeout`` in seconds.
    """
    if forked:
        from helpers.forkserver import run_forked

        rc, out, err = run_forked(code, timeout=timeout)
    else:
        rc, out, err = subproc.run_python(code, timeout=timeout)
    assert rc == 0, f"{subproc.describe_returncode(rc)}\n{out[-2000:]}\n{err[-4000:]}"
    return out


#: Code for a child to start with: ``create_subinterpreter()`` (creates and destroys one,
#: which turns ``PyGILState_Check()`` off process-wide on CPython 3.11 to 3.13) and
#: ``while_another_thread_holds_the_gil(fn, n)`` (n calls of fn() while a spinning Python
#: thread holds the GIL most of the time, its thread state then the current one).
SUBINTERPRETER = """
def create_subinterpreter():
    try:
        import _interpreters as interpreters  # 3.13
    except ImportError:
        import _xxsubinterpreters as interpreters  # 3.11, 3.12
    interpreters.destroy(interpreters.create())

def while_another_thread_holds_the_gil(fn, n=50):
    import threading
    stop = threading.Event()
    def spin():
        while not stop.is_set():
            pass
    other = threading.Thread(target=spin)
    other.start()
    try:
        return [fn() for _ in range(n)]
    finally:
        stop.set()
        other.join()
"""
