"""QDRAG's reranker: S(C|Q_i) = P("Yes" | Q_i, C, R), pointwise, calls issued concurrently."""

from __future__ import annotations

from hopgraph.agents.role import Role
from hopgraph.config import Context
from hopgraph.memory.evidence import Evidence
from hopgraph.models import parallel_calls
from hopgraph.runtime import fan_out

RERANKER = Role("reranker", "qdrag/rerank")


def relevance(question: str, context: Evidence, ctx: Context) -> float:
    return RERANKER.p_yes(ctx, question=question, context=context)


def score_all(pairs: list[tuple[str, Evidence]], ctx: Context) -> list[float]:
    """S for every (question, context) pair, ``parallel_calls`` requests in flight (in the
    pairs' order, one by one, against the embedded server)."""
    return fan_out(lambda pair: relevance(*pair, ctx), pairs, parallel_calls(ctx))
