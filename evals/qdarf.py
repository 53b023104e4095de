"""QDARF preference data (qdrag.txt, Eq. 1): several sampled QD-R plans per training question,
each scored by the recall of gold contexts by its subquestions; the best and the worst plan
make one DPO pair in the ``{"prompt", "chosen", "rejected"}`` form TRL's DPOTrainer reads."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hopgraph.agents.qdrag import PLAN_QDR, answer_from, plan_qdr
from hopgraph.config import Context
from hopgraph.evals.datasets import Question
from hopgraph.tools.qdrag import parse_plan, ready, resolved
from hopgraph.tools.retrieval import search


def plan_reward(plan: list[dict[str, str]], gold: list[str], ctx: Context, k: int) -> float:
    """Recall of gold contexts by the union of each subquestion's top-k retrieval (Eq. 1), with
    the plan run as QD-R runs it at inference: wave by wave, each ``<Ans_of_Qi>`` filled with
    the answer to Qi from its own top ``qdrag_budget`` contexts, so a dependent subquestion
    searches for what it will really ask. A plan that cannot be resolved raises ``PlanError``."""
    subs = parse_plan(plan)
    if not gold:
        return 0.0
    needed = {d for s in subs for d in s["depends"]}  # only answers a later question uses
    answers: dict[str, str] = {}
    found: set[str] = set()
    while wave := ready(subs, answers):
        for sub in wave:
            query = resolved(sub, answers)
            hits = search(query, ctx, k=k, role="qdarf")
            found |= {h["id"] for h in hits}
            answers[sub["id"]] = answer_from(query, hits[: ctx.qdrag_budget], ctx) if (
                sub["id"] in needed
            ) else ""  # fmt: skip
    return len(found & set(gold)) / len(set(gold))


def preference_pairs(
    questions: list[Question],
    ctx: Context,
    *,
    samples: int = 4,
    temperature: float = 0.8,
    k: int = 5,
    on_question: Callable[[Question, dict[str, Any]], None] | None = None,
) -> list[dict[str, str]]:
    """One pair per question whose best plan beats its worst; unparsable samples are dropped."""
    pairs = []
    for q in questions:
        scored = []
        for _ in range(samples):
            try:
                plan = plan_qdr(q.question, ctx, temperature=temperature)
                scored.append((plan_reward(plan, q.evidence, ctx, k), plan))
            except ValueError:  # not JSON, not a plan, a cycle: this sample is dropped
                continue
        info: dict[str, Any] = {"samples": len(scored), "rewards": [r for r, _ in scored]}
        if len(scored) >= 2:
            best = max(scored, key=lambda x: x[0])
            worst = min(scored, key=lambda x: x[0])
            if best[0] > worst[0]:
                pairs.append(
                    {
                        "prompt": PLAN_QDR.render(ctx, question=q.question, picture=False),
                        "chosen": json.dumps({"subquestions": best[1]}),
                        "rejected": json.dumps({"subquestions": worst[1]}),
                        "id": q.id,
                        "reward_chosen": best[0],
                        "reward_rejected": worst[0],
                    }
                )
        if on_question:
            on_question(q, info)
    return pairs


def write_pairs(pairs: list[dict[str, str]], out: str | Path) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs), encoding="utf-8"
    )
    return out
