"""The knowledge base: index a corpus, search it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from hopgraph.cli.app import (
    KbDir,
    Sets,
    app,
    build_context,
    console,
    err,
    open_kb,
    refuse,
)


@app.command()
def index(
    source: str,
    kb: KbDir = "kb",
    fmt: Annotated[
        str,
        typer.Option("--format", help="auto | folder | pdf | hotpotqa | musique | multimodalqa"),
    ] = "auto",
    images: Annotated[str, typer.Option(help="MultimodalQA image folder")] = "",
    limit: Annotated[int | None, typer.Option(help="index at most this many items")] = None,
    no_render: Annotated[bool, typer.Option("--no-render", help="PDFs: skip page PNGs")] = False,
    ocr: Annotated[
        str,
        typer.Option(
            help="OCR for PDF pages without a text layer and for images: auto (RapidOCR, else "
            "tesseract) | rapidocr | tesseract | off"
        ),
    ] = "auto",
    no_ocr: Annotated[bool, typer.Option("--no-ocr", help="the same as --ocr off")] = False,
    triplets: Annotated[
        bool, typer.Option("--triplets", help="also store LLM-extracted triplets (MMAPG)")
    ] = False,
    cache: Annotated[
        str,
        typer.Option(
            "--cache",
            help="JSON-lines file of the triplet extractions (default <kb>/llm-cache.jsonl); "
            "a committed one rebuilds the KB without LLM calls",
        ),
    ] = "",
    sets: Sets = None,
) -> None:
    """Index a corpus into the knowledge base (re-running adds only what is new)."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from hopgraph.memory.indexing import index_source
    from hopgraph.models.errors import HopgraphModelError
    from hopgraph.models.ocr import ocr_engine

    if not Path(source).exists():
        refuse(f"nothing to index at {source}: no such file or folder")
    ocr = "off" if no_ocr else ocr
    try:
        ocr_engine(ocr)
    except (ValueError, HopgraphModelError) as e:
        refuse(f"--ocr {ocr}: {e}")
    store = open_kb(kb, sets)
    derive = None
    if triplets:
        from hopgraph.agents.triplets import extract_triplets
        from hopgraph.memory.cache import JsonCache
        from hopgraph.memory.indexing import triplet_items

        ctx = build_context(sets=sets)
        llm_cache = JsonCache(cache or store.path / "llm-cache.jsonl")

        def derive(item):
            return triplet_items(item, extract_triplets(item, ctx, llm_cache))

    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err
    ) as bar:
        task = bar.add_task(f"indexing {source}", total=None)

        def show(r):
            bar.update(
                task,
                description=(
                    f"indexing {source}: {r.items} items ({r.added} new, {r.existing} already "
                    f"there), {len(r.skipped)} skipped, "
                    f"{r.items / max(r.seconds, 1e-9):.3g} items/s"
                ),
            )

        report = index_source(
            store,
            source,
            fmt,
            limit=limit,
            images_dir=images or None,
            render_pages=not no_render,
            derive=derive,
            ocr=ocr,
            on_batch=show,
        )
    console.print(
        f"[bold]{report.source}[/bold] ({report.format}) -> {store.location}: "
        f"{report.added} added, {report.existing} already indexed, {len(report.skipped)} skipped, "
        + (f"{report.derived} triplets added, " if triplets else "")
        + (f"{report.visual} images in the visual space, " if report.visual else "")
        + f"{report.seconds:.1f}s ({report.items / max(report.seconds, 1e-9):.3g} items/s; "
        f"embedding {report.embed_seconds:.1f}s)"
    )
    console.print(
        "by modality: " + ", ".join(f"{k} {v}" for k, v in sorted(report.by_modality.items()))
    )
    for skip in report.skipped[:50]:
        console.print(f"  [yellow]skipped[/yellow] {skip.where}: {skip.reason}")
    if len(report.skipped) > 50:
        console.print(f"  ... and {len(report.skipped) - 50} more skipped")
    for note in report.notes:
        console.print(f"  [cyan]note[/cyan] {note}")
    if report.added == 0 and report.existing == 0 and _has_content(Path(source)):
        why = (
            f"; e.g. {report.skipped[0].where}: {report.skipped[0].reason}"
            if report.skipped
            else ""
        )
        refuse(
            f"nothing was indexed from {source} (read as {report.format}){why}. "
            + SHAPES.get(report.format, "")
            + " Name the source's format with --format hotpotqa | musique | multimodalqa | "
            "folder | pdf if it was read as another."
        )


SHAPES = {
    "hotpotqa": "A HotpotQA file is one JSON array of questions with context paragraphs.",
    "musique": "A MuSiQue file holds objects with paragraphs (JSON lines or one JSON array).",
    "multimodalqa": "A MultimodalQA folder holds MMQA_texts/tables/images JSON lines files.",
    "folder": "A folder is indexed from its .txt, .md, .pdf and image files.",
}
"""What each source format is read from, for the error when a source yields nothing."""


def _has_content(source: Path) -> bool:
    if source.is_file():
        return source.stat().st_size > 0
    return any(p.is_file() and p.stat().st_size for p in source.rglob("*"))


@app.command()
def search(
    query: str,
    kb: KbDir = "kb",
    k: Annotated[int, typer.Option("-k")] = 5,
    modality: Annotated[list[str] | None, typer.Option(help="text | table | image | page")] = None,
    source: Annotated[list[str] | None, typer.Option(help="only items from this source")] = None,
    radius: Annotated[float | None, typer.Option(help="cosine distance radius")] = None,
    sets: Sets = None,
) -> None:
    """Search the knowledge base (top-k, or everything within a radius)."""
    store = open_kb(kb, sets, must_exist=True)
    hits = store.search(query, k=k, modalities=modality, sources=source, radius=radius)
    table = Table(title=f"{len(hits)} hit(s) for {query!r}")
    table.add_column("score", no_wrap=True)
    # ids are what users copy into other commands: never cut, whatever the terminal width
    table.add_column("id", no_wrap=True, min_width=max((len(h["id"]) for h in hits), default=2))
    for col in ("modality", "title", "text"):
        table.add_column(col, overflow="fold")
    for h in hits:
        table.add_row(f"{h['score']:.3f}", h["id"], h["modality"], h["title"], h["text"][:120])
    console.print(table)
