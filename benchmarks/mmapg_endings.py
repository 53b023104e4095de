"""How each MMAPG question's loop ended, derived from committed records' traces (no LLM call):
the planner's own Stop, our rule chain (a repeated search became an answer, a repeated answer
became Stop), the iteration cap, the question's token budget, or a malformed reply's fallback
(``tools.mmapg.ending``, the function the graph now records with). Records made before the
ending was recorded say only ``stop`` / ``max_iterations``; their traces hold every planner
repair with its iteration, which is what tells the endings apart.

    .venv/bin/python benchmarks/mmapg_endings.py benchmarks/results/hotpotqa/remeasure/full \\
        benchmarks/results/hotpotqa/remeasure/single-path \\
        --out benchmarks/results/hotpotqa/remeasure/endings.json
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from hopgraph.harness.run_folder import RunFolder, read_predictions, trace_path, trace_records
from hopgraph.tools.mmapg import ENDINGS, REPEATS, ending


def question_ending(pred: dict[str, Any], records: list[dict[str, Any]], cap: int) -> dict:
    """One question's ending, read from its prediction and its trace's planner repairs."""
    data = [
        r["data"] for r in records if r.get("mode") == "custom" and isinstance(r.get("data"), dict)
    ]
    repairs = [
        d["detail"] for d in data if d.get("event") == "repair" and d.get("role") == "planner"
    ]
    summary = next((d for d in reversed(data) if d.get("event") == "run_summary"), {})
    steps = summary.get("iterations", 0)
    told_end = [d["stopped"] for d in data if "stopped" in d] + [
        r["data"]["stopped"]
        for r in records
        if r.get("mode") == "values" and isinstance(r.get("data"), dict) and "stopped" in r["data"]
    ]
    said = told_end[-1] if told_end else ("max_iterations" if summary.get("hit_cap") else "stop")
    stopped = said in ("stop", "planner_stop", "rule_stop", "malformed")
    last = [r for r in repairs if r.get("iteration") == steps + 1]
    reason, chain = ending(stopped, last, steps, cap)
    if not stopped and pred.get("budget_stops"):
        reason = "budget_stop"
    told = sum(r["kind"] == "repeat_told" for r in repairs)
    return {
        "id": pred["id"],
        "ending": reason,
        "rule_chain": chain,
        "steps": steps,
        "re_asks": told,
        "repairs": len(repairs) - told,
        "repeats_mended": sum(r["kind"] in REPEATS for r in repairs),
    }


def record_endings(folder: Path) -> dict[str, Any]:
    manifest = RunFolder(folder).manifest()
    cap = int(manifest["context"].get("mmapg_max_iterations", 10))
    preds = read_predictions(folder / "predictions.jsonl")
    rows = [
        question_ending(p, trace_records(trace_path(folder, q)), cap)
        for q, p in sorted(preds.items())
        if p.get("error") is None
    ]
    counts = Counter(r["ending"] for r in rows)
    chains = Counter(" > ".join(r["rule_chain"]) for r in rows if r["rule_chain"])
    return {
        "record": str(folder),
        "questions": len(rows),
        "endings": {name: counts.get(name, 0) for name in ENDINGS},
        "rule_chains": dict(chains.most_common()),
        "re_asks": sum(r["re_asks"] for r in rows),
        "repairs": sum(r["repairs"] for r in rows),
        "rows": rows,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    report = {"records": [record_endings(f) for f in args.records]}
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    for rec in report["records"]:
        print(rec["record"], rec["endings"], rec["rule_chains"])


def render(reports: list[dict[str, Any] | None]) -> list[str]:
    """Each record's endings, counted, and the rule chains that made its rule stops."""
    (rep,) = reports
    if not rep:
        return ["Not measured yet.", ""]
    names = " | ".join(ENDINGS)
    out = [
        "Derived from the records' traces by the function the graph now records its ending "
        "with: a question ends by the planner's Stop only where the planner itself proposed "
        "it (after being told its step repeated one, that is still its own). A re-ask the "
        "planner was told about is not counted as a repair.",
        "",
        f"| record | questions | {names} | re-asks told | repairs | rule chains |",
        "|---|---|" + "---|" * len(ENDINGS) + "---|---|---|",
    ]
    for rec in rep["records"]:
        e = rec["endings"]
        chains = "; ".join(f"{c} ({n})" for c, n in rec["rule_chains"].items()) or "-"
        out.append(
            f"| {Path(rec['record']).name} | {rec['questions']} | "
            + " | ".join(str(e[n]) for n in ENDINGS)
            + f" | {rec['re_asks']} | {rec['repairs']} | {chains} |"
        )
    return [*out, ""]


if __name__ == "__main__":
    main()
