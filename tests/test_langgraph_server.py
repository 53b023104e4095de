"""hopgraph's graphs served by LangGraph's own server (`langgraph dev`, in-memory runtime) and
driven through `langgraph_sdk`, against the scripted model endpoint on loopback."""

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from scripted_server import ScriptedServer

from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.models.embedded import free_port

ROOT = Path(__file__).resolve().parents[1]
LANGGRAPH = Path(sys.executable).with_name("langgraph")

pytestmark = pytest.mark.skipif(
    not LANGGRAPH.exists(), reason="langgraph-cli[inmem] not installed (the dev extra has it)"
)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("served")
    KnowledgeBase(tmp / "kb").add(
        [Item("text", f"k{i}", f"Fact {i} about town {i}.", title=f"Town {i}") for i in range(8)]
    )
    with ScriptedServer() as model:
        port = free_port()
        env = {**os.environ, "HOPGRAPH_BASE_URL": model.base_url, "HOPGRAPH_MODEL": "scripted",
               "HOPGRAPH_KB_DIR": str(tmp / "kb"), "LANGGRAPH_CLI_NO_ANALYTICS": "1"}  # fmt: skip
        log = open(tmp / "server.log", "wb")  # noqa: SIM115 - the server's, closed below
        proc = subprocess.Popen(
            [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1",
             "--port", str(port), "--config", str(ROOT / "langgraph.json")],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            while True:  # until it answers, or it exits (then the log says why)
                assert proc.poll() is None, (tmp / "server.log").read_text()[-3000:]
                try:
                    if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.3)
            yield url, model
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            log.close()


@pytest.mark.parametrize("agent", ["rag", "qdrag"])
def test_a_served_graph_streams_and_answers_in_its_output_schema(served, agent):
    from langgraph_sdk import get_sync_client

    url, model = served
    client = get_sync_client(url=url)
    thread = client.threads.create()
    question = {"id": "q3", "question": "What about town 3?"}
    stream = client.runs.stream(
        thread["thread_id"], agent, input=question, stream_mode=["updates", "custom"],
        context={"top_k": 4},
    )  # fmt: skip
    modes = {part.event for part in stream}
    assert {"updates", "custom"} <= modes  # node updates and our trace events, live
    out = client.runs.wait(client.threads.create()["thread_id"], agent, input=question)
    assert set(out) == {"answer", "response", "evidence", "citations", "invalid_citations"}
    assert out["answer"].startswith("answer-") and len(out["citations"]) == 2
    assert all(c.startswith("text-") for c in out["citations"])


def test_a_bad_context_is_refused_with_the_field_named(served):
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=served[0])
    with pytest.raises(Exception, match="'qdrag_mode' must be one of"):
        client.runs.wait(client.threads.create()["thread_id"], "qdrag",
                         input={"id": "q", "question": "Why?"},
                         context={"qdrag_mode": "bogus"})  # fmt: skip
