"""The scale-out path: the knowledge base on a real Chroma server (``chroma run``) on loopback."""

import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.models.embedded import free_port

CHROMA = Path(sys.executable).parent / "chroma"


@pytest.fixture
def chroma_server(tmp_path):
    if not CHROMA.exists() and shutil.which("chroma") is None:
        pytest.skip("the chroma CLI is not installed")
    port = free_port()
    proc = subprocess.Popen(
        [
            str(CHROMA if CHROMA.exists() else "chroma"),
            "run",
            "--path",
            str(tmp_path / "srv"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/api/v2/heartbeat", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("chroma server did not start")
    yield url
    proc.terminate()
    proc.wait(timeout=20)


def test_two_clients_share_one_server(chroma_server, tmp_path):
    writer = KnowledgeBase(tmp_path / "a", chroma_url=chroma_server)
    writer.add(
        [
            Item("text", "x", "Harrowgate is a walled city.", title="Harrowgate"),
            Item("text", "y", "Bread is baked.", title="Bread"),
        ]
    )
    reader = KnowledgeBase(tmp_path / "b", chroma_url=chroma_server)  # another worker
    assert reader.counts()["text"] == 2
    assert reader.search("walled city", k=1)[0]["title"] == "Harrowgate"
    assert writer.add([Item("text", "x", "Harrowgate is a walled city.")]).added == 0
