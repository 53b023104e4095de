"""Several `hopgraph run` workers share one run through a real PostgreSQL on loopback: each
claims questions atomically, and a worker killed with -9 loses nothing (its question is picked
up by another, which resumes it from the shared checkpoint)."""

import json
import signal
import subprocess
import sys
import time

from scripted_server import ScriptedServer
from servers import scripted

from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.questions.datasets import Question, write_questions


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
                [
                    sys.executable,
                    "-m",
                    "hopgraph.cli",
                    "run",
                    "--agent",
                    "rag",
                    "--questions",
                    str(qfile),
                    "--out",
                    str(tmp_path / name / "run"),
                    "--kb",
                    str(tmp_path / "kb"),
                    *scripted(server.base_url),
                    "--checkpointer",
                    postgres,
                    "--lease",
                    "3",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )

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


def test_a_shared_question_killed_with_only_its_input_saved_is_answered_afresh(tmp_path, postgres):
    """The state a kill -9 in a question's first moments leaves in a shared run: its input
    checkpoint alone in PostgreSQL and its claim not done. The worker that claims it once the
    lease ran out answers it from the start, as an uninterrupted run does, never empty."""
    import psycopg
    from conftest import fresh_database
    from scripted_server import ScriptedServer

    from hopgraph.config import Context
    from hopgraph.harness.run_folder import read_predictions
    from hopgraph.harness.runner import Runner

    KnowledgeBase(tmp_path / "kb").add(
        [Item("text", f"k{i}", f"Fact {i} about town {i}.", title=f"Town {i}") for i in range(3)]
    )
    qfile = tmp_path / "q.jsonl"
    write_questions(
        [Question(f"q{i}", f"What about town {i}?", [f"answer-{i}"], []) for i in range(3)], qfile
    )
    db = fresh_database(postgres, "input_only")
    with ScriptedServer() as server:
        ctx = Context(base_url=server.base_url, model="scripted", kb_dir=str(tmp_path / "kb"))
        Runner("rag", tmp_path / "whole", ctx).run(qfile)
        first = Runner("rag", tmp_path / "run", ctx, checkpointer=db, lease=1)
        first.run(qfile)
        first.close()
        with psycopg.connect(db, autocommit=True) as conn:
            (thread,) = {
                t for (t,) in conn.execute("SELECT thread_id FROM checkpoints") if t.endswith(":q1")
            }
            later = [
                c
                for (c,) in conn.execute(
                    "SELECT checkpoint_id FROM checkpoints WHERE thread_id = %s "
                    "AND metadata->>'source' <> 'input'",
                    (thread,),
                )
            ]
            assert later
            conn.execute(
                "DELETE FROM checkpoints WHERE thread_id = %s AND checkpoint_id = ANY(%s)",
                (thread, later),
            )
            conn.execute(
                "DELETE FROM checkpoint_writes WHERE thread_id = %s AND checkpoint_id = ANY(%s)",
                (thread, later),
            )
            conn.execute(
                "UPDATE hopgraph_questions SET done = false, prediction = NULL, "
                "heartbeat = '-infinity' WHERE qid = 'q1'"
            )
        runner = Runner("rag", tmp_path / "run", ctx, checkpointer=db, lease=1)
        again = runner.run(qfile)
        runner.close()
    assert again.finished == 1 and again.failed == 0 and again.skipped_done == 2
    whole = read_predictions(tmp_path / "whole" / "predictions.jsonl")
    resumed = read_predictions(tmp_path / "run" / "predictions.jsonl")
    assert resumed["q1"]["answer"] and resumed["q1"]["llm_calls"] == whole["q1"]["llm_calls"]
    assert {q: p["answer"] for q, p in resumed.items()} == {
        q: p["answer"] for q, p in whole.items()
    }
    lines = (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["id"] for x in lines) == ["q0", "q1", "q2"]
