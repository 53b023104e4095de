#!/usr/bin/env bash
# QDRAG measurement on HotpotQA (50 questions, embedded qwen2.5-coder-1.5b). Resumable.
set -u
cd "$(dirname "$0")/.."  # the repository root
H=.venv/bin/hopgraph
[ -d runs/hotpot-kb/chroma ] || $H index ../shared/data/hotpotqa/hotpotqa_train_corpus.json --kb runs/hotpot-kb
$H data convert hotpotqa ../shared/data/hotpotqa/hotpotqa_train.json --out runs/hotpot-q.jsonl
for variant in dense sparse qdc qdr; do
  /usr/bin/time -f "$variant %e s" $H run --agent qdrag --questions runs/hotpot-q.jsonl --kb runs/hotpot-kb \
     --out runs/qdrag-$variant --limit 50 --set qdrag_mode=$variant
done
/usr/bin/time -f "qdc-nobudget %e s" $H run --agent qdrag --questions runs/hotpot-q.jsonl --kb runs/hotpot-kb \
   --out runs/qdrag-qdc-nobudget --limit 50 --set qdrag_mode=qdc --set qdrag_entropy_budget=false
