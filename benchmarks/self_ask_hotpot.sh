#!/usr/bin/env bash
# The sixth method of examples/ (Self-Ask, run with --graph) against the rag baseline on the
# first N HotpotQA questions (default 30, rag's record) with the embedded qwen2.5-coder-1.5b.
# A result record under benchmarks/results/hotpotqa/self-ask; re-running resumes it.
set -u
cd "$(dirname "$0")/.."
H=.venv/bin/hopgraph
n=${1:-30}
. benchmarks/hotpot_data.sh
R=benchmarks/results/hotpotqa
$H run --graph examples/self_ask/graph.py:graph --questions runs/hotpot-q.jsonl \
  --kb runs/hotpot-kb --out $R/self-ask --limit "$n"
$H eval $R/self-ask > /dev/null
$H compare $R/rag $R/self-ask --common --metric em --metric f1 --metric recall@5 \
  --metric llm_calls --metric prompt_tokens --metric seconds
