#!/usr/bin/env bash
# GRAIL on HotpotQA and MultimodalQA dev (image titles): query-only, the fair additive
# baseline, training-free GRAIL (gap-fixed), trained GRAIL (gap) and the hybrid router, all on
# the held-out test split of one seeded split (training uses the other half). No LLM call.
# Writes benchmarks/results/<dataset>/grail.json.
set -eu
cd "$(dirname "$0")/.."
H=.venv/bin/hopgraph
D=../shared/data
. benchmarks/hotpot_data.sh
[ -f runs/mmqa-dev-q.jsonl ] || $H data convert multimodalqa $D/multimodalqa/MMQA_dev.jsonl.gz --jsonl runs/mmqa-dev-q.jsonl
[ -d runs/mmqa-kb/chroma ] || $H index $D/multimodalqa --kb runs/mmqa-kb
for set in hotpot:hotpotqa:runs/hotpot-q.jsonl mmqa:multimodalqa:runs/mmqa-dev-q.jsonl; do
  IFS=: read -r short name questions <<< "$set"
  $H grail train --questions "$questions" --kb runs/$short-kb --out runs/grail-$short \
    --router-questions runs/mmqa-dev-q.jsonl
  $H grail eval --questions "$questions" --kb runs/$short-kb --weights runs/grail-$short \
    --modes query,additive,gap-fixed,gap,hybrid --split test \
    --results benchmarks/results/$name/grail.json
done
