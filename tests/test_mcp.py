"""``hopgraph mcp`` driven by the official MCP client, over stdio (the command started as a
desktop client starts it) and over streamable HTTP (with and without an API key), against the
scripted model endpoint; and LangGraph's own ``/mcp``, turned off as docs/serving.md says."""

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from scripted_server import ScriptedServer, by_template, deterministic_reply
from servers import MCP_INITIALIZE, scripted

from hopgraph.graphs import every_context
from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.models.embedded import free_port

Context = every_context()  # every built-in method's knobs

HOPGRAPH = Path(sys.executable).with_name("hopgraph")
KEY, OTHER_KEY = "hg-mcp-key-one", "hg-mcp-key-two"
ALLOWED = "mcp.example.test"  # a name the operator lets clients reach the server by
OPERATOR_NOTE = "The operator keeps the lighthouse keeper's vault code, 4711, in the memory."
CALLER_NOTE = "A red lighthouse stands on the northern cliff."
TOOLS = {
    "ask",
    "kb_search",
    "grail_search",
    "kb_sources",
    "memory_recall",
    "memory_ingest",
    "memory_forget",
}
REPLIES = by_template(
    {
        "polarmem/entities": json.dumps(
            {"entities": [{"name": "lighthouse", "polarity": "present"}]}
        ),
        "polarmem/parse_query": json.dumps({"positive": ["lighthouse"], "negative": []}),
    },
)


SEEN: list[str] = []  # every prompt the scripted model was sent


def reply(body: dict) -> str:
    SEEN.append(json.dumps(body["messages"]))
    return REPLIES(body) or deterministic_reply(body)


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    path = tmp_path_factory.mktemp("mcp") / "kb"
    KnowledgeBase(path).add(
        [Item("text", f"k{i}", f"Fact {i} about town {i}.", title=f"Town {i}") for i in range(8)]
    )
    return path


def fields_named(schema: dict) -> set[str]:
    """Every property name anywhere in a JSON schema (its $defs included)."""
    out = set()
    if isinstance(schema, dict):
        out |= set(schema.get("properties", {}))
        for value in schema.values():
            out |= fields_named(value)
    elif isinstance(schema, list):
        for value in schema:
            out |= fields_named(value)
    return out


async def session(server, check) -> None:  # noqa: ANN001 - a Client's server argument
    from mcp import Client

    async with Client(server) as client:
        await check(client)


async def a_caller_session(client) -> None:  # noqa: ANN001
    """What any caller does: list the tools, search, ask, and send a bad argument."""
    listed = (await client.list_tools()).tools
    assert {t.name for t in listed} == TOOLS
    for tool in listed:
        assert len(tool.description or "") > 60, tool.name  # a model can choose by it
        named = fields_named(tool.input_schema)
        assert not any("gold" in f for f in named), tool.name
        assert not named & Context.operator_fields(), (tool.name, named & Context.operator_fields())
    found = await client.call_tool("kb_search", {"query": "town 3", "k": 2})
    hits = found.structured_content["result"]
    assert not found.is_error and hits[0]["title"] == "Town 3" and hits[0]["text"]
    answered = await client.call_tool("ask", {"question": "What is fact 3 about town 3?"})
    out = answered.structured_content
    assert not answered.is_error and out["answer"].startswith("answer-")
    assert out["evidence"] and all(e["id"].startswith("text-") for e in out["evidence"])
    assert out["cost"]["llm_calls"] >= 1 and out["cost"]["prompt_tokens"] > 0
    bad = await client.call_tool("kb_search", {"query": "town 3", "k": 0})
    assert bad.is_error and "k" in bad.content[0].text
    refused = await client.call_tool(
        "ask", {"question": "Town 3?", "settings": {"top_k": 500}}
    )  # the CLI's message for a knob over the operator's limit
    assert refused.is_error and "'top_k' must lie in 0..50" in refused.content[0].text
    operator = await client.call_tool("ask", {"question": "Town 3?", "settings": {"kb_dir": "/"}})
    assert operator.is_error and "kb_dir" in operator.content[0].text
    await refuses_unbounded_input(client)


async def refuses_unbounded_input(client) -> None:  # noqa: ANN001
    """Numbers and texts past what the operator allows, refused naming them, before work."""
    hot = await client.call_tool("ask", {"question": "Town 3?", "settings": {"temperature": 1e308}})
    assert hot.is_error and "temperature" in hot.content[0].text
    huge = "lighthouse " * 100_000  # 1.1 MB
    for tool, args in (("memory_ingest", {"text": huge}), ("memory_recall", {"query": huge})):
        got = await client.call_tool(tool, args)
        assert got.is_error and "limit_memory_chars" in got.content[0].text, tool
    unknown = await client.call_tool("grail_search", {"query": "town", "held": ["text-nope"]})
    assert unknown.is_error and "not in the knowledge base: 'text-nope'" in unknown.content[0].text


def test_an_internal_error_in_a_tool_becomes_a_tool_error_with_its_reason():
    from mcp.server.mcpserver.exceptions import ToolError

    from hopgraph.cli.mcp_server import guarded

    with pytest.raises(ToolError, match=r"internal error \(KeyError: 'missing'\)"):
        guarded(lambda: {}["missing"])()


def test_over_stdio_a_client_lists_searches_asks_and_gets_tool_errors(kb, tmp_path):
    from mcp.client.stdio import StdioServerParameters

    with ScriptedServer(reply) as model:
        params = StdioServerParameters(
            command=str(HOPGRAPH),
            args=[
                "mcp",
                "--kb",
                str(kb),
                *scripted(model.base_url),
                "--set",
                f"polar_dir={tmp_path / 'memory'}",
            ],
            env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)},
            cwd=str(tmp_path),
        )
        asyncio.run(session(params, a_caller_session))


@pytest.fixture(scope="module")
def http_server(kb, tmp_path_factory):
    with mcp_http(kb, tmp_path_factory.mktemp("mcp-http")) as served:
        yield served


@contextlib.contextmanager
def mcp_http(kb: Path, tmp: Path, *options: str):  # noqa: ANN201 - (url, folder)
    """``hopgraph mcp --http`` with two keys, the operator's own memory and ``options``."""
    with ScriptedServer(reply) as model:
        port = free_port()
        env = {**os.environ, "HOPGRAPH_API_KEYS": f"{KEY},{OTHER_KEY}", "HOME": str(tmp)}
        (tmp / "note.txt").write_text(OPERATOR_NOTE)  # the operator's own memory
        subprocess.run(
            [
                str(HOPGRAPH),
                "memory",
                "ingest",
                str(tmp / "note.txt"),
                "--memory",
                str(tmp / "memory"),
                *scripted(model.base_url),
            ],
            cwd=tmp,
            env=env,
            check=True,
            capture_output=True,
        )
        log = open(tmp / "server.log", "wb")  # noqa: SIM115 - the server's, closed below
        proc = subprocess.Popen(
            [
                str(HOPGRAPH),
                "mcp",
                "--http",
                "--port",
                str(port),
                "--kb",
                str(kb),
                *scripted(model.base_url),
                "--set",
                f"polar_dir={tmp / 'memory'}",
                "--allowed-host",
                ALLOWED,
                *options,
            ],
            cwd=tmp,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        url = f"http://127.0.0.1:{port}/mcp"
        try:
            while True:  # until it answers (401 without a key), or it exits
                assert proc.poll() is None, (tmp / "server.log").read_text()[-3000:]
                try:
                    httpx.post(url, json={}, timeout=2)
                    break
                except httpx.HTTPError:
                    time.sleep(0.2)
            yield url, tmp
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            log.close()


def keyed(url: str, key: str, host: str = ""):  # noqa: ANN201 - an MCP transport
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    # a first search loads the embedder in the server: more than the default 5 s on a cold disk
    headers = {"x-api-key": key, **({"host": host} if host else {})}
    client = httpx2.AsyncClient(headers=headers, timeout=120)
    return streamable_http_client(url, http_client=client)


def test_over_http_a_request_without_a_valid_key_is_refused(http_server):
    from mcp import Client

    url, _ = http_server
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert httpx.post(url, json=ping, timeout=10).status_code == 401
    assert httpx.post(url, json=ping, headers={"x-api-key": "wrong"}, timeout=10).status_code == 401

    async def refused() -> None:
        async with Client(url) as client:
            await client.list_tools()

    with pytest.raises(Exception):  # noqa: B017 - the SDK's error for an HTTP 401
        asyncio.run(refused())


def test_over_http_with_a_key_and_each_key_sees_only_its_own_memories(http_server):
    url, tmp = http_server
    asyncio.run(session(keyed(url, KEY), a_caller_session))

    async def remember(client) -> None:  # noqa: ANN001
        stored = await client.call_tool("memory_ingest", {"text": CALLER_NOTE})
        assert not stored.is_error and stored.structured_content["added"] == 1
        got = (
            await client.call_tool("memory_recall", {"query": "the lighthouse"})
        ).structured_content
        assert len(got["ids"]) == 1 and "lighthouse" in got["memories"][0].lower()

    async def recall_nothing(client) -> None:  # noqa: ANN001
        got = (
            await client.call_tool("memory_recall", {"query": "the lighthouse"})
        ).structured_content
        assert got["ids"] == []

    asyncio.run(session(keyed(url, KEY), remember))
    asyncio.run(session(keyed(url, OTHER_KEY), recall_nothing))
    keys = {p.name for p in (tmp / "memory").iterdir() if p.name.startswith("key-")}
    assert len(keys) == 2  # a folder per key, beside the operator's own memory


def asked_with_memory(url: str, key: str) -> str:
    """Every prompt the model was sent for one ``ask`` with PolarMem on, by the caller ``key``."""

    async def ask(client) -> None:  # noqa: ANN001
        got = await client.call_tool(
            "ask",
            {
                "question": "What stands on the cliff?",
                "method": "qdrag",
                "settings": {"polar_memory": True},
            },
        )
        assert not got.is_error, got.content[0].text

    start = len(SEEN)
    asyncio.run(session(keyed(url, key), ask))
    return "\n".join(SEEN[start:])


def test_over_http_a_callers_ask_reads_its_own_memory_never_the_operators(http_server):
    url, _ = http_server

    async def remember(client) -> None:  # noqa: ANN001
        assert not (await client.call_tool("memory_ingest", {"text": CALLER_NOTE})).is_error

    asyncio.run(session(keyed(url, KEY), remember))
    mine = asked_with_memory(url, KEY)
    assert "northern cliff" in mine and "4711" not in mine  # its own note, not the operator's
    other = asked_with_memory(url, OTHER_KEY)
    assert "northern cliff" not in other and "4711" not in other


def test_a_served_graph_refuses_a_clients_polar_memory_unless_the_operator_opens_it(monkeypatch):
    from hopgraph.config import client_of
    from hopgraph.settings.qdrag import QDRAGContext

    with pytest.raises(ValueError, match="polar_memory.*operator.*polar_serve"):
        client_of(QDRAGContext)(polar_memory=True)
    monkeypatch.setenv("HOPGRAPH_POLAR_SERVE", "true")  # the operator's say-so
    assert client_of(QDRAGContext)(polar_memory=True).polar_memory


def test_over_http_a_host_the_operator_allows_is_let_in_and_dns_rebinding_is_not(http_server):
    url, _ = http_server
    port = url.split(":")[2].split("/")[0]

    async def lists(client) -> None:  # noqa: ANN001
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS

    asyncio.run(session(keyed(url, KEY, host=f"{ALLOWED}:{port}"), lists))
    headers = {"x-api-key": KEY, "accept": "application/json, text/event-stream"}
    rebound = httpx.post(
        url, json=MCP_INITIALIZE, headers={**headers, "host": f"evil.example:{port}"}
    )
    assert rebound.status_code == 421
    for host in (f"127.0.0.1:{port}@evil.example", "localhost:evil", f"{ALLOWED}:1{port}"):
        # the SDK matched name:* by prefix, and let these in
        tricked = httpx.post(url, json=MCP_INITIALIZE, headers={**headers, "host": host})
        assert tricked.status_code == 421, host
    foreign = httpx.post(
        url, json=MCP_INITIALIZE, headers={**headers, "origin": "http://evil.example"}
    )
    assert foreign.status_code == 403


def opened(url: str, key: str) -> httpx.Response:
    """An ``initialize`` with ``key``: a new session where it is let in."""
    headers = {"x-api-key": key, "accept": "application/json, text/event-stream"}
    return httpx.post(url, json=MCP_INITIALIZE, headers=headers, timeout=30)


def test_one_key_s_flood_of_sessions_never_refuses_another_key(kb, tmp_path):
    """About 12,000 ``initialize`` requests with key A left key B answered ``503 Too many open
    sessions``: sessions were counted for the server, and idle ones lived 30 minutes. Now each
    key holds at most ``--max-sessions-per-key``; past it that key alone gets 429 naming the
    limit, and gets room again when it ends a session or one goes idle."""
    options = ("--max-sessions-per-key", "3", "--session-idle", "3")
    with mcp_http(kb, tmp_path, *options) as (url, _):
        sessions = [opened(url, KEY) for _ in range(3)]
        assert [r.status_code for r in sessions] == [200, 200, 200]
        refused = opened(url, KEY)
        assert refused.status_code == 429, refused.text
        assert "3 open sessions" in refused.text and "--max-sessions-per-key" in refused.text

        async def lists(client) -> None:  # noqa: ANN001
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS

        asyncio.run(session(keyed(url, OTHER_KEY), lists))  # B, while A is at its limit
        assert opened(url, OTHER_KEY).status_code == 200
        first = sessions[0].headers["mcp-session-id"]
        ended = httpx.delete(url, headers={"x-api-key": KEY, "mcp-session-id": first})
        assert ended.status_code < 400, ended.text
        assert opened(url, KEY).status_code == 200  # room for the one it ended
        assert opened(url, KEY).status_code == 429
        deadline = time.monotonic() + 60
        while opened(url, KEY).status_code == 429:  # until its idle sessions are closed
            assert time.monotonic() < deadline, "no idle session of A was closed in 60 s"
            time.sleep(0.5)


def test_listening_on_every_address_without_an_allowed_host_is_refused_first(kb, tmp_path):
    out = subprocess.run(
        [str(HOPGRAPH), "mcp", "--http", "--host", "0.0.0.0", "--kb", str(kb)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "--allowed-host" in out.stderr


@pytest.mark.filterwarnings("ignore:The logging capability")  # the client's, on setLevel
def test_ask_tells_the_client_each_node_as_progress_and_log_lines_at_its_level(kb, tmp_path):
    """Through the official client: a modern one opting in per request (log_level), and a
    legacy one (the initialize handshake) setting its level with logging/setLevel."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def told(client) -> tuple[list[tuple[float, str]], list[str]]:  # noqa: ANN001
        steps: list[tuple[float, str]] = []

        async def on_progress(progress, total, message) -> None:  # noqa: ANN001
            steps.append((progress, message))

        got = await client.call_tool(
            "ask", {"question": "What is fact 3 about town 3?"}, progress_callback=on_progress
        )
        assert not got.is_error
        return steps, [line for _, line in steps]

    async def check(params) -> None:  # noqa: ANN001
        logs: list[str] = []

        async def on_log(params) -> None:  # noqa: ANN001
            logs.append(f"{params.level} {params.data}")

        async with Client(params, logging_callback=on_log, log_level="info") as client:
            steps, lines = await told(client)
        assert [p for p, _ in steps] == list(range(1, len(steps) + 1))  # one step a node
        assert any("rag: retrieve done" in m for m in lines)
        assert any("rag: generate done (2 LLM calls so far)" in m for m in lines)
        assert [f"info {m}" for m in lines] == logs
        logs.clear()
        async with Client(params, logging_callback=on_log, mode="legacy") as client:
            assert (await client.set_logging_level("warning")).model_dump(exclude_none=True) == {}
            steps, _ = await told(client)
            assert steps and logs == []  # progress still, no info lines under warning
            await client.set_logging_level("info")
            _, lines = await told(client)
            assert logs == [f"info {m}" for m in lines]

    with ScriptedServer(reply) as model:
        params = StdioServerParameters(
            command=str(HOPGRAPH),
            args=["mcp", "--kb", str(kb), "--base-url", model.base_url, "--model", "scripted"],
            env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)},
            cwd=str(tmp_path),
        )
        asyncio.run(check(params))
