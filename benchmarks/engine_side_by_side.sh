#!/usr/bin/env bash
# Issue 104: the two embedded engines side by side, in one interleaved run on one machine:
# llama-cpp-python's server (one request at a time) and llama.cpp's own llama-server (4 parallel
# slots, prefix reuse), the same GGUF through the same libllama, every sampling field sent.
# rag on the 14 demo questions; MMAPG and QD-C on the first 6 HotpotQA questions (the tuning
# split, never reported); each at run concurrency 1, then 4 (MMAPG's, the longest, last). Each
# record lands under benchmarks/results/engine/<engine>/<workload>-c<concurrency>, its wall
# time in times.jsonl;
# `benchmarks/engine_compare.py` writes the table. Re-running skips what was timed.
# Usage: benchmarks/engine_side_by_side.sh
set -u
cd "$(dirname "$0")/.."
H=${H:-.venv/bin/hopgraph}
R=benchmarks/results/engine
mkdir -p $R
. benchmarks/hotpot_data.sh
index_triplets
T=runs/hotpot-q-tuning6.jsonl
[ -f $T ] || head -n 6 runs/hotpot-q.jsonl > $T
one() {  # one ENGINE WORKLOAD CONCURRENCY ARGS...
  local engine=$1 workload=$2 conc=$3 out
  shift 3
  out=$R/$engine/$workload-c$conc
  grep -q "\"out\": \"$out\"" $R/times.jsonl 2>/dev/null && return
  local began ended
  began=$(date +%s.%N)
  $H run "$@" --out "$out" --concurrency "$conc" --set engine="$engine" --quiet || return
  ended=$(date +%s.%N)
  printf '{"out": "%s", "engine": "%s", "workload": "%s", "concurrency": %s, "wall_s": %.1f, "load_before": %s, "ended": "%s"}\n' \
    "$out" "$engine" "$workload" "$conc" "$(echo "$ended - $began" | bc)" \
    "$(cut -d' ' -f1 /proc/loadavg)" "$(date -u +%FT%TZ)" >> $R/times.jsonl
}
both() {  # the old engine first at concurrency 1, the new one first at 4 (drift shared)
  if [ "$2" = 1 ]; then one llama-cpp-python "$@"; one llama-server "$@"
  else one llama-server "$@"; one llama-cpp-python "$@"; fi
}
rag=(--agent rag --questions demo/questions.jsonl --kb demo/kb)
mmapg=(--agent mmapg --questions $T --kb runs/hotpot-kb-tri --set mmapg_max_iterations=10)
qdc=(--agent qdrag --questions $T --kb runs/hotpot-kb --set qdrag_mode=qdc
     --set qdrag_entropy_budget=true)
both rag 1 "${rag[@]}"
both rag 4 "${rag[@]}"
both mmapg 1 "${mmapg[@]}"
both qdc 1 "${qdc[@]}"
both qdc 4 "${qdc[@]}"
both mmapg 4 "${mmapg[@]}"
