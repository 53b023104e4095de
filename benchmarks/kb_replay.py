"""Replays every candidate search an MMAPG record's traces hold against a knowledge base, with
the record's own settings: whether a KB rebuilt on another machine shows the record's questions
what they were shown. MMAPG reads the KB only there (Eq. 10-11: each phrase's items within the
radius, their union, the best ``mmapg_max_candidates`` passages kept), so where every step's
kept candidates come back the same (ids in order, scores to 4 decimals, the triplets that
matched each), each answered question
took the path it would take on that KB: its examiner, notes and planner were given the same
text at every step. Each phrase's own search (the trace's ``retrieval`` events, before the cut
to the best few) is compared too, and reported apart.

    .venv/bin/python benchmarks/kb_replay.py RECORD --kb KB --out REPORT.json [--carry]

The report names the record, both KBs, each question's steps and searches, and those that came
back otherwise (then and now); it exits 1 when a step's candidates did. ``--carry``, where none
did and the KB differs only in its item counts (same sources, same build settings: derived
items, MMAPG's triplets, extracted again), moves the record to that KB: its manifest's ``kb``
becomes the rebuilt one's, so the record resumes there, and the report says ``carried``, so its
results page says so (``kb-replay/`` beside the records)."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hopgraph.evals.run_record import read_run
from hopgraph.graphs import every_context
from hopgraph.harness.run_folder import RunFolder, git_revision, kb_description
from hopgraph.tools.mmapg import TEXT_SIDE, find_candidates
from hopgraph.tools.retrieval import knowledge_base

ROLE = "mmapg_retriever"
KNOBS = ("kb_dir", "chroma_url", "text_embedder", "image_embedder", "embed_batch_size")


def _ranked(hits: list[dict[str, Any]]) -> list[list[Any]]:
    """Ids in order and scores to the trace's 4 decimals."""
    return [[h["id"] for h in hits], [round(h["score"], 4) for h in hits]]


def _kept(candidates: list[dict[str, Any]]) -> list[list[Any]]:
    """A step's candidates as the examiner is given them: ``_ranked``, and the triplets each
    passage was matched by (``provenance.matched``)."""
    matched = [(c.get("provenance") or {}).get("matched", []) for c in candidates]
    return [*_ranked(candidates), matched]


def replay(record: Path, kb: Path) -> dict[str, Any]:
    """Each traced candidate step of ``record`` asked again of ``kb`` (the record's own k,
    radius and triplet setting), and where it or one of its phrase searches came back
    otherwise."""
    run = read_run(record)
    saved = run.manifest["context"]
    if run.manifest.get("agent") != "mmapg" or saved.get("grail_mode"):
        raise SystemExit(f"{record}: only MMAPG's unsteered candidate search is replayed")
    if saved.get("mmapg_retrieval") != "module":
        raise SystemExit(f"{record}: only MMAPG's candidate search is replayed")
    fields = {k: v for k, v in saved.items() if k in KNOBS or k.startswith("mmapg_")}
    ctx = every_context()(**fields | {"kb_dir": str(kb)})
    store = knowledge_base(ctx)
    if store.counts().get("image"):
        raise SystemExit(f"{kb}: holds images, whose searches the trace does not tell apart")
    k = ctx.mmapg_max_candidates
    plain = {"k": k, "modalities": TEXT_SIDE, "radius": ctx.mmapg_text_radius}
    plain |= {"max_hits": 4 * k, "derived": None if ctx.mmapg_triplets else False}
    questions: dict[str, int] = {}
    differ: list[dict[str, Any]] = []
    phrases_differ: list[dict[str, Any]] = []
    searches = 0
    for q in run.questions():
        for step in (s for s in q.trace.steps if s.node == "search"):
            asked = [e for e in step.events if e.get("event") == "retrieval"]
            asked = [e for e in asked if e.get("role") == ROLE]
            for e in asked:
                now = _ranked(store.search(e["query"], **plain))
                if now != [e["ids"], e["scores"]]:
                    then = [e["ids"], e["scores"]]
                    phrases_differ.append(
                        {"question": q.id, "query": e["query"], "then": then, "now": now}
                    )
            phrases = [e["query"] for e in asked]
            then = _kept(step.update.get("candidates", []))
            now = _kept(find_candidates(phrases, TEXT_SIDE, ctx))
            if now != then:
                differ.append({"question": q.id, "phrases": phrases, "then": then, "now": now})
            questions[q.id] = questions.get(q.id, 0) + 1
            searches += len(asked)
    steps = sum(questions.values())
    return {
        "record": str(record),
        "kb": {"record": run.manifest.get("kb") or {}, "replayed": kb_description(ctx)},
        "revision": git_revision(),
        "settings": plain | {"modalities": list(TEXT_SIDE)},
        "questions": questions,
        "steps": steps,
        "same": steps - len(differ),
        "differ": differ,
        "searches": searches,
        "searches_same": searches - len(phrases_differ),
        "searches_differ": phrases_differ,
    }


def carry(record: Path, report: dict[str, Any]) -> None:
    """Move ``record`` to the replayed KB (see the module's doc): its manifest's ``kb`` becomes
    the rebuilt one's, and ``report`` says ``carried`` (from which counts to which, when), which
    the results pages read; refused where a step came back otherwise or the KB differs in more
    than its item counts."""
    was, now = report["kb"]["record"], report["kb"]["replayed"]
    if report["differ"]:
        raise SystemExit(f"not carried: {len(report['differ'])} step(s) came back otherwise")
    if not report["steps"]:
        raise SystemExit("not carried: the record holds no candidate step to replay")
    other = [key for key in ("builds", "sources") if was.get(key) != now.get(key)]
    if other:
        raise SystemExit(f"not carried: the KB's {' and '.join(other)} differ, not only its items")
    folder = RunFolder(record)
    manifest = folder.manifest()
    assert manifest is not None  # read_run read it
    manifest["kb"] = now
    folder.write_manifest(manifest)
    report["carried"] = {"from": was.get("counts"), "to": now.get("counts")}
    report["carried"]["at"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("record", type=Path)
    ap.add_argument("--kb", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--carry", action="store_true", help="move the record to KB where all match")
    args = ap.parse_args()
    report = replay(args.record, args.kb)
    if args.carry:
        carry(args.record, report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    counts = report["kb"]["replayed"].get("counts"), report["kb"]["record"].get("counts")
    print(
        f"{report['record']}: on {args.kb} (KB {counts[0]}; the record's {counts[1]}), "
        f"{report['same']} of {report['steps']} candidate steps over "
        f"{len(report['questions'])} questions came back the same; of their "
        f"{report['searches']} phrase searches, {report['searches_same']}"
    )
    if args.carry:
        print(f"{args.record} now reads {args.kb} (the results pages cite {args.out})")
    sys.exit(1 if report["differ"] else 0)


if __name__ == "__main__":
    main()
