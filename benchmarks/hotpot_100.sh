#!/usr/bin/env bash
# Issue 44 item 1: rag and the four QDRAG variants on all 100 HotpotQA questions with the
# embedded qwen2.5-coder-1.5b, each a fresh record under benchmarks/results/hotpotqa/n100/
# answered by one revision of its method's code (`hopgraph run` refuses to extend a record
# across a code change). The first 20 questions (benchmarks/results/hotpotqa/tuning-split.json)
# are the tuning split: they are answered like the others and left out of the table. Every
# column grows 20 questions at a time, so a sitting that stops leaves them level; re-running
# resumes. Then ALCE citations are judged by the same model.
# Usage: benchmarks/hotpot_100.sh [N]  (N questions, default 100; from any folder)
set -u
cd "$(dirname "$0")/.."
H=.venv/bin/hopgraph
R=benchmarks/results/hotpotqa/n100
n=${1:-100}
. benchmarks/hotpot_data.sh
for limit in $(seq 20 20 $((n - 1))) "$n"; do
  $H run --agent rag --questions runs/hotpot-q.jsonl --kb runs/hotpot-kb --out $R/rag \
    --limit "$limit"
  for mode in dense sparse qdc qdr; do
    $H run --agent qdrag --questions runs/hotpot-q.jsonl --kb runs/hotpot-kb --out $R/$mode \
      --limit "$limit" --set qdrag_mode=$mode
  done
done
for variant in rag dense sparse qdc qdr; do
  $H eval $R/$variant --citations > /dev/null
done
