"""QDRAG's decomposer: QD-C (one call: entity replacement + open decomposition, guided by the
retrieved contexts) and QD-R (a zero-shot plan with <Ans_of_Qi> placeholders)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from hopgraph.config import Context
from hopgraph.models import chat_model, user
from hopgraph.models.events import Repair, emit
from hopgraph.prompts import prompts_for
from hopgraph.tools.replies import qdc_subquestions


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


def decompose_qdc(question: str, contexts: list[dict[str, Any]], ctx: Context) -> list[str]:
    """Exactly one model call; its output becomes subquestions by ``qdc_subquestions``.
    Fallback: no subquestion, so the raw question alone reranks (recorded)."""
    prompt = prompts_for(ctx.prompts_dir).render(
        "qdrag/decompose_qdc", question=question, contexts=contexts
    )
    out = chat_model(ctx).structured(
        [user(prompt)],
        QDCOutput,
        role="decomposer",
        template="qdrag/decompose_qdc",
        fallback=QDCOutput(),
    )
    subs, dropped, rebuilt = qdc_subquestions(out, question)
    if dropped:
        emit(Repair("decomposer", {"dropped": dropped}))
    for r in rebuilt:
        emit(Repair("decomposer", {"rebuilt": r}))
    return subs


def plan_qdr(
    question: str, ctx: Context, *, temperature: float | None = None
) -> list[dict[str, str]]:
    """A zero-shot plan as raw dicts (``tools.qdrag_budget.parse_plan`` validates it)."""
    prompt = prompts_for(ctx.prompts_dir).render("qdrag/plan_qdr", question=question)
    model = chat_model(ctx)
    if temperature is not None:  # sampling several plans for QDARF
        text = model.complete(
            [user(prompt)],
            role="decomposer",
            template="qdrag/plan_qdr",
            temperature=temperature,
            max_tokens=300,
        )
        from hopgraph.models.chat import extract_json

        return [
            s.model_dump() for s in QDRPlan.model_validate_json(extract_json(text)).subquestions
        ]
    out = model.structured(
        [user(prompt)],
        QDRPlan,
        role="decomposer",
        template="qdrag/plan_qdr",
        fallback=QDRPlan(subquestions=[]),  # no plan: the raw question alone reranks
    )
    return [s.model_dump() for s in out.subquestions]


def answer_from(question: str, contexts: list[dict[str, Any]], ctx: Context) -> str:
    """A short answer to a subquestion from its own contexts (resolves <Ans_of_Qi>)."""
    prompt = prompts_for(ctx.prompts_dir).render(
        "qdrag/sub_answer", question=question, contexts=contexts
    )
    text = chat_model(ctx).complete(
        [user(prompt)], role="subanswerer", template="qdrag/sub_answer", max_tokens=24
    )
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[0].rstrip(".") if lines else ""
