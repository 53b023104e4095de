"""A one-shot query's text embedding without torch: the packaged MiniLM (a 6-layer BERT with
mean pooling, as sentence-transformers runs it) in numpy, its weights read with safetensors
and its words split by the model's own ``tokenizer.json``. Importing torch and
sentence-transformers takes seconds; this takes a fraction of one, so ``hopgraph search`` answers
in under two (``benchmarks/bench_search_start.py``). The vectors are the ones
``embedders.TextEmbedder`` gives (``tests/test_embedders.py`` holds them within 1e-5)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from hopgraph.models.embedders import PACKAGED_TEXT_MODELS, packaged_model_path


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


_ERF = np.frompyfunc(math.erf, 1, 1)


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, as transformers computes it (``math.erf``: no scipy to import)."""
    return 0.5 * x * (1.0 + np.asarray(_ERF(x / math.sqrt(2.0))).astype(x.dtype))


class NumpyMiniLM:
    """BERT encoder + mean pooling + L2 norm over a sentence-transformers folder's files."""

    def __init__(self, folder: Path):
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        cfg = json.loads((folder / "config.json").read_text())
        self.eps = float(cfg["layer_norm_eps"])
        self.heads = int(cfg["num_attention_heads"])
        self.layers = int(cfg["num_hidden_layers"])
        self.dim = int(cfg["hidden_size"])
        self.w = load_file(str(folder / "model.safetensors"))
        st = json.loads((folder / "sentence_bert_config.json").read_text())
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(int(st["max_seq_length"]))
        self.tokenizer.no_padding()

    def _encode_one(self, ids: list[int]) -> np.ndarray:
        w, n = self.w, len(ids)
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:n]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(
            x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps
        )
        hd = self.dim // self.heads
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def dense(h: np.ndarray, name: str, p: str = p) -> np.ndarray:
                return h @ w[f"{p}{name}.weight"].T + w[f"{p}{name}.bias"]

            q, k, v = (
                dense(x, f"attention.self.{m}").reshape(n, self.heads, hd).transpose(1, 0, 2)
                for m in ("query", "key", "value")
            )
            scores = q @ k.transpose(0, 2, 1) / np.sqrt(hd)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            att = (scores / scores.sum(-1, keepdims=True)) @ v
            att = dense(att.transpose(1, 0, 2).reshape(n, self.dim), "attention.output.dense")
            x = _layer_norm(
                x + att,
                w[f"{p}attention.output.LayerNorm.weight"],
                w[f"{p}attention.output.LayerNorm.bias"],
                self.eps,
            )
            out = dense(_gelu(dense(x, "intermediate.dense")), "output.dense")
            x = _layer_norm(
                x + out, w[f"{p}output.LayerNorm.weight"], w[f"{p}output.LayerNorm.bias"], self.eps
            )
        pooled = x.mean(0)
        return pooled / max(float(np.linalg.norm(pooled)), 1e-12)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows = [self._encode_one(e.ids) for e in self.tokenizer.encode_batch(list(texts))]
        return np.asarray(rows, dtype=np.float32)

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]


@lru_cache(maxsize=2)
def query_embedder(name: str = "all-MiniLM-L6-v2") -> NumpyMiniLM | None:
    """The torch-free embedder of a packaged text model (None for any other: the caller loads
    ``TextEmbedder``)."""
    if name not in PACKAGED_TEXT_MODELS:
        return None
    return NumpyMiniLM(packaged_model_path(name, "text embedder"))
