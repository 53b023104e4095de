"""The one typed reading of traces and run folders (``harness.trace``, ``evals.run_record``):
every committed record, whatever layout it was written in, reads through it, and the viewer's
counts are the model's."""

from pathlib import Path

from hopgraph.evals.run_record import read_run
from hopgraph.harness.run_folder import RunFolder, has_trace, trace_path
from hopgraph.harness.trace import Trace
from hopgraph.presentation.viewer import RunView

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def test_every_committed_trace_reads_through_the_typed_model():
    """Traces written before calls kept their content, before events carried their task, and
    since: each reads into steps, calls, searches and a waterfall that agree with each other."""
    read = 0
    for manifest in sorted(RESULTS.rglob(RunFolder.MANIFEST)):
        run = read_run(manifest.parent)
        for qid in run.ids:
            if not has_trace(trace_path(run.path, qid)):
                continue
            trace = run.trace(qid)
            read += 1
            assert not trace.damaged, (run.path, qid, trace.damaged)
            llm = [s for s in trace.spans if s.kind == "llm"]
            assert [s.call for s in llm] == [c.index for c in trace.calls]
            assert len(trace.calls) == sum(len(s.calls) for s in trace.steps) or any(
                s.node == "error" for s in trace.steps
            ), (run.path, qid)
            assert all(c.started <= c.ended for c in trace.calls)
            assert len([s for s in trace.spans if s.kind == "retrieval"]) == len(trace.searches)
    assert read > 500


def test_the_viewer_counts_what_the_record_counts():
    """A question page's calls, gold held and evidence come from the one model: the row says
    the calls the endpoint received, the page lists the traced ones, and the gold held on the
    page is the record's."""
    folder = RESULTS / "mmlongbench" / "mabdqa-traced"
    run, view = read_run(folder), RunView(folder)
    for qid in run.ids:
        q, page = run.question(qid), view.question(qid)
        assert page["row"]["calls"] == q.calls_made
        assert len(page["calls"]) == len(q.trace.calls)
        assert [(g["id"], g["held"]) for g in page["gold_evidence"]] == q.gold_held()
        assert [e["id"] for e in page["evidence"]] == [e.id for e in q.evidence()]


def test_a_call_waits_as_the_server_says_else_as_its_first_token_came():
    records = [
        {"mode": "start", "data": {"id": "q"}},
        {"t": 0.0, "mode": "task", "data": {"id": "t", "name": "n", "event": "start"}},
        {
            "t": 5.0,
            "mode": "custom",
            "data": {
                "event": "llm_call",
                "template": "a",
                "latency_s": 5.0,
                "task": "t",
                "extra": {
                    "served": {
                        "first_token_s": 4.0,
                        "prompt_s": 1.5,
                        "queued_s": 2.5,
                        "prompt_read": 40,
                        "prompt_reused": 900,
                    }
                },
            },
        },
        {
            "t": 6.0,
            "mode": "custom",
            "data": {
                "event": "llm_call",
                "template": "b",
                "latency_s": 1.0,
                "task": "t",
                "extra": {"served": {"first_token_s": 0.7}},
            },
        },
    ]
    trace = Trace.of(records)
    assert [c.waited for c in trace.calls] == [2.5, 0.7]
    assert trace.calls[0].served["prompt_reused"] == 900 and trace.calls[0].node == "n"


def test_engine_waits_and_reused_prefix_reach_the_run_s_cost_table():
    """A question's counts keep, per template, the seconds its calls waited for a slot and the
    prompt tokens the server's cache gave back (llama-server's timings); eval's table shows
    them apart from the LLM seconds, and a record without timings shows neither."""
    from hopgraph.evals.evaluate import by_template
    from hopgraph.harness.run_folder import EventCounts

    def call(template: str, served: dict) -> dict:
        return {
            "mode": "custom",
            "data": {
                "event": "llm_call",
                "template": template,
                "prompt_tokens": 1000,
                "completion_tokens": 10,
                "latency_s": 6.0,
                "extra": {"served": served},
            },
        }

    timed = EventCounts.of(
        [
            call("mmapg/examine_text", {"queued_s": 4.0, "prompt_reused": 900}),
            call("mmapg/examine_text", {"queued_s": 1.5, "prompt_reused": 0}),
            call("mmapg/plan", {"first_token_s": 2.0}),
        ]
    ).stats()
    examine = timed["by_template"]["mmapg/examine_text"]
    assert examine["waited_s"] == 5.5 and examine["prompt_reused"] == 900
    assert examine["seconds"] == 12.0
    table = by_template([timed, EventCounts.of([call("mmapg/plan", {})]).stats()])
    assert table["mmapg/examine_text"]["waited_s"] == 2.75  # per question, over both
    assert table["mmapg/plan"]["prompt_reused"] == 0
    untimed = by_template([EventCounts.of([call("rag/answer", {"first_token_s": 1.0})]).stats()])
    assert set(untimed["rag/answer"]) == {"calls", "prompt_tokens", "completion_tokens", "seconds"}


def test_a_passage_retrieved_but_not_kept_shows_its_text_from_the_run_s_kb(tmp_path, town_kb):
    """A search names its hits by id only; a passage that was never kept has no text in the
    trace, so the question page showed an id and a score. Its text is read from the run's KB
    where that is here, and where it is not the page says why."""
    import json

    from hopgraph.memory.kb import KnowledgeBase

    (kept, dropped) = [h["id"] for h in KnowledgeBase(town_kb).search("town 3", k=2)]
    run = tmp_path / "run"
    (run / "traces").mkdir(parents=True)
    manifest = {"agent": "rag", "questions": "(asked)", "context": {"kb_dir": str(town_kb)}}
    (run / "manifest.json").write_text(json.dumps(manifest))
    pred = {
        "id": "q",
        "answer": "x",
        "response": "x",
        "citations": [],
        "contexts_ids": [kept],
        "seconds": 1.0,
        "code": "",
        "error": None,
        "gold_evidence": [],
        "type": "",
        "doc": "",
        "llm_calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "fallbacks": 0,
        "empty_replies": 0,
        "depth": 0,
        "retrieved": [kept, dropped],
        "by_template": {},
        "gold": ["x"],
        "question": "?",
    }
    (run / "predictions.jsonl").write_text(json.dumps(pred) + "\n")
    passage = {"id": kept, "text": "Fact 3 about town 3.", "title": "Town 3"}
    records = [
        {
            "mode": "custom",
            "t": 0.1,
            "data": {
                "event": "retrieval",
                "role": "r",
                "query": "town 3",
                "ids": [kept, dropped],
                "scores": [0.9, 0.5],
            },
        },
        {"mode": "updates", "t": 0.2, "data": {"retrieve": {"contexts": [passage]}}},
    ]
    (run / "traces" / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    page = RunView(run).question("q")
    rows = {e["id"]: e for e in page["evidence"]}
    assert rows[kept]["source_of_text"] == "trace" and rows[kept]["kept"]
    assert rows[dropped]["text"].startswith("Fact ") and rows[dropped]["source_of_text"] == "kb"
    assert not rows[dropped]["kept"] and page["evidence_note"] == ""
    manifest["context"]["kb_dir"] = str(tmp_path / "gone")
    (run / "manifest.json").write_text(json.dumps(manifest))
    page = RunView(run).question("q")
    assert (
        "named by id only" in page["evidence_note"]
        and str(tmp_path / "gone") in (page["evidence_note"])
    )
