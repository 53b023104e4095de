"""A search's record (``record.json`` in its folder): what it tried, kept and spent, read
back on a resume, written whole after each step, and costed from its run folders alone, so a
sitting killed before the record was written still counts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from hopgraph.harness.cost import Budget
from hopgraph.harness.run_folder import RunFolder, scored_predictions

KEEP_RULE = "validation mean above the incumbent's by more than 1/n"


class OptimizeRefused(ValueError):
    """Asked for something the optimizer refuses before any call (exit 2)."""


class BudgetSpent(RuntimeError):
    """The search stopped at its budget (exit 4); a larger one goes on."""


class Searched(Protocol):
    """What a record is made from: the search's plan (``search.Plan``)."""

    agent: str
    out: Path
    roles: list[str]
    metric: str
    alpha: float
    seed: int
    budget: Budget | None


class SearchRecord:
    """``plan.out``'s record: ``data`` is the JSON object; ``on_save`` sees it at each write
    (the CLI's table of candidates)."""

    def __init__(self, plan: Searched, on_save: Callable[[dict[str, Any]], None]) -> None:
        self.plan, self.on_save = plan, on_save
        self.out = plan.out
        self.path = self.out / "record.json"
        self.data: dict[str, Any] = self._load()

    def _load(self) -> dict[str, Any]:
        if self.path.is_file():
            rec = json.loads(self.path.read_text())
            if rec.get("agent") != self.plan.agent:
                raise OptimizeRefused(
                    f"{self.out} holds a search for {rec.get('agent')}, not {self.plan.agent}"
                )
            for c in rec["candidates"]:  # a record from before the minibatch rung
                c.setdefault("stage", "validation" if c.get("scores") else "")
                if not c.get("scores"):
                    c.setdefault("proposed_sent", c.get("sent", [0, 0]))
                    c.setdefault("proposed_seconds", c.get("seconds", 0.0))
            return rec
        return {
            "agent": self.plan.agent,
            "roles": self.plan.roles,
            "metric": self.plan.metric,
            "alpha": self.plan.alpha,
            "keep": KEEP_RULE,
            "seed": self.plan.seed,
            "candidates": [],
            "incumbent": "hand-written",
            "seconds": 0.0,
        }

    def save(self) -> None:
        self.data["seconds"] = round(self.seconds(), 1)
        self.data["spent"] = self.spent()
        self.write()

    def write(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1, ensure_ascii=False) + "\n")
        tmp.replace(self.path)
        self.on_save(self.data)

    def seconds(self) -> float:
        """The search's time, from what it keeps: its runs' questions' own seconds (the
        bootstrap, the candidates, the verdict) and its proposals', so a sitting killed before
        the record was written counts too."""
        runs = [self.out / "bootstrap", *self.under_way(), *self.arms()]
        answered = sum(
            p.get("seconds", 0.0) for run in runs for p in RunFolder(run).done().values()
        )
        return answered + sum(
            c.get("proposed_seconds", 0.0) if is_under_way(c) else c.get("seconds", 0.0)
            for c in self.data["candidates"]
        )

    def under_way(self) -> list[Path]:
        """The run folders of candidates neither scored nor skipped: a validation run under
        way, whose questions' cost the candidate's own entry does not hold yet."""
        return [
            self.out / "candidates" / c["id"] for c in self.data["candidates"] if is_under_way(c)
        ]

    def arms(self) -> list[Path]:
        """The verdict's run folders, each once (an arm linked to the other costs nothing)."""
        return [p for p in sorted((self.out / "test").glob("*")) if not p.is_symlink()]

    def spent(self) -> dict[str, Any]:
        """Tokens the search's runs and proposals sent to the endpoint (a cached call costs
        nothing), and their USD at the budget's price. A run under way counts what its folder
        holds so far (the bootstrap, a candidate not yet scored, each verdict arm), so the
        next run's budget is what is really left."""
        parts = [sent_tokens(RunFolder(self.out / "bootstrap").done())]
        parts += [
            c.get("proposed_sent", [0, 0]) if is_under_way(c) else c.get("sent", [c["tokens"], 0])
            for c in self.data["candidates"]
        ]
        runs = [*self.under_way(), *self.arms()]
        parts += [sent_tokens(RunFolder(run).done()) for run in runs]
        prompt, completion = (sum(p[i] for p in parts) for i in (0, 1))
        out: dict[str, Any] = {
            "tokens": prompt + completion,
            "prompt_tokens": prompt,
            "completion_tokens": completion,
        }
        budget = self.plan.budget
        if budget is not None and budget.price is not None:
            out["usd"] = round(budget.price.usd(prompt, completion), 6)
        return out

    def check_budget(self) -> None:
        b = self.plan.budget
        if b is None:
            return
        spent = self.spent()
        if (b.tokens and spent["tokens"] >= b.tokens) or (b.usd and spent.get("usd", 0) >= b.usd):
            self.save()
            raise BudgetSpent(f"the budget ({budget_text(b)}) is spent")

    def folder_budget(self, folder: Path) -> Budget | None:
        """A run's budget: what is left of the search's, plus what the folder's record already
        spent as the runner counts it (cached calls included)."""
        b = self.plan.budget
        if b is None:
            return None
        spent, preds = self.spent(), preds_in(folder)
        own = b.spent(list(preds.values()))
        tokens = b.tokens - spent["tokens"] + own["tokens"] if b.tokens else 0
        usd = b.usd - spent.get("usd", 0.0) + own.get("usd", 0.0) if b.usd else 0.0
        return Budget(
            tokens=max(tokens, 1) if b.tokens else 0,
            usd=max(usd, 1e-9) if b.usd else 0.0,
            price=b.price,
        )


def scored(candidate: dict[str, Any]) -> bool:
    """Scored on the whole validation (a record from before the minibatch rung has no stage)."""
    return bool(candidate.get("scores")) and candidate.get("stage", "validation") == "validation"


def is_under_way(candidate: dict[str, Any]) -> bool:
    """A candidate neither scored on the whole validation, nor skipped, nor stopped at its
    minibatch: a run under way, whose cost the candidate's own entry does not hold yet."""
    return not (scored(candidate) or candidate.get("skipped") or candidate.get("stopped"))


def sent_tokens(preds: dict[str, dict]) -> list[int]:
    """Prompt and completion tokens of the calls that reached the endpoint (a cached call
    costs none; lines without ``cached_completion_tokens`` count all completions as sent)."""
    prompt = completion = 0
    for p in preds.values():
        cached_completion = p.get("cached_completion_tokens", 0)
        completion += p.get("completion_tokens", 0) - cached_completion
        prompt += p.get("prompt_tokens", 0) - (p.get("cached_tokens", 0) - cached_completion)
    return [prompt, completion]


def preds_in(folder: Path) -> dict[str, dict]:
    return scored_predictions(folder) if (folder / "predictions.jsonl").is_file() else {}


def budget_text(b: Budget | None) -> str:
    if b is None:
        return ""
    return ", ".join([f"{b.tokens:,} tokens"] * bool(b.tokens) + [f"${b.usd:g}"] * bool(b.usd))
