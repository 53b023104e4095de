"""QDRAG utilities."""

from __future__ import annotations

from typing import Annotated

import typer

from hopgraph.cli.app import (
    BaseUrl,
    KbDir,
    ModelName,
    OldOut,
    Sets,
    app,
    build_context,
    console,
    err,
    file_flag,
    within,
)

qdrag_app = typer.Typer(rich_markup_mode="markdown", help="QDRAG utilities.", no_args_is_help=True)
app.add_typer(qdrag_app, name="qdrag")


@qdrag_app.command("preferences")
def qdrag_preferences(
    questions: Annotated[str, typer.Option(help="training questions with gold evidence ids")],
    kb: KbDir,
    jsonl: Annotated[
        str,
        typer.Option("--jsonl", help="the DPO pairs JSONL to write (prompt, chosen, rejected)"),
    ] = "",
    out: OldOut = "",
    samples: Annotated[
        int, typer.Option(help="plans sampled per question", callback=within(1, 64))
    ] = 4,
    temperature: Annotated[
        float, typer.Option(help="sampling temperature of the sampled plans", callback=within(0, 2))
    ] = 0.8,
    k: Annotated[
        int,
        typer.Option(
            help="contexts retrieved per subquestion for the reward", callback=within(1, 1_000)
        ),
    ] = 5,
    limit: Annotated[
        int | None, typer.Option(help="the first N questions", callback=within(1))
    ] = None,
    base_url: BaseUrl = "",
    model: ModelName = "",
    sets: Sets = None,
) -> None:
    """QDARF: sample QD-R plans, reward = gold-context recall, write DPO pairs for TRL."""
    out = file_flag("--jsonl", jsonl, out, required=True)
    from hopgraph.agents.qdrag import preference_pairs, write_pairs
    from hopgraph.questions.datasets import read_questions
    from hopgraph.settings.qdrag import QDRAGContext

    ctx = build_context(base_url, model, sets=[*(sets or []), f"kb_dir={kb}"], schema=QDRAGContext)
    qs = read_questions(questions)[0][:limit]
    pairs = preference_pairs(
        qs,
        ctx,
        samples=samples,
        temperature=temperature,
        k=k,
        budget=ctx.qdrag_budget,
        on_question=lambda q, info: err.print(f"{q.id}: rewards {info['rewards']}"),
    )
    write_pairs(pairs, out)
    console.print(f"{len(pairs)} preference pairs from {len(qs)} questions -> {out}")
