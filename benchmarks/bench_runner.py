"""Runner benchmark with a scripted model on loopback (figures, not a test).

    .venv/bin/python benchmarks/bench_runner.py [--questions 40] [--out FILE]

1. Framework overhead: the ``direct`` (1 step) and ``rag`` (2 steps) graphs through the runner
   (checkpointing, traces, predictions) against a zero-latency endpoint; overhead per question
   = wall time - time inside LLM calls - time inside KB searches, per step = that / steps.
2. Throughput against an endpoint that sleeps 100 ms per call: concurrency 1 vs 8.
3. Content tracing (each LLM call's messages and reply in the trace) on against off, side by
   side: rag's overhead per step at zero latency, and its wall time against the 100 ms endpoint
   (the goal: under 2 % more), rounds alternating which goes first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from scripted_server import ScriptedServer  # noqa: E402

from hopgraph.config import Context  # noqa: E402
from hopgraph.harness.run_folder import read_predictions, trace_path  # noqa: E402
from hopgraph.harness.runner import Runner  # noqa: E402
from hopgraph.harness.trace import read_trace  # noqa: E402
from hopgraph.memory.kb import Item, KnowledgeBase  # noqa: E402
from hopgraph.questions.datasets import Question, write_questions  # noqa: E402


def overhead(run: Path) -> dict:
    per_q, per_step = [], []
    for qid, pred in read_predictions(run / "predictions.jsonl").items():
        done = read_trace(trace_path(run, qid)).steps
        inside = sum(
            e.get("latency_s", 0)
            for s in done
            for e in s.events
            if e.get("event") in ("llm_call", "retrieval")
        )
        extra_ms = 1000 * (pred["seconds"] - inside)
        per_q.append(extra_ms)
        per_step.append(extra_ms / max(len(done), 1))
    return {
        "questions": len(per_q),
        "overhead_per_question_ms_median": round(statistics.median(per_q), 2),
        "overhead_per_step_ms_median": round(statistics.median(per_step), 2),
        "overhead_per_step_ms_p95": round(sorted(per_step)[int(0.95 * len(per_step)) - 1], 2),
    }


def content_tracing(root: Path, qfile: Path, n: int, rounds: int = 3) -> dict:
    """rag with each LLM call's content traced against without, alternating, in one run."""
    out: dict[str, dict[str, list[float]]] = {"on": {}, "off": {}}
    for delay, key in ((0.0, "zero_latency"), (0.1, "sleep_100ms")):
        with ScriptedServer(delay=delay) as server:
            for r in range(rounds):
                for mode in ("on", "off") if r % 2 == 0 else ("off", "on"):
                    ctx = Context(
                        base_url=server.base_url,
                        model="scripted",
                        kb_dir=str(root / "kb"),
                        trace_content=mode == "on",
                    )
                    run = root / f"content-{mode}-{key}-{r}"
                    began = time.perf_counter()
                    Runner("rag", run, ctx).run(qfile)
                    wall = time.perf_counter() - began
                    per_step = overhead(run)["overhead_per_step_ms_median"]
                    out[mode].setdefault(f"{key}_wall_s", []).append(wall)
                    out[mode].setdefault(f"{key}_per_step_ms", []).append(per_step)
    med = {m: {k: statistics.median(v) for k, v in d.items()} for m, d in out.items()}
    return {
        "questions": n,
        "rounds": rounds,
        "per_step_ms_on": round(med["on"]["zero_latency_per_step_ms"], 3),
        "per_step_ms_off": round(med["off"]["zero_latency_per_step_ms"], 3),
        "per_step_ratio": round(
            med["on"]["zero_latency_per_step_ms"] / med["off"]["zero_latency_per_step_ms"], 3
        ),
        "wall_s_on_sleep_100ms": round(med["on"]["sleep_100ms_wall_s"], 3),
        "wall_s_off_sleep_100ms": round(med["off"]["sleep_100ms_wall_s"], 3),
        "wall_ratio_sleep_100ms": round(
            med["on"]["sleep_100ms_wall_s"] / med["off"]["sleep_100ms_wall_s"], 4
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="hopgraph-bench-") as tmp:
        root = Path(tmp)
        kb = KnowledgeBase(root / "kb")
        kb.add(
            [Item("text", f"k{i}", f"Fact {i} about place {i}.", title=f"P{i}") for i in range(50)]
        )
        qfile = root / "q.jsonl"
        write_questions(
            [Question(f"q{i}", f"What about place {i}?", [f"x{i}"]) for i in range(args.questions)],
            qfile,
        )
        with ScriptedServer() as server:
            ctx = Context(base_url=server.base_url, model="scripted", kb_dir=str(root / "kb"))
            for agent in ("direct", "rag"):
                Runner(agent, root / f"warm-{agent}", ctx).run(qfile, limit=2)  # load models once
                began = time.perf_counter()
                Runner(agent, root / agent, ctx).run(qfile)
                results[f"zero_latency_{agent}"] = overhead(root / agent) | {
                    "questions_per_s": round(args.questions / (time.perf_counter() - began), 1)
                }
        with ScriptedServer(delay=0.1) as server:
            ctx = Context(base_url=server.base_url, model="scripted", kb_dir=str(root / "kb"))
            timings = {}
            for n in (1, 8):
                began = time.perf_counter()
                Runner("direct", root / f"sleep-c{n}", ctx).run(qfile, concurrency=n)
                timings[n] = time.perf_counter() - began
            results["sleep_100ms_direct"] = {
                "questions": args.questions,
                "seconds_c1": round(timings[1], 2),
                "seconds_c8": round(timings[8], 2),
                "speedup": round(timings[1] / timings[8], 2),
            }
        results["content_tracing"] = content_tracing(root, qfile, args.questions)
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
