#!/usr/bin/env bash
# MMAPG and its Table 3 ablations with the embedded qwen2.5-coder-1.5b on the demo set, every
# variant on the same questions; each run resumes where it stopped, so re-running continues.
# The HotpotQA measurement that docs/RESULTS.md reports is benchmarks/mmapg_hotpot.sh.
# Usage: benchmarks/mmapg_runs.sh [LIMIT] [K] [ABLATION_LIMIT]
#   K = mmapg_max_iterations (default 5). The full method and single-path planning (the paper's
#   main ablation) run to LIMIT questions first, then similarity-only and no-triplets to
#   ABLATION_LIMIT (default LIMIT): the order in which the rows matter when time is short.
set -u
cd "$(dirname "$0")/.."
H=.venv/bin/hopgraph
limit=${1:-6}; k=${2:-5}; ablation_limit=${3:-$limit}
case $limit in
  ''|*[!0-9]*) echo "LIMIT must be a number (got '$limit'); HotpotQA: benchmarks/mmapg_hotpot.sh" >&2; exit 2 ;;
esac
[ -f demo/questions.jsonl ] || $H data demo demo
[ -d runs/demo-kb-tri ] || $H index demo/corpus --kb runs/demo-kb-tri --triplets
for variant in full single-path similarity no-triplets; do
  n=$limit; case $variant in similarity|no-triplets) n=$ablation_limit ;; esac
  case $variant in
    full) extra=() ;;
    similarity) extra=(--set mmapg_retrieval=similarity) ;;
    single-path) extra=(--set mmapg_single_path=true) ;;
    no-triplets) extra=(--set mmapg_triplets=false) ;;
  esac
  /usr/bin/time -f "$variant limit=$n %e s" $H run --agent mmapg --questions demo/questions.jsonl \
    --kb runs/demo-kb-tri --out runs/mmapg-demo-$variant --limit $n \
    --set mmapg_max_iterations=$k "${extra[@]}"
  $H eval runs/mmapg-demo-$variant > /dev/null
done
$H compare runs/mmapg-demo-{full,similarity,single-path,no-triplets} --common
