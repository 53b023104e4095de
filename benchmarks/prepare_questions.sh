#!/usr/bin/env bash
# Every question file the committed result records were run on, made from ../shared/data into
# runs/ (what `hopgraph eval`, `compare --questions` and RESULTS.md read the gold answers from).
# Each is made only where it is missing; each records how it was made (<file>.made.json).
# Usage: benchmarks/prepare_questions.sh
set -eu
cd "$(dirname "$0")/.."
H=.venv/bin/hopgraph
mkdir -p runs
hotpot=../shared/data/hotpotqa/hotpotqa_train.json
mmlb=../shared/data/mmlongbench/samples.json
[ -f runs/hotpot-q.jsonl ] || $H data convert hotpotqa $hotpot --out runs/hotpot-q.jsonl
if [ ! -f runs/hotpot-q-reported.jsonl ]; then  # the 80 after the tuning split's first 20
  tail -n +21 runs/hotpot-q.jsonl > runs/hotpot-q-reported.jsonl
  .venv/bin/python -c "from hopgraph.evals.datasets import record_made as r; \
r('runs/hotpot-q-reported.jsonl', 'tail -n +21 runs/hotpot-q.jsonl > runs/hotpot-q-reported.jsonl')"
fi
[ -f runs/mmlb-q.jsonl ] || $H data convert mmlongbench $mmlb --out runs/mmlb-q.jsonl
for per_doc in 1 2; do
  out=runs/mmlb-q-spread$per_doc.jsonl
  [ -f $out ] || .venv/bin/python benchmarks/mmlb_spread.py $per_doc runs/mmlb-q.jsonl $out
done
echo "question files ready under runs/"
