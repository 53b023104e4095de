"""Several `hopgraph run` workers share one run through a real PostgreSQL on loopback: each
claims questions atomically, and a worker killed with -9 loses nothing (its question is picked
up by another, which resumes it from the shared checkpoint)."""

import json
import signal
import subprocess
import sys
import time

from scripted_server import ScriptedServer

from hopgraph.evals.datasets import Question, write_questions
from hopgraph.memory.kb import Item, KnowledgeBase


def test_two_workers_share_a_run_and_one_killed_loses_nothing(tmp_path, postgres):
    KnowledgeBase(tmp_path / "kb").add(
        [Item("text", f"k{i}", f"Fact {i} about town {i}.", title=f"Town {i}") for i in range(8)]
    )
    qfile = tmp_path / "q.jsonl"
    n = 12
    write_questions([Question(f"q{i}", f"What about town {i}?") for i in range(n)], qfile)
    with ScriptedServer(delay=0.25) as server:

        def worker(name):
            return subprocess.Popen(
                [sys.executable, "-m", "hopgraph.cli", "run", "--agent", "rag", "--questions",
                 str(qfile), "--out", str(tmp_path / name / "run"), "--kb", str(tmp_path / "kb"),
                 "--base-url", server.base_url, "--model", "scripted", "--checkpointer",
                 postgres, "--lease", "3"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            )  # fmt: skip

        a, b = worker("a"), worker("b")
        preds_a = tmp_path / "a" / "run" / "predictions.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if preds_a.exists() and len(preds_a.read_text().splitlines()) >= 2:
                break
            time.sleep(0.05)
        a.send_signal(signal.SIGKILL)  # mid-run: it holds a question it never finishes
        a.wait(timeout=30)
        out, _ = b.communicate(timeout=300)
    assert b.returncode == 0, out
    lines = (tmp_path / "b" / "run" / "predictions.jsonl").read_text().splitlines()
    ids = [json.loads(x)["id"] for x in lines]
    assert sorted(ids) == sorted(f"q{i}" for i in range(n))  # every question, exactly once
    assert not any(json.loads(x)["error"] for x in lines)
    import psycopg

    with psycopg.connect(postgres) as conn:
        rows = conn.execute(
            "SELECT qid, done FROM hopgraph_questions WHERE run = 'rag:run'"
        ).fetchall()
    assert len(rows) == n and all(done for _, done in rows)
    a_done = len(preds_a.read_text().splitlines())
    assert 2 <= a_done < n  # both workers answered some
