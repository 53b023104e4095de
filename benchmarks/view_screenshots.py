"""The manual's screenshots of ``hopgraph view``, made from the committed records: the viewer
started on ``benchmarks/results`` as a reader would start it, each page shot by headless
Chromium once the app says it is ready. No model runs.

    .venv/bin/python benchmarks/view_screenshots.py        # -> docs/view-*.png
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import httpx

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RAG, FULL, SINGLE = (
    "hotpotqa/remeasure/rag",
    "hotpotqa/remeasure/full",
    "hotpotqa/remeasure/single-path",
)
LOSS = "5ae5dab455429929b08079d2"
"""An MMAPG loss the runs guide explains from its page (it answered Stamford Bridge)."""


def enc(rid: str) -> str:
    return quote(rid, safe="")


def pages(url: str) -> dict[str, tuple[str, str]]:
    """Each screenshot's file, its page and the window it is shot in."""
    mabdqa = httpx.get(f"{url}api/questions", params={"run": "mmlongbench/mabdqa-traced"}).json()
    cited = next((r["id"] for r in mabdqa["rows"]), "")
    return {
        "view-compare.png": (f"#/compare/{enc(RAG)}/{enc(FULL)}?metric=f1", "1400,1000"),
        "view-question.png": (f"#/run/{enc(FULL)}/q/{LOSS}", "1400,1100"),
        "view-question-causes.png": (f"#/run/{enc(FULL)}/q/{LOSS}?node=R2", "1400,1400"),
        "view-divergence.png": (f"#/compare/{enc(FULL)}/{enc(SINGLE)}/q/{LOSS}", "1400,1100"),
        "view-two-methods.png": (f"#/compare/{enc(RAG)}/{enc(FULL)}/q/{LOSS}", "1400,1300"),
        "view-optimize.png": (f"#/optimization/{enc('hotpotqa/optimize/mmapg')}", "1400,1100"),
        "view-pdf-region.png": (f"#/run/{enc('mmlongbench/mabdqa-traced')}/q/{cited}", "1400,2400"),
    }


def shoot(url: str, out: Path, window: str) -> None:
    subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--virtual-time-budget=20000",
            f"--window-size={window}",
            f"--screenshot={out}",
            url,
        ],
        check=True,
        capture_output=True,
        timeout=180,
    )


def main() -> None:
    proc = subprocess.Popen(
        [str(ROOT / ".venv/bin/hopgraph"), "view", "benchmarks/results", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        found = re.search(r"http://\S+/", line)
        if not found:
            sys.exit(f"hopgraph view did not start: {line}")
        url = found[0].replace("0.0.0.0", "127.0.0.1")
        httpx.get(f"{url}api/runs", timeout=600)  # every record read once: the pages then come
        for run in (RAG, FULL, SINGLE):  # at once, before Chromium's virtual clock runs out
            httpx.get(f"{url}api/questions", params={"run": run}, timeout=600)
        for name, (page, window) in pages(url).items():
            began = time.perf_counter()
            shoot(url + page, DOCS / name, window)
            print(f"{name}: {url}{page} ({time.perf_counter() - began:.1f} s)")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
