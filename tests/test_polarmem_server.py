"""PolarMem's memory on a deployment's shared servers (issue 58): its graph in the registry's
PostgreSQL, z_sem on the Chroma server, so that two machines (here: this process and another)
read and write one memory with no shared folder. Real ``chroma run`` and PostgreSQL."""

import json
import subprocess
import sys
import textwrap

import pytest
from conftest import fresh_database
from servers import CHROMA

from hopgraph.memory.polarmem import Observation, PolarMemory, PolarMemoryError
from hopgraph.settings.polarmem import PolarMemContext as Context

pytestmark = pytest.mark.skipif(not CHROMA.exists(), reason="the chroma CLI is not installed")


def other_machine(chroma: str, db: str, folder: str, code: str) -> object:
    """Run ``code`` against the memory in another process (a machine of its own: another
    folder, the same servers); what it prints, as JSON."""
    program = textwrap.dedent(f"""
        import json
        from hopgraph.memory.polarmem import PolarMemory
        mem = PolarMemory({folder!r}, chroma_url={chroma!r}, db_url={db!r})
    """) + textwrap.dedent(code)
    out = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def test_two_machines_share_one_memory_on_the_servers(tmp_path, chroma_server, postgres):
    db = fresh_database(postgres, "polar_shared")
    here = PolarMemory(tmp_path / "a" / "team", chroma_url=chroma_server, db_url=db)
    here.add(
        [
            Observation("image", "a knife on a cutting board", key="img1", has={"knife": 0.9}),
            Observation("image", "an empty cutting board", key="img2", not_has={"knife": 0.05}),
            Observation("text", "The harbour bell rings at noon.", key="t1"),
        ]
    )
    assert not (tmp_path / "a").exists(), "a server memory keeps no folder"

    seen = other_machine(
        chroma_server,
        db,
        str(tmp_path / "b" / "team"),
        """
        hits = mem.recall("a board with a knife", positive=["knife"], k=3)
        print(json.dumps([[h.content, h.s_log] for h in hits]))
    """,
    )
    assert seen[0] == ["a knife on a cutting board", 1]
    assert ["an empty cutting board", -1] not in seen  # its NOT_HAS conflicts: suppressed

    gone = Observation("image", "a knife on a cutting board", key="img1").id
    forgot = other_machine(
        chroma_server,
        db,
        str(tmp_path / "b" / "team"),
        f"""
        print(json.dumps(mem.forget([{gone!r}])))
    """,
    )
    assert forgot == [gone]
    hits = here.recall("a board with a knife", positive=["knife"], k=3)  # its write, seen here
    assert all(h.content != "a knife on a cutting board" for h in hits)
    assert here.stats()["vectors"] == 2 and here.stats()["forgotten"] == 1

    other = PolarMemory(tmp_path / "a" / "solo", chroma_url=chroma_server, db_url=db)
    assert other.stats()["vectors"] == 0  # another name, another memory on the same servers
    with pytest.raises(PolarMemoryError, match="embedder"):
        PolarMemory(
            tmp_path / "team", chroma_url=chroma_server, db_url=db, embedder="all-MiniLM-L12-v2"
        )


def test_a_memory_on_a_chroma_server_without_a_database_is_refused_naming_the_setting(
    tmp_path, chroma_server
):
    ctx = Context(polar_dir=str(tmp_path / "m"), chroma_url=chroma_server)
    with pytest.raises(PolarMemoryError, match="registry_url"):
        PolarMemory.from_context(ctx)
