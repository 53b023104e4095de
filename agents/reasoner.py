"""MMAPG's reasoning module: answers an instruction from the nodes it is given (the parents of
an answer node, or the whole graph when the loop ends without an answer, Alg. 1 line 24)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from hopgraph.agents.role import Role
from hopgraph.config import Context


class Reasoned(BaseModel):
    rationale: str = ""
    answer: str


NO_ANSWER = "unknown"
"""The reasoner's fallback answer: a reply that stays malformed answers nothing, and says so."""


REASONER = Role("reasoner", "mmapg/reason")


def reason(
    instruction: str,
    nodes: list[dict[str, Any]],
    ctx: Context,
    images: list[str] = (),  # type: ignore[assignment]
) -> Reasoned:
    """The answer to ``instruction`` from the nodes' contents (and the question's pictures,
    to the VLM)."""
    out = REASONER.structured(
        ctx,
        Reasoned,
        fallback=Reasoned(rationale="the reasoning reply was malformed", answer=NO_ANSWER),
        pictures=images,
        max_tokens=160,
        instruction=instruction,
        nodes=nodes,
        picture=bool(images),
    )
    return Reasoned(rationale=out.rationale.strip(), answer=out.answer.strip().rstrip("."))
