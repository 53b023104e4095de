#!/usr/bin/env bash
# MMAPG and its Table 3 ablations with the embedded qwen2.5-coder-1.5b, every variant on the
# same questions; each run resumes where it stopped, so re-running continues the measurement.
# Usage: benchmarks/mmapg_runs.sh demo|hotpot LIMIT [K] [ABLATION_LIMIT]
#   K = mmapg_max_iterations (default 5). The full method and single-path planning (the paper's
#   main ablation) run to LIMIT questions first, then similarity-only and no-triplets to
#   ABLATION_LIMIT (default LIMIT): the order in which the rows matter when time is short.
set -u
cd "$(dirname "$0")/.."
H=.venv/bin/hopgraph
set_name=${1:-demo}; limit=${2:-6}; k=${3:-5}; ablation_limit=${4:-$limit}
if [ "$set_name" = demo ]; then
  [ -f demo/questions.jsonl ] || $H data demo demo
  [ -d runs/demo-kb-tri ] || $H index demo/corpus --kb runs/demo-kb-tri --triplets
  questions=demo/questions.jsonl; kb=runs/demo-kb-tri
else
  [ -f runs/hotpot-q.jsonl ] || $H data convert hotpotqa ../shared/data/hotpotqa/hotpotqa_train.json --out runs/hotpot-q.jsonl
  # MMAPG matches triplets (Eq. 1-2): one extraction call per passage (994), cached, resumable
  # the extractions are cached in a committed file, so the index resumes across checkouts
  /usr/bin/time -f "index --triplets %e s" $H index ../shared/data/hotpotqa/hotpotqa_train_corpus.json \
    --kb runs/hotpot-kb-tri --triplets --cache benchmarks/results/hotpotqa/triplets.jsonl
  questions=runs/hotpot-q.jsonl; kb=runs/hotpot-kb-tri
fi
out=runs; [ "$set_name" = hotpot ] && out=benchmarks/results/hotpotqa  # result records
for variant in full single-path similarity no-triplets; do
  n=$limit; case $variant in similarity|no-triplets) n=$ablation_limit ;; esac
  case $variant in
    full) extra=() ;;
    similarity) extra=(--set mmapg_retrieval=similarity) ;;
    single-path) extra=(--set mmapg_single_path=true) ;;
    no-triplets) extra=(--set mmapg_triplets=false) ;;
  esac
  /usr/bin/time -f "$variant limit=$n %e s" $H run --agent mmapg --questions $questions \
    --kb $kb --out $out/mmapg-$set_name-$variant --limit $n \
    --set mmapg_max_iterations=$k "${extra[@]}"
  $H eval $out/mmapg-$set_name-$variant > /dev/null
done
$H compare $out/mmapg-$set_name-{full,similarity,single-path,no-triplets} --common
