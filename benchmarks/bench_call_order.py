"""How QDRAG's P(Yes) calls go out to the embedded server, timed arm against arm (figures,
not a test).

    .venv/bin/python benchmarks/bench_call_order.py --engine llama-server \
        [--model qwen2.5-coder-1.5b] [--questions 2] [--workers 4] [--out FILE]

QDRAG's reranking lays its calls out passage by passage, the passage first in the prompt, so
that the calls on one passage share it. This times the same (question, passage) pairs three
ways on one server, alternately: **in order** (one call at a time); **per pair** (every call
its own task, ``--workers`` in flight: they reach the server in whatever order the threads
win); **per passage** (``score_all``: a passage's calls in order from one worker, ``--workers``
passages at once). The pairs: HotpotQA questions' top-10 passages from ``runs/hotpot-kb``,
each scored against the question and two other questions (as QD-C scores against the question
and its subquestions). Each arm's passages carry a fresh tag in their title, so no arm finds
another's passages in a slot's cache. Prompt tokens read are the server's own count
(llama-server's ``/metrics``; llama-cpp-python has none)."""

from __future__ import annotations

import argparse
import json
import time
import uuid
from pathlib import Path

import httpx

from hopgraph.agents.qdrag import relevance, score_all
from hopgraph.config import Context
from hopgraph.models import embedded_server
from hopgraph.runtime import fan_out
from hopgraph.tools.retrieval import knowledge_base


def arms(workers: int):  # noqa: ANN201 - name -> (pairs, ctx) -> scores
    return {
        "in_order": lambda pairs, ctx: score_all(pairs, ctx.replace(max_concurrency=1)),
        "per_pair": lambda pairs, ctx: fan_out(lambda p: relevance(*p, ctx), pairs, workers),
        "per_passage": lambda pairs, ctx: score_all(pairs, ctx.replace(max_concurrency=workers)),
    }


def tagged(pairs: list, tag: str) -> list:
    """The pairs with each passage's title led by ``tag`` (one copy per passage)."""
    copies: dict[str, dict] = {}
    out = []
    for question, c in pairs:
        copy = copies.setdefault(c["id"], {**c, "title": f"{tag} {c.get('title', '')}"})
        out.append((question, copy))
    return out


def prompt_tokens_read(base_url: str) -> int | None:
    """llama-server's count of prompt tokens it has read (cached ones not counted)."""
    r = httpx.get(base_url.removesuffix("/v1") + "/metrics", timeout=10)
    if r.status_code != 200:
        return None
    for line in r.text.splitlines():
        if line.startswith("llamacpp:prompt_tokens_total"):
            return int(float(line.split()[-1]))
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engine", default="llama-server")
    ap.add_argument("--model", default=Context().model)
    ap.add_argument("--kb", default="runs/hotpot-kb")
    ap.add_argument("--questions-file", default="runs/hotpot-q.jsonl")
    ap.add_argument("--questions", type=int, default=2)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    lines = Path(args.questions_file).read_text().splitlines()
    qs = [json.loads(x)["question"] for x in lines][: args.questions + 2]
    base = Context(model=args.model, kb_dir=args.kb, engine=args.engine, slots=args.workers)
    kb = knowledge_base(base)
    pairs = []
    for i, q in enumerate(qs[: args.questions]):
        asked = [q, qs[i + 1], qs[i + 2]]
        pairs += [(a, c) for c in kb.search(q, k=10) for a in asked]  # passage-major, as rerank
    score_all(pairs[:1], base)  # the server started and warm
    url = embedded_server(base).base_url
    seconds: dict[str, list[float]] = {}
    read: dict[str, list[int | None]] = {}
    values: dict[str, list[float]] = {}
    for _ in range(args.repeats):
        for name, arm in arms(args.workers).items():
            before = prompt_tokens_read(url)
            began = time.perf_counter()
            values[name] = arm(tagged(pairs, uuid.uuid4().hex[:8]), base)
            seconds.setdefault(name, []).append(round(time.perf_counter() - began, 2))
            after = prompt_tokens_read(url)
            read.setdefault(name, []).append(
                None if before is None or after is None else after - before
            )
    gap = {  # the tags differ, so the P(Yes) of two arms agree only closely
        name: round(max(abs(a - b) for a, b in zip(values["in_order"], v, strict=True)), 4)
        for name, v in values.items()
    }
    report = {
        "engine": args.engine,
        "model": args.model,
        "workers": args.workers,
        "calls": len(pairs),
        "seconds": seconds,
        "prompt_tokens_read": read,
        "largest_p_yes_gap_to_in_order": gap,
    }
    print(json.dumps(report))
    if args.out:
        with open(args.out, "a") as f:
            f.write(json.dumps(report) + "\n")


if __name__ == "__main__":
    main()
