"""``direct``: one closed-book LLM call, the no-retrieval reference point for every method."""

from __future__ import annotations

from langgraph.graph import END
from langgraph.runtime import Runtime

from hopgraph.agents.answerer import answer_closed_book
from hopgraph.config import Context, MethodSpec
from hopgraph.graphs.shared import (
    InputState,
    add_chain,
    context,
    contract_builder,
)

SPEC = MethodSpec("direct", "no retrieval: the model answers from what it knows")


class State(InputState, total=False):
    answer: str


def answer(state: State, runtime: Runtime[Context]) -> State:
    ctx = context(runtime)
    return {"answer": answer_closed_book(state["question"], ctx, state.get("images", []))}


builder = contract_builder(State, answer)
add_chain(builder, "answer", END)
graph = builder.compile(name="direct")
