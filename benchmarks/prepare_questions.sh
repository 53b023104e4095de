#!/usr/bin/env bash
# Every question file the committed result records were run on, made from ../shared/data into
# runs/ (what `hopgraph eval`, `compare --flips` and RESULTS.md read the gold answers from).
# Each is made only where it is missing; each records how it was made (<file>.made.json).
# Usage: benchmarks/prepare_questions.sh
set -eu
cd "$(dirname "$0")/.."
H=.venv/bin/hopgraph
mkdir -p runs
hotpot=../shared/data/hotpotqa/hotpotqa_train.json
mmlb=../shared/data/mmlongbench/samples.json
[ -f runs/hotpot-q.jsonl ] || $H data convert hotpotqa $hotpot --jsonl runs/hotpot-q.jsonl
if [ ! -f runs/hotpot-q-reported.jsonl ]; then  # the 80 after the tuning split's first 20
  tail -n +21 runs/hotpot-q.jsonl > runs/hotpot-q-reported.jsonl
  .venv/bin/python -c "from hopgraph.questions.datasets import record_made as r; \
r('runs/hotpot-q-reported.jsonl', 'tail -n +21 runs/hotpot-q.jsonl > runs/hotpot-q-reported.jsonl')"
fi
made() {  # file $1 made by command $2 where missing, with how it was made
  [ -f "$1" ] && return
  bash -c "$2"
  .venv/bin/python -c "from hopgraph.questions.datasets import record_made as r; r('$1', '$2')"
}
# issue 71's search reads lines 1-20 and 61-100; its verdict is on lines 21-60
made runs/hotpot-q-train.jsonl "{ sed -n 1,20p runs/hotpot-q.jsonl; sed -n 61,100p runs/hotpot-q.jsonl; } > runs/hotpot-q-train.jsonl"
made runs/hotpot-q-test.jsonl "sed -n 21,60p runs/hotpot-q.jsonl > runs/hotpot-q-test.jsonl"
val=benchmarks/results/hotpotqa/optimize/rag/splits/validation.jsonl  # rag's search's split
[ -f $val ] || .venv/bin/python -c "
import json, sys
from hopgraph.optimizer.search import split
lines = [ln for ln in open('runs/hotpot-q-train.jsonl') if ln.strip()]
_, val = split([json.loads(ln)['id'] for ln in lines], 0.34, 0)
open('$val', 'w').write(''.join(ln for ln in lines if json.loads(ln)['id'] in set(val)))"
[ -f runs/mmlb-q.jsonl ] || $H data convert mmlongbench $mmlb --jsonl runs/mmlb-q.jsonl
for per_doc in 1 2; do
  out=runs/mmlb-q-spread$per_doc.jsonl
  [ -f $out ] || .venv/bin/python benchmarks/mmlb_spread.py $per_doc runs/mmlb-q.jsonl $out
done
echo "question files ready under runs/"
