"""Questions exported as OpenTelemetry traces: the span tree (in-memory exporter) and the real
OTLP/HTTP exporter against a collector stand-in on loopback."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from scripted_server import ScriptedServer
from servers import hopgraph, scripted

from hopgraph.config import Context
from hopgraph.harness.otel import OtelExport
from hopgraph.harness.run_folder import read_predictions, trace_path, trace_records
from hopgraph.harness.runner import Runner
from hopgraph.questions.datasets import Question, write_questions


@pytest.fixture
def kb_dir(town_kb):
    return town_kb


def exported_spans(run_dir):
    """Every question of a rag run folder exported again from its trace file."""
    exporter = InMemorySpanExporter()
    otel = OtelExport(exporter=exporter)
    for qid, pred in read_predictions(run_dir / "predictions.jsonl").items():
        otel.export("rag", trace_records(trace_path(run_dir, qid)), pred)
    otel.close()
    return exporter.get_finished_spans()


def span_tree(spans) -> list:
    """Each span as (name, its parent's name), sorted: what the export drew, ids aside."""
    names = {s.context.span_id: s.name for s in spans}
    return sorted((s.name, names.get(s.parent.span_id) if s.parent else None) for s in spans)


def test_each_question_is_a_trace_of_nodes_with_llm_calls_and_retrievals(tmp_path, kb_dir):
    qfile = tmp_path / "q.jsonl"
    write_questions([Question(f"q{i}", f"What about town {i}?") for i in range(2)], qfile)
    exporter = InMemorySpanExporter()
    otel = OtelExport(exporter=exporter)
    with ScriptedServer() as server:
        ctx = Context(base_url=server.base_url, model="scripted", kb_dir=str(kb_dir))
        Runner("rag", tmp_path / "run", ctx, exporter=otel).run(qfile)
    otel.close()
    spans = exporter.get_finished_spans()  # exported from the run's own stream
    # the trace file holds the same records: exported again from it, the same tree
    assert span_tree(exported_spans(tmp_path / "run")) == span_tree(spans)
    roots = [s for s in spans if s.parent is None]
    assert sorted(r.attributes["hopgraph.question.id"] for r in roots) == ["q0", "q1"]
    assert len({s.context.trace_id for s in spans}) == 2  # one trace per question

    def kids(parent):
        return [s for s in spans if s.parent and s.parent.span_id == parent.context.span_id]

    for root in roots:
        nodes = {s.name: s for s in kids(root)}
        assert set(nodes) == {"admit_question", "retrieve", "generate"}
        (retrieval,) = kids(nodes["retrieve"])
        assert (
            retrieval.name == "retrieval"
            and len(retrieval.attributes["hopgraph.retrieval.ids"]) == 5
        )
        calls = kids(nodes["generate"])
        assert [c.name for c in calls] == ["chat scripted", "chat scripted"]
        assert {c.attributes["hopgraph.template"] for c in calls} == {
            "rag/answer",
            "rag/short_answer",
        }
        assert all(c.attributes["gen_ai.usage.input_tokens"] == 10 for c in calls)
        assert all(c.attributes["gen_ai.usage.output_tokens"] == 5 for c in calls)
        for parent, child in [(root, n) for n in nodes.values()] + [
            (nodes["generate"], c) for c in calls
        ]:
            assert (
                parent.start_time <= child.start_time <= child.end_time <= parent.end_time + 10**7
            )
        assert root.attributes["hopgraph.answer"].startswith("answer-")


def test_run_exports_over_otlp_http_to_a_collector(tmp_path, kb_dir):
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    received = []

    class Collector(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):  # noqa: N802
            body = self.rfile.read(int(self.headers["content-length"]))
            received.append((self.path, ExportTraceServiceRequest.FromString(body)))
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

    collector = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    qfile = tmp_path / "q.jsonl"
    write_questions([Question(f"q{i}", f"What about town {i}?") for i in range(3)], qfile)
    try:
        with ScriptedServer() as server:
            out = hopgraph(
                "run",
                "--agent",
                "rag",
                "--questions",
                qfile,
                "--out",
                tmp_path / "run",
                "--kb",
                kb_dir,
                *scripted(server.base_url),
                "--otel-endpoint",
                f"http://127.0.0.1:{collector.server_address[1]}",
            )
    finally:
        collector.shutdown()
    assert out.returncode == 0, out.stderr
    assert received and all(path == "/v1/traces" for path, _ in received)
    spans = [
        span
        for _, req in received
        for rs in req.resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
    ]
    names = [s.name for s in spans]
    assert names.count("hopgraph rag") == 3 and names.count("chat scripted") == 6
    chat = next(s for s in spans if s.name == "chat scripted")
    attrs = {a.key: a.value for a in chat.attributes}
    assert attrs["gen_ai.request.model"].string_value == "scripted"
    assert attrs["gen_ai.usage.input_tokens"].int_value == 10


def test_an_api_key_leaves_no_trace_in_the_run_folder_trace_or_spans(tmp_path, kb_dir):
    """Served or not, the operator's key is a secret: the manifest masks it, and neither the
    trace, the predictions, the checkpoints nor the OpenTelemetry spans carry it, also when
    the endpoint refuses a request."""
    secret = "sk-hopgraph-secret-7731"
    qfile = tmp_path / "q.jsonl"
    write_questions([Question(f"q{i}", f"What about town {i}?") for i in range(2)], qfile)
    with ScriptedServer() as server:
        ctx = Context(
            base_url=server.base_url, model="scripted", kb_dir=str(kb_dir), api_key=secret
        )
        Runner("rag", tmp_path / "run", ctx).run(qfile)
        dead = ctx.replace(base_url="http://127.0.0.1:9/v1", max_retries=1)
        Runner("rag", tmp_path / "dead", dead).run(qfile, max_consecutive_failures=0)
    spans = exported_spans(tmp_path / "run")
    assert spans and not any(secret in s.to_json() for s in spans)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {"manifest.json", "checkpoints.sqlite", "predictions.jsonl", "q0.jsonl.gz"} <= {
        p.name for p in files
    }
    import gzip

    for path in files:
        data = path.read_bytes()
        data = gzip.decompress(data) if path.suffix == ".gz" else data  # a packed trace
        assert secret.encode() not in data, path
    dead_preds = read_predictions(tmp_path / "dead" / "predictions.jsonl")
    assert all(p["error"] and secret not in p["error"] for p in dead_preds.values())


def test_with_the_content_switch_chat_spans_carry_the_messages(tmp_path, kb_dir, monkeypatch):
    """Off by default (the GenAI conventions' opt-in); on, each chat span carries what the
    model was sent and what it replied, in the conventions' attributes."""
    import json

    qfile = tmp_path / "q.jsonl"
    write_questions([Question("q0", "What about town 3?")], qfile)
    with ScriptedServer() as server:
        ctx = Context(base_url=server.base_url, model="scripted", kb_dir=str(kb_dir))
        Runner("rag", tmp_path / "run", ctx).run(qfile)
    sent = {json.dumps(body["messages"]): reply for body, reply in server.log}
    records = trace_records(trace_path(tmp_path / "run", "q0"))
    pred = read_predictions(tmp_path / "run" / "predictions.jsonl")["q0"]

    def chat_spans(**kw):
        exporter = InMemorySpanExporter()
        otel = OtelExport(exporter=exporter, **kw)
        otel.export("rag", records, pred)
        otel.close()
        return [s for s in exporter.get_finished_spans() if s.name.startswith("chat ")]

    assert not any("gen_ai.input.messages" in s.attributes for s in chat_spans())
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    spans = chat_spans()
    assert spans and len(spans) == len(sent)
    for span in spans:
        given = json.loads(span.attributes["gen_ai.input.messages"])
        messages = [{"role": m["role"], "content": m["parts"][0]["content"]} for m in given]
        said = json.loads(span.attributes["gen_ai.output.messages"])
        assert said[0]["parts"][0]["content"] == sent[json.dumps(messages)]
        assert span.attributes["gen_ai.request.max_tokens"] > 0
