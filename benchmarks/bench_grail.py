"""GRAIL benchmark (figures, not a test).

    .venv/bin/python benchmarks/bench_grail.py [--vectors 100000] [--data ../shared/data] [--out F]

1. Steering latency for one query with |E_p| <= 10 at d = 384 and 1024 on one CPU thread.
2. Batched steering throughput (queries/s).
3. End-to-end retrieval latency, GRAIL (gap-fixed) vs query-only, over N vectors: exact in-memory
   search and the Chroma index, as a ratio from one run.
4. MultimodalQA dev: retrieval among each question's candidate images by title (query-only).
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.tools.grail.models import GrailModel
from hopgraph.tools.grail.retrieval import ChromaSearcher, Grail, MatrixSearcher
from hopgraph.tools.grail.steering import pad_context

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def timed(fn, repeat: int) -> tuple[float, float]:
    lat = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        lat.append(1000 * (time.perf_counter() - t))
    lat.sort()
    return round(statistics.median(lat), 4), round(lat[int(0.95 * len(lat)) - 1], 4)


@torch.no_grad()
def steering(dim: int) -> dict:
    model = GrailModel(dim).eval()
    q = F.normalize(torch.randn(1, dim), dim=-1)
    ctx, mask = pad_context([F.normalize(torch.randn(10, dim), dim=-1)], dim)
    out = {}
    for mode in ("additive", "gap", "gap-fixed"):
        for _ in range(50):
            model.steer(mode, q, ctx, mask)
        med, p95 = timed(lambda m=mode: model.steer(m, q, ctx, mask), 2000)
        out[mode] = {"median_ms": med, "p95_ms": p95}
    qb = F.normalize(torch.randn(256, dim), dim=-1)
    cb, mb = pad_context([F.normalize(torch.randn(10, dim), dim=-1)] * 256, dim)
    t = time.perf_counter()
    for _ in range(20):
        model.steer("gap", qb, cb, mb)
    out["gap_batched_queries_per_s"] = round(20 * 256 / (time.perf_counter() - t))
    return out


def end_to_end(n: int, root: Path) -> dict:
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((n, 384)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    ids = [Item("text", f"v{i}", "").id for i in range(n)]
    kb = KnowledgeBase(root / "kb")
    kb.add_vectors("text", ids, matrix, [{"modality": "text"}] * n)
    queries = torch.as_tensor(rng.standard_normal((200, 384)).astype(np.float32))
    contexts = [[ids[j] for j in rng.choice(n, 5, replace=False)] for _ in range(200)]
    out = {"vectors": n}
    for name, searcher in (
        ("matrix", MatrixSearcher(ids, matrix)),
        ("chroma", ChromaSearcher(kb, ["text"])),
    ):
        grail = Grail(searcher, GrailModel(384))
        searcher.vectors(sorted({c for ctx in contexts for c in ctx}))  # warm caches
        res = {}
        for mode in ("query", "gap-fixed"):
            it = iter(range(10**9))

            def one(mode=mode, it=it, grail=grail):
                i = next(it) % 200
                grail.search(queries[i], contexts[i], 10, mode)

            for _ in range(20):
                one()
            res[mode] = dict(zip(("median_ms", "p95_ms"), timed(one, 200), strict=True))
        res["ratio_median"] = round(res["gap-fixed"]["median_ms"] / res["query"]["median_ms"], 3)
        out[name] = res
    return out


def mmqa_images(data: Path) -> dict:
    from hopgraph.models.embedders import text_embedder

    path = data / "multimodalqa"
    if not path.exists():
        return {"skipped": f"{path} not found"}
    titles = {}
    with gzip.open(path / "MMQA_images.jsonl.gz", "rt") as f:
        for line in f:
            row = json.loads(line)
            titles[row["id"]] = row["title"]
    emb = text_embedder()
    hits1 = hits3 = n = 0
    rand = 0.0
    with gzip.open(path / "MMQA_dev.jsonl.gz", "rt") as f:
        cases = [json.loads(line) for line in f]
    for q in cases:
        cands = [c for c in q["metadata"].get("image_doc_ids", []) if c in titles]
        gold = {
            c["doc_id"] for c in q.get("supporting_context", []) if c["doc_part"] == "image"
        } & set(cands)
        if not gold or len(cands) < 2:
            continue
        vecs = emb.encode([q["question"]] + [titles[c] for c in cands])
        order = np.argsort(-(vecs[1:] @ vecs[0]))
        ranked = [cands[i] for i in order]
        hits1 += ranked[0] in gold
        hits3 += bool(set(ranked[:3]) & gold)
        rand += len(gold) / len(cands)
        n += 1
    return {
        "questions": n,
        "R@1": round(hits1 / n, 4),
        "R@3": round(hits3 / n, 4),
        "random_R@1": round(rand / n, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--vectors", type=int, default=100_000)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    results = {"steering_d384": steering(384), "steering_d1024": steering(1024)}
    with tempfile.TemporaryDirectory(prefix="hopgraph-bench-") as tmp:
        results["end_to_end"] = end_to_end(args.vectors, Path(tmp))
    results["mmqa_candidate_images_by_title"] = mmqa_images(args.data)
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
