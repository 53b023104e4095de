"""QDRAG's reranker: S(C|Q_i) = P("Yes" | Q_i, C, R), pointwise, calls issued concurrently."""

from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor

from hopgraph.agents.role import Role
from hopgraph.config import Context
from hopgraph.memory.evidence import Evidence
from hopgraph.models import parallel_calls

RERANKER = Role("reranker", "qdrag/rerank")


def relevance(question: str, context: Evidence, ctx: Context) -> float:
    return RERANKER.p_yes(ctx, question=question, context=context)


def score_all(pairs: list[tuple[str, Evidence]], ctx: Context) -> list[float]:
    """S for every (question, context) pair, ``parallel_calls`` requests in flight (in the
    pairs' order, one by one, against the embedded server)."""
    workers = parallel_calls(ctx)
    if workers == 1 or len(pairs) < 2:
        return [relevance(q, c, ctx) for q, c in pairs]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        # each call runs in a copy of this context, so its events reach the graph's stream
        futures = [
            pool.submit(contextvars.copy_context().run, relevance, q, c, ctx) for q, c in pairs
        ]
        return [f.result() for f in futures]
