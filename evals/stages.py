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


def _words(text: str) -> str:
    """Lower-case words and numbers (any script) between single spaces, padded: whole-word
    matching."""
    return " " + " ".join(re.findall(r"[^\W_]+", text.lower())) + " "


GOLD_ANSWER = ("wrote", "read")
"""What a template did with a wrong answer's gold answer: a reply of it held the answer's words
(it wrote them), or only a prompt of it did (it read them and wrote them nowhere: where that
template writes the answer on, as a note or a short answer does, it dropped them)."""


def gold_answer_held(q: QuestionRecord) -> dict[str, str] | None:
    """Where a wrong answer's gold answer (its words, case and punctuation folded) went along
    its calls: each template whose prompts or replies held it -> "wrote" (a reply held it) or
    "read" (only a prompt did), in the order each first held it; {} where no call saw it.
    None for a question answered right, unscored, without traced calls, or whose gold is only
    yes or no (words of the
    prompts' instructions) or words of the question (a comparison names both choices): every
    prompt would hold it. The stages follow the gold evidence; this follows the answer, e.g.
    MMAPG's examiner writing it and the notes written from its findings leaving it out."""
    if q.right is not False or not q.trace.calls:
        return None
    asked = _words(q.question)
    golds = [
        w for g in q.gold if (w := _words(g)) not in asked and w.strip() not in ("", "yes", "no")
    ]
    if not golds:
        return None

    def held(text: object) -> bool:
        return any(g in _words(str(text or "")) for g in golds)

    out: dict[str, str] = {}
    for c in q.trace.calls:
        prompt = " ".join(str(m.get("content", "")) for m in c.messages)
        if held(c.reply):
            out[c.template] = GOLD_ANSWER[0]
        elif out.get(c.template) != GOLD_ANSWER[0] and held(prompt):
            out[c.template] = GOLD_ANSWER[1]
    return out


def gold_answer_table(held: Iterable[dict[str, str]]) -> dict[str, Counter]:
    """Template -> how many wrong answers' gold answer it wrote and only read (``GOLD_ANSWER``),
    over what ``gold_answer_held`` placed, in the order templates first appear."""
    table: dict[str, Counter] = {}
    for one in held:
        for template, did in one.items():
            table.setdefault(template, Counter())[did] += 1
    return table


def gold_answer_trail(held: dict[str, str]) -> str:
    """One question's ``gold_answer_held`` in words: "T wrote it → U read it only"."""
    steps = [
        f"{t} {'wrote it' if did == GOLD_ANSWER[0] else 'read it only'}" for t, did in held.items()
    ]
    return " → ".join(steps) or "in no prompt or reply"


def where_each_went(
    run: RunRecord,
) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """Each answered question's stage (``loss_stage``) and, for each wrong answer it can
    place, where its gold answer stood (``gold_answer_held``): one pass over the
    traces."""
    stages: dict[str, str] = {}
    held: dict[str, dict[str, str]] = {}
    for q in run.questions():
        stages[q.id] = loss_stage(q)
        if (h := gold_answer_held(q)) is not None:
            held[q.id] = h
    return stages, held


def stage_of_each(run: RunRecord) -> dict[str, str]:
    """Each answered question's stage (``loss_stage``), by id."""
    return {q.id: loss_stage(q) for q in run.questions()}


def stage_counts(stages: Iterable[str]) -> Counter:
    """How many questions lie at each stage, in ``STAGES`` then ``APART`` order."""
    found = Counter(stages)
    return Counter({s: found[s] for s in (*STAGES, *APART) if found[s]})
