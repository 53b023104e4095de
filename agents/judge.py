"""The support judge: does a text support a claim? P(Yes) >= 0.5 (ALCE-style AutoAIS)."""

from __future__ import annotations

from hopgraph.config import Context
from hopgraph.models import chat_model, user
from hopgraph.prompts import prompts_for


def support_probability(evidence: str, claim: str, ctx: Context) -> float:
    prompt = prompts_for(ctx.prompts_dir).render("common/supports", evidence=evidence, claim=claim)
    return chat_model(ctx).p_yes([user(prompt)], role="judge", template="common/supports")


def supports(evidence: str, claim: str, ctx: Context) -> bool:
    return support_probability(evidence, claim, ctx) >= 0.5
