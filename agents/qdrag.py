"""QDRAG's roles: the decomposer, QD-C (one call: entity replacement + open decomposition,
guided by the retrieved contexts) and QD-R (a zero-shot plan with <Ans_of_Qi> placeholders);
the sub-question answerer; the reranker, S(C|Q_i) = P("Yes" | Q_i, C, R), pointwise, its calls
issued concurrently."""

from __future__ import annotations

from pydantic import BaseModel, Field

from hopgraph.agents.role import Role
from hopgraph.config import Context
from hopgraph.memory.evidence import Evidence
from hopgraph.models import parallel_calls
from hopgraph.models.events import Repair, emit
from hopgraph.runtime import fan_out
from hopgraph.tools.replies import qdc_subquestions

DECOMPOSE_QDC = Role("decomposer", "qdrag/decompose_qdc")


class Replacement(BaseModel):
    reference: str
    entity: str
    substituted: str = ""
    """The question with ``entity`` put in place of ``reference`` (the paper's second
    subquestion per replacement)."""


class QDCOutput(BaseModel):
    replacements: list[Replacement] = Field(default_factory=list)
    subquestions: list[str] = Field(default_factory=list)


class PlanStep(BaseModel):
    id: str
    question: str


class QDRPlan(BaseModel):
    subquestions: list[PlanStep]


def decompose_qdc(
    question: str,
    contexts: list[Evidence],
    ctx: Context,
    images: list[str] = (),  # type: ignore[assignment]
) -> list[str]:
    """Exactly one model call (to the VLM with the question's pictures, which it names);
    its output becomes subquestions by ``qdc_subquestions``. Fallback: no subquestion, so the
    raw question alone reranks (recorded)."""
    out = DECOMPOSE_QDC.structured(
        ctx, QDCOutput, fallback=QDCOutput(), pictures=images,
        question=question, contexts=contexts, picture=bool(images),
    )  # fmt: skip
    subs, dropped, rebuilt = qdc_subquestions(out, question)
    if dropped:
        emit(Repair("decomposer", {"dropped": dropped}))
    for r in rebuilt:
        emit(Repair("decomposer", {"rebuilt": r}))
    return subs


PLAN_QDR = Role("decomposer", "qdrag/plan_qdr")


def plan_qdr(
    question: str,
    ctx: Context,
    *,
    temperature: float | None = None,
    images: list[str] = (),  # type: ignore[assignment]
) -> list[dict[str, str]]:
    """A zero-shot plan as raw dicts (``tools.qdrag_budget.parse_plan`` validates it); a
    question's pictures go with it to the VLM, whose plan names what they show. Fallback: no
    plan, so the raw question alone reranks (recorded)."""
    variables = {"question": question, "picture": bool(images)}
    if temperature is not None:  # sampling several plans for QDARF
        from hopgraph.models.chat import extract_json

        text = PLAN_QDR.complete(
            ctx, pictures=images, temperature=temperature, max_tokens=300, **variables
        )
        plan = QDRPlan.model_validate_json(extract_json(text))
    else:
        plan = PLAN_QDR.structured(
            ctx, QDRPlan, fallback=QDRPlan(subquestions=[]), pictures=images, **variables
        )
    return [s.model_dump() for s in plan.subquestions]


SUB_ANSWER = Role("subanswerer", "qdrag/sub_answer")


def answer_from(question: str, contexts: list[Evidence], ctx: Context) -> str:
    """A short answer to a subquestion from its own contexts (resolves <Ans_of_Qi>)."""
    text = SUB_ANSWER.complete(ctx, max_tokens=24, question=question, contexts=contexts)
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[0].rstrip(".") if lines else ""


RERANKER = Role("reranker", "qdrag/rerank")


def relevance(question: str, context: Evidence, ctx: Context) -> float:
    return RERANKER.p_yes(ctx, question=question, context=context)


def score_all(pairs: list[tuple[str, Evidence]], ctx: Context) -> list[float]:
    """S for every (question, context) pair, ``parallel_calls`` requests in flight (in the
    pairs' order, one by one, against the embedded server)."""
    return fan_out(lambda pair: relevance(*pair, ctx), pairs, parallel_calls(ctx))
