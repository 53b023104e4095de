"""MAB-DQA's query-aware page hypergraph (mab-dqa.txt Sec. 3.1-3.2, Algorithm 1), LLM-free.

Pages and queries are multi-vector (the paper: ColPali patches; here, without a ColPali path
yet, one text-encoder vector per line or sentence), so late interaction keeps its shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


def late_interaction(query: np.ndarray, pages: Sequence[np.ndarray]) -> np.ndarray:
    """LI(q, p_i) for every page: sum over query vectors of the best dot product with any of
    the page's vectors (Eq. 1). A page without vectors scores 0."""
    out = np.zeros(len(pages), dtype=np.float64)
    for i, page in enumerate(pages):
        if len(page) and len(query):
            out[i] = float((query @ page.T).max(axis=1).sum())
    return out


def minmax(scores: np.ndarray) -> np.ndarray:
    """Scores scaled to [0, 1] within one query (all equal -> all 0), so LI mixes with the
    page judgement in Eq. 8 (the authors normalise ColPali scores the same way)."""
    if len(scores) == 0 or float(scores.max() - scores.min()) < 1e-12:
        return np.zeros_like(scores, dtype=np.float64)
    lo, hi = float(scores.min()), float(scores.max())
    return (scores - lo) / (hi - lo)


def page_graph(pages: Sequence[np.ndarray], theta_g: float) -> list[set[int]]:
    """The query-agnostic page graph (Eq. 2): an edge where two pages' similarity reaches
    theta_G. A page's similarity is the inner product of its mean vectors, normalised (cosine),
    so theta_G means the same for any number of vectors per page."""
    n = len(pages)
    adjacency: list[set[int]] = [set() for _ in range(n)]
    dims = next((p.shape[1] for p in pages if len(p)), 0)
    means = np.zeros((n, dims), dtype=np.float64)
    for i, page in enumerate(pages):
        if len(page):
            v = page.mean(axis=0)
            means[i] = v / (np.linalg.norm(v) or 1.0)
    sim = means @ means.T
    for i, j in zip(*np.nonzero(np.triu(sim >= theta_g, k=1)), strict=True):
        if means[i].any() and means[j].any():
            adjacency[i].add(int(j))
            adjacency[j].add(int(i))
    return adjacency


def ranks(scores: np.ndarray) -> np.ndarray:
    """Each page's 1-based position when sorted by score, best first (ties by page order)."""
    order = np.argsort(-scores, kind="stable")
    out = np.empty(len(scores), dtype=np.int64)
    out[order] = np.arange(1, len(scores) + 1)
    return out


@dataclass
class Hypergraph:
    """H = (V, E_H ∪ E_G) of Eq. 5, with the scores the bandit needs."""

    subqueries: list[str]
    """The arms: atoms q_1..q_M, then (unless atoms only) the global query E_q."""
    li: np.ndarray
    """LI(Q_j, p_i), min-max normalised per arm: shape (arms, pages)."""
    edges: list[list[int]]
    """Hyperedge Ê_j per arm: its pages, best first (Eq. 4)."""
    graph: list[set[int]] = field(default_factory=list)
    """E_G adjacency (empty sets when the page graph is switched off)."""

    @property
    def n_pages(self) -> int:
        return self.li.shape[1]

    def arms_of(self, page: int) -> list[int]:
        """Q̂_i: the arms whose hyperedge holds the page."""
        return [j for j, e in enumerate(self.edges) if page in e]

    def degree(self, page: int) -> int:
        """deg(p_i) in H: hyperedges holding the page plus its page-graph edges."""
        return len(self.arms_of(page)) + len(self.graph[page] if self.graph else ())

    def neighbours(self, page: int) -> set[int]:
        """Adj_H(p_i) (Alg. 2 line 17): pages sharing a hyperedge with it, and (where the
        page graph is on) its E_G neighbours."""
        out = {p for e in self.edges if page in e for p in e}
        if self.graph:
            out |= self.graph[page]
        out.discard(page)
        return out


def build_hypergraph(
    subqueries: Sequence[str],
    query_vectors: Sequence[np.ndarray],
    pages: Sequence[np.ndarray],
    *,
    theta_g: float,
    theta_h: int,
    atoms_only: bool = False,
    with_page_graph: bool = True,
) -> Hypergraph:
    """Algorithm 1. ``query_vectors[j]`` holds the atom q_j's vectors; the global query
    E_q = all atoms together is LI over their union (Eq. 3). Each arm's top-theta_H pages
    C_j; an atom keeps those outside the global set C_b or ranked at least as well under
    it as under Q_b (Eq. 4)."""
    if len(subqueries) != len(query_vectors):
        raise ValueError("one vector set per subquery is needed")
    if not pages:
        raise ValueError("a document with no pages has nothing to retrieve")
    names = list(subqueries)
    sets = list(query_vectors)
    if not atoms_only or not sets:  # Eq. 3: atoms ∪ {all}; no atoms -> the global query only
        names.append(" ".join(subqueries))
        dim = next(p.shape[1] for p in [*sets, *pages] if len(p))
        sets.append(np.concatenate(sets) if sets else np.zeros((0, dim)))
    raw = np.stack([late_interaction(q, pages) for q in sets])
    top = min(theta_h, len(pages))
    candidates = [list(np.argsort(-row, kind="stable")[:top]) for row in raw]
    if atoms_only:
        edges = [[int(p) for p in c] for c in candidates]
    else:
        b = len(sets) - 1
        global_set, global_rank = set(candidates[b]), ranks(raw[b])
        edges = []
        for j, c in enumerate(candidates):
            rank_j = ranks(raw[j])
            # Eq. 4 (for the global arm itself every page qualifies)
            edges.append([int(p) for p in c if p not in global_set or rank_j[p] <= global_rank[p]])
    graph = page_graph(pages, theta_g) if with_page_graph else []
    return Hypergraph(names, np.stack([minmax(r) for r in raw]), edges, graph)
