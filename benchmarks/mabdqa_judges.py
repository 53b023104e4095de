"""MAB-DQA's two page judges head to head: P(Yes) against the paper's 1-5 rating (figures, not
a test).

    .venv/bin/python benchmarks/mabdqa_judges.py --questions runs/mmlb-q-spread2.jsonl \\
        --kb runs/mmlb-kb --out benchmarks/results/mmlongbench/judges \\
        [--others 2] [--limit N] [--set n_threads_batch=2]

The judge's score of a page is the bandit's reward (Alg. 2; App. C.2), so a judge is worth what
it tells a question's evidence pages from the pages the walk would visit instead. For each
question with evidence pages this judges, with both judges, the same model and the same page
text, the evidence pages and the ``--others`` pages late interaction ranks highest among the rest
(the distractors the walk starts beside), and appends one line per (page, judge) to
``OUT/judgements.jsonl``, so a stopped sitting resumes. ``OUT/report.json``, rewritten after each
question: each judge's AUC within questions (the chance that an evidence page outscores another
judged page of the same question, ties counted half), its share of tied pairs, its seconds a
page, LI's AUC on the same pages, and a two-sided sign test on the questions whose per-question
AUCs two of them differ on."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from hopgraph.evals.stats import paired
from hopgraph.graphs import load_file
from hopgraph.presentation.results import fmt, needed_text

STUDIES = Path(__file__).resolve().parent / "results" / "studies.py"
MMLB_EVIDENCE_QUESTIONS = load_file(STUDIES).MMLB_EVIDENCE_QUESTIONS

JUDGES = ("p_yes", "scale")


def pages_to_judge(li: np.ndarray, evidence: list[int], others: int) -> list[int]:
    """The evidence pages, then the ``others`` pages LI ranks highest among the rest."""
    gold = set(evidence)
    rest = [int(p) for p in np.argsort(-li, kind="stable") if int(p) not in gold]
    return [*evidence, *rest[:others]]


def pairs_won(gold: list[float], other: list[float]) -> tuple[float, int]:
    """Evidence-over-other pairs won (ties half) and the number of pairs."""
    wins = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in gold for b in other)
    return wins, len(gold) * len(other)


def report(lines: list[dict]) -> dict:
    """Per-question AUCs of each judge and of LI, and the paired comparison of the judges."""
    by_q: dict[str, dict[str, dict[str, dict]]] = defaultdict(lambda: defaultdict(dict))
    for r in lines:
        by_q[r["id"]][r["judge"]][r["page_id"]] = r
    auc: dict[str, dict[str, float]] = defaultdict(dict)
    ties = {j: [0, 0] for j in (*JUDGES, "li")}
    seconds: dict[str, list[float]] = {j: [] for j in JUDGES}
    for qid, judged in by_q.items():
        if set(judged) != set(JUDGES) or judged["p_yes"].keys() != judged["scale"].keys():
            continue  # a question some judge has not finished
        rows = list(judged["p_yes"].values())
        if not any(r["evidence"] for r in rows) or all(r["evidence"] for r in rows):
            continue
        for name in (*JUDGES, "li"):
            source = judged["p_yes" if name == "li" else name]
            key = "li" if name == "li" else "s"
            gold = [r[key] for r in source.values() if r["evidence"]]
            other = [r[key] for r in source.values() if not r["evidence"]]
            wins, n = pairs_won(gold, other)
            auc[name][qid] = wins / n
            ties[name][0] += sum(a == b for a in gold for b in other)
            ties[name][1] += n
        for j in JUDGES:
            seconds[j] += [r["seconds"] for r in judged[j].values()]
    ids = sorted(auc["li"])
    out: dict = {"questions": len(ids), "pages": sum(len(by_q[q]["p_yes"]) for q in ids)}
    for name in (*JUDGES, "li"):
        values = [auc[name][q] for q in ids]
        out[name] = {
            "auc_within_question": round(statistics.mean(values), 3) if values else None,
            "tied_pairs": round(ties[name][0] / ties[name][1], 3) if ties[name][1] else None,
        }
        if name in seconds and seconds[name]:
            out[name]["seconds_a_page"] = round(statistics.mean(seconds[name]), 2)
    if ids:
        for a, b in (("scale", "p_yes"), ("li", "p_yes"), ("li", "scale")):
            c = paired([auc[a][q] for q in ids], [auc[b][q] for q in ids])
            out[f"{b}_vs_{a}"] = {
                "better": c.better,
                "worse": c.worse,
                "tied": c.tied,
                "sign_p": round(c.sign_p, 4),
                "ci": c.ci,
                "needed_n": c.needed_n,
            }
    return out


def read_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def write_report(out: Path, others: int) -> dict:
    lines = read_lines(out / "judgements.jsonl")
    rep = report(lines) | {"others": others, "model": sorted({r["model"] for r in lines})}
    (out / "report.json").write_text(json.dumps(rep, indent=2) + "\n")
    return rep


def judge_all(args: argparse.Namespace) -> None:
    from hopgraph.agents.mabdqa import judge_page
    from hopgraph.cli.app import build_context
    from hopgraph.models.embedded import install_sigterm_handler
    from hopgraph.questions.datasets import read_questions
    from hopgraph.tools.mabdqa.page_hypergraph import late_interaction
    from hopgraph.tools.mabdqa.page_vectors import document_pages, query_vectors
    from hopgraph.tools.retrieval import knowledge_base

    install_sigterm_handler()
    from hopgraph.settings.mabdqa import MABDQAContext

    ctx = build_context(
        args.base_url, args.model, sets=[*args.set, f"kb_dir={args.kb}"], schema=MABDQAContext
    )
    kb = knowledge_base(ctx)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    record = out / "judgements.jsonl"
    done = {(r["id"], r["page_id"], r["judge"]) for r in read_lines(record)}
    judged_by = {judge: ctx.replace(mabdqa_judge=judge) for judge in JUDGES}
    questions = [q for q in read_questions(args.questions)[0] if q.evidence and q.doc]
    questions = questions[: args.limit]
    rep = write_report(out, args.others)
    for i, q in enumerate(questions, 1):
        pages = document_pages(kb, q.doc, ctx.page_embedder)
        li = late_interaction(query_vectors(kb, q.question, ctx.page_embedder), pages.vectors)
        index = {p["id"]: n for n, p in enumerate(pages.pages)}
        evidence = sorted(index[e] for e in set(q.evidence) if e in index)
        if not evidence:  # none of its evidence pages is indexed: nothing to tell apart
            continue
        for p in pages_to_judge(li, evidence, args.others):
            page = pages.pages[p]
            for judge in JUDGES:  # alternately, so a change of machine speed hits both alike
                if (q.id, page["id"], judge) in done:
                    continue
                began = time.perf_counter()
                s = judge_page(q.question, page, judged_by[judge])
                line = {
                    "id": q.id,
                    "page_id": page["id"],
                    "page": page["page"],
                    "evidence": p in evidence,
                    "li": round(float(li[p]), 6),
                    "judge": judge,
                    "s": s,
                    "seconds": round(time.perf_counter() - began, 2),
                    "model": ctx.model,
                }
                with record.open("a") as f:
                    f.write(json.dumps(line) + "\n")
        rep = write_report(out, args.others)
        print(f"judged {i}/{len(questions)} questions", flush=True)
    print(json.dumps(rep, indent=2))


NAMES = {"p_yes": "P(Yes) (ours)", "scale": "1-5 rating (the paper's)", "li": "LI (no judge)"}


def render(reports: list[dict | None]) -> list[str]:
    """The judges' within-question AUC on the same pages, and the paired verdicts."""
    (rep,) = reports
    if not rep or not rep["questions"]:
        return ["Not measured yet.", ""]
    out = [
        f"{rep['questions']} questions with evidence pages, {rep['pages']} pages judged by "
        f"each judge (every evidence page of the question and the {rep['others']} pages LI "
        f"ranks highest among the rest); model {', '.join(rep['model'])}. AUC within a "
        "question: the chance that an evidence page scores above another page of the same "
        "question (ties half).",
        "",
        "| judge | AUC within question | tied pairs | seconds a page |",
        "|---|---|---|---|",
    ]
    for key, name in NAMES.items():
        r = rep[key]
        out.append(
            f"| {name} | {fmt(r['auc_within_question'])} | {fmt(r['tied_pairs'])} | "
            f"{fmt(r.get('seconds_a_page'))} |"
        )
    out.append("")
    for key, (a, b) in {
        "p_yes_vs_scale": ("scale", "p_yes"),
        "p_yes_vs_li": ("li", "p_yes"),
        "scale_vs_li": ("li", "scale"),
    }.items():
        c = rep[key]
        ci = f"[{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}]" if c["ci"] else "none"
        verdict = (
            "holds"
            if c["sign_p"] < 0.05 and c["better"] > c["worse"]
            else ("fails" if c["sign_p"] < 0.05 else "not significant")
        )
        out.append(
            f"- {NAMES[b]} beats {NAMES[a]} on AUC within question: **{verdict}** "
            f"({fmt(rep[b]['auc_within_question'])} vs {fmt(rep[a]['auc_within_question'])}; "
            f"better on {c['better']}, worse on {c['worse']} of the {rep['questions']} "
            f"questions; sign test p = {c['sign_p']:.3g}; 95 % interval {ci})"
            + needed_text(verdict, c["needed_n"], MMLB_EVIDENCE_QUESTIONS)
            + "."
        )
    return out + [""]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--questions", required=True, help="hopgraph data convert mmlongbench ...")
    ap.add_argument("--kb", default="runs/mmlb-kb")
    ap.add_argument("--out", required=True, help="folder: judgements.jsonl (resumed), report.json")
    ap.add_argument("--others", type=int, default=2, help="top-LI pages besides the evidence")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--base-url", default="")
    ap.add_argument("--model", default="")
    ap.add_argument("--set", action="append", default=[], help="a Context field: key=value")
    judge_all(ap.parse_args())


if __name__ == "__main__":
    main()
