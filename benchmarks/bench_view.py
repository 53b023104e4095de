"""``hopgraph view`` on real sizes (figures, not a test): synthetic run folders of 100 and 1,000
questions, each question's packed trace holding 35 LLM calls with whole prompts and replies (as
a full MMAPG question's does), served by the real command and opened in headless Chromium.

    .venv/bin/python benchmarks/bench_view.py [--reps 3] [--out benchmarks/results/view.json]

Per size it records: the command's start until it serves; the API's run list, question table
and one opened question (server seconds, bytes); and the page itself in Chromium: the app's own
time from navigation to a rendered table, a filter applied, and a question opened
(``data-since-navigation-ms``, which the app writes once it has drawn), the first of them the
very first page after a start (a question, before anything warmed the server), and Chromium's
wall time beside that of a blank page (its own start). Medians of ``--reps``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from hopgraph.harness.run_folder import git_revision, machine, trace_path

CALLS = 35
CHROMIUM = shutil.which("chromium")


def trace_records(qid: str, rng: random.Random) -> list[dict]:
    """A question's trace: a node per call, each call with a ~2 KB prompt and its reply."""
    out: list[dict] = [{"mode": "start", "data": {"id": qid, "resume": False, "wall": 0.0}}]
    t = 0.0
    for c in range(CALLS):
        task = f"{qid}-{c}"
        node = ("plan", "retrieve", "answer")[c % 3]
        prompt = " ".join(f"word{rng.randrange(5000)}" for _ in range(300))
        out += [
            {
                "t": t,
                "ns": [],
                "mode": "task",
                "data": {"id": task, "name": node, "event": "start"},
            },
            {
                "t": t + 0.9,
                "ns": [],
                "mode": "custom",
                "data": {
                    "event": "llm_call",
                    "role": node,
                    "template": f"mmapg/{node}",
                    "model": "m",
                    "kind": "text",
                    "prompt_tokens": 600,
                    "completion_tokens": 40,
                    "latency_s": 0.9,
                    "attempts": 1,
                    "error": None,
                    "extra": {"cached": c % 5 == 0},
                    "messages": [{"role": "user", "content": prompt}],
                    "sampling": {"max_tokens": 64},
                    "reply": f"reply {c} " * 20,
                    "parsed": {"step": c},
                },
            },
            {"t": t + 0.95, "ns": [], "mode": "updates", "data": {node: {"step": c}}},
            {
                "t": t + 1.0,
                "ns": [],
                "mode": "task",
                "data": {"id": task, "name": node, "event": "end"},
            },
        ]
        t += 1.0
    return out


def make_run(folder: Path, n: int, seed: int) -> None:
    rng = random.Random(seed)
    (folder / "traces").mkdir(parents=True)
    lines = []
    for i in range(n):
        qid = f"q{i:05d}"
        records = trace_records(qid, rng)
        text = "\n".join(json.dumps(r) for r in records) + "\n"
        path = trace_path(folder, qid)
        Path(f"{path}.gz").write_bytes(gzip.compress(text.encode(), mtime=0))
        lines.append(
            json.dumps(
                {
                    "id": qid,
                    "question": f"Question {i} about thing {rng.randrange(100)}?",
                    "answer": f"ans{rng.randrange(3)}",
                    "gold": [f"ans{rng.randrange(3)}"],
                    "llm_calls": CALLS,
                    "prompt_tokens": 600 * CALLS,
                    "completion_tokens": 40 * CALLS,
                    "fallbacks": rng.randrange(2),
                    "seconds": float(CALLS),
                    "by_template": {"mmapg/plan": {}, "mmapg/answer": {}},
                    "error": None,
                }
            )
        )
    (folder / "predictions.jsonl").write_text("\n".join(lines) + "\n")
    manifest = {
        "agent": "mmapg",
        "model": "m",
        "created": "2026-11-28T00:00:00+0000",
        "code": {"fingerprint": "synthetic"},
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))


def chromium(url: str) -> tuple[str, float]:
    """The DOM Chromium dumps once the page has loaded and its fetches are done; wall seconds."""
    began = time.perf_counter()
    page = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=60000",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    return page, round(time.perf_counter() - began, 3)


def rendered_ms(url: str) -> tuple[float, float]:
    """The page's time from navigation to its drawn view (ms, the app's own reading) and
    Chromium's wall seconds (its own start included: see ``blank_s``)."""
    page, wall = chromium(url)
    found = re.search(r'data-since-navigation-ms="(\d+)"', page)
    assert found and 'data-state="ready"' in page, page[-500:]
    return float(found[1]), wall


def timed_get(url: str, **params: str) -> tuple[float, int]:
    began = time.perf_counter()
    r = httpx.get(url, params=params, timeout=300)
    r.raise_for_status()
    return round(time.perf_counter() - began, 4), len(r.content)


def measure(root: Path, name: str, reps: int) -> dict:
    rows: dict[str, list] = {}
    for _ in range(reps):
        began = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "hopgraph.cli", "view", str(root / name), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        url = re.search(r"http://\S+/", proc.stdout.readline())[0]
        rows.setdefault("serve_start_s", []).append(round(time.perf_counter() - began, 3))
        try:
            if CHROMIUM:  # the first page after a start, before anything warmed the server
                ms, wall = rendered_ms(url + f"#/run/{name}/q/q00007")
                rows.setdefault("page_first_question_ms", []).append(ms)
                rows.setdefault("page_first_question_chromium_wall_s", []).append(wall)
            for key, path, params in (
                ("api_runs", "api/runs", {}),
                ("api_questions", "api/questions", {"run": name}),
                ("api_question", "api/question", {"run": name, "id": "q00007"}),
            ):
                took, size = timed_get(url + path, **params)
                rows.setdefault(f"{key}_s", []).append(took)
                rows[f"{key}_bytes"] = [size]
            if CHROMIUM:
                rows.setdefault("blank_page_chromium_wall_s", []).append(
                    chromium("data:text/html,<p>blank</p>")[1]
                )
                for key, frag in (
                    ("page_run", f"#/run/{name}"),
                    ("page_filtered", f"#/run/{name}?status=wrong&sort=f1"),
                    ("page_question", f"#/run/{name}/q/q00007"),
                ):
                    ms, wall = rendered_ms(url + frag)
                    rows.setdefault(f"{key}_ms", []).append(ms)
                    rows.setdefault(f"{key}_chromium_wall_s", []).append(wall)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return {k: statistics.median(v) for k, v in rows.items()} | {"reps": reps}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default="benchmarks/results/view.json")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-view-"))
    try:
        sizes = {}
        for n in (100, 1000):
            began = time.perf_counter()
            make_run(root / f"run-{n}", n, seed=n)
            size = sum(p.stat().st_size for p in (root / f"run-{n}").rglob("*") if p.is_file())
            sizes[str(n)] = {
                "questions": n,
                "calls_per_question": CALLS,
                "folder_bytes": size,
                "made_s": round(time.perf_counter() - began, 1),
            }
            sizes[str(n)] |= measure(root, f"run-{n}", args.reps)
            print(json.dumps(sizes[str(n)]), flush=True)
    finally:
        shutil.rmtree(root)
    record = {
        "what": "hopgraph view on synthetic runs: serving start, API seconds, and the page's "
        "own render time in headless Chromium (data-rendered-ms), medians",
        "command": "python benchmarks/bench_view.py " + " ".join(sys.argv[1:]),
        "git_revision": git_revision(),
        "machine": machine(),
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "sizes": sizes,
    }
    Path(args.out).write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
