import io
import json
from pathlib import Path

import pymupdf
import pytest
from PIL import Image
from servers import hopgraph

from hopgraph.memory.ids import page_id
from hopgraph.memory.indexing import index_source
from hopgraph.memory.kb import KnowledgeBase, item_id
from hopgraph.memory.sources import detect_format
from hopgraph.questions.datasets import convert_hotpotqa, read_questions
from hopgraph.questions.demo import write_demo


def make_pdf(path, pages):
    doc = pymupdf.open()
    for text in pages:
        page = doc.new_page()
        if text:
            page.insert_text((72, 72), text)
    doc.save(path)


@pytest.fixture
def messy_folder(tmp_path):
    root = tmp_path / "corpus"
    root.mkdir()
    make_pdf(root / "good.pdf", ["First page about lighthouses.", "", "Third page on tides."])
    (root / "broken.pdf").write_bytes(b"%PDF-1.7\nthis is not really a pdf\n%%EOF")
    buf = io.BytesIO()
    Image.new("RGB", (300, 300), "red").save(buf, format="PNG")
    (root / "truncated.png").write_bytes(buf.getvalue()[:200])
    Image.new("RGB", (64, 64), "blue").save(root / "blue_square.png")
    (root / "captions.json").write_text(json.dumps({"blue_square.png": "A plain blue square."}))
    (root / "passages.jsonl").write_text(
        json.dumps({"title": "Tides", "text": "Tides are caused by the moon."})
        + "\n"
        + "{this line is not json\n"
        + json.dumps({"title": "Moon", "text": "The moon orbits the earth."})
        + "\n"
    )
    (root / "latin1.txt").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    (root / "notes.md").write_text("# Notes\n\nLighthouses warn ships.\n\nThey stand on coasts.\n")
    (root / "ports.csv").write_text("Port,Country\nMarrowick,Esterlund\nCaldra,Southmere\n")
    return root


def test_bad_files_are_reported_and_good_items_indexed(messy_folder, tmp_path):
    kb = KnowledgeBase(tmp_path / "kb")
    report = index_source(kb, messy_folder)
    reasons = {s.where.split("/")[-1]: s.reason for s in report.skipped}
    assert "not a readable PDF" in reasons["broken.pdf"]
    assert "truncated.png" in reasons and "image" in reasons["truncated.png"]
    assert reasons["passages.jsonl:2"].startswith("bad JSON line")
    assert reasons["latin1.txt"] == "not UTF-8 text"
    counts = kb.counts()
    assert counts == {"text": 3, "table": 2, "image": 1, "page": 3}
    assert report.added == 9
    # the blank PDF page is kept, noted, and its PNG rendered
    (blank,) = kb.get([page_id("good.pdf", 2)])
    assert blank["page"] == 2 and blank["text"] == "" and blank["path"].endswith("page-0002.png")
    assert any("good.pdf: 1 page(s) without text" in n for n in report.notes)
    assert kb.search("blue square", k=1, modalities=["image"])[0]["text"] == "A plain blue square."


def test_reindexing_reads_only_what_gave_nothing(messy_folder, tmp_path):
    kb = KnowledgeBase(tmp_path / "kb")
    first = index_source(kb, messy_folder)
    again = index_source(KnowledgeBase(tmp_path / "kb"), messy_folder)
    # the five files that gave items are skipped unread (passages.jsonl's bad line with it);
    # the three that gave none are read again, and reported again
    assert (again.added, again.existing, again.unchanged) == (0, 0, 5)
    assert [s.where for s in again.skipped] == [
        s.where for s in first.skipped if not s.where.endswith("passages.jsonl:2")
    ]


def test_a_kb_records_the_settings_it_was_indexed_with(messy_folder, tmp_path):
    """A run's manifest names the KB it read by these: MAB-DQA's records once grew on a KB that
    OCR had read, where their first answers had read one without, and nothing told them apart."""
    kb = KnowledgeBase(tmp_path / "kb")
    index_source(kb, messy_folder, ocr="off", render_pages=False)
    index_source(kb, messy_folder, ocr="off", render_pages=False)  # the same build: one entry
    assert kb.builds.settings() == [
        {
            "source": "corpus",
            "format": "folder",
            "ocr": "off",
            "page_pixels": 0,
            "limit": None,
            "derived": False,
        }
    ]
    with open(tmp_path / "kb" / "builds.jsonl", "a") as f:
        f.write('{"source": "cor')  # torn by a crash mid-write: skipped, the rest still read
    index_source(kb, messy_folder, ocr="off")
    assert [b["page_pixels"] for b in kb.builds.settings()] == [0, 1024 * 28 * 28]


def test_interrupted_index_resumes(tmp_path):
    corpus = {f"Title {i}": [f"Passage number {i} about topic {i % 7}."] for i in range(40)}
    src = tmp_path / "corpus.json"
    src.write_text(json.dumps(corpus))
    kb = KnowledgeBase(tmp_path / "kb")
    partial = index_source(kb, src, "hotpotqa", limit=15, batch_size=4)
    assert partial.added == 15
    rest = index_source(kb, src, "hotpotqa", batch_size=4)
    assert (rest.added, rest.existing) == (25, 15)
    assert kb.counts()["text"] == 40


def test_an_interrupt_keeps_every_source_read_whole_before_it(tmp_path, monkeypatch):
    """Ctrl-C 45 s into a 300-file index kept no source: the sources read whole waited in the
    one embedding batch that the interrupt dropped. The interrupt comes here while the 31st of
    40 files is read, before any batch filled; the 30 before it are stored and committed, the
    31st is not, and a re-run reads only the 10 left."""
    import hopgraph.memory.sources as sources

    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(40):
        (folder / f"note-{i:02d}.txt").write_text(f"Note {i}: the ferry left pier {i} at dawn.")
    real = sources.read_text_file

    def read(path, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        if path.name == "note-30.txt":
            raise KeyboardInterrupt
        return real(path, *args, **kwargs)

    monkeypatch.setattr(sources, "read_text_file", read)
    kb = KnowledgeBase(tmp_path / "kb")
    with pytest.raises(KeyboardInterrupt):
        index_source(kb, folder, ocr="off")
    kept = sorted(Path(s.path).name for s in kb.registry.sources())
    assert kept == [f"note-{i:02d}.txt" for i in range(30)]
    assert kb.counts()["text"] == 30
    monkeypatch.undo()
    rest = index_source(kb, folder, ocr="off")
    assert (rest.added, rest.unchanged) == (10, 30)


def test_hotpotqa_gold_evidence_ids_are_index_ids(tmp_path):
    questions = [
        {
            "_id": "q1",
            "question": "Which came first?",
            "answer": "A",
            "type": "comparison",
            "supporting_facts": [["Alpha", 0], ["Beta", 1]],
            "context": [
                ["Alpha", ["Alpha was built", " in 1900."]],
                ["Beta", ["Beta was built", " in 1950."]],
                ["Gamma", ["Unrelated."]],
            ],
        }
    ]
    src = tmp_path / "dev.json"
    src.write_text(json.dumps(questions))
    kb = KnowledgeBase(tmp_path / "kb")
    index_source(kb, src, "hotpotqa")
    (q,) = convert_hotpotqa(src)
    assert len(q.evidence) == 2
    assert [h["title"] for h in kb.get(q.evidence)] == ["Alpha", "Beta"]


def test_multimodalqa_files_with_titles_only(tmp_path):
    root = tmp_path / "mmqa"
    root.mkdir()
    rows = [
        {"id": "img1", "title": "Eiffel Tower", "url": "u", "path": "img1.jpg"},
        {"id": "img2", "title": "Big Ben", "url": "u", "path": "img2.jpg"},
    ]
    (root / "MMQA_images.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    table = {
        "id": "t1",
        "title": "Towers",
        "table": {
            "header": [{"column_name": "Name"}, {"column_name": "Height"}],
            "table_rows": [
                [{"text": "Eiffel"}, {"text": "330 m"}],
                [{"text": "Ben"}, {"text": "96 m"}],
            ],
        },
    }
    (root / "MMQA_tables.jsonl").write_text(json.dumps(table))
    assert detect_format(root) == "multimodalqa"
    kb = KnowledgeBase(tmp_path / "kb")
    report = index_source(kb, root)
    assert kb.counts()["image"] == 2 and kb.counts()["table"] == 2
    assert any("title only" in n for n in report.notes)
    hit = kb.search("How tall is the Eiffel tower?", k=1, modalities=["table"])[0]
    assert "330 m" in hit["text"] and hit["source"] == "t1"


def test_demo_corpus_gold_evidence_is_all_indexed(tmp_path):
    corpus, questions_file = write_demo(tmp_path / "demo")
    kb = KnowledgeBase(tmp_path / "kb")
    report = index_source(kb, corpus)
    assert report.skipped == []
    questions, problems = read_questions(questions_file)
    assert problems == [] and len(questions) >= 12
    assert {"bridge", "comparison", "image", "table"} <= {q.type for q in questions}
    for q in questions:
        assert q.answers and len(kb.get(q.evidence)) == len(q.evidence), q.id
    image_q = next(q for q in questions if q.type == "image")
    assert any(e.startswith("image-") for e in image_q.evidence)


def test_pdf_page_ids_follow_file_and_page(tmp_path):
    make_pdf(tmp_path / "r.pdf", ["one", "two"])
    kb = KnowledgeBase(tmp_path / "kb")
    index_source(kb, tmp_path / "r.pdf", render_pages=False, ocr="off")
    got = kb.get([page_id("r.pdf", 2), item_id("page", "r.pdf#1")])
    assert [(h["page"], h["text"], h["path"]) for h in got] == [(2, "two", ""), (1, "one", "")]


def test_unknown_format_and_missing_source(tmp_path):
    kb = KnowledgeBase(tmp_path / "kb")
    with pytest.raises(FileNotFoundError, match="nowhere"):
        index_source(kb, tmp_path / "nowhere")
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(ValueError, match="unknown format 'weird'"):
        index_source(kb, tmp_path / "x.json", "weird")


def test_cli_index_prints_summary_with_reasons(messy_folder, tmp_path):
    out = hopgraph("index", messy_folder, "--kb", tmp_path / "kb")
    assert out.returncode == 3, out.stderr  # a source failed (the broken PDF): said, and in
    assert "9 added" in out.stdout and "4 skipped" in out.stdout  # the exit status (issue 63)
    assert "failed" in out.stdout and "broken.pdf" in out.stdout and "bad JSON line" in out.stdout
    assert "1 source(s) could not be read" in out.stderr


def test_an_empty_text_file_is_reported_not_skipped_silently(tmp_path):
    from hopgraph.memory.indexing import index_source
    from hopgraph.memory.kb import KnowledgeBase

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "empty.txt").write_text("  \n\n")
    (folder / "full.txt").write_text("Marrowick has a copper lighthouse.")
    report = index_source(KnowledgeBase(tmp_path / "kb"), folder, "folder")
    assert report.added == 1
    assert [(s.where.endswith("empty.txt"), s.reason) for s in report.skipped] == [
        (True, "empty text file: nothing to index")
    ]


def test_a_link_leading_outside_the_corpus_is_skipped_and_listed_unless_followed(tmp_path):
    """issue 75: corpus/passwd.txt -> a file outside was indexed, listed and served."""
    secret = tmp_path / "outside" / "passwd.txt"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0:the operator's secret line:/root:/bin/bash\n")
    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    (corpus / "notes.md").write_text("Lighthouses warn ships.\n")
    (corpus / "passwd.txt").symlink_to(secret)
    (corpus / "linked").symlink_to(secret.parent, target_is_directory=True)
    (corpus / "sub" / "same.md").symlink_to(corpus / "notes.md")  # inside: kept
    kb = KnowledgeBase(tmp_path / "kb")
    report = index_source(kb, corpus, "folder", ocr="off")
    skipped = {Path(s.where).relative_to(corpus).as_posix(): s.reason for s in report.skipped}
    assert set(skipped) == {"passwd.txt", "linked"}  # a linked folder is one line
    assert all("outside the indexed folder" in r for r in skipped.values())
    assert not any("secret" in e["text"] for e in kb.search("secret line", k=10))
    assert {Path(s.path).name for s in kb.registry.sources()} == {"notes.md"}  # one file
    out = hopgraph("index", corpus, "--kb", tmp_path / "k2", "--follow-links", "--ocr", "off")
    assert out.returncode == 0, out.stderr
    followed = KnowledgeBase(tmp_path / "k2")
    assert any("secret line" in e["text"] for e in followed.search("secret line", k=10))


def test_a_question_image_linked_out_of_the_image_roots_is_refused(tmp_path):
    from hopgraph.config import Context
    from hopgraph.graphs.shared import REFUSED_IMAGE, admit

    outside = tmp_path / "private.png"
    Image.new("RGB", (8, 8), "red").save(outside)
    root = tmp_path / "allowed"
    root.mkdir()
    (root / "cat.png").symlink_to(outside)
    ctx = Context(image_roots=str(root), vlm_model="v", vlm_base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match=REFUSED_IMAGE):
        admit({"question": "What?", "images": [str(root / "cat.png")]}, ctx)


def test_one_bad_entry_never_stops_the_index(tmp_path):
    """A link loop aborted ``hopgraph index`` (exit 2, nothing indexed); a file name that is
    not UTF-8 aborted it with a codec error naming no file; a FIFO was dropped unlisted. Each
    is now skipped and listed by name with why, and the rest is indexed."""
    import os

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "good.md").write_text("Lighthouses warn ships.\n")
    (corpus / "loop").symlink_to(corpus / "loop")
    (corpus / "a").symlink_to(corpus / "b")
    (corpus / "b").symlink_to(corpus / "a")
    (corpus / "gone.txt").symlink_to(tmp_path / "nothing-here")
    (Path(os.fsdecode(bytes(corpus) + b"/bad\xff.txt"))).write_text("Harbours shelter boats.\n")
    os.mkfifo(corpus / "pipe.txt")
    out = hopgraph("index", corpus, "--kb", tmp_path / "kb", "--ocr", "off")
    assert out.returncode == 0, out.stderr
    said = out.stdout + out.stderr
    for name, why in (
        ("loop", "a link loop"),
        ("a", "a link loop"),
        ("b", "a link loop"),
        ("gone.txt", "a link to nothing"),
        ("bad\\xff.txt", "not UTF-8"),
        ("pipe.txt", "not a regular file (a FIFO)"),
    ):
        assert f"skipped {corpus}/{name}: " in said and why in said.split(f"{corpus}/{name}: ")[1]
    kb = KnowledgeBase(tmp_path / "kb")
    assert [e["text"] for e in kb.search("lighthouses", k=5)] == ["Lighthouses warn ships."]


def test_a_one_line_file_becomes_bounded_passages_and_no_hit_fills_a_prompt(tmp_path):
    """A text file laid out as one line became one item (a 50 MB line: 111 s, 6.4 GB, then a
    50,000,511-byte rag prompt). Passages are now bounded however the file is laid out, and
    an item stored whole before (added as one here) reaches a prompt cut, saying how much."""
    from hopgraph.memory.kb import MAX_EVIDENCE_CHARS, Item
    from hopgraph.memory.sources import MAX_CHUNK_CHARS

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    line = " ".join(f"Harbour {i} shelters boat {i}." for i in range(8000))  # ~240 kB
    (corpus / "one_line.txt").write_text(line + "x" * 5000)  # and a 5,000-character word
    kb = KnowledgeBase(tmp_path / "kb")
    report = index_source(kb, corpus, "folder", ocr="off")
    texts = [e["text"] for e in kb.search("harbour 77 shelters boat", k=50)]
    assert report.added > 100 and texts
    assert max(map(len, texts)) <= MAX_CHUNK_CHARS and max(len(t.split()) for t in texts) <= 180
    assert any("Harbour 77 shelters boat 77." in t for t in texts)
    old = KnowledgeBase(tmp_path / "old")
    old.add([Item("text", "whole", "Lighthouse keepers. " * 5000, title="Whole")])
    (hit,) = old.search("lighthouse keepers", k=1)
    assert len(hit["text"]) == MAX_EVIDENCE_CHARS
    assert hit["provenance"]["cut_chars"] == 100000 - MAX_EVIDENCE_CHARS


def test_a_text_file_streams_into_the_same_passages_with_bounded_memory(tmp_path):
    """Read a block at a time, a text gives the passages of the whole text at once (blocks
    cut anywhere, a paragraph break across two blocks); a file that is one long line is held
    about ``PARAGRAPH_CAP`` at a time, not whole (it was read whole and chunked at once)."""
    import random
    import tracemalloc

    from hopgraph.memory import sources
    from hopgraph.memory.sources import chunk_paragraphs, chunk_stream, read_text_file

    rng = random.Random(7)
    words = ["river", "town", "delta.", "mill", "bridge?", "Esterlund", "flag!", "harbour"]
    paras = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 400))) for _ in range(300)]
    text = "".join(
        p + rng.choice(["\n\n", "\n \n", "\n", " ", "\r\n\r\n", "\n\n\n"]) for p in paras
    )
    whole = chunk_paragraphs(text)
    for size in (1, 7, 64, 1000, 4096):
        blocks = [text[i : i + size] for i in range(0, len(text), size)]
        assert list(chunk_stream(blocks)) == whole, size
    (tmp_path / "notes.txt").write_text(text)
    assert [it.text for it in read_text_file(tmp_path / "notes.txt", block=512)] == (
        chunk_paragraphs((tmp_path / "notes.txt").read_text())
    )
    peaks = []
    for n_words in (500_000, 1_000_000):  # one line of about 3.5 MB, then 7 MB
        (tmp_path / "line.txt").write_text(" ".join(rng.choice(words) for _ in range(n_words)))
        tracemalloc.start()
        n = sum(1 for _ in read_text_file(tmp_path / "line.txt"))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert n > n_words // 200, n
    # held: one paragraph's words at most (a few times PARAGRAPH_CAP), the same for twice the file
    assert peaks[1] < 1.3 * peaks[0] and peaks[1] < 20 * sources.PARAGRAPH_CAP, peaks
