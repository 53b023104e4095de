"""The mabdqa graph end to end: scripted model over HTTP, real knowledge base, runner, traces."""

import json
import os

import numpy as np
import pytest
from scripted_server import ScriptedServer, by_template

from hopgraph.evals.evaluate import score_prediction
from hopgraph.graphs import every_context
from hopgraph.harness.run_folder import read_predictions, trace_records
from hopgraph.harness.runner import Runner
from hopgraph.memory.ids import page_id, page_key
from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.questions.datasets import Question, write_questions

Context = every_context()  # every built-in method's knobs

DOC = "annual-report.pdf"
TOPICS = [
    "staff canteen menu",
    "parking rules for visitors",
    "history of the harbour office",
    "the board of directors",
    "fire drill schedule",
    "library opening hours",
    "IT helpdesk contacts",
    "the budget for 2021 was 4.2 million crowns",
    "budget planning rules and the 2021 budget review",
    "cleaning contracts",
    "holiday calendar",
    "printer locations",
]


def page_text(n, topic):
    return f"Annual report, page {n}.\nThis page describes {topic} in some detail.\n"


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("kb")
    KnowledgeBase(path).add(
        [
            Item(
                "page",
                page_key(DOC, n),
                page_text(n, t),
                title=f"annual-report p.{n}",
                source=DOC,
                page=n,
            )
            for n, t in enumerate(TOPICS, 1)
        ]
        + [
            Item(
                "page",
                page_key("other.pdf", 1),
                page_text(1, "the budget of another firm"),
                source="other.pdf",
                page=1,
            )
        ]
    )
    return path


def reply_for(calls, first_answer="Not answerable", asked=None, bodies=None):
    """Each role's reply, keyed by the template its request names; ``calls`` records them
    (and ``bodies`` the requests)."""
    asked = [] if asked is None else asked
    bodies = [] if bodies is None else bodies

    def text_of(body):
        text = body["messages"][-1]["content"]
        return text if isinstance(text, str) else " ".join(p.get("text", "") for p in text)

    def about_2021(body):
        text = text_of(body)
        return "2021 budget" in text or "budget for 2021" in text

    def judge_p_yes(body):
        return 0.95 if about_2021(body) else 0.05

    def judge(body):
        if "harbour office" in text_of(body):
            return "I cannot tell."  # unparsable: read as 3
        return "The page states the figure.\n5" if about_2021(body) else "Nothing here.\n1"

    def reflect_answer(body):  # does the answer respond?
        return 0.1 if "Answer: Not answerable" in text_of(body) else 0.9

    def answer(body):
        asked.append(text_of(body).rsplit("Question:", 1)[1].split("\n")[0].strip())
        return first_answer if calls.count("answer") == 1 else "4.2 million crowns"

    def refine(body):
        assert "What the answer needs: One part: the budget of 2021" in text_of(body)
        return "Page 8 gives the figure.\nAnswer: 4.2 million crowns"

    script = {
        "mabdqa/judge_page_p_yes": judge_p_yes,
        "mabdqa/reflect_answer": reflect_answer,
        "mabdqa/aspects": "2021 budget, budget amount",
        "mabdqa/judge_page": judge,
        "mabdqa/reflect_question": "What was the budget for 2021 in crowns?",
        "mabdqa/answer": answer,
        "mabdqa/summarize": "One part: the budget of 2021, a sum in crowns.",
        "mabdqa/refine_answer": refine,
    }
    names = {"judge_page_p_yes": "judge", "judge_page": "judge", "refine_answer": "refine"}

    def reply(body):
        name = body["_template"].split("/", 1)[1]
        calls.append(names.get(name, name))
        bodies.append(body)
        return by_template(script, default=lambda b: pytest.fail(f"unscripted {name}"))(body)

    return reply


def run(tmp_path, kb_dir, calls, questions=None, **fields):
    qfile = tmp_path / "q.jsonl"
    write_questions(
        questions
        or [
            Question(
                "q1",
                "How large was the 2021 budget?",
                ["4.2 million"],
                doc=DOC,
                evidence=[page_id(DOC, 8), page_id(DOC, 9)],
            )
        ],
        qfile,
    )
    first = fields.pop("first_answer", "Not answerable")
    script = reply_for(calls, first, fields.pop("asked", None), fields.pop("bodies", None))
    with ScriptedServer(script) as server:
        fields = {"mabdqa_m": 6, "mabdqa_reentry_m": 3, "mabdqa_theta_h": 4} | fields
        ctx = Context(base_url=server.base_url, model="scripted", kb_dir=str(kb_dir), **fields)
        Runner("mabdqa", tmp_path / "run", ctx).run(qfile)
    preds = read_predictions(tmp_path / "run" / "predictions.jsonl")
    events = [
        r["data"]
        for r in trace_records(tmp_path / "run" / "traces" / "q1.jsonl")
        if r.get("mode") == "custom"
    ]
    return preds, events


def test_bandit_finds_the_budget_pages_and_hrra_reenters_after_not_answerable(tmp_path, kb_dir):
    calls = []
    preds, events = run(tmp_path, kb_dir, calls)
    pred = preds["q1"]
    assert pred["error"] is None, pred["error"]
    steps = [e for e in events if e.get("event") == "bandit_step"]
    assert len(steps) == 6 + 3  # m judgements, then m' more on re-entry
    assert calls.count("judge") == 9 and calls.count("aspects") == 1
    assert len({s["page"] for s in steps}) == 9  # never the same page twice
    assert {page_id(DOC, 8), page_id(DOC, 9)} == set(pred["retrieved"][:2])
    assert all(i.startswith("page-") and i != page_id("other.pdf", 1) for i in pred["retrieved"])
    assert len(pred["retrieved"]) == len(TOPICS)
    # HRRA: "Not answerable" did not respond, so the hypergraph was re-entered once
    assert calls.count("answer") == 2 and calls.count("reflect_question") == 1
    assert pred["answer"] == "4.2 million crowns"
    (summary,) = [e for e in events if e.get("event") == "run_summary"]
    assert summary["reentries"] == 1 and summary["pages_judged"] == 9
    scores = score_prediction(pred)
    assert scores["recall@1"] == 0.5 and scores["recall@3"] == 1.0 and scores["mrr@5"] == 1.0
    assert scores["kept_recall"] == 1.0 and scores["kept_contexts"] == 4
    (hyper,) = [e for e in events if e.get("event") == "hypergraph"]
    assert hyper["subqueries"][-1] == "2021 budget budget amount"  # the global query E_q


def test_p_yes_judge_rewards_the_budget_pages(tmp_path, kb_dir):
    calls = []
    preds, events = run(tmp_path, kb_dir, calls, mabdqa_judge="p_yes", first_answer="4.2 million")
    steps = [e for e in events if e.get("event") == "bandit_step"]
    assert len(steps) == 6 and calls.count("judge") == 6
    assert {round(s["s_vlm"], 2) for s in steps} <= {0.95, 0.05}
    assert {page_id(DOC, 8), page_id(DOC, 9)} == set(preds["q1"]["retrieved"][:2])
    with pytest.raises(ValueError, match="'mabdqa_judge' must be one of 'scale', 'p_yes'"):
        Context(mabdqa_judge="stars")  # refused once, before any question


def test_an_answer_that_responds_ends_without_reentering(tmp_path, kb_dir):
    calls = []
    preds, _ = run(tmp_path, kb_dir, calls, first_answer="4.2 million")
    assert preds["q1"]["answer"] == "4.2 million" and calls.count("answer") == 1
    assert calls.count("judge") == 6


def test_li_baseline_and_ablations(tmp_path, kb_dir):
    calls = []
    baseline = {
        "mabdqa_retriever": "li",
        "mabdqa_question_reflection": False,
        "mabdqa_answer_reflection": False,
    }
    preds, events = run(tmp_path / "li", kb_dir, calls, **baseline)
    assert calls == ["answer"]  # no aspects, no judgements, no reflection
    assert not [e for e in events if e.get("event") == "bandit_step"]
    assert len(preds["q1"]["retrieved"]) == len(TOPICS)
    calls = []
    preds, events = run(
        tmp_path / "abl",
        kb_dir,
        calls,
        mabdqa_page_graph=False,
        mabdqa_atoms_only=True,
        mabdqa_question_reflection=False,
    )
    (hyper,) = [e for e in events if e.get("event") == "hypergraph"]
    assert hyper["page_graph_edges"] == 0 and "2021 budget budget amount" not in hyper["subqueries"]
    assert "reflect_question" not in calls and preds["q1"]["error"] is None


def test_bad_questions_fail_alone(tmp_path, kb_dir):
    calls = []
    questions = [
        Question("q1", "How large was the 2021 budget?", ["4.2 million"], doc=DOC),
        Question("q2", "Which document?", ["x"]),  # no doc
        Question("q3", "Which pages?", ["x"], doc="missing.pdf"),
    ]
    preds, _ = run(tmp_path, kb_dir, calls, questions=questions, first_answer="4.2 million")
    assert preds["q1"]["error"] is None
    assert "names none (field doc)" in preds["q2"]["error"]
    assert "holds no pages of 'missing.pdf'" in preds["q3"]["error"]


def test_page_vectors_are_kept_in_the_engine_per_document(tmp_path, kb_dir, monkeypatch):
    """A document's page vectors are computed once and kept where the KB lives (no file
    beside it), read back whole; a store a writer left part way is computed again."""
    from hopgraph.memory.kb import COLLECTION_PREFIX
    from hopgraph.tools.mabdqa import page_vectors
    from hopgraph.tools.mabdqa.page_vectors import PAGE_VECTORS, document_pages

    kb = KnowledgeBase(kb_dir)
    first = document_pages(kb, DOC)
    assert not (kb_dir / "page_vectors").exists() and [p["page"] for p in first.pages] == list(
        range(1, 13)
    )
    built = []
    real = page_vectors._text_lines
    monkeypatch.setattr(page_vectors, "_text_lines", lambda *a: built.append(1) or real(*a))
    again = document_pages(kb, DOC)
    assert not built  # read back, not encoded again
    same = lambda x, y: all(np.allclose(a, b, atol=1e-5) for a, b in zip(x, y, strict=True))  # noqa: E731
    assert same(first.vectors, again.vectors)
    assert json.dumps([len(v) for v in first.vectors]) == json.dumps([2] * 12)
    with kb._chroma():
        (name,) = [
            c.name
            for c in kb.client.list_collections()
            if c.name.startswith(COLLECTION_PREFIX + PAGE_VECTORS)
        ]
        col = kb.client.get_collection(name)
        col.delete(ids=col.get(limit=1)["ids"])  # as if a writer stopped part way
    third = document_pages(kb, DOC)
    assert built == [1] and same(first.vectors, third.vectors)


def test_each_hrra_switch_changes_what_runs(tmp_path, kb_dir):
    """Table 6's reflection ablations: the rewritten question is the one answered; without
    re-entries left, an answer that falls short is summarised (C.7) and refined (C.8)."""
    calls, asked = [], []
    preds, events = run(tmp_path / "full", kb_dir, calls, asked=asked, mabdqa_reentries=0)
    assert calls.count("reflect_question") == 1
    assert asked == ["What was the budget for 2021 in crowns?"]  # C.5's question, answered
    assert calls[-3:] == ["reflect_answer", "summarize", "refine"]
    assert preds["q1"]["answer"] == "4.2 million crowns"
    (summary,) = [e for e in events if e.get("event") == "run_summary"]
    assert summary["refined"] is True and summary["reentries"] == 0

    calls, asked = [], []
    run(
        tmp_path / "noq",
        kb_dir,
        calls,
        asked=asked,
        mabdqa_reentries=0,
        mabdqa_question_reflection=False,
    )
    assert "reflect_question" not in calls and asked == ["How large was the 2021 budget?"]
    assert calls[-2:] == ["summarize", "refine"]

    calls = []
    preds, _ = run(tmp_path / "noa", kb_dir, calls, mabdqa_answer_reflection=False)
    assert not {"reflect_answer", "summarize", "refine"} & set(calls)
    assert calls.count("answer") == 1 and preds["q1"]["answer"] == "Not answerable"


def test_batched_judgements_reach_the_trace_and_still_find_the_pages(tmp_path, kb_dir):
    """mabdqa_batch = 3: the judgements of a round run in worker threads; each one's LLM call
    is still in the question's trace (events follow the context into the threads)."""
    calls = []
    preds, events = run(tmp_path, kb_dir, calls, mabdqa_batch=3, first_answer="4.2 million")
    steps = [e for e in events if e.get("event") == "bandit_step"]
    judge_calls = [e for e in events if e.get("event") == "llm_call" and e["role"] == "page_judge"]
    assert len(steps) == 6 and [s["round"] for s in steps] == [1, 1, 1, 2, 2, 2]
    assert len(judge_calls) == calls.count("judge") == 6
    assert {page_id(DOC, 8), page_id(DOC, 9)} <= set(preds["q1"]["retrieved"][:3])


def prompt_of(body):
    """The request's messages as one text, in the order a server tokenises them."""
    return "\n".join(
        m["content"]
        if isinstance(m["content"], str)
        else " ".join(p.get("text", "") for p in m["content"])
        for m in body["messages"]
    )


def test_page_reading_calls_share_their_pages_as_a_prompt_prefix(tmp_path):
    """llama.cpp reuses the previous prompt's KV cache up to the first differing token, and
    vLLM caches shared prefixes: the answer after the question reflection must find the same
    pages at the start of its prompt, and each judgement of one question the question."""
    kb_dir = tmp_path / "kb"
    KnowledgeBase(kb_dir).add(
        [
            Item(
                "page",
                page_key(DOC, n),
                page_text(n, t)
                + " ".join(
                    f"Paragraph {k} on page {n} goes on about {t}, point {k} of many."
                    for k in range(30)
                ),
                source=DOC,
                page=n,
            )
            for n, t in enumerate(TOPICS, 1)
        ]
    )
    calls, bodies = [], []
    preds, _ = run(
        tmp_path, kb_dir, calls, first_answer="4.2 million", bodies=bodies, mabdqa_judge="p_yes"
    )
    assert preds["q1"]["error"] is None
    names = [b["_template"] for b in bodies]
    i = names.index("mabdqa/answer")
    assert names[i - 1] == "mabdqa/reflect_question"
    shared = os.path.commonprefix([prompt_of(bodies[i - 1]), prompt_of(bodies[i])])
    assert len(shared) > 4 * 1400, len(shared)  # the four pages (1,500 characters each)
    assert shared.count("[Page ") == 4
    judgements = [prompt_of(b) for b in bodies if b["_template"] == "mabdqa/judge_page_p_yes"]
    question = "How large was the 2021 budget?"
    for a, b in zip(judgements, judgements[1:], strict=False):
        assert question in os.path.commonprefix([a, b])


def test_a_walk_without_judgements_ranks_the_same_pages_by_eq_8(tmp_path, kb_dir):
    """mabdqa_m = 0: nothing judged; every page the LI baseline ranks is ranked, by Eq. 8
    (LI over the arms, the page's degree and arms) rather than by the question's LI."""
    li, _ = run(tmp_path / "li", kb_dir, [], mabdqa_retriever="li", first_answer="4.2 million")
    calls = []
    walk, _ = run(tmp_path / "m0", kb_dir, calls, mabdqa_m=0, first_answer="4.2 million")
    assert "judge" not in calls and walk["q1"]["error"] is None
    assert sorted(walk["q1"]["retrieved"]) == sorted(li["q1"]["retrieved"])
