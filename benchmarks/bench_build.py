"""The embedded model's speed per llama-cpp-python build (figures, not a test).

    .venv/bin/python benchmarks/bench_build.py --other DIR [--reps 3] [--out FILE]

The prebuilt wheel CI installs is portable (AVX2); a build from source targets the machine it
is built on (on an AVX-512 host: AVX-512, VNNI, BF16). This times the installed build and the
one unpacked in DIR (``pip wheel --no-deps llama-cpp-python==0.3.36`` then unzip the wheel)
with the embedded server's settings (one thread, logits for every position): a ~470-token
prompt read (prefill) and 48 greedy tokens (decode), each the median of ``--reps``, with a
fresh prompt prefix every time. Run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def measure(reps: int) -> dict:
    """Rates of the llama_cpp this interpreter imports (run in a child per build)."""
    import llama_cpp
    import numpy as np

    from hopgraph.config import Context
    from hopgraph.models.embedded import ensure_gguf

    ctx = Context()
    gguf = ensure_gguf(ctx.model, ctx.cache_dir)
    llm = llama_cpp.Llama(
        str(gguf), n_ctx=4096, n_threads=1, n_threads_batch=1, logits_all=True, verbose=False
    )
    filler = " ".join(
        f"Entry {i}: at dusk the keeper trimmed lamp {i % 7}, wiped the glass, and logged the wind."
        for i in range(20)
    )
    prefill, decode = [], []
    for rep in range(reps):
        tokens = llm.tokenize(f"Probe {time.time_ns()} {rep}. {filler}".encode())
        llm.reset()
        began = time.perf_counter()
        llm.eval(tokens)
        prefill.append(len(tokens) / (time.perf_counter() - began))
        began = time.perf_counter()
        for _ in range(48):
            llm.eval([int(np.argmax(llm.scores[llm.n_tokens - 1]))])
        decode.append(48 / (time.perf_counter() - began))
    return {
        "build": llama_cpp.llama_print_system_info().decode().strip(),
        "prompt_tokens": len(tokens),
        "prefill_tokens_per_s": round(statistics.median(prefill), 1),
        "decode_tokens_per_s": round(statistics.median(decode), 1),
    }


def child(pythonpath: str | None, reps: int) -> dict:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--reps", str(reps)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", help="folder holding another build's unpacked llama_cpp")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.reps)))
        return
    rows = {"installed": child(None, args.reps)}
    if args.other:
        rows["other"] = child(args.other, args.reps)
        base, other = rows["installed"], rows["other"]
        rows["other_over_installed"] = {
            k: round(other[k] / base[k], 2) for k in ("prefill_tokens_per_s", "decode_tokens_per_s")
        }
    text = json.dumps({"cores": os.cpu_count(), "rows": rows}, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
