"""``optimize``: a better prompt for an agent's roles, from its own traces
(``optimizer.search``)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from hopgraph.cli.app import (
    BaseUrl,
    CacheDir,
    ModelName,
    PriceOption,
    PromptsDir,
    Sets,
    app,
    build_context,
    checked_endpoint,
    console,
    err,
    interrupted,
    refuse,
    within,
)
from hopgraph.cli.progress import Quiet, Steps, question_steps
from hopgraph.cli.run import BUDGET_SPENT, GraphSpec, _read_inputs, chosen_graph, run_budget
from hopgraph.graphs import context_schema as schema_of

Rounds = Annotated[int, typer.Option(help="rounds of candidates at most", callback=within(1, 100))]
Demos = Annotated[
    int, typer.Option(help="demonstrations per candidate set", callback=within(1, 64))
]
ValShare = Annotated[
    float,
    typer.Option(
        help="share of the training questions kept for validation (never a demonstration's source)",
        callback=within(0, 1),
    ),
]
Minibatch = Annotated[
    int,
    typer.Option(
        help="validation questions every candidate answers first; only the better half not "
        "below the incumbent there answers them all (0: every candidate answers all)",
        callback=within(0),
    ),
]
Candidates = Annotated[
    int,
    typer.Option(
        help="candidates per role and round: demonstration draws and proposed instructions, "
        "half each, and the joint of the best of each on top",
        callback=within(1, 64),
    ),
]
Alpha = Annotated[
    float,
    typer.Option(
        help="the sign-test level each candidate's p is reported against (information: a "
        "candidate is kept by its validation mean)",
        callback=within(0.001, 0.5),
    ),
]


Roles = Annotated[
    list[str] | None,
    typer.Option(
        help="a role's template to optimize, e.g. rag/short_answer (repeatable; "
        "default: every role of the agent)"
    ),
]
Test = Annotated[
    str,
    typer.Option(
        help="test questions the search never reads (refused if they share any with "
        "--questions): the overlay and the hand-written prompts answer them last, in "
        "OUT/test/, and record.json keeps the paired verdict and the validation-to-test gap"
    ),
]
Seed = Annotated[int, typer.Option(help="seed of the split and the minibatches", callback=within())]
BudgetTokens = Annotated[
    int, typer.Option(help="stop once the search sent N tokens", callback=within(0))
]
BudgetUsd = Annotated[
    float, typer.Option(help="stop once it spent $X (--price)", callback=within(0))
]
ProposerBaseUrl = Annotated[
    str, typer.Option(help="a stronger model's endpoint for the proposer (default: the same)")
]


@app.command()
def optimize(
    questions: Annotated[str, typer.Option(help="training questions (JSONL): the only ones read")],
    out: Annotated[str, typer.Option(help="search folder (re-run to resume)")],
    agent: Annotated[str, typer.Option(help="the agent whose prompts to optimize")] = "",
    graph: GraphSpec = "",
    kb: Annotated[str, typer.Option(help="knowledge-base folder")] = "",
    roles: Roles = None,
    test: Test = "",
    rounds: Rounds = 2,
    demos: Demos = 3,
    val_share: ValShare = 0.5,
    candidates: Candidates = 6,
    minibatch: Minibatch = 8,
    alpha: Alpha = 0.1,
    metric: Annotated[str, typer.Option(help="the metric candidates are compared on")] = "f1",
    seed: Seed = 0,
    budget_tokens: BudgetTokens = 0,
    budget_usd: BudgetUsd = 0.0,
    price: PriceOption = "",
    proposer_base_url: ProposerBaseUrl = "",
    proposer_model: Annotated[str, typer.Option(help="the proposer's model name")] = "",
    base_url: BaseUrl = "",
    model: ModelName = "",
    prompts: PromptsDir = "",
    cache: CacheDir = "",
    sets: Sets = None,
    quiet: Quiet = False,
) -> None:
    """Bootstrap demonstrations from the agent's right answers, propose instructions from its
    wrong ones, race the candidates on a minibatch of validation questions and keep one whose
    validation mean beats the incumbent's by more than one question's worth; writes
    OUT/overlay (use it as `--prompts`) and OUT/record.json. Ctrl-C stops with what it found;
    a spent budget exits 4 and a larger one goes on."""
    from hopgraph.optimizer.search import Plan, roles_of
    from hopgraph.prompts import refuse_foreign_overlay

    agent = chosen_graph(agent, graph)
    refuse_foreign_overlay(prompts, agent)
    with removed_if_refused(Path(out)):  # refused before it began: no folder left
        cache = cache or str(Path(out) / "cache")
        sets = [*(sets or []), *([f"kb_dir={kb}"] if kb else [])]
        ctx = build_context(base_url, model, prompts, sets, cache, schema=schema_of(agent))
        budget = run_budget(budget_tokens, budget_usd, price)
        _read_inputs(questions, kb, sets, type(ctx))
        if test and not Path(test).is_file():
            refuse(f"no test questions file at {test}")
        roles = list(roles or roles_of(agent, ctx))
        test_file = Path(test) if test else None
        plan = Plan(
            agent,
            Path(questions),
            Path(out),
            roles,
            budget=budget,
            test=test_file,
            metric=metric,
            rounds=rounds,
            demos=demos,
            val_share=val_share,
            minibatch=minibatch,
            candidates=candidates,
            alpha=alpha,
            seed=seed,
        )
        if problems := plan.check(ctx):
            refuse("; ".join(problems))
        proposer = None
        if proposer_base_url or proposer_model:
            proposer = build_context(
                proposer_base_url or ctx.base_url, proposer_model or ctx.model, "", sets, cache
            )
        _search(plan, ctx, proposer, quiet)


@contextmanager
def removed_if_refused(folder: Path) -> Iterator[None]:
    """A folder this command makes is removed again where the command is refused (exit 2):
    an unreachable proposer or an unknown model left ``OUT/cache/`` behind."""
    new = not folder.exists()
    try:
        yield
    except typer.Exit as e:
        if e.exit_code == 2 and new:
            shutil.rmtree(folder, ignore_errors=True)
        raise


class _Shown:
    """A Runner whose runs show each finished question (``cli.progress``)."""

    def __init__(self, runner, name: str, quiet: bool) -> None:  # noqa: ANN001 - a Runner
        self.runner, self.name, self.quiet = runner, name, quiet

    def run(self, questions: Path, **options):  # noqa: ANN003, ANN201 - a RunSummary
        from hopgraph.harness.run_folder import QuestionSet

        qs = QuestionSet.read(questions)
        total = len(qs.first(options.get("limit")))
        with Steps(self.name, total, quiet=self.quiet) as steps:
            return self.runner.run(qs, on_done=question_steps(steps), **options)


def _search(plan, ctx, proposer, quiet: bool = False) -> None:  # noqa: ANN001
    """The search on the checked endpoint(s); its exits: 4 at the budget, 130 on Ctrl-C
    (with what it found so far written)."""
    from hopgraph.harness.runner import Runner
    from hopgraph.optimizer.record import BudgetSpent, OptimizeRefused
    from hopgraph.optimizer.search import Optimizer

    endpoint = checked_endpoint(ctx)
    if proposer is not None:
        checked_endpoint(proposer)

    def runner(agent: str, folder: Path, ctx_, budget):  # noqa: ANN001, ANN202
        made = Runner(
            agent, folder, ctx_, endpoint=endpoint, budget=budget, speed_probe=not ctx_.base_url
        )
        return _Shown(made, folder.name, quiet)

    table = _Table(quiet)
    try:
        opt = Optimizer(
            plan, ctx, runner, proposer, say=lambda line: err.print(line), on_save=table.show
        )
    except OptimizeRefused as e:
        refuse(str(e))
    try:
        record = opt.run()
    except BudgetSpent as e:
        err.print(f"[yellow]budget reached:[/yellow] {e}; re-run with a larger budget to go on")
        raise typer.Exit(BUDGET_SPENT) from None
    except (KeyboardInterrupt, SystemExit) as e:  # Ctrl-C, or SIGTERM (install_sigterm_handler):
        opt._write_overlay()  # stop now, not after the call in flight, which may take minutes
        opt.save()
        interrupted(int(e.code or 143) if isinstance(e, SystemExit) else 130, None)
    _report(record, str(plan.out))


class _Table:
    """The candidates as the search goes: on a terminal the whole table redrawn after each
    change; elsewhere (a pipe, a log) a line per candidate whose row changed."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.rows: dict[str, tuple[str, ...]] = {}

    def show(self, record: dict) -> None:
        from hopgraph.optimizer.search import candidate_rows

        if self.quiet:
            return
        rows = candidate_rows(record)
        changed = [r for r in rows if self.rows.get(r[0]) != r]
        self.rows = {r[0]: r for r in rows}
        if not changed:
            return
        if err.is_terminal:
            err.print(_rich_table(rows))
        else:
            for r in changed:
                err.print("candidate " + " | ".join(r), markup=False, highlight=False)


def _rich_table(rows: list[tuple[str, ...]]):  # noqa: ANN202 - a rich Table
    from rich.table import Table

    from hopgraph.optimizer.search import ROW_HEADS

    table = Table(*ROW_HEADS, title="candidates")
    for r in rows:
        table.add_row(*r)
    return table


def _report(record: dict, out: str) -> None:
    metric = record["metric"]
    for c in record["candidates"]:
        if c.get("skipped") or c.get("stopped"):
            why = (
                f"skipped ({c['skipped']})"
                if c.get("skipped")
                else (f"stopped after the minibatch ({c['stopped']})")
            )
            console.print(f"{c['id']}: {why}")
            continue
        mark = "[green]won[/green]" if c["won"] else "lost"
        console.print(
            f"{c['id']}: {metric} {c['mean']:.3f} against {c['incumbent_mean']:.3f} "
            f"({c['better']} better, {c['worse']} worse, p={c['p']:.3g}) {mark}"
        )
    changed = ", ".join(record.get("overlay_changes", [])) or "nothing (the hand-written prompts)"
    console.print(
        f"stopped: {record.get('stopped', '')}; {record['overlay']} changes {changed}; "
        f"sent {record['spent']['tokens']:,} tokens -> {out}/record.json"
    )
