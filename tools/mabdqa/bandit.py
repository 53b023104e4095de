"""MAB-DQA's bandit-guided retrieval over the page hypergraph (mab-dqa.txt Sec. 3.3,
Algorithm 2), LLM-free: the page judge is passed in.

Each arm (subquery) keeps Beta(a_j, b_j), starting at Beta(1, 1). A step draws one sample per
arm (Thompson sampling) and lets the best arm guide the walk: from the current page, jump to the
best-scoring unvisited neighbour in H (Alg. 2 lines 17-21) inside that arm's hyperedge where one
is; otherwise go to the arm's best unvisited page. (Algorithm 2 as printed judges every page in
its first round and never uses the draw; Sec. 3.3 says the sampled arm guides retrieval, which
is what a budget of m judgements needs.) The chosen page is judged, its
arms are updated (Eq. 10), and every page is finally ranked by the composite score (Eq. 8):
a page the walk never judged by its own LI, degree and arms' confidence, with the judgement
expected of it in place of s_vlm. (Alg. 2 line 4 starts every page at LI(q, p), but its walk
rescores every page by Eq. 8 in its first round, line 30; with a budget of m judgements, the
pages not judged are ranked by Eq. 8 too, not left at line 4's score.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hopgraph.runtime import fan_out
from hopgraph.tools.mabdqa.page_hypergraph import Hypergraph


@dataclass
class Arms:
    """Beta(a_j, b_j) per arm."""

    a: np.ndarray
    b: np.ndarray

    @classmethod
    def uniform(cls, n: int) -> Arms:
        return cls(np.ones(n), np.ones(n))

    def mean(self) -> np.ndarray:
        """E[Beta(a, b)] = a / (a + b)."""
        return self.a / (self.a + self.b)

    def update(self, arms: list[int], s: float) -> None:
        """(a_j, b_j) <- (a_j + s, b_j + 1 - s) for each arm of the judged page (Eq. 10)."""
        for j in arms:
            self.a[j] += s
            self.b[j] += 1.0 - s


def arm_confidence(h: Hypergraph, arms: Arms, page: int) -> float:
    """s̄_cb of Eq. 9: the mean E[Beta] of the arms whose hyperedge holds the page (0 if none)."""
    linked = h.arms_of(page)
    return float(arms.mean()[linked].mean()) if linked else 0.0


def composite_score(
    h: Hypergraph,
    arms: Arms,
    page: int,
    s_vlm: float,
    *,
    alpha: float,
    beta: float,
    lam: float,
    max_degree: int,
) -> float:
    """Eq. 8: (1-alpha) max_j LI(Q_j, p) + alpha s_vlm + beta[(1-lambda) h + lambda s̄_cb], with
    LI min-max normalised per arm and the degree h divided by the largest degree in H, so
    every term lies in [0, 1]."""
    return (
        (1 - alpha) * float(h.li[:, page].max())
        + alpha * s_vlm
        + beta * graph_term(h, arms, page, lam=lam, max_degree=max_degree)
    )


def graph_term(h: Hypergraph, arms: Arms, page: int, *, lam: float, max_degree: int) -> float:
    """Eq. 8's bracket: (1-lambda) h + lambda s̄_cb, the page's degree and its arms' means."""
    degree = h.degree(page) / max_degree if max_degree else 0.0
    return (1 - lam) * degree + lam * arm_confidence(h, arms, page)


@dataclass
class Walk:
    """What a bandit retrieval did: the final ranking and each step, for the trace."""

    ranking: list[int]
    scores: list[float]
    judged: dict[int, float]
    arms: Arms
    """The Beta arms after the walk (HRRA continues from them)."""
    steps: list[dict[str, Any]] = field(default_factory=list)


def bandit_retrieve(
    h: Hypergraph,
    judge: Callable[[int], float],
    *,
    m: int,
    alpha: float,
    beta: float,
    lam: float,
    seed: int = 42,
    arms: Arms | None = None,
    judged: dict[int, float] | None = None,
    start: int | None = None,
    on_step: Callable[[dict[str, Any]], None] | None = None,
    batch: int = 1,
    workers: int = 8,
    stop: Callable[[], bool] | None = None,
) -> Walk:
    """Judge at most ``m`` pages (fewer when every page is judged), walking H as above, and
    rank every page by Eq. 8 (``_Scores``).
    ``arms``/``judged``/``start`` continue an earlier walk (HRRA re-entering the hypergraph).
    ``batch`` b > 1 (ours, not the paper's): each round draws b Thompson samples, picks b
    distinct pages, judges them concurrently and then updates the arms, so the critical path
    holds ceil(m / b) judgements instead of m; b = 1 is the paper's walk. At most ``workers``
    judgements run at once. ``stop()`` true ends the walk before its next round (a spent
    token cap): the ranking is made from the pages judged so far."""
    rng = np.random.default_rng(seed)
    arms = arms or Arms.uniform(len(h.subqueries))
    judged = dict(judged or {})
    score = _Scores(h, arms, judged, alpha=alpha, beta=beta, lam=lam)
    current = start
    steps: list[dict[str, Any]] = []
    budget, rounds = m, 0
    while budget > 0 and not (stop is not None and stop()):
        # (page, arm, how, sample) of this round, chosen before any is judged
        picks: list[tuple[Any, ...]] = []
        for _ in range(min(batch, budget)):
            pick = _pick(h, arms, rng, judged.keys() | {p for p, *_ in picks}, current, score)
            if pick is None:
                break
            picks.append(pick)
        if not picks:
            break
        rounds += 1
        values = fan_out(judge, [p for p, *_ in picks], min(batch, workers))
        budget -= len(picks)
        for (page, arm, how, sample), value in zip(picks, values, strict=True):
            s = min(1.0, max(0.0, float(value)))
            judged[page] = s
            arms.update(h.arms_of(page), s)
            current = page
            steps.append(
                {
                    "step": len(steps) + 1,
                    "round": rounds,
                    "samples": [round(float(x), 4) for x in sample],
                    "arm": arm,
                    "subquery": h.subqueries[arm],
                    "how": how,
                    "page": page,
                    "s_vlm": round(s, 4),
                    "score": round(score(page), 4),
                    "arms": [
                        [round(float(a), 4), round(float(b), 4)]
                        for a, b in zip(arms.a, arms.b, strict=True)
                    ],
                }
            )
            if on_step:
                on_step(steps[-1])
    final = np.array([score(p) for p in range(h.n_pages)])
    order = [int(p) for p in np.argsort(-final, kind="stable")]
    return Walk(order, [round(float(final[p]), 6) for p in order], judged, arms, steps)


def _pick(h: Hypergraph, arms: Arms, rng, taken: set[int], current: int | None, score):  # noqa: ANN001, ANN202
    """One page to judge next (page, arm, how, sample), or None when every page is taken: the
    Thompson-sampled arm guides, a neighbour of the current page inside its hyperedge first,
    else its best unvisited page; once its hyperedge is spent, any neighbour (Alg. 2 line 20),
    else any page; the best by ``score`` among them."""
    unvisited = [p for p in range(h.n_pages) if p not in taken]
    if not unvisited:
        return None
    sample = rng.beta(arms.a, arms.b)  # Thompson sampling: one draw per arm
    arm = int(np.argmax(sample))
    edge = set(h.edges[arm])
    near = h.neighbours(current) - taken if current is not None else set()
    options = (
        (near & edge, "jump"),
        (edge - taken, "arm"),
        (near, "jump"),
        (set(unvisited), "any"),
    )
    candidates, how = next(o for o in options if o[0])
    return max(sorted(candidates), key=score), arm, how, sample


class _Scores:
    """Eq. 8 for every page, judged or not, on one scale: (1-alpha) max_j LI(Q_j, p) +
    alpha s + beta[(1-lambda) h_p + lambda s̄_cb_p]. s is the page's judgement s_vlm, or for a
    page not judged yet the judgement expected of it, the same for every such page (the mean
    of those made so far; 0.5, Beta(1, 1)'s mean, before any); its degree h_p and its arms'
    confidence s̄_cb_p (Eq. 9) are its own, which need no judgement of it. So two unjudged
    pages of equal LI differ by the hyperedges that hold them and how well those arms did."""

    def __init__(
        self,
        h: Hypergraph,
        arms: Arms,
        judged: dict[int, float],
        *,
        alpha: float,
        beta: float,
        lam: float,
    ):
        self.h, self.arms, self.judged = h, arms, judged
        self.alpha, self.beta, self.lam = alpha, beta, lam
        self.max_degree = max((h.degree(p) for p in range(h.n_pages)), default=0)

    def __call__(self, p: int) -> float:
        return composite_score(
            self.h,
            self.arms,
            p,
            self.judged.get(p, self.expected()),
            alpha=self.alpha,
            beta=self.beta,
            lam=self.lam,
            max_degree=self.max_degree,
        )

    def expected(self) -> float:
        """The judgement expected of a page not judged yet."""
        return float(np.mean(list(self.judged.values()))) if self.judged else 0.5
