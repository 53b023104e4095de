"""Metrics of the papers: answer EM/F1 (SQuAD), QDRAG's keyword EM, MMLongBench-Doc's answer
scoring by format, retrieval Recall/Precision/NDCG/MRR@K and Set-Recall@K, and ALCE's citation
recall and precision."""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Callable, Sequence

from hopgraph import pysyntax

# -- answers (SQuAD) -------------------------------------------------------------------------------
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in str(text).lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in golds))


_CLOSED = {"yes", "no", "noanswer"}


def _f1(prediction: str, gold: str) -> float:
    """Token F1 with HotpotQA's official rule: where either side is yes, no or noanswer, only
    the same word scores (SQuAD would give "yes it is" half credit against "yes")."""
    p, g = normalize_answer(prediction), normalize_answer(gold)
    if (p in _CLOSED or g in _CLOSED) and p != g:
        return 0.0
    pred, ref = p.split(), g.split()
    common = sum((Counter(pred) & Counter(ref)).values())
    if not pred or not ref:
        return float(pred == ref)
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, golds: Sequence[str]) -> float:
    return max((_f1(prediction, g) for g in golds), default=0.0)


def keyword_em(prediction: str, golds: Sequence[str]) -> float:
    """QDRAG's keyword EM: a normalised gold answer occurs, as whole words, in the prediction."""
    pred = f" {normalize_answer(prediction)} "
    return float(any(g and f" {g} " in pred for g in map(normalize_answer, golds)))


# -- MMLongBench-Doc answers by format -------------------------------------------------------------
def levenshtein(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def anls(prediction: str, gold: str, threshold: float = 0.5) -> float:
    """1 - normalised Levenshtein distance, 0 when the distance reaches ``threshold``."""
    p, g = " ".join(str(prediction).lower().split()), " ".join(str(gold).lower().split())
    if not p and not g:
        return 1.0
    dist = levenshtein(p, g) / max(len(p), len(g))
    return 1.0 - dist if dist < threshold else 0.0


def _clean(text: str) -> str:
    """MMLongBench-Doc's string cleaning: lower case, a trailing unit word (mile(s), million)
    and bracketed asides dropped, outer quotes, a leading ``$`` and a trailing ``%`` removed."""
    s = str(text).lower().strip()
    for unit in ("miles", "mile", "million"):
        if s.endswith(unit):
            s = s[: -len(unit)].strip()
            break
    s = re.sub(r"\s*\([^)]*\)", "", s).strip()
    s = re.sub(r"^['\"]|['\"]$", "", s).strip()
    return s.lstrip("$").strip().rstrip("%").strip()


_EXACT = (
    re.compile(r"\b\d+(-\d+|\s\d+)?\b"),  # a phone number
    re.compile(r"\b\d{4}[-\s]\d{2}[-\s]\d{2}\b"),  # YYYY-MM-DD
    re.compile(r"\b\d{4}[-\s]\d{2}\b"),  # YYYY-MM
    re.compile(r"[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}"),  # an e-mail address
)


def _needs_exact(gold: str) -> bool:
    """Golds that only an exact match answers: URLs, code files, page names, times, phone
    numbers, dates and e-mail addresses (the benchmark's list)."""
    return (
        "https://" in gold
        or gold.endswith((".py", "ipynb"))
        or gold.startswith("page")
        or "a.m." in gold
        or "p.m." in gold
        or any(p.fullmatch(gold) for p in _EXACT)
    )


def _float(text: str) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def _decimals(x: float) -> int:
    text = str(x)
    return len(text.split(".")[-1]) if "." in text else 3


def _float_equal(gold: float, pred: float) -> bool:
    """The benchmark's float rule: the gold, or the gold x100 or /100 (a percentage written
    either way), within 1 % relative, or equal when both are rounded to the precision the
    shorter of the two is written with (at least 2 decimals)."""
    for g in (gold / 100, gold, gold * 100):
        if math.isclose(g, pred, rel_tol=0.01):
            return True
        digits = max(min(_decimals(pred), _decimals(g)), 2)
        if round(pred, digits) == round(g, digits):
            return True
    return False


def _as_list(text: str) -> list[str]:
    """A list answer: a Python literal where it is one; otherwise our short answer split at
    commas, semicolons and lines (our stand-in for the benchmark's LLM extraction step)."""
    if str(text).strip().startswith("["):
        try:
            value = pysyntax.literal(str(text).strip())
            if isinstance(value, list | tuple):
                return [str(v) for v in value]
        except (ValueError, SyntaxError):
            pass
    return [p.strip() for p in re.split(r",|;|\n", str(text)) if p.strip()]


def mmlongbench_score(prediction: str, gold: str, answer_format: str) -> float:
    """MMLongBench-Doc's rule-based scoring by answer format (its eval_score): an Int is
    int(float(answer)) against int(gold); a Float is cleaned and compared by the float rule
    above; a Str or None is cleaned and scored by ANLS, or exactly where the gold is a date,
    URL, e-mail, phone number and the like; a List scores 0 unless it has as many items as the
    gold, then (sorted, cleaned) exact for numbers and exact-match golds, else the worst ANLS
    of the pairs. The benchmark first has GPT-4o extract a short answer; ours is the agent's
    own short answer."""
    fmt = answer_format.lower()
    if fmt == "int":
        pi, gi = _float(str(prediction).strip()), _float(str(gold).strip())
        return float(pi is not None and gi is not None and int(pi) == int(gi))
    if fmt == "float":
        pf, gf = _float(_clean(prediction)), _float(_clean(gold))
        return float(pf is not None and gf is not None and _float_equal(gf, pf))
    if fmt == "list":
        golds, preds = _as_list(gold), _as_list(prediction)
        if len(golds) != len(preds) or not golds:
            return 0.0
        golds, preds = sorted(map(_clean, golds)), sorted(map(_clean, preds))
        if _float(golds[0]) is not None or _needs_exact(golds[0]):
            return float("-".join(golds) == "-".join(preds))
        return min(anls(p, g) for g, p in zip(golds, preds, strict=True))
    g, p = _clean(gold), _clean(prediction)  # Str, and None ("Not answerable")
    return float(g == p) if _needs_exact(g) else anls(p, g)


# -- retrieval -------------------------------------------------------------------------------------
def recall_at_k(retrieved: Sequence[str], gold: Sequence[str], k: int) -> float:
    gold_set = set(gold)
    return len(gold_set & set(retrieved[:k])) / len(gold_set) if gold_set else 0.0


def precision_at_k(retrieved: Sequence[str], gold: Sequence[str], k: int) -> float:
    return len(set(gold) & set(retrieved[:k])) / k if k else 0.0


def set_recall_at_k(retrieved: Sequence[str], gold: Sequence[str], k: int) -> float:
    """1 when every gold item is in the top k (GRAIL's Set-Rec@K, HotpotQA's 'both gold')."""
    return float(bool(gold) and set(gold) <= set(retrieved[:k]))


def ndcg_at_k(retrieved: Sequence[str], gold: Sequence[str], k: int) -> float:
    gold_set = set(gold)
    dcg = sum(1 / math.log2(i + 2) for i, r in enumerate(retrieved[:k]) if r in gold_set)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(gold_set), k)))
    return dcg / ideal if ideal else 0.0


def mrr_at_k(retrieved: Sequence[str], gold: Sequence[str], k: int) -> float:
    gold_set = set(gold)
    for i, r in enumerate(retrieved[:k]):
        if r in gold_set:
            return 1 / (i + 1)
    return 0.0


RETRIEVAL = {
    "recall": recall_at_k,
    "precision": precision_at_k,
    "ndcg": ndcg_at_k,
    "mrr": mrr_at_k,
    "set_recall": set_recall_at_k,
}


# -- citations (ALCE) ------------------------------------------------------------------------------
_LEADING_CITATIONS = re.compile(r"^((?:\[\s*\d+(?:\s*,\s*\d+)*\s*\]\s*)+)[.!?]?\s*")


def split_sentences(text: str) -> list[str]:
    """Sentences by pysbd's rules (abbreviations such as "J.", "Jr." and "Mr." end none; no
    model to download). Citations written after a sentence's full stop ("... Mr. Burns. [1]
    He ...") open the next piece there; they stay with the sentence they follow."""
    import pysbd

    out: list[str] = []
    for piece in pysbd.Segmenter(language="en", clean=False).segment(text.strip()):
        piece = piece.strip()
        lead = _LEADING_CITATIONS.match(piece)
        if out and lead:
            out[-1] = f"{out[-1]} {lead.group(1).strip()}"
            piece = piece[lead.end() :].strip()
        if piece:
            out.append(piece)
    return out


Judge = Callable[[str, str], bool]
"""judge(evidence, claim) -> whether the evidence supports the claim."""

MAX_CITATIONS = 3
"""ALCE reads at most the first three citations of a sentence."""


def citation_scores(
    sentences: Sequence[tuple[str, Sequence[str | None]]], judge: Judge
) -> tuple[float, float]:
    """ALCE citation recall and precision for (statement, cited passages' texts) pairs, where
    None stands for a citation with no passage behind it (its number is out of range).

    Recall: a statement counts when the concatenation of its first three citations supports
    it; none, or one out of range, scores 0. Precision: a citation counts when its statement
    is supported and the citation either supports it alone or is needed (the other citations
    alone do not support it); the denominator holds the citations read, those of sentences
    whose citations are all in range (a sentence with one out of range adds none, as in ALCE)."""
    if not sentences:
        return 0.0, 0.0
    recall_hits = 0
    correct = total = 0
    for statement, cited in sentences:
        if not cited or None in cited:
            continue
        passages = [c for c in cited if c is not None][:MAX_CITATIONS]
        total += len(passages)
        supported = judge("\n".join(passages), statement)
        recall_hits += supported
        if not supported:
            continue
        if len(passages) == 1:
            correct += 1
            continue
        for i, passage in enumerate(passages):
            others = [c for j, c in enumerate(passages) if j != i]
            if judge(passage, statement) or not judge("\n".join(others), statement):
                correct += 1
    return recall_hits / len(sentences), (correct / total if total else 0.0)
