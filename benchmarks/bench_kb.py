"""Knowledge-base benchmark: indexing throughput and search latency (figures, not a test).

    .venv/bin/python benchmarks/bench_kb.py [--data ../shared/data] [--vectors 100000] [--out FILE]

1. Index the HotpotQA corpus and the MMLongBench PDFs into fresh knowledge bases: items/s,
   seconds, peak memory, and the embedder's share of the time.
2. Query-only top-5 recall of gold passages on the HotpotQA slice.
3. Top-10 search latency (median, p95) on a collection of N random unit 384-d vectors.
4. Re-indexing: the HotpotQA corpus written as a folder of one file per passage, indexed, then
   indexed again unchanged (goal: under 5 % of the first index), with one file's mtime touched
   (hashed, not read), and with one file changed (its old passage replaced).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.memory.indexing import index_source
from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.questions.datasets import convert_hotpotqa

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_index(name: str, source: Path, root: Path, **opts) -> dict:
    kb = KnowledgeBase(root / name)
    kb.embedder  # noqa: B018 - load the encoder before the clock starts
    report = index_source(kb, source, **opts)
    return {
        "items": report.items,
        "added": report.added,
        "skipped": len(report.skipped),
        "seconds": round(report.seconds, 2),
        "items_per_s": round(report.items / report.seconds, 1),
        "embed_seconds": round(report.embed_seconds, 2),
        "embed_share": round(report.embed_seconds / report.seconds, 3),
        "store_seconds": round(report.store_seconds, 2),
        "read_seconds": round(report.seconds - report.embed_seconds - report.store_seconds, 2),
        "peak_rss_mb_so_far": round(peak_rss_mb()),
    }, kb


def recall_at_5(kb: KnowledgeBase, questions_file: Path) -> dict:
    hits = total = complete = 0
    questions = list(convert_hotpotqa(questions_file))
    for q in questions:
        found = {h["id"] for h in kb.search(q.question, k=5)}
        gold = set(q.evidence)
        hits += len(gold & found)
        total += len(gold)
        complete += gold <= found
    return {
        "questions": len(questions),
        "recall@5": round(hits / total, 3),
        "all_gold@5": round(complete / len(questions), 3),
    }


def bench_reindex(corpus_json: Path, root: Path) -> dict:
    """The corpus as one text file per passage, then four indexes of that folder."""
    folder = root / "corpus-files"
    folder.mkdir()
    data = json.loads(corpus_json.read_text(encoding="utf-8"))
    entries = data.items() if isinstance(data, dict) else ((e["title"], e["text"]) for e in data)
    files = []
    for n, (title, body) in enumerate(entries):
        file = folder / f"{n:04d}-{re.sub(r'[^A-Za-z0-9]+', '_', title)[:60]}.txt"
        file.write_text("".join(body) if isinstance(body, list) else str(body), encoding="utf-8")
        files.append(file)
    kb = KnowledgeBase(root / "reindex")
    kb.embedder  # noqa: B018 - load the encoder before the clock starts

    def timed() -> dict:
        report = index_source(kb, folder, "folder", ocr="off")
        return {
            "seconds": round(report.seconds, 3),
            "added": report.added,
            "unchanged_sources": report.unchanged,
            "replaced_sources": len(report.replaced),
            "removed_items": report.removed,
        }

    first = timed()
    unchanged = timed()
    os.utime(files[0], ns=(1, 1))
    touched = timed()
    files[1].write_text(files[1].read_text(encoding="utf-8") + " Edited.", encoding="utf-8")
    changed = timed()
    return {
        "files": len(files),
        "first_index": first,
        "unchanged": unchanged
        | {"share_of_first": round(unchanged["seconds"] / first["seconds"], 4)},
        "one_touched": touched,
        "one_changed": changed
        | {"share_of_first": round(changed["seconds"] / first["seconds"], 4)},
    }


def bench_search(root: Path, n: int, dim: int = 384, queries: int = 200) -> dict:
    rng = np.random.default_rng(0)
    kb = KnowledgeBase(root / "synthetic")
    began = time.perf_counter()
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    ids = [Item("text", f"synthetic-{j}", f"row {j}").id for j in range(n)]
    kb.add_vectors(
        "text", ids, vecs, [{"modality": "text", "source": f"s{j % 50}"} for j in range(n)]
    )
    load_s = time.perf_counter() - began
    qs = rng.standard_normal((queries, dim)).astype(np.float32)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    for q in qs[:10]:  # warm the index
        kb.search(q, k=10, modalities=["text"])
    lat = []
    for q in qs:
        t = time.perf_counter()
        kb.search(q, k=10, modalities=["text"])
        lat.append(1000 * (time.perf_counter() - t))
    lat.sort()
    return {
        "vectors": n,
        "dim": dim,
        "load_seconds": round(load_s, 1),
        "queries": queries,
        "top10_median_ms": round(statistics.median(lat), 2),
        "top10_p95_ms": round(lat[int(0.95 * len(lat)) - 1], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--vectors", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--only-reindex", action="store_true", help="just the re-index figures")
    args = parser.parse_args()
    results: dict = {}
    if args.only_reindex:
        with tempfile.TemporaryDirectory(prefix="hopgraph-bench-") as tmp:
            corpus = args.data / "hotpotqa" / "hotpotqa_train_corpus.json"
            results["reindex"] = bench_reindex(corpus, Path(tmp))
        text = json.dumps(results, indent=2)
        print(text)
        if args.out:
            args.out.write_text(text)
        return
    with tempfile.TemporaryDirectory(prefix="hopgraph-bench-") as tmp:
        root = Path(tmp)
        hotpot = args.data / "hotpotqa"
        if hotpot.exists():
            results["hotpotqa_index"], kb = bench_index(
                "hotpot", hotpot / "hotpotqa_train_corpus.json", root
            )
            results["hotpotqa_retrieval"] = recall_at_5(kb, hotpot / "hotpotqa_train.json")
            results["reindex"] = bench_reindex(hotpot / "hotpotqa_train_corpus.json", root)
        else:
            print(f"skip HotpotQA: {hotpot} not found")
        pdfs = args.data / "mmlongbench" / "pdfs"
        if pdfs.exists():
            results["mmlongbench_pdfs_index"], _ = bench_index("pdfs", pdfs, root, fmt="pdf")
            results["mmlongbench_pdfs_text_only"], _ = bench_index(
                "pdfs-norender", pdfs, root, fmt="pdf", render_pages=False
            )
        else:
            print(f"skip PDFs: {pdfs} not found")
        results["search"] = bench_search(root, args.vectors)
    results["peak_rss_mb"] = round(peak_rss_mb())
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text)


# -- its table in docs/results/ (benchmarks/results/studies.py names it) ----------------------


def render_reindex(reports: list[dict[str, Any] | None]) -> list[str]:
    """bench_kb --only-reindex: the cost of indexing a folder again as its files change."""
    (rep,) = reports
    if not rep:
        return ["Not measured yet.", ""]
    r = rep["reindex"]
    first = r["first_index"]["seconds"]
    out = [
        f"The HotpotQA corpus written as a folder of {r['files']} files (one passage each), "
        "indexed into a fresh KB, then indexed again as it stood, with one file's mtime touched "
        "and with one file's text changed.",
        "",
        "| index | seconds | share of the first | added | sources unread | sources replaced | "
        "old items removed |",
        "|---|---|---|---|---|---|---|",
    ]
    rows = {
        "first": "first_index",
        "unchanged": "unchanged",
        "one mtime touched": "one_touched",
        "one file changed": "one_changed",
    }
    for label, key in rows.items():
        row = r[key]
        out.append(
            f"| {label} | {row['seconds']:.2f} | {row['seconds'] / first:.1%} | {row['added']} | "
            f"{row['unchanged_sources']} | {row['replaced_sources']} | {row['removed_items']} |"
        )
    return [*out, ""]


if __name__ == "__main__":
    main()
