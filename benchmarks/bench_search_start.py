"""A one-shot ``hopgraph search`` from a cold process: the query embedded by the torch-free
MiniLM (``KnowledgeBase.for_queries``, what the command does) against the same search with the
sentence-transformers embedder every run loads (figures, not a test).

    .venv/bin/python benchmarks/bench_search_start.py --kb runs/hotpot-kb [--reps 5] [--out FILE]

Each rep runs both, alternating, each in a fresh process, so the two see the same machine; the
record keeps every wall time, the medians and their ratio. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from hopgraph.harness.run_folder import git_revision, machine

QUERY = "Which magazine was started first, Arthur's Magazine or First for Women?"
TORCH = (
    "import sys\n"
    "from hopgraph.cli.app import open_kb\n"
    "hits = open_kb(sys.argv[1]).search(sys.argv[2], k=5)\n"
    "print(len(hits))\n"
)


def wall(command: list[str]) -> float:
    began = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env={**os.environ, "COLUMNS": "200"})
    return round(time.perf_counter() - began, 3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--kb", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/search-start.json"))
    args = ap.parse_args()
    cli = [sys.executable, "-m", "hopgraph.cli", "search", QUERY, "--kb", args.kb, "-k", "5"]
    torch = [sys.executable, "-c", TORCH, args.kb, QUERY]
    wall(cli), wall(torch)  # the page cache warmed for both
    rows = [{"search": wall(cli), "torch_embedder": wall(torch)} for _ in range(args.reps)]
    one, full = (statistics.median(r[k] for r in rows) for k in ("search", "torch_embedder"))
    record = {
        "kb": args.kb,
        "query": QUERY,
        "reps": rows,
        "median_search_s": one,
        "median_torch_embedder_s": full,
        "ratio": round(one / full, 3),
        "git_revision": git_revision(),
        "machine": machine(),
        "command": " ".join(["benchmarks/bench_search_start.py", *sys.argv[1:]]),
    }
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(
        f"hopgraph search: median {one:.2f} s; with the torch embedder {full:.2f} s "
        f"({record['ratio']:.2f}x) -> {args.out}"
    )


if __name__ == "__main__":
    main()
