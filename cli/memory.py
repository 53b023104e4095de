"""The PolarMem memory: ingest, recall, stats."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from hopgraph.cli.app import (
    BaseUrl,
    ModelName,
    PromptsDir,
    Sets,
    app,
    build_context,
    console,
    err,
    refuse,
    within,
)
from hopgraph.settings.polarmem import PolarMemContext

memory_app = typer.Typer(
    rich_markup_mode="markdown",
    help="The PolarMem memory: ingest, recall, stats.",
    no_args_is_help=True,
)
app.add_typer(memory_app, name="memory")


MemoryDir = Annotated[str, typer.Option("--memory", help="memory folder (polar_dir)")]


def memory_context(memory: str, base_url: str, model: str, prompts: str, sets) -> PolarMemContext:

    ctx = build_context(base_url, model, prompts, sets, schema=PolarMemContext)
    return ctx.replace(polar_dir=memory) if memory else ctx


def stored_memory(ctx: PolarMemContext) -> PolarMemContext:
    """``ctx`` where its memory folder exists; a reading command on a missing one is refused
    (exit 2), and no empty memory is made there."""
    folder = str(ctx.polar_dir)
    if "://" not in folder and not Path(folder).expanduser().exists():
        refuse(
            f"no memory at {folder}: `hopgraph memory ingest SOURCE --memory {folder}` makes one"
        )
    return ctx


@memory_app.command("ingest")
def memory_ingest(
    sources: Annotated[
        list[str], typer.Argument(help="image files (visual pathway) or any source `index` reads")
    ],
    memory: MemoryDir = "",
    present: Annotated[list[str] | None, typer.Option(help="asserted present (text)")] = None,
    absent: Annotated[list[str] | None, typer.Option(help="asserted absent (text)")] = None,
    caption: Annotated[str, typer.Option(help="caption for an image")] = "",
    limit: Annotated[
        int, typer.Option(help="at most this many texts (0: all)", callback=within(0))
    ] = 0,
    base_url: BaseUrl = "",
    model: ModelName = "",
    prompts: PromptsDir = "",
    sets: Sets = None,
) -> None:
    """Store images (concepts verified by the VLM) and texts (entities by the LLM). A source
    or text that fails is reported and the rest go on; texts already stored are skipped, so a
    re-run resumes."""
    from hopgraph.graphs.polarmem import ingest_sources

    ctx = memory_context(memory, base_url, model, prompts, sets)

    def show(kind: str, message: str) -> None:
        (err if kind in ("skipped", "failed") else console).print(
            f"[red]failed[/red] {message}" if kind == "failed" else message
        )

    done = ingest_sources(
        [Path(s) for s in sources],
        ctx,
        present=present or [],
        absent=absent or [],
        caption=caption,
        limit=limit,
        on_progress=show,
    )
    console.print(
        f"{done.stored} memories stored, {done.skipped} already there, {done.failed} failed "
        f"-> {ctx.polar_dir}"
    )
    if done.failed:
        raise typer.Exit(1)


@memory_app.command("recall")
def memory_recall(
    query: Annotated[str, typer.Argument(help="the request in words, exclusions said plainly")],
    memory: MemoryDir = "",
    k: Annotated[int, typer.Option("-k", help="memories at most", callback=within(1, 10_000))] = 5,
    mode: Annotated[str, typer.Option(help="logic (Algorithm 1) | vanilla")] = "logic",
    positive: Annotated[list[str] | None, typer.Option(help="Q+ (skips parsing)")] = None,
    negative: Annotated[list[str] | None, typer.Option(help="Q- (skips parsing)")] = None,
    base_url: BaseUrl = "",
    model: ModelName = "",
    prompts: PromptsDir = "",
    sets: Sets = None,
) -> None:
    """Recall memories: logic first, similarity second (or similarity only)."""
    from hopgraph.graphs.polarmem import recall

    ctx = stored_memory(memory_context(memory, base_url, model, prompts, sets))
    given = positive is not None or negative is not None
    out = recall(
        query,
        ctx,
        k=k,
        mode=mode,
        positive=positive if given else None,
        negative=(negative or []) if given else None,
    )
    console.print(f"Q+ {out.positive}  Q- {out.negative}  ({out.mode})")
    if out.note:
        err.print(f"note: {out.note}")
    for r in out.items:
        console.print(f"{r.s_log:+d} {r.s_sem:.3f} {r.id}  {r.evidence(300)}")


@memory_app.command("stats")
def memory_stats(memory: MemoryDir = "", sets: Sets = None) -> None:
    """Counts of memories, concepts, edges and vectors."""

    from hopgraph.graphs.polarmem import polar_memory

    ctx = stored_memory(memory_context(memory, "", "", "", sets))
    console.print_json(json.dumps(polar_memory(ctx).stats()))


@memory_app.command("forget")
def memory_forget(
    ids: Annotated[list[str], typer.Argument(help="memory ids (as recall and stats name them)")],
    memory: MemoryDir = "",
    sets: Sets = None,
) -> None:
    """Forget memories: their edges and vectors go, and no writer stores them again."""
    from hopgraph.graphs.polarmem import polar_memory

    gone = polar_memory(stored_memory(memory_context(memory, "", "", "", sets))).forget(ids)
    unknown = [i for i in ids if i not in gone]
    console.print(
        f"forgot {len(gone)} memor{'y' if len(gone) == 1 else 'ies'}"
        + (
            f"; not stored (recorded as forgotten all the same): {', '.join(unknown)}"
            if unknown
            else ""
        )
    )
