"""hopgraph's graphs served by LangGraph's own server (`langgraph dev`, in-memory runtime) and
driven through `langgraph_sdk`, against the scripted model endpoint on loopback."""

import contextlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest
from scripted_server import ScriptedServer
from servers import until_answering

from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.models.embedded import free_port

ROOT = Path(__file__).resolve().parents[1]
KEY, OTHER_KEY, THIRD_KEY = "hg-test-key-one", "hg-test-key-two", "hg-test-key-three"
THREADS_PER_KEY = 40  # the served server's limit here: more than any other test makes
LANGGRAPH = Path(sys.executable).with_name("langgraph")

pytestmark = pytest.mark.skipif(
    not LANGGRAPH.exists(), reason="langgraph-cli[inmem] not installed (the dev extra has it)"
)


@contextlib.contextmanager
def serving(folder: Path, env: dict):
    """``langgraph dev`` on loopback, run in ``folder`` (where its in-memory runtime keeps its
    threads, ``.langgraph_api/``, across a restart) from a copy of langgraph.json whose paths
    name this checkout; yields its URL."""
    config = json.loads((ROOT / "langgraph.json").read_text())
    config["dependencies"] = [str(ROOT)]
    config["graphs"] = {k: str(ROOT / v) for k, v in config["graphs"].items()}
    config["auth"]["path"] = str(ROOT / config["auth"]["path"])
    config["http"]["app"] = str(ROOT / config["http"]["app"])
    (folder / "langgraph.json").write_text(json.dumps(config))
    port = free_port()
    log = open(folder / "server.log", "ab")  # noqa: SIM115 - the server's, closed below
    proc = subprocess.Popen(
        [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1"]
        + ["--port", str(port), "--config", str(folder / "langgraph.json")],
        cwd=folder,
        env={**os.environ, "LANGGRAPH_CLI_NO_ANALYTICS": "1", **env},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        until_answering(proc, f"{url}/ok", folder / "server.log")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("served")
    KnowledgeBase(tmp / "kb").add(
        [Item("text", f"k{i}", f"Fact {i} about town {i}.", title=f"Town {i}") for i in range(8)]
    )
    roots = tmp / "allowed"
    roots.mkdir()
    with ScriptedServer() as model:
        env = {
            "HOPGRAPH_BASE_URL": model.base_url,
            "HOPGRAPH_MODEL": "scripted",
            "HOPGRAPH_KB_DIR": str(tmp / "kb"),
            "HOPGRAPH_API_KEYS": f"{KEY},{OTHER_KEY},{THIRD_KEY}",
            "HOPGRAPH_MAX_THREADS_PER_KEY": str(THREADS_PER_KEY),
            "HOPGRAPH_IMAGE_ROOTS": str(roots),
            "HOPGRAPH_VLM_MODEL": "scripted-vl",
            "HOPGRAPH_BACKEND": "vllm",
        }
        with serving(tmp, env) as url:
            yield url, model, tmp


@pytest.mark.parametrize("agent", ["rag", "qdrag"])
def test_a_served_graph_streams_and_answers_in_its_output_schema(served, agent):
    from langgraph_sdk import get_sync_client

    url, model, _ = served
    client = get_sync_client(url=url, api_key=KEY)
    thread = client.threads.create()
    question = {"id": "q3", "question": "What about town 3?"}
    stream = client.runs.stream(
        thread["thread_id"],
        agent,
        input=question,
        stream_mode=["updates", "custom"],
        context={"top_k": 4},
    )
    modes = {part.event for part in stream}
    assert {"updates", "custom"} <= modes  # node updates and our trace events, live
    out = client.runs.wait(client.threads.create()["thread_id"], agent, input=question)
    assert set(out) == {"answer", "response", "evidence", "citations", "invalid_citations"}
    assert out["answer"].startswith("answer-") and len(out["citations"]) == 2
    assert all(c.startswith("text-") for c in out["citations"])


def test_a_bad_context_is_refused_with_the_field_named(served):
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=served[0], api_key=KEY)
    with pytest.raises(Exception, match="'qdrag_mode' must be one of"):
        client.runs.wait(
            client.threads.create()["thread_id"],
            "qdrag",
            input={"id": "q", "question": "Why?"},
            context={"qdrag_mode": "bogus"},
        )


def _client(served, key=KEY):
    from langgraph_sdk import get_sync_client

    return get_sync_client(url=served[0], api_key=key)


def _refused(served, match, *, key=KEY, agent="rag", context=None, **question):
    """A run that must fail with ``match`` and make no model call."""
    client, model = _client(served, key), served[1]
    calls = model.calls
    payload = {"id": "q", "question": "What about town 3?", **question}
    with pytest.raises(Exception, match=match):
        client.runs.wait(
            client.threads.create()["thread_id"],
            agent,
            input=payload,
            context=context or {},
            raise_error=True,
        )
    assert model.calls == calls, "a refused request reached the model"


@pytest.mark.parametrize(
    "field, value",
    [
        ("kb_dir", "/"),
        ("base_url", "http://127.0.0.1:9/v1"),
        ("prompts_dir", "/tmp"),
        ("polar_dir", "/tmp/mem"),
        ("vlm_base_url", "http://127.0.0.1:9/v1"),
        ("api_key", "x"),
        ("image_roots", "/"),
    ],
)
def test_a_client_may_not_set_the_operators_fields(served, field, value):
    # polar_dir is a field of the graphs that recall from PolarMem, not rag's (LangGraph's
    # server drops a context key a graph's schema does not have)
    agent = "mmapg" if field == "polar_dir" else "rag"
    _refused(served, f"'{field}' belong to the operator", agent=agent, context={field: value})
    assert not Path(value, "chroma").exists() or field != "kb_dir"


def test_another_methods_knob_is_refused_as_set_refuses_it_not_dropped(served):
    _refused(
        served,
        "mmapg_max_iterations is MMAPG's, not this graph's",
        context={"mmapg_max_iterations": 3},
    )
    _refused(served, "unknown Context field 'top_kk'", agent="qdrag", context={"top_kk": 3})


def test_the_api_description_pages_answer_no_one_without_a_key(served):
    for path in ("/docs", "/openapi.json", "/info", "/metrics"):
        assert httpx.get(served[0] + path, timeout=10).status_code == 401, path
        keyed = httpx.get(served[0] + path, headers={"x-api-key": KEY}, timeout=10)
        assert keyed.status_code == 404, path  # and not served at all (disable_meta)
    assert httpx.get(served[0] + "/ok", timeout=10).status_code == 200


def test_an_image_outside_the_roots_gets_one_refusal_whether_or_not_it_exists(served):
    from PIL import Image

    outside = served[2] / "secret.png"
    Image.new("RGB", (40, 40), "red").save(outside)
    for path in (str(outside), str(served[2] / "missing.png"), "/etc/passwd"):
        _refused(served, "an image of this question cannot be read here", images=[path])
    inside = served[2] / "allowed" / "../secret.png"  # a way out of the root is refused too
    _refused(served, "an image of this question cannot be read here", images=[str(inside)])


def test_requests_over_the_operators_limits_are_refused_before_any_model_call(served):
    _refused(served, "longer than 4000 characters", question="why? " * 1000)
    _refused(served, "at most 8 images", images=["https://example.org/a.png"] * 9)
    _refused(
        served,
        "'mmapg_max_iterations' must lie in 0..20",
        agent="mmapg",
        context={"mmapg_max_iterations": 99},
    )
    _refused(
        served,
        "'mabdqa_m' must lie in 0..50",
        agent="mabdqa",
        context={"mabdqa_m": 500},
        doc="a.pdf",
    )
    _refused(served, "document 'report.pdf' is not available", agent="mabdqa", doc="report.pdf")
    _refused(served, "'top_k' expects int, not '99'", context={"top_k": "99"})
    _refused(served, "'top_k' must lie in 0..50", context={"top_k": -1})


def test_the_key_check_and_thread_ownership(served):
    import httpx

    r = httpx.post(f"{served[0]}/threads", json={}, timeout=30)
    assert r.status_code == 401
    r = httpx.post(f"{served[0]}/threads", json={}, headers={"x-api-key": "wrong"}, timeout=30)
    assert r.status_code == 401
    mine, theirs = _client(served), _client(served, OTHER_KEY)
    thread = mine.threads.create()["thread_id"]
    mine.runs.wait(thread, "rag", input={"id": "q", "question": "What about town 3?"})
    assert mine.threads.get(thread)["thread_id"] == thread
    with pytest.raises(Exception, match="404|not found|Not Found"):
        theirs.threads.get(thread)
    with pytest.raises(Exception, match="404|not found|Not Found"):
        theirs.runs.wait(thread, "rag", input={"id": "q", "question": "What about town 4?"})
    assert thread not in [t["thread_id"] for t in theirs.threads.search(limit=100)]


def test_langgraphs_own_mcp_is_off_and_no_client_schema_offers_gold(served):
    """``/mcp`` is off (``langgraph.json``: hopgraph's MCP tools are ``hopgraph mcp``, see
    docs/serving.md), and no graph's input schema offers a gold field to a client."""
    import httpx

    url = served[0]
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"x-api-key": KEY, "accept": "application/json, text/event-stream"}
    assert httpx.post(f"{url}/mcp", json=ping, headers=headers, timeout=30).status_code == 404
    client = _client(served)
    for assistant in client.assistants.search(limit=20):
        schema = client.assistants.get_schemas(assistant["assistant_id"])["input_schema"]
        assert "question" in schema["properties"]
        assert not [k for k in schema["properties"] if "gold" in k], assistant["graph_id"]


def test_one_keys_flood_of_requests_never_refuses_another_key(monkeypatch):
    """Issue 115: requests in flight were counted for the server, not per caller, so one key's
    flood could starve another's. Key A fills its limit with requests held open by the app
    behind the middleware; its next one gets 429 naming the limit, while key B's goes through;
    once A's end, A is served again. (The served server's answers carry the limit: below.)"""
    import asyncio
    import json

    from hopgraph.graphs.auth import RequestsPerCaller

    async def scenario() -> None:
        release, entered = asyncio.Event(), asyncio.Queue()

        async def held(scope, receive, send) -> None:  # noqa: ANN001
            await entered.put(scope)
            await release.wait()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"{}"})

        gate = RequestsPerCaller(held, limit=3)

        async def ask(key: str) -> tuple[int, dict]:
            said: list[dict] = []

            async def send(message: dict) -> None:
                said.append(message)

            scope = {
                "type": "http",
                "method": "POST",
                "path": "/threads",
                "client": ("1.2.3.4", 1),
                "headers": [(b"x-api-key", key.encode())],
            }
            await gate(scope, None, send)
            return said[0]["status"], json.loads(said[1]["body"])

        flood = [asyncio.create_task(ask(KEY)) for _ in range(3)]
        for _ in range(3):
            await entered.get()  # each of A's three is inside the app, held
        status, body = await ask(KEY)
        assert status == 429 and "HOPGRAPH_MAX_REQUESTS_PER_KEY" in body["detail"]
        other = asyncio.create_task(ask(OTHER_KEY))
        await entered.get()  # B's reached the app while A holds its limit
        release.set()
        assert [await t for t in flood] == [(200, {})] * 3 and await other == (200, {})
        assert await ask(KEY) == (200, {}) and gate.in_flight == {}

    monkeypatch.setenv("HOPGRAPH_API_KEYS", f"{KEY},{OTHER_KEY}")
    asyncio.run(scenario())


def test_the_served_server_counts_each_callers_requests(served):
    r = httpx.post(f"{served[0]}/threads/search", json={}, headers={"x-api-key": KEY}, timeout=30)
    assert r.status_code == 200 and r.headers.get("x-hopgraph-requests-per-key") == "16", dict(
        r.headers
    )


def test_one_keys_threads_never_keep_another_key_from_making_one(served):
    """A key could make threads without end, each held by ``langgraph dev`` until deleted (its
    in-memory runtime sweeps no TTL), so one key's flood filled the server for every other: a
    key keeps ``HOPGRAPH_MAX_THREADS_PER_KEY`` threads, counting those its runs make, and past
    that it alone is refused until it deletes one."""
    url = served[0]

    def make(key, **run):  # a thread, made by itself or (``run``) by a run that names it
        path = f"/threads/{uuid.uuid4()}/runs" if run else "/threads"
        body = {"assistant_id": "rag", "if_not_exists": "create", **run} if run else {}
        return httpx.post(f"{url}{path}", json=body, headers={"x-api-key": key}, timeout=30)

    made = [make(THIRD_KEY) for _ in range(THREADS_PER_KEY - 1)]
    assert all(r.status_code == 200 for r in made), made[-1].text
    question = {"id": "q", "question": "What about town 2?"}
    assert make(THIRD_KEY, input=question).status_code == 200  # its run made the last one
    for refused in (make(THIRD_KEY), make(THIRD_KEY, input=question)):
        assert refused.status_code == 429, refused.text
        assert "HOPGRAPH_MAX_THREADS_PER_KEY" in refused.json()["detail"]
    assert make(OTHER_KEY).status_code == 200  # another key is served as before
    first = made[0].json()["thread_id"]
    gone = httpx.delete(f"{url}/threads/{first}", headers={"x-api-key": THIRD_KEY}, timeout=30)
    assert gone.status_code in (200, 204), gone.text
    assert make(THIRD_KEY).status_code == 200  # one deleted, one made
    again = f"{url}/threads/{made[1].json()['thread_id']}/runs"  # a run in a thread it keeps
    run = {"assistant_id": "rag", "if_not_exists": "create", "input": question}
    kept = httpx.post(again, json=run, headers={"x-api-key": THIRD_KEY}, timeout=30)
    assert kept.status_code == 200, kept.text  # at its limit, but it makes no thread


def test_a_keys_threads_are_counted_from_the_servers_store_so_a_restart_gives_none_back(
    tmp_path,
):
    """``langgraph dev`` keeps its threads across a restart (``.langgraph_api/`` in its folder;
    ``langgraph up`` keeps them in Postgres), so a count kept in the server's memory began at 0
    again and each restart let a key make its limit anew. The count is the store's."""
    env = {"HOPGRAPH_API_KEYS": f"{KEY},{OTHER_KEY}", "HOPGRAPH_MAX_THREADS_PER_KEY": "3"}

    def make(url, key=KEY):
        return httpx.post(f"{url}/threads", json={}, headers={"x-api-key": key}, timeout=30)

    with serving(tmp_path, env) as url:
        first = [make(url) for _ in range(3)]
        assert [r.status_code for r in first] == [200, 200, 200], first[-1].text
    with serving(tmp_path, env) as url:
        refused = make(url)
        assert refused.status_code == 429, refused.text
        assert "HOPGRAPH_MAX_THREADS_PER_KEY" in refused.json()["detail"]
        assert make(url, OTHER_KEY).status_code == 200
        gone = first[0].json()["thread_id"]
        r = httpx.delete(f"{url}/threads/{gone}", headers={"x-api-key": KEY}, timeout=30)
        assert r.status_code in (200, 204), r.text
        assert make(url).status_code == 200
