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
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
from pathlib import Path

from hopgraph.config import Context
from hopgraph.models.chat import ChatModel
from hopgraph.models.doctor import measure_speed
from hopgraph.models.embedded import EmbeddedServer


def spin() -> None:  # a competing process: one core busy
    while True:
        pass


def measure(model_name: str, threads: int, batch: int, load: int, reps: int) -> dict:
    hogs = [mp.Process(target=spin, daemon=True) for _ in range(load)]
    for h in hogs:
        h.start()
    try:
        with EmbeddedServer(model_name, cache_dir=Context().cache_dir, n_threads=threads,
                            n_threads_batch=batch) as s:  # fmt: skip
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
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    rows = []
    configs = sorted({(cores, cores), (max(1, cores - 1), max(1, cores - 1)),
                      (max(1, cores - 1), cores)}, reverse=True)  # fmt: skip
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
