"""MAB-DQA's two page judges head to head: P(Yes) against the paper's 1-5 rating (figures, not
a test).

    .venv/bin/python benchmarks/mabdqa_judges.py --questions runs/mmlb-q-spread2.jsonl \\
        --kb runs/mmlb-kb --out benchmarks/results/mmlongbench/judges.jsonl \\
        [--others 2] [--limit N] [--set n_threads_batch=2]
    .venv/bin/python benchmarks/mabdqa_judges.py --report RECORD

The judge's score of a page is the bandit's reward (Alg. 2; App. C.2), so a judge is worth what
it tells a question's evidence pages from the pages the walk would visit instead. For each
question with evidence pages this judges, with both judges, the same model and the same page
text, the evidence pages and the ``--others`` pages late interaction ranks highest among the rest
(the distractors the walk starts beside), and appends one line per (page, judge) to ``--out``, so
a stopped sitting resumes. The report: each judge's AUC within questions (the chance that an
evidence page outscores another judged page of the same question, ties counted half), its share
of tied pairs, its seconds a page, LI's AUC on the same pages, and a two-sided sign test on the
questions whose per-question AUCs the two judges differ on."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from hopgraph.evals.stats import paired

JUDGES = ("p_yes", "scale")


def pages_to_judge(li: np.ndarray, evidence: list[int], others: int) -> list[int]:
    """The evidence pages, then the ``others`` pages LI ranks highest among the rest."""
    rest = [int(p) for p in np.argsort(-li, kind="stable") if int(p) not in set(evidence)]
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
            out[f"{b}_vs_{a}"] = {"better": c.better, "worse": c.worse, "tied": c.tied,
                                  "sign_p": round(c.sign_p, 4), "ci": c.ci,
                                  "needed_n": c.needed_n}  # fmt: skip
    return out


def read_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def judge_all(args: argparse.Namespace) -> None:
    from hopgraph.agents.mabdqa import judge_page
    from hopgraph.cli.app import build_context
    from hopgraph.models.embedded import install_sigterm_handler
    from hopgraph.tools.page_hypergraph import late_interaction
    from hopgraph.tools.page_vectors import document_pages, query_vectors
    from hopgraph.tools.retrieval import knowledge_base

    install_sigterm_handler()
    ctx = build_context(args.base_url, args.model, sets=[*args.set, f"kb_dir={args.kb}"])
    kb = knowledge_base(ctx)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = {(r["id"], r["page_id"], r["judge"]) for r in read_lines(out)}
    questions = [json.loads(x) for x in Path(args.questions).read_text().splitlines() if x]
    questions = [q for q in questions if q.get("evidence") and q.get("doc")][: args.limit]
    for i, q in enumerate(questions, 1):
        pages = document_pages(kb, q["doc"], ctx.page_embedder)
        li = late_interaction(query_vectors(kb, q["question"], ctx.page_embedder), pages.vectors)
        index = {p["id"]: n for n, p in enumerate(pages.pages)}
        evidence = sorted(index[e] for e in set(q["evidence"]) if e in index)
        for p in pages_to_judge(li, evidence, args.others):
            page = pages.pages[p]
            for judge in JUDGES:  # alternately, so a change of machine speed hits both alike
                if (q["id"], page["id"], judge) in done:
                    continue
                began = time.perf_counter()
                s = judge_page(q["question"], page, ctx.replace(mabdqa_judge=judge))
                line = {"id": q["id"], "page_id": page["id"], "page": page["page"],
                        "evidence": p in evidence, "li": round(float(li[p]), 6), "judge": judge,
                        "s": s, "seconds": round(time.perf_counter() - began, 2),
                        "model": ctx.model}  # fmt: skip
                with out.open("a") as f:
                    f.write(json.dumps(line) + "\n")
        print(f"judged {i}/{len(questions)} questions", flush=True)
    print(json.dumps(report(read_lines(out)), indent=2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--questions", help="questions (hopgraph data convert mmlongbench ...)")
    ap.add_argument("--kb", default="runs/mmlb-kb")
    ap.add_argument("--out", help="the JSONL record of judgements (appended, resumed)")
    ap.add_argument("--others", type=int, default=2, help="top-LI pages besides the evidence")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--base-url", default="")
    ap.add_argument("--model", default="")
    ap.add_argument("--set", action="append", default=[], help="a Context field: key=value")
    ap.add_argument("--report", help="only report a record of judgements")
    args = ap.parse_args()
    if args.report:
        print(json.dumps(report(read_lines(Path(args.report))), indent=2))
    elif args.questions and args.out:
        judge_all(args)
    else:
        ap.error("give --questions and --out to judge, or --report RECORD")


if __name__ == "__main__":
    main()
