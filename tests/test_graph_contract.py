"""The one contract every graph speaks: InputState in, OutputState out, and a question's
images reach every graph, which sends them to the VLM as data URLs (and refuses them, before
any model call, where no VLM is configured)."""

import json

import pytest
from PIL import Image
from scripted_server import ScriptedServer, by_template

from hopgraph.graphs import GRAPHS, every_context, load_graph
from hopgraph.harness.run_folder import read_predictions
from hopgraph.harness.runner import Runner
from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.questions.datasets import Question, write_questions

Context = every_context()  # every built-in method's knobs


@pytest.mark.parametrize("agent", list(GRAPHS))
def test_every_graph_declares_the_shared_input_and_output_schemas(agent):
    graph = load_graph(agent)
    inp, out = graph.get_input_jsonschema(), graph.get_output_jsonschema()
    assert {"id", "question", "images", "doc"} <= set(inp["properties"])
    assert inp["required"] == ["question"]
    assert {"answer", "response", "evidence", "citations", "invalid_citations"} <= set(
        out["properties"]
    )


@pytest.mark.parametrize("agent", list(GRAPHS))
def test_every_graph_enters_through_the_question_admission(agent):
    """contract_builder puts the admission (image roots, client limits, a VLM for images)
    before the graph's own first node: no graph places it by hand, none can skip it."""
    builder = load_graph(agent).builder
    assert [b for a, b in builder.edges if a == "__start__"] == ["admit_question"]
    assert "__start__" not in builder.branches


@pytest.fixture
def photo(tmp_path):
    path = tmp_path / "flag.png"
    Image.new("RGB", (24, 16), (200, 30, 30)).save(path)
    return path


@pytest.fixture
def kb_dir(tmp_path):
    KnowledgeBase(tmp_path / "kb").add(
        [
            *(
                Item("text", f"k{i}", f"The flag of Esterlund {i} is red.", title="Esterlund")
                for i in range(3)
            ),
            *(
                Item(
                    "page",
                    f"esterlund#{p}",
                    f"Page {p}: Esterlund's flag is red.",
                    source="esterlund",
                    page=p,
                )
                for p in (1, 2, 3)
            ),
        ]
    )
    return tmp_path / "kb"


def _image_parts(body):
    content = body["messages"][-1]["content"]
    return [] if isinstance(content, str) else [p for p in content if p["type"] == "image_url"]


QUESTION_CALLS = {  # the calls that carry the question's picture, per agent
    "direct": {"direct/answer"},
    "rag": {"rag/answer"},
    "qdrag": {"qdrag/decompose_qdc", "rag/answer"},
    "mmapg": {"mmapg/plan", "mmapg/reason"},
    "mabdqa": {"mabdqa/answer"},
}


@pytest.mark.parametrize("agent", list(GRAPHS))
def test_a_question_image_reaches_the_vlm_as_a_data_url(agent, tmp_path, kb_dir, photo):
    """Before, only rag and direct took a question's image; the others refused it."""
    seen = []

    def reply(body):
        seen.append(body)
        return "Esterlund [1]."

    qfile = tmp_path / "q.jsonl"
    write_questions(
        [
            Question(
                "img-1", "Whose flag is this?", ["Esterlund"], images=[str(photo)], doc="esterlund"
            )
        ],
        qfile,
    )
    with ScriptedServer(reply) as llm, ScriptedServer(reply, model="vlm") as vlm:
        ctx = Context(
            base_url=llm.base_url,
            model="scripted",
            vlm_base_url=vlm.base_url,
            vlm_model="vlm",
            kb_dir=str(kb_dir),
            mmapg_max_iterations=1,
            mabdqa_m=2,
        )
        Runner(agent, tmp_path / "run", ctx).run(qfile)
    pred = read_predictions(tmp_path / "run" / "predictions.jsonl")["img-1"]
    assert pred["error"] is None, pred["error"]
    from hopgraph.harness.run_folder import trace_path, trace_records

    trace = trace_records(trace_path(tmp_path / "run", "img-1"))
    calls = [
        r["data"]
        for r in trace
        if r.get("mode") == "custom" and r["data"].get("event") == "llm_call"
    ]
    with_picture = {c["template"] for c in calls if c["extra"].get("images")}
    assert QUESTION_CALLS[agent] <= with_picture, with_picture
    for body in seen:
        for part in _image_parts(body):  # the picture, as a data URL, to the VLM
            assert part["image_url"]["url"].startswith("data:image/") and body["model"] == "vlm"


@pytest.mark.parametrize("agent", list(GRAPHS))
def test_an_image_question_is_never_answered_blind(agent, tmp_path, kb_dir, photo):
    """No VLM configured: a clear error, and no model was asked anything."""
    seen = []
    qfile = tmp_path / "q.jsonl"
    write_questions(
        [Question("img-2", "Whose flag is this?", images=[str(photo)], doc="report.pdf")], qfile
    )
    with ScriptedServer(lambda body: seen.append(body) or "x") as server:
        ctx = Context(base_url=server.base_url, model="scripted", kb_dir=str(kb_dir))
        Runner(agent, tmp_path / "run", ctx).run(qfile)
    error = read_predictions(tmp_path / "run" / "predictions.jsonl")["img-2"]["error"]
    assert "'img-2' has an image" in error, error
    assert seen == []


def test_the_input_reaches_every_graph_state(tmp_path, photo):
    """What the runner sends lands in the graph's state, images and doc included."""
    from langgraph.checkpoint.memory import InMemorySaver

    for agent in GRAPHS:
        graph = load_graph(agent).builder.compile(
            checkpointer=InMemorySaver(), interrupt_before="*"
        )
        config = {"configurable": {"thread_id": agent}}
        payload = {"id": "q", "question": "Q?", "images": [str(photo)], "doc": "d.pdf"}
        graph.invoke(payload, config, context=Context())
        values = graph.get_state(config).values
        assert {k: values.get(k) for k in payload} == payload, agent
        assert json.dumps(values)  # plain data, checkpointable


def test_a_graph_runs_by_itself_with_a_context_and_a_script_keyed_by_template(kb_dir):
    """No runner: ``graph.invoke(input, context=Context(...))`` gives the OutputState, and the
    scripted model answers each role by the template its request names."""
    script = by_template(
        {"rag/answer": "It is Esterlund's flag [1].", "rag/short_answer": "Esterlund"}
    )
    with ScriptedServer(script) as server:
        ctx = Context(base_url=server.base_url, model="scripted", kb_dir=str(kb_dir), top_k=2)
        out = load_graph("rag").invoke({"question": "Whose flag is red?"}, context=ctx)
    assert set(out) == {"answer", "response", "evidence", "citations", "invalid_citations"}
    assert out["answer"] == "Esterlund" and out["citations"] == [out["evidence"][0]["id"]]
    assert len(out["evidence"]) == 2 and out["evidence"][0]["title"] == "Esterlund"
