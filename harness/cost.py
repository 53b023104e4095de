"""What a run costs: the tokens every question's LLM calls used, and money where the user gives
the model's price (``Price``, USD per million tokens, as providers list it); and the budgets
that stop a run before it overspends (``Budget``); how many sequential rounds of calls a
question took (``critical_path_depth``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hopgraph.config import bounded

MOST_PRICE = 1e6
"""USD per million tokens no model costs (a typo's guard, and NaN's and infinity's)."""


@dataclass(frozen=True)
class Price:
    """USD per million prompt and completion tokens."""

    prompt: float
    completion: float

    @classmethod
    def parse(cls, text: str) -> Price:
        """``prompt=0.15,completion=0.6``: both parts, finite numbers in 0..MOST_PRICE."""
        parts: dict[str, float] = {}
        for item in filter(None, (p.strip() for p in text.split(","))):
            key, sep, value = item.partition("=")
            try:
                number = float(value) if sep else -1.0
            except ValueError:
                number = -1.0
            if key.strip() not in ("prompt", "completion") or not 0 <= number <= MOST_PRICE:
                raise ValueError(
                    f"--price takes prompt=USD,completion=USD per million tokens, not {item!r}"
                )
            parts[key.strip()] = number
        if set(parts) != {"prompt", "completion"}:
            raise ValueError(f"--price needs both prompt= and completion=, not {text!r}")
        return cls(**parts)

    def usd(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.prompt + completion_tokens * self.completion) / 1e6


def cost_of(pred: Mapping[str, Any], price: Price | None = None) -> dict[str, Any]:
    """A question's cost: its calls and tokens, and USD where a price is given."""
    out: dict[str, Any] = {
        "llm_calls": int(pred.get("llm_calls", 0)),
        "prompt_tokens": int(pred.get("prompt_tokens", 0)),
        "completion_tokens": int(pred.get("completion_tokens", 0)),
    }
    if price is not None:
        out["usd"] = round(price.usd(out["prompt_tokens"], out["completion_tokens"]), 6)
    return out


def run_cost(preds: list[dict[str, Any]], price: Price | None) -> dict[str, Any]:
    """What every question of the run cost together, with the price it was counted at."""
    out: dict[str, Any] = {"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    for p in preds:
        for k, v in cost_of(p).items():
            out[k] += v
    out["budget_stops"] = sum(int(p.get("budget_stops", 0)) for p in preds)
    if price is not None:
        out["usd"] = round(price.usd(out["prompt_tokens"], out["completion_tokens"]), 6)
        out["price"] = {"prompt": price.prompt, "completion": price.completion}
    return out


@dataclass(frozen=True)
class Budget:
    """What a run may spend in all (every answered question of its record, failed ones
    included): tokens, USD at ``price``, or both; the first one reached stops it."""

    tokens: int = 0
    usd: float = 0.0
    price: Price | None = None

    def __post_init__(self) -> None:
        bounded("--budget-tokens", self.tokens, least=0)
        bounded("--budget-usd", self.usd, least=0, most=1e12)
        if self.usd and self.price is None:
            raise ValueError("--budget-usd needs --price prompt=USD,completion=USD")

    def spent(self, preds: list[dict[str, Any]]) -> dict[str, Any]:
        cost = run_cost(preds, self.price)
        out: dict[str, Any] = {"tokens": cost["prompt_tokens"] + cost["completion_tokens"]}
        return out | ({"usd": cost["usd"]} if "usd" in cost else {})

    def reached(self, spent: dict[str, Any]) -> bool:
        return bool(
            (self.tokens and spent["tokens"] >= self.tokens)
            or (self.usd and spent.get("usd", 0.0) >= self.usd)
        )


def critical_path_depth(intervals: Sequence[tuple[float, float]]) -> int:
    """The number of sequential LLM rounds: the longest chain of calls in which each starts
    after the previous one ended (calls that overlap run in one round)."""
    calls = sorted(intervals, key=lambda iv: iv[1])
    depth: list[int] = []
    for i, (start, _) in enumerate(calls):
        before = [depth[j] for j in range(i) if calls[j][1] <= start]
        depth.append(1 + max(before, default=0))
    return max(depth, default=0)
