from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # tests/scripted.py

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture
def endpoint():
    from scripted import ScriptedEndpoint

    return ScriptedEndpoint


@pytest.fixture(autouse=True)
def _no_hopgraph_env(monkeypatch):
    """Tests see the documented defaults, not the developer's HOPGRAPH_* settings."""
    for key in list(os.environ):
        if key.startswith("HOPGRAPH_"):
            monkeypatch.delenv(key)


@pytest.fixture(scope="session")
def town_kb(tmp_path_factory):
    """A knowledge base of eight one-line passages, "Fact i about town i." (title "Town i")."""
    from hopgraph.memory.kb import Item, KnowledgeBase

    path = tmp_path_factory.mktemp("town-kb")
    KnowledgeBase(path).add(
        [Item("text", f"k{i}", f"Fact {i} about town {i}.", title=f"Town {i}") for i in range(8)]
    )
    return path


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server on loopback for the session (.ci/run installs the package)."""
    from servers import PG_BIN, start_postgres

    if not PG_BIN:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql; .ci/run does)")
    url, stop = start_postgres()
    yield url
    stop()


def fresh_database(postgres: str, name: str) -> str:
    from servers import fresh_database as fresh

    return fresh(postgres, name)


@pytest.fixture
def chroma_server(tmp_path):
    """``chroma run`` from this environment on a free loopback port."""
    from servers import CHROMA, start_chroma

    if not CHROMA.exists():
        pytest.skip("the chroma CLI is not installed")
    proc, url = start_chroma(tmp_path / "srv")
    yield url
    proc.terminate()
    proc.wait(timeout=20)
