"""The ``hopgraph`` command."""

from __future__ import annotations

import logging
import sys
import time
from typing import Annotated

import typer
from hopgraph.config import Context, parse_sets
from rich.console import Console
from rich.table import Table

app = typer.Typer(
    help="hopgraph: multimodal multi-hop question answering on LangGraph.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

BaseUrl = Annotated[
    str, typer.Option("--base-url", help="OpenAI-compatible endpoint; default: embedded llama.cpp")
]
ModelName = Annotated[str, typer.Option("--model", help="model name served at --base-url")]
PromptsDir = Annotated[str, typer.Option("--prompts", help="folder of .j2 overrides")]
Sets = Annotated[
    list[str] | None, typer.Option("--set", help="any Context field: key=value (repeatable)")
]


def build_context(base_url: str = "", model: str = "", prompts: str = "", sets=None) -> Context:
    """Context from defaults, HOPGRAPH_* environment, then command-line options (which win)."""
    changes: dict[str, str] = parse_sets(sets)
    for key, value in (("base_url", base_url), ("model", model), ("prompts_dir", prompts)):
        if value:
            changes[key] = value
    return Context().replace(**changes)


@app.callback()
def _setup(verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False) -> None:
    from hopgraph.models.embedded import install_sigterm_handler

    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    install_sigterm_handler()


@app.command()
def serve(
    model: ModelName = "",
    sets: Sets = None,
) -> None:
    """Run the embedded llama.cpp server in the foreground and print its base URL."""
    from hopgraph.models import embedded_server

    ctx = build_context(model=model, sets=sets)
    began = time.perf_counter()
    server = embedded_server(ctx)
    console.print(f"embedded {ctx.model} ready in {time.perf_counter() - began:.1f}s")
    console.print(f"HOPGRAPH_BASE_URL={server.base_url} HOPGRAPH_MODEL={ctx.model}")
    console.print("Ctrl-C stops it.")
    try:
        while server.proc is not None and server.proc.poll() is None:
            time.sleep(0.5)
        err.print(f"server exited:\n{server.log_tail()}")
        raise typer.Exit(1)
    except KeyboardInterrupt:
        server.stop()


@app.command()
def doctor(base_url: BaseUrl = "", model: ModelName = "", sets: Sets = None) -> None:
    """Probe an endpoint (default: the embedded server) and print what it supports."""
    from hopgraph.models import chat_model
    from hopgraph.models.doctor import diagnose

    ctx = build_context(base_url, model, sets=sets)
    rows = diagnose(chat_model(ctx))
    table = Table(title=f"hopgraph doctor: {ctx.model}")
    for col in ("capability", "supported", "detail"):
        table.add_column(col)
    for row in rows:
        table.add_row(row.capability, "yes" if row.ok else "no", row.detail)
    console.print(table)


@app.command()
def ask(
    question: str,
    agent: Annotated[str, typer.Option(help="graph to run")] = "direct",
    base_url: BaseUrl = "",
    model: ModelName = "",
    prompts: PromptsDir = "",
    sets: Sets = None,
) -> None:
    """Answer one question with an agent and print the answer."""
    from hopgraph.graphs import load_graph

    ctx = build_context(base_url, model, prompts, sets)
    graph = load_graph(agent)
    began = time.perf_counter()
    out = graph.invoke({"question": question}, context=ctx)
    console.print(f"[bold]Q:[/bold] {question}")
    console.print(f"[bold]A:[/bold] {out.get('answer', '')}")
    console.print(f"[dim]{agent} on {ctx.model}, {time.perf_counter() - began:.1f}s[/dim]")


KbDir = Annotated[str, typer.Option("--kb", help="knowledge-base folder")]


def open_kb(kb: str, sets=None):
    from hopgraph.memory.kb import KnowledgeBase

    ctx = build_context(sets=sets)
    return KnowledgeBase.from_context(ctx.replace(kb_dir=kb) if kb else ctx)


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
    triplets: Annotated[
        bool, typer.Option("--triplets", help="also store LLM-extracted triplets (MMAPG)")
    ] = False,
    sets: Sets = None,
) -> None:
    """Index a corpus into the knowledge base (re-running adds only what is new)."""
    from hopgraph.memory.indexing import index_source
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    store = open_kb(kb, sets)
    derive = None
    if triplets:
        from hopgraph.agents.triplets import extract_triplets, triplet_items
        from hopgraph.memory.cache import JsonCache

        ctx = build_context(sets=sets)
        cache = JsonCache(store.path / "llm-cache.sqlite")

        def derive(item):
            return triplet_items(item, extract_triplets(item, ctx, cache))

    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err
    ) as bar:
        task = bar.add_task(f"indexing {source}", total=None)

        def show(r):
            bar.update(task, description=(
                f"indexing {source}: {r.items} items ({r.added} new, {r.existing} already "
                f"there), {len(r.skipped)} skipped, {r.items / max(r.seconds, 1e-9):.0f} items/s"
            ))  # fmt: skip

        report = index_source(
            store, source, fmt, limit=limit, images_dir=images or None,
            render_pages=not no_render, derive=derive, on_batch=show,
        )  # fmt: skip
    console.print(
        f"[bold]{report.source}[/bold] ({report.format}) -> {store.location}: "
        f"{report.added} added, {report.existing} already indexed, {len(report.skipped)} skipped, "
        + (f"{report.derived} triplets added, " if triplets else "")
        + f"{report.seconds:.1f}s ({report.items / max(report.seconds, 1e-9):.0f} items/s; "
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
    store = open_kb(kb, sets)
    hits = store.search(query, k=k, modalities=modality, sources=source, radius=radius)
    table = Table(title=f"{len(hits)} hit(s) for {query!r}")
    for col in ("score", "id", "modality", "title", "text"):
        table.add_column(col)
    for h in hits:
        table.add_row(f"{h.score:.3f}", h.id, h.modality, h.title, h.text[:120])
    console.print(table)


data_app = typer.Typer(help="Question files and datasets.", no_args_is_help=True)
app.add_typer(data_app, name="data")


@data_app.command("convert")
def data_convert(
    name: Annotated[str, typer.Argument(help="hotpotqa | musique | multimodalqa | mmlongbench")],
    source: str,
    out: Annotated[str, typer.Option("--out", help="canonical JSONL to write")],
) -> None:
    """Convert a benchmark's questions into hopgraph's canonical JSONL."""
    from hopgraph.evals.datasets import convert

    n = convert(name, source, out)
    console.print(f"{n} questions -> {out}")


@data_app.command("download")
def data_download(
    name: str,
    dest: Annotated[str, typer.Option("--dest")] = "data",
    mirror: Annotated[str, typer.Option(help="base URL of a copy of the same files")] = "",
) -> None:
    """Download a public dataset from its official URL (only ever on this command)."""
    from hopgraph.evals.datasets import download

    for path in download(name, dest, mirror=mirror):
        console.print(f"{path} ({path.stat().st_size} bytes)")


@data_app.command("demo")
def data_demo(dest: Annotated[str, typer.Argument()] = "demo") -> None:
    """Write the demo corpus and its questions (hopgraph's own invented data)."""
    from hopgraph.evals.demo import write_demo

    corpus, questions = write_demo(dest)
    console.print(f"corpus: {corpus}\nquestions: {questions}")


def main() -> None:
    from hopgraph.memory.kb import KnowledgeBaseError
    from hopgraph.models.errors import HopgraphModelError
    from hopgraph.prompts import PromptError

    try:
        app()
    except (
        HopgraphModelError,
        PromptError,
        KnowledgeBaseError,
        ValueError,
        OSError,
        RuntimeError,
    ) as e:
        err.print(f"[red]error:[/red] {e}")
        sys.exit(2)


if __name__ == "__main__":
    main()
