"""How well a MAB-DQA run's page judge told evidence pages from the rest (figures, not a test).

    .venv/bin/python benchmarks/mabdqa_judgements.py runs/mabdqa-bandit [more runs...]

Reads every ``bandit_step`` in the run's traces: the reward s of each judged page, and whether
the page is one of the question's evidence pages. Reports the judgements, how many questions had
an evidence page judged at all, the mean s of evidence and other pages, the share of judgements
at exactly 0.5, and the AUC within questions (the chance that an evidence page outscores another
judged page of the same question, ties counted half)."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from mabdqa_judges import pairs_won  # this folder: the script's own

from hopgraph.harness.run_folder import (
    gold_evidence,
    has_trace,
    read_predictions,
    trace_path,
    trace_records,
)


def judgements(run: Path) -> dict:
    preds = read_predictions(run / "predictions.jsonl")
    gold_s, other_s, wins, pairs, with_gold, questions = [], [], 0.0, 0, 0, 0
    for qid, pred in preds.items():
        trace = trace_path(run, qid)
        if pred.get("error") or not has_trace(trace) or not gold_evidence(pred):
            continue
        custom = [r["data"] for r in trace_records(trace) if r.get("mode") == "custom"]
        steps = [e for e in custom if e.get("event") == "bandit_step"]
        if not steps:
            continue
        questions += 1
        evidence = set(gold_evidence(pred))
        g = [s["s_vlm"] for s in steps if s["page_id"] in evidence]
        o = [s["s_vlm"] for s in steps if s["page_id"] not in evidence]
        gold_s += g
        other_s += o
        with_gold += bool(g)
        won, n = pairs_won(g, o)
        wins += won
        pairs += n
    every = gold_s + other_s
    return {
        "run": str(run),
        "questions": questions,
        "judgements": len(every),
        "questions_with_an_evidence_page_judged": with_gold,
        "mean_s_evidence": round(statistics.mean(gold_s), 3) if gold_s else None,
        "mean_s_other": round(statistics.mean(other_s), 3) if other_s else None,
        "share_at_0.5": round(sum(s == 0.5 for s in every) / len(every), 3) if every else None,
        "auc_within_question": round(wins / pairs, 3) if pairs else None,
    }


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    for arg in sys.argv[1:]:
        print(json.dumps(judgements(Path(arg)), indent=2))
