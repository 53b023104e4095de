"""Evidence you can point at in a PDF (issue 62 item 5): a page read from a real MMLongBench-Doc
PDF keeps the boxes of its text lines, and the region a citation quotes holds the quoted text."""

import json
import re
from pathlib import Path

import pytest
from conftest import SHARED_DATA

PDFS = SHARED_DATA / "mmlongbench" / "pdfs"


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


@pytest.mark.skipif(not PDFS.is_dir(), reason="../shared/data/mmlongbench/pdfs is absent")
def test_the_highlighted_region_holds_the_quoted_sentence(tmp_path, monkeypatch):
    import pymupdf

    from hopgraph.memory.kb import KnowledgeBase
    from hopgraph.memory.regions import cited_region, quoted_span
    from hopgraph.memory.sources import read_pdf
    from hopgraph.presentation import report

    pdf = min(PDFS.glob("*.pdf"), key=lambda p: p.stat().st_size)
    items = [i for i in read_pdf(pdf, pages_dir=tmp_path / "pages") if hasattr(i, "meta")]
    # a sentence of a page: two lines of running text, as an answer would quote them
    page_item, sentence = next(
        (item, item.text[a[4] : b[5]])
        for item in items
        for a, b in zip(item.meta.get("lines", []), item.meta.get("lines", [])[1:], strict=False)
        if len(words(item.text[a[4] : a[5]])) >= 5 and len(words(item.text[b[4] : b[5]])) >= 5
    )
    lines = page_item.meta["lines"]
    assert page_item.meta["page_size"]
    answer = f"According to the document, {' '.join(sentence.split())}."

    kb = KnowledgeBase(tmp_path / "kb")  # the boxes survive storage, as a citation's provenance
    kb.add([page_item])
    (stored,) = kb.get([page_item.id])
    assert stored["provenance"]["lines"] == lines
    boxes = cited_region(stored, answer)
    assert boxes
    x0 = min(b[0] for b in boxes)
    y0 = min(b[1] for b in boxes)
    x1 = max(b[2] for b in boxes)
    y1 = max(b[3] for b in boxes)
    with pymupdf.open(pdf) as doc:
        inside = doc[page_item.page - 1].get_text("text", clip=pymupdf.Rect(x0, y0, x1, y1))
    held = " ".join(words(inside))
    assert " ".join(words(sentence)) in held, (sentence, inside)
    start, end = quoted_span(answer, stored["text"])
    assert " ".join(words(stored["text"][start:end])) == " ".join(words(sentence))

    # the report shows the cited page with that region over it
    run = tmp_path / "run"
    (run / "traces").mkdir(parents=True)
    cited = [stored["id"]]
    pred = {
        "id": "q1",
        "answer": answer,
        "response": answer,
        "citations": cited,
        "contexts_ids": cited,
        "gold": ["x"],
        "question": "What does it say?",
    }
    (run / "predictions.jsonl").write_text(json.dumps(pred) + "\n")
    trace = {"mode": "values", "graph": "mabdqa", "data": {"kept": [stored], "question": "?"}}
    (run / "traces" / "q1.jsonl").write_text(json.dumps(trace) + "\n")
    page = report.render_html(run).read_text()
    assert f"data-id='{stored['id']}'" in page and page.count("<rect class='quoted'") == len(boxes)
    assert "the highlighted lines are what the answer quotes" in page
    # hopgraph view shows the same: the cited page's regions, its image served by the API
    from hopgraph.presentation.viewer import RunView, page_image

    view = RunView(run)
    (shown,) = [e for e in view.question("q1")["evidence"] if e["cited"]]
    assert shown["regions"] == boxes and shown["page_image"] and shown["page_size"]
    assert page_image(view.trace("q1"), pred, stored["id"], [tmp_path]) == Path(stored["path"])
    # a KB indexed with a relative --kb keeps relative page paths: the report still renders
    monkeypatch.chdir(tmp_path)
    relative = {**stored, "path": str(Path(stored["path"]).relative_to(tmp_path))}
    trace = {"mode": "values", "graph": "mabdqa", "data": {"kept": [relative], "question": "?"}}
    (run / "traces" / "q1.jsonl").write_text(json.dumps(trace) + "\n")
    page = report.render_html(run).read_text()
    assert Path(stored["path"]).resolve().as_uri() in page


def test_an_answer_quoting_nothing_of_a_page_has_no_region():
    from hopgraph.memory.regions import cited_region, quoted_span

    page = {
        "text": "Revenue rose by nine percent in the third quarter of the year.",
        "provenance": {"lines": [[0, 0, 100, 10, 0, 62]]},
    }
    assert cited_region(page, "The answer is 42 and nothing more.") == []
    assert quoted_span("revenue rose by nine percent", page["text"]) == (0, 28)
    assert cited_region(page, "It says revenue rose by nine percent.") == [[0, 0, 100, 10]]
    # a short answer (a name, two or three words) is a quote only where it stands whole
    assert cited_region(page, "Third quarter") == [[0, 0, 100, 10]]
    assert cited_region(page, "It was the third quarter.\nThird quarter") == [[0, 0, 100, 10]]
    assert cited_region(page, "Quarter three") == [] and cited_region(page, "Revenue") == []
    assert cited_region(page, "nine weeks percent") == []
