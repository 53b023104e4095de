"""Paired statistics for two runs on the same questions, the one place ``hopgraph compare``
and RESULTS.md take them from: better / worse / tied counts, the two-sided exact sign test
(scipy's ``binomtest``), McNemar's exact test for 0/1 metrics, a seeded paired bootstrap
interval of the mean difference (scipy's ``bootstrap``), and how many questions a difference
of the observed shape needs for p < 0.05 at 80 % power; and `fmt`, a figure as the tables
print it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

ALPHA = 0.05
POWER = 0.8
RESAMPLES = 10_000
MAX_NEEDED = 100_000
"""Past this many questions the needed n is reported as out of reach."""


@dataclass(frozen=True)
class Paired:
    """B against A over the questions both scored (higher is better unless ``lower``)."""

    n: int
    better: int
    worse: int
    tied: int
    mean_a: float
    mean_b: float
    sign_p: float
    """Two-sided exact binomial test of better against worse (ties left out)."""
    mcnemar_p: float | None
    """Exact McNemar on the discordant pairs, for metrics whose values are all 0 or 1."""
    ci: tuple[float, float] | None
    """Paired bootstrap 95 % interval of mean(B - A) (None under two questions)."""
    needed_n: int | None
    """Questions for 80 % power at p < 0.05 with this win share and tie rate; None where
    nothing differs (no win or loss, or as many wins as losses)."""

    @property
    def diff(self) -> float:
        return self.mean_b - self.mean_a

    @property
    def verdict(self) -> str:
        """ "better" / "worse" (significant, in the metric's good direction), else "tied"."""
        if self.sign_p >= ALPHA:
            return "not significant"
        return "better" if self.better > self.worse else "worse"


def sign_test(better: int, worse: int) -> float:
    """Two-sided exact p of ``better`` against ``worse`` under p = 1/2 (1.0 with no pair)."""
    n = better + worse
    return float(stats.binomtest(better, n, 0.5).pvalue) if n else 1.0


def sign_counts(a: Sequence[float], b: Sequence[float]) -> tuple[int, int, float]:
    """(pairs where a > b, pairs where a < b, two-sided exact sign-test p); ties left out."""
    wins = sum(x > y for x, y in zip(a, b, strict=True))
    losses = sum(x < y for x, y in zip(a, b, strict=True))
    return wins, losses, sign_test(wins, losses)


def bootstrap_ci(diffs: Sequence[float], seed: int = 0) -> tuple[float, float] | None:
    """Percentile interval of the mean paired difference over ``RESAMPLES`` resamples."""
    d = np.asarray(diffs, dtype=np.float64)
    if len(d) < 2:
        return None
    if np.all(d == d[0]):
        return float(d[0]), float(d[0])
    res = stats.bootstrap(
        (d,),
        np.mean,
        n_resamples=RESAMPLES,
        confidence_level=0.95,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def critical_counts(ms: np.ndarray) -> np.ndarray:
    """For each number of untied pairs m, the smallest count c whose two-sided sign-test p,
    2 P(X >= c | m, 1/2), is at most ALPHA (c > m where no count is)."""
    ms = np.asarray(ms)
    c = stats.binom.isf(ALPHA / 2, ms, 0.5).astype(np.int64) + 1  # P(X >= c) <= ALPHA / 2
    return np.where(c > ms / 2, c, ms // 2 + 1)


def sign_test_power(ms: np.ndarray, share: float) -> np.ndarray:
    """Power of the two-sided sign test on ``ms`` untied pairs when a pair goes B's way with
    probability ``share``: P(X >= c) + P(X <= m - c) under Binomial(m, share)."""
    ms = np.asarray(ms)
    c = critical_counts(ms)
    power = stats.binom.sf(c - 1, ms, share) + stats.binom.cdf(ms - c, ms, share)
    return np.where(c <= ms, power, 0.0)


def needed_questions(better: int, worse: int, tied: int) -> int | None:
    """Questions needed for POWER at ALPHA when pairs keep the observed win share among untied
    pairs and the observed tie rate (the smallest such n); MAX_NEEDED + 1 where even
    MAX_NEEDED questions would not do."""
    untied = better + worse
    if untied == 0 or better == worse:
        return None
    share, tie_rate = better / untied, tied / (untied + tied)
    ms = np.arange(1, int(MAX_NEEDED * (1 - tie_rate)) + 2)
    enough = np.nonzero(sign_test_power(ms, share) >= POWER)[0]
    if not len(enough):
        return MAX_NEEDED + 1
    return min(MAX_NEEDED + 1, math.ceil(int(ms[enough[0]]) / (1 - tie_rate)))


def paired(a: Sequence[float], b: Sequence[float], *, lower: bool = False, seed: int = 0) -> Paired:
    """B against A on paired values (the same questions, in the same order)."""
    if len(a) != len(b):
        raise ValueError(f"paired values need equal lengths, not {len(a)} and {len(b)}")
    sign = -1.0 if lower else 1.0
    better = sum(sign * (y - x) > 0 for x, y in zip(a, b, strict=True))
    worse = sum(sign * (y - x) < 0 for x, y in zip(a, b, strict=True))
    tied = len(a) - better - worse
    binary = all(v in (0, 1) for v in (*a, *b))
    p = sign_test(better, worse)
    return Paired(
        n=len(a),
        better=better,
        worse=worse,
        tied=tied,
        mean_a=float(np.mean(a)) if len(a) else 0.0,
        mean_b=float(np.mean(b)) if len(b) else 0.0,
        sign_p=p,
        # exact McNemar is the binomial test on the discordant pairs: on 0/1 scores these are
        # the better and worse questions, so it equals the sign test there
        mcnemar_p=p if binary and len(a) else None,
        ci=bootstrap_ci([y - x for x, y in zip(a, b, strict=True)], seed),
        needed_n=needed_questions(better, worse, tied),
    )


def paired_scores(
    a: dict[str, dict[str, float]], b: dict[str, dict[str, float]], metric: str
) -> tuple[list[str], list[float], list[float]]:
    """The questions both runs scored on ``metric`` (sorted), and each run's values."""
    ids = sorted(q for q in a.keys() & b.keys() if metric in a[q] and metric in b[q])
    return ids, [a[q][metric] for q in ids], [b[q][metric] for q in ids]


def fmt(v: Any) -> str:
    """A figure as every table prints it: thousands separated, floats to 3 places."""
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 1000:
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 100 else f"{v:,.0f}"
    return "" if v is None else str(v)
