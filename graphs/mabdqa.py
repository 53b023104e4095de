"""``mabdqa``: long-document QA over one PDF's pages (mab-dqa.txt): aspect subqueries, the
query-aware page hypergraph (Algorithm 1), Thompson-sampling bandit retrieval (Algorithm 2) and
the hypergraph-based reflective reasoning agent (HRRA, Sec. 3.4).

Each question names its document (``doc``, the PDF's file name as indexed). Context switches:
``mabdqa_retriever`` = bandit | li (plain late-interaction top-k, the M3DocRAG-style baseline);
``mabdqa_judge`` = scale (1-5, App. C.2) | p_yes;
the Table 6 ablations ``mabdqa_page_graph``, ``mabdqa_atoms_only``,
``mabdqa_question_reflection``, ``mabdqa_answer_reflection``.
"""

from __future__ import annotations

import operator
import time
from typing import Annotated, Any

import numpy as np
from langgraph.graph import END
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from hopgraph.agents import mabdqa as roles
from hopgraph.config import Context, MethodSpec, knobs_of
from hopgraph.graphs.shared import (
    InputState,
    add_chain,
    context,
    contract_builder,
    over_budget,
)
from hopgraph.memory.evidence import Evidence, rescored
from hopgraph.memory.kb import KnowledgeBase
from hopgraph.models import parallel_calls
from hopgraph.models.events import Retrieval, Step, emit
from hopgraph.settings.mabdqa import MABDQAContext, MABDQASettings
from hopgraph.tools.mabdqa.bandit import Arms, bandit_retrieve
from hopgraph.tools.mabdqa.page_hypergraph import Hypergraph, build_hypergraph, late_interaction
from hopgraph.tools.mabdqa.page_vectors import DocumentPages, document_pages, query_vectors
from hopgraph.tools.retrieval import knowledge_base

SPEC = MethodSpec(
    "mabdqa",
    "questions about one long PDF, named by doc",
    settings=(MABDQASettings,),
    needs=("chat", "structured output", "logprobs / P(Yes)"),
)


def images_per_call(ctx: Context) -> int:
    """The most images one hopgraph call sends (``hopgraph doctor`` probes a VLM with as many):
    MAB-DQA's answer reads its top pages and the question's own image (other calls send one)."""
    return knobs_of(MABDQAContext.adopt(ctx), MABDQASettings).mabdqa_top_pages + 1


class WalkState(TypedDict):
    """The bandit's state, kept so HRRA can re-enter the hypergraph where the walk stopped."""

    a: list[float]
    b: list[float]
    """Each arm's Beta posterior (Alg. 2)."""
    judged: dict[str, float]
    """Page index (as text) -> the judge's score s_vlm."""
    current: int | None
    """The page the walk stands on."""


class Attempt(TypedDict, total=False):
    """One answer HRRA produced (App. C.4-C.8)."""

    question: str
    pages: list[int | None]
    answer: str
    refined_from: str
    """The answer it refined (App. C.8), with the ``summary`` of what the answer needs."""
    summary: str


class State(InputState, total=False):
    subqueries: list[str]
    walk: WalkState
    ranking: list[str]
    """Page ids, best first."""
    asked: str
    """The question HRRA answers: as the question reflection rewrote it, else the raw one."""
    attempts: Annotated[list[Attempt], operator.add]
    """Each answer HRRA produced: the question it answered, from which pages, and whether
    the answer reflection found that it responds."""
    kept: list[Evidence]
    """The pages the last answer read (the runner scores them as the kept contexts)."""
    responds: float
    """P(Yes) of the answer reflection for the last answer."""
    answer: str
    response: str
    citations: list[str]
    """The pages the answer read, each cited by id (the report shows them, and the span of a
    page's text the answer quotes)."""


def _document(state: State, ctx: MABDQAContext) -> DocumentPages:
    doc = state.get("doc", "")
    if not doc:
        raise ValueError("mabdqa answers over one document: the question names none (field doc)")
    return document_pages(knowledge_base(ctx), doc, ctx.page_embedder)


def _hypergraph(state: State, pages: DocumentPages, ctx: MABDQAContext) -> Hypergraph:
    """H for the state's subqueries (rebuilt when needed, never stored: it derives from them)."""
    subqueries = state.get("subqueries") or [state["question"]]
    return hypergraph_over(knowledge_base(ctx), subqueries, pages, ctx)


def hypergraph_over(
    kb: KnowledgeBase, subqueries: list[str], pages: DocumentPages, ctx: MABDQAContext
) -> Hypergraph:
    """The page hypergraph H of a document for these subqueries, with ``ctx``'s thresholds
    (θ_g, θ_h) and shape: what the graph and the offline studies of its walks build alike."""
    return build_hypergraph(
        subqueries,
        [query_vectors(kb, q, ctx.page_embedder) for q in subqueries],
        pages.vectors,
        theta_g=ctx.mabdqa_theta_g,
        theta_h=ctx.mabdqa_theta_h,
        atoms_only=ctx.mabdqa_atoms_only,
        with_page_graph=ctx.mabdqa_page_graph,
    )


def decompose(state: State, runtime: Runtime[MABDQAContext]) -> State:
    ctx = context(runtime, MABDQAContext)
    if ctx.mabdqa_retriever == "li":
        return {"subqueries": []}
    return {"subqueries": roles.aspects(state["question"], ctx)}


def _walk(state: State, ctx: MABDQAContext, question: str, m: int, seed_offset: int) -> State:
    """Run (or continue) the bandit walk with ``m`` judgements; the new ranking and state."""
    began = time.perf_counter()
    pages = _document(state, ctx)
    h = _hypergraph(state, pages, ctx)
    prior = state.get("walk")
    arms = Arms(np.array(prior["a"]), np.array(prior["b"])) if prior else None
    judged = {int(p): s for p, s in (prior["judged"] if prior else {}).items()}
    start = prior["current"] if prior else None

    def judge(p: int) -> float:
        return roles.judge_page(question, pages.pages[p], ctx)

    def on_step(step: dict[str, Any]) -> None:
        emit(Step("bandit_step", {"page_id": pages.pages[step["page"]]["id"], **step}))

    walk = bandit_retrieve(
        h,
        judge,
        m=m,
        alpha=ctx.mabdqa_alpha,
        beta=ctx.mabdqa_beta,
        lam=ctx.mabdqa_lambda,
        seed=ctx.mabdqa_seed + seed_offset,
        arms=arms,
        judged=judged,
        start=start,
        on_step=on_step,
        batch=max(1, ctx.mabdqa_batch),
        workers=parallel_calls(ctx),
        stop=lambda: over_budget(ctx, "bandit"),
    )
    ids = [pages.pages[p]["id"] for p in walk.ranking]
    if not prior:
        emit(
            Step(
                "hypergraph",
                {
                    "subqueries": h.subqueries,
                    "hyperedges": [[pages.pages[p]["page"] for p in e] for e in h.edges],
                    "page_graph_edges": sum(len(a) for a in h.graph) // 2,
                },
            )
        )
        ranked = [
            rescored(pages.pages[p], s) for p, s in zip(walk.ranking, walk.scores, strict=True)
        ]
        emit(Retrieval.of("mabdqa_bandit", state["question"], ranked, began))
    last = walk.steps[-1]["page"] if walk.steps else start
    return {
        "ranking": ids,
        "walk": {
            "a": walk.arms.a.tolist(),
            "b": walk.arms.b.tolist(),
            "judged": {str(p): s for p, s in walk.judged.items()},
            "current": last,
        },
    }


def retrieve(state: State, runtime: Runtime[MABDQAContext]) -> State:
    ctx = context(runtime, MABDQAContext)
    if ctx.mabdqa_retriever == "bandit":
        return _walk(state, ctx, state["question"], ctx.mabdqa_m, 0)
    began = time.perf_counter()  # the baseline: LI(q, p) of the raw question, top-k
    pages = _document(state, ctx)
    query = query_vectors(knowledge_base(ctx), state["question"], ctx.page_embedder)
    scores = late_interaction(query, pages.vectors)
    order = np.argsort(-scores, kind="stable")
    ranked = [rescored(pages.pages[p], float(scores[p])) for p in order]
    space = ctx.page_embedder or "text lines"
    emit(Retrieval.of("mabdqa_li", state["question"], ranked, began, space=space))
    return {"ranking": [h["id"] for h in ranked]}


def reflect_question(state: State, runtime: Runtime[MABDQAContext]) -> State:
    """Question reflection (App. C.5): the question made specific with what the retrieved
    pages show. The rewritten question is the one answered, judged, re-entered with and
    refined; with ``mabdqa_question_reflection`` off the raw question is."""
    ctx = context(runtime, MABDQAContext)
    if not ctx.mabdqa_question_reflection:
        return {"asked": state["question"]}
    top = knowledge_base(ctx).get(state["ranking"][: ctx.mabdqa_top_pages])
    return {"asked": roles.reflect_question(state["question"], top, ctx)}


def answer(state: State, runtime: Runtime[MABDQAContext]) -> State:
    """The answer from the top pages (App. C.4)."""
    ctx = context(runtime, MABDQAContext)
    question = state.get("asked") or state["question"]
    top = knowledge_base(ctx).get(state["ranking"][: ctx.mabdqa_top_pages])
    text = roles.answer(question, top, ctx, state.get("images", []))
    attempt = Attempt(question=question, pages=[h["page"] for h in top], answer=text)
    cited = [h["id"] for h in top]
    return {
        "answer": text,
        "response": text,
        "attempts": [attempt],
        "kept": top,
        "evidence": top,
        "citations": cited,
    }


def reflect_answer(state: State, runtime: Runtime[MABDQAContext]) -> State:
    """Answer reflection (App. C.6): does the last answer respond to the asked question?"""
    ctx = context(runtime, MABDQAContext)
    if not ctx.mabdqa_answer_reflection:
        return {}
    last = state["attempts"][-1]
    return {"responds": roles.answer_responds(last["question"], last["answer"], ctx)}


def after_reflect(state: State, runtime: Runtime[MABDQAContext]) -> str:
    """An answer that responds (or no answer reflection) ends HRRA; one that falls short
    re-enters the hypergraph while re-entries remain, then is refined (App. C.7-C.8)."""
    ctx = context(runtime, MABDQAContext)
    if not ctx.mabdqa_answer_reflection or state.get("responds", 1.0) >= 0.5:
        return "finish"
    if over_budget(ctx, "reflection"):
        return "finish"
    if ctx.mabdqa_retriever == "bandit" and len(state["attempts"]) <= ctx.mabdqa_reentries:
        return "reenter"
    return "refine"


def reenter(state: State, runtime: Runtime[MABDQAContext]) -> State:
    """More pages from the hypergraph, judged against the asked question."""
    ctx = context(runtime, MABDQAContext)
    question = state.get("asked") or state["question"]
    return _walk(state, ctx, question, ctx.mabdqa_reentry_m, len(state["attempts"]))


def refine(state: State, runtime: Runtime[MABDQAContext]) -> State:
    """Summary of what the answer needs (App. C.7, with the hypergraph's aspects), then the
    refined answer from the pages, the first answer and that summary (App. C.8)."""
    ctx = context(runtime, MABDQAContext)
    last = state["attempts"][-1]
    summary = roles.summarize(last["question"], state.get("subqueries", []), ctx)
    text = roles.refine_answer(last["question"], last["answer"], summary, state["kept"], ctx)
    refined: Attempt = {**last, "answer": text, "refined_from": last["answer"], "summary": summary}
    return {"answer": text, "response": text, "attempts": [refined]}


def finish(state: State, runtime: Runtime[MABDQAContext]) -> State:
    walk = state.get("walk")
    emit(
        Step(
            "run_summary",
            {
                "pages_judged": len(walk["judged"]) if walk else 0,
                "reentries": sum(
                    1 for a in state.get("attempts", [])[1:] if "refined_from" not in a
                ),
                "refined": any("refined_from" in a for a in state.get("attempts", [])),
                "not_answerable": state.get("answer") == roles.NOT_ANSWERABLE,
            },
        )
    )
    return {}


builder = contract_builder(
    State,
    decompose,
    retrieve,
    reflect_question,
    answer,
    reflect_answer,
    reenter,
    refine,
    finish,
    context=MABDQAContext,
)
add_chain(builder, "decompose", "retrieve", "reflect_question", "answer", "reflect_answer")
builder.add_conditional_edges("reflect_answer", after_reflect, ["reenter", "refine", "finish"])
builder.add_edge("reenter", "answer")
add_chain(builder, "refine", "finish", END)
graph = builder.compile(name="mabdqa")
