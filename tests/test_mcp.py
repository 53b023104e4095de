"""``hopgraph mcp`` driven by the official MCP client, over stdio (the command started as a
desktop client starts it) and over streamable HTTP (with and without an API key), against the
scripted model endpoint; and LangGraph's own ``/mcp``, turned off as docs/serving.md says."""

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from scripted_server import ScriptedServer, by_template, deterministic_reply

from hopgraph.graphs import every_context
from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.models.embedded import free_port

Context = every_context()  # every built-in method's knobs

HOPGRAPH = Path(sys.executable).with_name("hopgraph")
KEY, OTHER_KEY = "hg-mcp-key-one", "hg-mcp-key-two"
TOOLS = {"ask", "kb_search", "grail_search", "kb_sources", "memory_recall", "memory_ingest",
         "memory_forget"}  # fmt: skip
REPLIES = by_template(
    {
        "polarmem/entities": json.dumps(
            {"entities": [{"name": "lighthouse", "polarity": "present"}]}
        ),
        "polarmem/parse_query": json.dumps({"positive": ["lighthouse"], "negative": []}),
    },  # fmt: skip
)


def reply(body: dict) -> str:
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


def test_over_stdio_a_client_lists_searches_asks_and_gets_tool_errors(kb, tmp_path):
    from mcp.client.stdio import StdioServerParameters

    with ScriptedServer(reply) as model:
        params = StdioServerParameters(
            command=str(HOPGRAPH),
            args=["mcp", "--kb", str(kb), "--base-url", model.base_url, "--model", "scripted",
                  "--set", f"polar_dir={tmp_path / 'memory'}"],
            env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)},
            cwd=str(tmp_path),
        )  # fmt: skip
        asyncio.run(session(params, a_caller_session))


@pytest.fixture(scope="module")
def http_server(kb, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mcp-http")
    with ScriptedServer(reply) as model:
        port = free_port()
        env = {**os.environ, "HOPGRAPH_API_KEYS": f"{KEY},{OTHER_KEY}", "HOME": str(tmp)}
        log = open(tmp / "server.log", "wb")  # noqa: SIM115 - the server's, closed below
        proc = subprocess.Popen(
            [str(HOPGRAPH), "mcp", "--http", "--port", str(port), "--kb", str(kb),
             "--base-url", model.base_url, "--model", "scripted",
             "--set", f"polar_dir={tmp / 'memory'}"],
            cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
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


def keyed(url: str, key: str):  # noqa: ANN201 - an MCP transport
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    # a first search loads the embedder in the server: more than the default 5 s on a cold disk
    client = httpx2.AsyncClient(headers={"x-api-key": key}, timeout=120)
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
        stored = await client.call_tool(
            "memory_ingest", {"text": "A red lighthouse stands on the northern cliff."}
        )
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
    assert {p.name[:4] for p in (tmp / "memory").iterdir()} == {"key-"}  # a folder per key
