#!/usr/bin/env bash
# QD-C's seconds per question by llama.cpp build, on one machine: the installed build (made for
# this CPU by `make native`) against the portable AVX2 wheel from ../shared/wheels, with the
# same code, model and first 10 HotpotQA questions. The native run is the start of QDRAG's
# QD-C record at 50 questions (hotpotqa/qdrag-qdc, made before fingerprints were kept). Result
# records under benchmarks/results/hotpotqa/; each run resumes. Run nothing else on the machine
# meanwhile.
# Usage: benchmarks/build_hotpot.sh [LIMIT]   (default 10)
set -u
cd "$(dirname "$0")/.."
H=.venv/bin/hopgraph
R=benchmarks/results/hotpotqa
limit=${1:-10}
unused=$(.venv/bin/python -c "from hopgraph.models.embedded import unused_cpu_features as u; print(' '.join(u()))")
if [ -n "$unused" ]; then
  echo "the installed llama.cpp build leaves $unused unused: run make native first" >&2
  exit 1
fi
. benchmarks/hotpot_data.sh
unpack_portable  # sets $portable
qdc=(--agent qdrag --questions runs/hotpot-q.jsonl --kb runs/hotpot-kb --limit "$limit"
     --set qdrag_mode=qdc --set qdrag_entropy_budget=true)
$H run "${qdc[@]}" --out $R/qdrag-qdc
PYTHONPATH=$portable $H run "${qdc[@]}" --out $R/frugal/qdc-portable
for run in qdrag-qdc frugal/qdc-portable; do $H eval $R/$run > /dev/null; done
$H compare $R/frugal/qdc-portable $R/qdrag-qdc --common --metric em --metric f1 \
  --metric llm_calls --metric prompt_tokens --metric seconds --metric prefill_tokens_per_s \
  --metric decode_tokens_per_s
