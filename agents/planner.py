"""MMAPG's planning module (Sec. 3.3): the overall plan, generated once (P_plan_gen), and each
step's decision (Eq. 4): the new node's type, its parents and its instruction."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from hopgraph.agents.role import CALLER_HANDLES, Role
from hopgraph.config import Context


class PlannerStep(BaseModel):
    """I_C, I_parent, I_instr of Eq. 4 (the analysis first, so the model reads before choosing)."""

    analysis: str = ""
    type: Literal["question", "retrieval", "answer", "stop"]
    parents: list[str] = Field(default_factory=list)
    instruction: str = ""


PLAN = Role("planner", "mmapg/plan")
PLANNER = Role("planner", "mmapg/planner")


def overall_plan(question: str, ctx: Context, images: list[str] = ()) -> str:  # type: ignore[assignment]
    """P_plan_gen: the global plan the planner consults at every step. A question's pictures
    go with it to the VLM, so the plan names what they show."""
    text = PLAN.complete(
        ctx, pictures=images, max_tokens=200, question=question, picture=bool(images)
    )
    return text.strip()


def plan_step(
    question: str,
    plan: str,
    nodes: list[dict[str, Any]],
    ctx: Context,
    *,
    single_path: bool,
    repeated: dict[str, Any] | None = None,
) -> PlannerStep:
    """P_plan ⊕ P_state(G) ⊕ P_parent ⊕ P_C → the next node (Eq. 4). ``repeated``: the step
    it proposed last that repeats one it already took (its type, instruction and the node it
    repeats, with what that node found), so it chooses again knowing so. Raises
    ``StructuredOutputError`` when the reply is malformed even after one repair (the graph
    mends the step)."""
    return PLANNER.structured(
        ctx,
        PlannerStep,
        fallback=CALLER_HANDLES,
        max_tokens=300,
        question=question,
        plan=plan,
        nodes=nodes,
        single_path=single_path,
        repeated=repeated,
    )
