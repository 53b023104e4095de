"""Events the model layer reports, so a trace can record every LLM call."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import Any

EventSink = Callable[[dict[str, Any]], None]

_tally: ContextVar[dict[str, int] | None] = ContextVar("hopgraph_call_tally", default=None)
_tally_lock = threading.Lock()


@dataclass
class LLMCall:
    """One chat request: who asked (role), with which template, what it cost."""

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

    def as_event(self) -> dict[str, Any]:
        return {"event": "llm_call", **asdict(self)}


def emit(event: dict[str, Any], sink: EventSink | None = None) -> None:
    """Send ``event`` to ``sink`` and, inside a LangGraph run, to its custom stream."""
    if sink is not None:
        sink(event)
    if event.get("event") == "llm_call" and (tally := _tally.get()) is not None:
        with _tally_lock:
            tally["calls"] += 1
            tally["tokens"] += event.get("prompt_tokens", 0) + event.get("completion_tokens", 0)
    try:
        from langgraph.config import get_stream_writer

        writer = get_stream_writer()
    except (RuntimeError, ImportError, KeyError):  # outside a graph run (or in a bare tool call)
        return
    writer(event)


@contextmanager
def tally_calls() -> Iterator[dict[str, int]]:
    """Counts the LLM calls (and their tokens) made inside the block, parallel branches that
    copy the context included: how MMAPG attributes calls to each planning-graph node."""
    tally = {"calls": 0, "tokens": 0}
    token = _tally.set(tally)
    try:
        yield tally
    finally:
        _tally.reset(token)
