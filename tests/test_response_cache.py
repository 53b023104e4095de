"""The opt-in response cache: a greedy request made before is answered from the cache (and
counted), a sampled one never is, a corrupt entry is a miss, and processes share one cache."""

import json
import sqlite3
import subprocess
import sys

from scripted import ScriptedEndpoint, completion
from scripted_server import ScriptedServer
from servers import hopgraph

from hopgraph.config import Context
from hopgraph.harness.run_folder import read_predictions
from hopgraph.harness.runner import Runner
from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.models.chat import user
from hopgraph.models.response_cache import FILE, ResponseCache
from hopgraph.questions.datasets import Question, write_questions


def model(endpoint, folder):
    m = endpoint.model_client()
    m.cache = ResponseCache(folder)
    return m


def test_a_greedy_request_is_served_once_and_a_sampled_one_every_time(tmp_path):
    ep = ScriptedEndpoint([completion("Lund")] * 4)
    m = model(ep, tmp_path)
    events = []
    m.on_event = lambda e: e["event"] == "llm_call" and events.append(e)
    ask = [user("Where was Ada born?")]
    assert m.complete(ask, role="r", template="t") == "Lund"
    assert m.complete(ask, role="r", template="t") == "Lund"
    assert len(ep.requests) == 1 and len(m.cache) == 1
    assert [e["extra"].get("cached", False) for e in events] == [False, True]
    assert events[1]["prompt_tokens"] == 7  # the stored usage: tokens still compare
    m.complete([user("Where was Bo born?")], role="r", template="t")  # another request
    m.complete(ask, role="r", template="t", max_tokens=9)  # other settings: another request
    assert len(ep.requests) == 3
    sampled = ScriptedEndpoint([completion("a"), completion("b")])
    s = model(sampled, tmp_path / "s")
    assert [s.complete(ask, role="r", temperature=0.8) for _ in range(2)] == ["a", "b"]
    assert len(s.cache) == 0


def test_a_corrupt_entry_is_a_miss_never_a_wrong_answer(tmp_path):
    ep = ScriptedEndpoint([completion("Lund"), completion("Lund")])
    m = model(ep, tmp_path)
    m.complete([user("q")], role="r")
    with sqlite3.connect(tmp_path / FILE) as db:
        db.execute("UPDATE responses SET body = '{\"choices\": [garbage'")
    assert m.complete([user("q")], role="r") == "Lund" and len(ep.requests) == 2


def test_processes_share_one_cache(tmp_path):
    code = (
        "import sys; sys.path.insert(0, sys.argv[2]);"
        "from scripted import ScriptedEndpoint, completion;"
        "from hopgraph.models.chat import user;"
        "from hopgraph.models.response_cache import ResponseCache;"
        "m = ScriptedEndpoint([completion('from the other process')]).model_client();"
        "m.cache = ResponseCache(sys.argv[1]);"
        "print(m.complete([user('q')], role='r'))"
    )
    tests = str(__import__("pathlib").Path(__file__).parent)
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path), tests],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    ep = ScriptedEndpoint([])  # no reply scripted: a request would fail the test
    assert model(ep, tmp_path).complete([user("q")], role="r") == "from the other process"


def test_a_rerun_after_a_prompt_change_pays_only_for_the_changed_calls(tmp_path):
    """The README's worked example in small: rag with its short-answer prompt edited; every
    answer call is the same request as before, so only the short answers are made again."""
    kb = tmp_path / "kb"
    KnowledgeBase(kb).add([Item("text", f"k{i}", f"Town {i} has {i} bridges.") for i in range(6)])
    qfile = tmp_path / "q.jsonl"
    write_questions(
        [Question(f"q{i}", f"How many bridges has town {i}?", [str(i)]) for i in range(5)], qfile
    )
    mine = tmp_path / "mine" / "rag"
    mine.mkdir(parents=True)
    (mine / "short_answer.j2").write_text(
        "Short answer, one word only. If the question asks yes or no, answer yes or no.\n"
        "{{ question }}"
    )
    cache = str(tmp_path / "cache")

    def reply(body):  # the edit makes the model answer "Yes" for towns 0, 2 and 4
        text = json.dumps(body["messages"])
        if "Short answer" not in text:
            return "It has that many [1]."
        town = text.split("bridges has town ")[1][0]
        return "Yes" if "yes or no" in text and int(town) % 2 == 0 else town

    with ScriptedServer(reply) as server:
        ctx = Context(
            base_url=server.base_url, model="scripted", kb_dir=str(kb), response_cache=cache
        )
        Runner("rag", tmp_path / "before", ctx).run(qfile)
        first = server.calls
        Runner("rag", tmp_path / "after", ctx.replace(prompts_dir=str(tmp_path / "mine"))).run(
            qfile
        )
        second = server.calls - first
    before = read_predictions(tmp_path / "before" / "predictions.jsonl")
    after = read_predictions(tmp_path / "after" / "predictions.jsonl")
    assert first == 10 and second == 5  # two calls a question; only the edited one again
    assert all(p["cache_hits"] == 1 and p["llm_calls"] == 2 for p in after.values())
    assert all("cache_hits" not in p for p in before.values())
    from hopgraph.evals.evaluate import evaluate_run

    assert evaluate_run(tmp_path / "after")["overall"]["cache_hits"] == 1
    manifest = json.loads((tmp_path / "after" / "manifest.json").read_text())
    assert manifest["context"]["response_cache"] == cache
    # compare: the verdict and the three questions the edit turned wrong
    evaluate_run(tmp_path / "before")
    out = hopgraph(
        "compare",
        "before",
        "after",
        "--metric",
        "em",
        "--metric",
        "cache_hits",
        "--questions",
        cwd=tmp_path,
        env={"COLUMNS": "200"},
    )
    assert out.returncode == 0, out.stderr
    assert "0/3/2" in out.stdout and "not significant" in out.stdout  # em: 3 worse, 2 tied
    lost = out.stdout.split("em: right -> wrong (3)")[1].split("em: wrong -> right (0)")[0]
    assert all(q in lost for q in ("q0", "q2", "q4")) and "'Yes'" in lost
    # the trace diff of one question: retrieval alike, the answer node read the edited prompt
    runs = [str(tmp_path / "before"), str(tmp_path / "after")]
    out = hopgraph("trace", *runs, "q1")
    assert out.returncode == 0, out.stderr
    assert "first divergence at step 2: edited template rag/short_answer" in out.stdout
    assert out.stdout.splitlines()[3].startswith("▶ 2 generate [rag/answer")
    page = tmp_path / "diff.html"
    out = hopgraph("trace", *runs, "q1", "--format", "html", "--html", page)
    assert out.returncode == 0, out.stderr
    assert "first diverge at step 2" in page.read_text() and page.read_text().count("<svg") == 2
    bad = hopgraph("trace", *runs, "nope")
    assert bad.returncode == 2 and "no trace for question 'nope'" in bad.stderr
