"""Local encoders run where torch computes fastest: the image (CLIP) and page (ColPali)
embedders sat on the CPU even on a GPU machine, where a ColPali-sized model (2.4B) embeds pages
74x slower than on the machine's H100 (benchmarks/bench_page_embedder.py). They now follow the
text embedder onto the GPU, their inputs follow them, and their vectors there match the CPU's.
On a machine without a GPU the placement test checks the CPU and the comparison is skipped (it
ran on an H100 through the device tool)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_models import COLOURS, square, tiny_colpali, trained_tiny_clip

from hopgraph.models import embedders
from hopgraph.models.embedders import PageEmbedder, VisionTextEmbedder

GPU = torch.cuda.is_available()


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    return str(trained_tiny_clip(tmp_path_factory.mktemp("tiny-clip")))


@pytest.fixture(scope="module")
def colpali(tmp_path_factory):
    return str(tiny_colpali(tmp_path_factory.mktemp("tiny-colpali")))


def test_image_and_page_embedders_sit_on_the_gpu_where_torch_sees_one(tiny_clip, colpali):
    expected = "cuda" if GPU else "cpu"
    assert VisionTextEmbedder(tiny_clip).model.device.type == expected
    assert PageEmbedder(colpali).model.device.type == expected


def _vectors(clip: VisionTextEmbedder, pages: PageEmbedder) -> list[np.ndarray]:
    pictures = [square(c, size=96) for c in COLOURS]
    out = [clip.encode_images(pictures), clip.encode_texts([f"a {c} square" for c in COLOURS])]
    out += pages.encode_pages(pictures)
    return [*out, pages.encode_query("which page shows a red chart")]


@pytest.mark.skipif(not GPU, reason="needs a CUDA GPU: compares its vectors with the CPU's")
def test_gpu_vectors_match_the_cpu_ones(tiny_clip, colpali, monkeypatch):
    on_gpu = _vectors(VisionTextEmbedder(tiny_clip), PageEmbedder(colpali))
    monkeypatch.setattr(embedders, "torch_device", lambda: "cpu")
    on_cpu = _vectors(VisionTextEmbedder(tiny_clip), PageEmbedder(colpali))
    for gpu, cpu in zip(on_gpu, on_cpu, strict=True):
        assert gpu.dtype == np.float32 and gpu.shape == cpu.shape
        # TF32 convolutions on the GPU differ from the CPU's float32 in the 4th decimal
        assert np.abs(gpu - cpu).max() < 5e-3, np.abs(gpu - cpu).max()
