"""Several indexers on one server KB (issue 58 item 3): the same folder of HotpotQA passages (one
file each) indexed into a KB on `chroma run` with its registry in PostgreSQL, by one `hopgraph
index` and then, on a fresh server and database, by two started together, in one run.

    .venv/bin/python benchmarks/bench_kb_indexers.py [--files 400] [--out FILE]

Each source is leased to one indexer, so two read disjoint sources; on 2 cores the embedding is
CPU-bound, so the figure says what a second indexer buys on this machine (on several machines
each brings its own cores).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from servers import fresh_database, start_chroma, start_postgres  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def write_corpus(folder: Path, n: int) -> int:
    """The first ``n`` passages of the HotpotQA corpus, one text file each."""
    corpus = json.loads((DATA / "hotpotqa" / "hotpotqa_train_corpus.json").read_text())
    folder.mkdir(parents=True)
    titles = list(corpus)[:n]  # title -> its sentences
    for i, title in enumerate(titles):
        (folder / f"p{i:05d}.txt").write_text(f"{title}\n\n{''.join(corpus[title])}")
    return len(titles)


def index_with(workers: int, corpus: Path, root: Path, pg: str) -> dict:
    """``workers`` indexers over ``corpus`` into a fresh server KB; wall time and items."""
    server, url = start_chroma(root / f"chroma-{workers}")
    registry = fresh_database(pg, f"indexers_{workers}")
    sets = ["--set", f"chroma_url={url}", "--set", f"registry_url={registry}"]
    cmd = [sys.executable, "-m", "hopgraph.cli", "index", str(corpus), "--no-ocr", *sets]
    try:
        began = time.perf_counter()
        procs = [
            subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            for _ in range(workers)
        ]
        outs = [p.communicate(timeout=3600)[0] for p in procs]
        wall = time.perf_counter() - began
        assert all(p.returncode == 0 for p in procs), outs
    finally:
        server.terminate()
        server.wait(timeout=60)
    added = sum(int(o.split(" added")[0].rsplit(" ", 1)[-1]) for o in outs if " added" in o)
    return {
        "workers": workers,
        "seconds": round(wall, 2),
        "items": added,
        "items_per_s": round(added / wall, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=400)
    ap.add_argument("--out", default="benchmarks/results/kb-indexers.json")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kb-indexers-"))
    n = write_corpus(root / "corpus", args.files)
    pg, stop = start_postgres()
    try:
        rows = [index_with(w, root / "corpus", root, pg) for w in (1, 2)]
    finally:
        stop()
    report = {
        "what": "one server KB indexed by 1 and by 2 concurrent indexers (issue 58 item 3)",
        "command": "python benchmarks/bench_kb_indexers.py " + " ".join(sys.argv[1:]),
        "machine": {"cores": os.cpu_count()},
        "files": n,
        "rows": rows,
        "speedup": round(rows[1]["items_per_s"] / rows[0]["items_per_s"], 3),
    }
    print(json.dumps(report, indent=2))
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
