"""QDRAG's reranker: S(C|Q_i) = P("Yes" | Q_i, C, R), pointwise, calls issued concurrently."""

from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hopgraph.config import Context
from hopgraph.models import chat_model, user
from hopgraph.prompts import prompts_for


def relevance(question: str, context: dict[str, Any], ctx: Context) -> float:
    prompt = prompts_for(ctx.prompts_dir).render("qdrag/rerank", question=question, context=context)
    return chat_model(ctx).p_yes([user(prompt)], role="reranker", template="qdrag/rerank")


def score_all(pairs: list[tuple[str, dict[str, Any]]], ctx: Context) -> list[float]:
    """S for every (question, context) pair, ``ctx.max_concurrency`` requests in flight."""
    if not pairs:
        return []
    with ThreadPoolExecutor(max_workers=max(1, ctx.max_concurrency)) as pool:
        # each call runs in a copy of this context, so its events reach the graph's stream
        futures = [
            pool.submit(contextvars.copy_context().run, relevance, q, c, ctx) for q, c in pairs
        ]
        return [f.result() for f in futures]
