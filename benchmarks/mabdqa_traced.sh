#!/usr/bin/env bash
# A MAB-DQA record that keeps its traces (the committed bandit and LI records predate kept
# traces): three MMLongBench-Doc questions, one per PDF (the three smallest of the one-per-PDF
# set), their PDFs indexed with rendered pages so `hopgraph view` shows each cited page and the
# regions the answer quotes. The bandit's settings are the committed bandit record's (m = 10,
# the P(Yes) judge). Resumes where it stopped.
# Usage: benchmarks/mabdqa_traced.sh
set -eu
cd "$(dirname "$0")/.."
H=.venv/bin/hopgraph
pdfs=../shared/data/mmlongbench/pdfs
bash benchmarks/prepare_questions.sh > /dev/null
mkdir -p runs/mmlb-traced-pdfs
docs="watch_d 698bba535087fa9a7f9009e172a7f763 PIP_Seniors-and-Tech-Use_040314"
for d in $docs; do ln -sf "$(cd $pdfs && pwd)/$d.pdf" runs/mmlb-traced-pdfs/$d.pdf; done
q=runs/mmlb-q-traced.jsonl
[ -f $q ] || grep -E "\"id\": \"(watch_d-0032|698bba535087fa9a7f9009e172a7f763-0062|PIP_Seniors-and-Tech-Use_040314-0050)\"" \
  runs/mmlb-q-spread1.jsonl > $q
[ -d runs/mmlb-kb-traced/chroma ] || $H index runs/mmlb-traced-pdfs --kb runs/mmlb-kb-traced --follow-links --ocr off
$H run --agent mabdqa --questions $q --kb runs/mmlb-kb-traced \
  --out benchmarks/results/mmlongbench/mabdqa-traced --set mabdqa_m=10 --set mabdqa_judge=p_yes
$H eval benchmarks/results/mmlongbench/mabdqa-traced > /dev/null
