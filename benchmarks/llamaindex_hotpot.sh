#!/usr/bin/env bash
# Issue 44 item 6 on the reported HotpotQA questions: LlamaIndex's CitationQueryEngine and its
# SubQuestionQueryEngine (benchmarks/peers/llamaindex.py, run with --graph) paired with the
# fingerprinted rag and QD-C records of benchmarks/hotpot_100.sh, on the same 80 reported
# questions (the first 20, the tuning split, are never answered here), model and KB. The peers
# grow 10 questions at a time, the sub-question engine to 40 (QD-C's record: at 40 every row
# against it needed more than the 80 held), the citation engine to N (default all 80, as rag:
# its citation-precision row needed ~75 at 40); re-running resumes. Then ALCE citations are
# judged by the same model, as for rag.
# Usage: benchmarks/llamaindex_hotpot.sh [N]
set -u
cd "$(dirname "$0")/.."
H=.venv/bin/hopgraph
R=benchmarks/results/hotpotqa/n100
n=${1:-80}
stop=40  # the sub-question engine, as QD-C
. benchmarks/hotpot_data.sh
Q=runs/hotpot-q-reported.jsonl
[ -f $Q ] || tail -n +21 runs/hotpot-q.jsonl > $Q
for limit in $(seq 10 10 $((n - 1))) "$n"; do
  $H run --graph benchmarks/peers/llamaindex.py:citation --questions $Q --kb runs/hotpot-kb \
    --out $R/llamaindex-citation --limit "$limit" --set n_threads_batch="$(nproc)"
  $H run --graph benchmarks/peers/llamaindex.py:subquestion --questions $Q --kb runs/hotpot-kb \
    --out $R/llamaindex-subquestion --limit "$((limit < stop ? limit : stop))" \
    --set n_threads_batch="$(nproc)"
done
$H eval $R/llamaindex-citation --citations > /dev/null
$H eval $R/llamaindex-subquestion > /dev/null
