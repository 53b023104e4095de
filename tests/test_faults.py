"""Fault injection between the runner and the model endpoint (tests/fault_proxy.py): for each
fault, what the run reports, what it re-sends (bounded, never multiplied), and that a resume
answers every question exactly once."""

import json

import pytest
from fault_proxy import FaultProxy
from scripted_server import ScriptedServer

from hopgraph.config import Context
from hopgraph.harness.run_folder import read_predictions
from hopgraph.harness.runner import Runner
from hopgraph.questions.datasets import Question, write_questions

N = 6
CALLS_PER_QUESTION = 2  # rag: the cited answer, then the short answer
REPORTS = {
    "reset": "cannot reach model endpoint",
    "500": "answered HTTP 500 after 3 attempt(s): Error code: 500 - injected server error",
    "slow": "timed out after",
    "truncated": "malformed reply",
}


@pytest.fixture
def kb_dir(town_kb):
    return town_kb


def run(tmp_path, kb_dir, faults, name="run"):
    qfile = tmp_path / "q.jsonl"
    write_questions([Question(f"q{i}", f"What about town {i}?") for i in range(N)], qfile)
    with ScriptedServer() as server, FaultProxy(server.base_url, faults, slow=3.0) as proxy:
        ctx = Context(
            base_url=proxy.base_url,
            model="scripted",
            kb_dir=str(kb_dir),
            max_retries=2,
            request_timeout=1.0,
        )
        summary = Runner("rag", tmp_path / name, ctx).run(qfile, max_consecutive_failures=0)
    return summary, proxy, read_predictions(tmp_path / name / "predictions.jsonl")


def attempts(tmp_path, name="run"):
    """Every llm_call event's attempts, over all traces of a run."""
    out = []
    from hopgraph.harness.run_folder import trace_ids, trace_records

    for trace in trace_ids(tmp_path / name):
        for record in trace_records(trace):
            data = record.get("data")
            if isinstance(data, dict) and data.get("event") == "llm_call":
                out.append(data["attempts"])
    return out


@pytest.mark.parametrize("kind", [k for k in REPORTS if k != "slow"])
def test_a_passing_fault_costs_exactly_one_resend_and_no_question(kind, tmp_path, kb_dir):
    summary, proxy, preds = run(tmp_path, kb_dir, lambda n, body: kind if n in (3, 8) else None)
    assert (summary.finished, summary.failed) == (N, 0)
    assert proxy.injected == [kind, kind]
    assert proxy.chat_requests == N * CALLS_PER_QUESTION + 2  # one re-send per fault
    assert sorted(attempts(tmp_path)) == [1] * (N * CALLS_PER_QUESTION - 2) + [2, 2]


def test_a_timed_out_call_is_not_sent_again_and_its_question_resumes(tmp_path, kb_dir):
    """A reply past request_timeout is not re-sent (a batching server is most likely still on
    it; a re-send would queue at the back): its question fails, and a re-run answers it."""
    summary, proxy, preds = run(tmp_path, kb_dir, lambda n, body: "slow" if n == 3 else None)
    assert (summary.finished, summary.failed) == (N - 1, 1) and proxy.injected == ["slow"]
    (failed,) = [p for p in preds.values() if p["error"]]
    assert REPORTS["slow"] in failed["error"] and "after 1 attempt" in failed["error"]
    summary, proxy, _ = run(tmp_path, kb_dir, lambda n, body: None)
    assert (summary.finished, summary.failed, summary.skipped_done) == (1, 0, N - 1)


@pytest.mark.parametrize("kind", list(REPORTS))
def test_a_lasting_fault_fails_only_its_question_clearly_and_resume_finishes_it(
    kind, tmp_path, kb_dir
):
    hit = lambda n, body: kind if "town 2?" in json.dumps(body) else None  # noqa: E731
    summary, proxy, preds = run(tmp_path, kb_dir, hit)
    assert (summary.finished, summary.failed) == (N - 1, 1)
    assert REPORTS[kind] in preds["q2"]["error"], preds["q2"]["error"]
    assert 1 <= len(proxy.injected) <= 3  # the failing call was tried at most max_retries times
    summary, _, preds = run(tmp_path, kb_dir, lambda n, body: None)
    assert (summary.finished, summary.failed, summary.skipped_done) == (1, 0, N - 1)
    lines = (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["id"] for x in lines) == [f"q{i}" for i in range(N)]
    assert not any(p["error"] for p in preds.values())


def test_an_empty_reply_is_counted_not_hidden(tmp_path, kb_dir):
    hit = lambda n, body: "empty" if "town 1?" in json.dumps(body) else None  # noqa: E731
    summary, proxy, preds = run(tmp_path, kb_dir, hit)
    assert (summary.finished, summary.failed) == (N, 0)
    assert preds["q1"]["answer"] == "" and preds["q1"]["empty_replies"] == CALLS_PER_QUESTION
    assert all(preds[f"q{i}"]["empty_replies"] == 0 for i in range(N) if i != 1)
    assert proxy.chat_requests == N * CALLS_PER_QUESTION  # an empty reply is not re-sent
