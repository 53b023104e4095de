"""Knowledge-base search as a graph tool: one shared KnowledgeBase per Context, and every
search reported as a ``retrieval`` event for the trace."""

from __future__ import annotations

import threading
import time
from dataclasses import asdict
from typing import Any

from hopgraph.config import Context
from hopgraph.memory.kb import Hit, KnowledgeBase
from hopgraph.models.events import emit

_kbs: dict[tuple, KnowledgeBase] = {}
_lock = threading.Lock()


def knowledge_base(ctx: Context) -> KnowledgeBase:
    key = (ctx.kb_dir, ctx.chroma_url, ctx.text_embedder)
    with _lock:
        if key not in _kbs:
            _kbs[key] = KnowledgeBase.from_context(ctx, must_exist=True)
        return _kbs[key]


def search_kb(
    query: str,
    ctx: Context,
    *,
    k: int | None = None,
    role: str = "retriever",
    **filters: Any,
) -> list[Hit]:
    """Top-k (or radius) search, emitted as ``{"event": "retrieval", ...}``."""
    began = time.perf_counter()
    hits = knowledge_base(ctx).search(query, k=k or ctx.top_k, **filters)
    emit_retrieval(query, [h.id for h in hits], [h.score for h in hits], began, role)
    return hits


def emit_retrieval(query: str, ids: list[str], scores: list[float], began: float, role: str):
    """The ``retrieval`` trace event the runner reads ranked ids from."""
    emit(
        {
            "event": "retrieval",
            "role": role,
            "query": query,
            "ids": ids,
            "scores": [round(s, 4) for s in scores],
            "latency_s": round(time.perf_counter() - began, 5),
        }
    )


def hit_dict(hit: Hit) -> dict[str, Any]:
    """A hit as plain JSON-able state (graphs keep dicts, not objects, in their state)."""
    return asdict(hit)
