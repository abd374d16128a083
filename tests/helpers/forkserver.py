"""Fresh processes for the first-use tests without an interpreter start each: one server
per test process imports torch (and nothing of this project), then forks a child per
snippet.

What a first-use test needs of its child is a process in which nothing of the bridge,
shim_ext or a consumer has run yet; ``import torch``, the first line of each such child,
is the same in every one of them and takes most of its time (1.5 to 3 s of a 2 to 6 s
child on two cores). A forked child starts after it, in about 20 ms. Everything else is
as in ``hostile.subproc.run_python``: the same interpreter with ``-P`` (``-X dev`` in dev
mode), ``tests/`` on ``sys.path``, the code run as ``__main__``, and the child's own exit:
``sys.exit`` codes, a signal as a negative status, interpreter finalization with its
``atexit`` handlers. torch's own ``DataLoader`` workers fork the same way, after
``import torch``.

Not for a snippet that must run before ``import torch`` or in another interpreter.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import threading

from hostile import subproc

# The server: reads one JSON request a line ({"code", "timeout"}), forks, and answers one
# JSON line ({"rc", "out", "err"}). The child redirects fds 1 and 2 to files, runs the
# code as __main__ and leaves the loop by SystemExit, so the interpreter finalizes as a
# started one would.
_SERVER = r'''
import json, os, signal, sys, tempfile, time, traceback, warnings
warnings.filterwarnings("ignore", message=".*use of fork\(\) may lead to deadlocks")
import torch

# The requests and answers get fds of their own; a child's stdin is /dev/null.
requests, answers = os.fdopen(os.dup(0), "r"), os.fdopen(os.dup(1), "w")
os.dup2(os.open(os.devnull, os.O_RDONLY), 0)

def serve():
    for line in requests:
        req = json.loads(line)
        out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        pid = os.fork()
        if pid == 0:
            requests.close(); answers.close()
            sys.stdout.flush(); sys.stderr.flush()
            os.dup2(out.fileno(), 1); os.dup2(err.fileno(), 2)
            out.close(); err.close()  # fds 1 and 2 stay; nothing left open for -X dev to see
            code = 0
            try:
                exec(compile(req["code"], "<child>", "exec"), {"__name__": "__main__"})
            except SystemExit as exc:
                code = exc.code
            except BaseException:
                traceback.print_exc()
                code = 1
            raise SystemExit(code)
        deadline = time.monotonic() + req["timeout"]
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                _, status = os.waitpid(pid, 0)
                break
            time.sleep(0.005)
        out.seek(0); err.seek(0)
        answers.write(json.dumps({"rc": os.waitstatus_to_exitcode(status),
                                  "out": out.read().decode(errors="replace"),
                                  "err": err.read().decode(errors="replace")}) + "\n")
        answers.flush()

serve()
'''

_server: subprocess.Popen | None = None
_lock = threading.Lock()


def _start() -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (subproc.TESTS, os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.Popen([*subproc.interpreter_args(), "-c", _SERVER], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)
    atexit.register(_stop, proc)
    return proc


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def run_forked(code: str, timeout: float = 300) -> tuple[int, str, str]:
    """Run ``code`` in a child forked from this process's server (started at first use:
    one interpreter start, ``import torch``). Returns ``(returncode, stdout, stderr)``
    as ``hostile.subproc.run_python`` does; a child still running after ``timeout``
    seconds is killed (``-9``). Raises RuntimeError if the server itself died."""
    global _server
    with _lock:
        if _server is None or _server.poll() is not None:
            _server = _start()
        _server.stdin.write(json.dumps({"code": code, "timeout": timeout}) + "\n")
        _server.stdin.flush()
        line = _server.stdout.readline()
    if not line:
        raise RuntimeError(f"the fork server ended ({subproc.describe_returncode(_server.wait())})")
    got = json.loads(line)
    return got["rc"], got["out"], got["err"]
