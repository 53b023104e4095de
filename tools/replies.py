"""Reading model replies, no LLM call: inline citation marks, QD-C's replacements and
subquestions, the page judge's 1-5 score, the complete triplets of a reply cut short. The roles
in ``agents/`` call these; ``eval`` reads stored responses with the same code."""

from __future__ import annotations

import json
import re
from typing import Any

CITATION = re.compile(r"\[(\s*\d+(?:\s*,\s*\d+)*\s*)\]")
_SCORE = re.compile(r"\b([1-5])\b")
_STRING = r'"((?:[^"\\]|\\.)*)"'
_TRIPLET = re.compile(r"\[\s*" + r"\s*,\s*".join([_STRING] * 3) + r"\s*\]")


def parse_citations(text: str, n_contexts: int) -> tuple[list[int], list[int]]:
    """``[1][3]``, ``[1, 3]`` and ``[12]`` alike; numbers outside 1..n are invalid."""
    valid: list[int] = []
    invalid: list[int] = []
    for group in CITATION.findall(text):
        for number in (int(x) for x in group.split(",")):
            bucket = valid if 1 <= number <= n_contexts else invalid
            if number not in bucket:
                bucket.append(number)
    return valid, invalid


def strip_citations(text: str) -> str:
    return re.sub(r"\s+([.,;:!?])", r"\1", CITATION.sub("", text)).strip()


def qdc_subquestions(out: Any, question: str) -> tuple[list[str], list[str], list[dict]]:
    """(subquestions, dropped, rebuilt). Each replacement yields "Is <reference> equivalent to
    <entity>?" and the question after substitution (Sec. 3.2); the open decomposition's
    subquestions follow; duplicates merged. A substituted question the model left out, or
    that lacks the entity, is rebuilt by putting the entity in place of the reference in the
    question (listed in ``rebuilt``), or dropped where the reference is not in the question.
    Dropped: a replacement of a phrase by itself, the equivalence check of a "reference"
    that is a passage's number ("Is [1] equivalent to ...?"), any part with no word in it (a
    copied "..." from the reply format) and the raw question. Such a subquestion carries nothing to
    rerank with, yet its flat scores have the highest entropy, so the budget would give it
    the most contexts."""
    subs, dropped, rebuilt = [], [], []
    for r in out.replacements:
        ref, ent = r.reference.strip(), r.entity.strip()
        if not (_has_word(ref) and _has_word(ent) and ref.casefold() != ent.casefold()):
            dropped.append(f"Is {ref} equivalent to {ent}?")
            continue
        if _SOURCE_MARK.match(ref):  # "[1]" names a passage, not a phrase of the question
            dropped.append(f"Is {ref} equivalent to {ent}?")
        else:
            subs.append(f"Is {ref} equivalent to {ent}?")
        given = r.substituted.strip()
        if _has_word(given) and ent.casefold() in given.casefold():
            subs.append(given)
            continue
        at = question.casefold().find(ref.casefold())
        if at < 0:
            dropped.append(given or f"<{ref} -> {ent} substituted>")
            continue
        made = question[:at] + ent + question[at + len(ref) :]
        rebuilt.append({"given": given, "rebuilt": made})
        subs.append(made.strip())
    for s in (s.strip() for s in out.subquestions):
        (subs if _has_word(s) else dropped).append(s)
    raw = question.strip()
    dropped += [s for s in subs if s == raw]
    return [s for s in dict.fromkeys(subs) if s != raw], dropped, rebuilt


_SOURCE_MARK = re.compile(r"^\W*(?:passage|source|context)?\s*\d+\W*$", re.IGNORECASE)


def _has_word(text: str) -> bool:
    return re.search(r"[^\W_]", text) is not None


def parse_score(reply: str) -> int | None:
    """The judgement 1-5: the last such number on the reply's last non-empty lines."""
    for line in reversed([ln for ln in reply.strip().splitlines() if ln.strip()][-3:]):
        found = _SCORE.findall(line)
        if found:
            return int(found[-1])
    return None


def complete_triplets(raw: str) -> list[list[str]]:
    """Every complete ``["s", "r", "o"]`` in a JSON reply, also one cut off mid-list (a
    reply that reached max_tokens): what was written whole is kept."""
    return [[json.loads(f'"{part}"') for part in m.groups()] for m in _TRIPLET.finditer(raw)]
