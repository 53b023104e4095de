"""Static SVG plots for the results pages and the comparison page: quality against cost, one
point per method or prompt variant with its paired 95 % interval against the base as an error
bar, and a comparison's per-question win / loss strip. Deterministic output (no date, fixed
ids), so a regenerated plot changes only when its records do."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402

plt.rcParams["svg.hashsalt"] = "hopgraph"
plt.rcParams["font.size"] = 9

COSTS = (
    ("llm_calls", "LLM calls per question"),
    ("prompt_tokens", "prompt tokens per question"),
    ("seconds", "seconds per question"),
)
COLOURS = {"better": "#16a34a", "worse": "#dc2626", "tied": "#d1d5db"}


@dataclass
class Point:
    """One method or variant: its mean quality and costs, and (beside the base) the paired
    95 % interval of its quality against the base, as absolute values."""

    label: str
    quality: float
    costs: dict[str, float]
    interval: tuple[float, float] | None = None


def _svg(fig) -> str:  # noqa: ANN001 - a matplotlib Figure
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return buf.getvalue()


def quality_cost(points: Sequence[Point], metric: str) -> str:
    """One panel per cost the points carry: quality (y) against that cost (x)."""
    costs = [(k, label) for k, label in COSTS if all(k in p.costs for p in points)]
    fig, axes = plt.subplots(
        1, max(1, len(costs)), figsize=(3.2 * max(1, len(costs)), 2.8), squeeze=False
    )
    axes[0][0].set_ylabel(metric)
    for ax, (key, label) in zip(axes[0], costs, strict=False):
        for p in points:
            x = p.costs[key]
            if p.interval is not None:
                lo, hi = p.interval  # base mean + the difference's bounds: a column equal
                # to the base has both a rounding away from its own mean, on either side
                bar = [[max(p.quality - lo, 0.0)], [max(hi - p.quality, 0.0)]]
                ax.errorbar(x, p.quality, yerr=bar, fmt="o", capsize=3, color="#2563eb")
            else:
                ax.plot(x, p.quality, "s", color="#111827")
            ax.annotate(p.label, (x, p.quality), textcoords="offset points", xytext=(4, 4))
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    fig.suptitle(f"{metric} against cost (bars: paired 95 % interval against the base)")
    return _svg(fig)


def win_loss_strip(rows: Sequence[tuple[str, Sequence[str]]]) -> str:
    """Each comparison a row of cells, one per question: better, worse or tied."""
    width = max((len(v) for _, v in rows), default=1)
    fig, ax = plt.subplots(figsize=(min(12, 2 + 0.12 * width), 0.4 + 0.35 * len(rows)))
    for y, (_, verdicts) in enumerate(rows):
        for x, v in enumerate(verdicts):
            ax.add_patch(plt.Rectangle((x, -y - 0.4), 0.9, 0.8, color=COLOURS[v], lw=0))
    ax.set_xlim(0, width)
    ax.set_ylim(-len(rows) + 0.4, 0.6)
    ax.set_yticks([-y for y in range(len(rows))], [label for label, _ in rows])
    ax.set_xticks([])
    ax.set_xlabel("questions (green: better, red: worse, grey: tied)")
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    return _svg(fig)


def verdicts(a: Sequence[float], b: Sequence[float], lower: bool = False) -> list[str]:
    """Per question, whether B did better, worse or the same as A."""
    sign = -1 if lower else 1
    return [
        "better" if sign * (y - x) > 0 else "worse" if sign * (y - x) < 0 else "tied"
        for x, y in zip(a, b, strict=True)
    ]


def comparison(
    scores: Sequence[dict[str, dict[str, float]]],
    labels: Sequence[str],
    metric: str,
    lower: bool = False,
) -> list[str]:
    """The two plots of a comparison of runs (per-question scores, the first run the base):
    quality against cost, and each run's win / loss strip against the base, on the questions
    every run scored."""
    from hopgraph.evals.stats import paired

    ids = sorted(set.intersection(*(set(q for q, s in r.items() if metric in s) for r in scores)))
    if not ids:
        return []
    base = [scores[0][q][metric] for q in ids]
    points, rows = [], []
    for label, per in zip(labels, scores, strict=True):
        vals = [per[q][metric] for q in ids]
        costs = {k: sum(per[q].get(k, 0.0) for q in ids) / len(ids) for k, _ in COSTS}
        r = paired(base, vals, lower=lower) if per is not scores[0] else None
        interval = (r.mean_a + r.ci[0], r.mean_a + r.ci[1]) if r and r.ci else None
        points.append(Point(label, sum(vals) / len(vals), costs, interval))
        if per is not scores[0]:
            rows.append((f"{label} vs {labels[0]}", verdicts(base, vals, lower)))
    return [quality_cost(points, metric), win_loss_strip(rows)]
