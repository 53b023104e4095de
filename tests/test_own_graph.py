"""A graph of one's own, run through hopgraph: ``--graph file.py:graph`` gets resume,
checkpoints, traces, eval and the code fingerprint; a graph off the contract is refused with
what it lacks. The graphs are defined here, in the test file."""

import json
from pathlib import Path
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from scripted_server import ScriptedServer
from servers import hopgraph, scripted

from hopgraph.agents.generator import generate_cited_answer
from hopgraph.config import Context
from hopgraph.graphs.shared import InputState, OutputState, cited_output
from hopgraph.tools.retrieval import search


class State(InputState, total=False):
    contexts: list
    answer: str
    response: str


def retrieve(state: State, runtime: Runtime[Context]) -> State:
    return {"contexts": search(state["question"], runtime.context, k=3)}


def generate(state: State, runtime: Runtime[Context]) -> State:
    out = generate_cited_answer(state["question"], state["contexts"], runtime.context)
    return cited_output(out, state["contexts"])


builder = StateGraph(
    State, context_schema=Context, input_schema=InputState, output_schema=OutputState
)
builder.add_node(retrieve)
builder.add_node(generate)
builder.add_edge(START, "retrieve")
builder.add_edge("retrieve", "generate")
builder.add_edge("generate", END)
graph = builder.compile(name="three-passages")


class Loose(TypedDict):
    text: str


off = StateGraph(Loose)
off.add_node("echo", lambda s: {"text": s["text"]})
off.add_edge(START, "echo")
off_contract = off.compile()


def test_your_own_graph_runs_resumes_traces_and_scores(tmp_path, town_kb):
    here = Path(__file__)
    qfile = tmp_path / "q.jsonl"
    lines = [
        {"id": f"q{i}", "question": f"What about town {i}?", "answers": [f"answer-{i}"]}
        for i in range(3)
    ]
    qfile.write_text("".join(json.dumps(q) + "\n" for q in lines))
    with ScriptedServer() as server:
        common = [
            "--questions",
            str(qfile),
            "--kb",
            str(town_kb),
            "--out",
            "run",
            *scripted(server.base_url),
        ]
        out = hopgraph("run", "--graph", f"{here}:graph", *common, "--limit", "2", cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        assert "2 finished, 0 failed" in out.stdout
        calls = server.calls
        out = hopgraph("run", "--graph", f"{here}:graph", *common, cwd=tmp_path)
        assert out.returncode == 0 and "1 finished, 0 failed, 2 already done" in out.stdout
        assert server.calls - calls == 2  # only the third question was answered
    man = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert man["agent"] == f"{here}:graph" and "hopgraph.tools.retrieval" in man["code"]["files"]
    assert any(m.startswith("hopgraph_user_") for m in man["code"]["files"])
    preds = [
        json.loads(x) for x in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()
    ]
    assert len(preds) == 3 and all(len(p["retrieved"]) == 3 for p in preds)
    out = hopgraph("trace", "run", "q0", cwd=tmp_path)
    assert "● retrieve" in out.stdout and "● generate" in out.stdout
    out = hopgraph("eval", "run", cwd=tmp_path)
    assert out.returncode == 0 and "llm_calls" in out.stdout


def test_a_graph_off_the_contract_is_refused_with_what_it_lacks(tmp_path):
    here = Path(__file__)
    (tmp_path / "q.jsonl").write_text('{"id": "a", "question": "Why?"}\n')
    out = hopgraph(
        "run",
        "--graph",
        f"{here}:off_contract",
        "--questions",
        "q.jsonl",
        "--out",
        "run",
        cwd=tmp_path,
    )
    assert out.returncode == 2 and not (tmp_path / "run").exists()
    assert "does not speak hopgraph's contract" in out.stderr
    assert (
        "input schema has no 'question'" in out.stderr and "no 'answer', 'response'" in out.stderr
    )
    out = hopgraph(
        "run", "--graph", f"{here}:nothing", "--questions", "q.jsonl", "--out", "run", cwd=tmp_path
    )
    assert out.returncode == 2 and "has no 'nothing'" in out.stderr
    out = hopgraph("run", "--questions", "q.jsonl", "--out", "run", cwd=tmp_path)
    assert out.returncode == 2 and "name a graph" in out.stderr


def test_a_package_registers_its_graph_by_entry_point(monkeypatch):
    import importlib.metadata

    from hopgraph import graphs

    mine = importlib.metadata.EntryPoint("mine", "test_own_graph:graph", graphs.ENTRY_POINTS)
    monkeypatch.setattr(
        importlib.metadata,
        "entry_points",
        lambda group: [mine] if group == graphs.ENTRY_POINTS else [],
    )
    found = graphs.registered()
    assert found["mine"] == "test_own_graph:graph" and found["rag"] == "hopgraph.graphs.rag:graph"
    monkeypatch.setattr(graphs, "GRAPHS", found)
    assert (
        graphs.load_graph("mine").name == graph.name
        and graphs.module_of("mine") == "test_own_graph"
    )
