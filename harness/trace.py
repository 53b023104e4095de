"""One question's trace, read once into typed objects: every reader of a trace (the viewer's
API, the HTML report, ``hopgraph trace``, a user's own script) takes its steps, calls,
searches, marks, waterfall and passages from here, so two pages never count them two ways.

A trace file is a list of records as the runner streamed them (``{"mode": ..., "data": ...,
"ns": [...], "t": seconds}``): LangGraph's ``updates`` / ``values`` / ``tasks``, the method's
``custom`` events (``models.events``), the runner's ``start`` of each sitting and ``error``.
Older layouts read the same way: an event with no task id goes under the node opened last, a
call traced before calls kept their content has no messages, and a drawing kept in a node's
update is found there (``graph_view`` in ``presentation.report``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hopgraph.harness.run_folder import read_trace_checked, trace_path
from hopgraph.models.events import LLMRequest

MARKS = ("fallback", "empty_reply", "repair")
"""The events that say a role's output was not used as it came (``models.events``)."""


@dataclass
class Call:
    """One LLM call: what was sent and replied, what was read from it, and its time, with the
    server's own account of it where it sends one (``served``: ``first_token_s``, ``queued_s``
    waiting for a slot, ``prompt_s`` / ``decode_s``, prompt tokens ``prompt_read`` and
    ``prompt_reused`` from its cache)."""

    index: int
    node: str
    role: str
    template: str
    model: str
    kind: str
    messages: list[dict[str, Any]]
    reply: str | None
    parsed: Any
    parse_error: str | None
    sampling: dict[str, Any]
    cached: bool
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    ended: float
    """Seconds from the question's start when its reply was in."""
    attempts: int
    error: str | None
    served: dict[str, Any]
    event: dict[str, Any] = field(repr=False)
    """The event as traced (``models.events.LLMCall`` on the wire)."""

    @property
    def started(self) -> float:
        return max(0.0, self.ended - self.seconds)

    @property
    def waited(self) -> float | None:
        """Seconds it waited before the server began it: the server's own queue time where it
        reports its timings, else the wait for its first token (prompt reading included)."""
        return self.served.get("queued_s", self.served.get("first_token_s"))


@dataclass
class Search:
    """One retrieval: the query, the ids and scores it returned, and the node that asked."""

    index: int
    node: str
    role: str
    query: str
    ids: list[str]
    scores: list[float]
    seconds: float
    ended: float
    event: dict[str, Any] = field(repr=False)


@dataclass
class Mark:
    """A fallback, an empty reply or a repair: a role's output not used as it came."""

    kind: str
    node: str
    reason: str
    at: float
    event: dict[str, Any] = field(repr=False)


@dataclass
class Step:
    """One executed node in order, with the custom events it emitted (a request's own marker
    aside: its ``llm_call`` shows it) and the state update it wrote."""

    node: str
    ns: list[str]
    keys: list[str]
    events: list[dict[str, Any]] = field(default_factory=list)
    update: dict[str, Any] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return "/".join([*self.ns, self.node])

    @property
    def calls(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") == "llm_call"]


@dataclass
class Span:
    """A bar of the question's waterfall, in seconds from its start: a node, a call, a search
    or a mark, drawn inside the node that made it."""

    label: str
    kind: str  # node | llm | retrieval | mark
    start: float
    end: float
    depth: int
    node: str = ""
    call: int | None = None
    cached: bool = False
    queued_s: float | None = None
    first_token_s: float | None = None

    def as_dict(self) -> dict[str, Any]:
        out = {
            "label": self.label,
            "kind": self.kind,
            "start": round(self.start, 4),
            "end": round(self.end, 4),
            "depth": self.depth,
        }
        if self.kind != "node":
            out["node"] = self.node
        if self.kind == "llm":
            out |= {"call": self.call, "cached": self.cached}
            out |= {
                k: v for k in ("queued_s", "first_token_s") if (v := getattr(self, k)) is not None
            }
        return out


@dataclass
class Trace:
    """A question's trace: its records and what was damaged, then everything read from them."""

    records: list[dict[str, Any]]
    damaged: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    searches: list[Search] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    events: list[Call | Search | Mark] = field(default_factory=list)
    """Calls, searches and marks in the order they were traced."""
    passages: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Every piece of evidence the trace holds whole (node updates, final state), by id: what
    a search names by id only, with its text, title, source, page."""

    @classmethod
    def of(cls, records: list[dict[str, Any]], damaged: list[str] | None = None) -> Trace:
        trace = cls(records, list(damaged or []), steps=_steps(records))
        _timeline(trace)
        trace.passages = _passages(records)
        return trace

    @property
    def final_state(self) -> dict[str, Any]:
        """The last ``values`` record: the graph's state when the question ended."""
        for rec in reversed(self.records):
            if rec.get("mode") == "values" and isinstance(rec.get("data"), dict):
                return rec["data"]
        return {}

    def best_scores(self) -> dict[str, float]:
        """Each retrieved id's best score over every search."""
        best: dict[str, float] = {}
        for s in self.searches:
            for i, score in zip(s.ids, s.scores, strict=False):
                best[i] = max(best.get(i, float("-inf")), float(score))
        return best

    def calls_after_last_search(self) -> list[Call]:
        """What it did with what it last retrieved: the last call of each template after its
        last search, in the order of those last calls (the reasoning that wrote the answer,
        then its extraction where a method has one)."""
        cut = max((i for i, e in enumerate(self.events) if isinstance(e, Search)), default=-1)
        last: dict[str, Call] = {}
        for c in self.events[cut + 1 :]:
            if isinstance(c, Call):
                last.pop(c.template, None)
                last[c.template] = c
        return list(last.values())


def read_trace(path: str | Path) -> Trace:
    """A question's trace file (``<run>/traces/<qid>.jsonl``, packed or open), typed; a trace
    that is not there reads as an empty one."""
    records, damaged = read_trace_checked(path)
    return Trace.of(records, damaged)


def read_question_trace(run: str | Path, qid: str) -> Trace:
    """Question ``qid``'s trace in run folder ``run``."""
    return read_trace(trace_path(Path(run), qid))


def mark_reason(data: dict[str, Any]) -> str:
    """Why a fallback, empty reply or repair happened, and what stood in, in one line."""
    import json

    used = data.get("used")
    used = used if isinstance(used, str) else json.dumps(used)[:120] if used else ""
    detail = data["detail"] if isinstance(data.get("detail"), dict) else {}
    reason = data.get("reason") or ", ".join(f"{k} {v}" for k, v in detail.items())
    return f"{data.get('role', '?')}: {reason or '(no reason given)'}" + (
        f" (used: {used})" if used else ""
    )


def _steps(records: list[dict[str, Any]]) -> list[Step]:
    out: list[Step] = []
    pending: list[dict[str, Any]] = []
    for rec in records:
        data = rec.get("data")
        if rec.get("mode") == "custom" and isinstance(data, dict):
            if data.get("event") != LLMRequest.event:
                pending.append(data)
        elif rec.get("mode") == "updates" and isinstance(data, dict):
            for node, update in data.items():
                keys = sorted(update) if isinstance(update, dict) else []
                wrote = update if isinstance(update, dict) else {}
                out.append(Step(node, rec.get("ns", []), keys, pending, wrote))
                pending = []
        elif rec.get("mode") == "error":
            out.append(Step("error", [], [], [*pending, data or {}]))
            pending = []
    return out


def _timeline(trace: Trace) -> None:
    """The waterfall, calls, searches and marks, each under the node that made it (its task
    id, which the event carries; an older trace's event goes under the node opened last), a
    call ending at its record's time and lasting its latency. A resumed question's later
    sitting follows the earlier one."""
    tasks: dict[str, Span] = {}
    open_: list[Span] = []
    base = last = 0.0
    for rec in trace.records:
        if rec.get("mode") == "start":
            base = last if trace.spans else 0.0
            continue
        t = base + float(rec.get("t", 0.0))
        last = max(last, t)
        data, depth = rec.get("data") or {}, len(rec.get("ns") or [])
        if rec.get("mode") == "task" and isinstance(data, dict):
            if data.get("event") == "start":
                span = Span(str(data.get("name", "")), "node", t, t, depth)
                tasks[str(data.get("id", ""))] = span
                open_.append(span)
                trace.spans.append(span)
            elif (ended := tasks.get(str(data.get("id", "")))) is not None:
                ended.end = t
                open_ = [s for s in open_ if s is not ended]
            continue
        event = data.get("event") if rec.get("mode") == "custom" else None
        if event not in ("llm_call", "retrieval", *MARKS):
            continue
        node = tasks.get(str(data.get("task", ""))) or (open_[-1] if open_ else None)
        where, inner = (node.label if node else ""), (node.depth if node else depth) + 1
        took = float(data.get("latency_s") or 0.0)
        if event == "llm_call":
            call = _call(data, len(trace.calls), where, t)
            trace.calls.append(call)
            trace.events.append(call)
            trace.spans.append(
                Span(
                    call.template,
                    "llm",
                    call.started,
                    t,
                    inner,
                    where,
                    call.index,
                    call.cached,
                    call.served.get("queued_s"),
                    call.served.get("first_token_s"),
                )
            )
        elif event == "retrieval":
            ids = [str(i) for i in data.get("ids") or []]
            scores = [float(s) for s in data.get("scores") or []]
            search = Search(
                len(trace.searches),
                where,
                str(data.get("role", "")),
                str(data.get("query", "")),
                ids,
                scores,
                took,
                t,
                data,
            )
            trace.searches.append(search)
            trace.events.append(search)
            label = f"search: {str(data.get('query', ''))[:80]}"
            trace.spans.append(Span(label, "retrieval", max(0.0, t - took), t, inner, where))
        else:
            reason = mark_reason(data)
            trace.marks.append(Mark(str(event), where, reason, t, data))
            trace.events.append(trace.marks[-1])
            label = f"{str(event).replace('_', ' ')}: {reason}"
            trace.spans.append(Span(label, "mark", t, t, inner, where))


def _call(e: dict[str, Any], index: int, node: str, ended: float) -> Call:
    extra = e.get("extra") or {}
    served: dict[str, Any] = extra["served"] if isinstance(extra.get("served"), dict) else {}
    return Call(
        index=index,
        node=node,
        role=str(e.get("role", "")),
        template=str(e.get("template", "")),
        model=str(e.get("model", "")),
        kind=str(e.get("kind", "")),
        messages=list(e.get("messages") or []),
        reply=e.get("reply"),
        parsed=e.get("parsed"),
        parse_error=e.get("parse_error"),
        sampling=dict(e.get("sampling") or {}),
        cached=bool(extra.get("cached")),
        prompt_tokens=int(e.get("prompt_tokens") or 0),
        completion_tokens=int(e.get("completion_tokens") or 0),
        seconds=float(e.get("latency_s") or 0.0),
        ended=ended,
        attempts=int(e.get("attempts") or 1),
        error=str(e["error"]) if e.get("error") else None,
        served=dict(served),
        event=e,
    )


def _passages(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("id"), str) and isinstance(value.get("text"), str):
                found.setdefault(value["id"], value)
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for rec in records:
        if rec.get("mode") in ("updates", "values"):
            walk(rec.get("data"))
    return found
