#!/usr/bin/env bash
# What a user would pick instead (issue 44): LlamaIndex's CitationQueryEngine beside rag's cited
# answers and its SubQuestionQueryEngine beside QD-C, on the first N HotpotQA questions (default
# 30, rag's record), with the embedded qwen2.5-coder-1.5b, our KB and our metrics
# (benchmarks/peers/llamaindex.py, run with --graph). Result records under
# benchmarks/results/hotpotqa/llamaindex-*; re-running resumes them.
set -u
cd "$(dirname "$0")/.."
H=.venv/bin/hopgraph
n=${1:-30}
. benchmarks/hotpot_data.sh
R=benchmarks/results/hotpotqa
for peer in citation subquestion; do
  $H run --graph benchmarks/peers/llamaindex.py:$peer --questions runs/hotpot-q.jsonl \
    --kb runs/hotpot-kb --out $R/llamaindex-$peer --limit "$n"
done
$H eval $R/llamaindex-citation --citations > /dev/null  # ALCE, the same 1.5B judge as rag's
$H eval $R/llamaindex-subquestion > /dev/null
$H compare $R/rag $R/llamaindex-citation --common --metric f1 --metric kept_recall \
  --metric citation_recall --metric citation_precision --metric llm_calls --metric seconds
$H compare $R/qdrag-qdc $R/llamaindex-subquestion --common --metric f1 --metric kept_recall \
  --metric llm_calls --metric prompt_tokens --metric seconds
