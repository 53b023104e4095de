"""MAB-DQA's ColPali path: a tiny ColPali built from its config (random weights, test only)
embeds rendered PDF pages through the real loading and caching code, and Eq. 1's late
interaction runs over its vectors inside the graph."""

from __future__ import annotations

import numpy as np
import pymupdf
import pytest
import torch
from scripted_server import ScriptedServer, by_template
from tiny_models import tiny_colpali

from hopgraph.graphs import every_context, load_graph
from hopgraph.memory.indexing import index_source
from hopgraph.memory.kb import KnowledgeBase
from hopgraph.models.embedders import page_embedder
from hopgraph.models.errors import ModelWeightsMissing
from hopgraph.tools.mabdqa.page_hypergraph import late_interaction
from hopgraph.tools.mabdqa.page_vectors import document_pages, query_vectors

Context = every_context()  # every built-in method's knobs

DOC = "report.pdf"
QUESTION = "which page shows a red chart"


@pytest.fixture(scope="module")
def colpali(tmp_path_factory):
    return str(tiny_colpali(tmp_path_factory.mktemp("tiny-colpali")))


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory):
    """A three-page PDF (a red chart, a blue table, text), indexed with its pages rendered."""
    root = tmp_path_factory.mktemp("pdf")
    doc = pymupdf.open()
    for colour, words in (((1, 0, 0), "Revenue chart"), ((0, 0, 1), "Cost table"), (None, "")):
        page = doc.new_page(width=300, height=400)
        page.insert_text((20, 30), words or "Notes on the year, in plain text only.")
        if colour:
            page.draw_rect(pymupdf.Rect(20, 60, 280, 360), color=colour, fill=colour)
    doc.save(root / DOC)
    kb = root / "kb"
    index_source(KnowledgeBase(kb), root / DOC, page_pixels=96 * 128, ocr="off")
    return kb


def test_colpali_page_vectors_and_eq1_match_colpalis_own_maxsim(colpali, kb_dir):
    kb = KnowledgeBase(kb_dir)
    pages = document_pages(kb, DOC, colpali)
    assert [p["page"] for p in pages.pages] == [1, 2, 3]
    model = page_embedder(colpali)
    for vectors in pages.vectors:  # 16 image tokens plus the prompt's, one 16-d vector each
        assert vectors.shape[1] == 16 and vectors.shape[0] > 16
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    query = query_vectors(kb, QUESTION, colpali)
    assert query.shape[1] == 16
    ours = late_interaction(query, pages.vectors)
    reference = model.processor.score_retrieval(
        [torch.from_numpy(query)], [torch.from_numpy(v) for v in pages.vectors]
    )[0]
    assert np.allclose(ours, reference.numpy(), rtol=1e-4)
    # the vectors are kept where the KB lives, keyed by the model and the page images
    assert not (kb_dir / "page_vectors").exists()
    again = document_pages(kb, DOC, colpali)
    pairs = zip(again.vectors, pages.vectors, strict=True)
    assert all(np.allclose(a, b, atol=1e-6) for a, b in pairs)  # stored as float32


def test_mabdqa_li_ranks_pages_by_colpali_vectors_inside_the_graph(colpali, kb_dir):
    script = by_template({"mabdqa/answer": "Page 1.", "mabdqa/short_answer": "Page 1"})
    with ScriptedServer(script) as server:
        ctx = Context(
            base_url=server.base_url,
            model="scripted",
            kb_dir=str(kb_dir),
            page_embedder=colpali,
            mabdqa_retriever="li",
            mabdqa_question_reflection=False,
            mabdqa_answer_reflection=False,
        )
        records = list(
            load_graph("mabdqa").stream(
                {"question": QUESTION, "doc": DOC}, context=ctx, stream_mode=["custom", "values"]
            )
        )
    events = [data for mode, data in records if mode == "custom"]
    [li] = [e for e in events if e.get("role") == "mabdqa_li"]
    assert li["space"] == colpali and len(li["ids"]) == 3
    kb = KnowledgeBase(kb_dir)
    scores = late_interaction(
        query_vectors(kb, QUESTION, colpali), document_pages(kb, DOC, colpali).vectors
    )
    assert li["scores"] == [round(float(s), 4) for s in sorted(scores, reverse=True)]


def test_pages_indexed_without_images_are_refused_by_name(colpali, tmp_path):
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Only text on this page.")
    doc.save(tmp_path / "plain.pdf")
    kb = KnowledgeBase(tmp_path / "kb")
    index_source(kb, tmp_path / "plain.pdf", render_pages=False, ocr="off")
    with pytest.raises(LookupError, match="no rendered image for page.*without --no-render"):
        document_pages(kb, "plain.pdf", colpali)


def test_a_page_embedder_without_weights_fails_clearly(tmp_path):
    with pytest.raises(ModelWeightsMissing, match="never downloads"):
        page_embedder(str(tmp_path / "no-colpali-here"))
