"""LlamaIndex's engines as peers (benchmarks/peers/llamaindex.py), run through ``hopgraph run
--graph`` on the scripted endpoint: LlamaIndex's own prompts reach the endpoint through its
OpenAI-compatible LLM class, every call is counted with its usage, ids are the KB's, and a
question the sub-question engine cannot decompose falls back to its base engine, counted."""

import importlib.util
import json
from pathlib import Path

import pytest
from scripted_server import ScriptedServer
from servers import hopgraph, scripted

from hopgraph.config import Context

pytest.importorskip("llama_index.llms.openai_like", reason="the peers extra is not installed")
PEERS = Path(__file__).resolve().parents[1] / "benchmarks" / "peers" / "llamaindex.py"


def questions(tmp_path, n=2):
    qfile = tmp_path / "q.jsonl"
    qs = [
        {
            "id": f"q{i}",
            "question": f"Which fact is about town {i} and town {i + 1}?",
            "answers": [f"Fact {i}"],
        }
        for i in range(n)
    ]
    qfile.write_text("".join(json.dumps(q) + "\n" for q in qs))
    return qfile


def run(graph, tmp_path, kb, script):
    with ScriptedServer(script) as server:
        out = hopgraph(
            "run",
            "--graph",
            f"{PEERS}:{graph}",
            "--questions",
            questions(tmp_path),
            "--kb",
            kb,
            *scripted(server.base_url),
            "--out",
            graph,
            cwd=tmp_path,
        )
        assert out.returncode == 0, out.stdout + out.stderr
        calls = server.calls
    lines = (tmp_path / graph / "predictions.jsonl").read_text().splitlines()
    return [json.loads(x) for x in lines], calls


def prompt_of(body):
    return "\n".join(str(m["content"]) for m in body["messages"])


def test_the_sub_question_engine_asks_llamaindexs_prompts_and_is_counted(tmp_path, town_kb):
    seen = []

    def script(body):
        prompt = prompt_of(body)
        seen.append(prompt)
        if body["_template"] == "rag/short_answer":
            return "Fact 1"
        if "sub_question" in prompt and "tool_name" in prompt:  # LlamaIndex's question generator
            town = prompt.rsplit("about town ", 1)[1].split(" ")[0]
            subs = [
                {"sub_question": f"What is known about town {t}?", "tool_name": "passages"}
                for t in (town, str(int(town) + 1))
            ]
            return "```json\n" + json.dumps({"items": subs}) + "\n```"
        return "Fact one."

    preds, calls = run("subquestion", tmp_path, town_kb, script)
    assert calls == 2 * 5  # generate, two sub-answers, the answer, our short answer
    for p in preds:
        assert p["answer"] == "Fact 1" and p["error"] is None
        assert p["llm_calls"] == 5 and p["prompt_tokens"] == 50 and p["completion_tokens"] == 25
        assert p["by_template"]["llamaindex/subquestion"]["calls"] == 4
        ids = p["contexts_ids"]  # the KB's ids, each once, no sub-answer node among them
        assert len(set(ids)) == len(ids) >= 5 and all(c.startswith("text-") for c in ids)
        assert p["fallbacks"] == 0
    assert any("Sub question: What is known about town 1?" in s for s in seen)
    assert not any("kb_id" in s for s in seen)  # our id bookkeeping never reaches the model
    assert hopgraph("eval", "subquestion", cwd=tmp_path).returncode == 0


def test_a_question_it_cannot_decompose_falls_back_to_the_base_engine(tmp_path, town_kb):
    def script(body):
        prompt = prompt_of(body)
        if body["_template"] == "rag/short_answer":
            return "Fact 0"
        if "sub_question" in prompt and "tool_name" in prompt:
            return "I would ask about the towns."  # no JSON
        return "Fact zero."

    preds, calls = run("subquestion", tmp_path, town_kb, script)
    assert calls == 2 * 3  # generate (unparsed), the base engine's answer, our short answer
    assert all(p["fallbacks"] == 1 and p["answer"] == "Fact 0" for p in preds)
    assert all(len(p["contexts_ids"]) == 5 for p in preds)  # the raw question's top-k


def test_the_citation_engine_cites_kb_ids(tmp_path, town_kb):
    def script(body):
        prompt = prompt_of(body)
        if body["_template"] == "rag/short_answer":
            return "Fact 1"
        assert "Source 1:" in prompt  # LlamaIndex's citation prompt over numbered chunks
        return "Town one holds Fact 1 [1], and town two another [2]. Also [9]."

    preds, calls = run("citation", tmp_path, town_kb, script)
    assert calls == 2 * 2
    for p in preds:
        assert p["llm_calls"] == 2 and len(p["contexts_ids"]) == 5
        assert p["citations"] == p["contexts_ids"][:2]
        assert p["invalid_citations"] == [9]
        assert p["response"].startswith("Town one holds Fact 1 [1]")
    out = hopgraph("eval", "citation", cwd=tmp_path)
    assert out.returncode == 0, out.stderr


def test_each_question_closes_the_http_client_it_opened():
    """A question's LlamaIndex LLM talks through its own httpx client (it counts the calls);
    the client is closed when the question is done, not left to the garbage collector."""
    spec = importlib.util.spec_from_file_location("peers_llamaindex", PEERS)
    peers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peers)
    ctx = Context(base_url="http://127.0.0.1:9/v1", model="scripted")
    with peers.llm(ctx, "llamaindex/citation") as model:
        client = model._http_client
        assert not client.is_closed
    assert client.is_closed


@pytest.mark.integration
def test_a_peer_on_the_embedded_model_counts_llama_cpps_usage(tmp_path, town_kb):
    """The real path: the embedded server started by the run, LlamaIndex fitting prompts with
    the GGUF's own tokenizer, whole (unstreamed) replies and their usage counted."""
    qfile = questions(tmp_path, n=1)
    out = hopgraph(
        "run",
        "--graph",
        f"{PEERS}:citation",
        "--questions",
        qfile,
        "--kb",
        town_kb,
        "--model",
        "smollm2-135m",
        "--set",
        "max_tokens=48",
        "--out",
        "real",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    (p,) = [
        json.loads(x) for x in (tmp_path / "real" / "predictions.jsonl").read_text().splitlines()
    ]
    assert p["error"] is None and p["llm_calls"] == 2, p
    peer = p["by_template"]["llamaindex/citation"]
    assert peer["calls"] == 1 and peer["prompt_tokens"] > 50 and peer["completion_tokens"] > 0
    assert len(p["contexts_ids"]) == 5
