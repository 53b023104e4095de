"""GRAIL with a trained alignment adapter, by KB size: steering over the KB's projection kept in
the engine (what ``grail_for`` does now) against loading every vector into the process and
projecting it there (``MatrixSearcher.from_kb``, the exact path kept for evaluation). Figures,
not a test (issue 58 item 4).

    .venv/bin/python benchmarks/bench_grail_projected.py [--sizes 10000,100000]
        [--places local,server] [--steps 50] [--out benchmarks/results/grail-projected.json]

For each place (local: the embedded Chroma of a KB folder, whose indexes live in the process;
server: ``chroma run`` on loopback, where they live in the server, its registry in PostgreSQL)
one KB grows through the sizes (random unit 384-d vectors, as ``bench_kb_scale.py``; added
without ``hopgraph index``, so a server KB's state is read from its item counts). At each size:
the first steered search through ``grail_for``, which builds the projection for this KB state;
then each path in a fresh process: its first search (opening the projection, or loading and
projecting the matrix), the median of ``--steps`` steered searches (gap-fixed, 3 held items) and
how much that process's resident memory grew beyond a warm start.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bench_kb_scale import DIM, grow, rss_mb, unit_vectors  # noqa: E402
from servers import fresh_database, start_chroma, start_postgres  # noqa: E402

from hopgraph.graphs import every_context  # noqa: E402
from hopgraph.memory.kb import KnowledgeBase  # noqa: E402
from hopgraph.runtime import close_all  # noqa: E402
from hopgraph.tools.grail.models import GrailModel  # noqa: E402
from hopgraph.tools.grail.retrieval import Grail, MatrixSearcher  # noqa: E402
from hopgraph.tools.grail.tool import steerable_search  # noqa: E402

Context = every_context()  # every built-in method's knobs (the runner keeps each graph's)


def adapter(folder: Path) -> Path:
    """Weights whose adapter moves the space (a seeded rotation), saved as training saves."""
    torch.manual_seed(0)
    model = GrailModel(DIM, align=True)
    with torch.no_grad():
        model.aligner.weight.copy_(torch.linalg.qr(torch.randn(DIM, DIM))[0])
    model.save(folder, {"bench": "rotation"})
    return folder


def timed(fn) -> float:  # noqa: ANN001
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def one_path(path: str, ctx: Context, queries: np.ndarray) -> dict[str, Any]:
    """In a process of its own: ``--steps`` steered searches through the projection (as every
    process that steers after the first does) or through the matrix (loaded and projected
    first), and how much that process's resident memory grew beyond its warm start."""
    kb = KnowledgeBase.from_context(ctx)
    held = [f"text-{i:08d}" for i in range(3)]
    assert kb.embedder.dim == DIM and kb.counts()  # the embedder and Chroma loaded before
    steerable_search(
        queries[0], ctx.replace(grail_weights=""), k=10, held=held, steer="gap-fixed"
    )  # GRAIL's code and torch warm, no adapter
    before = rss_mb(os.getpid())
    if path == "projected":

        def step(q: np.ndarray) -> None:
            steerable_search(q, ctx, k=10, held=held, steer="gap-fixed")

        load = timed(lambda: step(queries[0]))
    else:
        began = time.perf_counter()
        grail = Grail(MatrixSearcher.from_kb(kb), GrailModel.load(ctx.grail_weights))
        load = time.perf_counter() - began

        def step(q: np.ndarray) -> None:
            grail.search(torch.as_tensor(q), held, 10, "gap-fixed")

    ms = statistics.median(timed(lambda q=q: step(q)) for q in queries[1:]) * 1000
    return {
        f"{path}_open_s": round(load, 2),
        f"{path}_step_ms": round(ms, 2),
        f"{path}_rss_growth_mb": round(rss_mb(os.getpid()) - before),
    }


def measure(ctx: Context, queries: np.ndarray) -> dict[str, Any]:
    """The first steered search here (it builds the projection for this KB state), then each
    path in a fresh process."""
    held = [f"text-{i:08d}" for i in range(3)]
    row: dict[str, Any] = {
        "projected_first_s": round(
            timed(lambda: steerable_search(queries[0], ctx, k=10, held=held, steer="gap-fixed")), 2
        )
    }
    for path in ("projected", "matrix"):
        spec = json.dumps(
            {
                "path": path,
                "context": {k: getattr(ctx, k) for k in FIELDS},
                "steps": len(queries) - 1,
            }
        )
        out = subprocess.run(
            [sys.executable, __file__, "--one", spec], capture_output=True, text=True, check=True
        )
        row |= json.loads(out.stdout.strip().splitlines()[-1])
    return row


FIELDS = ("kb_dir", "chroma_url", "registry_url", "grail_weights")


def the_queries(steps: int) -> np.ndarray:
    """The same query vectors in every process: the first opens, the rest are timed."""
    return unit_vectors(np.random.default_rng(7), steps + 1)


def grow_and_measure(place: str, root: Path, weights: Path, a, queries) -> list[dict]:  # noqa: ANN001
    rng = np.random.default_rng(58)
    server, url = start_chroma(root / "server") if place == "server" else (None, "")
    registry, stop = "", None
    if server is not None:  # a server KB keeps its registry in PostgreSQL (issue 58 item 2)
        pg, stop = start_postgres()
        registry = fresh_database(pg, "grail_projected")
    ctx = Context(
        kb_dir=str(root / "kb"), chroma_url=url, registry_url=registry, grail_weights=str(weights)
    )
    rows, have = [], 0
    try:
        for size in [int(s) for s in a.sizes.split(",")]:
            grow(KnowledgeBase.from_context(ctx), rng, have, size)
            have = size
            close_all()  # a fresh process's caches: the GRAIL steerer is made anew
            row = {"place": place, "vectors": size, **measure(ctx, queries)}
            if server is not None:
                row["server_rss_mb"] = round(rss_mb(server.pid))
            print(json.dumps(row), flush=True)
            rows.append(row)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        if stop is not None:
            stop()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--places", default="local,server")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--one", help=argparse.SUPPRESS)  # a path's own process (``measure``)
    a = ap.parse_args()
    if a.one:
        spec = json.loads(a.one)
        ctx = Context(**spec["context"])
        print(json.dumps(one_path(spec["path"], ctx, the_queries(spec["steps"]))))
        return
    queries = the_queries(a.steps)
    rows = []
    with tempfile.TemporaryDirectory(prefix="hopgraph-grail-projected-") as tmp:
        weights = adapter(Path(tmp) / "w")
        for place in a.places.split(","):
            rows += grow_and_measure(place, Path(tmp) / place, weights, a, queries)
    report = {
        "what": "GRAIL with a trained adapter: the projection in the engine vs the matrix in "
        "the process (issue 58 item 4)",
        "command": "python benchmarks/bench_grail_projected.py --out "
        "benchmarks/results/grail-projected.json",
        "machine": {"cores": os.cpu_count()},
        "steps": a.steps,
        "rows": rows,
    }
    if a.out:
        a.out.write_text(json.dumps(report, indent=1) + "\n")


def render(reports: list[dict[str, Any] | None]) -> list[str]:
    """bench_grail_projected: the projection's first build and steps beside the matrix's."""
    (rep,) = reports
    if not rep:
        return ["Not measured yet.", ""]
    out = [
        "GRAIL with a trained alignment adapter on a KB of random unit 384-d vectors (local, and "
        "on `chroma run` with its registry in PostgreSQL, its items counted for its state): the "
        "KB's projection kept in Chroma (built by the first steered search of a KB state, then "
        "shared by every process) against every vector loaded and projected in the process. "
        "Each path runs in a fresh process: its first search (opening the projection, or "
        f"loading the matrix), the median of {rep['steps']} steered searches (gap-fixed, 3 held "
        "items) and how much its resident memory grew beyond a warm start (a local KB's Chroma "
        "indexes, the projection's included, live in the process; a server's in the server).",
        "",
        "| where | vectors | projection: first search (builds it) s | a process's first search s "
        "| step p50 ms | RSS growth MB | matrix: load s | step p50 ms | RSS growth MB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rep["rows"]:
        out.append(
            f"| {r['place']} | {r['vectors']:,} | {r['projected_first_s']:.1f} | "
            f"{r['projected_open_s']:.2f} | {r['projected_step_ms']:.2f} | "
            f"{r['projected_rss_growth_mb']:,} | {r['matrix_open_s']:.1f} | "
            f"{r['matrix_step_ms']:.2f} | {r['matrix_rss_growth_mb']:,} |"
        )
    return [*out, ""]


if __name__ == "__main__":
    main()
