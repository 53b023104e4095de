"""The benchmark scripts run on inputs of our own: a script that breaks when a type it reads
changes (Evidence became a dict) fails here, not in the next measurement sitting."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hopgraph.memory.ids import page_key
from hopgraph.memory.kb import Item, KnowledgeBase

ROOT = Path(__file__).resolve().parents[1]


def test_bench_mabdqa_reports_li_recall_per_question(tmp_path):
    doc = "manual.pdf"
    topics = ["installing the pump", "cleaning the filter", "warranty terms", "spare parts list"]
    KnowledgeBase(tmp_path / "kb").add(
        [
            Item("page", page_key(doc, n), f"Manual page {n}.\nThis page covers {t} in detail.",
                 source=doc, page=n)
            for n, t in enumerate(topics, 1)
        ]
    )  # fmt: skip
    data = tmp_path / "data" / "mmlongbench"
    data.mkdir(parents=True)
    samples = [
        {"doc_id": doc, "question": "How do I clean the filter?", "answer": "rinse it",
         "evidence_pages": "[2]", "answer_format": "Str"},
        {"doc_id": doc, "question": "What do the warranty terms say?", "answer": "two years",
         "evidence_pages": "[3]", "answer_format": "Str"},
    ]  # fmt: skip
    (data / "samples.json").write_text(json.dumps(samples))
    out = tmp_path / "li.json"
    subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_mabdqa.py"), "--kb", str(tmp_path / "kb"),
         "--data", str(tmp_path / "data"), "--out", str(out)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    report = json.loads(out.read_text())
    assert report["questions_with_evidence"] == 2 and report["pages"] == 4
    assert report["li"]["recall@1"] == 1.0
    assert set(report["per_question"]) == {"manual-0000", "manual-0001"}
