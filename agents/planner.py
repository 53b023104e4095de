"""MMAPG's planning module (Sec. 3.3): the overall plan, generated once (P_plan_gen), and each
step's decision (Eq. 4): the new node's type, its parents and its instruction."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from hopgraph.config import Context
from hopgraph.models import chat_model, user
from hopgraph.prompts import prompts_for


class PlannerStep(BaseModel):
    """I_C, I_parent, I_instr of Eq. 4 (the analysis first, so the model reads before choosing)."""

    analysis: str = ""
    type: Literal["question", "retrieval", "answer", "stop"]
    parents: list[str] = Field(default_factory=list)
    instruction: str = ""


def overall_plan(question: str, ctx: Context) -> str:
    """P_plan_gen: the global plan the planner consults at every step."""
    prompt = prompts_for(ctx.prompts_dir).render("mmapg/plan", question=question)
    return (
        chat_model(ctx)
        .complete([user(prompt)], role="planner", template="mmapg/plan", max_tokens=200)
        .strip()
    )


def plan_step(
    question: str, plan: str, nodes: list[dict[str, Any]], ctx: Context, *, single_path: bool
) -> PlannerStep:
    """P_plan ⊕ P_state(G) ⊕ P_parent ⊕ P_C → the next node (Eq. 4). Raises
    ``StructuredOutputError`` when the reply is malformed even after one repair."""
    prompt = prompts_for(ctx.prompts_dir).render(
        "mmapg/planner", question=question, plan=plan, nodes=nodes, single_path=single_path
    )
    return chat_model(ctx).structured(
        [user(prompt)], PlannerStep, role="planner", template="mmapg/planner", max_tokens=300
    )
