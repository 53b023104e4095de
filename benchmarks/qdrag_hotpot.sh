#!/usr/bin/env bash
# QDRAG on HotpotQA with the embedded qwen2.5-coder-1.5b: every variant on the same questions,
# first the first 20, then 30 (the size of the table against rag), then up to 50; then scores
# them (ALCE citations by the LLM judge) and prints them side by side. Every run resumes where
# it stopped, so re-running this script continues the measurement. Runs are result records
# under benchmarks/results/hotpotqa/ (commit them as they grow).
# Usage: benchmarks/qdrag_hotpot.sh  (from any folder)
set -u
cd "$(dirname "$0")/.."
H=.venv/bin/hopgraph
R=benchmarks/results/hotpotqa
. benchmarks/hotpot_data.sh
for limit in 20 30 50; do
  for variant in dense sparse qdc qdr qdc-nobudget; do
    mode=${variant%-nobudget}
    budget=true; [ "$variant" = qdc-nobudget ] && budget=false
    /usr/bin/time -f "$variant limit=$limit %e s" $H run --agent qdrag --questions runs/hotpot-q.jsonl \
      --kb runs/hotpot-kb --out $R/qdrag-$variant --limit $limit \
      --set qdrag_mode=$mode --set qdrag_entropy_budget=$budget
  done
done
for variant in dense sparse qdc qdr qdc-nobudget; do
  $H eval $R/qdrag-$variant --citations > /dev/null
done
$H compare $R/qdrag-{dense,sparse,qdc,qdr,qdc-nobudget} --common \
  --metric em --metric f1 --metric citation_recall --metric citation_precision \
  --metric invalid_citations --metric kept_recall --metric kept_contexts --metric recall@10 \
  --metric llm_calls --metric prompt_tokens --metric completion_tokens --metric seconds
