"""Faults of a shared KB's servers mid-index (issue 58): the Chroma server or the registry's
PostgreSQL lost while a source is half stored. The error names which server, readers never see
the half-stored source, and the same index run again goes on where it stopped. Real servers on
loopback: ``chroma run`` and PostgreSQL."""

import pytest
from conftest import fresh_database
from servers import CHROMA, start_chroma

from hopgraph.memory.chroma import ChromaUnreachable
from hopgraph.memory.indexing import index_source
from hopgraph.memory.kb import KnowledgeBase
from hopgraph.memory.registry import RegistryUnreachable

pytestmark = pytest.mark.skipif(not CHROMA.exists(), reason="the chroma CLI is not installed")


def corpus(root):
    """A one-passage source, then a three-passage one (each passage a batch of its own)."""
    root.mkdir()
    (root / "a.txt").write_text("The mill of Tollen grinds barley every autumn.")
    filler = " ".join(["The bells hang in the tower of the old harbour hall."] * 10)
    (root / "b.txt").write_text(  # ~110 words a paragraph: one passage each (180 at most)
        "\n\n".join(
            f"Ledger page {i} of Marrowick lists {i} copper bells. {filler}" for i in range(3)
        )
    )


def ledger_pages(kb: KnowledgeBase) -> list[str]:
    return [t for t in (h["text"] for h in kb.iter_items("text")) if "Ledger page" in t]


def search_texts(kb: KnowledgeBase) -> list[str]:
    return [h["text"] for h in kb.search("How many copper bells does the ledger list?", k=10)]


def lost_at_third_batch(lose):
    """An ``on_batch`` that calls ``lose`` once: after b.txt's first passage is stored (the
    first batch is a.txt's passage, the second commits a.txt and stores b's first)."""
    batches = []

    def on_batch(_report) -> None:
        batches.append(1)
        if len(batches) == 2:
            lose()

    return on_batch


def test_a_chroma_server_lost_mid_index_is_named_and_the_index_goes_on(tmp_path, postgres):
    registry = fresh_database(postgres, "kb_chroma_lost")
    corpus(tmp_path / "docs")
    proc, url = start_chroma(tmp_path / "srv")

    def lose() -> None:
        proc.kill()
        proc.wait()

    kb = KnowledgeBase("unused", chroma_url=url, registry_url=registry)
    with pytest.raises(ChromaUnreachable, match=f"Chroma server at {url} \\(chroma_url\\)"):
        index_source(
            kb,
            tmp_path / "docs",
            "folder",
            ocr="off",
            batch_size=1,
            on_batch=lost_at_third_batch(lose),
            worker="w1",
        )
    with pytest.raises(ChromaUnreachable, match=url):  # a reader: named, not "no results"
        kb.search("copper bells", k=3)

    proc, url = start_chroma(tmp_path / "srv")  # the same data, back (on another port)
    try:
        reader = KnowledgeBase("unused", chroma_url=url, registry_url=registry)
        assert len(ledger_pages(reader)) == 0, "a half-stored source was shown"
        assert not any("Ledger" in t for t in search_texts(reader))
        assert [s.path.rsplit("/", 1)[-1] for s in reader.registry.sources() if s.hash] == ["a.txt"]

        writer = KnowledgeBase("unused", chroma_url=url, registry_url=registry)
        report = index_source(writer, tmp_path / "docs", "folder", ocr="off", worker="w2")
        assert report.unchanged == 1 and report.added + report.existing == 3
        pages = ledger_pages(reader)
        assert sorted(pages) == sorted(set(pages)) and len(pages) == 3  # whole, once
        assert not reader.hidden()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_a_registry_lost_mid_index_is_named_and_the_index_goes_on(tmp_path, postgres):
    import psycopg

    registry = fresh_database(postgres, "kb_registry_lost")
    corpus(tmp_path / "docs")
    proc, url = start_chroma(tmp_path / "srv")

    def lose() -> None:  # the server drops the indexer's connection, as a restart would
        with psycopg.connect(postgres, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = 'kb_registry_lost' AND pid <> pg_backend_pid()"
            )

    try:
        kb = KnowledgeBase("unused", chroma_url=url, registry_url=registry)
        with pytest.raises(RegistryUnreachable, match="source registry at .*kb_registry_lost"):
            index_source(
                kb,
                tmp_path / "docs",
                "folder",
                ocr="off",
                batch_size=1,
                on_batch=lost_at_third_batch(lose),
                worker="w1",
            )
        assert not any("Ledger" in t for t in search_texts(kb))  # reconnected: b still hidden

        report = index_source(
            kb, tmp_path / "docs", "folder", ocr="off", worker="w1", lease_seconds=1
        )
        assert report.unchanged == 1 and not report.failed
        assert len(ledger_pages(kb)) == 3 and not kb.hidden()
        found = search_texts(kb)
        assert any("Ledger" in t for t in found)
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_the_cli_names_an_unreachable_chroma_server_without_a_traceback(tmp_path):
    from servers import hopgraph

    from hopgraph.models.embedded import free_port

    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    for args in (("search", "copper bells"), ("kb", "stats")):
        out = hopgraph(*args, "--set", f"chroma_url={url}", cwd=tmp_path)
        assert out.returncode == 2, out.stdout + out.stderr
        assert f"the Chroma server at {url} (chroma_url) cannot be reached" in out.stderr
        assert "Traceback" not in out.stderr


def test_a_server_collection_without_registry_rows_is_named_and_can_be_adopted(
    tmp_path, chroma_server, postgres
):
    """Items indexed with one registry, then read with another that names no source: `kb ls`
    and `kb stats` say so and how to adopt or rebuild; re-indexing adopts without embedding
    again; another embedder's collection is refused; `kb drop --yes` empties the server."""
    from servers import hopgraph

    first, second = fresh_database(postgres, "kb_first"), fresh_database(postgres, "kb_second")
    corpus(tmp_path / "docs")
    at = ["--set", f"chroma_url={chroma_server}"]
    out = hopgraph("index", "docs", *at, "--set", f"registry_url={first}", "--no-ocr", cwd=tmp_path)
    assert out.returncode == 0, out.stderr

    other = [*at, "--set", f"registry_url={second}"]
    for args in (("kb", "ls"), ("kb", "stats")):
        out = hopgraph(*args, *other, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        assert "holds 4 item(s) that no source of its registry names" in " ".join(
            out.stderr.split()
        )
        assert "kb drop --yes" in out.stderr

    out = hopgraph(
        "search", "copper bells", *other, "--set", "text_embedder=all-MiniLM-L12-v2", cwd=tmp_path
    )
    assert out.returncode == 2 and "not comparable" in out.stderr, out.stdout + out.stderr

    out = hopgraph("index", "docs", *other, "--no-ocr", cwd=tmp_path)
    assert out.returncode == 0 and "0 added, 4 already indexed" in out.stdout, out.stdout
    out = hopgraph("kb", "ls", *other, cwd=tmp_path)
    assert "no source of its registry names" not in out.stderr

    out = hopgraph("kb", "drop", *other, cwd=tmp_path)
    assert out.returncode == 2 and "add --yes" in out.stderr
    out = hopgraph("kb", "drop", "--yes", *other, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    kb = KnowledgeBase("unused", chroma_url=chroma_server, registry_url=second)
    assert sum(kb.counts().values()) == 0 and not kb.registry.sources()
