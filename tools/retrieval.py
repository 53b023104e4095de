"""The retrieval service every graph calls (no LLM): one KnowledgeBase per Context, the dense or
GRAIL choice made here once, one knowledge-base fetch, and one ``Retrieval`` trace event per
search. Results are ``Evidence``."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from hopgraph.config import Context
from hopgraph.memory.evidence import Evidence, rescored
from hopgraph.memory.kb import KnowledgeBase
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
    held: Sequence[str] = (),
    steer: str = "",
    role: str = "retriever",
    modalities: Sequence[str] | None = None,
    radius: float | None = None,
    derived: bool | None = None,
    max_hits: int = 100,
    label: str = "",
) -> list[Evidence]:
    """Top-``k`` (default ``ctx.top_k``) by similarity, or every item within ``radius``.

    With ``steer`` (a GRAIL mode) and ``held`` evidence ids, the query embedding is steered away
    from what ``held`` covers and the top-k not in ``held`` are returned instead (GRAIL, no LLM
    call; radius and modalities do not apply). ``label`` names a vector query in the trace."""
    began = time.perf_counter()
    kb = knowledge_base(ctx)
    k = k or ctx.top_k
    shown = query if isinstance(query, str) else label or "(vector)"
    if steer and held:
        hits, grail = _steered(query, list(held), k, steer, ctx, kb)
        emit(Retrieval.of(role, shown, hits, began, context=list(held), **grail))
        return hits
    hits = kb.search(
        query, k=k, modalities=modalities, radius=radius, max_hits=max_hits, derived=derived
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
    if kb.visual_count():
        hits = kb.search_visual(query, k=k, radius=radius, max_hits=max_hits)
        emit(Retrieval.of(role, query, hits, began, space="visual", embedder=ctx.image_embedder))
        return hits
    hits = kb.search(query, k=k, modalities=["image"], radius=radius, max_hits=max_hits)
    emit(Retrieval.of(role, query, hits, began, space="text"))
    return hits


def _steered(
    query: str | np.ndarray, held: list[str], k: int, mode: str, ctx: Context, kb: KnowledgeBase
) -> tuple[list[Evidence], dict]:
    """GRAIL's steered top-k, fetched from the knowledge base once, and what the trace records
    of it: the mode that ran, the one requested where it had to fall back, the gate."""
    import torch

    from hopgraph.tools.grail.tool import grail_for

    grail = grail_for(ctx)
    q = torch.as_tensor(kb.embed_query(query) if isinstance(query, str) else query)
    runs, why = grail.model.mode_for(mode)
    found, steered = grail.search(q, held, k, runs)
    stored = {e["id"]: e for e in kb.get([i for i, _ in found])}
    hits = [rescored(stored[i], round(s, 4), grail=runs) for i, s in found if i in stored]
    diagnostics = {"mode": runs, **steered.diagnostics()}
    return hits, diagnostics | ({"requested": mode, "fallback": why} if why else {})
