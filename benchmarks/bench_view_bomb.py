"""``hopgraph view``'s normal pages while a gzip-bomb trace is being opened (issue 115 item 1):
figures, not a test. Two copies of a committed record are served by the real command; in one,
a question's packed trace is replaced by about 600 KB of gzip that expands to 256 MB of trace
records. One client opens that question over and over (``--opens`` times); all the while
another times the run list, the other run's question table and one of its questions. The same
three requests are timed with nothing else asked, side by side in one run (the machine is
shared and noisy).

    .venv/bin/python benchmarks/bench_view_bomb.py [--reps 20] [--opens 10] [--out FILE]

(``--out`` defaults to benchmarks/results/view-bomb.json.)
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from hopgraph.harness.run_folder import git_revision, machine, packed, trace_path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from bombs import gzip_bomb  # noqa: E402 - the bomb the viewer's test reads

RECORD = Path("benchmarks/results/engine/llama-server/rag-c4")


def timed(client: httpx.Client, url: str, params: dict) -> float:
    began = time.perf_counter()
    client.get(url, params=params, timeout=900).raise_for_status()
    return time.perf_counter() - began


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--opens", type=int, default=10, help="times the bomb is opened meanwhile")
    ap.add_argument("--out", default="benchmarks/results/view-bomb.json")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp())
    for name in ("normal", "bombed"):
        shutil.copytree(RECORD, root / name, ignore=shutil.ignore_patterns("checkpoints*"))
    ids = [json.loads(line)["id"] for line in (root / "normal/predictions.jsonl").open()]
    bomb = packed(trace_path(root / "bombed", ids[0]))
    gzip_bomb(bomb)
    bomb_bytes = bomb.stat().st_size
    command = [sys.executable, "-m", "hopgraph.cli", "view", str(root), "--port", "0"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = re.search(r"http://\S+/", proc.stdout.readline() if proc.stdout else "")
    assert url, "hopgraph view printed no address"
    base = url[0]
    try:
        with httpx.Client() as c:
            runs = {r["name"]: r["id"] for r in c.get(f"{base}api/runs", timeout=60).json()}
            normal = [
                ("runs", f"{base}api/runs", {}),
                ("questions", f"{base}api/questions", {"run": runs["normal"]}),
                ("question", f"{base}api/question", {"run": runs["normal"], "id": ids[1]}),
            ]
            for _, u, p in normal:  # warm: each run read once
                timed(c, u, p)
            idle = {name: [timed(c, u, p) for _ in range(args.reps)] for name, u, p in normal}
            stop, opened = threading.Event(), []

            def open_bomb() -> None:
                with httpx.Client() as b:
                    while not stop.is_set():
                        opened.append(
                            timed(b, f"{base}api/question", {"run": runs["bombed"], "id": ids[0]})
                        )

            worker = threading.Thread(target=open_bomb)
            worker.start()
            beside: dict[str, list[float]] = {name: [] for name, _, _ in normal}
            while len(opened) < args.opens or min(map(len, beside.values())) < args.reps:
                for name, u, p in normal:  # asked all the while the bomb is being opened
                    beside[name].append(timed(c, u, p))
            stop.set()
            worker.join()
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(root, ignore_errors=True)

    def stats(xs: list[float]) -> dict:
        return {"median_s": round(statistics.median(xs), 4), "max_s": round(max(xs), 4)}

    out = {
        "record": str(RECORD),
        "bomb": {
            "packed_bytes": bomb_bytes,
            "expands_to_mb": 256,
            "opened": len(opened),
            "open_s": stats(opened) if opened else None,
        },
        "reps": args.reps,
        "asked_beside": {k: len(v) for k, v in beside.items()},
        "idle": {k: stats(v) for k, v in idle.items()},
        "beside_the_bomb": {k: stats(v) for k, v in beside.items()},
        "ratio_median": {
            k: round(statistics.median(beside[k]) / statistics.median(idle[k]), 2) for k in idle
        },
        "git_revision": git_revision(),
        "machine": machine(),
    }
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
