"""OCR: pages without a text layer and image files get the text RapidOCR reads in them (the
real PP-OCRv4 models from the pinned wheel), with the engine as provenance."""

from __future__ import annotations

import io
import shutil

import pymupdf
import pytest
from PIL import Image, ImageDraw, ImageFont

from hopgraph.memory.indexing import index_source
from hopgraph.memory.kb import KnowledgeBase
from hopgraph.memory.sources import read_pdf
from hopgraph.models.errors import ModelIntegrityError
from hopgraph.models.ocr import RAPIDOCR_MODELS, OcrText, ocr_engine, verify_models

WORDS = "Quarterly revenue grew 42 percent"


def picture_of(text: str) -> bytes:
    """A slide-like PNG: dark words on white, as a scanned or exported slide carries them."""
    img = Image.new("RGB", (900, 260), "white")
    ImageDraw.Draw(img).text((40, 90), text, fill="black", font=ImageFont.load_default(size=44))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture
def slides_pdf(tmp_path):
    """Two pages: a picture of words and no text layer, then an ordinary text page."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_image(pymupdf.Rect(36, 200, 576, 356), stream=picture_of(WORDS))
    doc.new_page(width=612, height=792).insert_text((72, 72), "An ordinary page of text here.")
    path = tmp_path / "slides.pdf"
    doc.save(path)
    return path


def test_an_image_only_pdf_page_gets_its_ocr_text_with_the_engine_named(slides_pdf, tmp_path):
    kb = KnowledgeBase(tmp_path / "kb")
    report = index_source(kb, slides_pdf, render_pages=False)
    pages = kb.pages_of("slides.pdf")
    first, second = pages[0], pages[1]
    words = first["text"].lower()
    assert "revenue" in words and "42" in words, first["text"]
    assert first["provenance"]["ocr"].startswith("rapidocr-")
    assert first["provenance"]["text_layer_chars"] == 0
    assert "ocr" not in second["provenance"]  # a text layer is used as it is
    assert any("1 page(s) read by OCR" in n for n in report.notes)
    assert kb.search("quarterly revenue growth", modalities=["page"], k=1)[0]["page"] == 1


def test_no_ocr_leaves_the_page_empty_and_says_so(slides_pdf):
    notes: list[str] = []
    pages = list(read_pdf(slides_pdf, ocr=ocr_engine("off"), notes=notes))
    assert pages[0].text == ""
    assert any("1 page(s) without text" in n and "no OCR:" in n for n in notes)


def test_ocr_results_are_cached_so_a_second_index_reads_nothing_again(slides_pdf, tmp_path):
    class Counting:
        name = "counting"
        calls = 0

        def read(self, image: bytes) -> str:
            Counting.calls += 1
            return "words from the picture"

    for _ in range(2):
        pages = list(read_pdf(slides_pdf, ocr=Counting(), ocr_cache=tmp_path / "ocr"))
        assert pages[0].text == "words from the picture"
        assert pages[0].meta["ocr"] == "counting"
    assert Counting.calls == 1


def test_a_short_text_layer_is_not_repeated_when_ocr_reads_it_too():
    from hopgraph.memory.sources import with_ocr

    assert with_ocr("12", "Quarterly results\nPage 12") == "Quarterly results\nPage 12"
    assert with_ocr("two", "two") == "two"
    assert with_ocr("Fig. 3", "Sales by region") == "Fig. 3\nSales by region"


def test_an_ocr_failure_costs_only_that_page_or_image_its_ocr(slides_pdf, tmp_path):
    class Broken:
        name = "broken"

        def read(self, image: bytes) -> str:
            raise RuntimeError("engine crashed")

    notes: list[str] = []
    pages = list(read_pdf(slides_pdf, ocr=Broken(), notes=notes))
    assert [p.page for p in pages] == [1, 2] and pages[0].text == ""
    assert "engine crashed" in pages[0].meta["ocr_error"]
    assert any("page1: OCR (broken) failed" in n for n in notes)
    from hopgraph.memory.sources import image_item

    (tmp_path / "chart.png").write_bytes(picture_of(WORDS))
    item = image_item(tmp_path / "chart.png", "a sales chart", ocr=Broken())
    assert item.text == "a sales chart" and "engine crashed" in item.meta["ocr_error"]


def test_an_indexed_image_carries_the_text_read_in_it(tmp_path):
    folder = tmp_path / "pictures"
    folder.mkdir()
    (folder / "chart.png").write_bytes(picture_of(WORDS))
    kb = KnowledgeBase(tmp_path / "kb")
    index_source(kb, folder)
    [hit] = kb.search("revenue grew", modalities=["image"], k=1)
    assert hit["text"].startswith("chart")
    assert "revenue" in hit["text"].lower()
    assert hit["provenance"]["ocr"].startswith("rapidocr-")


def test_a_tampered_ocr_model_is_refused(tmp_path):
    from importlib.util import find_spec

    bundled = next(iter(find_spec("rapidocr_onnxruntime").submodule_search_locations))
    for name in RAPIDOCR_MODELS:
        shutil.copy(f"{bundled}/models/{name}", tmp_path / name)
    verify_models(tmp_path)  # the pinned wheel's files pass
    victim = tmp_path / next(iter(RAPIDOCR_MODELS))
    data = bytearray(victim.read_bytes())
    data[-1] ^= 0xFF
    victim.write_bytes(bytes(data))
    with pytest.raises(ModelIntegrityError, match="does not match the pinned"):
        verify_models(tmp_path)


def test_an_unknown_ocr_engine_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown OCR engine 'easyocr'"):
        ocr_engine("easyocr")
    assert OcrText("x", "e").engine == "e"
