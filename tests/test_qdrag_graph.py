import json
import os
import time

import pytest
from scripted_server import ScriptedServer, by_template

from hopgraph.agents.qdrag import QDCOutput
from hopgraph.graphs import every_context
from hopgraph.harness.run_folder import read_predictions, trace_records
from hopgraph.harness.runner import Runner
from hopgraph.harness.trace import Trace
from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.presentation.report import graph_view
from hopgraph.questions.datasets import Question, write_questions
from hopgraph.tools.replies import qdc_subquestions

Context = every_context()  # every built-in method's knobs

PLAN = [
    {"id": "Q1", "question": "Who founded Town 3?"},
    {"id": "Q2", "question": "Where was <Ans_of_Q1> born?"},
]


def reply_for(plan):
    """Each role's reply, keyed by the template its request names."""

    def rerank(body):  # only passages about towns 3 and 4 are relevant
        passage = body["messages"][0]["content"].split("Question:")[0]
        return "Yes" if ("Town 3" in passage or "Town 4" in passage) else "No"

    def sub_answer(body):
        return "Ada Moor" if "founded" in json.dumps(body["messages"]) else "Lund"

    qdc = {
        "replacements": [{"reference": "the old port", "entity": "Town 3"}],
        "subquestions": ["Who founded Town 3?", "What is Town 4 known for?"],
    }
    return by_template(
        {
            "qdrag/rerank": rerank,
            "qdrag/decompose_qdc": json.dumps(qdc),
            "qdrag/plan_qdr": json.dumps({"subquestions": plan}),
            "qdrag/sub_answer": sub_answer,
            "rag/answer": "Ada Moor was born in Lund [1][2].",
            "rag/short_answer": "Lund",
            "polarmem/parse_query": json.dumps({"positive": ["Lund"], "negative": []}),
        }
    )


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("kb")
    KnowledgeBase(path).add(
        [
            Item("text", f"k{i}", f"Town {i} was founded by person {i}.", title=f"Town {i}")
            for i in range(12)
        ]
    )
    return path


def run(tmp_path, kb_dir, plan=PLAN, **ctx_fields):
    qfile = tmp_path / "q.jsonl"
    write_questions(
        [Question("q1", "Where was the founder of the old port born?", ["Lund"])], qfile
    )
    with ScriptedServer(reply_for(plan)) as server:
        ctx = Context(base_url=server.base_url, model="scripted", kb_dir=str(kb_dir), **ctx_fields)
        runner = Runner("qdrag", tmp_path / "run", ctx)
        runner.run(qfile)
    final = runner.graph.get_state(runner.thread("q1")).values
    pred = read_predictions(tmp_path / "run" / "predictions.jsonl")["q1"]
    assert pred["error"] is None, pred["error"]
    records = trace_records(tmp_path / "run" / "traces" / "q1.jsonl")
    calls = [
        r["data"]
        for r in records
        if r.get("mode") == "custom" and r["data"].get("event") == "llm_call"
    ]
    return pred, calls, final, records


def test_qdc_makes_one_decomposition_call_and_keeps_relevant_contexts(tmp_path, kb_dir):
    pred, calls, final, records = run(tmp_path, kb_dir, qdrag_mode="qdc")
    assert [c["template"] for c in calls].count("qdrag/decompose_qdc") == 1
    subs = [s["question"] for s in final["subquestions"]]
    assert subs[:2] == [
        "Is the old port equivalent to Town 3?",
        "Where was the founder of Town 3 born?",  # the substitution, rebuilt: the reply left it out
    ]
    assert "What is Town 4 known for?" in subs
    # raw question + 4 subquestions, each reranking the 10 retrieved contexts
    assert [c["template"] for c in calls].count("qdrag/rerank") == 50
    # the rerankings run concurrently: the critical path is far shorter than the call count
    assert pred["llm_calls"] == 53 and pred["depth"] < pred["llm_calls"]
    kept_titles = {c["title"] for c in final["kept"]}
    assert {"Town 3", "Town 4"} <= kept_titles and len(final["kept"]) <= 5
    assert pred["answer"] == "Lund" and len(pred["citations"]) == 2
    view = graph_view(Trace.of(records))
    assert view["nodes"][0]["kind"] == "question" and any(
        n["kind"] == "retrieval" for n in view["nodes"]
    )


def test_qdc_drops_empty_and_self_replacements():
    out = QDCOutput.model_validate(
        {
            "replacements": [
                {"reference": "...", "entity": "..."},  # the reply format, copied
                {"reference": "Sid Haig", "entity": "sid haig"},  # a name replaced by itself
                {"reference": "the old port", "entity": "Town 3"},
            ],
            "subquestions": ["...", " Who founded Town 3? ", "Who founded Town 3?", "Q?"],
        }
    )
    subs, dropped, _ = qdc_subquestions(out, "Q?")
    assert subs == ["Is the old port equivalent to Town 3?", "Who founded Town 3?"]
    assert dropped == [
        "Is ... equivalent to ...?",
        "Is Sid Haig equivalent to sid haig?",
        "<the old port -> Town 3 substituted>",  # the phrase is not in "Q?": nothing to rebuild
        "...",
        "Q?",
    ]


def test_qdc_keeps_each_replacements_substituted_question_or_rebuilds_it():
    question = "Where was the founder of the old port born?"
    out = QDCOutput.model_validate(
        {
            "replacements": [
                {
                    "reference": "the founder of the old port",
                    "entity": "Ada Moor",
                    "substituted": "Where was Ada Moor born?",
                },
                {"reference": "The old port", "entity": "Town 3"},  # substitution left out
                {"reference": "the ferry", "entity": "Skarv", "substituted": "..."},
            ],
        }
    )
    subs, dropped, rebuilt = qdc_subquestions(out, question)
    assert subs == [
        "Is the founder of the old port equivalent to Ada Moor?",
        "Where was Ada Moor born?",
        "Is The old port equivalent to Town 3?",
        "Where was the founder of Town 3 born?",  # rebuilt: the entity in place of the phrase
        "Is the ferry equivalent to Skarv?",
    ]
    assert rebuilt == [{"given": "", "rebuilt": "Where was the founder of Town 3 born?"}]
    assert dropped == ["..."]  # "the ferry" is not in the question: nothing to rebuild


def test_qdr_resolves_placeholders_in_order(tmp_path, kb_dir):
    pred, calls, final, _ = run(tmp_path, kb_dir, qdrag_mode="qdr")
    solved = {s["id"]: s for s in final["solved"]}
    assert solved["Q1"]["answer"] == "Ada Moor"
    assert solved["Q2"]["question"] == "Where was Ada Moor born?"  # <Ans_of_Q1> filled
    assert len(solved["Q2"]["context_ids"]) == 10  # every resolved subquestion retrieves its own
    assert [c["template"] for c in calls].count("qdrag/plan_qdr") == 1


def test_qdr_refuses_a_cyclic_plan_and_still_answers(tmp_path, kb_dir):
    cyclic = [{"id": "Q1", "question": "a <Ans_of_Q2>"}, {"id": "Q2", "question": "b <Ans_of_Q1>"}]
    pred, _, final, records = run(tmp_path, kb_dir, plan=cyclic, qdrag_mode="qdr")
    assert "cycle" in final["plan_error"]
    (refused,) = [
        r["data"]
        for r in records
        if r.get("mode") == "custom" and r["data"].get("event") == "fallback"
    ]
    assert refused["role"] == "planner" and "cycle" in refused["reason"]
    assert pred["answer"] == "Lund" and pred["fallbacks"] == 1


def test_baselines_dense_sparse_and_no_entropy_budget(tmp_path, kb_dir):
    _, calls, final, _ = run(tmp_path / "dense", kb_dir, qdrag_mode="dense")
    assert not any(c["template"] == "qdrag/rerank" for c in calls) and len(final["kept"]) == 5
    _, calls, final, _ = run(tmp_path / "sparse", kb_dir, qdrag_mode="sparse")
    assert [c["template"] for c in calls].count("qdrag/rerank") == 10
    assert not any(c["template"].startswith("qdrag/decompose") for c in calls)
    _, _, final, _ = run(tmp_path / "flat", kb_dir, qdrag_mode="qdc", qdrag_entropy_budget=False)
    assert sorted(final["allocation"].values()) == [1, 1, 1, 1, 1]  # N = 5 over 5, equal


def test_qdarf_pairs_prefer_the_plan_that_recalls_gold(tmp_path, kb_dir):
    from hopgraph.agents.qdrag import preference_pairs
    from hopgraph.memory.kb import item_id

    plans = iter(
        [
            {"subquestions": [{"id": "Q1", "question": "Town 3 founded by person 3"}]},
            {"subquestions": [{"id": "Q1", "question": "bread recipes"}]},
            "not a plan",
        ]
    )

    def reply(body):
        nxt = next(plans)
        return nxt if isinstance(nxt, str) else json.dumps(nxt)

    gold = [item_id("text", "k3")]
    with ScriptedServer(reply) as server:
        ctx = Context(base_url=server.base_url, model="scripted", kb_dir=str(kb_dir), max_retries=1)
        pairs = preference_pairs(
            [Question("q", "Who founded Town 3?", evidence=gold)], ctx, samples=3, k=1, budget=5
        )
    (pair,) = pairs
    assert "Town 3" in pair["chosen"] and "bread" in pair["rejected"]
    assert pair["reward_chosen"] == 1.0 and pair["reward_rejected"] == 0.0
    assert pair["prompt"].startswith("Plan how to answer")


def test_qdr_can_steer_dependent_searches_with_grail(tmp_path, kb_dir):
    _, _, final, records = run(tmp_path, kb_dir, qdrag_mode="qdr", grail_mode="gap-fixed")
    solved = {s["id"]: s for s in final["solved"]}
    steered = [
        r["data"]
        for r in records
        if r.get("mode") == "custom"
        and r["data"].get("event") == "retrieval"
        and "mode" in r["data"]
    ]
    (event,) = steered  # only Q2 depends on another subquestion
    assert event["context"] == solved["Q1"]["context_ids"][:5] and event["g"] == pytest.approx(0.3)
    assert not set(solved["Q2"]["context_ids"]) & set(event["context"])


def test_qdrag_answers_with_polarmem_memories_as_fact_checks(tmp_path, kb_dir):
    from hopgraph.graphs.polarmem import polar_memory
    from hopgraph.memory.polarmem import Observation

    mem_dir = tmp_path / "mem"
    polar_memory(Context(polar_dir=str(mem_dir))).add(
        [
            Observation("text", "Lund's parish keeps Ada Moor's birth record.", has={"lund": 1}),
            Observation("text", "A harbour without any parish.", not_has={"lund": 1}),
        ]
    )
    prompts = []
    base = reply_for(PLAN)

    def reply(body):
        prompts.append(json.dumps(body["messages"]))
        return base(body)

    qfile = tmp_path / "q.jsonl"  # the parse's concept must stand in the question (grounding)
    write_questions([Question("q1", "Was Ada Moor born in Lund?", ["Lund"])], qfile)
    with ScriptedServer(reply) as server:
        ctx = Context(
            base_url=server.base_url,
            model="scripted",
            kb_dir=str(kb_dir),
            polar_memory=True,
            polar_dir=str(mem_dir),
        )
        Runner("qdrag", tmp_path / "run", ctx).run(qfile)
    assert read_predictions(tmp_path / "run" / "predictions.jsonl")["q1"]["error"] is None
    records = trace_records(tmp_path / "run" / "traces" / "q1.jsonl")
    (recalled,) = [
        r["data"]
        for r in records
        if r.get("mode") == "custom" and r["data"].get("event") == "memory_recall"
    ]
    assert recalled["positive"] == ["Lund"]
    (answer_prompt,) = [p for p in prompts if "Fact Check" in p]  # the cited answer's
    assert "Town 3 was founded" in answer_prompt  # beside the knowledge base's passages
    assert "[Fact Check: VERIFIED (lund)] Lund's parish" in answer_prompt
    assert "A harbour without any parish" not in answer_prompt  # verified absent: not recalled


def test_reranking_goes_in_order_to_a_one_at_a_time_server(monkeypatch):
    """llama-cpp-python's server keeps only the last prompt's KV cache: its P(Yes) calls go
    one by one in the passage-major order rerank laid out; llama-server's slots and a
    configured endpoint get several passages at once, each passage's calls in order from one
    worker (its prompt prefix stays in one slot), and the scores come back in the pairs' order."""
    import threading

    from hopgraph.agents import qdrag

    seen = []

    def relevance(question, context, ctx):
        seen.append((question, context["id"], threading.current_thread().name))
        time.sleep(0.001)  # lets the other workers interleave
        return float(f"{context['id'][1:]}.{len(question)}")

    monkeypatch.setattr(qdrag, "relevance", relevance)
    pairs = [(q, {"id": f"c{i}"}) for i in range(10) for q in ("q", "s1", "s2")]
    main = threading.current_thread().name
    qdrag.score_all(pairs, Context(model="qwen2.5-coder-1.5b", engine="llama-cpp-python"))
    assert [(q, c) for q, c, _ in seen] == [(q, c["id"]) for q, c in pairs]
    assert {t for *_, t in seen} == {main}
    for ctx in (
        Context(base_url="http://vllm:8000/v1", model="m"),
        Context(model="qwen2.5-coder-1.5b", engine="llama-server", slots=4),
    ):
        seen.clear()
        scores = qdrag.score_all(pairs, ctx)
        assert scores == [float(f"{c['id'][1:]}.{len(q)}") for q, c in pairs]
        assert sorted((q, c) for q, c, _ in seen) == sorted((q, c["id"]) for q, c in pairs)
        assert main not in {t for *_, t in seen}
        for i in range(10):
            calls = [(q, t) for q, c, t in seen if c == f"c{i}"]
            assert [q for q, _ in calls] == ["q", "s1", "s2"]
            assert len({t for _, t in calls}) == 1, f"passage c{i} went out from several workers"
        assert len({t for *_, t in seen}) > 1


def test_rerank_prompts_of_one_passage_differ_only_in_their_closing_question():
    """Reranking goes passage by passage: the instruction and the passage come first, so the
    calls on one passage reuse all of it from the server's KV cache and read only the question."""
    from hopgraph.agents.qdrag import RERANKER

    passage = {"title": "Town 3", "text": "Town 3 was founded by Ada Moor in 1820. " * 20}
    questions = ["Who founded Town 3?", "Where was the founder of the old port born?"]
    a, b = (RERANKER.render(Context(), question=q, context=passage) for q in questions)
    shared = len(os.path.commonprefix([a, b]))
    assert shared >= a.rindex("Question: ") + len("Question: ")
    assert passage["text"].strip() in a[:shared]
    assert a.rstrip().endswith(questions[0]) and b.rstrip().endswith(questions[1])


def test_qdc_drops_the_equivalence_check_of_a_passage_number():
    """A 1.5B model named the passage it read ("[1]") as the reference: "Is [1] equivalent to
    Christopher Nolan?" carries nothing to rerank with, and costs a call per context."""
    question = "Are the director of Inception and Sathish Kalathil both film directors?"
    out = QDCOutput.model_validate(
        {
            "replacements": [
                {"reference": "[1]", "entity": "Christopher Nolan", "substituted": ""},
                {"reference": "Passage 3", "entity": "Sathish Kalathil"},
                {
                    "reference": "the director of Inception",
                    "entity": "Christopher Nolan",
                    "substituted": "Are Christopher Nolan and Sathish Kalathil both directors?",
                },
            ],
            "subquestions": ["Is Christopher Nolan a film director?"],
        }
    )
    subs, dropped, _ = qdc_subquestions(out, question)
    assert subs == [
        "Is the director of Inception equivalent to Christopher Nolan?",
        "Are Christopher Nolan and Sathish Kalathil both directors?",
        "Is Christopher Nolan a film director?",
    ]
    assert "Is [1] equivalent to Christopher Nolan?" in dropped
    assert "Is Passage 3 equivalent to Sathish Kalathil?" in dropped


def test_a_subquestion_worded_as_the_raw_question_keeps_its_own_candidates(tmp_path, kb_dir):
    """Reranking is keyed by subquestion id: Q1 repeating the raw question no longer replaces
    the raw question's candidates (every context) with its own ten."""
    question = "Where was the founder of the old port born?"
    plan = [{"id": "Q1", "question": question}, PLAN[1] | {"id": "Q2"}]
    plan[1]["question"] = "Where was <Ans_of_Q1> born?"
    _, _, final, _ = run(tmp_path, kb_dir, plan=plan, qdrag_mode="qdr")
    assert set(final["scores"]) == {"raw", "Q1", "Q2"}
    every = {c["id"] for c in final["contexts"]}
    assert set(final["scores"]["raw"]) == every
    solved = {s["id"]: s for s in final["solved"]}
    assert set(final["scores"]["Q1"]) == set(solved["Q1"]["context_ids"])
    assert set(final["allocation"]) == {"raw", "Q1", "Q2"}


def test_qdarf_scores_a_two_step_plan_with_its_placeholder_resolved(monkeypatch, tmp_path):
    """Eq. 1's reward runs the plan as QD-R does: Q2 searches "Where was Ada Moor born?", which
    finds the second gold passage; with the placeholder deleted it searched "Where was born?"
    and the plan scored 0.5."""
    from hopgraph.agents import qdrag as qdarf

    passages = {"Town 3 was founded by Ada Moor.": "g1", "Ada Moor was born in Lund.": "g2"}

    def search(query, ctx, k, role):  # a scripted retriever: each passage for its question
        if "founded" in query:
            return [{"id": "g1", "text": "Town 3 was founded by Ada Moor.", "title": "Town 3"}]
        if "Ada Moor" in query:
            return [{"id": "g2", "text": "Ada Moor was born in Lund.", "title": "Ada Moor"}]
        return [{"id": "other", "text": "Bread recipes.", "title": "Bread"}]

    monkeypatch.setattr(qdarf, "search", search)
    with ScriptedServer(lambda body: "Ada Moor") as server:
        ctx = Context(base_url=server.base_url, model="scripted", kb_dir=str(tmp_path))
        reward = qdarf.plan_reward(PLAN, sorted(passages.values()), ctx, k=1, budget=5)
    assert reward == 1.0
