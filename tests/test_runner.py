import json
import os
import shutil
import signal
import subprocess
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from scripted_server import ScriptedServer, deterministic_reply
from servers import hopgraph, python, scripted, started

from hopgraph.config import Context
from hopgraph.evals.evaluate import evaluate_run
from hopgraph.harness.run_folder import RunError, read_predictions, trace_path, trace_records
from hopgraph.harness.runner import Runner
from hopgraph.memory.indexing import index_source
from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.questions.datasets import Question, write_questions

TESTS = Path(__file__).parent


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("kb")
    KnowledgeBase(path).add(
        [
            Item("text", f"k{i}", f"Fact number {i} about town {i}.", title=f"Town {i}")
            for i in range(12)
        ]
    )
    return path


def questions(tmp_path, n=6, extra_lines=""):
    path = tmp_path / "q.jsonl"
    write_questions(
        [Question(f"q{i}", f"What about town {i}?", [f"answer-{i}"], []) for i in range(n)], path
    )
    if extra_lines:
        with open(path, "a") as f:
            f.write(extra_lines)
    return path


def ctx_for(server, kb_dir):
    return Context(base_url=server.base_url, model="scripted", kb_dir=str(kb_dir), max_retries=2)


def test_a_prediction_keeps_its_cited_contexts_whole_and_its_line_names_gold_ids(tmp_path, kb_dir):
    """The runner's Prediction carries the cited contexts whole (``ask`` prints them without
    asking the KB again); its line keeps their ids only, and names the question's gold ids
    ``gold_evidence``, not ``evidence``, which in the graph contract means the contexts."""
    with ScriptedServer() as server:
        runner = Runner("rag", tmp_path / "run", ctx_for(server, kb_dir))
        pred = runner.ask(Question("q1", "What about town 1?", ["answer-1"], ["k1"]))
    assert pred["citations"] and [e["id"] for e in pred["cited"]] == pred["citations"]
    assert all(e["text"].startswith("Fact number") for e in pred["cited"])
    line = json.loads((tmp_path / "run" / "predictions.jsonl").read_text())
    assert line["gold_evidence"] == ["k1"] and "evidence" not in line and "cited" not in line
    assert line["citations"] == pred["citations"]
    assert "Fact number" not in json.dumps(line)  # no passage text in a committable record


def test_run_writes_predictions_traces_and_manifest(tmp_path, kb_dir):
    with ScriptedServer() as server:
        summary = Runner("rag", tmp_path / "run", ctx_for(server, kb_dir)).run(questions(tmp_path))
    assert (summary.finished, summary.failed) == (6, 0)
    preds = read_predictions(tmp_path / "run" / "predictions.jsonl")
    p = preds["q0"]
    assert p["answer"].startswith("answer-") and p["llm_calls"] == 2
    assert p["prompt_tokens"] == 20 and len(p["retrieved"]) == 5 and len(p["citations"]) == 2
    assert p["depth"] == 2  # the answer, then the short answer: two rounds one after another
    by = p["by_template"]  # where the question's tokens went, by prompt template
    assert set(by) == {"rag/answer", "rag/short_answer"}
    assert sum(t["prompt_tokens"] for t in by.values()) == 20
    assert all(t["calls"] == 1 and t["seconds"] >= 0 for t in by.values())
    assert evaluate_run(tmp_path / "run")["by_template"]["rag/answer"]["calls"] == 1.0
    from hopgraph.harness.run_folder import packed, trace_path, trace_records

    path = trace_path(tmp_path / "run", "q0")
    assert packed(path).exists() and not path.exists()  # packed once the question ended
    trace = trace_records(path)
    events = [r["data"].get("event") for r in trace if r.get("mode") == "custom"]
    assert events.count("llm_call") == 2 and events.count("retrieval") == 1
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["agent"] == "rag" and len(manifest["questions_sha256"]) == 64
    assert "rag/answer" in manifest["prompts"] and manifest["context"]["model"] == "scripted"
    assert "speed" not in p and "speed" not in manifest["sittings"][-1]  # no probe asked for


def test_a_timed_sitting_asks_its_questions_first_and_records_the_endpoints_speed(tmp_path, kb_dir):
    """Seconds measured on two hosts differ by the hosts' speed: a sitting with the probe on
    (the CLI's choice for the embedded server) times the endpoint once and every question it
    answers carries that speed into eval. The probe (about 30 s) ran before the first question,
    which a user waited on for nothing: it runs once the questions are answered, and each answer
    names its sitting. The latency model sleeps 2 ms per token, so neither rate can exceed 500
    tokens/s."""
    asked = []

    def reply(body):  # the probe's count runs to its token limit, as a real model's does
        asked.append(body["_template"])
        return "1 2 3 4 " * 40 if body["_template"] == "probe" else deterministic_reply(body)

    told = []
    with ScriptedServer(reply, per_token=0.002) as server:
        Runner(
            "rag", tmp_path / "run", ctx_for(server, kb_dir), speed_probe=True, notify=told.append
        ).run(questions(tmp_path, n=2))
        # two calls per question, then the probe (a warm-up, 3 reads, 3 counts)
        assert server.calls == 2 * 2 + 1 + 3 + 3
    assert "probe" not in asked[:4], asked
    assert asked[4:] == ["probe"] * 7, asked
    assert told[0].startswith("timing the endpoint") and told[1].startswith("timed in"), told
    sitting = json.loads((tmp_path / "run" / "manifest.json").read_text())["sittings"][-1]
    speed = sitting["speed"]
    assert set(speed) == {"prefill_tokens_per_s", "decode_tokens_per_s"}
    assert isinstance(sitting["llama_cpp_build"], list)  # which vector extensions it used
    assert 0 < speed["prefill_tokens_per_s"] <= 500 and speed["decode_tokens_per_s"] > 0
    preds = read_predictions(tmp_path / "run" / "predictions.jsonl")
    assert all(p["sitting"] == 0 and "speed" not in p for p in preds.values())
    per_q = evaluate_run(tmp_path / "run")["per_question"]
    assert per_q["q0"]["prefill_tokens_per_s"] == speed["prefill_tokens_per_s"]
    with ScriptedServer(reply) as server:  # a sitting with nothing left to answer: no probe
        Runner("rag", tmp_path / "run", ctx_for(server, kb_dir), speed_probe=True).run(
            questions(tmp_path, n=2)
        )
        assert server.calls == 0


def test_a_sitting_on_another_llama_cpp_build_is_warned_about(
    tmp_path, kb_dir, monkeypatch, caplog
):
    """rag's record grew on the portable AVX2 wheel, then on the AVX-512 build, and nothing
    said so while a build can change a greedy answer: the sitting that switches is warned."""
    from hopgraph.harness import runner as runner_module

    def reply(body):
        return "1 2 3 4 " * 40 if body["_template"] == "probe" else deterministic_reply(body)

    qfile, run = questions(tmp_path, n=3), tmp_path / "run"
    builds = iter([["AVX2"], ["AVX2"], ["AVX2", "AVX512"]])
    monkeypatch.setattr(runner_module, "llama_build_features", lambda: next(builds))
    with (
        ScriptedServer(reply, per_token=0.002) as server,
        caplog.at_level("WARNING", "hopgraph.harness.runner"),
    ):
        for limit in (1, 2):
            Runner("rag", run, ctx_for(server, kb_dir), speed_probe=True).run(qfile, limit=limit)
        assert "llama.cpp build" not in caplog.text  # the same build again: nothing to say
        Runner("rag", run, ctx_for(server, kb_dir), speed_probe=True).run(qfile, limit=3)
    assert "answered on a llama.cpp build using AVX2; this sitting's uses AVX2+AVX512" in (
        caplog.text
    )
    sittings = json.loads((run / "manifest.json").read_text())["sittings"]
    assert [s["llama_cpp_build"] for s in sittings] == [["AVX2"], ["AVX2"], ["AVX2", "AVX512"]]


def test_the_speed_probe_is_not_set_by_one_stalled_read(monkeypatch):
    """One sitting's single probe read the embedded model's prompts at 67.8 tokens/s while its
    answer calls ran as fast as those of sittings probed at 77-79: the read caught a stall, and
    RESULTS.md then said the sittings' seconds did not compare. An endpoint at 80 prompt and 30
    generated tokens/s that stalls (x1.5) on the first timed read of each kind: the median of
    three reads is the unstalled rate."""
    from types import SimpleNamespace

    from hopgraph.models import doctor

    clock = [0.0]
    stalls = iter([False, True, False, False, True, False, False])  # warm-up, reads, counts

    class Endpoint:
        def request(self, messages, max_tokens, **kw):
            prompt = 450 if max_tokens == 1 else 30
            clock[0] += (prompt / 80 + max_tokens / 30) * (1.5 if next(stalls) else 1.0)
            usage = SimpleNamespace(prompt_tokens=prompt, completion_tokens=max_tokens)
            return SimpleNamespace(usage=usage)

    fake_time = SimpleNamespace(perf_counter=lambda: clock[0], time_ns=lambda: 0)
    monkeypatch.setattr(doctor, "time", fake_time)
    rates = doctor.measure_speed(Endpoint())
    prefill = 450 / (450 / 80 + 1 / 30)
    assert rates["prefill_tokens_per_s"] == pytest.approx(prefill, abs=0.01)
    decode = 64 / (30 / 80 + 64 / 30 - 30 / prefill)
    assert rates["decode_tokens_per_s"] == pytest.approx(decode, abs=0.01)


def test_the_speed_probe_asks_again_when_a_count_stops_early(monkeypatch):
    """CI's smollm2 once stopped counting after 28 of 64 tokens and doctor reported no prefill
    rate at all. An endpoint whose first count reply stops at 28 tokens: the probe asks again
    behind a fresh nonce, and the short reply sets nothing."""
    from types import SimpleNamespace

    from hopgraph.models import doctor

    clock, counts = [0.0], iter([28, 64, 64, 64])

    class Endpoint:
        def request(self, messages, max_tokens, **kw):
            prompt = 450 if max_tokens == 1 else 30
            n = max_tokens if max_tokens == 1 else next(counts)
            clock[0] += prompt / 80 + n / 30
            usage = SimpleNamespace(prompt_tokens=prompt, completion_tokens=n)
            return SimpleNamespace(usage=usage)

    monkeypatch.setattr(
        doctor, "time", SimpleNamespace(perf_counter=lambda: clock[0], time_ns=lambda: 0)
    )
    rates = doctor.measure_speed(Endpoint())
    prefill = 450 / (450 / 80 + 1 / 30)
    decode = 64 / (30 / 80 + 64 / 30 - 30 / prefill)
    assert rates["decode_tokens_per_s"] == pytest.approx(decode, abs=0.01)
    with pytest.raises(StopIteration):
        next(counts)  # all four count calls were made: one short, three timed


def test_rerun_skips_finished_questions(tmp_path, kb_dir):
    qfile = questions(tmp_path)
    with ScriptedServer() as server:
        Runner("rag", tmp_path / "run", ctx_for(server, kb_dir)).run(qfile, limit=4)
        calls = server.calls
        summary = Runner("rag", tmp_path / "run", ctx_for(server, kb_dir)).run(qfile)
        assert summary.skipped_done == 4 and summary.finished == 2
        assert server.calls - calls == 4  # only the two new questions
    lines = (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["id"] for x in lines) == [f"q{i}" for i in range(6)]


def test_a_shorter_rerun_keeps_the_failures_it_does_not_ask_again(tmp_path, kb_dir):
    """A record's failed question past a rerun's --limit is not this sitting's: its line (the
    error that says why) stays. A script growing a record 10 questions at a time re-ran the
    first 50 of a record whose questions 51-60 held two timeouts, and the record then said
    those two were never asked; a sitting that does ask one again replaces its line."""
    qfile = questions(tmp_path, 4)

    def reply(body):
        if "town 3?" in json.dumps(body["messages"]):
            raise RuntimeError("down")  # the scripted server answers 500
        return deterministic_reply(body)

    with ScriptedServer(reply) as server:
        ctx = ctx_for(server, kb_dir)
        first = Runner("rag", tmp_path / "run", ctx).run(qfile)
        assert first.failed == 1 and first.finished == 3
        for limit in (2, 3):
            again = Runner("rag", tmp_path / "run", ctx).run(qfile, limit=limit)
            assert again.finished == again.failed == 0
            preds = read_predictions(tmp_path / "run" / "predictions.jsonl")
            assert sorted(preds) == ["q0", "q1", "q2", "q3"], limit
            assert "HTTP 500" in preds["q3"]["error"], preds["q3"]
        server.reply = deterministic_reply
        whole = Runner("rag", tmp_path / "run", ctx).run(qfile)
    assert whole.finished == 1 and whole.failed == 0
    preds = read_predictions(tmp_path / "run" / "predictions.jsonl")
    assert sorted(preds) == ["q0", "q1", "q2", "q3"] and not preds["q3"]["error"]


def test_redo_answers_named_questions_afresh_and_refuses_unknown_ids(tmp_path, kb_dir):
    qfile = questions(tmp_path, n=3)
    run_dir = tmp_path / "run"
    with ScriptedServer() as server:
        Runner("rag", run_dir, ctx_for(server, kb_dir)).run(qfile)
        before = read_predictions(run_dir / "predictions.jsonl")
        calls = server.calls
        summary = Runner("rag", run_dir, ctx_for(server, kb_dir)).run(qfile, redo=["q1"])
        assert (summary.skipped_done, summary.finished) == (2, 1)
        assert server.calls - calls == 2  # q1's retrieval-answer pair again, nothing else
        with pytest.raises(RunError, match="q7"):
            Runner("rag", run_dir, ctx_for(server, kb_dir)).run(qfile, redo=["q7"])
    after = read_predictions(run_dir / "predictions.jsonl")
    assert sorted(after) == ["q0", "q1", "q2"] and after["q0"] == before["q0"]
    assert (run_dir / "predictions.jsonl").read_text().count('"q1"') == 1
    from hopgraph.harness.run_folder import trace_path, trace_records

    starts = [r for r in trace_records(trace_path(run_dir, "q1")) if r.get("mode") == "start"]
    assert len(starts) == 1 and starts[0]["data"]["resume"] is False


def test_bad_question_lines_are_reported_and_the_rest_run(tmp_path, kb_dir):
    qfile = questions(
        tmp_path, 3, '{broken\n{"id": "q0", "question": "dup"}\n{"id": "e", "question": ""}\n'
    )
    with ScriptedServer() as server:
        summary = Runner("rag", tmp_path / "run", ctx_for(server, kb_dir)).run(qfile)
    assert summary.finished == 3
    assert [p.reason.split(":")[0] for p in summary.problems] == [
        "bad JSON line",
        "duplicate id 'q0' (the one on line 1 is kept)",
        "empty question (null, empty or not a string)",
    ]


def test_endpoint_dies_then_run_resumes(tmp_path, kb_dir):
    qfile = questions(tmp_path, 4)
    server = ScriptedServer()
    port = server.port
    answered = []

    def reply_then_die(body):
        answered.append(1)
        if len(answered) == 4:  # two questions done, then the endpoint goes away
            threading_stop()
        return deterministic_reply(body)

    def threading_stop():
        import threading

        threading.Thread(target=server.stop).start()

    server.reply = reply_then_die
    ctx = ctx_for(server, kb_dir)
    summary = Runner("rag", tmp_path / "run", ctx).run(qfile)
    assert summary.failed >= 1 and summary.finished + summary.failed == 4
    preds = read_predictions(tmp_path / "run" / "predictions.jsonl")
    failed = [p for p in preds.values() if p["error"]]
    assert all(
        "cannot reach model endpoint" in p["error"] and str(port) in p["error"] for p in failed
    )
    time.sleep(0.2)
    with ScriptedServer(port=port):  # the endpoint is back on the same address
        again = Runner("rag", tmp_path / "run", ctx).run(qfile)
    assert again.failed == 0 and again.finished == len(failed)
    lines = (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()
    ids = [json.loads(x)["id"] for x in lines]
    assert sorted(ids) == ["q0", "q1", "q2", "q3"]
    assert all(not json.loads(x)["error"] for x in lines)


def test_concurrency_gives_the_same_predictions(tmp_path, kb_dir):
    qfile = questions(tmp_path, 8)
    with ScriptedServer(delay=0.01) as server:
        Runner("rag", tmp_path / "c1", ctx_for(server, kb_dir)).run(qfile, concurrency=1)
        Runner("rag", tmp_path / "c4", ctx_for(server, kb_dir)).run(qfile, concurrency=4)

    def answers(run):
        preds = read_predictions(tmp_path / run / "predictions.jsonl")
        return {k: (v["answer"], v["citations"], v["retrieved"]) for k, v in preds.items()}

    assert answers("c1") == answers("c4") and len(answers("c1")) == 8


def test_run_folder_refuses_another_agent_or_question_file(tmp_path, kb_dir):
    with ScriptedServer() as server:
        Runner("rag", tmp_path / "run", ctx_for(server, kb_dir)).run(questions(tmp_path, 1))
        with pytest.raises(RunError, match="agent 'rag'"):
            Runner("direct", tmp_path / "run", ctx_for(server, kb_dir)).run(questions(tmp_path, 1))
        (tmp_path / "other").mkdir()
        other = questions(tmp_path / "other", 2)
        other.write_text(other.read_text().replace("town 0", "city 0"))
        with pytest.raises(RunError, match="another question file"):
            Runner("rag", tmp_path / "run", ctx_for(server, kb_dir)).run(other)


def test_a_record_grows_to_a_question_file_that_extends_its_own(tmp_path, kb_dir):
    """MMLongBench's two-per-PDF spread starts with the 24 questions of the one-per-PDF spread;
    the record of those 24 refused it as "another question file", so a second question per
    PDF meant starting both records over. Now it grows, and scoring reads the longer file."""
    for name in ("short", "long"):
        (tmp_path / name).mkdir()
    short, longer = questions(tmp_path / "short", 3), questions(tmp_path / "long", 5)
    with ScriptedServer() as server:
        Runner("rag", tmp_path / "run", ctx_for(server, kb_dir)).run(short)
        summary = Runner("rag", tmp_path / "run", ctx_for(server, kb_dir)).run(longer)
    assert (summary.skipped_done, summary.finished) == (3, 2)
    man = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert man["questions"] == str(longer) and man["extends"] == [str(short)]
    assert len(man["sittings"]) == 2
    assert evaluate_run(tmp_path / "run")["questions"] == 5  # gold joined from the longer file


def test_a_record_refuses_to_resume_with_settings_that_change_its_answers(tmp_path, kb_dir):
    """MAB-DQA's LI record grew from 24 answers written with one set of its prompts to 48 with
    another, and nothing said so: a record resumed with another --set, an edited template its
    questions used, or a KB indexed another way mixes two configurations in one table cell.
    Where and how fast it is served may change between sittings."""
    qfile, run = questions(tmp_path, 3), tmp_path / "run"
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "towns.txt").write_text("Town 1 has a lighthouse. Town 2 has a harbour.")
    index_source(KnowledgeBase(tmp_path / "kb"), corpus, render_pages=False)
    index_source(KnowledgeBase(tmp_path / "kb-rendered"), corpus)  # same items, another build
    with ScriptedServer() as server:
        ctx = ctx_for(server, tmp_path / "kb")
        Runner("rag", run, ctx).run(qfile, limit=1)
        with pytest.raises(RunError, match=r"top_k=5 \(now 3\)"):
            Runner("rag", run, ctx.replace(top_k=3)).run(qfile)
        (tmp_path / "mine" / "rag").mkdir(parents=True)
        (tmp_path / "mine" / "rag" / "answer.j2").write_text(
            "Sources: {{ contexts }} Q: {{ question }}"
        )
        with pytest.raises(RunError, match="template rag/answer"):
            Runner("rag", run, ctx.replace(prompts_dir=str(tmp_path / "mine"))).run(qfile)
        with pytest.raises(RunError, match="KB indexed with"):
            Runner("rag", run, ctx.replace(kb_dir=str(tmp_path / "kb-rendered"))).run(qfile)
        with pytest.raises(RunError, match="KB items"):
            Runner("rag", run, ctx_for(server, kb_dir)).run(qfile)
        calls = server.calls
        served = ctx.replace(request_timeout=99.0, max_concurrency=2)  # serving only: resumes
        assert Runner("rag", run, served).run(qfile).finished == 2
    assert server.calls - calls == 4 and len(read_predictions(run / "predictions.jsonl")) == 3


def test_a_checkpoint_left_from_other_settings_is_never_resumed(tmp_path, kb_dir):
    """Records put back to an earlier commit keep, in the (uncommitted) checkpoints, the
    questions they dropped; answered again on another KB, those came back from the old
    checkpoints without a call (the MAB-DQA records, which predate the manifest's KB field, got
    24 answers from an OCR'd KB that way). A question's thread is tied to its settings now."""
    qfile, run, kb = questions(tmp_path, 2), tmp_path / "run", tmp_path / "kb"
    shutil.copytree(kb_dir, kb)
    with ScriptedServer() as server:
        Runner("rag", run, ctx_for(server, kb)).run(qfile, limit=1)
        committed = {f: (run / f).read_text() for f in ("manifest.json", "predictions.jsonl")}
        Runner("rag", run, ctx_for(server, kb)).run(qfile)  # q1 answered, then put back:
        older = json.loads(committed["manifest.json"])
        older.pop("kb", None)  # as a manifest written before the field
        (run / "manifest.json").write_text(json.dumps(older))
        (run / "predictions.jsonl").write_text(committed["predictions.jsonl"])
        KnowledgeBase(kb).add([Item("text", "k99", "Fact 99 about town 1.", title="Town 1")])
        calls = server.calls
        assert Runner("rag", run, ctx_for(server, kb)).run(qfile).finished == 1
    assert server.calls - calls == 2  # q1 answered afresh on this KB, not read back


KILL_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from scripted_server import ScriptedServer, deterministic_reply
from hopgraph.config import Context
from hopgraph.harness.runner import Runner
with ScriptedServer(delay=float(sys.argv[1])) as server:
    ctx = Context(base_url=server.base_url, model="scripted", kb_dir={kb!r})
    Runner("rag", {run!r}, ctx).run({questions!r}, concurrency=2)
"""


def test_sigkill_mid_run_then_resume_loses_and_duplicates_nothing(tmp_path, kb_dir):
    qfile = questions(tmp_path, 10)
    run = tmp_path / "run"
    script = tmp_path / "run_script.py"
    script.write_text(
        textwrap.dedent(KILL_SCRIPT).format(
            tests=str(TESTS), kb=str(kb_dir), run=str(run), questions=str(qfile)
        )
    )
    proc = started("0.15", script=script)
    preds = run / "predictions.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if preds.exists() and len(preds.read_text().splitlines()) >= 3:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = len(preds.read_text().splitlines())
    assert 3 <= before < 10
    python(script, "0")
    ids = [json.loads(x)["id"] for x in preds.read_text().splitlines()]
    assert sorted(ids) == sorted(f"q{i}" for i in range(10))  # each exactly once


RESUME_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from hopgraph.harness.runner import Runner
from hopgraph.graphs import every_context
ctx = every_context()(base_url=sys.argv[1], model="scripted", kb_dir={kb!r})
Runner("qdrag", {run!r}, ctx).run({questions!r})
"""


def test_a_question_killed_mid_node_keeps_each_call_once_and_counts_what_the_endpoint_got(
    tmp_path, kb_dir
):
    """Issue 74: kill -9 inside QDRAG's reranking (its P(Yes) calls coming back one by one),
    then resume. The endpoint's log is the truth: every call it answered is in the trace once,
    the calls in flight at the kill are counted as lost, and those the resumed node made again
    are marked replayed; less those, the question made the calls of an uninterrupted run."""
    qfile = questions(tmp_path, 1)
    script = tmp_path / "resume_script.py"
    script.write_text(
        textwrap.dedent(RESUME_SCRIPT).format(
            tests=str(TESTS), kb=str(kb_dir), run=str(tmp_path / "run"), questions=str(qfile)
        )
    )
    stagger = {"on": False, "n": 0}

    def reply(body):
        if stagger["on"] and body.get("logprobs"):  # P(Yes) replies come back one by one
            stagger["n"] += 1
            time.sleep(0.3 * stagger["n"])
        return deterministic_reply(body)

    def answered_p_yes() -> int:
        return sum(bool(body.get("logprobs")) for body, _ in list(server.log))

    with ScriptedServer(reply) as server:
        Runner("qdrag", tmp_path / "fresh", ctx_for(server, kb_dir)).run(qfile)
        uninterrupted = read_predictions(tmp_path / "fresh" / "predictions.jsonl")["q0"]
        assert uninterrupted["error"] is None
        server.log.clear()
        stagger["on"] = True
        proc = started(server.base_url, script=script)
        deadline = time.monotonic() + 120
        while answered_p_yes() < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)  # two P(Yes) back, the others in flight
        proc.wait()
        stagger["on"] = False
        time.sleep(0.3 * stagger["n"] + 1)  # the endpoint answers the calls whose caller died
        python(script, server.base_url)
        received = len(server.log)
    pred = read_predictions(tmp_path / "run" / "predictions.jsonl")["q0"]
    records = trace_records(trace_path(tmp_path / "run", "q0"))
    calls = [
        r["data"]
        for r in records
        if r.get("mode") == "custom" and r["data"].get("event") == "llm_call"
    ]
    lost, replayed = pred.get("lost_calls", 0), pred.get("replayed_calls", 0)
    assert [r["data"]["resume"] for r in records if r.get("mode") == "start"] == [False, True]
    # the second logged reply may still be on the wire at the kill: then it is lost, not replayed
    assert lost >= 1 and replayed >= 1
    assert pred["llm_calls"] == received == len(calls) + lost  # each call the endpoint got, once
    assert pred["llm_calls"] - replayed - lost == uninterrupted["llm_calls"]
    (marks,) = [
        r["data"]
        for r in records
        if r.get("mode") == "custom" and r["data"].get("event") == "resume_marks"
    ]
    assert len(marks["replayed"]) == replayed and len(marks["lost"]) == lost
    assert pred["answer"] == uninterrupted["answer"]


def test_the_checkpoint_thread_names_the_llama_cpp_build():
    from hopgraph.harness.run_folder import settings_key

    m = {"context": {"top_k": 5}, "gguf_sha256": "ab", "prompts": {}, "kb": {}}
    assert settings_key(m, ["AVX2"]) != settings_key(m, ["AVX2", "AVX512"])
    assert settings_key(m, None) == settings_key(m)


def test_eval_with_citation_judge_and_compare(tmp_path, kb_dir):
    from hopgraph.agents.judge import supports
    from hopgraph.evals.evaluate import evaluate_run, headline

    qfile = questions(tmp_path, 3)
    with ScriptedServer() as server:
        ctx = ctx_for(server, kb_dir)
        Runner("rag", tmp_path / "run", ctx).run(qfile)
        assert supports("Fact.", "Claim.", ctx)  # the scripted judge answers Yes

        def judge(evidence, claim):
            return supports(evidence, claim, ctx)

        result = evaluate_run(tmp_path / "run", judge=judge, kb=KnowledgeBase(kb_dir))
    overall = result["overall"]
    assert overall["citation_recall"] == 1.0 and overall["citation_precision"] == 1.0
    assert overall["em"] == 0.0 and overall["llm_calls"] == 2  # scripted answers are not gold
    assert dict(headline(result))["citation_recall"] == 1.0
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["questions"] == 3


def test_citation_scores_last_and_a_resumed_run_judges_only_its_new_questions(tmp_path, kb_dir):
    """Judging a record's citations takes the LLM about a minute a question on CPU. A plain
    re-score (the commit of a resumed run) used to drop every judged score, and each
    ``--citations`` judged all questions again; now a question keeps its scores while its
    response and contexts stand, and a new judge judges afresh."""
    qfile = questions(tmp_path, 5)
    with ScriptedServer() as server:
        Runner("rag", tmp_path / "run", ctx_for(server, kb_dir)).run(qfile, limit=3)
    claims: list[str] = []

    def judge(evidence, claim):
        claims.append(claim)
        return True

    kb = KnowledgeBase(kb_dir)
    first = evaluate_run(tmp_path / "run", judge=judge, kb=kb, judge_name="j1")
    per_run = len(claims)
    assert per_run >= 3 and first["overall"]["citation_recall"] == 1.0
    assert evaluate_run(tmp_path / "run")["overall"]["citation_recall"] == 1.0  # plain re-score
    evaluate_run(tmp_path / "run", judge=judge, kb=kb, judge_name="j1")
    assert len(claims) == per_run  # nothing judged twice
    with ScriptedServer() as server:
        Runner("rag", tmp_path / "run", ctx_for(server, kb_dir)).run(qfile)
    result = evaluate_run(tmp_path / "run", judge=judge, kb=kb, judge_name="j1")
    assert len(claims) == per_run + per_run * 2 // 3  # the two new questions only
    assert sorted(result["citations"]["questions"]) == [f"q{i}" for i in range(5)]
    evaluate_run(tmp_path / "run", judge=judge, kb=kb, judge_name="j2")
    assert len(claims) == per_run * 5 // 3 * 2  # another judge: every question anew
    each, stop = per_run // 3, {"after": len(claims) + 2 * per_run // 3}

    def interrupted(evidence, claim):  # stopped (Ctrl-C, a timeout) on the third question
        if len(claims) == stop["after"]:
            raise RuntimeError("stopped")
        return judge(evidence, claim)

    with pytest.raises(RuntimeError):
        evaluate_run(tmp_path / "run", judge=interrupted, kb=kb, judge_name="j3")
    stop["after"] = -1
    evaluate_run(tmp_path / "run", judge=interrupted, kb=kb, judge_name="j3")
    assert len(claims) == per_run * 5 // 3 * 3  # the two judged before the stop were kept
    assert each * 3 == per_run


def test_cli_run_eval_trace_compare(tmp_path, kb_dir):
    qfile = questions(tmp_path, 2)
    with ScriptedServer() as server:
        common = ["--kb", str(kb_dir), "--base-url", server.base_url, "--model", "scripted"]
        for name in ("a", "b"):
            out = hopgraph(
                "run", "--agent", "rag", "--questions", qfile, "--out", tmp_path / name, *common
            )
            assert out.returncode == 0, out.stderr
            assert "2 finished, 0 failed" in out.stdout
        out = hopgraph("eval", tmp_path / "b", "--citations", *common[2:])
        assert out.returncode == 0, out.stderr
        assert "citations judged: 2/2" in out.stderr and "citation_recall" in out.stdout
        judge = json.loads((tmp_path / "b" / "metrics.json").read_text())["citations"]["judge"]
        assert judge.startswith("scripted common/supports ")
    run = hopgraph
    out = run("eval", str(tmp_path / "a"))
    assert out.returncode == 0 and "recall@5" not in out.stderr and "llm_calls" in out.stdout
    assert "by prompt template" in out.stdout and "rag/short_answer" in out.stdout
    out = run("trace", str(tmp_path / "a"), "q0")
    assert "● retrieve" in out.stdout and "llm generator [rag/answer]" in out.stdout
    mermaid = run("trace", str(tmp_path / "a"), "q0", "--format", "mermaid").stdout
    assert mermaid.startswith("flowchart TD")  # pasteable as it is: no id line above it
    assert "report.html" in run("trace", str(tmp_path / "a"), "--format", "html").stdout
    out = run("compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert out.returncode == 0 and "+0.000" in out.stdout
    out = run("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--common")
    assert out.returncode == 0 and "2 vs 2 questions" in out.stdout
    out = run("compare", str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "a"))
    assert out.returncode == 0 and "2 vs 2 vs 2 questions" in out.stdout
    out = run(
        "compare",
        str(tmp_path / "a"),
        str(tmp_path / "b"),
        "--metric",
        "f1",
        "--metric",
        "prompt_tokens",
        "--metric",
        "bogus",
    )
    assert out.returncode == 0 and "f1" in out.stdout and "prompt_tokens" in out.stdout
    assert "llm_calls" not in out.stdout and "no run has: bogus" in out.stderr
    assert run("compare", str(tmp_path / "a")).returncode == 2


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_stops_promptly_and_starts_nothing_new(tmp_path, kb_dir, sig):
    qfile = questions(tmp_path, 10)
    run = tmp_path / "run"
    script = tmp_path / "run_script.py"
    script.write_text(
        "import signal\nfrom hopgraph.models.embedded import install_sigterm_handler\n"
        "install_sigterm_handler()\n"
        + textwrap.dedent(KILL_SCRIPT).format(
            tests=str(TESTS), kb=str(kb_dir), run=str(run), questions=str(qfile)
        )
    )
    proc = started("0.5", script=script, sigint=True)
    preds = run / "predictions.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (preds.exists() and preds.read_text().strip()):
        time.sleep(0.05)
    written = len(preds.read_text().splitlines())
    os.kill(proc.pid, sig)
    proc.wait(timeout=60)
    # in-flight questions finish, queued ones never start: at most the two in flight when the
    # lines were counted, and one that finished and let another start before the signal came
    # (no wall-clock bound: a loaded CI machine took 5.2 s to wind down two 0.5 s calls)
    assert len(preds.read_text().splitlines()) <= written + 3 < 10
    python(script, "0")
    assert sorted(json.loads(x)["id"] for x in preds.read_text().splitlines()) == sorted(
        f"q{i}" for i in range(10)
    )


def test_compare_rescores_a_run_that_went_on_after_eval(tmp_path):
    import os

    from hopgraph.evals.evaluate import evaluate_run, load_metrics

    preds = tmp_path / "predictions.jsonl"
    line = '{{"id": "q{}", "answer": "Lund", "gold": ["Lund"], "error": null}}\n'
    preds.write_text(line.format(0))
    assert evaluate_run(tmp_path)["questions"] == 1
    assert load_metrics(tmp_path)["questions"] == 1  # fresh: read back as written
    with preds.open("a") as f:
        f.write(line.format(1))
    later = (tmp_path / "metrics.json").stat().st_mtime + 5
    os.utime(preds, (later, later))
    assert load_metrics(tmp_path)["questions"] == 2


def test_compare_labels_runs_by_folder_name_unless_names_collide():
    from hopgraph.cli.app import run_labels

    assert run_labels(["runs/x/full", "other/similarity"]) == ["full", "similarity"]
    assert run_labels(["a/full", "b/full"]) == ["a/full", "b/full"]


def test_a_run_folder_is_a_committable_record_that_resumes_in_a_fresh_clone(tmp_path, kb_dir):
    """Prediction lines hold ids, outputs and counts, never the question or gold text; git
    keeps a record's packed traces and ignores its checkpoints and open traces; eval joins
    gold back from the question file; a clone holding only manifest + predictions resumes
    the rest."""
    from hopgraph.evals.evaluate import evaluate_run
    from hopgraph.harness.run_folder import scored_predictions

    record = TESTS.parent / "benchmarks" / "results" / "test-dataset" / f"rag-{os.getpid()}"
    qfile = questions(tmp_path)
    try:
        with ScriptedServer() as server:
            Runner("rag", record, ctx_for(server, kb_dir)).run(qfile, limit=4)
        lines = (record / "predictions.jsonl").read_text()
        assert "What about town" not in lines and '"gold"' not in lines
        man = json.loads((record / "manifest.json").read_text())
        assert man["machine"]["cores"] and man["command"] and len(man["sittings"]) == 1
        tracked = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all", str(record)],
            cwd=TESTS.parent,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        names = sorted(Path(line[3:]).name for line in tracked.splitlines())
        traces = [f"q{i}.jsonl.gz" for i in range(4)]  # a record keeps its traces, packed
        assert names == ["manifest.json", "predictions.jsonl", *traces], tracked
        assert "em" in evaluate_run(record)["overall"]  # scored: gold joined from the file
        assert scored_predictions(record)["q2"]["gold"] == ["answer-2"]
        # a fresh clone: only what git keeps; the run resumes the two questions left
        for p in [record / "checkpoints.sqlite", *(record / "traces").iterdir()]:
            p.unlink()
        with ScriptedServer() as server:
            summary = Runner("rag", record, ctx_for(server, kb_dir)).run(qfile)
        assert (summary.skipped_done, summary.finished) == (4, 2)
        assert len(json.loads((record / "manifest.json").read_text())["sittings"]) == 2
        # the script re-run on a finished record: nothing to answer, the manifest is untouched
        # (it used to gain a sitting and a new revision and endpoint on every re-run)
        before = (record / "manifest.json").read_text()
        with ScriptedServer() as server:
            summary = Runner("rag", record, ctx_for(server, kb_dir)).run(qfile)
        assert (summary.skipped_done, summary.finished) == (6, 0)
        assert (record / "manifest.json").read_text() == before
        qfile.write_text(qfile.read_text().replace("answer-1", "other"))
        with pytest.raises(RunError, match="needs its question file .* other content"):
            evaluate_run(record)
    finally:
        import shutil

        shutil.rmtree(record.parent, ignore_errors=True)


def test_a_run_stops_after_consecutive_failures_and_resumes(tmp_path, kb_dir):
    """An endpoint that starts answering 500 mid-run stops the run after five failures in a
    row, instead of walking every question; the same command later finishes the rest."""
    from hopgraph.harness.runner import RunAborted

    qfile = questions(tmp_path, 30)
    broken = {"on": False}

    def reply(body):
        if broken["on"]:
            raise RuntimeError("down")  # the scripted server answers 500
        return deterministic_reply(body)

    with ScriptedServer(reply) as server:
        ctx = ctx_for(server, kb_dir)
        runner = Runner("rag", tmp_path / "run", ctx)
        runner.run(qfile, limit=3)
        broken["on"] = True
        with pytest.raises(RunAborted, match="5 questions in a row failed") as caught:
            runner.run(qfile)
        assert "HTTP 500" in str(caught.value)
        stopped = caught.value.summary  # the one question already in flight finishes too
        assert stopped.failed in (5, 6) and stopped.finished == 0
        broken["on"] = False
        again = Runner("rag", tmp_path / "run", ctx).run(qfile)
    assert again.failed == 0 and again.finished == 27 and again.skipped_done == 3
    ids = [
        json.loads(x)["id"]
        for x in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()
    ]
    assert sorted(ids) == sorted(f"q{i}" for i in range(30))


def test_ask_shows_each_step_live_then_numbered_citations(tmp_path, kb_dir):
    """Piped (not a terminal), ask prints plain lines as the graph runs: each node starting and
    ending with what it wrote, the calls and retrievals inside, then the answer and sources."""
    with ScriptedServer() as server:
        out = hopgraph(
            "ask",
            "What about town 3?",
            "--agent",
            "qdrag",
            "--kb",
            kb_dir,
            *scripted(server.base_url),
            "--out",
            tmp_path / "ask",
        )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    order = [
        next(i for i, ln in enumerate(lines) if ln.startswith(p))
        for p in (
            "Q: What about town 3?",
            "▶ retrieve",
            "    retrieve 'What about town 3?'",
            "● retrieve  contexts=[text-",
            "▶ decompose",
            "▶ rerank",
            "    llm reranker",
            "● select  kept=",
            "▶ generate",
            "    llm generator [rag/answer]",
            "● generate",
            "A: answer-",
            "  [1] Town 3: Fact number 3 about town 3.",
        )
    ]
    assert order == sorted(order)
    from hopgraph.harness.run_folder import trace_ids, trace_records

    traces = [trace_records(t) for t in trace_ids(tmp_path / "ask")]
    assert traces and all(r.get("mode") != "tasks" for t in traces for r in t)  # not kept


def test_a_record_refuses_answers_from_other_method_code_unless_accepted(
    tmp_path, kb_dir, monkeypatch
):
    """Table 3's columns were answered by two revisions of the planner and nothing said so.
    Each sitting and answer records the fingerprint of the method's own code; a record made
    by other code is refused (naming the modules that changed) unless the user accepts the
    change, and RESULTS.md then says that the table mixes code."""
    from hopgraph.harness.code_fingerprint import method_files
    from hopgraph.presentation import results

    qfile, run = questions(tmp_path, 3), tmp_path / "results" / "rag-run"
    with ScriptedServer() as server:
        ctx = ctx_for(server, kb_dir)
        Runner("rag", run, ctx).run(qfile, limit=1)
        man = json.loads((run / "manifest.json").read_text())
        code = man["code"]
        assert (
            "hopgraph.agents.generator" in code["files"] and "hopgraph.graphs.rag" in code["files"]
        )
        assert not any(
            m.startswith(("hopgraph.cli", "hopgraph.harness", "hopgraph.evals"))
            for m in code["files"]
        )
        assert set(method_files("hopgraph.graphs.rag")) == set(code["files"])
        (first,) = read_predictions(run / "predictions.jsonl").values()
        assert first["code"] == code["fingerprint"] == man["sittings"][0]["code"]
        # as if the first answer came from an older generator
        old = {
            "fingerprint": "0ld0ld0ld0ld",
            "files": code["files"]
            | {"hopgraph.agents.generator": "0" * 16, "hopgraph.tools.gone": "1" * 16},
        }
        (run / "manifest.json").write_text(json.dumps(man | {"code": old}))
        (run / "predictions.jsonl").write_text(json.dumps(first | {"code": "0ld0ld0ld0ld"}) + "\n")
        with pytest.raises(RunError) as refused:
            Runner("rag", run, ctx).run(qfile)
        assert "hopgraph.agents.generator (edited)" in str(refused.value)
        assert "hopgraph.tools.gone (no longer used)" in str(refused.value)
        assert len(read_predictions(run / "predictions.jsonl")) == 1  # nothing was answered
        assert Runner("rag", run, ctx, accept_code_change=True).run(qfile).finished == 2
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path / "results")
    table = results.RunTable("rag", "t", "f", {"rag": "rag-run"}, ["em"])
    (line, _) = results._code_lines(table, {"rag": {}})
    assert (
        "Mixed code" in line and f"{code['fingerprint']} (2)" in line and "0ld0ld0ld0ld (1)" in line
    )
    assert results.code_by_column(table, ["rag"])["rag"].total() == 3


def test_the_runner_takes_questions_already_read_and_one_type_owns_the_folder(tmp_path, kb_dir):
    """Issue 60 item 4: the CLI parsed the question file, then the runner hashed and read it
    again; manifest.json was read or written by path in nine places across four files."""
    import ast

    import hopgraph
    from hopgraph.harness.run_folder import QuestionSet, RunFolder

    qfile = questions(tmp_path, n=2)
    read = QuestionSet.read(qfile)
    qfile.rename(tmp_path / "moved.jsonl")  # the runner must not need the file again
    with ScriptedServer(deterministic_reply) as server:
        summary = Runner("rag", tmp_path / "run", ctx_for(server, kb_dir)).run(read)
    assert summary.finished == 2
    folder = RunFolder(tmp_path / "run")
    assert folder.manifest()["questions_sha256"] == read.sha256
    assert sorted(folder.done()) == sorted(q.id for q in read.questions)

    root = Path(hopgraph.__file__).parent
    # the package's own modules: not the tests, nor a work folder git ignores (a pinned
    # worktree under runs/, a virtual environment), which are not walked at all
    own = [
        top
        for top in root.iterdir()
        if top.name not in {"tests", "benchmarks", "runs", "demo"} and not top.name.startswith(".")
    ]
    named = [
        f"{path.relative_to(root)}:{node.lineno}"
        for top in own
        for path in ([top] if top.is_file() else top.rglob("*"))
        if path.suffix == ".py"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and node.value == "manifest.json"
    ]
    assert named and all(n.startswith("harness/run_folder.py:") for n in named), named


def test_compare_reads_under_80_columns_warns_of_two_models_and_no_cache_speedup(tmp_path, kb_dir):
    """issue 72: a 95 % interval beside "not significant" unexplained, no word when the runs
    used different models, seconds saved by the response cache counted as "better", and a
    table folded past reading in a narrow terminal."""
    qfile = questions(tmp_path, 4)
    with ScriptedServer(delay=0.05) as server:
        ctx = ctx_for(server, kb_dir).replace(response_cache=str(tmp_path / "cache"))
        Runner("rag", tmp_path / "a", ctx).run(qfile)
        Runner("rag", tmp_path / "b", ctx).run(qfile)  # every reply from the cache
    with ScriptedServer(model="other") as server:
        Runner("rag", tmp_path / "c", ctx_for(server, kb_dir).replace(model="other")).run(qfile)
    for run in "abc":
        evaluate_run(tmp_path / run)
    env = {"COLUMNS": "80"}
    out = hopgraph("compare", "a", "b", "--metric", "seconds", cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    assert "seconds, b:" not in out.stdout  # every question cached: nothing to test
    assert "The verdict is the sign test's" in out.stdout
    assert "different models" not in out.stderr
    out = hopgraph("compare", "a", "c", "--metric", "f1", cwd=tmp_path, env=env)
    assert "the runs used different models (a: scripted, c: other)" in " ".join(out.stderr.split())
    said = " ".join(out.stdout.split())
    assert "f1, c:" in said and "better/worse/tied" in said and "sign p" in said


def test_every_question_id_has_its_own_trace_file(tmp_path, kb_dir):
    """Ids a file name cannot hold as they are (``col/1`` beside ``col_1`` and ``col?1``, two
    long ids alike in their first 120 characters) each get a trace of their own, read back by
    id (before: they shared ``col_1.jsonl``, and ``trace`` showed one's retrieval as the
    other's); an id the old name held whole keeps it, so old records read as they did."""
    from hopgraph.harness.run_folder import trace_name

    long = "x" * 121
    ids = ["col/1", "col_1", "col?1", "COL_1", long + "a", long + "b"]
    path = tmp_path / "q.jsonl"
    write_questions(
        [Question(q, f"What about town {i}?", [f"answer-{i}"], []) for i, q in enumerate(ids)], path
    )
    with ScriptedServer() as server:
        summary = Runner("rag", tmp_path / "run", ctx_for(server, kb_dir)).run(path)
    assert summary.finished == len(ids)
    paths = {trace_path(tmp_path / "run", q) for q in ids}
    assert len(paths) == len(ids) and len({p.name.lower() for p in paths}) == len(ids)
    for i, q in enumerate(ids):
        (start, *_) = trace_records(trace_path(tmp_path / "run", q))
        assert start["data"]["id"] == q
        calls = [
            r["data"]
            for r in trace_records(trace_path(tmp_path / "run", q))
            if r.get("mode") == "custom" and r["data"].get("event") == "llm_call"
        ]
        assert calls and all(f"What about town {i}?" in json.dumps(c) for c in calls)
    assert trace_name("5a727bc85542994cef4bc2d2") == "5a727bc85542994cef4bc2d2"
    assert trace_name("demo-06") == "demo-06"


def killed_at(run: Path, lost: Callable[[dict], bool], writes_of_kept: bool = True) -> str:
    """Make a finished local run's q1 look as a kill -9 left it: the checkpoints whose
    metadata ``lost`` picks gone with their writes (and the kept ones' writes too unless
    ``writes_of_kept``), its prediction line gone. Returns q1's thread id."""
    import sqlite3

    db = sqlite3.connect(run / "checkpoints.sqlite")
    (thread,) = {t for (t,) in db.execute("SELECT thread_id FROM checkpoints") if t.endswith(":q1")}
    rows = db.execute(
        "SELECT checkpoint_id, metadata FROM checkpoints WHERE thread_id = ?", (thread,)
    ).fetchall()
    gone = [c for c, m in rows if lost(json.loads(m))]
    assert gone and len(gone) < len(rows)
    db.executemany("DELETE FROM checkpoints WHERE checkpoint_id = ?", [(c,) for c in gone])
    writes = gone + ([] if writes_of_kept else [c for c, _ in rows if c not in gone])
    db.executemany("DELETE FROM writes WHERE checkpoint_id = ?", [(c,) for c in writes])
    db.commit()
    db.close()
    log = run / "predictions.jsonl"
    log.write_text(
        "".join(x + "\n" for x in log.read_text().splitlines() if json.loads(x)["id"] != "q1")
    )
    return thread


KILLED_STATES = {
    # a kill -9 in a question's first moments: its input checkpoint alone, with or without
    # the input's own writes (without them the graph showed a next step and "resumed" into
    # nothing)
    "input only": (lambda m: m["source"] != "input", True),
    "input only, its writes lost": (lambda m: m["source"] != "input", False),
    # after a step's writes were saved, before the checkpoint that follows it: kept are the
    # input's, admit_question's and the checkpoint of step 1 with retrieve's writes on it
    "a step's writes, not its checkpoint": (lambda m: m["step"] > 1, True),
}


@pytest.mark.parametrize("state", list(KILLED_STATES))
def test_a_question_killed_in_any_state_is_answered_as_an_uninterrupted_run(
    tmp_path, kb_dir, state
):
    """The states a kill -9 leaves a question in: each resume took it for a finished graph
    and wrote ``answer: ""`` with no error (after a step's writes, its calls counted: one of
    optimize's candidates scored a question 0 so; LangGraph's snapshot shows no next step
    there, as it applies the writes), and every later re-run counted it done. It runs from
    the start, or on from its step, and its answer is the uninterrupted run's."""
    lost, writes_of_kept = KILLED_STATES[state]
    qfile = questions(tmp_path, 3)
    with ScriptedServer() as server:
        ctx = ctx_for(server, kb_dir)
        Runner("rag", tmp_path / "whole", ctx).run(qfile)
        killed = tmp_path / "killed"
        Runner("rag", killed, ctx).run(qfile)
        thread = killed_at(killed, lost, writes_of_kept)
        runner = Runner("rag", killed, ctx)
        if state.startswith("a step"):  # the snapshot that looked finished
            snapshot = runner.graph.get_state({"configurable": {"thread_id": thread}})
            assert not snapshot.next and snapshot.tasks
        again = runner.run(qfile)
    assert again.finished == 1 and again.failed == 0
    log = killed / "predictions.jsonl"
    whole, resumed = (
        read_predictions(tmp_path / "whole" / "predictions.jsonl"),
        read_predictions(log),
    )
    assert resumed["q1"]["answer"] == whole["q1"]["answer"] != ""
    assert {q: p["answer"] for q, p in resumed.items()} == {
        q: p["answer"] for q, p in whole.items()
    }
    assert [json.loads(x)["id"] for x in log.read_text().splitlines()].count("q1") == 1


def test_kill_9_twice_at_concurrency_2_then_resume_answers_as_an_uninterrupted_run(
    tmp_path, kb_dir
):
    """The natural race: killed once as soon as a trace holds anything (a question may have
    only its input checkpoint), again a few questions later, then resumed: every answer is
    the uninterrupted run's, none empty, no line twice."""
    qfile = questions(tmp_path, 10)
    with ScriptedServer() as server:
        Runner("rag", tmp_path / "whole", ctx_for(server, kb_dir)).run(qfile, concurrency=2)
    run = tmp_path / "run"
    script = tmp_path / "run_script.py"
    script.write_text(
        textwrap.dedent(KILL_SCRIPT).format(
            tests=str(TESTS), kb=str(kb_dir), run=str(run), questions=str(qfile)
        )
    )
    preds = run / "predictions.jsonl"

    def lines() -> int:
        return len(preds.read_text().splitlines()) if preds.exists() else 0

    def traced() -> bool:
        return any(p.stat().st_size for p in (run / "traces").glob("*")) if run.exists() else False

    for ready in (traced, lambda: lines() >= 4):
        proc = started("0.1", script=script)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not ready() and proc.poll() is None:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert lines() < 10
    python(script, "0")
    rows = [json.loads(x) for x in preds.read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(f"q{i}" for i in range(10))
    whole = read_predictions(tmp_path / "whole" / "predictions.jsonl")
    bad = [
        (r["id"], r["answer"], r["error"], r["llm_calls"])
        for r in rows
        if not r["answer"] or r["error"]
    ]
    assert not bad
    assert {r["id"]: r["answer"] for r in rows} == {q: p["answer"] for q, p in whole.items()}


def test_a_run_that_fails_ends_only_after_the_questions_in_flight(tmp_path, kb_dir):
    """A write that fails (a full disk) while another question is in flight: ``run`` raised at
    once and the other question went on running while the interpreter exited, where its graph's
    own thread pool refused work ("cannot schedule new futures after interpreter shutdown") and
    a traceback reached the user after the one-line error. The run now lets the questions in
    flight end (nothing new starts) before it raises."""
    import errno
    import threading

    from hopgraph.harness.run_folder import DiskFull

    failed, running = threading.Event(), []

    def run_question(q):
        running.append(q.id)
        try:
            if q.id != "q0":
                failed.wait(timeout=60)  # starts its graph only once the first write has failed
            return real_run(q)
        finally:
            running.remove(q.id)

    def accept(pred, records):
        failed.set()
        raise DiskFull(errno.ENOSPC, "no space left on the device", "predictions.jsonl")

    with ScriptedServer(delay=0.2) as server:
        runner = Runner("rag", tmp_path / "run", ctx_for(server, kb_dir))
        real_run = runner.run_question
        runner.run_question, runner.accept = run_question, accept  # type: ignore[method-assign]
        with pytest.raises(DiskFull):
            runner.run(questions(tmp_path, 4), concurrency=2)
        assert running == []
