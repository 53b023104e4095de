"""MAB-DQA's batched Thompson sampling (``mabdqa_batch = b``, ours, not the paper's): page recall
and judgement rounds for b = 1, 2, 4 on the same questions, from one recorded b = 1 run.

    .venv/bin/python benchmarks/mabdqa_batch.py benchmarks/results/mmlongbench/mabdqa-bandit \\
        --kb runs/mmlb-kb --out benchmarks/results/mmlongbench/batch

For each question of the run whose first walk is known (read from its trace, and kept in
``<out>/walks.json`` because traces are not committed; ``--keep-walks`` only does that, and
benchmarks/mabdqa_runs.sh runs it after each sitting), the hypergraph is rebuilt from the
recorded aspects, and the first walk (m judgements against the raw question, the run's seed and
Context) is run again with each b. A page judged in the recorded first walk keeps its recorded
s_vlm: the judge is one forward pass at temperature 0. Any other page is judged live, by the
same model and template (``--prompts DIR`` when the template has changed since the run: the
script refuses any other), and saved in ``<out>/judgements.json``, so a re-run resumes and a
fresh clone re-checks the table without an LLM. b = 1 replayed should reproduce the recorded
top 5 (``reproduced``); the trace rounds s_vlm to 4 places, so a near-tie may flip.

Depth: a question's first pass is aspects → ceil(m / b) judgement rounds → question
reflection → answer → answer reflection, so its critical path is rounds + 4 LLM calls (plus a
re-entry's rounds when the answer reflection sends HRRA back)."""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from hopgraph.agents import mabdqa as roles
from hopgraph.evals.metrics import recall_at_k
from hopgraph.evals.stats import sign_counts as sign_test
from hopgraph.graphs.mabdqa import hypergraph_over
from hopgraph.harness.run_folder import (
    RunFolder,
    has_trace,
    read_predictions,
    trace_path,
    trace_records,
)
from hopgraph.presentation.results import fmt
from hopgraph.prompts import prompts_for, sha256_file
from hopgraph.questions.datasets import read_questions
from hopgraph.settings.mabdqa import MABDQAContext as Context
from hopgraph.tools.mabdqa.bandit import bandit_retrieve
from hopgraph.tools.mabdqa.page_vectors import document_pages
from hopgraph.tools.retrieval import knowledge_base

BATCHES = (1, 2, 4)
KS = (1, 3, 5)


def first_walk(trace: Path) -> tuple[list[str], dict[str, float], list[str]]:
    """The recorded first walk: the arms' subqueries, s_vlm per page id, and the ranking."""
    judged: dict[str, float] = {}
    for record in trace_records(trace):
        event = record.get("data", {}) if record.get("mode") == "custom" else {}
        if event.get("event") == "bandit_step":
            judged[event["page_id"]] = event["s_vlm"]
        elif event.get("event") == "hypergraph":
            subqueries = event["subqueries"]
        elif event.get("event") == "retrieval" and event.get("role") == "mabdqa_bandit":
            return subqueries, judged, event["ids"]
    raise ValueError(f"{trace}: no mabdqa_bandit retrieval (not a bandit run?)")


def recorded_walks(run: Path, out: Path, predictions: dict[str, dict]) -> dict[str, dict]:
    """Each answered question's first walk, read from the run's traces while they are on disk
    and kept in ``<out>/walks.json`` (traces are not committed), so a fresh clone can replay
    them. A kept walk whose answer's code fingerprint is not the record's any more is dropped."""
    path = out / "walks.json"
    kept = json.loads(path.read_text()) if path.exists() else {}
    walks = {
        qid: w
        for qid, w in kept.items()
        if qid in predictions and w["code"] == predictions[qid].get("code")
    }
    for qid, pred in predictions.items():
        trace = trace_path(run, qid)
        if not pred.get("error") and has_trace(trace):
            subqueries, judged, ranking = first_walk(trace)
            walks[qid] = {
                "code": pred.get("code"),
                "subqueries": subqueries,
                "judged": judged,
                "ranking": ranking,
            }
    path.write_text(json.dumps(walks, indent=1, sort_keys=True) + "\n")
    return walks


def replay(run: Path, ctx: Context, out: Path, batches: tuple[int, ...] = BATCHES) -> dict:
    manifest = RunFolder(run).manifest()
    questions = {q.id: q for q in read_questions(manifest["questions"])[0]}
    predictions = read_predictions(run / "predictions.jsonl")
    walks = recorded_walks(run, out, predictions)
    cache_path = out / "judgements.json"
    cache: dict[str, dict[str, float]] = (
        json.loads(cache_path.read_text()) if cache_path.exists() else {}
    )
    kb = knowledge_base(ctx)
    rows = []
    for qid, walk_of_run in walks.items():
        q = questions[qid]
        arms_of_run, recorded = walk_of_run["subqueries"], walk_of_run["judged"]
        recorded_ranking = walk_of_run["ranking"]
        pages = document_pages(kb, q.doc, ctx.page_embedder)
        atoms = arms_of_run if ctx.mabdqa_atoms_only else arms_of_run[:-1]
        h = hypergraph_over(kb, atoms, pages, ctx)
        assert h.subqueries == arms_of_run, (qid, h.subqueries, arms_of_run)
        ids = [p["id"] for p in pages.pages]
        live = cache.setdefault(qid, {})

        def judge(p: int, q=q, live=live, ids=ids, recorded=recorded, pages=pages) -> float:  # noqa: ANN001
            pid = ids[p]
            if pid in recorded:
                return recorded[pid]
            if pid not in live:
                live[pid] = round(roles.judge_page(q.question, pages.pages[p], ctx), 4)
                cache_path.write_text(json.dumps(cache, indent=1, sort_keys=True))
            return live[pid]

        row = {"id": qid, "doc": q.doc, "evidence": q.evidence}
        for b in batches:
            walk = bandit_retrieve(
                h,
                judge,
                m=ctx.mabdqa_m,
                alpha=ctx.mabdqa_alpha,
                beta=ctx.mabdqa_beta,
                lam=ctx.mabdqa_lambda,
                seed=ctx.mabdqa_seed,
                batch=b,
                workers=1,
            )
            ranking = [ids[p] for p in walk.ranking]
            if b == 1:  # the recorded s_vlm are rounded to 4 places: near-ties may flip
                row["reproduced"] = ranking[:5] == recorded_ranking[:5]
            row[f"b{b}"] = {
                **{f"recall@{k}": recall_at_k(ranking, q.evidence, k) for k in KS},
                "rounds": max((s["round"] for s in walk.steps), default=0),
                "judged": len(walk.judged),
                "live": sum(ids[p] not in recorded for p in walk.judged),
            }
        rows.append(row)
        print(qid, {b: row[f"b{b}"]["recall@3"] for b in batches}, flush=True)
    return summarise(rows, manifest, batches) | {
        "m": ctx.mabdqa_m,
        "answered": len(predictions),
        "code": sorted({str(w["code"]) for w in walks.values()}),
    }


def summarise(rows: list[dict], manifest: dict, batches: tuple[int, ...]) -> dict:
    summary: dict = {"reproduced": sum(r["reproduced"] for r in rows)}
    for b in batches:
        cells = [r[f"b{b}"] for r in rows]
        summary[f"b{b}"] = {
            **{key: round(statistics.fmean(c[key] for c in cells), 3) for key in cells[0]},
            "depth_first_pass": round(statistics.fmean(c["rounds"] + 4 for c in cells), 2),
        }
        if b > 1:
            for k in KS:
                w, lo, p = sign_test(
                    [c[f"recall@{k}"] for c in cells], [r["b1"][f"recall@{k}"] for r in rows]
                )
                summary[f"b{b}"][f"recall@{k} vs b1"] = {"better": w, "worse": lo, "p": round(p, 3)}
    return {"run": manifest["command"], "questions": len(rows), "summary": summary, "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "run",
        type=Path,
        help="a recorded MAB-DQA bandit run (its traces, or walks.json under --out)",
    )
    ap.add_argument("--kb", help="the run's knowledge base (for the replay)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument(
        "--keep-walks",
        action="store_true",
        help="only keep the walks the run's traces hold in <out>/walks.json (no replay, no LLM)",
    )
    ap.add_argument("--batches", type=int, nargs="+", default=list(BATCHES))
    ap.add_argument("--prompts", default="", help="a prompt overlay holding the run's judge")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.keep_walks:
        walks = recorded_walks(args.run, args.out, read_predictions(args.run / "predictions.jsonl"))
        print(f"{len(walks)} walks kept in {args.out / 'walks.json'}")
        return
    if not args.kb:
        ap.error("--kb is needed for the replay")
    manifest = RunFolder(args.run).manifest()
    known = set(Context().as_dict())
    recorded = {k: v for k, v in manifest["context"].items() if k in known}
    ctx = Context(**{**recorded, "kb_dir": args.kb, "base_url": "", "prompts_dir": args.prompts})
    judge = roles.JUDGE_P_YES if ctx.mabdqa_judge == "p_yes" else roles.JUDGE
    used = sha256_file(prompts_for(ctx.prompts_dir).source_path(judge.template))
    if used != manifest["prompts"][judge.template]:  # live judgements must match recorded ones
        raise SystemExit(
            f"{judge.template} is not the template the run judged with (sha256 "
            f"{manifest['prompts'][judge.template][:12]}…): pass --prompts DIR holding it, e.g. "
            f"git show {manifest['git_revision'][:7]}:prompts/{judge.template}.j2"
        )
    result = replay(args.run, ctx, args.out, tuple(args.batches))
    (args.out / "batch.json").write_text(json.dumps(result, indent=1) + "\n")
    for b, cells in result["summary"].items():
        print(b, json.dumps(cells))


# -- its table in docs/results/ (benchmarks/results/studies.py names it) ----------------------


def render(reports: list[dict[str, Any] | None]) -> list[str]:
    """b = 1, 2, 4 judgements per round: page recall of the first walk, and its depth."""
    (rep,) = reports
    if not rep:
        return ["Not measured yet.", ""]
    s = rep["summary"]
    out = [
        f"{rep['questions']} questions from {len({r['doc'] for r in rep['rows']})} PDFs"
        + (
            f" (those of the {rep['answered']}-question record, code "
            f"{', '.join(rep['code'])}, whose walks were still known)"
            if "answered" in rep
            else " (of the record made before the unjudged-page fix, code not fingerprinted)"
        )
        + ", "
        f"m = {rep['m']} judgements, the same judge "
        f"and seed; b = 1 replayed reproduces the recorded walk's top 5 on {s['reproduced']} of "
        f"them. Depth: LLM calls one after another on a question's first pass (aspects, "
        "judgement rounds, question reflection, answer, answer reflection).",
        "",
        "| b | recall@1 | recall@3 | recall@5 | judgement rounds | depth | recall@3 vs b = 1: "
        "better / worse, sign test p |",
        "|---|---|---|---|---|---|---|",
    ]
    for key, c in s.items():
        if not key.startswith("b"):
            continue
        vs = c.get("recall@3 vs b1")
        test = f"{vs['better']} / {vs['worse']}, p = {vs['p']:.3g}" if vs else "(the paper's walk)"
        out.append(
            f"| {key[1:]} | {fmt(c['recall@1'])} | {fmt(c['recall@3'])} | "
            f"{fmt(c['recall@5'])} | {c['rounds']:.1f} | {c['depth_first_pass']:.1f} | {test} |"
        )
    return out + [""]


if __name__ == "__main__":
    main()
