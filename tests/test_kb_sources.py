"""A knowledge base that stays true when its sources change: the registry, replace, prune, rm,
derived structures, crash safety and a reader beside a writer."""

import json
import os
import signal
import textwrap
import time

import numpy as np
import pymupdf
import pytest
from PIL import Image
from servers import hopgraph, started

from hopgraph.memory.indexing import index_source, triplet_items
from hopgraph.memory.kb import KnowledgeBase
from hopgraph.tools.mabdqa.page_vectors import keep_page_vectors, stored_page_vectors


def write_pdf(path, pages):
    doc = pymupdf.open()
    for text in pages:
        doc.new_page().insert_text((72, 72), text)
    doc.save(path)


def texts(kb, query, k=10):
    return [h["text"] for h in kb.search(query, k=k)]


def visible_stamps_are_live(kb):
    """Every item any read returns belongs to a registered source at its registered version."""
    live = {s.hash for s in kb.registry.sources() if s.hash}
    hidden = set(kb.hidden())
    for modality in ("text", "table", "image", "page"):
        with kb._chroma():
            col = kb.collection(modality, create=False)
            res = col.get(include=["metadatas"]) if col is not None else {"metadatas": []}
        for md in res["metadatas"]:
            if md.get("src_hash") not in hidden:
                assert md.get("src_hash") in live, md


@pytest.fixture
def heron(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    write_pdf(root / "report.pdf", ["The secret launch code of Project Heron is AMBER-7."])
    (root / "notes.txt").write_text("The mascot of the Zelkova club is a green heron named Pim.")
    return root


def test_an_edited_pdf_and_text_file_replace_their_old_versions(heron, tmp_path):
    kb_dir = tmp_path / "kb"
    assert hopgraph("index", heron, "--kb", kb_dir, "--ocr", "off").returncode == 0
    first = {s.path: s.sha256 for s in KnowledgeBase(kb_dir).registry.sources()}
    write_pdf(heron / "report.pdf", ["The secret launch code of Project Heron is CRIMSON-9."])
    (heron / "notes.txt").write_text("The mascot of the Zelkova club is a red fox named Tor.")
    out = hopgraph("index", heron, "--kb", kb_dir, "--ocr", "off")
    assert out.returncode == 0, out.stderr
    assert "2 changed source(s) replaced" in out.stdout

    kb = KnowledgeBase(kb_dir)
    code = texts(kb, "What is the secret launch code of Project Heron?")
    assert any("CRIMSON-9" in t for t in code) and not any("AMBER-7" in t for t in code)
    mascot = texts(kb, "Who is the mascot of the Zelkova club?")
    assert any("red fox" in t for t in mascot) and not any("heron" in t for t in mascot)
    assert kb.counts() == {"text": 1, "table": 0, "image": 0, "page": 1}
    [page] = kb.pages_of("report.pdf")
    assert "CRIMSON-9" in page["text"]
    sources = kb.registry.sources()
    assert sorted(s.path for s in sources) == sorted(first)
    assert all(s.sha256 != first[s.path] and not s.pending for s in sources)
    listed = hopgraph("kb", "ls", "--kb", kb_dir, "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [r["path"].rsplit("/", 1)[1] for r in rows] == ["notes.txt", "report.pdf"]
    assert {r["path"]: r["sha256"] for r in rows} == {s.path: s.sha256 for s in sources}
    visible_stamps_are_live(kb)


def test_an_unchanged_source_is_skipped_unread(heron, tmp_path, monkeypatch):
    kb = KnowledgeBase(tmp_path / "kb")
    index_source(kb, heron, ocr="off")
    from hopgraph.memory import sources

    def unread(*a, **k):
        raise AssertionError("an unchanged source was read")

    monkeypatch.setattr(sources.SourceUnit, "sha256", unread)
    again = index_source(kb, heron, ocr="off")
    assert (again.unchanged, again.added, again.existing) == (2, 0, 0)
    # touched but the same bytes: hashed, found equal, still not read
    monkeypatch.undo()
    os.utime(heron / "notes.txt", ns=(1, 1))
    monkeypatch.setattr(sources, "read_text_file", unread)
    touched = index_source(kb, heron, ocr="off")
    assert (touched.unchanged, touched.added) == (2, 0)
    # other settings make other items from the same bytes: read again
    monkeypatch.undo()
    assert index_source(kb, heron, ocr="off", limit=1).unchanged == 0


def test_a_vanished_source_is_reported_and_pruned_on_request(heron, tmp_path):
    kb = KnowledgeBase(tmp_path / "kb")
    index_source(kb, heron, ocr="off")
    (heron / "notes.txt").unlink()
    report = index_source(kb, heron, ocr="off")
    assert [p.rsplit("/", 1)[1] for p in report.vanished] == ["notes.txt"]
    assert any("heron named Pim" in t for t in texts(kb, "Zelkova mascot"))
    out = hopgraph("index", heron, "--kb", tmp_path / "kb", "--ocr", "off", "--prune")
    assert out.returncode == 0 and "removed" in out.stdout, out.stdout + out.stderr
    kb = KnowledgeBase(tmp_path / "kb")
    assert not any("heron named Pim" in t for t in texts(kb, "Zelkova mascot"))
    assert [s.path.rsplit("/", 1)[1] for s in kb.registry.sources()] == ["report.pdf"]


def test_a_project_moved_with_its_kb_reports_the_old_paths_and_prunes_them(heron, tmp_path):
    """The corpus and its KB moved together: indexing the folder at its new place lists the
    old paths as vanished (no longer on disk), --prune removes them, and `kb ls` shows each
    file's kind, not "folder"."""
    import shutil

    index_source(KnowledgeBase(tmp_path / "kb"), heron, ocr="off")
    moved = tmp_path / "moved"
    moved.mkdir()
    shutil.move(heron, moved / "docs")
    shutil.move(tmp_path / "kb", moved / "kb")
    out = hopgraph("index", moved / "docs", "--kb", moved / "kb", "--ocr", "off")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("no longer on disk") == 2, out.stdout
    listed = hopgraph("kb", "ls", "--kb", moved / "kb")
    assert listed.stdout.count("(missing)") == 2 and "txt in folder" in listed.stdout
    pruned = hopgraph("index", moved / "docs", "--kb", moved / "kb", "--ocr", "off", "--prune")
    assert pruned.returncode == 0 and pruned.stdout.count("removed") >= 2, pruned.stdout
    paths = sorted(s.path for s in KnowledgeBase(moved / "kb").registry.sources())
    assert paths == [str((moved / "docs" / n).resolve()) for n in ("notes.txt", "report.pdf")]
    assert len(texts(KnowledgeBase(moved / "kb"), "Zelkova mascot heron")) == len(
        set(texts(KnowledgeBase(moved / "kb"), "Zelkova mascot heron"))
    )


def test_a_project_copied_with_its_kb_names_the_originals_as_copies_and_prunes_them(
    heron, tmp_path
):
    """The corpus and its KB copied (the originals stay): indexing the copy reports the
    original paths as copied here, not as two sources each (nor as gone, they are still on
    disk); --prune leaves only the copy's paths, and the originals' KB is untouched."""
    import shutil

    index_source(KnowledgeBase(tmp_path / "kb"), heron, ocr="off")
    copy = tmp_path / "copy"
    shutil.copytree(heron, copy / "docs")
    shutil.copytree(tmp_path / "kb", copy / "kb")
    out = hopgraph("index", copy / "docs", "--kb", copy / "kb", "--ocr", "off")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("a copy of the original") == 2, out.stdout
    assert "no longer on disk" not in out.stdout, out.stdout
    pruned = hopgraph("index", copy / "docs", "--kb", copy / "kb", "--ocr", "off", "--prune")
    assert pruned.returncode == 0 and pruned.stdout.count("is indexed") == 2, pruned.stdout
    paths = sorted(s.path for s in KnowledgeBase(copy / "kb").registry.sources())
    assert paths == [str((copy / "docs" / n).resolve()) for n in ("notes.txt", "report.pdf")]
    found = texts(KnowledgeBase(copy / "kb"), "Zelkova mascot heron")
    assert found and len(found) == len(set(found))
    originals = sorted(s.path for s in KnowledgeBase(tmp_path / "kb").registry.sources())
    assert originals == [str((heron / n).resolve()) for n in ("notes.txt", "report.pdf")]


def test_kb_rm_removes_a_source_and_what_came_of_it_but_shared_items_stay(tmp_path):
    root = tmp_path / "docs"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    Image.new("RGB", (64, 64), "green").save(root / "a" / "leaf.png")
    Image.new("RGB", (64, 64), "green").save(root / "b" / "leaf.png")
    write_pdf(root / "manual.pdf", ["Turn the valve clockwise.", "Close the hatch."])
    (root / "a" / "story.txt").write_text("The lighthouse keeper of Marrowick kept goats.")
    kb = KnowledgeBase(tmp_path / "kb")
    index_source(
        kb, root, ocr="off", derive=lambda it: triplet_items(it, [["keeper", "kept", "goats"]])
    )
    flat = np.eye(4, 384, dtype=np.float32)
    keep_page_vectors(kb, "manual.pdf", "abc", "enc", flat, np.array([0, 1, 4]))
    assert stored_page_vectors(kb, "manual.pdf", "abc", "enc")[1].tolist() == [0, 1, 4]
    pngs = [p["path"] for p in kb.pages_of("manual.pdf")]
    assert len(pngs) == 2 and all(os.path.exists(p) for p in pngs)
    assert kb.counts()["text"] == 2  # the passage and its triplet

    gone = [root / "a" / "leaf.png", root / "manual.pdf", root / "a" / "story.txt"]
    out = hopgraph("kb", "rm", *gone, "--kb", tmp_path / "kb")
    assert out.returncode == 0, out.stderr
    kb = KnowledgeBase(tmp_path / "kb")
    assert kb.counts() == {"text": 0, "table": 0, "image": 1, "page": 0}
    assert kb.search("leaf", k=3)[0]["modality"] == "image"  # b/leaf.png still holds it
    assert not any(os.path.exists(p) for p in pngs)
    assert stored_page_vectors(kb, "manual.pdf", "abc", "enc") is None  # gone with the pages
    assert hopgraph("kb", "rm", root / "b" / "leaf.png", "--kb", tmp_path / "kb").returncode == 0
    assert KnowledgeBase(tmp_path / "kb").counts()["image"] == 0
    refused = hopgraph("kb", "rm", root / "nowhere.txt", "--kb", tmp_path / "kb")
    assert refused.returncode == 2 and "not a source" in refused.stderr


def test_a_removed_sources_rows_leave_every_derived_store_by_what_it_follows(tmp_path):
    """Issue 73: the KB knows its derived stores by their metadata, not their names: a store of
    any name whose rows follow item ids, or documents, loses what a removed source held; one
    that follows nothing keeps its rows. The same Store reads and writes local and server KBs."""
    from hopgraph.memory.chroma import FOLLOWS

    root = tmp_path / "src"
    root.mkdir()
    write_pdf(root / "manual.pdf", ["Turn the valve clockwise.", "Close the hatch."])
    (root / "story.txt").write_text("The lighthouse keeper of Marrowick kept goats.")
    kb = KnowledgeBase(tmp_path / "kb")
    index_source(kb, root, ocr="off")
    story = kb.search("the lighthouse keeper", k=1, modalities=["text"])[0]["id"]
    manual = kb.pages_of("manual.pdf")[0]["id"]
    by_id = kb.store("my-notes", "enc", **{FOLLOWS: "id"})
    by_doc = kb.store("my-pages", "enc", **{FOLLOWS: "doc"})
    loose = kb.store("my-cache", "enc")
    vecs = np.eye(2, 8, dtype=np.float32)
    for store, metas in [
        (by_id, None),
        (by_doc, [{"doc": "manual.pdf"}, {"doc": "other.pdf"}]),
        (loose, None),
    ]:
        with store.open(write=True, create=True) as shelf:
            shelf.upsert([story, manual], vecs, metas)
    with by_id.open() as shelf:
        assert shelf.count() == 2 and shelf.nearest(vecs[:1], 1)["ids"] == [[story]]

    assert (
        hopgraph(
            "kb", "rm", root / "story.txt", root / "manual.pdf", "--kb", tmp_path / "kb"
        ).returncode
        == 0
    )
    kb = KnowledgeBase(tmp_path / "kb")
    left = {}
    for name, follows in [("my-notes", "id"), ("my-pages", "doc"), ("my-cache", None)]:
        store = kb.store(name, "enc", **({FOLLOWS: follows} if follows else {}))
        with store.open() as shelf:
            left[store.name] = sorted(shelf.get(include=[])["ids"])
    assert left == {
        "hopgraph-my-notes": [],
        "hopgraph-my-pages": [manual],  # its row of other.pdf stays
        "hopgraph-my-cache": sorted([story, manual]),
    }


def test_derived_triplets_follow_their_passage(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "story.txt").write_text("Ada founded the Kestrel club.")
    kb = KnowledgeBase(tmp_path / "kb")

    def derive(item):
        who = item.text.split()[0]
        return triplet_items(item, [[who, "founded", "club"]])

    index_source(kb, root, ocr="off", derive=derive)
    (root / "story.txt").write_text("Grace founded the Kestrel club.")
    index_source(kb, root, ocr="off", derive=derive)
    found = [h["text"] for h in kb.search("founded club", k=10, derived=True)]
    assert found == ["Grace founded club"]


BIG = 2000


def write_big(path, marker):
    path.write_text(
        "\n\n".join(f"Record {i} of the ledger says {marker} {i} times." for i in range(BIG))
    )


def spawn_index(kb_dir, root, batch_size):
    code = textwrap.dedent(
        f"""
        from hopgraph.memory.indexing import index_source
        from hopgraph.memory.kb import KnowledgeBase
        index_source(KnowledgeBase({str(kb_dir)!r}), {str(root)!r}, "folder", ocr="off",
                     batch_size={batch_size})
        """
    )
    return started(code=code)


def pending_holds(kb_dir):
    import sqlite3

    db = sqlite3.connect(kb_dir / "sources.sqlite", timeout=60)
    try:
        row = db.execute(
            "SELECT COUNT(*) FROM holds h JOIN sources s ON h.path = s.path AND h.hash = s.pending"
        ).fetchone()
        return row[0]
    finally:
        db.close()


def test_a_reindex_killed_mid_way_leaves_no_stale_item_and_a_rerun_finishes(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    write_big(root / "ledger.txt", "AMBER")
    kb_dir = tmp_path / "kb"
    index_source(KnowledgeBase(kb_dir), root, "folder", ocr="off")
    write_big(root / "ledger.txt", "CRIMSON")
    child = spawn_index(kb_dir, root, batch_size=1)
    deadline = time.monotonic() + 300
    while pending_holds(kb_dir) < 20 and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL, "the index finished before it could be killed"

    kb = KnowledgeBase(kb_dir)
    visible_stamps_are_live(kb)
    seen = [t for t in texts(kb, "What does the ledger say?", k=50)]
    assert seen and all("AMBER" in t for t in seen)  # the old version, whole, until replaced

    index_source(kb, root, "folder", ocr="off")
    kb = KnowledgeBase(kb_dir)
    every = " ".join(h["text"] for h in kb.iter_items("text"))  # paragraphs merge in chunks
    assert "AMBER" not in every
    assert all(every.count(f"says CRIMSON {i} times.") == 1 for i in range(BIG))
    assert not kb.hidden() or all(s.pending is None for s in kb.registry.sources())
    visible_stamps_are_live(kb)


def test_a_reader_beside_a_writer_sees_one_whole_version_of_a_source(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    write_big(root / "ledger.txt", "AMBER")
    (root / "other.txt").write_text("The harbour of Caldra freezes in winter.")
    kb_dir = tmp_path / "kb"
    reader = KnowledgeBase(kb_dir)
    index_source(reader, root, "folder", ocr="off")
    write_big(root / "ledger.txt", "CRIMSON")
    writer = spawn_index(kb_dir, root, batch_size=4)
    versions = []
    while writer.poll() is None:
        ledger = [t for t in texts(reader, "What does the ledger say?", k=20) if "ledger" in t]
        kinds = {"AMBER" in t for t in ledger}
        assert len(kinds) <= 1, f"a search mixed two versions: {ledger}"
        if kinds:
            versions.append(kinds.pop())
    assert writer.returncode == 0
    ledger = [t for t in texts(reader, "What does the ledger say?", k=20) if "ledger" in t]
    assert ledger and all("CRIMSON" in t for t in ledger)
    assert versions and versions[0] is True  # it began on the old version
    assert any("Caldra" in t for t in texts(reader, "Which harbour freezes?"))


def test_a_crash_then_a_reverted_edit_leaves_the_old_version_whole(tmp_path, monkeypatch):
    """Killed while writing v1, then the file put back to v0 and indexed again: v0 is what the
    KB holds, whole, and nothing of v1 is visible or left stored."""
    root = tmp_path / "docs"
    root.mkdir()
    write_big(root / "ledger.txt", "AMBER")
    kb = KnowledgeBase(tmp_path / "kb")
    index_source(kb, root, "folder", ocr="off")
    before = kb.counts()["text"]
    write_big(root / "ledger.txt", "CRIMSON")
    calls = {"n": 0}
    add = KnowledgeBase.add

    def dies_on_the_third_batch(self, items, **kw):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # as a kill: nothing after this point runs
        return add(self, items, **kw)

    monkeypatch.setattr(KnowledgeBase, "add", dies_on_the_third_batch)
    with pytest.raises(KeyboardInterrupt):
        index_source(kb, root, "folder", ocr="off", batch_size=8)
    monkeypatch.undo()
    assert all("AMBER" in t for t in texts(kb, "What does the ledger say?", k=30))
    write_big(root / "ledger.txt", "AMBER")  # the edit reverted
    report = index_source(kb, root, "folder", ocr="off")
    assert report.unchanged == 0  # a source left half-written is read again
    every = " ".join(h["text"] for h in kb.iter_items("text"))
    assert "CRIMSON" not in every and kb.counts()["text"] == before
    assert all(every.count(f"says AMBER {i} times.") == 1 for i in range(BIG))
    assert not kb.hidden() or not kb.registry.garbage()
    visible_stamps_are_live(kb)


def test_a_source_another_indexer_holds_with_other_settings_is_refused(tmp_path):
    """Two indexers given different build settings for one KB would each make their own version
    of a source, one replacing the other: the second is refused, naming the first."""
    from hopgraph.memory.indexing import LeaseConflict

    root = tmp_path / "docs"
    root.mkdir()
    (root / "notes.txt").write_text("The mascot of the Zelkova club is a green heron named Pim.")
    kb = KnowledgeBase(tmp_path / "kb")
    theirs = {
        "format": "folder",
        "ocr": "rapidocr",
        "page_pixels": 0,
        "limit": None,
        "derived": False,
    }
    key = str((root / "notes.txt").resolve())
    assert kb.registry.claim(key, "host:1:other", json.dumps(theirs, sort_keys=True), 60) is None
    with pytest.raises(LeaseConflict, match="being indexed by host:1:other with other settings"):
        index_source(kb, root, "folder", ocr="off", render_pages=False)


def test_a_folder_listed_but_not_entered_keeps_its_sources_under_prune(
    heron, tmp_path, monkeypatch
):
    """A folder of mode 444 can be listed but its files not reached: they were "skipped:
    unreadable" and then "removed: gone" by ``--prune``, exit 0. Each is now a failed source
    and nothing under that folder is reported gone. (The kernel's refusal is made at
    ``os.stat`` / ``os.lstat`` of what lies inside; tests run as root.)"""
    private = heron / "private"
    private.mkdir()
    (private / "plan.txt").write_text("The Heron rendezvous is at the old lighthouse.")
    kb = KnowledgeBase(tmp_path / "kb")
    index_source(kb, heron, ocr="off")
    inner = str(private.resolve()) + os.sep
    stat, lstat = os.stat, os.lstat

    def refused(real):  # noqa: ANN001, ANN202
        def call(path, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
            if os.path.abspath(os.fspath(path)).startswith(inner):
                raise PermissionError(13, "Permission denied", os.fspath(path))
            return real(path, *args, **kwargs)

        return call

    monkeypatch.setattr(os, "stat", refused(stat))
    monkeypatch.setattr(os, "lstat", refused(lstat))
    report = index_source(kb, heron, ocr="off", prune=True)
    monkeypatch.undo()
    assert report.vanished == [] and report.pruned == [], report.as_dict()
    assert [f.reason for f in report.failed] == ["unreadable: Permission denied"]
    assert any("old lighthouse" in t for t in texts(kb, "Heron rendezvous"))
    assert len(kb.registry.sources()) == 3


def test_an_unreadable_folder_is_a_failure_and_prune_removes_nothing_of_it(
    heron, tmp_path, monkeypatch
):
    """A folder that cannot be listed (no permission) is named as a failed source, and what it
    held is neither reported vanished nor pruned: the index exits with the failed-sources
    status. (The listing is refused at ``os.scandir``, as the kernel refuses it for a user
    without permission; tests run as root, which no mode bit stops.)"""
    private = heron / "private"
    private.mkdir()
    (private / "plan.txt").write_text("The Heron rendezvous is at the old lighthouse.")
    kb = KnowledgeBase(tmp_path / "kb")
    index_source(kb, heron, ocr="off")
    real = os.scandir

    def scandir(path="."):
        if os.path.realpath(path) == str(private.resolve()):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    report = index_source(kb, heron, ocr="off", prune=True)
    assert report.vanished == [] and report.pruned == [], report.as_dict()
    assert [(f.where, f.reason) for f in report.failed] == [
        (str(private), "cannot read this folder: Permission denied")
    ]
    assert any("old lighthouse" in t for t in texts(kb, "Heron rendezvous"))
    assert len(kb.registry.sources()) == 3


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_index_says_what_it_kept_and_exits_by_the_signal(tmp_path, sig, code):
    """Ctrl-C or SIGTERM during ``index`` exited 130 / 143 printing nothing."""
    root = tmp_path / "docs"
    root.mkdir()
    write_big(root / "ledger.txt", "AMBER")
    proc = started("index", root, "--kb", tmp_path / "kb", "--ocr", "off", sigint=True)
    deadline = time.monotonic() + 300
    while not (tmp_path / "kb" / "builds.jsonl").exists():  # the read has begun
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err
    assert "interrupted: sources indexed whole are kept" in err and "re-run the same" in err


def test_an_empty_folder_or_a_missing_memory_is_refused_and_nothing_is_made(tmp_path):
    """``memory forget`` on a missing memory made one (exit 0), and a folder of only a FIFO
    and a dead link an empty KB (exit 0)."""
    import os

    (tmp_path / "empty").mkdir()
    out = hopgraph("index", "empty", "--kb", "kb", cwd=tmp_path)
    assert out.returncode == 2 and "nothing to index at empty: the folder is empty" in out.stderr
    (tmp_path / "unusable").mkdir()
    os.mkfifo(tmp_path / "unusable" / "pipe")
    (tmp_path / "unusable" / "dead").symlink_to(tmp_path / "nowhere")
    out = hopgraph("index", "unusable", "--kb", "kb", cwd=tmp_path)
    assert out.returncode == 2 and "nothing was indexed from unusable" in out.stderr, out.stderr
    for args in (
        ["memory", "stats", "--memory", "mem"],
        ["memory", "recall", "x", "--memory", "mem"],
        ["memory", "forget", "image:3f2a", "--memory", "mem"],
    ):
        out = hopgraph(*args, cwd=tmp_path)
        assert out.returncode == 2 and "no memory at mem" in out.stderr, (args, out.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "unusable"]
