"""``rag``: plain dense retrieval-augmented generation with inline citations, the baseline
every method is compared with."""

from __future__ import annotations

from langgraph.graph import END
from langgraph.runtime import Runtime

from hopgraph.agents.generator import generate_cited_answer
from hopgraph.config import Context, MethodSpec
from hopgraph.graphs.shared import (
    InputState,
    OutputState,
    add_chain,
    cited_output,
    context,
    contract_builder,
)
from hopgraph.memory.evidence import Evidence
from hopgraph.tools.retrieval import search

SPEC = MethodSpec("rag", "one search, a cited answer; fastest")


class State(InputState, total=False):
    contexts: list[Evidence]
    response: str
    answer: str
    citations: list[str]
    invalid_citations: list[int]


def retrieve(state: State, runtime: Runtime[Context]) -> State:
    return {"contexts": search(state["question"], context(runtime))}


def generate(state: State, runtime: Runtime[Context]) -> OutputState:
    contexts = state.get("contexts", [])
    ctx = context(runtime)
    out = generate_cited_answer(state["question"], contexts, ctx, images=state.get("images", []))
    return cited_output(out, contexts)


builder = contract_builder(State, retrieve, generate)
add_chain(builder, "retrieve", "generate", END)
graph = builder.compile(name="rag")
