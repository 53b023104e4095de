"""Helpers the tests and benchmarks share: the ``hopgraph`` command in a subprocess, a real
Chroma server (``chroma run`` from this environment) on a free loopback port, and the MCP
``initialize`` request a raw HTTP client opens a session with."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

MCP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}
"""An MCP ``initialize`` request: a new session where the server lets it in."""


def hopgraph(
    *args: object, cwd: Path | str | None = None, timeout: float = 300, env: dict | None = None
) -> subprocess.CompletedProcess:
    """``hopgraph ARGS`` in ``cwd`` on a wide terminal (``env`` over this process's): its exit
    code and output, as ``subprocess.run`` gives them (``started``'s command, waited for)."""
    proc = started(*args, cwd=cwd, env=env)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise subprocess.TimeoutExpired(proc.args, timeout, out, err) from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def scripted(base_url: str) -> list[str]:
    """The options that point a command at a scripted endpoint (``--base-url URL --model
    scripted``)."""
    return ["--base-url", base_url, "--model", "scripted"]


def started(  # noqa: ANN201 - Forked, or Popen with TESTS_COLD_CLI=1
    *args: object,
    cwd: Path | str | None = None,
    env: dict | None = None,
    script: Path | str | None = None,
    code: str | None = None,
    sigint: bool = False,
):
    """``hopgraph ARGS`` (or ``python SCRIPT ARGS``, ``python -c CODE ARGS``) under way, with
    what a test uses of ``subprocess.Popen`` (``pid``, ``send_signal``, ``kill``, ``poll``,
    ``wait``, ``communicate`` giving its text output). Every command takes SIGINT as a
    terminal's foreground job does (a KeyboardInterrupt), however pytest was started: a suite
    run as a background job (SIGINT ignored, which a child inherits) tests the same thing
    (``sigint`` is kept for the callers that name it). It runs in a process of its own forked
    from a warm one (tests/zygote.py); ``TESTS_COLD_CLI=1`` starts a new interpreter for each
    instead, as a user's shell does."""
    argv = [str(a) for a in args]
    env = {**os.environ, "COLUMNS": "300", **(env or {})}
    if os.environ.get("TESTS_COLD_CLI") == "1":
        head = (
            ["-c", code]
            if code is not None
            else [str(script)]
            if script
            else ["-m", "hopgraph.cli"]
        )
        return subprocess.Popen(
            [sys.executable, *head, *argv],
            cwd=cwd,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=sigint_as_in_a_terminal,
        )
    with _IDLE_LOCK:
        zygote = _IDLE.pop() if _IDLE else None
    if zygote is None:  # every one busy: commands at once
        zygote = Zygote()
        atexit.register(zygote.close)
    request = {"script": str(script) if script else None, "code": code, "sigint": True}
    return Forked(zygote, argv, Path(cwd or os.getcwd()).resolve(), env, request)


def first_line(proc) -> str:  # noqa: ANN001 - started()'s Forked or Popen
    """The first line a ``started`` command prints, once printed."""
    return proc.first_line() if isinstance(proc, Forked) else proc.stdout.readline()


def _command(script: Path | str | None, code: str | None) -> list[str]:
    if code is not None:
        return [sys.executable, "-c", code]
    return [sys.executable, str(script)] if script else [sys.executable, "-m", "hopgraph.cli"]


def python(script: Path | str, *args: object, timeout: float = 300) -> None:
    """``python SCRIPT ARGS`` run to its end (``started``), which must exit 0."""
    proc = started(*args, script=script)
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"{script} exited {proc.returncode}: {out}{err}"


class Zygote:
    """One tests/zygote.py process: started once, then a forked child per command."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("zygote.py"))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self._buffer = b""
        self.line(600)  # ready once its imports are done

    def send(self, request: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(request) + "\n").encode())
        self.proc.stdin.flush()

    def line(self, timeout: float | None) -> dict | None:
        """Its next reply, or None when ``timeout`` seconds pass first."""
        import select

        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(deadline - time.monotonic(), 0)
            if not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError(f"tests/zygote.py ended (exit {self.proc.wait()})")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


_IDLE: list[Zygote] = []
_IDLE_LOCK = threading.Lock()


class Forked:
    """A command forked by a ``Zygote``, its streams in files until it ends; the zygote goes
    back to the idle ones once its exit status is read."""

    def __init__(
        self, zygote: Zygote, argv: list[str], cwd: Path, env: dict, request: dict
    ) -> None:
        import tempfile

        self.args = [*_command(request["script"], request["code"]), *argv]
        self._zygote, self.returncode = zygote, None
        self._tmp = Path(tempfile.mkdtemp(prefix="hopgraph-cli-"))
        self._out, self._err = self._tmp / "stdout", self._tmp / "stderr"
        self._out.touch()
        self._err.touch()
        weakref.finalize(self, shutil.rmtree, self._tmp, ignore_errors=True)  # read or not
        zygote.send(
            {
                **request,
                "args": argv,
                "cwd": str(cwd),
                "env": env,
                "stdin": os.devnull,
                "stdout": str(self._out),
                "stderr": str(self._err),
            }
        )
        forked = zygote.line(60)
        assert forked is not None, "tests/zygote.py did not fork"
        self.pid: int = forked["pid"]

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def first_line(self, timeout: float = 120) -> str:
        """The first line it printed, once printed (or all it printed, once it ended)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self._out.read_text()
            if "\n" in text or self.poll() is not None:
                return text.split("\n", 1)[0] + "\n" if "\n" in text else text
            time.sleep(0.02)
        raise subprocess.TimeoutExpired(self.args, timeout)

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            ended = self._zygote.line(timeout)
            if ended is None:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            self.returncode = ended["status"]
            with _IDLE_LOCK:
                _IDLE.append(self._zygote)
        return self.returncode

    def poll(self) -> int | None:
        try:
            return self.wait(0)
        except subprocess.TimeoutExpired:
            return None

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        self.wait(timeout)
        return self._out.read_text(), self._err.read_text()


def sigint_as_in_a_terminal() -> None:
    """``preexec_fn``: a child's SIGINT as under a terminal's foreground job, also where pytest
    was started with SIGINT ignored (``make test &``), which a child inherits and Python keeps
    (the child would then sleep or answer on through a test's Ctrl-C)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


CHROMA = Path(sys.executable).parent / "chroma"


def until_answering(proc: subprocess.Popen, url: str, log: Path) -> None:
    """Wait until ``url`` answers over HTTP (any status: it is listening); if ``proc`` exits
    first, fail with the tail of its ``log``."""
    import httpx

    while True:
        assert proc.poll() is None, log.read_text()[-3000:]
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.HTTPError:
            time.sleep(0.2)


def start_chroma(folder: Path) -> tuple[subprocess.Popen, str]:
    """``chroma run`` over ``folder`` once it answers its heartbeat: the process and its URL."""
    import httpx

    from hopgraph.models.embedded import free_port

    port = free_port()
    proc = subprocess.Popen(
        [str(CHROMA), "run", "--path", str(folder), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
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
    run(
        str(PG_BIN[-1] / "pg_ctl"),
        "-D",
        str(data),
        "-w",
        "-l",
        str(data.parent / "log"),
        "-o",
        f"-p {port} -k {data.parent} -c listen_addresses=127.0.0.1",
        "start",
    )

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


def docs_env(base_url: str, model: str = "scripted") -> dict[str, str]:
    """The shell a page's commands run in, as a user's after ``source .venv/bin/activate``:
    ``hopgraph`` on PATH, a wide terminal, and the scripted model in place of the embedded one."""
    bin_dir = Path(sys.executable).parent
    return {
        **os.environ,
        "HOPGRAPH_BASE_URL": base_url,
        "HOPGRAPH_MODEL": model,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "COLUMNS": "120",
    }


def as_written(command: str, cwd: Path, env: dict[str, str], runs: set[str] = frozenset()) -> str:
    """One line of a page, run as typed (a ``hopgraph view`` server answers with the run
    names it lists, which must be ``runs``, then stops); fails unless it exits 0; its output."""
    if command.startswith("hopgraph view"):
        served = view_serves(command, cwd, env)
        assert served == set(runs), (command, served)
        return ""
    out = subprocess.run(
        command, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, (command, out.stdout[-1500:], out.stderr[-1500:])
    return out.stdout + out.stderr


def view_serves(command: str, cwd: Path, env: dict) -> set[str]:
    """The run names ``hopgraph view`` lists, started as written (on a free port)."""
    import re

    import httpx

    proc = subprocess.Popen(
        f"exec {command} --port 0",
        shell=True,
        cwd=cwd,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        url = re.search(r"http://\S+/", proc.stdout.readline() if proc.stdout else "")
        assert url, proc.stderr.read() if proc.stderr else ""
        return {r["name"] for r in httpx.get(f"{url[0]}api/runs").json()}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
