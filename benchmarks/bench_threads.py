"""Embedded llama.cpp threads on a shared machine (figures, not a test).

    .venv/bin/python benchmarks/bench_threads.py [--model qwen2.5-coder-1.5b] [--out FILE]

llama.cpp spins one thread per core; other work on the same cores slows it several times over.
For (n_threads, n_threads_batch) = (all, all), (all - 1, all - 1) (the default) and (all - 1,
all), each beside 0, 1 and all-cores competing busy
processes (what a test run or an index build beside a measurement looks like), this starts the
embedded server and reads its prefill and decode rates with the probe ``hopgraph doctor`` and
the runner use (``models/doctor.py::measure_speed``: the median of ``--reps`` reads of each kind,
behind a fresh prompt prefix). Run it on an otherwise idle machine; the default thread count
follows these figures. The decode rate subtracts the prompt's reading time estimated from the
prefill rate, so it is rough where short prompts read much slower than long ones (the collapsed
rows).

    .venv/bin/python benchmarks/bench_threads.py --slots 1,2,4,8 [--out FILE]

With ``--slots``, llama-server's parallel slots instead: for each slot count at the default
threads, and for the default slots at each thread setting above, 8 examinations as MMAPG makes
them (the examiner's prompt over 8 passages of ``runs/hotpot-kb``, up to 120 tokens of JSON
each) are sent by 4 clients, as a question's ``parallel_calls`` sends them, and once by one
client, one after another: the seconds of each, on an otherwise idle machine. Each prompt is
preceded by a fresh nonce, so no slot reuses another's passage.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hopgraph.config import Context
from hopgraph.models.chat import ChatModel
from hopgraph.models.doctor import measure_speed
from hopgraph.models.embedded import EmbeddedServer
from hopgraph.models.llama_server import LlamaServer


def spin() -> None:  # a competing process: one core busy
    while True:
        pass


def measure(model_name: str, threads: int, batch: int, load: int, reps: int) -> dict:
    hogs = [mp.Process(target=spin, daemon=True) for _ in range(load)]
    for h in hogs:
        h.start()
    try:
        with EmbeddedServer(
            model_name, cache_dir=Context().cache_dir, n_threads=threads, n_threads_batch=batch
        ) as s:
            model = ChatModel(s.base_url, model_name, backend="llamacpp", timeout=1800)
            rates = measure_speed(model, reads=reps)
    finally:
        for h in hogs:
            h.kill()
    return {
        "n_threads": threads,
        "n_threads_batch": batch,
        "competing_busy_processes": load,
        **rates,
    }


def examinations(kb: str, n: int = 8) -> list[list[dict[str, str]]]:
    """``n`` examiner prompts, as MMAPG renders them, over the top passages of one search."""
    from hopgraph.agents.mmapg import EXAMINE_TEXT
    from hopgraph.tools.retrieval import knowledge_base

    ctx = Context(kb_dir=kb)
    instruction = "Find the year the first album of the band was released and its label."
    hits = knowledge_base(ctx).search("debut album release year record label", k=n)
    return [
        [
            {
                "role": "user",
                "content": f"[{uuid.uuid4().hex[:8]}] "
                + EXAMINE_TEXT.render(
                    ctx, instruction=instruction, title=c.get("title", ""), text=c["text"]
                ),
            }
        ]
        for c in hits
    ]


def measure_slots(model_name: str, slots: int, threads: int, batch: int, kb: str) -> dict:
    """Seconds for 8 examinations from 4 clients and from 1 (fresh prompts for each)."""
    row: dict = {"slots": slots, "n_threads": threads, "n_threads_batch": batch}
    with LlamaServer(
        model_name,
        cache_dir=Context().cache_dir,
        slots=slots,
        n_threads=threads,
        n_threads_batch=batch,
    ) as s:
        model = ChatModel(s.base_url, model_name, backend="llamacpp", timeout=1800)

        def call(messages: list[dict[str, str]]) -> None:
            model.complete(messages, role="examiner", max_tokens=120, temperature=0.0)

        call([{"role": "user", "content": "Say yes."}])  # loaded and warm
        for clients in (4, 1):
            prompts = examinations(kb)
            began = time.perf_counter()
            with ThreadPoolExecutor(clients) as pool:
                list(pool.map(call, prompts))
            row[f"seconds_{clients}_clients"] = round(time.perf_counter() - began, 1)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", type=Path)
    ap.add_argument(
        "--only-default",
        action="store_true",
        help="only the default: generation on cores - 1, prompt reading on all",
    )
    ap.add_argument("--slots", default="", help="llama-server slot counts to measure, e.g. 1,2,4,8")
    ap.add_argument("--kb", default="runs/hotpot-kb")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    if args.slots:
        default = (max(1, cores - 1), max(1, cores - 1))
        runs = [(int(n), *default) for n in args.slots.split(",")]
        others = [(cores, cores), (max(1, cores - 1), cores)]
        runs += [(4, t, b) for t, b in others if (t, b) != default]
        rows = []
        for slots, threads, batch in runs:
            rows.append(measure_slots(args.model, slots, threads, batch, args.kb))
            print(json.dumps(rows[-1]), flush=True)
        if args.out:
            args.out.write_text(
                json.dumps({"model": args.model, "cores": cores, "rows": rows}, indent=2) + "\n"
            )
        return
    rows = []
    configs = sorted(
        {(cores, cores), (max(1, cores - 1), max(1, cores - 1)), (max(1, cores - 1), cores)},
        reverse=True,
    )
    if args.only_default:
        configs = [(max(1, cores - 1), max(1, cores - 1))]
    for load in sorted({0, 1, cores}):
        for threads, batch in configs:
            row = measure(args.model, threads, batch, load, args.reps)
            print(json.dumps(row), flush=True)
            rows.append(row)
    report = {"model": args.model, "cores": cores, "rows": rows}
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
