"""Helpers the tests and benchmarks share: the ``hopgraph`` command in a subprocess, and a real
Chroma server (``chroma run`` from this environment) on a free loopback port."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def hopgraph(*args: str, cwd: Path | str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``hopgraph ARGS`` in ``cwd`` on a wide terminal; its exit code and output."""
    env = {**os.environ, "COLUMNS": "300"}
    return subprocess.run(
        [sys.executable, "-m", "hopgraph.cli", *args], cwd=cwd, capture_output=True, text=True,
        timeout=timeout, env=env,
    )  # fmt: skip


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
