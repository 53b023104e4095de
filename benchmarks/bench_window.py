"""Whether the embedded model should open a larger window: prompt reading and memory at 4096
and 8192 tokens, side by side in one run (figures, not a test).

    .venv/bin/python benchmarks/bench_window.py [--out FILE] [--reps 1]

qwen2.5-coder-1.5b reads 32k tokens; the embedded default opens 4096, and QD-C's decomposition
prompt (10 passages) left no room for a demonstration beside it. This starts the embedded
server as a run does (``models.embedded.EmbeddedServer``, its thread settings, all cores for
reading as ``optimize_hotpot.sh`` sets them) once per window, alternating 4096 / 8192 per rep,
and times through the real HTTP path a prompt that fits both (about 3,000 tokens: a prompt
and one demonstration) and, under 8192, one that fits only there (about 7,000: the same with
two more). Each prompt has a fresh prefix, so no cached prefix is reused; ``max_tokens=1``,
so the time is the prompt's reading. Memory: the server's resident set after loading and its
peak (VmHWM) after the prompts. Run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import httpx

from hopgraph.config import Context
from hopgraph.models.embedded import EmbeddedServer

PASSAGE = (
    "Entry {i}: the harbour office of the northern town logged ship {i} arriving at dawn "
    "with timber, salt and letters for the keeper, who wrote the wind and the tide beside it."
)


def prompt(tokens: int, tag: str) -> str:
    """About ``tokens`` tokens of numbered passages (about 38 tokens each) and a question."""
    body = "\n".join(PASSAGE.format(i=i) for i in range(tokens // 38))
    return f"Probe {tag} {time.time_ns()}.\n{body}\nQuestion: which ship came first?"


def _status(pid: int, field: str) -> int:
    """A /proc status field of ``pid`` in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return round(int(line.split()[1]) / 1024)
    return 0


def one(n_ctx: int, sizes: list[int], threads: int) -> dict:
    ctx = Context()
    with EmbeddedServer(
        ctx.model, cache_dir=ctx.cache_dir, n_ctx=n_ctx, n_threads_batch=threads
    ) as server:
        pid = server.proc.pid  # type: ignore[union-attr]
        loaded = _status(pid, "VmRSS")
        reads = {}
        for size in sizes:
            text = prompt(size, f"{n_ctx}-{size}")
            body = {
                "model": ctx.model,
                "max_tokens": 1,
                "temperature": 0,
                "messages": [{"role": "user", "content": text}],
            }
            began = time.perf_counter()
            reply = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=3600)
            reply.raise_for_status()
            seconds = time.perf_counter() - began
            used = reply.json()["usage"]["prompt_tokens"]
            reads[size] = {
                "prompt_tokens": used,
                "seconds": round(seconds, 1),
                "tokens_per_s": round(used / seconds, 1),
            }
        return {
            "n_ctx": n_ctx,
            "rss_loaded_mib": loaded,
            "rss_peak_mib": _status(pid, "VmHWM"),
            "reads": reads,
        }


def manifest() -> dict:
    """What the figures were measured with: the command, the revision, the machine and the
    llama.cpp build the embedded server imported."""
    import sys

    import llama_cpp

    from hopgraph.harness.run_folder import git_revision, machine

    return {
        "command": " ".join(["python", *sys.argv]),
        "git_revision": git_revision(),
        "machine": machine(),
        "llama_cpp": llama_cpp.__file__,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results/window.json")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--small", type=int, default=3000)
    ap.add_argument("--large", type=int, default=7000)
    args = ap.parse_args()
    threads = os.cpu_count() or 1
    runs = []
    for rep in range(args.reps):
        for n_ctx in (4096, 8192) if rep % 2 == 0 else (8192, 4096):
            sizes = [args.small] + [args.large] * (n_ctx > args.large)
            runs.append(one(n_ctx, sizes, threads))
            print(json.dumps(runs[-1]), flush=True)

    def median(n_ctx: int, key: str, size: int | None = None) -> float:
        mine = [r for r in runs if r["n_ctx"] == n_ctx]
        if size is None:
            return statistics.median(r[key] for r in mine)
        return statistics.median(r["reads"][size][key] for r in mine)

    small = args.small
    summary = {
        "reads_small_4096_tokens_per_s": median(4096, "tokens_per_s", small),
        "reads_small_8192_tokens_per_s": median(8192, "tokens_per_s", small),
        "reads_large_8192_tokens_per_s": median(8192, "tokens_per_s", args.large),
        "reads_large_8192_seconds": median(8192, "seconds", args.large),
        "rss_peak_4096_mib": median(4096, "rss_peak_mib"),
        "rss_peak_8192_mib": median(8192, "rss_peak_mib"),
    }
    summary["small_read_ratio_8192_over_4096"] = round(
        summary["reads_small_8192_tokens_per_s"] / summary["reads_small_4096_tokens_per_s"], 3
    )
    out = {
        "cores": threads,
        "reps": args.reps,
        "runs": runs,
        "summary": summary,
        "manifest": manifest(),
    }
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
