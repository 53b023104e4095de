"""``hopgraph eval`` and ``hopgraph compare``: a run folder's metrics, and two runs side by side."""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean
from typing import Any

from hopgraph.evals import metrics as m
from hopgraph.evals.stats import Paired, paired, paired_scores
from hopgraph.harness.cost import Price, cost_of, run_cost
from hopgraph.harness.run_folder import (
    RunFolder,
    gold_evidence,
    read_predictions,
    scored_predictions,
)

KS = (1, 3, 5, 10)
MMLB_FORMATS = {"int", "float", "str", "list", "none"}


def score_prediction(pred: dict[str, Any], price: Price | None = None) -> dict[str, float]:
    """Per-question scores: answers, retrieval at each K, cost (USD at ``price``)."""
    golds = pred.get("gold") or []
    answer = pred.get("answer", "") or ""
    out: dict[str, float] = {}
    if golds:
        out["em"] = m.exact_match(answer, golds)
        out["f1"] = m.f1_score(answer, golds)
        out["keyword_em"] = m.keyword_em(answer, golds)
        if str(pred.get("type", "")).lower() in MMLB_FORMATS:
            out["mmlb_acc"] = m.mmlongbench_score(answer, golds[0], pred["type"])
    evidence = gold_evidence(pred)
    retrieved = pred.get("retrieved") or []
    if evidence and "contexts_ids" in pred:  # gold recall of the contexts given to the generator
        out["kept_recall"] = m.recall_at_k(
            pred["contexts_ids"], evidence, len(pred["contexts_ids"])
        )
        out["kept_contexts"] = len(pred["contexts_ids"])
    if (
        "invalid_citations" in pred
    ):  # cited numbers with no context behind them, as the graph read them
        out["invalid_citations"] = len(pred["invalid_citations"])
    elif pred.get("response") and "contexts_ids" in pred:  # a run written before they were kept
        from hopgraph.tools.replies import parse_citations

        _, invalid = parse_citations(pred["response"], len(pred["contexts_ids"]))
        out["invalid_citations"] = len(invalid)
    if evidence:
        for name, fn in m.RETRIEVAL.items():
            for k in KS:
                out[f"{name}@{k}"] = fn(retrieved, evidence, k)
    out["llm_calls"] = pred.get("llm_calls", 0)
    out["prompt_tokens"] = pred.get("prompt_tokens", 0)
    out["completion_tokens"] = pred.get("completion_tokens", 0)
    if price is not None:
        out["usd"] = cost_of(pred, price)["usd"]
    if "budget_stops" in pred:  # the question's token cap ended its method early
        out["budget_stops"] = pred["budget_stops"]
    out["fallbacks"] = pred.get("fallbacks", 0)
    if "empty_replies" in pred:
        out["empty_replies"] = pred["empty_replies"]
    if "cache_hits" in pred:  # calls answered from the response cache (--cache)
        out["cache_hits"] = pred["cache_hits"]
    if "depth" in pred:  # sequential LLM rounds on the critical path
        out["depth"] = pred["depth"]
    out["seconds"] = pred.get("seconds", 0.0)
    # the endpoint's rates in the question's sitting: seconds compare only at equal speed
    out |= {k: float(v) for k, v in (pred.get("speed") or {}).items()}
    summary = pred.get("summary") or {}
    out |= {k: float(v) for k, v in summary.items() if isinstance(v, int | float)}
    return out


SOURCE_CITATION = re.compile(r"\[?\bSource (\d+)\]?")


def cited_response(pred: dict[str, Any]) -> str:
    """The response with its citations as ALCE reads them, [n]: "Source n" and "[Source n]",
    the label LlamaIndex's citation engine puts on its contexts (a 1.5B model under its
    prompt cited so in 21 of 80 replies), are read as [n] too."""
    return SOURCE_CITATION.sub(r"[\1]", pred.get("response", ""))


def citation_metrics(pred: dict[str, Any], texts: dict[str, str], judge: m.Judge) -> dict:
    """ALCE citation recall/precision of one prediction's response."""
    from hopgraph.tools.replies import CITATION, strip_citations

    contexts = pred.get("contexts_ids") or pred.get("retrieved") or []
    pairs = []
    for sentence in m.split_sentences(cited_response(pred)):
        cited = [int(n) for group in CITATION.findall(sentence) for n in group.split(",")]
        passages = [
            texts.get(contexts[i - 1], "") if 1 <= i <= len(contexts) else None for i in cited
        ]  # None: a number with no context behind it (ALCE scores its sentence 0)
        pairs.append((strip_citations(sentence), passages))
    recall, precision = m.citation_scores(pairs, judge)
    return {"citation_recall": recall, "citation_precision": precision}


def aggregate(rows: list[dict[str, float]]) -> dict[str, float]:
    keys = sorted({k for r in rows for k in r})
    return {k: round(mean(r[k] for r in rows if k in r), 4) for k in keys}


def by_template(preds: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Calls, prompt and completion tokens and LLM seconds per question, by prompt template,
    over the questions whose record lists them (runs before they were recorded list none);
    where the server reported its timings, the seconds calls waited for it (in the LLM
    seconds: engine time, not method time) and the prompt tokens its cache gave back."""
    listed = [p["by_template"] for p in preds if "by_template" in p]
    names = sorted({name for t in listed for name in t})
    timed = any("waited_s" in x for t in listed for x in t.values())
    keys = (
        "calls",
        "prompt_tokens",
        "completion_tokens",
        "seconds",
        *(("waited_s", "prompt_reused") if timed else ()),
    )
    return {
        name: {
            key: round(sum(t.get(name, {}).get(key, 0) for t in listed) / len(listed), 3)
            for key in keys
        }
        for name in names
    }


CITATION_SCORES = ("citation_recall", "citation_precision")


def judged_key(pred: dict[str, Any]) -> str:
    """What a question's citation scores depend on besides the judge: its response as its
    citations are read and the numbered contexts its [n] point at. A question answered afresh
    (``--redo``), or a response read otherwise, changes it."""
    contexts = pred.get("contexts_ids") or pred.get("retrieved") or []
    text = json.dumps([cited_response(pred), contexts])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _written_metrics(run_dir: Path) -> dict[str, Any]:
    return RunFolder(run_dir).metrics() or {}


def evaluate_run(
    run_dir: str | Path,
    *,
    judge: m.Judge | None = None,
    kb=None,  # noqa: ANN001
    judge_name: str = "",
    on_judged: Callable[[int, int], None] | None = None,
    price: Price | None = None,
    stages: dict[str, str] | None = None,
    gold_answer: dict[str, dict[str, str]] | None = None,
) -> dict[str, Any]:
    """Score every prediction; write ``metrics.json``; return it. ``stages`` (each question's
    loss stage) and ``gold_answer`` (where each wrong answer's gold answer stood, per template:
    ``evals.stages.where_each_went``) go into every write, so no ``metrics.json`` is left with
    scores and without them. LLM-judged citation scores
    last: a question whose response and contexts are unchanged keeps the scores the last
    judging gave it (a plain re-score keeps them too), and the file is rewritten after each
    question judged, so an interrupted or resumed run judges only what it has not. A
    ``judge_name`` other than the one recorded judges every question afresh. ``on_judged(i,
    n)`` after each of the ``n`` questions judged now. ``price``: each question's cost in USD
    too, and the run's total (``cost``, failed questions included: they were paid for)."""
    run_dir = Path(run_dir)
    preds = list(scored_predictions(run_dir).values())
    ok = [p for p in preds if not p.get("error")]
    old = _written_metrics(run_dir)
    record = old.get("citations") or {}
    if judge is not None and record.get("judge") != judge_name:
        record = {}
    name = judge_name or record.get("judge", "")
    judged: dict[str, str] = {}
    per_question = {p["id"]: score_prediction(p, price) for p in ok}
    for p in ok:
        before = old.get("per_question", {}).get(p["id"], {})
        key = judged_key(p)
        if record.get("questions", {}).get(p["id"]) == key and all(
            k in before for k in CITATION_SCORES
        ):
            per_question[p["id"]] |= {k: before[k] for k in CITATION_SCORES}
            judged[p["id"]] = key

    def write() -> dict[str, Any]:
        by_type: dict[str, list[dict[str, float]]] = defaultdict(list)
        for p in ok:
            by_type[p.get("type") or "all"].append(per_question[p["id"]])
        result = {
            "run": str(run_dir),
            "questions": len(preds),
            "failed": len(preds) - len(ok),
            "with_gold": sum(bool(p.get("gold")) for p in ok),
            "with_gold_evidence": sum(bool(gold_evidence(p)) for p in ok),
            "overall": aggregate(list(per_question.values())) if per_question else {},
            "by_type": {t: aggregate(r) | {"n": len(r)} for t, r in sorted(by_type.items())},
            "by_template": by_template(ok),
            "cost": run_cost(preds, price),
            **({"citations": {"judge": name, "questions": judged}} if judged else {}),
            "per_question": per_question,
            **({"stages": stages} if stages is not None else {}),
            **({"gold_answer": gold_answer} if gold_answer is not None else {}),
        }
        RunFolder(run_dir).write_metrics(result)
        return result

    result = write()
    if judge is None:
        return result
    todo = [p for p in ok if p["id"] not in judged and p.get("response")]
    texts: dict[str, str] = {}
    if todo and kb is not None:
        ids = sorted({i for p in todo for i in (p.get("contexts_ids") or p.get("retrieved") or [])})
        texts = {h["id"]: h["text"] for h in kb.get(ids)}
    for i, p in enumerate(todo, 1):
        per_question[p["id"]] |= citation_metrics(p, texts, judge)
        judged[p["id"]] = judged_key(p)
        result = write()
        if on_judged is not None:
            on_judged(i, len(todo))
    return result


def missing_gold(run_dir: str | Path, kb) -> list[str]:  # noqa: ANN001
    """The gold evidence ids of a run's questions that ``kb`` does not hold (a source removed
    or changed since, or never indexed): retrieval scores count them as missed."""
    preds = read_predictions(Path(run_dir) / "predictions.jsonl")
    ids = sorted({i for p in preds.values() for i in gold_evidence(p)})
    held = {h["id"] for h in kb.get(ids)} if ids else set()
    return [i for i in ids if i not in held]


HEADLINE = (
    "em",
    "f1",
    "keyword_em",
    "kept_recall",
    "kept_contexts",
    "mmlb_acc",
    "recall@5",
    "set_recall@5",
    "ndcg@5",
    "mrr@5",
    "citation_recall",
    "citation_precision",
    "invalid_citations",
    "llm_calls",
    "prompt_tokens",
    "completion_tokens",
    "usd",
    "budget_stops",
    "depth",
    "fallbacks",
    "empty_replies",
    "cache_hits",
    "seconds",
    "prefill_tokens_per_s",
    "decode_tokens_per_s",
    "iterations",
    "hit_cap",
    "planner_repairs",
    "answered_from_graph",
)


def headline(result: dict[str, Any]) -> list[tuple[str, float]]:
    overall = result.get("overall", {})
    return [(k, overall[k]) for k in HEADLINE if k in overall]


def restrict(result: dict[str, Any], ids: set[str]) -> dict[str, Any]:
    """The same metrics recomputed over a subset of questions (to compare runs fairly)."""
    per_question = {q: s for q, s in result["per_question"].items() if q in ids}
    return {
        **result,
        "per_question": per_question,
        "overall": aggregate(list(per_question.values())),
    }


JUDGED = (
    "em",
    "f1",
    "keyword_em",
    "mmlb_acc",
    "kept_recall",
    "recall@5",
    "set_recall@5",
    "citation_recall",
    "citation_precision",
)
"""The answer and evidence metrics ``compare`` tests pairwise by default: the headline's
counts, costs and engine speeds are shown beside them, not judged, unless asked for."""


LOWER_IS_BETTER = {
    "llm_calls",
    "prompt_tokens",
    "completion_tokens",
    "depth",
    "fallbacks",
    "empty_replies",
    "seconds",
    "invalid_citations",
    "hit_cap",
    "planner_repairs",
    "usd",
    "budget_stops",
}
"""Metrics where a smaller value is the better one (costs and faults)."""


@dataclass
class Comparison:
    sizes: list[int]
    """Questions per run."""
    rows: list[tuple[str, list[float | None], list[float | None]]]
    """(metric, each run's value, each run's change from the first run)."""
    unknown: list[str]
    """Metrics asked for that no run has."""
    paired: list[tuple[str, int, Paired]] = field(default_factory=list)
    """(metric, run index, that run against the first on the questions both scored)."""


CACHE_SENSITIVE = {"seconds"}
"""Metrics a reply from the response cache changes without the method doing anything: their
paired tests read only the questions neither run answered from the cache."""


def uncached(per_question: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {q: s for q, s in per_question.items() if not s.get("cache_hits")}


def compare_runs(
    runs: Sequence[str | Path], *, common: bool = False, metrics: list[str] | None = None
) -> Comparison:
    """Runs' metrics side by side with the change from the first run, and the paired tests
    of each against the first; ``common`` rescored on the questions every run finished;
    ``metrics`` default: the headline ones shown, the ``JUDGED`` among them tested."""
    results = [load_metrics(r) for r in runs]
    if common:
        shared = set.intersection(*(set(r["per_question"]) for r in results))
        results = [restrict(r, shared) for r in results]
    if metrics:
        heads = [{k: r["overall"][k] for k in metrics if k in r["overall"]} for r in results]
        unknown = [k for k in metrics if not any(k in h for h in heads)]
    else:
        heads, unknown = [dict(headline(r)) for r in results], []
    rows, tests = [], []
    for k in dict.fromkeys(k for h in heads for k in h):
        values = [h.get(k) for h in heads]
        base = values[0]
        deltas = [
            None if v is None or base is None or i == 0 else v - base for i, v in enumerate(values)
        ]
        rows.append((k, values, deltas))
        if not metrics and k not in JUDGED:
            continue
        for i, r in enumerate(results[1:], 1):
            base_q, other_q = results[0]["per_question"], r["per_question"]
            if k in CACHE_SENSITIVE:  # a reply the cache gave took no time: not a speed-up
                base_q, other_q = uncached(base_q), uncached(other_q)
            _, a, b = paired_scores(base_q, other_q, k)
            if a:
                tests.append((k, i, paired(a, b, lower=k in LOWER_IS_BETTER)))
    return Comparison([len(r["per_question"]) for r in results], rows, unknown, tests)


@dataclass
class Flip:
    """One question whose 0/1 score differs between two runs."""

    id: str
    gold: list[str]
    answers: tuple[str, str]
    calls: tuple[float, float]
    seconds: tuple[float, float]


def flipped(run_a: str | Path, run_b: str | Path, metric: str = "em") -> dict[str, list[Flip]]:
    """The questions both runs finished whose ``metric`` went right -> wrong (``lost``) or
    wrong -> right (``gained``) from A to B, with both answers, the gold and each run's cost."""
    preds = [scored_predictions(r) for r in (run_a, run_b)]
    scores = [load_metrics(r)["per_question"] for r in (run_a, run_b)]
    ids, a, b = paired_scores(scores[0], scores[1], metric)
    out: dict[str, list[Flip]] = {"lost": [], "gained": []}
    for qid, x, y in zip(ids, a, b, strict=True):
        if x == y:
            continue
        pa, pb = preds[0][qid], preds[1][qid]
        flip = Flip(
            qid,
            list(pa.get("gold") or []),
            (pa.get("answer", ""), pb.get("answer", "")),
            (pa.get("llm_calls", 0), pb.get("llm_calls", 0)),
            (pa.get("seconds", 0.0), pb.get("seconds", 0.0)),
        )
        out["gained" if y > x else "lost"].append(flip)
    return out


def load_metrics(run_dir: str | Path) -> dict[str, Any]:
    """``metrics.json``, re-scored when the run has finished questions since it was written (a
    resumed run); the new questions' citation scores then need ``hopgraph eval --citations``."""
    folder = RunFolder(run_dir)
    path, preds = folder.metrics_path, folder.predictions.path
    if path.exists() and not (preds.exists() and preds.stat().st_mtime > path.stat().st_mtime):
        read_predictions(preds)  # warns of a line it could not read (metrics.json left out)
        return folder.metrics() or evaluate_run(run_dir)
    return evaluate_run(run_dir)
