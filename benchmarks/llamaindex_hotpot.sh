#!/usr/bin/env bash
# Issue 44 item 6 on the reported HotpotQA questions: LlamaIndex's CitationQueryEngine and its
# SubQuestionQueryEngine (benchmarks/peers/llamaindex.py, run with --graph) paired with the
# fingerprinted rag and QD-C records of benchmarks/hotpot_100.sh, on the same 80 reported
# questions (the first 20, the tuning split, are never answered here), model and KB. Both peers
# grow 10 questions at a time to N (default 40: rag's and QD-C's records); re-running resumes.
# Then ALCE citations are judged by the same model, as for rag.
# Usage: benchmarks/llamaindex_hotpot.sh [N]
set -u
cd "$(dirname "$0")/.."
H=.venv/bin/hopgraph
R=benchmarks/results/hotpotqa/n100
n=${1:-40}
. benchmarks/hotpot_data.sh
Q=runs/hotpot-q-reported.jsonl
[ -f $Q ] || tail -n +21 runs/hotpot-q.jsonl > $Q
for limit in $(seq 10 10 $((n - 1))) "$n"; do
  for peer in citation subquestion; do
    $H run --graph benchmarks/peers/llamaindex.py:$peer --questions $Q --kb runs/hotpot-kb \
      --out $R/llamaindex-$peer --limit "$limit" --set n_threads_batch="$(nproc)"
  done
done
$H eval $R/llamaindex-citation --citations > /dev/null
$H eval $R/llamaindex-subquestion > /dev/null
