"""Metrics of the papers: answer EM/F1 (SQuAD), QDRAG's keyword EM, MMLongBench-Doc's answer
scoring by format, retrieval Recall/Precision/NDCG/MRR@K and Set-Recall@K, and ALCE's citation
recall and precision."""

from __future__ import annotations

import ast
import math
import re
import string
from collections import Counter
from collections.abc import Callable, Sequence

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


def _f1(prediction: str, gold: str) -> float:
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
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


_NUMBER = re.compile(r"-?\d[\d,]*\.?\d*(?:e-?\d+)?")


def _number(text: str) -> float | None:
    match = _NUMBER.search(str(text).replace(" ", ""))
    if not match:
        return None
    try:
        return float(match.group(0).replace(",", ""))
    except ValueError:
        return None


def _as_list(text: str) -> list[str]:
    try:
        value = ast.literal_eval(str(text))
        if isinstance(value, list | tuple):
            return [str(v) for v in value]
    except (ValueError, SyntaxError):
        pass
    return [p.strip() for p in re.split(r",|;|\n", str(text)) if p.strip()]


def mmlongbench_score(prediction: str, gold: str, answer_format: str) -> float:
    """MMLongBench-Doc scoring: Int exact, Float within 1% (relative), Str by ANLS, List by
    element-wise ANLS matching over the longer list, None ("Not answerable") by phrase."""
    fmt = answer_format.lower()
    if fmt == "none" or normalize_answer(gold) == "not answerable":
        return float("not answerable" in normalize_answer(prediction))
    if fmt == "int":
        p, g = _number(prediction), _number(gold)
        return float(p is not None and g is not None and p == g)
    if fmt == "float":
        p, g = _number(prediction), _number(gold)
        return float(p is not None and g is not None and math.isclose(p, g, rel_tol=0.01))
    if fmt == "list":
        preds, golds = _as_list(prediction), _as_list(gold)
        if not golds:
            return float(not preds)
        unused = list(preds)
        matched = 0.0
        for g in golds:
            best = max(unused, key=lambda p, g=g: anls(p, g), default=None)
            if best is not None and anls(best, g) > 0:
                matched += anls(best, g)
                unused.remove(best)
        return matched / max(len(golds), len(preds))
    return anls(prediction, gold)


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
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


Judge = Callable[[str, str], bool]
"""judge(evidence, claim) -> whether the evidence supports the claim."""


def citation_scores(
    sentences: Sequence[tuple[str, Sequence[str]]], judge: Judge
) -> tuple[float, float]:
    """ALCE citation recall and precision for (statement, cited passages texts) pairs.

    Recall: a statement counts when the concatenation of its citations supports it.
    Precision: a citation counts when its statement is supported and the citation either
    supports it alone or is needed (the other citations alone do not support it)."""
    if not sentences:
        return 0.0, 0.0
    recall_hits = 0
    correct = total = 0
    for statement, cited in sentences:
        supported = bool(cited) and judge("\n".join(cited), statement)
        recall_hits += supported
        for i, passage in enumerate(cited):
            total += 1
            if not supported:
                continue
            others = [c for j, c in enumerate(cited) if j != i]
            if judge(passage, statement) or not (others and judge("\n".join(others), statement)):
                correct += 1
    return recall_hits / len(sentences), (correct / total if total else 0.0)


# -- cost --------------------------------------------------------------------------------------
def critical_path_depth(intervals: Sequence[tuple[float, float]]) -> int:
    """The number of sequential LLM rounds: the longest chain of calls in which each starts
    after the previous one ended (calls that overlap run in one round)."""
    calls = sorted(intervals, key=lambda iv: iv[1])
    depth: list[int] = []
    for i, (start, _) in enumerate(calls):
        before = [depth[j] for j in range(i) if calls[j][1] <= start]
        depth.append(1 + max(before, default=0))
    return max(depth, default=0)
