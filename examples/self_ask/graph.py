"""Self-Ask (Press et al., 2022) as a method of one's own, built only from hopgraph's public
parts, all from one module (``hopgraph.graphs.kit``): a ``Role`` per call site, the retrieval
service, ``Evidence``, typed events and ``contract_builder``. The model asks one simpler
follow-up question at a time; each is searched and answered from its passages; the final answer
cites every passage the hops read. It stops asking at ``self_ask_max_hops`` (its own knob,
declared as the built-in methods declare theirs: ``--set self_ask_max_hops=5``) or the
question's token cap.

    hopgraph run --graph examples/self_ask/graph.py:graph --questions q.jsonl --kb kb --out run
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, TypedDict

from langgraph.graph import END
from langgraph.runtime import Runtime
from pydantic import BaseModel

from hopgraph.graphs.kit import (
    Evidence,
    InputState,
    Role,
    Shown,
    Step,
    add_template_folder,
    cited_output,
    context,
    context_class,
    contract_builder,
    emit,
    generate_cited_answer,
    knob,
    over_budget,
    search,
)

add_template_folder(Path(__file__).parent / "prompts")
INTERMEDIATE = Role(
    "self_ask_intermediate", "self_ask/intermediate", inputs=("question", "contexts")
)


@dataclass(kw_only=True)
class SelfAskSettings:
    self_ask_max_hops: int = knob(3, least=0, most=8)
    """Follow-up questions asked at most (a client of a served graph may ask for up to 8)."""


SelfAskContext = context_class("SelfAskContext", SelfAskSettings)


class FollowUp(BaseModel):
    follow_up: Annotated[
        str, Shown("<the next simpler question, or an empty string when no step is left>")
    ] = ""


NEXT = Role(
    "self_ask_next",
    "self_ask/next",
    inputs=("question", "hops"),
    schema=FollowUp,
    fallback=FollowUp(),
)


class Hop(TypedDict):
    question: str
    answer: str
    ids: list[str]


class State(InputState, total=False):
    hops: Annotated[list[Hop], operator.add]
    read: Annotated[list[Evidence], operator.add]
    """Every passage a hop found (the output's ``evidence`` is what the answer cites from)."""
    follow_up: str
    answer: str
    response: str


def ask(state: State, runtime: Runtime[SelfAskContext]) -> State:
    """The next follow-up question, or none when the hops suffice (or the cap is reached)."""
    ctx = context(runtime, SelfAskContext)
    hops = state.get("hops", [])
    if len(hops) >= ctx.self_ask_max_hops or over_budget(
        ctx, "ask"
    ):  # the question's token cap spent
        return {"follow_up": ""}
    reply = NEXT.structured(ctx, max_tokens=80, question=state["question"], hops=hops)
    asked = reply.follow_up.strip()
    repeated = asked.lower() in {h["question"].lower() for h in hops}
    return {"follow_up": "" if repeated else asked}


def hop(state: State, runtime: Runtime[SelfAskContext]) -> State:
    """Search the follow-up and answer it from what was found."""
    ctx = context(runtime, SelfAskContext)
    found = search(state["follow_up"], ctx)
    answer = (
        INTERMEDIATE.complete(ctx, max_tokens=24, question=state["follow_up"], contexts=found)
        .strip()
        .splitlines()
    )
    done: Hop = {
        "question": state["follow_up"],
        "answer": (answer or ["unknown"])[0],
        "ids": [e["id"] for e in found],
    }
    emit(Step("self_ask_hop", dict(done)))
    return {"hops": [done], "read": found}


def finish(state: State, runtime: Runtime[SelfAskContext]) -> State:
    """The cited answer over every passage the hops read (the question's own search first)."""
    ctx = context(runtime, SelfAskContext)
    seen: dict[str, Evidence] = {}
    for e in [*search(state["question"], ctx), *state.get("read", [])]:
        seen.setdefault(e["id"], e)
    contexts = list(seen.values())[: 2 * ctx.top_k]
    out = generate_cited_answer(state["question"], contexts, ctx, images=state.get("images", []))
    return cited_output(out, contexts)


builder = contract_builder(State, ask, hop, finish, context=SelfAskContext)
builder.add_conditional_edges(
    "ask", lambda s: "hop" if s.get("follow_up") else "finish", ["hop", "finish"]
)
builder.add_edge("hop", "ask")
builder.add_edge("finish", END)
graph = builder.compile(name="self-ask")
