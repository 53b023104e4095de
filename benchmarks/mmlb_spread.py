"""MMLongBench-Doc questions spread over the documents: PER_DOC questions with evidence pages from
each PDF (the first ones in the file, round-robin over documents), as the MAB-DQA records use.

    .venv/bin/python benchmarks/mmlb_spread.py PER_DOC runs/mmlb-q.jsonl OUT
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict

from hopgraph.questions.datasets import record_made


def main() -> None:
    per_doc, source, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    by_doc = defaultdict(list)
    with open(source, encoding="utf-8") as f:
        for line in f:
            q = json.loads(line)
            if q["evidence"]:
                by_doc[q["doc"]].append(q)
    rows = [by_doc[d][k] for k in range(per_doc) for d in sorted(by_doc) if len(by_doc[d]) > k]
    with open(out, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(q) + "\n" for q in rows)
    record_made(out, f"python benchmarks/mmlb_spread.py {per_doc} {source} {out}")


if __name__ == "__main__":
    main()
