"""QDRAG's roles: the decomposer, QD-C (one call: entity replacement + open decomposition,
guided by the retrieved contexts) and QD-R (a zero-shot plan with <Ans_of_Qi> placeholders);
the sub-question answerer; the reranker, S(C|Q_i) = P("Yes" | Q_i, C, R), pointwise, its calls
issued concurrently."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from itertools import groupby
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field

from hopgraph.agents.role import Role, Shown
from hopgraph.config import Context
from hopgraph.memory.evidence import Evidence
from hopgraph.models import parallel_calls
from hopgraph.models.events import Repair, emit
from hopgraph.runtime import fan_out
from hopgraph.tools.qdrag import parse_plan, ready, resolved
from hopgraph.tools.replies import qdc_subquestions
from hopgraph.tools.retrieval import search


class Replacement(BaseModel):
    reference: str
    entity: str
    substituted: str = ""
    """The question with ``entity`` put in place of ``reference`` (the paper's second
    subquestion per replacement)."""


class QDCOutput(BaseModel):
    replacements: list[Replacement] = Field(default_factory=list)
    subquestions: Annotated[list[str], Shown(["...", "..."])] = Field(default_factory=list)


DECOMPOSE_QDC = Role(
    "decomposer",
    "qdrag/decompose_qdc",
    inputs=("question", "contexts", "picture"),
    schema=QDCOutput,
    fallback=QDCOutput(),
)


PLAN_SHOWN = [
    {"id": "Q1", "question": "<first subquestion>"},
    {"id": "Q2", "question": "<a subquestion that may contain <Ans_of_Q1>>"},
]
"""QD-R's plan as its template shows it: two steps, the second naming the first's answer."""


class PlanStep(BaseModel):
    id: str
    question: str


class QDRPlan(BaseModel):
    subquestions: Annotated[list[PlanStep], Shown(PLAN_SHOWN)]


def decompose_qdc(
    question: str,
    contexts: list[Evidence],
    ctx: Context,
    images: Sequence[str] = (),
) -> list[str]:
    """Exactly one model call (to the VLM with the question's pictures, which it names);
    its output becomes subquestions by ``qdc_subquestions``. Fallback: no subquestion, so the
    raw question alone reranks (recorded)."""
    out = DECOMPOSE_QDC.structured(
        ctx,
        pictures=images,
        question=question,
        contexts=contexts,
        picture=bool(images),
    )
    subs, dropped, rebuilt = qdc_subquestions(out, question)
    if dropped:
        emit(Repair("decomposer", {"dropped": dropped}))
    for r in rebuilt:
        emit(Repair("decomposer", {"rebuilt": r}))
    return subs


PLAN_QDR = Role(
    "decomposer",
    "qdrag/plan_qdr",
    inputs=("question", "picture"),
    schema=QDRPlan,
    fallback=QDRPlan(subquestions=[]),
)


def plan_qdr(
    question: str,
    ctx: Context,
    *,
    temperature: float | None = None,
    images: Sequence[str] = (),
) -> list[dict[str, str]]:
    """A zero-shot plan as raw dicts (``tools.qdrag_budget.parse_plan`` validates it); a
    question's pictures go with it to the VLM, whose plan names what they show. Fallback: no
    plan, so the raw question alone reranks (recorded)."""
    picture = bool(images)
    if temperature is not None:  # sampling several plans for QDARF
        from hopgraph.models.chat import parse_reply

        text = PLAN_QDR.complete(
            ctx,
            pictures=images,
            temperature=temperature,
            max_tokens=300,
            question=question,
            picture=picture,
        )
        plan = parse_reply(QDRPlan, text)
    else:
        plan = PLAN_QDR.structured(ctx, pictures=images, question=question, picture=picture)
    return [s.model_dump() for s in plan.subquestions]


SUB_ANSWER = Role("subanswerer", "qdrag/sub_answer", inputs=("question", "contexts"))


def answer_from(question: str, contexts: list[Evidence], ctx: Context) -> str:
    """A short answer to a subquestion from its own contexts (resolves <Ans_of_Qi>)."""
    text = SUB_ANSWER.complete(ctx, max_tokens=24, question=question, contexts=contexts)
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[0].rstrip(".") if lines else ""


RERANKER = Role("reranker", "qdrag/rerank", inputs=("question", "context"))


def relevance(question: str, context: Evidence, ctx: Context) -> float:
    return RERANKER.p_yes(ctx, question=question, context=context)


def score_all(pairs: list[tuple[str, Evidence]], ctx: Context) -> list[float]:
    """S for every (question, context) pair, in the pairs' order. A run of pairs on one
    context goes out in order from one worker, so each prompt after its first finds the
    passage in the KV cache of the slot the first left it in (llama-server gives a request the
    idle slot whose cached prompt it shares most); up to ``parallel_calls`` contexts at once."""

    def passage(pair: tuple[str, Evidence]) -> object:
        return pair[1].get("id") or id(pair[1])

    def in_order(run: list[tuple[str, Evidence]]) -> list[float]:
        return [relevance(question, context, ctx) for question, context in run]

    runs = [list(run) for _, run in groupby(pairs, key=passage)]
    return [s for scores in fan_out(in_order, runs, parallel_calls(ctx)) for s in scores]


# -- QDARF preference data (qdrag.txt, Eq. 1): what trains the QD-R decomposer above ------
# several sampled QD-R plans per training question, each scored by the recall of gold contexts
# by its subquestions; the best and the worst plan make one DPO pair in the
# {"prompt", "chosen", "rejected"} form TRL's DPOTrainer reads (``hopgraph qdrag pairs``).


def plan_reward(
    plan: list[dict[str, str]], gold: list[str], ctx: Context, k: int, budget: int
) -> float:
    """Recall of gold contexts by the union of each subquestion's top-k retrieval (Eq. 1), with
    the plan run as QD-R runs it at inference: wave by wave, each ``<Ans_of_Qi>`` filled with
    the answer to Qi from its own top ``budget`` contexts (``qdrag_budget``), so a dependent
    subquestion searches for what it will really ask. A plan that cannot be resolved raises
    ``PlanError``."""
    subs = parse_plan(plan)
    if not gold:
        return 0.0
    needed = {d for s in subs for d in s["depends"]}  # only answers a later question uses
    answers: dict[str, str] = {}
    found: set[str] = set()
    while wave := ready(subs, answers):
        for sub in wave:
            query = resolved(sub, answers)
            hits = search(query, ctx, k=k, role="qdarf")
            found |= {h["id"] for h in hits}
            answers[sub["id"]] = (
                answer_from(query, hits[:budget], ctx) if (sub["id"] in needed) else ""
            )
    return len(found & set(gold)) / len(set(gold))


def preference_pairs(
    questions: list,
    ctx: Context,
    *,
    samples: int = 4,
    temperature: float = 0.8,
    k: int = 5,
    budget: int,
    on_question: Callable[[Any, dict[str, Any]], None] | None = None,
) -> list[dict[str, str]]:
    """One pair per question whose best plan beats its worst; unparsable samples are dropped.
    ``budget``: the contexts a needed subanswer reads (QD-R's ``qdrag_budget``)."""
    pairs = []
    for q in questions:
        scored = []
        for _ in range(samples):
            try:
                plan = plan_qdr(q.question, ctx, temperature=temperature)
                scored.append((plan_reward(plan, q.evidence, ctx, k, budget), plan))
            except ValueError:  # not JSON, not a plan, a cycle: this sample is dropped
                continue
        info: dict[str, Any] = {"samples": len(scored), "rewards": [r for r, _ in scored]}
        if len(scored) >= 2:
            best = max(scored, key=lambda x: x[0])
            worst = min(scored, key=lambda x: x[0])
            if best[0] > worst[0]:
                pairs.append(
                    {
                        "prompt": PLAN_QDR.render(ctx, question=q.question, picture=False),
                        "chosen": json.dumps({"subquestions": best[1]}),
                        "rejected": json.dumps({"subquestions": worst[1]}),
                        "id": q.id,
                        "reward_chosen": best[0],
                        "reward_rejected": worst[0],
                    }
                )
        if on_question:
            on_question(q, info)
    return pairs


def write_pairs(pairs: list[dict[str, str]], out: str | Path) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs), encoding="utf-8"
    )
    return out
