"""Helpers the tests and benchmarks share: the ``hopgraph`` command in a subprocess, and a real
Chroma server (``chroma run`` from this environment) on a free loopback port."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path


def hopgraph(
    *args: object, cwd: Path | str | None = None, timeout: float = 300, env: dict | None = None
) -> subprocess.CompletedProcess:
    """``hopgraph ARGS`` in ``cwd`` on a wide terminal (``env`` over this process's): its exit
    code and output, as ``subprocess.run`` gives them. The command runs in a process of its
    own forked from a warm one (tests/zygote.py); ``TESTS_COLD_CLI=1`` starts a new
    interpreter for each instead, as a user's shell does."""
    argv = [str(a) for a in args]
    env = {**os.environ, "COLUMNS": "300", **(env or {})}
    if os.environ.get("TESTS_COLD_CLI") == "1":
        return subprocess.run(
            [sys.executable, "-m", "hopgraph.cli", *argv], cwd=cwd, capture_output=True,
            text=True, timeout=timeout, env=env,
        )  # fmt: skip
    with _warm() as zygote:
        return zygote.run(argv, Path(cwd or os.getcwd()).resolve(), env, timeout)


class Zygote:
    """One tests/zygote.py process: started once, then a forked child per command."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("zygote.py"))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )  # fmt: skip
        self._buffer = b""
        self._line(600)  # ready once its imports are done

    def _line(self, timeout: float) -> dict | None:
        """Its next reply, or None when ``timeout`` seconds pass first."""
        import select

        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError(f"tests/zygote.py ended (exit {self.proc.wait()})")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def run(self, argv: list[str], cwd: Path, env: dict, timeout: float):  # noqa: ANN201
        import tempfile

        assert self.proc.stdin is not None
        cmd = [sys.executable, "-m", "hopgraph.cli", *argv]
        with tempfile.TemporaryDirectory(prefix="hopgraph-cli-") as tmp:
            out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
            out.touch()
            err.touch()
            request = {"args": argv, "cwd": str(cwd), "env": env, "stdin": os.devnull,
                       "stdout": str(out), "stderr": str(err)}  # fmt: skip
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
            started = self._line(60)
            assert started is not None, "tests/zygote.py did not fork"
            ended = self._line(timeout)
            if ended is None:
                os.kill(started["pid"], signal.SIGKILL)
                self._line(60)
                raise subprocess.TimeoutExpired(cmd, timeout, out.read_text(), err.read_text())
            return subprocess.CompletedProcess(
                cmd, ended["status"], out.read_text(), err.read_text()
            )

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


_IDLE: list[Zygote] = []
_IDLE_LOCK = threading.Lock()


@contextlib.contextmanager
def _warm() -> Iterator[Zygote]:
    """An idle zygote, or a new one where every one is busy (commands run at once)."""
    with _IDLE_LOCK:
        zygote = _IDLE.pop() if _IDLE else None
    if zygote is None:
        zygote = Zygote()
        atexit.register(zygote.close)
    yield zygote
    with _IDLE_LOCK:
        _IDLE.append(zygote)


def sigint_as_in_a_terminal() -> None:
    """``preexec_fn``: a child's SIGINT as under a terminal's foreground job, also where pytest
    was started with SIGINT ignored (``make test &``), which a child inherits and Python keeps
    (the child would then sleep or answer on through a test's Ctrl-C)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


CHROMA = Path(sys.executable).parent / "chroma"


def start_chroma(folder: Path) -> tuple[subprocess.Popen, str]:
    """``chroma run`` over ``folder`` once it answers its heartbeat: the process and its URL."""
    import httpx

    from hopgraph.models.embedded import free_port

    port = free_port()
    proc = subprocess.Popen(
        [str(CHROMA), "run", "--path", str(folder), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/api/v2/heartbeat", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("chroma run did not start")


PG_BIN = sorted(Path(p) for p in __import__("glob").glob("/usr/lib/postgresql/*/bin"))


def start_postgres():  # noqa: ANN201 - (url, stop)
    """A PostgreSQL server on a free loopback port, in a fresh cluster: its URL and a function
    that stops it and removes the cluster."""
    import shutil
    import tempfile

    from hopgraph.models.embedded import free_port

    # not under pytest's tmp (private to root): the server's own user must reach it
    data = Path(tempfile.mkdtemp(prefix="hopgraph-pg-")) / "data"
    as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_pg:  # the server refuses to run as root
        shutil.chown(data.parent, "postgres")
    port = free_port()

    def run(*cmd: str) -> None:
        subprocess.run([*as_pg, *cmd], check=True, capture_output=True, timeout=120)

    run(str(PG_BIN[-1] / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust")
    run(str(PG_BIN[-1] / "pg_ctl"), "-D", str(data), "-w", "-l", str(data.parent / "log"), "-o",
        f"-p {port} -k {data.parent} -c listen_addresses=127.0.0.1", "start")  # fmt: skip

    def stop() -> None:
        run(str(PG_BIN[-1] / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(data.parent, ignore_errors=True)

    return f"postgresql://postgres@127.0.0.1:{port}/postgres", stop


def fresh_database(postgres: str, name: str) -> str:
    """A new empty database on the ``postgres`` server; its URL."""
    import psycopg

    with psycopg.connect(postgres, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return postgres.rsplit("/", 1)[0] + f"/{name}"
