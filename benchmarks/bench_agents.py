"""Every agent against a latency model of a batching GPU server (figures, not a test).

    .venv/bin/python benchmarks/bench_agents.py [--latency 0.2] [--slots 32] [--out FILE]

No GPU reaches this machine, so the server is OpenAI-compatible and scripted: each call costs a
fixed latency plus ``--per-token`` seconds per token (prompt characters / 4 plus the reply), with
at most ``--slots`` calls served at once, as vLLM's continuous batching serves them. Structured
calls are answered with an instance of the role's own JSON schema (first enum value, one item
per list), P(Yes) calls with 0.7, text calls with a cited sentence; so every agent walks a fixed,
complete path (MMAPG's planner, never answering, runs to its iteration cap). The figures are
counts and ratios: LLM calls, tokens (and prompt tokens by template) and critical-path depth per
question (MMAPG's also per planner iteration), wall seconds per question at run concurrency 1,
and throughput at run concurrency 1, 8 and 32.

Agents: rag, qdrag (QD-C and QD-R), mmapg, mabdqa over the demo questions (MAB-DQA over the
demo passages laid out as the pages of one document).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from scripted_server import ScriptedServer  # noqa: E402

from hopgraph.config import parse_sets  # noqa: E402
from hopgraph.evals.evaluate import by_template  # noqa: E402
from hopgraph.graphs import every_context  # noqa: E402
from hopgraph.harness.run_folder import read_predictions  # noqa: E402
from hopgraph.harness.runner import Runner  # noqa: E402
from hopgraph.memory.ids import page_key  # noqa: E402
from hopgraph.memory.kb import Item, KnowledgeBase  # noqa: E402
from hopgraph.questions.datasets import Question, read_questions, write_questions  # noqa: E402
from hopgraph.questions.demo import PASSAGES, write_demo  # noqa: E402

Context = every_context()  # every built-in method's knobs (the runner keeps each graph's)

DOC = "esterlund-guide.pdf"
AGENTS: dict[str, tuple[str, dict[str, Any]]] = {
    "rag": ("rag", {}),
    "qdrag QD-C": ("qdrag", {"qdrag_mode": "qdc"}),
    "qdrag QD-R": ("qdrag", {"qdrag_mode": "qdr"}),
    "mmapg": ("mmapg", {}),
    "mabdqa": ("mabdqa", {"mabdqa_judge": "p_yes"}),
}


def instance(schema: dict[str, Any], root: dict[str, Any]) -> Any:
    """A valid value of a JSON schema: first enum value, one item per list."""
    if "$ref" in schema:
        return instance(root["$defs"][schema["$ref"].rsplit("/", 1)[1]], root)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return instance(options[0], root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type", "string")
    if kind == "object":
        return {k: instance(v, root) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [instance(schema.get("items", {}), root)] * max(1, schema.get("minItems", 1))
    return {"integer": 1, "number": 0.5, "boolean": True, "null": None}.get(kind, "Harrowgate")


def reply(body: dict[str, Any]) -> Any:
    if body.get("logprobs"):
        return 0.7
    fmt = body.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema") or fmt.get("schema")
    if schema:
        return json.dumps(instance(schema, schema))
    if "Short answer" in json.dumps(body["messages"]):
        return "Harrowgate Oars"
    return "Harrowgate Oars won it [1][2].\nAnswer: Harrowgate Oars\n4"


def setup(root: Path) -> tuple[Path, Path, Path]:
    """The demo KB with the demo passages also as pages of one document; the demo questions
    twice over (distinct ids), and the same with the document named for MAB-DQA."""
    write_demo(root / "demo")
    hop = [sys.executable, "-m", "hopgraph.cli"]
    subprocess.run(
        [*hop, "index", str(root / "demo" / "corpus"), "--kb", str(root / "kb")],
        check=True,
        capture_output=True,
    )
    KnowledgeBase(root / "kb").add(
        [
            Item(
                "page",
                page_key(DOC, n),
                f"{title}\n{text}",
                title=f"guide p.{n}",
                source=DOC,
                page=n,
            )
            for n, (title, text) in enumerate(PASSAGES.items(), 1)
        ]
    )
    demo, _ = read_questions(root / "demo" / "questions.jsonl")
    qs = [Question(f"{q.id}-{r}", q.question, q.answers) for r in (1, 2) for q in demo]
    write_questions(qs, root / "q.jsonl")
    write_questions([Question(q.id, q.question, q.answers, doc=DOC) for q in qs], root / "qd.jsonl")
    return root / "kb", root / "q.jsonl", root / "qd.jsonl"


def measure(
    name: str, root: Path, kb: Path, qfile: Path, url: str, first: int, sets: dict[str, str]
) -> dict:
    agent, fields = AGENTS[name]
    ctx = Context(base_url=url, model="scripted", kb_dir=str(kb), **fields).replace(**sets)
    n_all = len(read_questions(qfile)[0])
    row: dict[str, Any] = {"agent": name, **({"set": sets} if sets else {})}
    Runner(agent, root / f"warm-{agent}", ctx).run(qfile, limit=1)  # models and KB loaded once
    for c in (1, 8, 32):
        run = root / f"{name.replace(' ', '-')}-c{c}"
        began = time.perf_counter()
        summary = Runner(agent, run, ctx).run(qfile, limit=first if c == 1 else None, concurrency=c)
        wall = time.perf_counter() - began
        n = first if c == 1 else n_all
        row[f"questions_per_s_c{c}"] = round(n / wall, 2)
        if summary.failed:
            row[f"failed_c{c}"] = summary.failed
        if c == 1:
            preds = list(read_predictions(run / "predictions.jsonl").values())
            for key in ("llm_calls", "prompt_tokens", "completion_tokens", "depth", "seconds"):
                row[key] = round(statistics.mean(p.get(key, 0) for p in preds), 1)
            iterations = [p.get("summary", {}).get("iterations") for p in preds]
            if all(iterations):  # MMAPG: the planner loop's rounds, per iteration
                row["depth_per_iteration"] = round(
                    statistics.mean(p["depth"] / i for p, i in zip(preds, iterations, strict=True)),
                    2,
                )
            row["prompt_tokens_by_template"] = {
                name: t["prompt_tokens"] for name, t in by_template(preds).items()
            }
    row["speedup_c8"] = round(row["questions_per_s_c8"] / row["questions_per_s_c1"], 1)
    row["speedup_c32"] = round(row["questions_per_s_c32"] / row["questions_per_s_c1"], 1)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--per-token", type=float, default=0.00002)
    ap.add_argument("--slots", type=int, default=32)
    ap.add_argument("--first", type=int, default=6, help="questions timed at concurrency 1")
    ap.add_argument("--agents", nargs="+", default=list(AGENTS))
    ap.add_argument("--set", action="append", default=[], help="a Context field: key=value")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    sets = parse_sets(args.set)
    rows = []
    with tempfile.TemporaryDirectory(prefix="hopgraph-agents-") as tmp:
        root = Path(tmp)
        kb, qfile, qdoc = setup(root)
        with ScriptedServer(
            reply, delay=args.latency, per_token=args.per_token, slots=args.slots
        ) as server:
            for name in args.agents:
                questions = qdoc if AGENTS[name][0] == "mabdqa" else qfile
                row = measure(name, root, kb, questions, server.base_url, args.first, sets)
                print(json.dumps(row), flush=True)
                rows.append(row)
    report = {
        "server": {"latency_s": args.latency, "per_token_s": args.per_token, "slots": args.slots},
        "set": sets,
        "rows": rows,
    }
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


# -- its table in docs/results/ (benchmarks/results/studies.py names it) ----------------------


def render(reports: list[dict[str, Any] | None]) -> list[str]:
    """bench_agents: every agent against the latency model of a batching GPU server."""
    (rep,) = reports
    if not rep:
        return ["Not measured yet.", ""]
    srv = rep["server"]
    out = [
        f"The demo questions against a scripted OpenAI-compatible server that charges "
        f"{srv['latency_s'] * 1000:.0f} ms per call plus {srv['per_token_s'] * 1e6:.0f} µs per "
        f"token and serves {srv['slots']} calls at once (vLLM's continuous batching, modelled). "
        "Calls, tokens and depth are counts and the speed-ups ratios, so they hold on any "
        "hardware; depth is the longest chain of LLM calls each starting after the previous "
        "ended.",
        "",
        "| agent | LLM calls | prompt tokens | depth | seconds at c = 1 | questions/s "
        "c = 1 / 8 / 32 | speed-up c = 8 | speed-up c = 32 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rep["rows"]:
        depth = f"{r['depth']:g}" + (
            f" ({r['depth_per_iteration']:g} per planner iteration)"
            if "depth_per_iteration" in r
            else ""
        )
        out.append(
            f"| {r['agent']} | {r['llm_calls']:g} | {r['prompt_tokens']:,.0f} | {depth} | "
            f"{r['seconds']:g} | {r['questions_per_s_c1']:g} / {r['questions_per_s_c8']:g} / "
            f"{r['questions_per_s_c32']:g} | {r['speedup_c8']:g}x | {r['speedup_c32']:g}x |"
        )
    rows = {r["agent"]: r for r in rep["rows"]}
    fast = [a for a, r in rows.items() if r["speedup_c32"] >= 20]
    slow = [a for a, r in rows.items() if r["speedup_c32"] < 20]
    qdc, mmapg = rows.get("qdrag QD-C", {}), rows.get("mmapg", {})
    return out + [
        "",
        f"Targets (issue 25): QD-C depth <= 4: {_met(qdc.get('depth', 99) <= 4)}; MMAPG <= 3 "
        f"rounds per planner iteration: {_met(mmapg.get('depth_per_iteration', 99) <= 3)}; "
        f"speed-up >= 20x at c = 32: met by {', '.join(fast) or 'none'}, not by "
        f"{', '.join(slow) or 'none'}. The scripted planner never answers, so MMAPG runs to its "
        "iteration cap. Where a question is a few short rounds, 32 in flight make the 2-core "
        "client (graphs, knowledge base and the scripted server itself) the limit, not the "
        "modelled GPU.",
        "",
    ]


def _met(ok: bool) -> str:
    return "met" if ok else "not met"


if __name__ == "__main__":
    main()
