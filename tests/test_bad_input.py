"""The edges a bad-input probe found (issue 63): nothing is lost silently, nothing is done twice,
and each fault is named with what to do about it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SHARED_DATA

PDFS = SHARED_DATA / "mmlongbench" / "pdfs"


def hopgraph(*args, cwd, timeout=180):
    env = {**os.environ, "COLUMNS": "300"}
    return subprocess.run(
        [sys.executable, "-m", "hopgraph.cli", *args], cwd=cwd, capture_output=True, text=True,
        timeout=timeout, env=env,
    )  # fmt: skip


def unreadable(path: Path) -> None:
    """A file whose read fails with a real I/O error (EIO), as a bad disk gives: reading
    /proc/self/mem at offset 0 does, for root too (a permission bit would not stop root)."""
    path.symlink_to("/proc/self/mem")


def cut_pdf(to: Path) -> None:
    """The smallest MMLongBench-Doc PDF, cut to 30 % of its bytes."""
    smallest = min(PDFS.glob("*.pdf"), key=lambda p: p.stat().st_size)
    data = smallest.read_bytes()
    to.write_bytes(data[: len(data) * 3 // 10])


@pytest.mark.skipif(not PDFS.is_dir(), reason="../shared/data/mmlongbench/pdfs is absent")
def test_a_damaged_pdf_and_an_unreadable_file_fail_alone_and_say_so(tmp_path):
    """A PDF cut to 30 % was "repaired" by PyMuPDF into 0 pages and vanished without a word
    ("1 added ... 0 skipped", exit 0); an unreadable file stopped the whole folder with
    "[Errno 5] Input/output error" and no name, leaving nothing indexed."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    cut_pdf(corpus / "cut.pdf")
    (corpus / "good.txt").write_text("Marrowick has a copper lighthouse on its northern pier.")
    unreadable(corpus / "bad.txt")
    out = hopgraph("index", "corpus", "--kb", "kb", cwd=tmp_path)
    assert out.returncode == 3, out.stdout + out.stderr
    assert "1 added" in out.stdout
    assert "failed corpus/cut.pdf: no page to read: damaged (cut short?)" in out.stdout
    assert "failed corpus/bad.txt: cannot read corpus/bad.txt: Input/output error" in out.stdout
    assert "2 source(s) could not be read" in out.stderr
    listed = hopgraph("kb", "ls", "--kb", "kb", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "good.txt" in listed.stdout and "cut.pdf" not in listed.stdout
    assert "bad.txt" not in listed.stdout
    again = hopgraph("index", "corpus", "--kb", "kb", cwd=tmp_path)  # only the failed are read
    assert again.returncode == 3 and "1 unchanged source(s) not read" in again.stdout

    # indexed on its own: the reason, not a --format hint, and no KB folder left behind
    out = hopgraph("index", "corpus/cut.pdf", "--kb", "kb2", cwd=tmp_path)
    assert out.returncode == 2
    assert "nothing was indexed from corpus/cut.pdf: corpus/cut.pdf: no page to read" in out.stderr
    assert "--format" not in out.stderr and not (tmp_path / "kb2").exists()


def test_a_source_that_turns_unreadable_keeps_its_indexed_version(tmp_path, monkeypatch):
    import errno

    from hopgraph.memory.indexing import index_source
    from hopgraph.memory.kb import KnowledgeBase
    from hopgraph.memory.sources import SourceUnit

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "pier.txt").write_text("Marrowick has a copper lighthouse on its northern pier.")
    (corpus / "mill.txt").write_text("Tollen keeps a windmill that grinds barley.")
    kb = KnowledgeBase(tmp_path / "kb")
    assert index_source(kb, corpus, ocr="off").added == 2
    (corpus / "pier.txt").write_text("Marrowick has a brass lighthouse.")  # edited, then
    digest = SourceUnit.sha256  # its disk fails as it is read

    def failing(unit):
        if unit.path.name == "pier.txt":
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return digest(unit)

    monkeypatch.setattr(SourceUnit, "sha256", failing)
    report = index_source(kb, corpus, ocr="off")
    assert [f.where for f in report.failed] == [str(corpus / "pier.txt")]
    assert report.unchanged == 1 and not report.replaced and not report.vanished
    assert "lighthouse" in kb.search("copper lighthouse", k=1)[0]["text"]
    assert len(kb.registry.sources()) == 2
