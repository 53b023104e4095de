"""A warm ``hopgraph`` for the tests: this process imports what the commands import, once, then
forks a child per command it is sent. Each child is a process of its own, as ``python -m
hopgraph.cli ARGS`` would be (its own working folder, environment, standard streams, exit
status, atexit and signals; ``sys.argv`` and ``sys.path[0]`` as ``-m`` sets them), without
paying the 5-10 s that torch, sentence-transformers, LangGraph and openai take to import in
every new interpreter.

A request may name a ``script`` instead (``python SCRIPT ARGS``: its folder first on
``sys.path``) or carry ``code`` (``python -c CODE ARGS``), and ``sigint`` to take SIGINT as
a terminal's foreground job does.

The protocol, one JSON line each way on this process's stdin and stdout: a request
``{"args", "cwd", "env", "stdin", "stdout", "stderr"}`` (the three streams as file paths) is
answered ``{"pid"}`` when its child has started and ``{"status"}`` (as ``subprocess``'s
``returncode``) when it has ended; one command at a time (tests/servers.py keeps one of these
per command running at once)."""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import signal
import sys
import threading
import traceback

PRELOAD = (
    "hopgraph.cli",
    "hopgraph.cli.app",
    "hopgraph.harness.runner",
    "hopgraph.harness.shared_run",
    "hopgraph.memory.kb",
    "hopgraph.models.embedders",
    "hopgraph.optimizer.search",
    "hopgraph.evals.evaluate",
    "hopgraph.presentation.report",
    "chromadb",
    "sentence_transformers",
)
"""What a command imports on its way that costs seconds. Nothing here starts a thread at
import (checked below: a fork copies only the forking thread). What a library reads from the
environment at import (Hugging Face's offline switches, say) is the test run's, not a
command's ``env``; hopgraph's own modules read none at import."""


def _reply(**fields: object) -> None:
    os.write(1, (json.dumps(fields) + "\n").encode())


def serve() -> dict | None:
    """Answer requests until stdin closes (None), or return the request in a forked child."""
    for name in PRELOAD:
        importlib.import_module(name)
    if threading.active_count() != 1:
        raise SystemExit(f"zygote: a preloaded module started a thread: {threading.enumerate()}")
    _reply(ready=True)
    for line in sys.stdin.buffer:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            return request
        _reply(pid=pid)
        _, status = os.waitpid(pid, 0)
        _reply(status=os.waitstatus_to_exitcode(status))
    return None


def become(request: dict) -> None:
    """In the child: the command's streams, folder, environment and argv, then ``-m``."""
    import runpy

    for fd, key, mode in (
        (0, "stdin", os.O_RDONLY),
        (1, "stdout", os.O_WRONLY),
        (2, "stderr", os.O_WRONLY),
    ):
        target = os.open(request[key], mode)
        os.dup2(target, fd)
        os.close(target)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own stdin, as at start
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    script, code = request.get("script"), request.get("code")
    if code is not None:
        sys.path[0] = ""
    else:
        sys.path[0] = os.path.dirname(os.path.abspath(script)) if script else request["cwd"]
    importlib.invalidate_caches()
    reseed()
    if request.get("sigint"):  # a terminal's foreground job: Python's own KeyboardInterrupt
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        if code is not None:
            sys.argv = ["-c", *request["args"]]
            exec(compile(code, "<string>", "exec"), {"__name__": "__main__"})  # noqa: S102
        elif script:
            sys.argv = [script, *request["args"]]
            runpy.run_path(script, run_name="__main__")
        else:
            sys.argv = ["-m", *request["args"]]
            runpy.run_module("hopgraph.cli", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as e:
        code = exit_code(e.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        code = -signal.SIGINT
    except BaseException:  # noqa: BLE001 - the interpreter's own report and status
        traceback.print_exc()
        code = 1
    shut_down(code)


def exit_code(code: object) -> int:
    """``SystemExit``'s argument as the interpreter turns it into an exit status."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def shut_down(code: int) -> None:
    """What an interpreter does at exit that a command can see: wait for its non-daemon
    threads, run its atexit functions, flush its streams; then exit without tearing the
    preloaded modules down one by one (that alone takes 2-3 s with torch loaded). An
    interrupted command ends by SIGINT, as Python's own does."""
    threading._shutdown()  # type: ignore[attr-defined]  # noqa: SLF001 - as Py_Finalize does
    atexit._run_exitfuncs()  # noqa: SLF001
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code)


def reseed() -> None:
    """A fresh interpreter's generators draw a new seed; a fork copies its parent's state
    (``random`` reseeds itself after a fork, numpy's and torch's global ones do not)."""
    import numpy as np
    import torch

    np.random.seed()
    torch.seed()


if __name__ == "__main__":
    request = serve()
    if request is not None:
        become(request)
