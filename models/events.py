"""The typed trace events, one class per kind: an LLM call, a retrieval, a repair of a
malformed output, a role's declared fallback, an empty reply, and a method's own step. Each is
written to the trace as ``{"event": name, **fields}``; the runner counts them as they stream."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

EventSink = Callable[[dict[str, Any]], None]

_tally: ContextVar[dict[str, int] | None] = ContextVar("hopgraph_call_tally", default=None)
_tally_lock = threading.Lock()
_spend: ContextVar[dict[str, Any] | None] = ContextVar("hopgraph_question_spend", default=None)


@dataclass
class Event:
    event: ClassVar[str] = ""

    def as_event(self) -> dict[str, Any]:
        return {"event": self.event, **asdict(self)}


@dataclass
class LLMCall(Event):
    """One chat request: who asked (role), with which template, what it cost."""

    event: ClassVar[str] = "llm_call"
    role: str
    template: str
    model: str
    kind: str  # text | structured | p_yes | probe
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    started: float = 0.0
    """Wall-clock start (epoch seconds): with ``latency_s``, the call's interval, from which
    a question's critical-path depth is read."""
    attempts: int = 1
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)
    """What was sent: each message's text (whole, or cut at ``trace_text_cap`` with a marker
    saying how much), an image as a reference (type, bytes, sha256), never its bytes."""
    sampling: dict[str, Any] = field(default_factory=dict)
    """The request's settings as sent (max_tokens, temperature, response_format, logprobs...)."""
    reply: str | None = None
    """The raw reply text (None where no reply came)."""
    parsed: Any = None
    """What the caller read from it: a structured reply's object, P(Yes) with the top
    logprobs it was read from."""
    parse_error: str | None = None
    """Why the reply could not be read (a structured reply that did not validate)."""


@dataclass
class Retrieval(Event):
    """One search: the query, the ranked ids and scores it returned, and what steered it."""

    event: ClassVar[str] = "retrieval"
    role: str
    query: str
    ids: list[str]
    scores: list[float]
    latency_s: float
    extra: dict[str, Any] = field(default_factory=dict)
    """GRAIL's mode, the held context and the gate; flattened into the event."""

    @classmethod
    def of(cls, role: str, query: str, hits: list, began: float, **extra: Any) -> Retrieval:
        """From Evidence found since ``began`` (a ``perf_counter`` reading)."""
        return cls(
            role,
            query,
            [h["id"] for h in hits],
            [round(h["score"], 4) for h in hits],
            round(time.perf_counter() - began, 5),
            extra,
        )

    def as_event(self) -> dict[str, Any]:
        event = super().as_event()
        return event | event.pop("extra")


@dataclass
class Fallback(Event):
    """A role's output could not be used, and its declared fallback stood in for it."""

    event: ClassVar[str] = "fallback"
    role: str
    reason: str
    used: Any = None
    template: str = ""
    raw: str = ""


@dataclass
class Repair(Event):
    """A malformed output was mended (and used), not replaced: what was wrong, what was done."""

    event: ClassVar[str] = "repair"
    role: str
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class LLMRequest(Event):
    """A request on its way to the endpoint, written before its reply comes: a call whose
    reply never came (its process was killed) still shows as one the endpoint received."""

    event: ClassVar[str] = "llm_request"
    role: str
    template: str
    request: str
    """The request's key (the response cache's, cut to 16 hex): its ``llm_call`` carries it
    too (``extra.request``), and a resume that sends it again is known by it."""


@dataclass
class EmptyReply(Event):
    event: ClassVar[str] = "empty_reply"
    role: str
    template: str = ""


@dataclass
class Step(Event):
    """A method's own step (a bandit step, the hypergraph, a run summary), under its name."""

    name: str
    fields: dict[str, Any] = field(default_factory=dict)

    def as_event(self) -> dict[str, Any]:
        return {"event": self.name, **self.fields}


def emit(event: Event, sink: EventSink | None = None) -> None:
    """Send ``event`` (as its wire dict) to ``sink`` and, inside a LangGraph run, to its custom
    stream."""
    wire = event.as_event()
    if sink is not None:
        sink(wire)
    if wire.get("event") == "llm_call":
        used = wire.get("prompt_tokens", 0) + wire.get("completion_tokens", 0)
        with _tally_lock:
            if (tally := _tally.get()) is not None:
                tally["calls"] += 1
                tally["tokens"] += used
                if not (wire.get("extra") or {}).get("cached"):  # what reached the endpoint
                    tally["sent_prompt"] += wire.get("prompt_tokens", 0)
                    tally["sent_completion"] += wire.get("completion_tokens", 0)
            if (spend := _spend.get()) is not None:
                spend["tokens"] += used
    try:
        from langgraph.config import get_config, get_stream_writer

        writer = get_stream_writer()
        meta = get_config().get("metadata") or {}
    except (RuntimeError, ImportError, KeyError):  # outside a graph run (or in a bare tool call)
        return
    writer(wire | where_in_graph(meta))


def where_in_graph(meta: dict[str, Any]) -> dict[str, str]:
    """The node and task an event was sent from (a run's config metadata), so a trace ties
    each call to the node that made it, parallel branches (``Send``) told apart by task id:
    the id LangGraph's ``tasks`` stream names the node's start and end with."""
    node, ns = meta.get("langgraph_node"), str(meta.get("langgraph_checkpoint_ns") or "")
    task = ns.rsplit("|", 1)[-1].rpartition(":")[2] if ns else ""
    return {**({"node": str(node)} if node else {}), **({"task": task} if task else {})}


@contextmanager
def tally_calls() -> Iterator[dict[str, int]]:
    """Counts the LLM calls (and their tokens) made inside the block, parallel branches that
    copy the context included: how MMAPG attributes calls to each planning-graph node."""
    tally = {"calls": 0, "tokens": 0, "sent_prompt": 0, "sent_completion": 0}
    token = _tally.set(tally)
    try:
        yield tally
    finally:
        _tally.reset(token)


@contextmanager
def question_spend(tokens: int = 0) -> Iterator[dict[str, Any]]:
    """Counts every token one question's LLM calls use, from ``tokens`` (what a resumed
    question spent before), for its cap (``max_question_tokens``): whoever streams the graph
    opens it, and every node sees it (LangGraph runs a node in a copy of the caller's
    context)."""
    spend = {"tokens": tokens, "stopped": False}
    token = _spend.set(spend)
    try:
        yield spend
    finally:
        _spend.reset(token)


def question_spent() -> dict[str, Any] | None:
    """The running question's spend, None outside ``question_spend``."""
    return _spend.get()
