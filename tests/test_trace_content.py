"""Traces you can debug a prompt with (issue 62): every LLM call's event keeps the messages the
endpoint received and the reply it sent, the settings sent and what was read from the reply."""

import json
import sys
from pathlib import Path

import pytest
from servers import scripted

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from bench_agents import setup

    return setup(tmp_path_factory.mktemp("demo"))


AGENTS = {
    "rag": ("rag", {}),
    "qdrag-qdc": ("qdrag", {"qdrag_mode": "qdc"}),
    "mmapg": ("mmapg", {"mmapg_max_iterations": 3}),
    "mabdqa": ("mabdqa", {"mabdqa_judge": "p_yes", "mabdqa_m": 4}),
}


@pytest.mark.parametrize("name", AGENTS)
def test_every_call_in_the_trace_is_what_the_endpoint_received_and_replied(name, demo, tmp_path):
    from before_after import reply
    from scripted_server import ScriptedServer

    from hopgraph.graphs import every_context

    Context = every_context()
    from hopgraph.harness.run_folder import trace_ids, trace_records
    from hopgraph.harness.runner import Runner

    kb, qfile, qdoc = demo
    agent, fields = AGENTS[name]
    with ScriptedServer(reply) as server:
        ctx = Context(
            base_url=server.base_url,
            model="scripted",
            kb_dir=str(kb),
            api_key="sk-secret-key-1234",
            **fields,
        )
        run = tmp_path / name
        summary = Runner(agent, run, ctx).run(qdoc if agent == "mabdqa" else qfile, limit=2)
    assert summary.finished == 2 and summary.failed == 0
    received = [
        (json.dumps(body["messages"], sort_keys=True), body, sent) for body, sent in server.log
    ]
    calls = []
    for path in trace_ids(run):
        records = trace_records(path)
        assert "sk-secret-key-1234" not in json.dumps(records)  # no key reaches a trace
        events = [r["data"] for r in records if r.get("mode") == "custom"]
        calls += [e for e in events if e.get("event") == "llm_call"]
    assert len(calls) == len(received) and calls, (len(calls), len(received))
    left = list(received)
    for call in calls:
        key = json.dumps(call["messages"], sort_keys=True)
        match = next(
            (
                r
                for r in left
                if r[0] == key
                and r[2] == call["reply"]
                and all(r[1].get(k) == v for k, v in call["sampling"].items())
            ),
            None,
        )
        assert match is not None, f"{call['role']}: no request with these messages and reply"
        left.remove(match)
        if call["kind"] == "structured":
            assert call["parsed"] == json.loads(call["reply"]) or call["parse_error"]
        if call["kind"] == "p_yes":
            assert 0 <= call["parsed"]["p_yes"] <= 1 and call["parsed"]["top_logprobs"]


def test_a_trace_cap_cuts_each_text_and_says_how_much(endpoint):
    from hopgraph.models.chat import user

    long = "word " * 400
    events = []
    model = endpoint(["a reply " * 100]).model_client(trace_cap=100, on_event=events.append)
    model.complete([user(long)], role="test")
    (call,) = [e for e in events if e["event"] == "llm_call"]
    text = call["messages"][0]["content"]
    assert text.startswith(long[:100]) and "1900 more characters cut (trace_text_cap 100)" in text
    assert call["reply"].endswith("700 more characters cut (trace_text_cap 100)]")


def test_an_image_is_traced_by_reference_never_its_bytes(endpoint, tmp_path):
    from PIL import Image

    from hopgraph.models.chat import user

    Image.new("RGB", (64, 64), "red").save(tmp_path / "red.png")
    events = []
    model = endpoint(["a red square"]).model_client(on_event=events.append)
    model.complete([user("What is shown?", [tmp_path / "red.png"])], role="test")
    (call,) = [e for e in events if e["event"] == "llm_call"]
    image, text = call["messages"][0]["content"]
    assert image["image_url"].startswith("image/") and "sha256:" in image["image_url"]
    assert "base64" not in json.dumps(call) and text["text"] == "What is shown?"


def test_trace_shows_each_calls_prompt_and_a_swapped_template_is_named(tmp_path, town_kb):
    """After a template swap, `hopgraph trace A B QID` names the swapped template's calls as
    the ones whose prompt changed, and shows where the replies first diverge."""

    from before_after import reply
    from scripted_server import ScriptedServer

    root = Path(__file__).resolve().parents[1]
    overlay = tmp_path / "mine" / "rag"
    overlay.mkdir(parents=True)
    answer = (root / "prompts" / "rag" / "answer.j2").read_text()
    (overlay / "answer.j2").write_text(answer + "\nAnswer in one short sentence.\n")
    (tmp_path / "q.jsonl").write_text('{"id": "q1", "question": "What is fact 3 about?"}\n')

    from servers import hopgraph as cli

    def hopgraph(*args):
        out = cli(*args, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        return out.stdout

    with ScriptedServer(reply) as server:
        base = [
            "run",
            "--agent",
            "rag",
            "--questions",
            "q.jsonl",
            "--kb",
            str(town_kb),
            *scripted(server.base_url),
        ]
        hopgraph(*base, "--out", "a")
        hopgraph(*base, "--out", "b", "--prompts", "mine")
    shown = hopgraph("trace", "b", "q1", "--calls")
    assert "Answer in one short sentence." in shown and "┌ reply" in shown
    assert "Fact 3 about town 3." in shown  # the retrieved context as the model got it
    diff = hopgraph("trace", "a", "b", "q1")
    assert "prompts changed in 1 by an edited template: rag/answer (1); in 1 by their " in diff
    assert "inputs (earlier replies, other evidence): rag/short_answer (1)" in diff
    assert "first reply that differs: call 0 (rag/answer), whose prompt changed" in diff


def test_content_tracing_can_be_turned_off(endpoint):
    from hopgraph.models.chat import user

    events = []
    endpoint(["a reply"]).model_client(trace_cap=-1, on_event=events.append).complete(
        [user("a question")], role="test"
    )
    (call,) = [e for e in events if e["event"] == "llm_call"]
    assert call["messages"] == [] and call["reply"] is None and call["sampling"]["max_tokens"]


CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--enable-logging=stderr",
    "--v=0",
]


@pytest.mark.skipif(
    __import__("shutil").which("chromium") is None,
    reason="chromium not installed (.ci/run installs it)",
)
@pytest.mark.parametrize("name", AGENTS)
def test_the_report_is_a_trace_viewer_in_a_real_browser(name, demo, tmp_path):
    """Per question: the drawing, each node in order with its retrievals (hits with their
    text, kept and cited marked) and its calls (prompt and reply, collapsed); for MMAPG a
    planning-graph node's panel (instruction, parents, hits, content) opens on click, here
    through the link ``report.html#QID:NODE`` that runs the same handler."""
    import html as htmlmod
    import re
    import subprocess

    from before_after import reply
    from scripted_server import ScriptedServer

    from hopgraph.graphs import every_context

    Context = every_context()
    from hopgraph.evals.evaluate import evaluate_run
    from hopgraph.harness.run_folder import read_predictions, trace_path, trace_records
    from hopgraph.harness.runner import Runner
    from hopgraph.harness.trace import Trace
    from hopgraph.presentation import report

    kb, qfile, qdoc = demo
    agent, fields = AGENTS[name]
    with ScriptedServer(reply) as server:
        ctx = Context(base_url=server.base_url, model="scripted", kb_dir=str(kb), **fields)
        Runner(agent, tmp_path / "run", ctx).run(qdoc if agent == "mabdqa" else qfile, limit=1)
    ((qid, pred),) = read_predictions(tmp_path / "run" / "predictions.jsonl").items()
    records = trace_records(trace_path(tmp_path / "run", qid))
    calls = [c.event for c in Trace.of(records).calls]
    page = report.render_html(tmp_path / "run", evaluate_run(tmp_path / "run"))
    url = page.as_uri() + (f"#{qid}:Q1" if agent == "mmapg" else "")
    profile = [f"--user-data-dir={tmp_path / 'profile'}"]
    out = subprocess.run(
        ["chromium", *CHROMIUM_FLAGS, *profile, "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    dom = out.stdout
    assert "Uncaught" not in out.stderr
    assert dom.count('<li class="step">') >= 2
    assert len(re.findall(r"<details class=\"call[^\"]*\" open", dom)) == len(calls) > 0
    first = report.message_text(calls[0]["messages"][-1]).splitlines()[0]
    assert htmlmod.escape(first, quote=False) in dom  # the prompt the model got is on the page
    assert htmlmod.escape(calls[0]["reply"].splitlines()[0], quote=False) in dom
    if pred.get("citations"):
        assert 'class="hit kept cited"' in dom
    if agent == "mmapg":
        assert '<div class="node-detail" data-for="Q1">' in dom  # shown
        assert '<div class="node-detail" data-for="Q0" hidden="">' in dom  # the others hidden
    shot = tmp_path / f"{name}.png"
    subprocess.run(
        [
            "chromium",
            *CHROMIUM_FLAGS,
            *profile,
            f"--screenshot={shot}",
            "--window-size=1200,1600",
            url,
        ],
        capture_output=True,
        timeout=180,
    )
    assert shot.exists() and shot.stat().st_size > 20_000


def test_a_record_keeps_its_traces_packed_and_every_reader_reads_them(tmp_path):
    """Records dropped every trace (.gitignore), so a reader of RESULTS.md could not see why a
    question was lost. A finished question's trace is packed (traces/<qid>.jsonl.gz, which a
    record commits); trace, the report and compare --format html read it; a question retried
    in a later sitting keeps both sittings in one packed trace."""
    from scripted_server import ScriptedServer
    from servers import hopgraph

    from hopgraph.harness.run_folder import packed, trace_path, trace_records

    (tmp_path / "q.jsonl").write_text(
        '{"id": "q0", "question": "What is fact 0?"}\n{"id": "q1", "question": "What is fact 1?"}\n'
    )
    fail = {"on": True}

    def reply(body):
        if fail["on"] and "fact 1?" in str(body["messages"]):
            raise RuntimeError("down for q1")
        return "answer-x"

    with ScriptedServer(reply) as server:
        args = [
            "run",
            "--agent",
            "direct",
            "--questions",
            "q.jsonl",
            *scripted(server.base_url),
            "--set",
            "max_retries=0",
        ]
        assert hopgraph(*args, "--out", "a", cwd=tmp_path).returncode == 3  # q1 failed
        fail["on"] = False
        assert hopgraph(*args, "--out", "a", cwd=tmp_path).returncode == 0  # q1 retried
        assert hopgraph(*args, "--out", "b", cwd=tmp_path).returncode == 0
    for qid in ("q0", "q1"):
        path = trace_path(tmp_path / "a", qid)
        assert packed(path).exists() and not path.exists()
    starts = [r for r in trace_records(trace_path(tmp_path / "a", "q1")) if r["mode"] == "start"]
    assert len(starts) == 2  # the failed sitting and the retry, one packed trace
    shown = hopgraph("trace", "a", "q0", "--calls", cwd=tmp_path)
    assert shown.returncode == 0 and "answer-x" in shown.stdout
    report = hopgraph("trace", "a", "--format", "html", cwd=tmp_path)
    assert report.returncode == 0 and "answer-x" in (tmp_path / "a" / "report.html").read_text()
    flips = hopgraph("compare", "a", "b", "--format", "html", "--out", "f.html", cwd=tmp_path)
    assert flips.returncode == 0, flips.stderr
    assert hopgraph("trace", "a", "b", "q0", cwd=tmp_path).returncode == 0
