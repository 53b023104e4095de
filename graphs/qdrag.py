"""``qdrag``: query decomposition (QD-C or QD-R), P(Yes) reranking against every subquestion
and the raw question, the entropy budget, and an answer with inline citations (qdrag.txt).

Context switches: ``qdrag_mode`` = qdc | qdr | dense (no rerank) | sparse (rerank the raw
question only), ``qdrag_entropy_budget`` (Table 6 "S"), ``qdrag_budget`` (N).
"""

from __future__ import annotations

import operator
from typing import Annotated

from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Send
from typing_extensions import TypedDict

from hopgraph.agents.generator import generate_cited_answer
from hopgraph.agents.qdrag import answer_from, decompose_qdc, plan_qdr, score_all
from hopgraph.config import MethodSpec
from hopgraph.graphs import polarmem
from hopgraph.graphs.polarmem import memory_candidates
from hopgraph.graphs.shared import (
    InputState,
    OutputState,
    add_chain,
    cited_output,
    context,
    contract_builder,
    over_budget,
)
from hopgraph.memory.evidence import Evidence
from hopgraph.models.events import Fallback, emit
from hopgraph.settings import grail
from hopgraph.settings.qdrag import QDRAGContext, QDRAGSettings
from hopgraph.tools.grail.tool import steerable_search
from hopgraph.tools.qdrag import (
    PlanError,
    Planned,
    allocate,
    entropy,
    equal_split,
    keep_contexts,
    parse_plan,
    ready,
    resolved,
)
from hopgraph.tools.retrieval import search

SPEC = MethodSpec(
    "qdrag",
    "decomposes the question, reranks the passages by P(Yes)",
    settings=(QDRAGSettings,),
    parts=(grail.SPEC, polarmem.SPEC),
    needs=("chat", "structured output", "logprobs / P(Yes)"),
    view="subquestions",
)


def merge_contexts(old: list[Evidence], new: list[Evidence]) -> list[Evidence]:
    """Union by id, first occurrence kept (contexts arrive from several retrievals)."""
    merged = {c["id"]: c for c in old}
    for c in new:
        merged.setdefault(c["id"], c)
    return list(merged.values())


class Task(TypedDict):
    """A QD-R subquestion sent to ``solve``: its placeholders filled, and the evidence its
    dependencies brought (``held``: what GRAIL steers away from)."""

    id: str
    question: str
    held: list[str]


class Solved(TypedDict):
    """A QD-R subquestion answered: the resolved question, its answer (which fills later
    placeholders) and the contexts its search returned, best first."""

    id: str
    question: str
    answer: str
    context_ids: list[str]


class State(InputState, total=False):
    contexts: Annotated[list[Evidence], merge_contexts]
    subquestions: list[Planned]
    solved: Annotated[list[Solved], operator.add]
    plan_error: str
    scores: dict[str, dict[str, float]]
    allocation: dict[str, int]
    kept: list[Evidence]
    response: str
    answer: str
    citations: list[str]
    invalid_citations: list[int]


class SolveInput(TypedDict):
    sub: Task


def retrieve(state: State, runtime: Runtime[QDRAGContext]) -> State:
    ctx = context(runtime, QDRAGContext)
    k = ctx.qdrag_budget if ctx.qdrag_mode == "dense" else ctx.qdrag_retrieve_k
    return {"contexts": search(state["question"], ctx, k=k)}


def decompose(state: State, runtime: Runtime[QDRAGContext]) -> State:
    ctx = context(runtime, QDRAGContext)
    if ctx.qdrag_mode == "qdc":
        subs = decompose_qdc(
            state["question"], state.get("contexts", []), ctx, state.get("images", [])
        )
        return {
            "subquestions": [
                {"id": f"Q{i}", "question": s, "depends": []} for i, s in enumerate(subs, 1)
            ]
        }
    if ctx.qdrag_mode == "qdr":
        try:
            plan = parse_plan(plan_qdr(state["question"], ctx, images=state.get("images", [])))
        except PlanError as e:  # refused plans fall back to the raw question alone
            emit(Fallback("planner", f"plan refused: {e}", "the raw question alone"))
            return {"subquestions": [], "plan_error": str(e)}
        return {"subquestions": plan}
    return {}


def dispatch(state: State, runtime: Runtime[QDRAGContext]):
    """QD-R: the next wave of subquestions whose placeholders can be filled, in parallel."""
    ctx = context(runtime, QDRAGContext)
    if ctx.qdrag_mode == "dense" or over_budget(ctx, "dispatch"):
        return "select"  # the token cap spent: no more subquestion or P(Yes) call
    if ctx.qdrag_mode != "qdr":
        return "rerank"
    answers = {s["id"]: s["answer"] for s in state.get("solved", [])}
    wave = ready(state.get("subquestions", []), answers)
    if not wave:
        return "rerank"
    held = {s["id"]: s["context_ids"][: ctx.qdrag_budget] for s in state.get("solved", [])}
    return [
        Send(
            "solve",
            {
                "sub": {
                    "id": s["id"],
                    "question": resolved(s, answers),
                    "held": [c for d in s["depends"] for c in held.get(d, [])],
                }
            },
        )
        for s in wave
    ]


def solve(state: SolveInput, runtime: Runtime[QDRAGContext]) -> State:
    """Retrieve for one resolved subquestion and answer it (fills later placeholders). With
    ``grail_mode`` set, a dependent subquestion's search is steered away from the evidence its
    dependencies already brought (GRAIL, no LLM call)."""
    ctx = context(runtime, QDRAGContext)
    sub = state["sub"]
    k, held = ctx.qdrag_retrieve_k, sub.get("held", [])
    hits = steerable_search(sub["question"], ctx, k=k, held=held, steer=ctx.grail_mode)
    answer = answer_from(sub["question"], hits[: ctx.qdrag_budget], ctx)
    return {
        "solved": [
            {
                "id": sub["id"],
                "question": sub["question"],
                "answer": answer,
                "context_ids": [h["id"] for h in hits],
            }
        ],
        "contexts": hits,
    }


def gather(state: State) -> State:
    """Joins a wave of parallel ``solve`` tasks, so the next wave is planned once."""
    return {}


RAW = "raw"
"""The raw question's key among the reranked (sub)questions (plan ids are upper case)."""


def candidates(state: State, mode: str) -> dict[str, tuple[str, list[str]]]:
    """Which contexts each (sub)question reranks, keyed by subquestion id (the raw question by
    ``RAW``), so a subquestion worded like the raw question keeps its own list: its own
    retrievals for QD-R, the shared initial retrieval otherwise; the raw question always
    reranks everything. Values are (question text, context ids)."""
    every = [c["id"] for c in state.get("contexts", [])]
    out = {RAW: (state["question"], every)}
    if mode == "qdc":
        out |= {s["id"]: (s["question"], every) for s in state.get("subquestions", [])}
    elif mode == "qdr":
        out |= {s["id"]: (s["question"], s["context_ids"]) for s in state.get("solved", [])}
    return out


def rerank(state: State, runtime: Runtime[QDRAGContext]) -> State:
    ctx = context(runtime, QDRAGContext)
    by_id = {c["id"]: c for c in state.get("contexts", [])}
    plan = candidates(state, ctx.qdrag_mode)
    # context-major order: consecutive prompts share the passage prefix, which llama.cpp's
    # server reuses from its KV cache (the rerank prompt starts with the passage)
    order = list(dict.fromkeys(cid for _, ids in plan.values() for cid in ids))
    pairs = [(key, cid) for cid in order for key, (_, ids) in plan.items() if cid in ids]
    values = score_all([(plan[key][0], by_id[cid]) for key, cid in pairs], ctx)
    scores: dict[str, dict[str, float]] = {key: {} for key in plan}
    for (key, cid), s in zip(pairs, values, strict=True):
        scores[key][cid] = round(s, 6)
    return {"scores": scores}


def select(state: State, runtime: Runtime[QDRAGContext]) -> State:
    """The entropy budget (or an equal split, or dense top-N) → the contexts kept; dense
    top-N also where the token cap stopped the method before any reranking."""
    ctx = context(runtime, QDRAGContext)
    contexts = state.get("contexts", [])
    if ctx.qdrag_mode == "dense" or not state.get("scores"):
        kept, allocation = contexts[: ctx.qdrag_budget], {}
    else:
        scores = state.get("scores", {})
        if ctx.qdrag_entropy_budget:
            allocation = allocate(
                {q: entropy(list(s.values())) for q, s in scores.items()}, ctx.qdrag_budget
            )
        else:
            allocation = equal_split(list(scores), ctx.qdrag_budget)
        by_id = {c["id"]: c for c in contexts}
        kept = [by_id[i] for i in keep_contexts(scores, allocation)]
    return {"kept": kept, "allocation": allocation}


def generate(state: State, runtime: Runtime[QDRAGContext]) -> OutputState:
    """The cited answer from the kept contexts (and, with ``polar_memory``, the memories
    recalled for the question, as Fact Check lines that can be cited too)."""
    ctx = context(runtime, QDRAGContext)
    kept = state.get("kept", [])
    if ctx.polar_memory:
        kept = [*kept, *memory_candidates(state["question"], ctx)]
    out = generate_cited_answer(state["question"], kept, ctx, images=state.get("images", []))
    return cited_output(out, kept)


builder = contract_builder(
    State, retrieve, decompose, solve, gather, rerank, select, generate, context=QDRAGContext
)
add_chain(builder, "retrieve", "decompose")
for source in ("decompose", "gather"):  # the next wave of QD-R subquestions, or on to rerank
    builder.add_conditional_edges(source, dispatch, ["solve", "rerank", "select"])
builder.add_edge("solve", "gather")
add_chain(builder, "rerank", "select", "generate", END)
graph = builder.compile(name="qdrag")
