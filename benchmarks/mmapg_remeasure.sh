#!/usr/bin/env bash
# Issue 59's re-measurement: MMAPG full against rag and against single path, after the audit's
# fixes, on the 40 reported HotpotQA questions the MMAPG tables use, every record fresh, made on
# one llama.cpp build (run `make native` first) and one revision of each method's code, each
# keeping its packed traces. rag (one search, one answer) goes to 40 first; full and single path
# then grow together, STEP questions at a time, so a stop leaves them paired (STEP = N grows full
# to N before single path starts: the full-vs-rag verdict first). Re-running resumes.
# Usage: benchmarks/mmapg_remeasure.sh [N [STEP]]  (defaults 40 and 5)
set -u
cd "$(dirname "$0")/.."
H=.venv/bin/hopgraph
R=benchmarks/results/hotpotqa/remeasure
n=${1:-40}
step=${2:-5}
benchmarks/prepare_questions.sh
. benchmarks/hotpot_data.sh
index_triplets
Q=runs/hotpot-q-reported.jsonl
T="--set n_threads_batch=$(nproc)"
$H run --agent rag --questions $Q --kb runs/hotpot-kb --out $R/rag --limit "$n" $T
grow() {  # grow VARIANT LIMIT [--set ...]
  local variant=$1 limit=$2
  shift 2
  $H run --agent mmapg --questions $Q --kb runs/hotpot-kb-tri --out $R/$variant --limit "$limit" \
    --set mmapg_max_iterations=10 $T "$@"
}
for limit in $(seq "$step" "$step" "$n"); do
  grow full "$limit"
  grow single-path "$limit" --set mmapg_single_path=true
done
for variant in rag full single-path; do $H eval $R/$variant > /dev/null; done
