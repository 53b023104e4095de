"""A KB on a Chroma server keeps every guarantee of a local one when its source registry lives in
PostgreSQL (``registry_url``): a real ``chroma run`` and a real PostgreSQL on loopback, driven
through the CLI as a user on several machines would."""

import json
import subprocess
import sys
from pathlib import Path

from conftest import fresh_database
from scripted_server import ScriptedServer
from servers import hopgraph, scripted


def texts(out: str) -> str:
    return out.lower()


def test_an_edited_file_on_a_server_kb_replaces_its_old_version(tmp_path, chroma_server, postgres):
    """On a Chroma server an edited file kept both versions ("a green heron named Pim" beside
    "a red fox named Tor"), `kb ls` and `kb rm` refused, `--prune` removed nothing, and a run
    could not tell that the KB changed under its record."""
    registry = fresh_database(postgres, "kb_edit")
    server = ["--set", f"chroma_url={chroma_server}", "--set", f"registry_url={registry}"]
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "pets.txt").write_text("A green heron named Pim lives by the mill pond.")
    (corpus / "mill.txt").write_text("The mill of Tollen grinds barley every autumn.")
    (corpus / "gone.txt").write_text("The lighthouse of Marrowick is painted copper.")
    out = hopgraph("index", "corpus", *server, "--no-ocr", cwd=tmp_path)
    assert out.returncode == 0 and "3 added" in out.stdout, out.stdout + out.stderr

    (tmp_path / "q.jsonl").write_text(
        '{"id": "a", "question": "Which animal lives by the pond?"}\n'
    )
    with ScriptedServer() as model:
        run = [
            "run",
            "--agent",
            "rag",
            "--questions",
            "q.jsonl",
            "--out",
            "r",
            *server,
            *scripted(model.base_url),
        ]
        out = hopgraph(*run, cwd=tmp_path)
        assert out.returncode == 0, out.stderr

        (corpus / "pets.txt").write_text("A red fox named Tor lives by the mill pond.")
        (corpus / "gone.txt").unlink()
        out = hopgraph("index", "corpus", *server, "--no-ocr", "--prune", cwd=tmp_path)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "1 changed source(s) replaced" in out.stdout and "removed" in out.stdout

        found = hopgraph("search", "an animal by the mill pond", *server, cwd=tmp_path)
        assert found.returncode == 0, found.stderr
        assert "fox named tor" in texts(found.stdout) and "heron" not in texts(found.stdout)
        found = hopgraph("search", "the copper lighthouse", *server, cwd=tmp_path)
        assert "marrowick" not in texts(found.stdout)

        listed = hopgraph("kb", "ls", *server, "--json", cwd=tmp_path)
        assert listed.returncode == 0, listed.stderr
        sources = json.loads(listed.stdout)
        paths = sorted(Path(s["path"]).name for s in sources)
        assert paths == ["mill.txt", "pets.txt"]
        import hashlib

        pets = next(s for s in sources if s["path"].endswith("pets.txt"))
        digest = hashlib.sha256(b"pets.txt\0" + (corpus / "pets.txt").read_bytes()).hexdigest()
        assert pets["sha256"] == digest and pets["pending"] is None

        (tmp_path / "q.jsonl").write_text(
            '{"id": "a", "question": "Which animal lives by the pond?"}\n'
            '{"id": "b", "question": "What does the mill grind?"}\n'
        )
        out = hopgraph(*run, cwd=tmp_path)  # the record's KB changed under it
    assert out.returncode == 2, out.stdout + out.stderr
    assert "a source changed" in out.stderr

    # the registry's password never reaches a record
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["context"]["registry_url"] == registry  # (this one has none)


def test_a_server_kb_without_a_registry_is_refused_naming_the_setting(tmp_path, chroma_server):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "pets.txt").write_text("A green heron named Pim lives by the mill pond.")
    server = ["--set", f"chroma_url={chroma_server}"]
    for command in (["index", "corpus", "--no-ocr"], ["kb", "ls"], ["kb", "rm", "x"]):
        out = hopgraph(*command, *server, cwd=tmp_path)
        assert out.returncode == 2, (command, out.stderr)
        assert "no source registry is configured" in out.stderr
        assert "registry_url=postgresql://" in out.stderr


def test_a_registry_password_is_kept_out_of_manifests_and_messages():
    from hopgraph.graphs import every_context

    Context = every_context()

    ctx = Context(registry_url="postgresql://kb:s3cret@db.example:5432/kb")
    assert ctx.as_dict()["registry_url"] == "postgresql://kb:***@db.example:5432/kb"


BIG = 400


def write_big(path, marker):
    path.write_text(
        "\n\n".join(f"Record {i} of {path.stem} says {marker} {i} times." for i in range(BIG))
    )


def spawn_index(root, chroma, registry, worker, *, batch_size=4, lease=3.0):
    import textwrap

    code = textwrap.dedent(
        f"""
        import json
        from hopgraph.memory.indexing import index_source
        from hopgraph.memory.kb import KnowledgeBase
        kb = KnowledgeBase("unused", chroma_url={chroma!r}, registry_url={registry!r})
        report = index_source(kb, {str(root)!r}, "folder", ocr="off", batch_size={batch_size},
                              worker={worker!r}, lease_seconds={lease})
        print(json.dumps(report.as_dict()))
        """
    )
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def pending_holds_of(registry, worker):
    import psycopg

    with psycopg.connect(registry) as db:
        if not db.execute("SELECT to_regclass('hopgraph_registry.leases')").fetchone()[0]:
            return 0  # not made yet
        return db.execute(
            "SELECT COUNT(*) FROM hopgraph_registry.holds h JOIN hopgraph_registry.sources s "
            "ON h.path = s.path AND h.hash = s.pending JOIN hopgraph_registry.leases l "
            "ON l.path = s.path WHERE l.worker = %s",
            (worker,),
        ).fetchone()[0]


def test_two_indexers_share_the_sources_and_one_killed_loses_nothing(
    tmp_path, chroma_server, postgres
):
    import signal
    import time

    from hopgraph.memory.kb import KnowledgeBase

    registry = fresh_database(postgres, "kb_two")
    root = tmp_path / "docs"
    root.mkdir()
    for n in range(6):
        write_big(root / f"ledger{n}.txt", "AMBER")
    one = spawn_index(root, chroma_server, registry, "w1", batch_size=2)
    two = spawn_index(root, chroma_server, registry, "w2")
    deadline = time.monotonic() + 300
    while pending_holds_of(registry, "w1") < 4 and one.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    one.send_signal(signal.SIGKILL)
    assert one.wait() == -signal.SIGKILL, "the first indexer finished before it could be killed"
    out, _ = two.communicate(timeout=600)
    assert two.returncode == 0
    report = json.loads(out.splitlines()[-1])
    assert report["unchanged"] == 0 and not report["failed"]  # 5 free, then the killed one's

    kb = KnowledgeBase("unused", chroma_url=chroma_server, registry_url=registry)
    sources = kb.registry.sources()
    assert len(sources) == 6 and all(s.hash and not s.pending for s in sources)
    assert not kb.hidden() or not kb.registry.garbage()
    every = [h["text"] for h in kb.iter_items("text")]
    for n in range(6):  # each source whole, once
        text = " ".join(t for t in every if f"of ledger{n} says" in t)
        assert all(text.count(f"ledger{n} says AMBER {i} times.") == 1 for i in range(BIG))
    again = spawn_index(root, chroma_server, registry, "w3")
    out, _ = again.communicate(timeout=600)
    assert json.loads(out.splitlines()[-1])["unchanged"] == 6  # a re-run reads nothing


def test_a_reader_of_a_server_kb_sees_one_whole_version_during_a_replace(
    tmp_path, chroma_server, postgres
):
    from hopgraph.memory.indexing import index_source
    from hopgraph.memory.kb import KnowledgeBase

    registry = fresh_database(postgres, "kb_reader")
    root = tmp_path / "docs"
    root.mkdir()
    write_big(root / "ledger.txt", "AMBER")
    reader = KnowledgeBase("unused", chroma_url=chroma_server, registry_url=registry)
    index_source(reader, root, "folder", ocr="off")
    write_big(root / "ledger.txt", "CRIMSON")
    writer = spawn_index(root, chroma_server, registry, "w1")
    versions = []
    while writer.poll() is None:
        seen = [h["text"] for h in reader.search("What does the ledger say?", k=20)]
        kinds = {"AMBER" in t for t in seen if "ledger" in t}
        assert len(kinds) <= 1, f"a search mixed two versions: {seen}"
        versions += list(kinds)
    assert writer.wait() == 0
    seen = [h["text"] for h in reader.search("What does the ledger say?", k=20)]
    assert seen and all("CRIMSON" in t for t in seen)
    assert versions and versions[0] is True  # it began on the old version


def test_a_trained_grail_adapter_follows_a_server_kb_through_its_registry(
    tmp_path, chroma_server, postgres
):
    """GRAIL with trained weights steers over the server KB's projection (no process loads the
    KB), and an edited file, re-indexed, makes the next steered search use a new projection
    holding the new version (issue 58 item 4)."""
    import torch

    from hopgraph.graphs import every_context

    Context = every_context()
    from hopgraph.memory.kb import COLLECTION_PREFIX, KnowledgeBase
    from hopgraph.runtime import close_all
    from hopgraph.tools.grail.models import GrailModel
    from hopgraph.tools.grail.retrieval import PROJECTED
    from hopgraph.tools.grail.tool import grail_search

    registry = fresh_database(postgres, "kb_grail")
    server = ["--set", f"chroma_url={chroma_server}", "--set", f"registry_url={registry}"]
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    files = {
        "pets.txt": "A green heron named Pim lives by the mill pond.",
        "mill.txt": "The mill of Tollen grinds barley every autumn.",
        "port.txt": "The port of Marrowick ships barley south.",
    }
    for name, text in files.items():
        (corpus / name).write_text(text)
    assert hopgraph("index", "corpus", *server, "--no-ocr", cwd=tmp_path).returncode == 0
    ctx = Context(
        kb_dir=str(tmp_path / "unused"),
        chroma_url=chroma_server,
        registry_url=registry,
        grail_weights=str(tmp_path / "w"),
    )
    kb = KnowledgeBase.from_context(ctx)
    torch.manual_seed(1)
    model = GrailModel(kb.embedder.dim, align=True)
    with torch.no_grad():
        model.aligner.weight.copy_(
            torch.linalg.qr(torch.randn(kb.embedder.dim, kb.embedder.dim))[0]
        )
    model.save(tmp_path / "w", {})
    held = [kb.search("the mill of Tollen", k=1)[0]["id"]]

    def projections() -> list[str]:
        names = [getattr(c, "name", c) for c in kb.client.list_collections()]
        return [n for n in names if n.startswith(COLLECTION_PREFIX + PROJECTED)]

    hits = grail_search("an animal by the pond", held, 2, "gap-fixed", ctx)
    assert "heron" in hits[0]["text"] and len(projections()) == 1
    (corpus / "pets.txt").write_text("A red fox named Tor lives by the mill pond.")
    assert hopgraph("index", "corpus", *server, "--no-ocr", cwd=tmp_path).returncode == 0
    hits = grail_search("an animal by the pond", held, 2, "gap-fixed", ctx)
    assert "fox" in hits[0]["text"] and not any("heron" in h["text"] for h in hits)
    assert len(projections()) == 1  # the earlier state's projection is dropped
    close_all()
