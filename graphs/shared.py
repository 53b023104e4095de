"""The contract every graph speaks, so the runner, ``ask``, ``eval`` and LangGraph Studio need
no per-graph knowledge: ``InputState`` in, ``OutputState`` out (``typing_extensions``
TypedDicts, from which pydantic builds the JSON schemas Studio reads on Python < 3.12)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from langgraph.graph import StateGraph
from typing_extensions import NotRequired, TypedDict

from hopgraph.agents.generator import CitedAnswer
from hopgraph.config import Context
from hopgraph.memory.evidence import Evidence
from hopgraph.models import question_model


class InputState(TypedDict):
    """A question as every graph takes it; the gold fields are for tools, no graph reads them."""

    question: str
    id: NotRequired[str]
    images: NotRequired[list[str]]
    """The question's own images: paths or URLs, sent to VLM calls as data URLs."""
    doc: NotRequired[str]
    """The document a question is about (MAB-DQA: the PDF's file name as indexed)."""
    gold_answers: NotRequired[list[str]]
    gold_evidence: NotRequired[list[str]]


class OutputState(TypedDict, total=False):
    answer: str
    response: str
    evidence: list[Evidence]
    """The numbered contexts the response was written from ([n] is ``evidence[n-1]``)."""
    citations: list[str]
    """Ids of the contexts the response cites."""
    invalid_citations: list[int]
    """Cited numbers with no context behind them."""


def output_of(values: dict) -> OutputState:
    """The contract's part of a graph's final state. A checkpoint written before ``evidence``
    was in the contract gives its ``kept`` or ``contexts`` instead."""
    out = {k: values[k] for k in OutputState.__annotations__ if k in values}
    if "evidence" not in out and ("kept" in values or "contexts" in values):
        out["evidence"] = values.get("kept", values.get("contexts", []))
    return OutputState(**out)


def images_need_a_vlm(state: dict, ctx) -> None:  # noqa: ANN001 - a Context
    """Before any model call: a question with images and no VLM configured is refused, never
    answered blind (a graph whose first calls are not the question's own, MAB-DQA's page
    judgements, would otherwise spend them first)."""
    if state.get("images"):
        question_model(ctx, state["images"], state.get("id") or state["question"][:60])


def cited_output(answer: CitedAnswer, evidence: list[Evidence]) -> OutputState:
    """The contract's output of an answer written with [n] citations over ``evidence``."""
    return {
        "response": answer.text,
        "answer": answer.answer,
        "evidence": evidence,
        "citations": [evidence[i - 1]["id"] for i in answer.cited],
        "invalid_citations": answer.invalid,
    }


def contract_builder(state: type, *nodes: Callable) -> StateGraph:
    """A StateGraph that speaks the contract (InputState in, OutputState out, a ``Context``),
    with ``nodes`` added under their function names."""
    builder = StateGraph(
        state, context_schema=Context, input_schema=InputState, output_schema=OutputState
    )
    for node in nodes:
        builder.add_node(node)
    return builder


def add_chain(builder: StateGraph, *steps: str) -> None:
    """Edges from each step to the next (``START`` and ``END`` included where given)."""
    for a, b in itertools.pairwise(steps):
        builder.add_edge(a, b)
