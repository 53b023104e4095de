#!/usr/bin/env bash
# The CPU-frugality pass (issue 25, item 7) on the embedded qwen2.5-coder-1.5b: QD-C and MMAPG
# (no-triplets: the complete triplet KB is still being extracted) on the first 10 HotpotQA
# questions, run with the code of BEFORE_REV and with this checkout's. Result records under
# benchmarks/results/hotpotqa/frugal/; each run resumes. Run nothing else on the machine
# meanwhile: the figure compared is seconds per question.
# Usage: benchmarks/frugal_hotpot.sh before|after|report [BEFORE_REV]
set -u
cd "$(dirname "$0")/.."
H=.venv/bin/hopgraph
R=benchmarks/results/hotpotqa/frugal
phase=${1:-report}
[ -f runs/hotpot-q.jsonl ] || $H data convert hotpotqa ../shared/data/hotpotqa/hotpotqa_train.json --out runs/hotpot-q.jsonl
[ -d runs/hotpot-kb/chroma ] || $H index ../shared/data/hotpotqa/hotpotqa_train_corpus.json --kb runs/hotpot-kb
common=(--questions runs/hotpot-q.jsonl --kb runs/hotpot-kb --limit 10)
qdc=(--agent qdrag --set qdrag_mode=qdc "${common[@]}")
mmapg=(--agent mmapg --set mmapg_triplets=false "${common[@]}")
case $phase in
  before)
    old=$(mktemp -d)
    git worktree add --detach "$old/hopgraph" "${2:-f86e059}" > /dev/null
    PYTHONPATH=$old $H run "${qdc[@]}" --out $R/qdc-before
    PYTHONPATH=$old $H run "${mmapg[@]}" --out $R/mmapg-before
    git worktree remove --force "$old/hopgraph" ;;
  after)
    $H run "${qdc[@]}" --out $R/qdc-after
    $H run "${mmapg[@]}" --out $R/mmapg-after ;;
  report)
    for agent in qdc mmapg; do
      for run in before after; do $H eval $R/$agent-$run > /dev/null; done
      $H compare $R/$agent-before $R/$agent-after --common --metric em --metric f1 \
        --metric llm_calls --metric prompt_tokens --metric completion_tokens --metric depth \
        --metric seconds
    done ;;
esac
