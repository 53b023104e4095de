"""QDRAG's knobs (qdrag.txt) and its graph's Context."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hopgraph.config import Context, knob
from hopgraph.settings.grail import GrailSettings
from hopgraph.settings.polarmem import PolarMemSettings


@dataclass(kw_only=True)
class QDRAGSettings:
    """QDRAG's knobs (qdrag.txt)."""

    qdrag_budget: int = knob(5, least=1, most=20)
    """N in n(Q_i) = N * E(Q_i) / sum E (the paper uses 5)."""
    qdrag_mode: Literal["qdc", "qdr", "dense", "sparse"] = "qdc"
    """qdc | qdr (the method) or dense | sparse (Table 1's baselines: no rerank; rerank the raw
    question without decomposition)."""
    qdrag_entropy_budget: bool = True
    """Off: every (sub)question keeps the same share (Table 6 without "S")."""
    qdrag_retrieve_k: int = knob(10, least=1, most=50)
    """Contexts retrieved per (sub)question before reranking."""


@dataclass(kw_only=True)
class QDRAGContext(Context, QDRAGSettings, GrailSettings, PolarMemSettings):
    """QDRAG's Context: the shared fields, its knobs, and GRAIL's and PolarMem's parts."""
