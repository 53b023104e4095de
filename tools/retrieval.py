"""The retrieval service every graph calls (no LLM): one KnowledgeBase per Context, one
knowledge-base fetch and one ``Retrieval`` trace event per search. Results are ``Evidence``.
GRAIL's steered search (``tools/grail/tool.py:steerable_search``) builds on this one, so a method
that never steers does not run (or fingerprint) GRAIL's code."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from hopgraph.config import Context
from hopgraph.memory.evidence import Evidence
from hopgraph.memory.kb import KnowledgeBase
from hopgraph.memory.visual import VisualSpace
from hopgraph.models.events import Retrieval, emit
from hopgraph.runtime import ProcessCache, process_cache

_kbs: ProcessCache[tuple, KnowledgeBase] = process_cache("knowledge bases", KnowledgeBase.close)


def knowledge_base(ctx: Context) -> KnowledgeBase:
    """The one shared KnowledgeBase that ``ctx`` names (opened once, refused if absent)."""
    key = (ctx.kb_dir, ctx.chroma_url, ctx.text_embedder, ctx.image_embedder)
    return _kbs.get(key, lambda: KnowledgeBase.from_context(ctx, must_exist=True))


def search(
    query: str | np.ndarray,
    ctx: Context,
    *,
    k: int | None = None,
    role: str = "retriever",
    modalities: Sequence[str] | None = None,
    sources: Sequence[str] | None = None,
    radius: float | None = None,
    derived: bool | None = None,
    max_hits: int = 100,
    label: str = "",
    vectors: bool = False,
) -> list[Evidence]:
    """Top-``k`` (default ``ctx.top_k``) by similarity, or every item within ``radius``;
    ``sources`` keeps only the items of those registered sources. ``label`` names a vector
    query in the trace. ``vectors``: keep the hits' vectors for GRAIL to steer by."""
    began = time.perf_counter()
    kb = knowledge_base(ctx)
    k = k or ctx.top_k
    shown = query if isinstance(query, str) else label or "(vector)"
    hits = kb.search(
        query,
        k=k,
        modalities=modalities,
        sources=sources,
        radius=radius,
        max_hits=max_hits,
        derived=derived,
        vectors=vectors,
    )
    emit(Retrieval.of(role, shown, hits, began))
    return hits


def search_images(
    query: str,
    ctx: Context,
    *,
    k: int | None = None,
    radius: float | None = None,
    role: str = "retriever",
    max_hits: int = 100,
) -> list[Evidence]:
    """Images for ``query``: in the visual space (the image embedder's text tower against its
    image vectors) where the KB has one, else by their titles, captions and OCR text in the
    text space. The trace event names the ``space`` searched."""
    began = time.perf_counter()
    kb = knowledge_base(ctx)
    k = k or ctx.top_k
    visual = VisualSpace(kb)
    if visual.count():
        hits = visual.search(query, k=k, radius=radius, max_hits=max_hits)
        emit(Retrieval.of(role, query, hits, began, space="visual", embedder=ctx.image_embedder))
        return hits
    hits = kb.search(query, k=k, modalities=["image"], radius=radius, max_hits=max_hits)
    emit(Retrieval.of(role, query, hits, began, space="text"))
    return hits
