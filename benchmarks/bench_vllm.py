"""Questions per second at run concurrency 1, 8 and 32, on vLLM's CPU build against llama.cpp,
both serving smollm2-135m on this machine (figures, not a test).

    .venv/bin/python benchmarks/bench_vllm.py [--rag 14] [--qdc 6] [--out FILE]

The same model on both: the embedded GGUF (Q4_1) under llama.cpp, and the same GGUF dequantized
to float32 under vLLM (``models/vllm_server.py``; ``make vllm`` first). rag over the first
``--rag`` demo questions and QD-C over the first ``--qdc``, each level in a fresh run folder after
one warm-up question; the seconds are wall time of the whole level. llama.cpp answers one
request at a time, vLLM batches the requests in flight (continuous batching), so this measures
what the latency model of ``bench_agents.py`` only modelled, on a CPU. Run nothing beside it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_agents import setup  # noqa: E402

from hopgraph.graphs import every_context  # noqa: E402
from hopgraph.harness.run_folder import git_revision, machine, read_predictions  # noqa: E402
from hopgraph.harness.runner import Runner  # noqa: E402
from hopgraph.models.embedded import EmbeddedServer  # noqa: E402
from hopgraph.models.vllm_server import VllmServer  # noqa: E402

Context = every_context()  # every built-in method's knobs (the runner keeps each graph's)

MODEL = "smollm2-135m"
AGENTS = {"rag": ("rag", {}), "QD-C": ("qdrag", {"qdrag_mode": "qdc"})}
LEVELS = (1, 8, 32)


def measure(engine: str, server: Any, root: Path, kb: Path, qfile: Path, sizes: dict) -> list:
    rows = []
    for name, (agent, fields) in AGENTS.items():
        ctx = Context(
            base_url=server.base_url,
            model=MODEL,
            kb_dir=str(kb),
            request_timeout=1200,
            max_retries=0,
            **fields,
        )
        Runner(agent, root / f"{engine}-{name}-warm", ctx).run(qfile, limit=1)
        row: dict[str, Any] = {"engine": engine, "agent": name, "questions": sizes[name]}
        for c in LEVELS:
            run = root / f"{engine}-{name}-c{c}"
            began = time.perf_counter()
            summary = Runner(agent, run, ctx).run(qfile, limit=sizes[name], concurrency=c)
            wall = time.perf_counter() - began
            row[f"questions_per_s_c{c}"] = round(summary.finished / wall, 3)
            row[f"failed_c{c}"] = summary.failed
            if c == 1:
                preds = read_predictions(run / "predictions.jsonl").values()
                row["llm_calls"] = round(statistics.mean(p["llm_calls"] for p in preds), 1)
        row["speedup_c32"] = round(row["questions_per_s_c32"] / row["questions_per_s_c1"], 2)
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rag", type=int, default=14, help="demo questions rag answers per level")
    ap.add_argument("--qdc", type=int, default=6, help="demo questions QD-C answers per level")
    ap.add_argument("--engines", nargs="+", default=["llama", "vllm"])
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    sizes = {"rag": args.rag, "QD-C": args.qdc}
    cache = Path.home() / ".cache" / "hopgraph"
    report = sitting_report(args.out, args.engines)
    with tempfile.TemporaryDirectory(prefix="hopgraph-vllm-") as tmp:
        root = Path(tmp)
        kb, qfile, _ = setup(root)
        for engine in args.engines:
            make = VllmServer if engine == "vllm" else EmbeddedServer
            began = time.perf_counter()
            with make(MODEL, cache_dir=cache) as server:
                report["startup_s"][engine] = round(time.perf_counter() - began, 1)
                report["rows"] += measure(engine, server, root, kb, qfile, sizes)
            report["code"][engine] = git_revision()[:7]
            if args.out:  # each engine's rows as soon as they are measured
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps(report, indent=2) + "\n")


def sitting_report(out: Path | None, engines: list[str]) -> dict[str, Any]:
    """The report this sitting writes: an earlier record at ``out`` keeps the rows of the
    engines not measured again (same machine only), so one engine can be re-measured."""
    report: dict[str, Any] = {
        "model": MODEL,
        "machine": machine(),
        "rows": [],
        "startup_s": {},
        "code": {},
    }
    if out is None or not out.exists():
        return report
    old = json.loads(out.read_text())
    if old["machine"] != report["machine"]:
        raise SystemExit(f"{out} was measured on {old['machine']}, not this machine: --out anew")
    report["rows"] = [r for r in old["rows"] if r["engine"] not in engines]
    for key in ("startup_s", "code"):
        report[key] = {e: v for e, v in old.get(key, {}).items() if e not in engines}
    return report


# -- its table in docs/results/ (benchmarks/results/studies.py names it) ----------------------


def render(reports: list[dict[str, Any] | None]) -> list[str]:
    """Questions per second by engine, agent and run concurrency."""
    (rep,) = reports
    if not rep:
        return ["Not measured yet.", ""]
    m = rep["machine"]
    out = [
        f"{rep['model']} on {m.get('cores')} cores ({m.get('cpu')}): llama.cpp serving the Q4_1 "
        "GGUF, vLLM's CPU build serving it dequantized to float32. Start-up: "
        + ", ".join(f"{e} {s:.0f} s" for e, s in rep["startup_s"].items())
        + ". Measured from commit "
        + ", ".join(f"{c} ({e})" for e, c in rep.get("code", {}).items())
        + ".",
        "",
        "| engine | agent | questions | LLM calls a question | questions/s c = 1 / 8 / 32 | "
        "speed-up c = 32 | failed |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rep["rows"]:
        rates = " / ".join(f"{r[f'questions_per_s_c{c}']:.3f}" for c in LEVELS)
        failed = sum(r[f"failed_c{c}"] for c in LEVELS)
        out.append(
            f"| {r['engine']} | {r['agent']} | {r['questions']} | {r['llm_calls']:g} | "
            f"{rates} | {r['speedup_c32']:g}x | {failed} |"
        )
    notes = [f"- {n}" for n in rep.get("notes", [])]  # what the sittings' rows mean
    return [*out, "", *notes, ""] if notes else [*out, ""]


if __name__ == "__main__":
    main()
