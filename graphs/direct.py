"""``direct``: one closed-book LLM call, the no-retrieval reference point for every method."""

from __future__ import annotations

from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from hopgraph.agents.answerer import answer_closed_book
from hopgraph.config import Context


class State(TypedDict, total=False):
    question: str
    answer: str


def answer(state: State, runtime: Runtime[Context]) -> State:
    return {"answer": answer_closed_book(state["question"], runtime.context or Context())}


builder = StateGraph(State, context_schema=Context)
builder.add_node("answer", answer)
builder.add_edge(START, "answer")
builder.add_edge("answer", END)
graph = builder.compile(name="direct")
