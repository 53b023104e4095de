"""Page-embedding speed of a ColPali-sized model on the GPU and on the CPU (figures, not a test).

    python benchmarks/bench_page_embedder.py [--pages 64] [--cpu-pages 2] [--out FILE]

No ColPali weights reach our machines, so this builds ColPali-v1.3's architecture (PaliGemma-3B:
a SigLIP-So400m tower over 448-px pages, 1,024 image tokens, a Gemma-2B tower, 128-d vectors)
from its config with random weights in bf16, saves it, and times hopgraph's ``PageEmbedder``
loading and embedding rendered-page-sized images on each device, as MAB-DQA's indexing does.
Speed does not depend on the weights' values; the vectors mean nothing and are thrown away.
The word-level test tokenizer replaces Gemma's 257k vocabulary, which leaves out the embedding
table's memory but none of the work per token. ``--tiny`` runs the test-sized model instead
(to check the script on a CPU machine).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image, ImageDraw

TESTS = Path(__file__).resolve().parents[1] / "tests"  # tiny_models builds the model
COLPALI_V13 = dict(
    vision=dict(
        hidden_size=1152, intermediate_size=4304, num_hidden_layers=27, num_attention_heads=16
    ),
    text=dict(
        hidden_size=2048,
        intermediate_size=16384,
        num_hidden_layers=18,
        num_attention_heads=8,
        num_key_value_heads=1,
        head_dim=256,
    ),
    image_size=448,
    patch_size=14,
    projection_dim=2048,
    embedding_dim=128,
    dtype="bfloat16",
)
"""vidore/colpali-v1.3-hf's sizes (PaliGemma-3B at 448 px)."""


def page(i: int) -> Image.Image:
    """An A4 page at 150 dpi with a heading, lines of text and a chart block."""
    im = Image.new("RGB", (1240, 1754), "white")
    draw = ImageDraw.Draw(im)
    draw.text((100, 100), f"Report page {i}", fill="black")
    for line in range(40):
        draw.text((100, 160 + 30 * line), f"line {line}: figures for quarter {line % 4}", "black")
    draw.rectangle((700, 1400, 700 + 12 * (i % 30), 1650), fill=(200, 40, 40))
    return im


def measure(folder: str, device: str, n: int, batch: int) -> dict:
    import torch

    from hopgraph.models import embedders

    embedders.torch_device = lambda: device  # this benchmark's choice, not the machine's
    start = time.perf_counter()
    emb = embedders.PageEmbedder(folder, batch_size=batch)
    load_s = time.perf_counter() - start
    pages = [page(i) for i in range(n)]
    emb.encode_pages(pages[:1])  # warm-up: kernels, caches
    start = time.perf_counter()
    vectors = emb.encode_pages(pages)  # CPU arrays: the device has finished
    seconds = time.perf_counter() - start
    emb.encode_query("which page shows revenue by quarter")
    start = time.perf_counter()
    for _ in range(10):
        emb.encode_query("which page shows revenue by quarter")
    query_ms = (time.perf_counter() - start) * 100
    row = {
        "device": torch.cuda.get_device_name()
        if device == "cuda"
        else f"cpu x{torch.get_num_threads()}",
        "dtype": str(emb.model.dtype).removeprefix("torch."),
        "parameters": sum(p.numel() for p in emb.model.parameters()),
        "load_s": round(load_s, 2),
        "pages": n,
        "batch": batch,
        "seconds": round(seconds, 3),
        "pages_per_s": round(n / seconds, 3),
        "vectors_per_page": int(vectors[0].shape[0]),
        "dim": int(vectors[0].shape[1]),
        "query_ms": round(query_ms, 2),
    }
    del emb
    if device == "cuda":
        row["peak_gpu_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
        torch.cuda.empty_cache()
    return row


def render(reports: list[dict | None]) -> list[str]:
    """The page's lines for this benchmark's report."""
    (rep,) = reports
    if not rep:
        return ["Not measured yet.", ""]
    first = rep["rows"][0]
    out = [
        f"{rep['model']} ({first['parameters'] / 1e9:.2f} B parameters, "
        f"{first['vectors_per_page']} vectors of {first['dim']} dims a page), embedded by "
        f"`PageEmbedder` in batches of {first['batch']}; torch {rep['torch']}, measured through "
        "the device tool on a lent H100 machine.",
        "",
        "| device | dtype | pages | pages / s | query ms | load s | peak GPU GiB |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rep["rows"]:
        out.append(
            f"| {r['device']} | {r['dtype']} | {r['pages']} | {r['pages_per_s']:.2f} | "
            f"{r['query_ms']:.0f} | {r['load_s']:.1f} | {r.get('peak_gpu_gib', '')} |"
        )
    if "gpu_speedup" in rep:
        out += [
            "",
            f"The GPU embeds pages {rep['gpu_speedup']:.0f}x faster than the same machine's "
            f"CPU ({rep['rows'][1]['device']}); before this change the page and image "
            "embedders stayed on the CPU even where a GPU was present (the CPU row is what "
            "they ran at).",
        ]
    return [*out, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=64, help="pages timed on the GPU")
    parser.add_argument("--cpu-pages", type=int, default=2, help="pages timed on the CPU")
    parser.add_argument("--batch", type=int, default=4, help="PageEmbedder's batch size")
    parser.add_argument("--tiny", action="store_true", help="the test-sized model")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    import torch

    sys.path.insert(0, str(TESTS))
    from tiny_models import tiny_colpali

    folder = tempfile.mkdtemp(prefix="colpali-sized-")
    start = time.perf_counter()
    tiny_colpali(Path(folder), **({} if args.tiny else COLPALI_V13))
    built_s = time.perf_counter() - start
    report = {
        "model": "test-sized ColPali" if args.tiny else "ColPali-v1.3 architecture, random bf16",
        "torch": torch.__version__,
        "built_s": round(built_s, 1),
        "rows": [],
    }
    devices = (["cuda"] if torch.cuda.is_available() else []) + ["cpu"]
    for device in devices:  # the report is written after each row: a slow CPU loses no GPU row
        n = args.pages if device == "cuda" else args.cpu_pages
        report["rows"].append(measure(folder, device, n, args.batch))
        if len(report["rows"]) == 2:
            gpu, cpu = report["rows"]
            report["gpu_speedup"] = round(gpu["pages_per_s"] / cpu["pages_per_s"], 1)
        print(json.dumps(report["rows"][-1]), flush=True)
        if args.out:
            args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
