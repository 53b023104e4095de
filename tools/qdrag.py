"""QDRAG's LLM-free machinery: the entropy budget over reranking scores and QD-R plans with
``<Ans_of_Qi>`` placeholders (qdrag.txt, Context Reranking / Adaptive Budget Allocator / QD-R)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from typing_extensions import TypedDict

PLACEHOLDER = re.compile(r"<\s*Ans_of_(Q\d+)\s*>", re.I)


class PlanError(ValueError):
    """A QD-R plan that cannot be resolved: unknown placeholder, cycle, bad ids."""


def entropy(scores: Sequence[float]) -> float:
    """E(Q_i) = −Σ P log P with P(C|Q_i) = softmax over S(C|Q_i)."""
    if not scores:
        return 0.0
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    total = sum(exps)
    return -sum((e / total) * math.log(e / total) for e in exps if e > 0)


def allocate(entropies: Mapping[str, float], budget: int) -> dict[str, int]:
    """n(Q_i) = N · E(Q_i) / Σ E, rounded by largest remainder (ties to the earlier question),
    so the (sub)questions share exactly N slots: with more questions than N, or a near-zero
    entropy, a question may keep none. Equal shares when every entropy is zero."""
    keys = list(entropies)
    if not keys:
        return {}
    budget = max(0, budget)
    total = sum(entropies.values())
    raw = {k: budget * (entropies[k] / total if total > 0 else 1 / len(keys)) for k in keys}
    alloc = {k: math.floor(v) for k, v in raw.items()}
    while sum(alloc.values()) < budget:  # hand out the rest by largest remainder
        k = max(keys, key=lambda k: (raw[k] - alloc[k], -keys.index(k)))
        alloc[k] += 1
    return alloc


def equal_split(keys: Sequence[str], budget: int) -> dict[str, int]:
    """Without the adaptive allocator (Table 6 "S" off): the same share for every question."""
    return allocate(dict.fromkeys(keys, 1.0), budget)


def keep_contexts(scores: Mapping[str, Mapping[str, float]], alloc: Mapping[str, int]) -> list[str]:
    """The N reserved contexts: each Q_i in turn keeps its top n(Q_i) by S(C|Q_i) among those no
    earlier question kept, so a context two questions share is kept once and the slot it frees
    goes to the next-best context of the later question. Slots a question cannot fill (its
    candidates were all kept already) go to the best remaining contexts by their highest
    S(C|Q_i): the budget is N distinct contexts whenever N candidates exist."""
    kept: list[str] = []
    for q, n in alloc.items():
        ranked = sorted(scores.get(q, {}).items(), key=lambda kv: -kv[1])
        kept += [cid for cid, _ in ranked if cid not in kept][:n]
    best: dict[str, float] = {}
    for per_q in scores.values():
        for cid, s in per_q.items():
            best[cid] = max(s, best.get(cid, float("-inf")))
    rest = sorted((c for c in best if c not in kept), key=lambda c: -best[c])
    return kept + rest[: max(0, sum(alloc.values()) - len(kept))]


class Planned(TypedDict):
    """A subquestion as planned, the one shape a plan has from parsing to the graph's state.
    QD-R's may hold ``<Ans_of_Qi>`` placeholders for the answers of the subquestions it
    ``depends`` on; QD-C's depend on none."""

    id: str
    question: str
    depends: list[str]


def resolved(sub: Planned, answers: Mapping[str, str]) -> str:
    """The subquestion with each ``<Ans_of_Qi>`` filled by Qi's answer (unknown ones kept)."""
    return PLACEHOLDER.sub(lambda m: answers.get(m.group(1).upper(), m.group(0)), sub["question"])


def parse_plan(items: Sequence[Mapping[str, str]]) -> list[Planned]:
    """Validate a QD-R plan: unique ids, placeholders that name earlier-or-later plan ids, no
    cycles. Returned in an order where every dependency comes first."""
    subs: dict[str, Planned] = {}
    for n, item in enumerate(items, 1):
        qid = str(item.get("id") or f"Q{n}").upper()
        text = str(item.get("question", "")).strip()
        if not text:
            raise PlanError(f"subquestion {qid} is empty")
        if qid in subs:
            raise PlanError(f"subquestion id {qid} appears twice")
        depends = [d.upper() for d in PLACEHOLDER.findall(text)]
        subs[qid] = {"id": qid, "question": text, "depends": depends}
    for sub in subs.values():
        unknown = [d for d in sub["depends"] if d not in subs]
        if unknown:
            raise PlanError(
                f"{sub['id']} refers to <Ans_of_{unknown[0]}>, which is not in the plan"
            )
    order: list[Planned] = []
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(qid: str, path: list[str]) -> None:
        if state.get(qid) == 2:
            return
        if state.get(qid) == 1:
            raise PlanError(f"the plan has a cycle: {' -> '.join([*path, qid])}")
        state[qid] = 1
        for dep in subs[qid]["depends"]:
            visit(dep, [*path, qid])
        state[qid] = 2
        order.append(subs[qid])

    for qid in subs:
        visit(qid, [])
    return order


def ready(plan: Sequence[Planned], answers: Mapping[str, str]) -> list[Planned]:
    """Unanswered subquestions whose dependencies are all answered (one parallel wave)."""
    return [s for s in plan if s["id"] not in answers and all(d in answers for d in s["depends"])]
