"""The knowledge base: index a corpus, search it, and list, count or remove its sources."""

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
    interrupted,
    name_column,
    open_kb,
    refuse,
    within,
)
from hopgraph.cli.progress import Quiet, Steps

Source = Annotated[str, typer.Argument(help="a file, a folder, or a benchmark's corpus JSON")]


Fmt = Annotated[
    str,
    typer.Option("--format", help="auto | folder | pdf | hotpotqa | musique | multimodalqa"),
]
Limit = Annotated[
    int | None, typer.Option(help="index at most this many items", callback=within(1))
]
Ocr = Annotated[
    str,
    typer.Option(
        help="OCR for PDF pages without a text layer and for images: auto (RapidOCR, else "
        "tesseract) | rapidocr | tesseract | off"
    ),
]
Triplets = Annotated[
    bool, typer.Option("--triplets", help="also store LLM-extracted triplets (MMAPG)")
]
Cache = Annotated[
    str,
    typer.Option(
        "--cache",
        help="JSON-lines file of the triplet extractions (default KB/llm-cache.jsonl); "
        "a committed one rebuilds the KB without LLM calls",
    ),
]
Prune = Annotated[
    bool,
    typer.Option("--prune", help="remove sources that vanished from the indexed folder"),
]
FollowLinks = Annotated[
    bool,
    typer.Option(
        "--follow-links",
        help="also index files that links in the folder lead to outside it (skipped and "
        "listed by default)",
    ),
]


@app.command()
def index(
    source: Source,
    kb: KbDir = "kb",
    fmt: Fmt = "auto",
    images: Annotated[str, typer.Option(help="MultimodalQA image folder")] = "",
    limit: Limit = None,
    no_render: Annotated[bool, typer.Option("--no-render", help="PDFs: skip page PNGs")] = False,
    ocr: Ocr = "auto",
    no_ocr: Annotated[bool, typer.Option("--no-ocr", help="the same as --ocr off")] = False,
    triplets: Triplets = False,
    cache: Cache = "",
    prune: Prune = False,
    follow_links: FollowLinks = False,
    sets: Sets = None,
    quiet: Quiet = False,
) -> None:
    """Index a corpus into the knowledge base. Re-running reads only the files that changed
    (their old items are replaced) and reports those that vanished (--prune removes them)."""
    from hopgraph.models.errors import HopgraphModelError
    from hopgraph.models.ocr import ocr_engine

    _refuse_if_no_source(Path(source))
    ocr = "off" if no_ocr else ocr
    try:
        ocr_engine(ocr)
    except (ValueError, HopgraphModelError) as e:
        refuse(f"--ocr {ocr}: {e}")
    new_folder = not Path(kb).exists()
    store = open_kb(kb, sets)
    try:
        report = _index_into(
            store,
            source,
            fmt,
            triplets,
            sets,
            cache,
            limit=limit,
            images_dir=images or None,
            render_pages=not no_render,
            ocr=ocr,
            prune=prune,
            follow_links=follow_links,
            quiet=quiet,
        )
    except KeyboardInterrupt:
        interrupted(130, kept=INDEX_KEPT)
    except SystemExit as e:  # SIGTERM (install_sigterm_handler)
        if e.code == 143:
            interrupted(143, kept=INDEX_KEPT)
        raise
    except (typer.Exit, Exception) as e:  # refused (exit 2) or failed: leave no new KB behind
        if new_folder and store.is_local and getattr(e, "exit_code", 2) == 2:
            forget_kb(store)
        raise
    if report.failed:
        err.print(
            f"[red]error:[/red] {len(report.failed)} source(s) could not be read (listed "
            "above as failed; an earlier version of one stays as it was); the others are "
            "indexed. Fix or remove them and index again: only they are read."
        )
        raise typer.Exit(SOURCES_FAILED)


def _refuse_if_no_source(source: Path) -> None:
    if not source.exists():
        refuse(f"nothing to index at {source}: no such file or folder")
    if source.is_dir() and next(source.iterdir(), None) is None:
        refuse(f"nothing to index at {source}: the folder is empty")


def _index_into(store, source: str, fmt: str, triplets: bool, sets, cache: str, **options):  # noqa: ANN001, ANN003, ANN202
    """The index's work on an open KB: its triplet deriver, the sources read with a live
    line, the report printed, a refusal where nothing was stored."""
    if store.registry is None:  # a server KB would keep every version of an edited file
        refuse(no_registry(store))
    derive = _triplets(store, sets, cache) if triplets else None
    report = _index_showing_progress(store, source, fmt, derive=derive, **options)
    _print_report(report, store.location, source, triplets)
    _refuse_if_nothing(report, source)
    return report


def _index_showing_progress(store, source: str, fmt: str, quiet: bool = False, **options):  # noqa: ANN001, ANN003, ANN202
    """``index_source`` showing its progress (``cli.progress``): items so far, new and
    already there, speed; a plain line at most every 10 s where stderr is no terminal."""
    from hopgraph.memory.indexing import index_source

    with Steps(f"indexing {source}", quiet=quiet, every=10.0, unit="items") as steps:

        def show(r):  # noqa: ANN001, ANN202
            steps.step(
                r.items,
                f"{r.added} new, {r.existing} already there, "
                f"{len(r.skipped)} skipped, {r.items / max(r.seconds, 1e-9):.3g} "
                "items/s",
            )

        return index_source(store, source, fmt, on_batch=show, **options)


def _triplets(store, sets, cache: str):  # noqa: ANN001, ANN202 - a KB; a derive function
    """MMAPG's triplet extraction (Eq. 1-2) for each text item, its replies kept in ``cache``
    (default ``<kb>/llm-cache.jsonl``)."""
    from hopgraph.agents.mmapg import extract_triplets
    from hopgraph.memory.cache import JsonCache
    from hopgraph.memory.indexing import triplet_items

    ctx = build_context(sets=sets)
    llm_cache = JsonCache(cache or store.path / "llm-cache.jsonl")
    return lambda item: triplet_items(item, extract_triplets(item, ctx, llm_cache))


def _print_report(report, location: str, source: str, triplets: bool) -> None:  # noqa: ANN001
    """What an index did: counts and speed, then each skipped, failed, pruned and vanished
    source and every note."""
    from hopgraph.memory.files import Failed

    console.print(
        f"[bold]{report.source}[/bold] ({report.format}) -> {location}: "
        f"{report.added} added, {report.existing} already indexed, "
        + (f"{report.unchanged} unchanged source(s) not read, " if report.unchanged else "")
        + (f"{len(report.replaced)} changed source(s) replaced, " if report.replaced else "")
        + (f"{report.removed} old item(s) removed, " if report.removed else "")
        + f"{len(report.skipped)} skipped, "
        + (f"{report.derived} triplets added, " if triplets else "")
        + (f"{report.visual} images in the visual space, " if report.visual else "")
        + f"{report.seconds:.1f}s ({report.items / max(report.seconds, 1e-9):.3g} items/s; "
        f"embedding {report.embed_seconds:.1f}s)"
    )
    console.print(
        "by modality: " + ", ".join(f"{k} {v}" for k, v in sorted(report.by_modality.items()))
    )
    for skip in report.skipped[:50]:
        tag = "[red]failed[/red]" if isinstance(skip, Failed) else "[yellow]skipped[/yellow]"
        console.print(f"  {tag} {skip.where}: {skip.reason}")
    if len(report.skipped) > 50:
        console.print(f"  ... and {len(report.skipped) - 50} more skipped")
    for note in report.notes:
        console.print(f"  [cyan]note[/cyan] {note}")
    root = str(Path(source).resolve())
    for gone in report.pruned:
        where = (
            f"its copy {report.copied[gone]} is indexed"
            if gone in report.copied
            else f"gone from {source}"
        )
        console.print(f"  [red]removed[/red] {gone}: {where}")
    for gone in report.vanished:
        where = (
            f"a copy of the original, {report.copied[gone]}, is indexed here"
            if gone in report.copied
            else f"gone from {source}"
            if gone.startswith(root + "/")
            else "no longer on disk"
        )
        console.print(
            f"  [yellow]vanished[/yellow] {gone}: {where}, its items kept "
            "(--prune, or `hopgraph kb rm`, removes them)"
        )


def _refuse_if_nothing(report, source: str) -> None:  # noqa: ANN001
    """An index that stored nothing is refused (exit 2), saying why: every source failed, each
    entry was skipped (a FIFO, a dead link), or the source was read as another format (a new
    local KB folder is then removed)."""
    nothing = report.added == 0 and report.existing == 0 and not report.unchanged
    if nothing and report.failed:
        refuse(
            f"nothing was indexed from {source}: "
            + "; ".join(f"{f.where}: {f.reason}" for f in report.failed[:3])
            + (f" (and {len(report.failed) - 3} more)" if len(report.failed) > 3 else "")
        )
    if nothing and (report.skipped or _has_content(Path(source))):
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


SOURCES_FAILED = 3
"""``hopgraph index``'s exit status when some sources could not be read (the rest indexed)."""
INDEX_KEPT = "sources indexed whole are kept (one cut short stays hidden until it is whole)"


def forget_kb(store) -> None:  # noqa: ANN001 - a KnowledgeBase
    """Remove a local KB folder this command made and filled with nothing."""
    import shutil

    from hopgraph.runtime import close_all

    store.close()
    close_all()  # the process's Chroma client of that folder
    shutil.rmtree(store.path, ignore_errors=True)


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
    query: Annotated[str, typer.Argument(help="what to find, in words")],
    kb: KbDir = "kb",
    k: Annotated[int, typer.Option("-k", help="hits at most", callback=within(1, 10_000))] = 5,
    modality: Annotated[list[str] | None, typer.Option(help="text | table | image | page")] = None,
    source: Annotated[list[str] | None, typer.Option(help="only items from this source")] = None,
    radius: Annotated[
        float | None, typer.Option(help="cosine distance radius", callback=within(0, 2))
    ] = None,
    sets: Sets = None,
) -> None:
    """Search the knowledge base (top-k, or everything within a radius)."""
    store = open_kb(kb, sets, must_exist=True).for_queries()
    hits = store.search(query, k=k, modalities=modality, sources=source, radius=radius)
    table = Table(title=f"{len(hits)} hit(s) for {query!r}")
    table.add_column("score", no_wrap=True)
    name_column(table, "id", (h["id"] for h in hits))
    for col in ("modality", "title", "text"):
        table.add_column(col, overflow="fold")
    for h in hits:
        table.add_row(f"{h['score']:.3f}", h["id"], h["modality"], h["title"], h["text"][:120])
    console.print(table)


JsonOut = Annotated[bool, typer.Option("--json", help="print JSON")]
kb_app = typer.Typer(
    rich_markup_mode="markdown",
    help="The knowledge base's sources: list, count, remove.",
    no_args_is_help=True,
)
app.add_typer(kb_app, name="kb")


def no_registry(store) -> str:  # noqa: ANN001 - a KnowledgeBase
    return (
        f"{store.location} is a Chroma server and no source registry is configured for it, so "
        "an edited source would keep its old version there: set registry_url to a PostgreSQL "
        "database every machine using this KB reaches (--set registry_url=postgresql://user@"
        "host/db, or HOPGRAPH_REGISTRY_URL)"
    )


def unregistered(store) -> str:  # noqa: ANN001 - a KnowledgeBase
    """What to say of a server KB whose collections hold items while its registry names no
    source (indexed before ``registry_url`` was set, or with another registry): '' if none."""
    if store.registry is None or store.registry.sources():
        return ""
    held = sum(store.counts().values())
    if not held:
        return ""
    return (
        f"{store.location} holds {held} item(s) that no source of its registry names (indexed "
        "without this registry_url, or with another): no edit or removal of their sources can "
        "reach them. Adopt them by indexing their sources again with this registry (`hopgraph "
        "index SOURCE`: unchanged items are registered, not embedded again), or rebuild: "
        "`hopgraph kb drop --yes`, then index"
    )


def _registered(kb: str, sets):  # noqa: ANN001, ANN202
    store = open_kb(kb, sets, must_exist=True)
    if store.registry is None:
        refuse(no_registry(store))
    return store


@kb_app.command("ls")
def kb_ls(kb: KbDir = "kb", as_json: JsonOut = False, sets: Sets = None) -> None:
    """Every indexed source: its path, size, content hash, items per modality and settings."""
    store = _registered(kb, sets)
    sources = store.registry.sources()
    if note := unregistered(store):
        err.print(f"[yellow]note:[/yellow] {note}")
    if as_json:
        console.print_json(data=[vars(s) for s in sources])
        return
    table = Table(title=f"{len(sources)} source(s) in {store.location}")
    for col in ("source", "format", "bytes", "sha256", "items", "settings"):
        table.add_column(col, overflow="fold")
    for s in sources:
        items = ", ".join(f"{m} {n}" for m, n in sorted(s.counts.items())) or "none"
        state = "" if not s.pending else " [yellow](unfinished: index again)[/yellow]"
        settings = ", ".join(f"{k}={v}" for k, v in s.build.items() if k != "format" and v)
        state += "" if Path(s.path).exists() else " [red](missing)[/red]"
        table.add_row(s.path + state, _kind(s), str(s.size), (s.sha256 or "")[:12], items, settings)
    console.print(table)


def _kind(source) -> str:  # noqa: ANN001 - a registry Source
    """A source's kind as read: a folder's file by its extension (``txt in folder``), else the
    format it was indexed as."""
    if source.format != "folder":
        return source.format
    return f"{Path(source.path).suffix.lstrip('.').lower() or 'file'} in folder"


@kb_app.command("stats")
def kb_stats(kb: KbDir = "kb", as_json: JsonOut = False, sets: Sets = None) -> None:
    """Items per modality and collection, and the sources they came from."""
    store = open_kb(kb, sets, must_exist=True)
    from hopgraph.memory.visual import VisualSpace

    counts = store.counts() | {"visual": VisualSpace(store).count()}
    sources = store.registry.sources() if store.registry is not None else []
    out = {
        "kb": store.location,
        "collections": counts,
        "sources": len(sources),
        "unfinished": sum(bool(s.pending) for s in sources),
        "awaiting removal": len(store.registry.garbage()) if store.registry else 0,
    }
    if note := unregistered(store):
        err.print(f"[yellow]note:[/yellow] {note}")
    if as_json:
        console.print_json(data=out)
        return
    for key, value in out.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items())
        console.print(f"{key}: {value}")


@kb_app.command("drop")
def kb_drop(
    yes: Annotated[bool, typer.Option("--yes", help="drop it: nothing is dropped without")] = False,
    kb: KbDir = "kb",
    sets: Sets = None,
) -> None:
    """Remove the whole KB: every hopgraph collection at its location (a Chroma server's
    included) and every source its registry names, so that it can be rebuilt."""
    from hopgraph.memory.garbage import remove_source
    from hopgraph.memory.kb import COLLECTION_PREFIX

    store = open_kb(kb, sets, must_exist=True)
    if store.is_local:
        refuse(f"{store.location} is a local KB: remove its folder (rm -r {store.location})")
    names = [getattr(c, "name", c) for c in store.client.list_collections()]
    names = [n for n in names if n.startswith(COLLECTION_PREFIX)]
    sources = store.registry.sources() if store.registry is not None else []
    if not yes:
        refuse(
            f"this would drop {len(names)} collection(s) and {len(sources)} registered "
            f"source(s) of {store.location}: add --yes"
        )
    for s in sources:
        remove_source(store, s.path)
    for name in names:
        store.client.delete_collection(name)
    console.print(
        f"{store.location}: {len(names)} collection(s) and {len(sources)} source(s) dropped"
    )


@kb_app.command("rm")
def kb_rm(
    sources: Annotated[list[str], typer.Argument(help="source paths, as `hopgraph kb ls` shows")],
    kb: KbDir = "kb",
    sets: Sets = None,
) -> None:
    """Remove sources and every item derived from them (an item another source also holds,
    such as the same image in two places, stays)."""
    from hopgraph.memory.garbage import remove_source

    store = _registered(kb, sets)
    known = {s.path for s in store.registry.sources()}
    keys = [s if s in known else str(Path(s).resolve()) for s in sources]
    missing = [s for s, k in zip(sources, keys, strict=True) if k not in known]
    if missing:
        refuse(f"not a source of {store.location}: {', '.join(missing)} (see `hopgraph kb ls`)")
    for key in keys:
        console.print(f"{key}: {remove_source(store, key)} item(s) removed")
