"""Events the model layer reports, so a trace can record every LLM call."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

EventSink = Callable[[dict[str, Any]], None]


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
    attempts: int = 1
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_event(self) -> dict[str, Any]:
        return {"event": "llm_call", **asdict(self)}


def emit(event: dict[str, Any], sink: EventSink | None = None) -> None:
    """Send ``event`` to ``sink`` and, inside a LangGraph run, to its custom stream."""
    if sink is not None:
        sink(event)
    try:
        from langgraph.config import get_stream_writer

        writer = get_stream_writer()
    except (RuntimeError, ImportError, KeyError):  # outside a graph run (or in a bare tool call)
        return
    writer(event)
