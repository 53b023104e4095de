#!/usr/bin/env bash
# Issue 44 item 1: rag and the QDRAG variants on all of the HotpotQA slice with the embedded
# qwen2.5-coder-1.5b, each a fresh record under benchmarks/results/hotpotqa/n100/ answered by one
# revision of its method's code (`hopgraph run` refuses to extend a record across a code
# change). The first 20 questions (benchmarks/results/hotpotqa/tuning-split.json) are the tuning
# split: these records answer the other 80 only (runs/hotpot-q-reported.jsonl), which the table
# reports. Every column grows 10 questions at a time, so a sitting that stops leaves them level;
# re-running resumes. Prompts are read on every core (the benchmark runs alone). Then ALCE
# citations are judged by the same model.
# dense is not re-run: qdrag_mode=dense keeps rag's top 5 and answers with rag's prompt, and the
# 20 questions both answered came out identical, so the table reads rag's record for it.
# Issue 44's rule, applied at 40 reported questions (docs/RESULTS.md): a row needing more
# questions than the data holds stops. Every row using rag or QD-C needs 160 or more, so those
# two stop at 40; QD-R against sparse on kept recall needed ~87-90 at 40-48, within the error of
# the 80 held, so sparse and QD-R went on; at 50 it needed ~130, so they stop at 58 (the step
# then in flight, which leaves the two level). rag went on to all 80 after all: the peer table's
# citation-precision row (rag against LlamaIndex's CitationQueryEngine) needed ~75 at 40.
# QD-C without the entropy budget (an equal split of N, Table 6's S) runs beside QD-C to 40: the
# budget fix (exactly N kept) changed what the two allocate. The QDRAG variants run on the
# portable AVX2 wheel their records were answered with: a llama.cpp build can change a greedy
# answer (rag's record holds answers of both builds).
# Usage: benchmarks/hotpot_100.sh [N]  (the first N reported questions, default all 80)
set -u
cd "$(dirname "$0")/.."
H=.venv/bin/hopgraph
R=benchmarks/results/hotpotqa/n100
n=${1:-80}
. benchmarks/hotpot_data.sh
unpack_portable  # sets $portable
Q=runs/hotpot-q-reported.jsonl
[ -f $Q ] || tail -n +21 runs/hotpot-q.jsonl > $Q
fast="--set n_threads_batch=$(nproc)"
stop=40  # QD-C, with and without the entropy budget
stop_qdr=58  # sparse and QD-R
for limit in $(seq 10 10 $((n - 1))) "$n"; do
  short=$((limit < stop ? limit : stop))
  long=$((limit < stop_qdr ? limit : stop_qdr))
  $H run --agent rag --questions $Q --kb runs/hotpot-kb --out $R/rag --limit "$limit" $fast
  for budget in true false; do
    out=$R/qdc; [ $budget = false ] && out=$R/qdc-nobudget
    PYTHONPATH=$portable $H run --agent qdrag --questions $Q --kb runs/hotpot-kb --out $out \
      --limit "$short" --set qdrag_mode=qdc --set qdrag_entropy_budget=$budget $fast
  done
  for mode in sparse qdr; do
    PYTHONPATH=$portable $H run --agent qdrag --questions $Q --kb runs/hotpot-kb \
      --out $R/$mode --limit "$long" --set qdrag_mode=$mode $fast
  done
done
for variant in rag sparse qdc qdc-nobudget qdr; do
  $H eval $R/$variant --citations > /dev/null
done
