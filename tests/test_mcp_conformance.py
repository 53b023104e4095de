"""The official MCP conformance suite (``@modelcontextprotocol/conformance``, pinned in
tests/conformance/package.json with the Node 22 it needs) against ``hopgraph mcp --http``: every
scenario passes but those in tests/conformance/expected-failures.yml, which call the suite's own
fixture tools, resources and prompts. ``make test`` installs the suite with npm (``npm ci``)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from scripted_server import ScriptedServer
from servers import scripted, until_answering

from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.models.embedded import free_port

SUITE = Path(__file__).parent / "conformance"
BIN = SUITE / "node_modules" / ".bin"
HOPGRAPH = Path(sys.executable).with_name("hopgraph")


@pytest.fixture
def served(tmp_path):
    """``hopgraph mcp --http`` on loopback; the suite sends no API key, so the key check is
    off here (HOPGRAPH_AUTH=off, for local development: docs/serving.md)."""
    KnowledgeBase(tmp_path / "kb").add(
        [Item("text", f"k{i}", f"Fact {i} about town {i}.", title=f"Town {i}") for i in range(4)]
    )
    port = free_port()
    env = {**os.environ, "HOPGRAPH_AUTH": "off", "HOME": str(tmp_path)}
    with ScriptedServer() as model, open(tmp_path / "server.log", "wb") as log:
        proc = subprocess.Popen(
            [
                str(HOPGRAPH),
                "mcp",
                "--http",
                "--port",
                str(port),
                "--kb",
                str(tmp_path / "kb"),
                *scripted(model.base_url),
            ],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        url = f"http://127.0.0.1:{port}/mcp"
        try:
            until_answering(proc, url, tmp_path / "server.log")
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=30)


@pytest.mark.skipif(
    not (BIN / "conformance").exists() and shutil.which("npm") is None,
    reason="the MCP conformance suite needs npm (make test installs it with npm ci)",
)
def test_the_official_conformance_suite_passes_but_its_fixture_scenarios(served, tmp_path):
    assert (BIN / "conformance").exists(), "run `make test` (it installs tests/conformance)"
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run(
        [
            str(BIN / "conformance"),
            "server",
            "--url",
            served,
            "--expected-failures",
            str(SUITE / "expected-failures.yml"),
            "-o",
            str(tmp_path / "out"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    summary = out.stdout[out.stdout.find("=== SUMMARY ===") :]
    assert out.returncode == 0, summary + out.stderr[-2000:]
    for scenario in ("logging-set-level", "ping", "tools-list", "dns-rebinding-protection"):
        assert f"✓ {scenario}:" in summary, summary
