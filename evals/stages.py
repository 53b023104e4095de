"""Where each question was lost: the first stage of its evidence's path that failed, read from
its typed record (``evals.run_record``). A wrong answer is classed as gold evidence never
retrieved, retrieved but not kept for the answer, kept but absent from the prompts that wrote
the answer (the last call of each template after the last search: ``calls_after_last_search``),
or present there and answered wrong; a question answered right is "right" whatever it held.
Questions without gold evidence, or without a gold answer, are counted apart. This turns
"method A loses" into "A held the gold in N of its losses and answered wrong"."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from hopgraph.evals.run_record import QuestionRecord, RunRecord

STAGES = (
    "not retrieved",
    "retrieved, not kept",
    "kept, not in the answer's prompt",
    "in the prompt, answered wrong",
    "right",
)
"""The stages of a question with gold evidence and a gold answer, in the order they fail."""
APART = ("wrong, no gold evidence", "right, no gold evidence", "no gold answer")
"""Questions the stages cannot place: no gold evidence ids, or no gold answer at all."""
NEEDLE = 80
"""Characters of a passage's start looked for in a prompt (whitespace folded)."""


def _folded(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def loss_stage(q: QuestionRecord) -> str:
    """The first stage at which ``q``'s gold evidence went missing (``STAGES``; ``APART``
    where it cannot be placed). All gold must pass a stage: one hop of two not retrieved is
    "not retrieved"."""
    if q.right is None:
        return APART[2]
    evidence = q.evidence()
    gold = {e.id: e for e in evidence if e.gold}
    wanted = q.gold_held(evidence)
    if not wanted:
        return APART[1] if q.right else APART[0]
    if q.right:
        return STAGES[4]
    retrieved = set(q.prediction.get("retrieved") or []) | {e.id for e in evidence if e.retrieved}
    if any(g not in retrieved and not (g in gold and gold[g].kept) for g, _ in wanted):
        return STAGES[0]
    if any(not (g in gold and gold[g].kept) for g, _ in wanted):
        return STAGES[1]
    prompts = _folded(
        "\n".join(
            str(m.get("content") if isinstance(m.get("content"), str) else m.get("content", ""))
            for c in q.trace.calls_after_last_search()
            for m in c.messages
        )
    )
    if q.trace.calls and any(
        gold[g].text and _folded(gold[g].text)[:NEEDLE] not in prompts for g, _ in wanted
    ):
        return STAGES[2]
    return STAGES[3]


def stage_of_each(run: RunRecord) -> dict[str, str]:
    """Each answered question's stage (``loss_stage``), by id."""
    return {q.id: loss_stage(q) for q in run.questions()}


def stage_counts(stages: Iterable[str]) -> Counter:
    """How many questions lie at each stage, in ``STAGES`` then ``APART`` order."""
    found = Counter(stages)
    return Counter({s: found[s] for s in (*STAGES, *APART) if found[s]})
