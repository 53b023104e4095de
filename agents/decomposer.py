"""QDRAG's decomposer: QD-C (one call: entity replacement + open decomposition, guided by the
retrieved contexts) and QD-R (a zero-shot plan with <Ans_of_Qi> placeholders)."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from hopgraph.config import Context
from hopgraph.models import chat_model, user
from hopgraph.models.events import emit
from hopgraph.prompts import prompts_for


class Replacement(BaseModel):
    reference: str
    entity: str


class QDCOutput(BaseModel):
    replacements: list[Replacement] = Field(default_factory=list)
    subquestions: list[str] = Field(default_factory=list)


class PlanStep(BaseModel):
    id: str
    question: str


class QDRPlan(BaseModel):
    subquestions: list[PlanStep]


def decompose_qdc(question: str, contexts: list[dict[str, Any]], ctx: Context) -> list[str]:
    """Exactly one model call; its output becomes subquestions by ``qdc_subquestions``."""
    prompt = prompts_for(ctx.prompts_dir).render(
        "qdrag/decompose_qdc", question=question, contexts=contexts
    )
    out = chat_model(ctx).structured(
        [user(prompt)], QDCOutput, role="decomposer", template="qdrag/decompose_qdc"
    )
    subs, dropped = qdc_subquestions(out, question)
    if dropped:
        emit({"event": "subquestions_dropped", "role": "decomposer", "dropped": dropped})
    return subs


def qdc_subquestions(out: QDCOutput, question: str) -> tuple[list[str], list[str]]:
    """(subquestions, dropped): each replacement yields "Is <reference> equivalent to
    <entity>?", the open decomposition's subquestions follow; duplicates merged. Dropped: a
    replacement of a phrase by itself, any part with no word in it (a copied "..." from the
    reply format) and the raw question. Such a subquestion carries nothing to rerank with, yet
    its flat scores have the highest entropy, so the budget would give it the most contexts."""
    subs, dropped = [], []
    for r in out.replacements:
        ref, ent = r.reference.strip(), r.entity.strip()
        if _has_word(ref) and _has_word(ent) and ref.casefold() != ent.casefold():
            subs.append(f"Is {ref} equivalent to {ent}?")
        else:
            dropped.append(f"Is {ref} equivalent to {ent}?")
    for s in (s.strip() for s in out.subquestions):
        (subs if _has_word(s) else dropped).append(s)
    raw = question.strip()
    dropped += [s for s in subs if s == raw]
    return [s for s in dict.fromkeys(subs) if s != raw], dropped


def _has_word(text: str) -> bool:
    return re.search(r"[^\W_]", text) is not None


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
    out = model.structured([user(prompt)], QDRPlan, role="decomposer", template="qdrag/plan_qdr")
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
