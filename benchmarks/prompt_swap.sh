#!/usr/bin/env bash
# The README's worked example (issue 40): swap MMAPG's planner prompt and know whether it helped.
# Copies the built-in planner prompt, edits one instruction, runs both on the first 10 HotpotQA
# questions with one response cache (the second run pays only for the calls that changed),
# then compares them: a verdict per metric and the questions whose EM flipped.
# MMAPG without triplets (the KB needs no LLM extraction): about an hour of CPU on 2 cores.
set -eu
cd "$(dirname "$0")/.."
H=.venv/bin/hopgraph
. benchmarks/hotpot_data.sh
if [ ! -f runs/swap-prompts/mmapg/planner.j2 ]; then
  $H prompts export mmapg/planner runs/swap-prompts
  # the one edit: search before answering, instead of stopping at the first answer node
  .venv/bin/python - <<'PY'
from pathlib import Path
p = Path("runs/swap-prompts/mmapg/planner.j2")
old = "As\nsoon as an answer node answers Q0, stop."
text = p.read_text()
assert old in text, "the built-in planner prompt changed: choose another line to edit"
p.write_text(text.replace(old, "Search for\nevery entity Q0 names before you answer it; once an answer node answers Q0, stop."))
PY
fi
common="--agent mmapg --questions runs/hotpot-q.jsonl --limit 10 --kb runs/hotpot-kb --cache runs/swap-cache --set mmapg_triplets=false"
$H run $common --out runs/swap-before
$H run $common --out runs/swap-after --prompts runs/swap-prompts
$H eval runs/swap-before > /dev/null
$H eval runs/swap-after > /dev/null
$H compare runs/swap-before runs/swap-after --metric em --metric f1 --metric llm_calls \
  --metric cache_hits --metric seconds --questions
$H compare runs/swap-before runs/swap-after --format html --html runs/swap-compare.html > /dev/null
