"""No secret given on the command line or in the environment reaches a file a run or an index
writes (manifest, lock, packed traces, checkpoints, predictions, the KB's own files) or a
message it prints: URL passwords, key=value DSN passwords and keys given with ``--set``."""

import gzip
import json
from pathlib import Path

import pytest
from scripted_server import ScriptedServer
from servers import hopgraph, scripted

SECRET = "sekrit"


def leaks(folder: Path, *outputs: str) -> list[str]:
    """Where ``SECRET`` stands: each output, and each file under ``folder`` (gzip opened)."""
    found = [f"output {i}" for i, text in enumerate(outputs) if SECRET in text]
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        if SECRET.encode() in data:
            found.append(str(path.relative_to(folder)))
    return found


cli = hopgraph


def test_redaction_covers_each_form():
    from hopgraph.redaction import redacted

    assert redacted("postgresql://u:pw1@db:5432/x") == "postgresql://u:***@db:5432/x"
    assert redacted("http://:tok@h/v1 and https://a:b@c") == "http://:***@h/v1 and https://a:***@c"
    assert redacted("host=db password=pw2 dbname=x") == "host=db password=*** dbname=x"
    assert redacted("hopgraph run --set api_key=k3 --set max_tokens=5") == (
        "hopgraph run --set api_key=*** --set max_tokens=5"
    )
    assert redacted("PASSWORD = 'a b' chroma_token=t4") == "PASSWORD = *** chroma_token=***"
    # a user name alone is sent as Basic auth: a secret (it was kept in clear)
    assert redacted("http://TOKEN@host/x?limit=3") == "http://***@host/x?limit=3"
    # a password holding @ is one password (it was cut at its first @: bob:***@AT@host)
    assert redacted("http://bob:PW@AT@host:8/v1") == "http://bob:***@host:8/v1"
    # credentials in a query, whatever joins the name's words
    assert redacted("https://h/v1?api-key=s1&key=s2;x=1#access_token=s3") == (
        "https://h/v1?api-key=***&key=***;x=1#access_token=***"
    )
    assert redacted("wss://h/?API_KEY=s4&auth=s5&token=s6") == (
        "wss://h/?API_KEY=***&auth=***&token=***"
    )
    assert redacted("--set chroma_url=http://s7@h:8000 failed") == (
        "--set chroma_url=http://***@h:8000 failed"
    )
    # not a secret: names that only end like one, and an @ past the authority
    assert redacted("--set max_tokens=5 monkey=3 top_k=2 mail a@b.c http://h/p@x") == (
        "--set max_tokens=5 monkey=3 top_k=2 mail a@b.c http://h/p@x"
    )


@pytest.mark.parametrize("userinfo", [f"user:{SECRET}-url", f"bob:{SECRET}@AT", f"{SECRET}"])
def test_no_secret_of_a_run_reaches_its_files_or_output(tmp_path, userinfo):
    """A run given a key by ``--set``, a registry DSN with a password, and an endpoint whose URL
    holds a password (one holding ``@``, or a user name alone, sent as Basic auth) in
    ``HOPGRAPH_BASE_URL``: nothing it writes or prints holds one."""
    lines = [{"id": f"q{i}", "question": f"What is fact {i}?"} for i in range(2)]
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    with ScriptedServer() as server:
        url = server.base_url.replace("://", f"://{userinfo}@")
        out = cli(
            "run",
            "--agent",
            "direct",
            "--questions",
            "q.jsonl",
            "--out",
            "r",
            "--model",
            "scripted",
            "--set",
            f"api_key={SECRET}-key",
            "--set",
            f"registry_url=host=127.0.0.1 port=1 password={SECRET}-dsn",
            cwd=tmp_path,
            env={"HOPGRAPH_BASE_URL": url},
        )
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "r" / "run.lock").exists() and list((tmp_path / "r").glob("traces/*"))
    assert leaks(tmp_path / "r", out.stdout, out.stderr) == []
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert (
        "password=***" in manifest["command"]
        and ":***@" in manifest["endpoint"]
        or ("://***@" in manifest["endpoint"])
    )


def test_a_checkpointer_that_cannot_be_reached_is_named_without_its_password(tmp_path):
    (tmp_path / "q.jsonl").write_text('{"id": "q0", "question": "What is fact 0?"}\n')
    with ScriptedServer() as server:
        for dsn in (
            f"postgresql://u:{SECRET}-1@127.0.0.1:1/db",
            f"host=127.0.0.1 port=1 user=u password={SECRET}-2 dbname=db",
        ):
            out = cli(
                "run",
                "--agent",
                "direct",
                "--questions",
                "q.jsonl",
                "--out",
                "r",
                *scripted(server.base_url),
                "--checkpointer",
                dsn,
                cwd=tmp_path,
            )
            assert out.returncode == 2 and "checkpointer" in out.stderr, out.stderr
            assert leaks(tmp_path, out.stdout, out.stderr) == [], out.stderr


def test_no_secret_of_an_index_reaches_its_files_or_output(tmp_path):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text("A red lighthouse stands on the northern cliff.")
    for i, url in enumerate(
        (
            f"postgresql://u:{SECRET}-1@127.0.0.1:1/db",
            f"host=127.0.0.1 port=1 password={SECRET}-2 dbname=db",
        )
    ):
        out = cli("index", "corpus", "--kb", f"kb{i}", "--set", f"registry_url={url}", cwd=tmp_path)
        assert out.returncode in (0, 2), out.stdout + out.stderr  # indexed, or refused saying why
        assert leaks(tmp_path, out.stdout, out.stderr) == [], out.stdout + out.stderr


def test_no_secret_of_an_optimize_search_or_a_refused_knob_is_recorded_or_printed(tmp_path):
    """A proposer endpoint given as ``http://TOKEN@host`` was written in clear into the
    bootstrap's manifest (its command), and ``--set chroma_url=http://TOKEN@...`` into the
    error that refused it; record.json, the response cache and every trace are held too."""
    lines = [
        {"id": f"q{i}", "question": f"What is fact {i}?", "answers": [f"fact {i}"]}
        for i in range(4)
    ]
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    with ScriptedServer() as server:
        proposer = server.base_url.replace("://", f"://{SECRET}-proposer@")
        out = cli(
            "optimize",
            "--agent",
            "direct",
            "--questions",
            "q.jsonl",
            "--out",
            "opt",
            *scripted(server.base_url),
            "--rounds",
            "1",
            "--val-share",
            "0.5",
            "--proposer-base-url",
            proposer,
            "--proposer-model",
            "scripted",
            cwd=tmp_path,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        assert (tmp_path / "opt" / "record.json").exists()
        assert leaks(tmp_path / "opt", out.stdout, out.stderr) == []
        refused = cli(
            "run",
            "--agent",
            "direct",
            "--questions",
            "q.jsonl",
            "--out",
            "r",
            *scripted(server.base_url),
            "--set",
            f"chroma_url=http://{SECRET}-chroma@127.0.0.1:1",
            cwd=tmp_path,
        )
        assert leaks(tmp_path, refused.stdout, refused.stderr) == [], refused.stderr[-800:]


URL_FORMS = {
    "user alone": "http://{s}-user@{host}/v1",
    "password with @": "http://bob:{s}@AT@{host}/v1",
    "query key": "http://{host}/v1?api-key={s}-q&limit=3",
}


@pytest.mark.parametrize("form", list(URL_FORMS))
def test_a_secret_in_any_url_form_reaches_no_file_span_or_view_answer(tmp_path, town_kb, form):
    """Each URL form a credential takes (a user name sent as Basic auth, a password holding
    ``@``, a key in the query) for an endpoint that answers and one that cannot be reached:
    no run file, no OpenTelemetry span and no answer of ``hopgraph view``'s API holds it."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from starlette.testclient import TestClient

    from hopgraph.config import Context
    from hopgraph.harness.otel import OtelExport
    from hopgraph.harness.runner import Runner
    from hopgraph.presentation.viewer.app import Viewer, build_app
    from hopgraph.questions.datasets import Question, write_questions

    qfile = tmp_path / "q.jsonl"
    write_questions(
        [Question(f"q{i}", f"What about town {i}?", [f"answer-{i}"], []) for i in range(2)], qfile
    )
    exporter = InMemorySpanExporter()
    otel = OtelExport(exporter=exporter)
    with ScriptedServer() as server:
        live = URL_FORMS[form].format(s=SECRET, host=server.base_url.split("//")[1].split("/")[0])
        dead = URL_FORMS[form].format(s=SECRET, host="127.0.0.1:9")
        for name, url in (("live", live), ("dead", dead)):
            ctx = Context(base_url=url, model="scripted", kb_dir=str(town_kb), max_retries=1)
            Runner("rag", tmp_path / name, ctx, exporter=otel).run(
                qfile, max_consecutive_failures=0
            )
    otel.close()
    spans = exporter.get_finished_spans()
    assert spans and not [s.name for s in spans if SECRET in s.to_json()]
    assert leaks(tmp_path / "live") == [] and leaks(tmp_path / "dead") == []
    client = TestClient(
        build_app(Viewer([tmp_path / "live", tmp_path / "dead"])), base_url="http://127.0.0.1"
    )
    answers = [client.get("/api/runs").text]
    for run in ("live", "dead"):
        answers.append(client.get("/api/questions", params={"run": run}).text)
        answers += [
            client.get("/api/question", params={"run": run, "id": q}).text for q in ("q0", "q1")
        ]
    assert all(a.startswith(("{", "[")) for a in answers)
    assert [i for i, a in enumerate(answers) if SECRET in a] == []


def test_the_view_api_masks_a_secret_an_older_run_wrote_in_clear(tmp_path, town_kb):
    """Run folders written before a redaction rule existed may hold a URL credential in an
    error or a manifest: what the viewer serves from them is masked."""
    from starlette.testclient import TestClient

    from hopgraph.config import Context
    from hopgraph.harness.runner import Runner
    from hopgraph.presentation.viewer.app import Viewer, build_app
    from hopgraph.questions.datasets import Question, write_questions

    qfile = tmp_path / "q.jsonl"
    write_questions([Question("q0", "What about town 0?", ["answer-0"], [])], qfile)
    ctx = Context(
        base_url="http://127.0.0.1:9/v1", model="scripted", kb_dir=str(town_kb), max_retries=1
    )
    Runner("rag", tmp_path / "old", ctx).run(qfile, max_consecutive_failures=0)
    preds = tmp_path / "old" / "predictions.jsonl"
    clear = f"http://bob:{SECRET}@127.0.0.1:9/v1?token={SECRET}"
    rows = [json.loads(x) for x in preds.read_text().splitlines()]
    preds.write_text(
        "".join(json.dumps({**r, "error": f"APIConnectionError: {clear}"}) + "\n" for r in rows)
    )
    manifest = tmp_path / "old" / "manifest.json"
    man = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**man, "model": f"scripted via {clear}"}))
    client = TestClient(build_app(Viewer([tmp_path / "old"])), base_url="http://127.0.0.1")
    answers = [
        client.get("/api/runs").text,
        client.get("/api/questions", params={"run": "old"}).text,
        client.get("/api/question", params={"run": "old", "id": "q0"}).text,
    ]
    assert all(SECRET not in a for a in answers), answers
    assert "bob:***@" in answers[1]


def test_redaction_covers_every_secret_parameter_name_and_a_bearer_value():
    from hopgraph.redaction import redacted

    for name in (
        "sig",
        "code",
        "pass",
        "jwt",
        "session",
        "hmac",
        "access_token",
        "X-Amz-Signature",
    ):
        assert redacted(f"https://h/otel?{name}=S3CRET-v4lue&x=1") == (
            f"https://h/otel?{name}=***&x=1"
        ), name
    assert redacted("Authorization=Bearer eyJhbGciOi.x.y rest") == "Authorization=*** rest"
    assert redacted("header Authorization: Bearer eyJhbGciOiJIUzI1") == (
        "header Authorization: Bearer ***"
    )


def test_a_secret_met_once_is_masked_where_it_is_echoed_without_its_name():
    from hopgraph.redaction import redacted

    assert redacted("GET /v1/traces?sig=Zq9-7777wXy") == "GET /v1/traces?sig=***"
    assert redacted("retrying with Zq9-7777wXy in 2 s") == "retrying with *** in 2 s"


def test_the_otlp_endpoint_keeps_its_query_after_the_traces_path():
    from hopgraph.harness.otel import traces_url

    assert traces_url("http://127.0.0.1:4318/otel?token=T0k-9") == (
        "http://127.0.0.1:4318/otel/v1/traces?token=T0k-9"
    )
    assert traces_url("http://h:4318") == "http://h:4318/v1/traces"
    assert traces_url("http://h:4318/v1/traces/?a=1") == "http://h:4318/v1/traces?a=1"


def test_an_otel_endpoint_token_reaches_no_record_lock_or_stderr(tmp_path, town_kb):
    """The exporter cannot reach its collector (nothing listens) and logs its retries, naming
    the URL: neither they, the manifest nor run.lock hold the query's token."""
    import socket

    from hopgraph.questions.datasets import Question, write_questions

    qfile = tmp_path / "q.jsonl"
    write_questions([Question("q0", "What about town 0?")], qfile)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]  # closed when the block ends: nothing listens there
    with ScriptedServer() as server:
        out = hopgraph(
            "-v",
            "run",
            "--agent",
            "rag",
            "--questions",
            qfile,
            "--out",
            tmp_path / "run",
            "--kb",
            town_kb,
            *scripted(server.base_url),
            "--otel-endpoint",
            f"http://127.0.0.1:{dead}/otel?sig={SECRET}-5521&access_token={SECRET}-77",
        )
    assert out.returncode == 0, out.stderr
    assert "/otel/v1/traces" in out.stderr, out.stderr[-2000:]  # the exporter did say its URL
    assert leaks(tmp_path / "run", out.stdout, out.stderr) == []


def test_an_endpoint_that_echoes_the_key_puts_it_in_no_file_of_the_record(tmp_path):
    """An endpoint that answers 401 and repeats the key put ``Bearer sk-…`` into
    predictions.jsonl, the trace and checkpoints.sqlite, and a JSON body's ``"api_key": "…"``
    stood unmasked everywhere. The key a run sends is now masked by value in every text it
    writes, and headers, JSON and names without separators are masked by form."""
    from http.server import BaseHTTPRequestHandler

    from scripted_server import LoopbackServer

    key = f"sk-{SECRET}-echoed-9f8e7d"

    class Echo(BaseHTTPRequestHandler):
        def log_message(self, *args):  # noqa: ANN002, ANN202
            pass

        def _send(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802, ANN202 - the models list answers, so the run starts
            self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})

        def do_POST(self):  # noqa: N802, ANN202
            self.rfile.read(int(self.headers["content-length"]))
            sent = self.headers.get("authorization", "")
            self._send(
                401,
                {
                    "error": {
                        "message": f'Incorrect API key provided: {sent}; "api_key": "{sent[7:]}"',
                        "type": "invalid_request_error",
                        "code": "invalid_api_key",
                    }
                },
            )

    (tmp_path / "q.jsonl").write_text('{"id": "q0", "question": "What is fact 0?"}\n')
    server = LoopbackServer()
    server.serve(Echo)
    try:
        command = "run --agent direct --questions q.jsonl --out r --model scripted"
        out = cli(
            *command.split(),
            "--base-url",
            server.base_url,
            cwd=tmp_path,
            env={"HOPGRAPH_API_KEY": key},
        )
    finally:
        server.stop()
    assert out.returncode != 0 and "401" in out.stdout + out.stderr, out.stderr
    pred = json.loads((tmp_path / "r" / "predictions.jsonl").read_text().splitlines()[0])
    assert "Incorrect API key provided" in pred["error"], pred  # the reason kept, its key not
    assert (tmp_path / "r" / "checkpoints.sqlite").exists()
    assert leaks(tmp_path / "r", out.stdout, out.stderr) == []
