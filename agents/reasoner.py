"""MMAPG's reasoning module: answers an instruction from the nodes it is given (the parents of
an answer node, or the whole graph when the loop ends without an answer, Alg. 1 line 24)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from hopgraph.config import Context
from hopgraph.models import chat_model, user
from hopgraph.prompts import prompts_for


class Reasoned(BaseModel):
    rationale: str = ""
    answer: str


NO_ANSWER = "unknown"
"""The reasoner's fallback answer: a reply that stays malformed answers nothing, and says so."""


def reason(instruction: str, nodes: list[dict[str, Any]], ctx: Context) -> Reasoned:
    prompt = prompts_for(ctx.prompts_dir).render(
        "mmapg/reason", instruction=instruction, nodes=nodes
    )
    out = chat_model(ctx).structured(
        [user(prompt)],
        Reasoned,
        role="reasoner",
        template="mmapg/reason",
        max_tokens=160,
        fallback=Reasoned(rationale="the reasoning reply was malformed", answer=NO_ANSWER),
    )
    return Reasoned(rationale=out.rationale.strip(), answer=out.answer.strip().rstrip("."))
