"""``hopgraph mcp --http`` while one API key floods it with sessions (issue 115 item 2): figures,
not a test. Key A sends ``initialize`` requests from ``--threads`` clients for ``--seconds``,
never ending a session; all the while key B opens a session, lists the tools and ends it, over
and over. Recorded: B's success rate (in the flood's first and second half apart), A's answers
by status, and the server's resident memory before and after.

    .venv/bin/python benchmarks/bench_mcp_flood.py [--seconds 90] [--threads 8] [--out FILE]

(``--out`` defaults to benchmarks/results/mcp-flood.json; ``--label`` names the code measured.)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

from hopgraph.harness.run_folder import git_revision, machine
from hopgraph.models.embedded import free_port

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from servers import MCP_INITIALIZE  # noqa: E402 - the request the MCP tests send

KEY_A, KEY_B = "flood-key-a", "flood-key-b"
ACCEPT = "application/json, text/event-stream"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def b_round(c: httpx.Client, url: str) -> bool:
    """Key B: open a session, list the tools, end it."""
    h = {"x-api-key": KEY_B, "accept": ACCEPT}
    try:
        r = c.post(url, json=MCP_INITIALIZE, headers=h, timeout=30)
        sid = r.headers.get("mcp-session-id")
        if r.status_code != 200 or not sid:
            return False
        h["mcp-session-id"] = sid
        c.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=h)
        listed = c.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=h)
        c.delete(url, headers=h)
        return listed.status_code == 200 and "kb_search" in listed.text
    except httpx.HTTPError:
        return False


def start_server(tmp: Path) -> tuple[subprocess.Popen, str]:
    """``hopgraph mcp --http`` over a one-item KB, with keys A and B; returns once it answers."""
    from hopgraph.memory.kb import Item, KnowledgeBase

    KnowledgeBase(tmp / "kb").add([Item("text", "t1", "A lighthouse on a cliff.", title="t")])
    port = free_port()
    env = {**os.environ, "HOPGRAPH_API_KEYS": f"{KEY_A},{KEY_B}", "HOME": str(tmp)}
    command = [sys.executable, "-m", "hopgraph.cli", "mcp", "--http", "--port", str(port)]
    command += ["--kb", str(tmp / "kb"), "--base-url", "http://127.0.0.1:9/v1", "--model", "none"]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    with httpx.Client() as c:
        while True:
            assert proc.poll() is None, "the server exited"
            try:
                c.post(url, json={}, timeout=2)
                return proc, url
            except httpx.HTTPError:
                time.sleep(0.2)


def flood(url: str, stop: threading.Event, status: Counter) -> None:
    """Key A: sessions opened and never ended, until ``stop``; each answer's status counted."""
    headers = {"x-api-key": KEY_A, "accept": ACCEPT}
    with httpx.Client() as a:
        while not stop.is_set():
            try:
                status[
                    a.post(url, json=MCP_INITIALIZE, timeout=30, headers=headers).status_code
                ] += 1
            except httpx.HTTPError:
                status["error"] += 1


def measure(url: str, seconds: float, threads: int) -> tuple[Counter, list[tuple[float, bool]]]:
    """A floods from ``threads`` clients for ``seconds`` while B goes round every 0.5 s:
    A's answers by status and B's rounds (when, whether it succeeded)."""
    stop, a_status, b_rounds = threading.Event(), Counter(), []
    workers = [threading.Thread(target=flood, args=(url, stop, a_status)) for _ in range(threads)]
    began = time.monotonic()
    for w in workers:
        w.start()
    with httpx.Client() as c:
        while time.monotonic() - began < seconds:
            b_rounds.append((time.monotonic() - began, b_round(c, url)))
            time.sleep(0.5)
    stop.set()
    for w in workers:
        w.join()
    return a_status, b_rounds


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=90)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default="benchmarks/results/mcp-flood.json")
    args = ap.parse_args()
    proc, url = start_server(Path(tempfile.mkdtemp()))
    before = rss_mb(proc.pid)
    a_status, b_rounds = measure(url, args.seconds, args.threads)
    after = rss_mb(proc.pid)
    proc.terminate()
    proc.wait(30)

    def rate(rows: list) -> float | None:
        return round(sum(ok for _, ok in rows) / len(rows), 3) if rows else None

    half = args.seconds / 2
    out = {
        "label": args.label,
        "seconds": args.seconds,
        "flood_threads": args.threads,
        "a_answers": dict(a_status),
        "b_rounds": len(b_rounds),
        "b_success": rate(b_rounds),
        "b_success_first_half": rate([r for r in b_rounds if r[0] < half]),
        "b_success_second_half": rate([r for r in b_rounds if r[0] >= half]),
        "server_rss_mb": {"before": before, "after": after},
        "git_revision": git_revision(),
        "machine": machine(),
    }
    path = Path(args.out)
    rows = json.loads(path.read_text()) if path.exists() else []
    path.write_text(json.dumps([*rows, out], indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
