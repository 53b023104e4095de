"""Concurrent against in-order calls on the embedded server (figures, not a test).

    .venv/bin/python benchmarks/bench_call_order.py [--model smollm2-135m] [--questions 3]

The embedded llama.cpp server answers one request at a time and keeps only the last prompt's KV
cache. QDRAG's reranking sends its P(Yes) calls passage by passage, the passage first, so that
consecutive prompts share the passage; sent concurrently, they reach the server in whatever order
the threads win. This times the real ``score_all`` on the same (subquestion, passage) pairs with
``max_concurrency`` 32 and 1, alternately: HotpotQA questions' top-10 passages from
``runs/hotpot-kb``, each scored against the question and two other questions (as QD-C scores
against the question and its subquestions)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from hopgraph.agents.qdrag import score_all
from hopgraph.config import Context
from hopgraph.tools.retrieval import knowledge_base


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--kb", default="runs/hotpot-kb")
    ap.add_argument("--questions-file", default="runs/hotpot-q.jsonl")
    ap.add_argument("--questions", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    lines = Path(args.questions_file).read_text().splitlines()
    qs = [json.loads(x)["question"] for x in lines][: args.questions + 2]
    base = Context(model=args.model, kb_dir=args.kb)
    kb = knowledge_base(base)
    pairs = []
    for i, q in enumerate(qs[: args.questions]):
        asked = [q, qs[i + 1], qs[i + 2]]
        pairs += [(a, c) for c in kb.search(q, k=10) for a in asked]  # passage-major, as rerank
    score_all(pairs[:2], base)  # the server started and warm
    rows: dict[int, list[float]] = {32: [], 1: []}
    values: dict[int, list[float]] = {}
    for _ in range(args.repeats):
        for workers in (32, 1):
            ctx = base.replace(max_concurrency=workers)
            began = time.perf_counter()
            values[workers] = score_all(pairs, ctx)
            rows[workers].append(round(time.perf_counter() - began, 2))
    same = sum(abs(a - b) < 1e-3 for a, b in zip(values[32], values[1], strict=True))
    report = {"model": args.model, "calls": len(pairs), "seconds_concurrent_32": rows[32],
              "seconds_in_order": rows[1], "same_p_yes": f"{same} of {len(pairs)}"}  # fmt: skip
    print(json.dumps(report))


if __name__ == "__main__":
    main()
