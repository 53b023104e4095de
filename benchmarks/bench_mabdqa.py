"""MAB-DQA page retrieval without a model (figures, not a test).

    .venv/bin/hopgraph index ../shared/data/mmlongbench/pdfs --kb runs/mmlb-kb --no-render
    .venv/bin/python benchmarks/bench_mabdqa.py --kb runs/mmlb-kb [--data ../shared/data]
        [--questions runs/mmlb-q-spread1.jsonl]

Plain late interaction (the M3DocRAG-style baseline, Eq. 1) over the text-line page vectors of
every MMLongBench-Doc question with evidence pages: page Recall / Precision / NDCG / MRR at
K = 1, 3, 5, the cost of building each document's page vectors, and the hypergraph's shape with
the question itself as the only arm (the bandit's judged runs go through ``hopgraph run``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.evals import metrics as m
from hopgraph.evals.stats import sign_counts as sign_test
from hopgraph.memory.kb import KnowledgeBase
from hopgraph.presentation.results import fmt
from hopgraph.questions.datasets import convert_mmlongbench
from hopgraph.tools.mabdqa.page_hypergraph import build_hypergraph, late_interaction
from hopgraph.tools.mabdqa.page_vectors import document_pages, query_vectors

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
KS = (1, 3, 5)
PER_QUESTION = ("recall@1", "recall@3", "recall@5", "mrr@5")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--kb", type=Path, required=True)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path)
    ap.add_argument(
        "--questions", type=Path, help="only these questions (a canonical JSONL, e.g. a spread)"
    )
    args = ap.parse_args()
    samples = args.data / "mmlongbench" / "samples.json"
    if not samples.is_file():
        raise SystemExit(f"skipped: {samples} is absent")
    kb = KnowledgeBase(args.kb, must_exist=True)
    questions = [q for q in convert_mmlongbench(samples) if q.evidence]
    if args.questions:
        wanted = {json.loads(line)["id"] for line in args.questions.open() if line.strip()}
        questions = [q for q in questions if q.id in wanted]
    docs, build, rows, shapes, per_question = {}, {}, [], [], {}
    for q in questions:
        if q.doc not in docs:
            t = time.perf_counter()
            docs[q.doc] = document_pages(kb, q.doc)
            build[q.doc] = time.perf_counter() - t
        pages = docs[q.doc]
        t = time.perf_counter()
        qv = query_vectors(kb, q.question)
        scores = late_interaction(qv, pages.vectors)
        ranking = [pages.pages[p]["id"] for p in np.argsort(-scores, kind="stable")]
        latency = time.perf_counter() - t
        row = {
            f"{name}@{k}": fn(ranking, q.evidence, k)
            for name, fn in m.RETRIEVAL.items()
            if name in ("recall", "precision", "ndcg", "mrr")
            for k in KS
        }
        row["latency_ms"] = 1000 * latency
        rows.append(row)
        per_question[q.id] = {
            k: round(row[k], 4) for k in ("recall@1", "recall@3", "recall@5", "mrr@5")
        }
        h = build_hypergraph([q.question], [qv], pages.vectors, theta_g=0.8, theta_h=10)
        shapes.append(sum(len(a) for a in h.graph) / 2 / max(len(pages.pages), 1))
    report = {
        "questions_with_evidence": len(questions),
        "documents": len(docs),
        "pages": sum(len(d.pages) for d in docs.values()),
        "units_per_page": round(
            statistics.mean(len(v) for d in docs.values() for v in d.vectors), 1
        ),
        "page_vector_build_s": round(sum(build.values()), 1),
        "li": {k: round(statistics.mean(r[k] for r in rows), 4) for k in rows[0]},
        "page_graph_edges_per_page_at_theta_g_0.8": round(statistics.mean(shapes), 2),
        "per_question": per_question,
    }
    text = json.dumps(report, indent=2)
    print(json.dumps({k: v for k, v in report.items() if k != "per_question"}, indent=2))
    if args.out:
        args.out.write_text(text + "\n")


# -- its table in docs/results/ (benchmarks/results/studies.py names it) ----------------------


def render_ocr(reports: list[dict[str, Any] | None]) -> list[str]:
    """OCR off against on: pages filled, and LI page retrieval on the same questions."""
    pages, *li = reports
    if not (pages and all(li)):
        return ["Not measured yet.", ""]
    off, on = pages["off"], pages["auto"]
    out = [
        f"The 24 PDFs ({off['pages']} pages): {off['empty']} pages have no text layer; OCR "
        f"(RapidOCR PP-OCRv4) gives text to {pages['filled_by_ocr']} of them "
        f"({on['empty']} stay empty), at {pages.get('ocr_seconds_per_page', '?')} s per page on "
        "2 CPU cores. Retrieval is plain late interaction (Eq. 1) over the pages' text-line "
        "vectors, no LLM.",
        "",
        "| questions | metric | OCR off | OCR on | on better / worse | sign test p |",
        "|---|---|---|---|---|---|",
    ]
    for label, (a, b) in (("24-PDF spread", li[0:2]), ("all with evidence", li[2:4])):
        ids = sorted(a["per_question"])
        for k in ("recall@1", "recall@3", "recall@5", "mrr@5"):
            wins, losses, p = sign_test(
                [b["per_question"][i][k] for i in ids], [a["per_question"][i][k] for i in ids]
            )
            out.append(
                f"| {label} (n = {len(ids)}) | {k} | {fmt(a['li'][k])} | {fmt(b['li'][k])} "
                f"| {wins} / {losses} | {p:.3g} |"
            )
    return out + [""]


if __name__ == "__main__":
    main()
