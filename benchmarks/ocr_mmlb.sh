#!/usr/bin/env bash
# OCR's effect on MMLongBench-Doc (no LLM): two knowledge bases of the 24 PDFs, one with
# `--ocr off` and one with OCR (RapidOCR) on pages whose text layer is (nearly) empty; for each,
# plain late-interaction page retrieval (Eq. 1) on the 24-question spread and on every question
# with evidence pages. Writes benchmarks/results/mmlongbench/ocr/*.json.
# Usage: benchmarks/ocr_mmlb.sh
set -eu
cd "$(dirname "$0")/.."
H=.venv/bin/hopgraph
data=../shared/data/mmlongbench
out=benchmarks/results/mmlongbench/ocr
mkdir -p "$out"
[ -f runs/mmlb-q.jsonl ] || $H data convert mmlongbench $data/samples.json --jsonl runs/mmlb-q.jsonl
[ -f runs/mmlb-q-spread1.jsonl ] || .venv/bin/python benchmarks/mmlb_spread.py 1 runs/mmlb-q.jsonl \
  runs/mmlb-q-spread1.jsonl
for mode in off auto; do
  kb=runs/mmlb-kb-ocr-$mode
  # the first build's log keeps the OCR seconds (a rebuild reads the OCR cache)
  [ -d $kb/chroma ] || /usr/bin/time -f "index --ocr $mode: %e s" $H index $data/pdfs --kb $kb \
    --no-render --ocr $mode 2>&1 | tee "$out/index-$mode.log"
  .venv/bin/python benchmarks/bench_mabdqa.py --kb $kb --questions runs/mmlb-q-spread1.jsonl \
    --out "$out/li-spread-$mode.json" > /dev/null
  .venv/bin/python benchmarks/bench_mabdqa.py --kb $kb --out "$out/li-all-$mode.json" > /dev/null
done
.venv/bin/python - "$out" <<'PY'
import json, sys
from hopgraph.memory.kb import KnowledgeBase
out = sys.argv[1]
pages = {}
for m in ("off", "auto"):
    got = KnowledgeBase(f"runs/mmlb-kb-ocr-{m}").collection("page").get(include=["documents", "metadatas"])
    pages[m] = {"pages": len(got["ids"]), "empty": sum(not d.strip() for d in got["documents"]),
                "ocr": sum('"ocr"' in md["meta"] for md in got["metadatas"])}
pages["filled_by_ocr"] = pages["off"]["empty"] - pages["auto"]["empty"]
import re
seconds = [float(x) for x in re.findall(r"read by OCR \(\S+, ([0-9.]+) s\)", open(f"{out}/index-auto.log").read())]
pages["ocr_seconds_per_page"] = round(sum(seconds) / max(pages["auto"]["ocr"], 1), 2)
print("pages", pages)
json.dump(pages, open(f"{out}/pages.json", "w"), indent=2)
from hopgraph.evals.stats import sign_counts as sign_test
for scope in ("spread", "all"):
    a, b = (json.load(open(f"{out}/li-{scope}-{m}.json")) for m in ("off", "auto"))
    print(scope, a["questions_with_evidence"], "questions (OCR off -> on; sign test on)")
    ids = sorted(a["per_question"])
    for k in ("recall@1", "recall@3", "recall@5", "mrr@5"):
        wins, losses, p = sign_test([b["per_question"][i][k] for i in ids],
                                    [a["per_question"][i][k] for i in ids])
        print(f"  {k}: {a['li'][k]:.4f} -> {b['li'][k]:.4f}  (on better {wins}, worse {losses}, p={p:.3g})")
PY
