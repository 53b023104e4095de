#!/usr/bin/env bash
# The rag baseline on the first N HotpotQA questions (default 30) with the embedded
# qwen2.5-coder-1.5b: the row every method is set against. A result record under
# benchmarks/results/hotpotqa/rag; re-running resumes it.
set -u
cd "$(dirname "$0")/.."
H=.venv/bin/hopgraph
n=${1:-30}
. benchmarks/hotpot_data.sh
$H run --agent rag --questions runs/hotpot-q.jsonl --kb runs/hotpot-kb \
  --out benchmarks/results/hotpotqa/rag --limit "$n"
$H eval benchmarks/results/hotpotqa/rag
