#!/usr/bin/env bash
# A refactor's before/after check: the demo and a 5-question slice of every agent on smollm2-135m
# usage: benchmarks/before_after.sh OUT [PYTHONPATH]; old code: `git worktree add /tmp/old REV`,
# `ln -s /tmp/old /tmp/oldpkg/hopgraph`, then PYTHONPATH=/tmp/oldpkg. MAB-DQA needs
# runs/mmlb-kb and runs/mmlb-q-spread1.jsonl (benchmarks/mabdqa_runs.sh builds them).
set -u
cd "$(dirname "$0")/.."
out=$1
export PYTHONPATH=${2:-}
H=(.venv/bin/python -m hopgraph.cli)
common=(--model smollm2-135m --limit 5)
for agent in direct rag qdrag mmapg; do
  "${H[@]}" run --agent $agent --questions demo/questions.jsonl --kb demo/kb --out $out/$agent "${common[@]}" --set mmapg_max_iterations=3 > $out.$agent.log 2>&1
  "${H[@]}" eval $out/$agent >> $out.$agent.log 2>&1
done
"${H[@]}" run --agent qdrag --questions demo/questions.jsonl --kb demo/kb --out $out/qdr "${common[@]}" --set qdrag_mode=qdr > $out.qdr.log 2>&1
"${H[@]}" eval $out/qdr >> $out.qdr.log 2>&1
"${H[@]}" run --agent mabdqa --questions runs/mmlb-q-spread1.jsonl --kb runs/mmlb-kb --out $out/mabdqa "${common[@]}" --set mabdqa_m=4 > $out.mabdqa.log 2>&1
"${H[@]}" eval $out/mabdqa >> $out.mabdqa.log 2>&1
echo done
