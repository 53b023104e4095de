"""PolarMem's adaptive distributional partitioning (polarmem.txt Sec. 3.2.1): verification
scores of one image's proposed concepts -> HAS / NOT_HAS / uncertain, with no fixed threshold.

Otsu's criterion is maximised exactly over the sorted scores (no histogram), after the two
anchor priors {0, 1} are added (Eq. 5); the margin is delta = kappa * sigma_w (Eq. 6).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

ANCHORS = (0.0, 1.0)


@dataclass(frozen=True)
class Threshold:
    tau: float
    """tau* of Eq. 5: a score above it belongs to the validation (present) mode."""
    sigma_w: float
    """Class-weighted sum of the two modes' standard deviations (anchors included)."""


@dataclass
class Partition:
    """Eq. 6: the concepts of one image by verified state, with the scores and bounds used."""

    has: list[str] = field(default_factory=list)
    not_has: list[str] = field(default_factory=list)
    uncertain: list[str] = field(default_factory=list)
    tau: float = 0.5
    delta: float = 0.0
    scores: dict[str, float] = field(default_factory=dict)

    def state(self, concept: str) -> str:
        for name, group in (("HAS", self.has), ("NOT_HAS", self.not_has)):
            if concept in group:
                return name
        return "UNCERTAIN"


def between_class_variance(values: np.ndarray, tau: float) -> float:
    """w_rej * w_val * (mu_val - mu_rej)^2 for the split at ``tau`` (the quantity of Eq. 5)."""
    low, high = values[values <= tau], values[values > tau]
    if not len(low) or not len(high):
        return 0.0
    w_low, w_high = len(low) / len(values), len(high) / len(values)
    return float(w_low * w_high * (high.mean() - low.mean()) ** 2)


def otsu_threshold(scores: Sequence[float], anchors: Sequence[float] = ANCHORS) -> Threshold:
    """tau* = argmax over tau in [0, 1] of w_val w_rej (mu_val - mu_rej)^2 (Eq. 5), the scores
    joined by the anchor priors. Every split between two consecutive distinct values is tried;
    tau sits midway between them. When several splits tie (e.g. all scores equal), tau is the
    mean of the tied ones: the criterion cannot tell them apart, so neither side is favoured."""
    values = _checked(scores)
    values = np.sort(np.concatenate([values, np.asarray(anchors, dtype=np.float64)]))
    distinct = np.unique(values)
    if len(distinct) < 2:
        return Threshold(tau=float(distinct[0]), sigma_w=0.0)
    n = len(values)
    cuts = (distinct[:-1] + distinct[1:]) / 2
    counts = np.searchsorted(values, cuts, side="right")  # values <= cut
    csum = np.cumsum(values)
    low_sum = csum[counts - 1]
    w_low = counts / n
    mu_low = low_sum / counts
    mu_high = (csum[-1] - low_sum) / (n - counts)
    criterion = w_low * (1 - w_low) * (mu_high - mu_low) ** 2
    best = np.flatnonzero(np.isclose(criterion, criterion.max(), rtol=1e-12, atol=1e-15))
    tau = float(cuts[best].mean())
    return Threshold(tau=tau, sigma_w=_sigma_w(values, tau))


def _sigma_w(values: np.ndarray, tau: float) -> float:
    """The weighted sum of the rejection and validation modes' standard deviations (Eq. 6)."""
    total = 0.0
    for part in (values[values <= tau], values[values > tau]):
        if len(part):
            total += len(part) / len(values) * float(part.std())
    return total


def partition(scores: Mapping[str, float], kappa: float) -> Partition:
    """Eq. 6: C_pos = s > tau + delta, C_neg = s < tau - delta, the rest uncertain,
    with delta = kappa * sigma_w. An empty score set partitions into nothing."""
    if kappa < 0 or not math.isfinite(kappa):
        raise ValueError(f"kappa must be a finite number >= 0, got {kappa!r}")
    if not scores:
        return Partition()
    th = otsu_threshold(list(scores.values()))
    delta = kappa * th.sigma_w
    out = Partition(tau=th.tau, delta=delta, scores=dict(scores))
    for concept, s in scores.items():
        if s > th.tau + delta:
            out.has.append(concept)
        elif s < th.tau - delta:
            out.not_has.append(concept)
        else:
            out.uncertain.append(concept)
    return out


def _checked(scores: Sequence[float]) -> np.ndarray:
    values = np.asarray(list(scores), dtype=np.float64)
    bad = [float(v) for v in values if not (0.0 <= v <= 1.0)]  # NaN fails both comparisons
    if bad:
        raise ValueError(f"verification scores must be probabilities in [0, 1], got {bad[:5]}")
    return values
