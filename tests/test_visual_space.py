"""The image embedder: a tiny CLIP built from its config (and trained here for seconds) goes
through the real loading, indexing and query code; MMAPG's image side searches its vectors."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_models import COLOURS, square, trained_tiny_clip

from hopgraph.graphs import every_context
from hopgraph.memory.indexing import index_source
from hopgraph.memory.kb import KnowledgeBase, KnowledgeBaseError
from hopgraph.memory.visual import VisualSpace
from hopgraph.models.embedders import VisionTextEmbedder
from hopgraph.models.errors import ModelWeightsMissing

Context = every_context()  # every built-in method's knobs


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    return str(trained_tiny_clip(tmp_path_factory.mktemp("tiny-clip")))


@pytest.fixture(scope="module")
def pictures(tmp_path_factory):
    """The four squares under names that say nothing of their colour."""
    folder = tmp_path_factory.mktemp("pictures")
    for n, colour in enumerate(COLOURS):
        square(colour).save(folder / f"photo-{n}.png")
    return folder


def test_the_loaded_embedder_puts_a_caption_nearest_its_picture(tiny_clip):
    emb = VisionTextEmbedder(tiny_clip)
    images = emb.encode_images([square(c) for c in COLOURS])
    texts = emb.encode_texts([f"a {c} square" for c in COLOURS])
    assert images.shape == (4, emb.dim) == texts.shape and images.dtype == np.float32
    assert np.allclose(np.linalg.norm(images, axis=1), 1.0, atol=1e-5)
    assert list((texts @ images.T).argmax(axis=1)) == [0, 1, 2, 3]


def test_indexing_images_fills_the_visual_space_and_a_text_query_finds_the_planted_image(
    tiny_clip, pictures, tmp_path
):
    kb = KnowledgeBase(tmp_path / "kb", image_embedder=tiny_clip)
    report = index_source(kb, pictures, ocr="off")
    assert report.visual == 4 and VisualSpace(kb).count() == 4
    [hit] = VisualSpace(kb).search("a blue square", k=1)
    assert hit["source"] == "photo-2.png" and hit["modality"] == "image"
    # re-indexing embeds nothing again
    assert index_source(kb, pictures, ocr="off").visual == 0


def test_mmapg_image_side_searches_the_visual_space_and_says_so(
    tiny_clip, pictures, tmp_path, monkeypatch
):
    from hopgraph.tools import retrieval
    from hopgraph.tools.mmapg import IMAGE_SIDE, find_candidates

    kb_dir = tmp_path / "kb"
    index_source(KnowledgeBase(kb_dir, image_embedder=tiny_clip), pictures, ocr="off")
    events: list[dict] = []
    monkeypatch.setattr(retrieval, "emit", lambda e: events.append(e.as_event()))
    ctx = Context(kb_dir=str(kb_dir), image_embedder=tiny_clip, mmapg_image_radius=2.0)
    found = find_candidates(["a yellow square"], IMAGE_SIDE, ctx)
    assert found[0]["source"] == "photo-3.png"
    assert events[-1]["space"] == "visual" and events[-1]["embedder"] == tiny_clip

    # without a visual space, the same search goes by the images' text, and the trace says so
    bare = tmp_path / "bare"
    index_source(KnowledgeBase(bare, image_embedder=""), pictures, ocr="off")
    find_candidates(["a yellow square"], IMAGE_SIDE, ctx.replace(kb_dir=str(bare)))
    assert events[-1]["space"] == "text"


def test_without_weights_index_says_so_once_and_keeps_every_image(pictures, tmp_path):
    kb = KnowledgeBase(tmp_path / "kb", image_embedder=str(tmp_path / "no-such-model"))
    report = index_source(kb, pictures, ocr="off", batch_size=2)
    assert report.added == 4 and report.visual == 0
    said = [n for n in report.notes if "no weights here" in n]
    assert len(said) == 1 and "titles, captions and OCR text" in said[0]
    with pytest.raises(ModelWeightsMissing, match="never downloads"):
        VisionTextEmbedder(str(tmp_path / "no-such-model"))


def test_a_visual_space_from_another_embedder_is_refused(tiny_clip, pictures, tmp_path):
    index_source(KnowledgeBase(tmp_path / "kb", image_embedder=tiny_clip), pictures, ocr="off")
    other = KnowledgeBase(tmp_path / "kb", image_embedder="google/siglip-base-patch16-224")
    with pytest.raises(KnowledgeBaseError, match="not comparable"):
        VisualSpace(other).search("a red square")
