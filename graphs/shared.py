"""The contract every graph speaks, so the runner, ``ask``, ``eval`` and LangGraph Studio need
no per-graph knowledge: ``InputState`` in, ``OutputState`` out (``typing_extensions``
TypedDicts, from which pydantic builds the JSON schemas Studio reads on Python < 3.12)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar, overload

from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import NotRequired, TypedDict

from hopgraph.agents.generator import CitedAnswer
from hopgraph.config import Context, client_of
from hopgraph.memory.evidence import Evidence
from hopgraph.models import question_model
from hopgraph.models.events import Step, emit, question_spent


class InputState(TypedDict):
    """A question as every graph takes it. No gold field: a served client never sends the
    answer, and scoring reads gold from the question file."""

    question: str
    id: NotRequired[str]
    images: NotRequired[list[str]]
    """The question's own images: paths or URLs, sent to VLM calls as data URLs."""
    doc: NotRequired[str]
    """The document a question is about (MAB-DQA: the PDF's file name as indexed)."""


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


def over_budget(ctx: Context, at: str) -> bool:
    """Whether the question has spent its ``max_question_tokens``; the first time, a
    ``budget_stop`` event says where the method stopped (``at``) and what it had spent."""
    spend = question_spent()
    if not ctx.max_question_tokens or spend is None:
        return False
    if spend["tokens"] < ctx.max_question_tokens:
        return False
    if not spend["stopped"]:
        spend["stopped"] = True
        emit(
            Step(
                "budget_stop", {"at": at, "spent": spend["tokens"], "cap": ctx.max_question_tokens}
            )
        )
    return True


C = TypeVar("C", bound=Context)


@overload
def context(runtime: Runtime[Any]) -> Context: ...
@overload
def context(runtime: Runtime[Any], schema: type[C]) -> C: ...
def context(runtime: Runtime[Any], schema: type[Context] = Context) -> Context:
    """The Context a node runs with (checked when it was made), as its graph's ``schema``:
    the defaults where a graph was invoked without one, its method's knobs at their defaults
    where it was invoked with a Context that lacks them."""
    return schema.adopt(runtime.context) if runtime.context is not None else schema()


REFUSED_IMAGE = "an image of this question cannot be read here"
"""The one refusal of a question image a client may not have read, whatever the reason (outside
the image roots, missing, unreadable), so a refusal says nothing about the server's disk."""


def admit(state: Mapping[str, Any], ctx) -> None:  # noqa: ANN001 - a Context
    """Before any model call. A question a client sent (a Context not built by the operator)
    must keep within the operator's limits (length, number and pixel size of images), may
    name image files only inside ``image_roots`` (data and http(s) URLs need none), and a
    ``doc`` the knowledge base holds; each refusal names the limit, never a path. Then, for
    everyone: a question with images and no VLM configured is refused, never answered blind
    (a graph whose first calls are not the question's own, MAB-DQA's page judgements, would
    otherwise spend them first)."""
    from hopgraph.models.images import image_size, is_url

    images = state.get("images") or []
    roots = [Path(r).resolve() for r in ctx.image_roots.split(os.pathsep) if r]
    for image in images:
        if is_url(image) or (ctx.is_operator and not roots):
            continue
        path = Path(image).resolve()
        if not any(path.is_relative_to(r) for r in roots) or not path.is_file():
            raise ValueError(REFUSED_IMAGE)
    if not ctx.is_operator:
        if len(state["question"]) > ctx.limit_question_chars:
            raise ValueError(f"the question is longer than {ctx.limit_question_chars} characters")
        if len(images) > ctx.limit_images:
            raise ValueError(f"a question may carry at most {ctx.limit_images} images here")
        for image in images:
            try:
                w, h = image_size(image)
            except ValueError:
                raise ValueError(REFUSED_IMAGE) from None
            if w * h > ctx.limit_image_pixels:
                raise ValueError(f"an image is larger than {ctx.limit_image_pixels} pixels")
        if state.get("doc"):
            from hopgraph.tools.retrieval import knowledge_base

            if not knowledge_base(ctx).pages_of(state["doc"]):
                raise ValueError(f"document {state['doc']!r} is not available")
    if images:
        question_model(ctx, images, state.get("id") or state["question"][:60])


def cited_output(answer: CitedAnswer, evidence: list[Evidence]) -> OutputState:
    """The contract's output of an answer written with [n] citations over ``evidence``."""
    return {
        "response": answer.text,
        "answer": answer.answer,
        "evidence": evidence,
        "citations": [evidence[i - 1]["id"] for i in answer.cited],
        "invalid_citations": answer.invalid,
    }


def admit_question(state: InputState, runtime: Runtime[Context]) -> dict:
    """The entry of every graph ``contract_builder`` makes: ``admit`` before any model call."""
    admit(state, context(runtime))
    return {}


def contract_builder(
    state: type, first: Callable, *nodes: Callable, context: type[Context] = Context
) -> StateGraph[Any, Any, Any, Any]:
    """A StateGraph that speaks the contract (InputState in, OutputState out, ``context``: the
    graph's Context class, ``context_class`` of its settings), with ``first`` and ``nodes``
    added under their function names. Its entry is the question's admission
    (``admit_question``), then ``first``: a graph adds no edge from ``START``."""
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(  # a client's context: its class
        state,
        context_schema=client_of(context),
        input_schema=InputState,
        output_schema=OutputState,
    )
    for node in (admit_question, first, *nodes):
        builder.add_node(node)
    add_chain(builder, START, "admit_question", first.__name__)
    return builder


def add_chain(builder: StateGraph[Any, Any, Any, Any], *steps: str) -> None:
    """Edges from each step to the next (``START`` and ``END`` included where given)."""
    for a, b in itertools.pairwise(steps):
        builder.add_edge(a, b)
