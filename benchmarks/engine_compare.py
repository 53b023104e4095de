"""Issue 104's table: the two embedded engines side by side, from the records
``benchmarks/engine_side_by_side.sh`` wrote (no LLM): questions per minute from each record's
wall time, seconds per question, the prompt tokens llama-server took from its cache, the score,
and the answers compared question by question (greedy: the same, or each difference named).

    .venv/bin/python benchmarks/engine_compare.py   # -> benchmarks/results/engine/summary.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from statistics import fmean
from typing import Any

from hopgraph.evals.run_record import read_run
from hopgraph.evals.stats import paired

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "benchmarks" / "results" / "engine"
OLD, NEW = "llama-cpp-python", "llama-server"


def record(out: str, wall_s: float) -> dict[str, Any]:
    """One record's figures: questions, wall time, rate, score, prefix reuse, answers."""
    run = read_run(ROOT / out)
    answers, scores, reused, read, waited, seconds = {}, [], 0, 0, 0.0, {}
    for q in run.questions():
        answers[q.id] = q.answer
        seconds[q.id] = float(q.prediction.get("seconds", 0.0))
        scores.append(q.scores.get("f1", q.scores.get("mmlb_acc", 0.0)))
        for c in q.trace.calls:
            reused += int(c.served.get("prompt_reused", 0))
            read += int(c.served.get("prompt_read", 0))
            waited += float(c.served.get("queued_s", 0.0))
    n = len(answers)
    return {
        "out": out,
        "questions": n,
        "wall_s": wall_s,
        "questions_per_min": round(60 * n / wall_s, 3) if wall_s else None,
        "seconds_per_question": round(wall_s / n, 1) if n else None,
        "f1": round(fmean(scores), 4) if scores else None,
        "prompt_tokens_reused": reused,
        "prompt_tokens_read": read,
        "waited_for_a_slot_s": round(waited, 1),
        "answers": answers,
        "seconds": seconds,
        "revision": str(run.manifest.get("git_revision", ""))[:7],
    }


def compare(times: list[dict[str, Any]]) -> dict[str, Any]:
    """Each workload and concurrency measured on both engines: their figures, the speed-up and
    the answers that differ."""
    by = {(t["workload"], t["concurrency"], t["engine"]): t for t in times}
    rows = []
    for (workload, conc, engine), t in sorted(by.items()):
        if engine != NEW or (workload, conc, OLD) not in by:
            continue
        old = record(by[(workload, conc, OLD)]["out"], by[(workload, conc, OLD)]["wall_s"])
        new = record(t["out"], t["wall_s"])
        common = sorted(old["answers"].keys() & new["answers"].keys())
        differ = {
            q: [old["answers"][q], new["answers"][q]]
            for q in common
            if old["answers"][q] != new["answers"][q]
        }
        faster = paired(
            [old["seconds"][q] for q in common], [new["seconds"][q] for q in common], lower=True
        )
        rows.append(
            {
                "workload": workload,
                "concurrency": conc,
                OLD: old,
                NEW: new,
                "per_question": {
                    "faster": faster.better,
                    "slower": faster.worse,
                    "sign_p": round(faster.sign_p, 4),
                },
                "speedup": round(old["wall_s"] / new["wall_s"], 2),
                "same_answers": len(common) - len(differ),
                "common": len(common),
                "differences": differ,
            }
        )
    return {"rows": rows, "old": OLD, "new": NEW, "spread": spread(by)}


def spread(by: dict[tuple, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each engine's replies to the same greedy calls at run concurrency 1 and at 4: how many
    differ (the prompt cache and, on slots, the batch a call is decoded in change the
    arithmetic, which can flip a close token)."""
    out = []
    for (workload, conc, engine), t in sorted(by.items()):
        other = by.get((workload, 4, engine))
        if conc != 1 or other is None:
            continue
        a, b = read_run(ROOT / t["out"]), read_run(ROOT / other["out"])
        common = sorted(set(a.ids) & set(b.ids))
        answers = sum(a.predictions[q]["answer"] != b.predictions[q]["answer"] for q in common)
        calls = [(a.trace(q).calls, b.trace(q).calls) for q in common]
        pairs = [(x, y) for ca, cb in calls for x, y in zip(ca, cb, strict=False)]
        out.append(
            {
                "workload": workload,
                "engine": engine,
                "questions": len(common),
                "answers_differ": answers,
                "calls": len(pairs),
                "replies_differ": sum(x.reply != y.reply for x, y in pairs),
            }
        )
    return out


def render(reports: list[dict[str, Any] | None]) -> list[str]:
    """The side-by-side table, then each differing answer named."""
    (rep,) = reports
    if not rep or not rep.get("rows"):
        return ["Not measured yet.", ""]
    out = [
        "Wall time of each whole record, the two engines run one after the other on one "
        "machine (2 cores, the portable AVX2 build behind both), the same GGUF, every sampling "
        "field sent. Questions per minute are the record's questions over its wall time; "
        "per question, the seconds each took on both engines, paired (sign test). Code: "
        f"{', '.join(sorted({r[NEW]['revision'] for r in rep['rows']}))}.",
        "",
        f"| workload | run concurrency | questions | {OLD} q/min | {NEW} q/min | speed-up | "
        "s/question old → new | faster / slower, sign p | prompt tokens reused (new) | "
        "F1 old → new | same answers |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rep["rows"]:
        o, n = r[OLD], r[NEW]
        total = n["prompt_tokens_reused"] + n["prompt_tokens_read"]
        share = n["prompt_tokens_reused"] / max(1, total)
        out.append(
            f"| {r['workload']} | {r['concurrency']} | {r['common']} | {o['questions_per_min']} | "
            f"{n['questions_per_min']} | **{r['speedup']}x** | {o['seconds_per_question']} → "
            f"{n['seconds_per_question']} | {r['per_question']['faster']} / "
            f"{r['per_question']['slower']}, p {r['per_question']['sign_p']:.3g} | "
            f"{n['prompt_tokens_reused']:,} ({share:.0%}) | "
            f"{o['f1']} → {n['f1']} | {r['same_answers']} of {r['common']} |"
        )
    out.append("")
    for r in rep["rows"]:
        for qid, (a, b) in r["differences"].items():
            out.append(f"- {r['workload']} c{r['concurrency']} `{qid}`: {a!r} → {b!r}")
    if rep.get("spread"):
        out += [
            "",
            "The same engine at run concurrency 1 and 4 (greedy, the same requests):",
            "",
            "| workload | engine | replies that differ | answers that differ |",
            "|---|---|---|---|",
        ]
        out += [
            f"| {x['workload']} | {x['engine']} | {x['replies_differ']} of {x['calls']} | "
            f"{x['answers_differ']} of {x['questions']} |"
            for x in rep["spread"]
        ]
    return [*out, ""]


def main() -> None:
    lines = (FOLDER / "times.jsonl").read_text().splitlines()
    times = [json.loads(line) for line in lines if line.strip()]
    report = compare(times)
    (FOLDER / "summary.json").write_text(json.dumps(report, indent=1) + "\n")
    print("\n".join(render([report])))


if __name__ == "__main__":
    sys.exit(main())
