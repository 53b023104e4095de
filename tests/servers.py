"""Helpers the tests and benchmarks share: the ``hopgraph`` command in a subprocess, and a real
Chroma server (``chroma run`` from this environment) on a free loopback port."""

from __future__ import annotations

import os
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
