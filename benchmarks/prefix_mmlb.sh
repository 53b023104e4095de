#!/usr/bin/env bash
# MAB-DQA's prefix-friendly prompts on the embedded qwen2.5-coder-1.5b, before and after: the
# first 10 questions of the 24-PDF spread (m = 10, P(Yes) judge, full HRRA), run with the code of
# BEFORE_REV (default 301974c, the last revision before the change) and with this checkout's.
# Result records under benchmarks/results/mmlongbench/prefix/; each run resumes. Needs
# runs/mmlb-kb and runs/mmlb-q-spread1.jsonl (benchmarks/mabdqa_runs.sh builds them). Run nothing
# else on the machine meanwhile: the figure compared is seconds per question.
# Usage: benchmarks/prefix_mmlb.sh [BEFORE_REV]
set -u
cd "$(dirname "$0")/.."
H=.venv/bin/hopgraph
R=benchmarks/results/mmlongbench/prefix
args=(--agent mabdqa --questions runs/mmlb-q-spread1.jsonl --kb runs/mmlb-kb --limit 10
      --set mabdqa_m=10 --set mabdqa_judge=p_yes)
old=$(mktemp -d)
git worktree add --detach "$old/hopgraph" "${1:-301974c}" > /dev/null
PYTHONPATH=$old $H run "${args[@]}" --out $R/before
git worktree remove --force "$old/hopgraph"
# the old code did not list tokens by template: count them from the run's traces
.venv/bin/python - $R/before <<'PY'
import json, sys
from pathlib import Path
from hopgraph.harness.run_folder import EventCounts
run = Path(sys.argv[1])
lines = [json.loads(x) for x in (run / "predictions.jsonl").read_text().splitlines()]
for p in lines:
    trace = run / "traces" / f"{p['id']}.jsonl"
    if "by_template" not in p and trace.exists():
        p["by_template"] = EventCounts.from_trace(trace).stats()["by_template"]
(run / "predictions.jsonl").write_text("".join(json.dumps(p) + "\n" for p in lines))
PY
$H run "${args[@]}" --out $R/after
for run in before after; do $H eval $R/$run; done
$H compare $R/before $R/after --common --metric recall@3 --metric mmlb_acc \
  --metric llm_calls --metric prompt_tokens --metric depth --metric seconds
