"""The sixth method of examples/ (Self-Ask), run through ``hopgraph run --graph`` on the scripted
endpoint: its own templates, its hops, a cited answer over what the hops read, and compare."""

import json
from pathlib import Path

from scripted_server import ScriptedServer, by_template
from servers import hopgraph, scripted

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "self_ask" / "graph.py"


def test_self_ask_hops_then_answers_with_citations_and_compares_with_rag(tmp_path, town_kb):
    qfile = tmp_path / "q.jsonl"
    qs = [
        {"id": f"q{i}", "question": f"Which fact is about town {i}?", "answers": [f"Fact {i}"]}
        for i in range(3)
    ]
    qfile.write_text("".join(json.dumps(q) + "\n" for q in qs))

    def follow_up(body):
        prompt = json.dumps(body["messages"])
        if "Steps so far" in prompt:  # one hop is enough here
            return json.dumps({"follow_up": ""})
        town = prompt.split("about town ")[1][0]
        return json.dumps({"follow_up": f"What is known about town {town}?"})

    script = by_template(
        {
            "self_ask/next": follow_up,
            "self_ask/intermediate": "a fact",
            "rag/answer": "It is Fact one [1].",
            "rag/short_answer": "Fact 1",
        }
    )
    with ScriptedServer(script) as server:
        common = [
            "--questions",
            qfile,
            "--kb",
            town_kb,
            *scripted(server.base_url),
        ]
        out = hopgraph("run", "--graph", f"{EXAMPLE}:graph", *common, "--out", "ask", cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        assert "3 finished, 0 failed" in out.stdout
        assert server.calls == 3 * 5  # next, intermediate, next, answer, short answer
        out = hopgraph("run", "--agent", "rag", *common, "--out", "rag", cwd=tmp_path)
        assert out.returncode == 0, out.stderr
    preds = [
        json.loads(x) for x in (tmp_path / "ask" / "predictions.jsonl").read_text().split("\n") if x
    ]
    assert [p["answer"] for p in preds] == ["Fact 1"] * 3
    assert all(p["citations"] for p in preds)
    trace = hopgraph("trace", "ask", "q2", cwd=tmp_path).stdout
    assert "● ask" in trace and "● hop" in trace and "● finish" in trace
    assert "What is known about town 2?" in trace
    man = json.loads((tmp_path / "ask" / "manifest.json").read_text())
    assert set(man["prompts"]) >= {"self_ask/next", "self_ask/intermediate", "rag/answer"}
    for run in ("ask", "rag"):
        assert hopgraph("eval", run, cwd=tmp_path).returncode == 0
    out = hopgraph("compare", "rag", "ask", "--metric", "em", cwd=tmp_path)
    assert out.returncode == 0 and "sign" in out.stdout.lower(), out.stdout + out.stderr
