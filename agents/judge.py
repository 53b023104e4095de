"""The support judge: does a text support a claim? P(Yes) >= 0.5 (ALCE-style AutoAIS)."""

from __future__ import annotations

from hopgraph.agents.role import Role
from hopgraph.config import Context

JUDGE = Role("judge", "common/supports", inputs=("evidence", "claim"))


def support_probability(evidence: str, claim: str, ctx: Context) -> float:
    return JUDGE.p_yes(ctx, evidence=evidence, claim=claim)


def supports(evidence: str, claim: str, ctx: Context) -> bool:
    return support_probability(evidence, claim, ctx) >= 0.5
