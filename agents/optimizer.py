"""The proposer: reads a role's failing calls from the traces and writes an instruction for it
(the "propose" step of ``hopgraph optimize``, as in MIPROv2's grounded proposer)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from hopgraph.agents.role import Role
from hopgraph.config import Context


class Proposal(BaseModel):
    reasoning: str = ""
    """What the proposer read in the failures, kept in the optimizer's record."""
    instruction: str = ""
    """Plain text placed before the role's template."""


PROPOSER = Role("proposer", "optimize/propose", schema=Proposal)


def propose_instruction(
    template: str, source: str, failures: list[dict[str, Any]], ctx: Context
) -> Proposal:
    """An instruction for ``template`` (its text ``source``) from ``failures``: each a dict of
    question, gold, answer, and the role's prompt and reply on it. An unreadable reply gives an
    empty proposal (recorded as a fallback; the optimizer skips it)."""
    return PROPOSER.structured(
        ctx, fallback=Proposal(), max_tokens=400, template=template, source=source,
        failures=failures,
    )  # fmt: skip
