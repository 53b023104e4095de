"""The proposer: reads a role's failing calls from the traces and writes an instruction for it
(the "propose" step of ``hopgraph optimize``, as in MIPROv2's grounded proposer)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel

from hopgraph.agents.role import Role, Shown
from hopgraph.config import Context


class Proposal(BaseModel):
    reasoning: Annotated[str, Shown("what went wrong, in one or two sentences")] = ""
    """What the proposer read in the failures, kept in the optimizer's record."""
    instruction: Annotated[str, Shown("the instruction")] = ""
    """Plain text placed before the role's template."""


PROPOSER = Role(
    "proposer",
    "optimize/propose",
    inputs=("template", "source", "failures", "tip"),
    schema=Proposal,
    fallback=Proposal(),
)
"""Fallback: an empty proposal (recorded; the optimizer skips it)."""


def propose_instruction(
    template: str, source: str, failures: list[dict[str, Any]], ctx: Context, tip: str = ""
) -> Proposal:
    """An instruction for ``template`` (its text ``source``) from ``failures``: each a dict of
    question, gold, answer, and the role's prompt and reply on it; ``tip``: a short stated
    direction for this proposal (MIPROv2's grounded proposer), none by default. An unreadable
    reply gives an empty proposal (recorded as a fallback; the optimizer skips it)."""
    return PROPOSER.structured(
        ctx,
        max_tokens=400,
        template=template,
        source=source,
        failures=failures,
        tip=tip,
    )
