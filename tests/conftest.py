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


PG_BIN = sorted(Path(p) for p in __import__("glob").glob("/usr/lib/postgresql/*/bin"))


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server on loopback for the session (.ci/run installs the package)."""
    import shutil
    import subprocess
    import tempfile

    from hopgraph.models.embedded import free_port

    if not PG_BIN:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql; .ci/run does)")
    # not under pytest's tmp (private to root): the server's own user must reach it
    data = Path(tempfile.mkdtemp(prefix="hopgraph-pg-")) / "data"
    as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_pg:  # the server refuses to run as root
        shutil.chown(data.parent, "postgres")
    port = free_port()

    def run(*cmd):
        return subprocess.run([*as_pg, *cmd], check=True, capture_output=True, timeout=120)

    run(str(PG_BIN[-1] / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust")
    run(str(PG_BIN[-1] / "pg_ctl"), "-D", str(data), "-w", "-l", str(data.parent / "log"), "-o",
        f"-p {port} -k {data.parent} -c listen_addresses=127.0.0.1", "start")  # fmt: skip
    yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    run(str(PG_BIN[-1] / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
    shutil.rmtree(data.parent, ignore_errors=True)


def fresh_database(postgres: str, name: str) -> str:
    """A new empty database on the ``postgres`` server; its URL."""
    import psycopg

    with psycopg.connect(postgres, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return postgres.rsplit("/", 1)[0] + f"/{name}"


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
