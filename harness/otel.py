"""A question's trace as an OpenTelemetry trace, exported over OTLP/HTTP (or to any exporter).

The question is the root span; each graph node a child span (from the trace's ``task`` start and
end records), with the LLM calls (GenAI semantic conventions: model, input and output tokens)
and retrievals (their ids) as spans inside the node that made them. Built from the trace file
once the question ends, with the times it recorded, so a resumed question exports whole.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import Span, Status, StatusCode, Tracer, set_span_in_context


def otel_endpoint(flag: str = "") -> str:
    """The OTLP endpoint: the flag, else ``OTEL_EXPORTER_OTLP_ENDPOINT``; "" for none."""
    return flag or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "")


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL of a collector's base URL: ``/v1/traces`` joined to its path,
    before any query (``http://h/otel?token=X`` -> ``http://h/otel/v1/traces?token=X``). The
    query's secret values are remembered, so an exporter's message echoing them is masked."""
    from urllib.parse import parse_qsl, urlsplit, urlunsplit

    from hopgraph.redaction import SECRET_NAMES, remember

    parts = urlsplit(endpoint)
    remember(
        *(
            v
            for k, v in parse_qsl(parts.query)
            if k.lower().replace("-", "_").split("_")[-1] in SECRET_NAMES
        )
    )
    path = parts.path.rstrip("/")
    path = path if path.endswith("/v1/traces") else path + "/v1/traces"
    return urlunsplit(parts._replace(path=path))


CONTENT_SWITCH = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The GenAI conventions' opt-in for message content on spans (off by default: prompts may hold
personal data): ``true``, ``SPAN_ONLY`` or ``SPAN_AND_EVENT`` turn it on."""


def content_wanted() -> bool:
    return os.environ.get(CONTENT_SWITCH, "").strip().lower() in (
        "true",
        "span_only",
        "span_and_event",
    )


class OtelExport:
    """Exports questions to ``endpoint`` (a collector's base URL, as the OTLP variable gives it,
    or its ``/v1/traces`` URL) or to ``exporter``; ``close`` flushes every span. ``content``
    (default: ``CONTENT_SWITCH``): each ``chat`` span also carries its input and output
    messages (``gen_ai.input.messages``, ``gen_ai.output.messages``), as Phoenix and Langfuse
    show them."""

    def __init__(
        self, endpoint: str = "", exporter: SpanExporter | None = None, content: bool | None = None
    ):
        self.content = content_wanted() if content is None else content
        if exporter is None:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter(endpoint=traces_url(endpoint))
        self.provider = TracerProvider(resource=Resource.create({"service.name": "hopgraph"}))
        self.provider.add_span_processor(BatchSpanProcessor(exporter))
        self.tracer = self.provider.get_tracer("hopgraph")

    def export(self, agent: str, records: list[dict[str, Any]], pred: Mapping[str, Any]) -> None:
        export_question(self.tracer, agent, records, pred, content=self.content)

    def close(self) -> None:
        self.provider.shutdown()


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


def _retrieval_span(tracer: Tracer, parent: Span, data: dict[str, Any], at: float) -> None:
    """A retrieval's span: its query, the ids it returned and the role that asked, ending at
    ``at`` (the record's time) and starting its latency before."""
    span = tracer.start_span(
        "retrieval",
        context=set_span_in_context(parent),
        start_time=_ns(at - data.get("latency_s", 0.0)),
        attributes={
            "hopgraph.retrieval.query": str(data.get("query", ""))[:500],
            "hopgraph.retrieval.ids": [str(i) for i in data.get("ids", [])],
            "hopgraph.role": data.get("role", ""),
        },
    )
    span.end(end_time=_ns(at))


def export_question(
    tracer: Tracer,
    agent: str,
    records: list[dict[str, Any]],
    pred: Mapping[str, Any],
    content: bool = False,
) -> None:
    """Spans for one question's trace ``records`` (``trace_records``) and its prediction line."""
    root: Span | None = None
    wall0 = last = 0.0
    tasks: dict[str, Span] = {}
    stack: list[tuple[tuple[str, ...], Span]] = []  # open node spans, innermost last

    def parent_for(ns: tuple[str, ...], root: Span) -> Span:
        for open_ns, span in reversed(stack):
            if open_ns == ns:
                return span
        if ns:  # a subgraph's record: its ns ends with "<node>:<task id>" of the parent node
            return tasks.get(ns[-1].rsplit(":", 1)[-1]) or parent_for(ns[:-1], root)
        return root

    for rec in records:
        mode, data = rec.get("mode"), rec.get("data") or {}
        if mode == "start":
            wall0 = data.get("wall") or wall0
            last = wall0
            if root is None and wall0:
                root = tracer.start_span(
                    f"hopgraph {agent}",
                    start_time=_ns(wall0),
                    attributes={"hopgraph.agent": agent, "hopgraph.question.id": pred["id"]},
                )
            continue
        if root is None:
            continue
        at = wall0 + rec.get("t", 0.0)
        last = max(last, at)
        ns = tuple(rec.get("ns", []))
        if mode == "task" and data.get("event") == "start":
            span = tracer.start_span(
                data.get("name", "node"),
                context=set_span_in_context(parent_for(ns, root)),
                start_time=_ns(at),
                attributes={"hopgraph.node": data.get("name", "")},
            )
            tasks[data.get("id", "")] = span
            stack.append((ns, span))
        elif mode == "task":
            ended = tasks.get(data.get("id", ""))
            if ended is not None:
                if data.get("error"):
                    ended.set_status(Status(StatusCode.ERROR, data["error"][:300]))
                ended.end(end_time=_ns(at))
                stack[:] = [(n, s) for n, s in stack if s is not ended]
        elif mode == "custom" and data.get("event") == "llm_call":
            _llm_span(tracer, parent_for(ns, root), data, content)
        elif mode == "custom" and data.get("event") == "retrieval":
            _retrieval_span(tracer, parent_for(ns, root), data, at)
        elif mode == "custom":
            parent_for(ns, root).add_event(str(data.get("event", "event")), timestamp=_ns(at))
        elif mode == "error":
            root.set_status(Status(StatusCode.ERROR, str(data.get("error", ""))[:300]))
    if root is None:
        return
    for _, span in stack:  # interrupted nodes (a resumed question) end where the trace does
        span.end(end_time=_ns(last))
    root.set_attribute("hopgraph.answer", str(pred.get("answer", ""))[:500])
    root.set_attribute("hopgraph.llm_calls", int(pred.get("llm_calls", 0)))
    if pred.get("error"):
        root.set_status(Status(StatusCode.ERROR, str(pred["error"])[:300]))
    root.end(end_time=_ns(max(last, wall0 + pred.get("seconds", 0.0))))


def genai_messages(e: dict[str, Any]) -> dict[str, str]:
    """An LLM call's messages in the GenAI conventions' shape (a JSON string on the span): role
    and parts; an image part is its reference, never its bytes."""

    def parts(content: Any) -> list[dict[str, str]]:
        if not isinstance(content, list):
            return [{"type": "text", "content": str(content or "")}]
        return [
            {"type": "image_reference", "content": str(p.get("image_url", ""))}
            if p.get("type") == "image_url"
            else {"type": "text", "content": p.get("text", "")}
            for p in content
        ]

    given = [
        {"role": m.get("role", "user"), "parts": parts(m.get("content"))}
        for m in e.get("messages", [])
    ]
    out: dict[str, str] = {"gen_ai.input.messages": json.dumps(given, ensure_ascii=False)}
    if e.get("reply") is not None:
        said = [{"role": "assistant", "parts": parts(e["reply"]), "finish_reason": "stop"}]
        out["gen_ai.output.messages"] = json.dumps(said, ensure_ascii=False)
    return out


def _llm_span(tracer: Tracer, parent: Span, e: dict[str, Any], content: bool = False) -> None:
    started = e.get("started") or 0.0
    sampling = e.get("sampling") or {}
    asked = {
        f"gen_ai.request.{name}": sampling[name]
        for name in ("temperature", "max_tokens", "top_p")
        if isinstance(sampling.get(name), int | float)
    }
    span = tracer.start_span(
        f"chat {e.get('model', '')}",
        context=set_span_in_context(parent),
        start_time=_ns(started),
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": e.get("model", ""),
            "gen_ai.usage.input_tokens": int(e.get("prompt_tokens", 0)),
            "gen_ai.usage.output_tokens": int(e.get("completion_tokens", 0)),
            "hopgraph.role": e.get("role", ""),
            "hopgraph.template": e.get("template", ""),
            "hopgraph.kind": e.get("kind", ""),
            "hopgraph.attempts": int(e.get("attempts", 1)),
            **asked,
            **(genai_messages(e) if content and "messages" in e else {}),
        },
    )
    if e.get("error"):
        span.set_status(Status(StatusCode.ERROR, str(e["error"])[:300]))
    span.end(end_time=_ns(started + e.get("latency_s", 0.0)))
