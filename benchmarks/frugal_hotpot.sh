#!/usr/bin/env bash
# The CPU-frugality pass (issue 25, item 7) on the embedded qwen2.5-coder-1.5b: QD-C and MMAPG
# (no-triplets: the complete triplet KB is still being extracted) on the first 10 HotpotQA
# questions, run with the code of f86e059 (before) and of this checkout or REV (after). Result
# records under benchmarks/results/hotpotqa/frugal/; each run resumes. Run nothing else on the
# machine meanwhile: the figure compared is seconds per question.
# Usage: [LIMIT=n] benchmarks/frugal_hotpot.sh before|after|report [qdc|mmapg|all] [REV]
# (LIMIT: the first n of the 10 questions, for a measurement spread over sittings)
set -u
cd "$(dirname "$0")/.."
H=.venv/bin/hopgraph
R=benchmarks/results/hotpotqa/frugal
phase=${1:-report}; agents=${2:-all}; rev=${3:-}
[ "$agents" = all ] && agents="qdc mmapg"
[ "$phase" = before ] && rev=${rev:-f86e059}
. benchmarks/hotpot_data.sh
common=(--questions runs/hotpot-q.jsonl --kb runs/hotpot-kb --limit "${LIMIT:-10}")
declare -A args=(
  [qdc]="--agent qdrag --set qdrag_mode=qdc"
  [mmapg]="--agent mmapg --set mmapg_triplets=false"
)
if [ "$phase" = report ]; then
  for agent in $agents; do
    for run in before after; do $H eval $R/$agent-$run > /dev/null; done
    $H compare $R/$agent-before $R/$agent-after --common --metric em --metric f1 \
      --metric llm_calls --metric prompt_tokens --metric completion_tokens --metric depth \
      --metric seconds
  done
  exit
fi
code=()
if [ -n "$rev" ]; then  # that revision's code, from a worktree
  old=$(mktemp -d)
  git worktree add --detach "$old/hopgraph" "$rev" > /dev/null
  code=(env PYTHONPATH=$old)
fi
for agent in $agents; do
  # shellcheck disable=SC2086
  "${code[@]}" $H run ${args[$agent]} "${common[@]}" --out $R/$agent-$phase
done
[ -n "$rev" ] && git worktree remove --force "$old/hopgraph"
