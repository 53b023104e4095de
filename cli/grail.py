"""GRAIL: train the steering weights, evaluate the operators."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from hopgraph.cli.app import (
    KbDir,
    OldOut,
    Sets,
    app,
    build_context,
    console,
    err,
    file_flag,
    within,
)
from hopgraph.redaction import command_line

grail_app = typer.Typer(
    rich_markup_mode="markdown",
    help="GRAIL: gap-aware query steering (no LLM calls).",
    no_args_is_help=True,
)
app.add_typer(grail_app, name="grail")


def _grail_inputs(questions: str, kb: str, sets):
    from hopgraph.questions.datasets import read_questions

    qs, problems = read_questions(questions)
    for p in problems:
        err.print(f"[yellow]question skipped[/yellow] {p.where}: {p.reason}")
    from hopgraph.settings.grail import GrailContext

    ctx = build_context(sets=[*(sets or []), f"kb_dir={kb}"], schema=GrailContext)
    from hopgraph.memory.kb import KnowledgeBase

    return qs, KnowledgeBase.from_context(ctx, must_exist=True)


@grail_app.command("train")
def grail_train(
    questions: Annotated[str, typer.Option(help="question JSONL with gold evidence ids")],
    kb: KbDir,
    out: Annotated[str, typer.Option(help="folder for grail.safetensors + card.json")],
    epochs: Annotated[
        int,
        typer.Option(
            help="epochs of the gap module and of the adapter (B.3: 100)",
            callback=within(1, 100_000),
        ),
    ] = 100,
    seed: Annotated[
        int, typer.Option(help="seed of the train/test split and training", callback=within())
    ] = 0,
    test_share: Annotated[
        float, typer.Option(help="share of questions held out", callback=within(0, 1))
    ] = 0.5,
    align: Annotated[bool, typer.Option(help="train the query-evidence adapter")] = True,
    router_questions: Annotated[
        str, typer.Option(help="question JSONL with types (MultimodalQA) for the router")
    ] = "",
    sets: Sets = None,
) -> None:
    """Train the alignment adapter, the gap module and (optionally) the router on CPU."""
    import json as _json

    from hopgraph.questions.datasets import read_questions
    from hopgraph.tools.grail.training import run_train

    qs, store = _grail_inputs(questions, kb, sets)
    rq = read_questions(router_questions)[0] if router_questions else None
    began = time.perf_counter()
    card = run_train(
        store,
        qs,
        out,
        epochs=epochs,
        seed=seed,
        test_share=test_share,
        align=align,
        router_questions=rq,
        source=questions,
    )
    console.print(_json.dumps({k: v for k, v in card.items() if "loss" not in k}, indent=1))
    console.print(
        f"gap loss {card['gap_loss'][0]:.3f} -> {card['gap_loss'][-1]:.3f}; "
        f"{time.perf_counter() - began:.0f}s; weights in {out}"
    )


@grail_app.command("eval")
def grail_eval(
    questions: Annotated[str, typer.Option(help="question JSONL with gold evidence ids")],
    kb: KbDir,
    weights: Annotated[str, typer.Option(help="trained GRAIL folder (for gap / hybrid)")] = "",
    modes: Annotated[str, typer.Option(help="comma-separated")] = "query,additive,gap-fixed",
    schedules: Annotated[str, typer.Option(help="comma-separated pool schedules")] = "5+5,3+2+3+2",
    split: Annotated[str, typer.Option(help="test | train | all")] = "test",
    results: Annotated[str, typer.Option("--results", help="the JSON file the results go to")] = "",
    out: OldOut = "",
    sets: Sets = None,
) -> None:
    """Evidence set completion (R@K, Δesc) and pool construction (Set-Rec, Jump, NRM)."""
    out = file_flag("--results", results, out)
    import json as _json

    from hopgraph.evals.grail import format_table, run_eval

    qs, store = _grail_inputs(questions, kb, sets)
    res = run_eval(
        store,
        qs,
        modes=modes.split(","),
        schedules=schedules.split(","),
        weights=weights,
        split=split,
    )
    console.print(f"{res['questions']} questions ({split} split)", markup=False)
    console.print(format_table("Evidence set completion", res["completion"]), markup=False)
    for schedule, per in res["pools"].items():
        console.print(format_table(f"Pool construction {schedule}", per), markup=False)
    if out:
        from hopgraph.harness.run_folder import git_revision, machine

        res["manifest"] = {
            "command": command_line(),
            "git_revision": git_revision(),
            "machine": machine(),
            "embedder": store.embedder_name,
        }
        Path(out).write_text(_json.dumps(res, indent=2) + "\n")
