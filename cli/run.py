"""Running agents: ``run`` over a question file into a run folder, ``ask`` for one question."""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from hopgraph.cli.app import (
    BaseUrl,
    CacheDir,
    Fields,
    ModelName,
    OtelEndpoint,
    PriceOption,
    PromptsDir,
    Sets,
    app,
    build_context,
    checked_endpoint,
    console,
    err,
    interrupted,
    open_kb,
    otel_export,
    parsed_price,
    refuse,
    spinner,
    within,
)
from hopgraph.cli.progress import Quiet, Steps, question_steps
from hopgraph.graphs import GRAPHS
from hopgraph.graphs import context_schema as schema_of
from hopgraph.memory.chroma import local_folder
from hopgraph.redaction import redacted
from hopgraph.wording import counted

if TYPE_CHECKING:
    from hopgraph.harness.run_folder import Prediction

GraphSpec = Annotated[
    str,
    typer.Option(
        "--graph",
        help="your own graph instead of --agent: package.module:graph or path/file.py:graph, "
        "a compiled LangGraph graph whose schemas are hopgraph's InputState / OutputState",
    ),
]


Checkpointer = Annotated[
    str,
    typer.Option(
        help="postgres://… : share this run with every worker (any machine) that names the "
        "same database and run folder name; each claims questions atomically"
    ),
]
Lease = Annotated[
    float,
    typer.Option(
        help="seconds without a heartbeat before a worker's claim is free",
        callback=within(1, 86_400),
    ),
]
BudgetTokens = Annotated[
    int,
    typer.Option(
        help="stop starting questions once the record has spent N tokens", callback=within(0)
    ),
]
BudgetUsd = Annotated[
    float,
    typer.Option(
        help="stop starting questions once the record has spent $X (--price)", callback=within(0)
    ),
]


Questions = Annotated[
    str, typer.Option(help="question file: JSONL, a JSON array or CSV (gold optional)")
]
Agent = Annotated[str, typer.Option(help=f"graph to run: {' | '.join(GRAPHS)} (or --graph)")]
Limit = Annotated[int | None, typer.Option(help="the first N questions", callback=within(1))]
Concurrency = Annotated[
    int, typer.Option(help="questions answered at once", callback=within(1, 1024))
]
Redo = Annotated[
    list[str] | None,
    typer.Option(help="a finished question's id to answer afresh (repeatable)"),
]
AcceptCodeChange = Annotated[
    bool,
    typer.Option(
        help="extend a record whose answers came from other method code (its table in "
        "the results pages then says that its columns mix code fingerprints)"
    ),
]


@app.command()
def run(
    questions: Questions,
    out: Annotated[str, typer.Option(help="run folder (re-run to resume)")],
    agent: Agent = "",
    kb: Annotated[str, typer.Option(help="knowledge-base folder")] = "",
    limit: Limit = None,
    concurrency: Concurrency = 1,
    fields: Fields = "",
    redo: Redo = None,
    base_url: BaseUrl = "",
    model: ModelName = "",
    prompts: PromptsDir = "",
    otel_endpoint: OtelEndpoint = "",
    checkpointer: Checkpointer = "",
    lease: Lease = 60.0,
    cache: CacheDir = "",
    graph: GraphSpec = "",
    accept_code_change: AcceptCodeChange = False,
    budget_tokens: BudgetTokens = 0,
    budget_usd: BudgetUsd = 0.0,
    price: PriceOption = "",
    sets: Sets = None,
    quiet: Quiet = False,
) -> None:
    """Run an agent over a question file: checkpointed, resumable, traced. With a budget, no
    question starts once the record's answered questions have spent it (those in flight
    finish); the run then exits 4, and re-running with a larger budget goes on."""

    # what fails every question is refused once, before a folder or a model server exists
    agent = chosen_graph(agent, graph)
    refuse_foreign_overlay(prompts, agent)  # before a folder or a model server exists
    ctx = build_context(
        base_url,
        model,
        prompts,
        [*(sets or []), *([f"kb_dir={kb}"] if kb else [])],
        cache,
        schema=schema_of(agent),
    )
    budget = run_budget(budget_tokens, budget_usd, price)
    if budget and checkpointer:
        refuse("a budget applies to a local run: --budget-* and --checkpointer do not mix")
    read = _read_inputs(questions, kb, sets, type(ctx), fields)
    otel = otel_export(otel_endpoint)

    options = {
        "checkpointer": checkpointer,
        "lease": lease,
        "exporter": otel,
        "budget": budget,
        "speed_probe": not ctx.base_url,  # the embedded server runs at the host's speed
        "accept_code_change": accept_code_change,
        "notify": None if quiet else lambda words: err.print(f"[dim]{words}[/dim]"),
    }
    make = functools.partial(_runner, agent, out, ctx, options)
    runner = _served_runner(
        make, ctx, out, read, limit, redo or (), budget, quiet, shared=bool(checkpointer)
    )
    if runner is None:
        return
    summary = _run_showing_progress(
        runner,
        read,
        agent,
        otel,
        limit=limit,
        concurrency=concurrency,
        redo=redo or (),
        quiet=quiet,
    )
    _report_run(summary, out, budget)


def _runner(agent: str, out: str, ctx, options: dict, endpoint: str):  # noqa: ANN001, ANN202 - a Runner
    """The run's Runner on ``endpoint``; a checkpointer that cannot be reached is refused."""
    from hopgraph.harness.runner import Runner

    try:
        return Runner(agent, out, ctx, endpoint=endpoint, **options)
    except Exception as e:  # noqa: BLE001 - a database that cannot be reached or used
        refuse(f"checkpointer {options['checkpointer']}: {e}")


def _served_runner(make, ctx, out: str, read, limit, redo, budget, quiet: bool, shared: bool):  # noqa: ANN001, ANN202 - a Runner or None
    """The run's Runner (``make(endpoint)``) once its model endpoint is up; None where the
    record's own checks ended the run without one (a finished record or a spent budget, each
    reported here; a refusal exits 2): a resumed record is checked before any server starts."""
    from hopgraph.harness.run_folder import RunFolder
    from hopgraph.models.embedded import unused_cpu_features

    resumed = None
    if not shared and (Path(out) / RunFolder.MANIFEST).is_file():
        resumed = make("")
        if (left := resumed.left(read, limit, redo)) is not None:
            _report_run(left, out, budget)
            return None
    endpoint = started_endpoint(ctx, quiet)
    if not ctx.base_url and (unused := unused_cpu_features()):
        err.print(
            f"[yellow]note[/yellow] this llama.cpp build leaves {', '.join(unused)} of "
            "this CPU unused: `make native` reads prompts about 1.9x faster"
        )
    runner = resumed or make(endpoint)
    runner.endpoint = endpoint
    return runner


def started_endpoint(ctx, quiet: bool) -> str:  # noqa: ANN001 - a Context
    """``checked_endpoint``, saying how long the embedded server took to start."""
    if ctx.base_url or quiet:
        return checked_endpoint(ctx)
    err.print(f"[dim]starting the embedded model server ({ctx.model})[/dim]")
    began = time.perf_counter()
    endpoint = checked_endpoint(ctx)
    err.print(f"[dim]model server ready in {time.perf_counter() - began:.0f} s[/dim]")
    return endpoint


def _run_showing_progress(runner, read, agent: str, otel, *, limit, concurrency, redo, quiet=False):  # noqa: ANN001, ANN202
    """``Runner.run`` showing its progress (done, failed, pace: ``cli.progress``); Ctrl-C and
    SIGTERM stop the run and its server at once (exit 130 / 143), a run of failures exits 1."""
    from hopgraph.harness.runner import RunAborted

    with Steps(agent, len(read.first(limit)), quiet=quiet) as steps:
        steps.step(0, "starting")
        advance = question_steps(steps)
        try:
            return runner.run(
                read, limit=limit, concurrency=concurrency, on_done=advance, redo=redo
            )
        except KeyboardInterrupt:
            interrupted(130, otel)
        except SystemExit as e:  # SIGTERM (install_sigterm_handler): stop now, not after the
            interrupted(int(e.code or 143), otel)  # in-flight question, which may take minutes
        except RunAborted as e:
            err.print(f"[red]error:[/red] {e}")
            raise typer.Exit(1) from None
        finally:
            if otel is not None:
                otel.close()


def refuse_foreign_overlay(prompts: str, agent: str) -> None:
    """An overlay optimized for another agent, refused (jinja2 loads only when one is named)."""
    if prompts:
        from hopgraph.prompts import refuse_foreign_overlay as refuse_overlay

        refuse_overlay(prompts, agent)


def _check_kb(kb: str, sets, schema) -> None:  # noqa: ANN001
    """The KB ``run`` and ``ask`` read, refused (exit 2) before anything starts where every
    answer would fail or be made up: a file, no KB, an empty one."""
    if kb and Path(kb).is_file():
        refuse(f"--kb {kb} is a file, not a knowledge-base folder: name a folder")
    if kb and not local_folder(kb).is_dir():
        refuse(f"no knowledge base at {kb}: build one with `hopgraph index SOURCE --kb {kb}`")
    if kb and not any(open_kb(kb, sets, schema=schema).counts().values()):
        refuse(
            f"the knowledge base at {kb} holds no item: every answer would be made up; "
            f"index a source into it first (`hopgraph index SOURCE --kb {kb}`)"
        )


def _read_inputs(questions: str, kb: str, sets, schema, fields: str = ""):  # noqa: ANN001, ANN202 - a QuestionSet
    """The question file, read once, and the KB a run reads, each refused (exit 2) where every
    question would fail: a missing file, a KB that is a file, absent or empty, no valid line,
    a ``--fields`` mapping that names no field."""
    from hopgraph.harness.run_folder import QuestionSet
    from hopgraph.questions.datasets import FieldSpec

    if not Path(questions).is_file():
        refuse(f"no questions file at {questions}")
    try:
        spec = FieldSpec.parse(fields)
    except ValueError as e:
        refuse(str(e))
    _check_kb(kb, sets, schema)
    read = QuestionSet.read(questions, spec)  # once: the runner takes it as it is
    for p in read.problems:
        err.print(f"[yellow]question skipped[/yellow] {p.where}: {p.reason}")
    if not read.questions:
        refuse(f"{questions} holds no valid question")
    return read


def _report_run(summary, out: str, budget) -> None:  # noqa: ANN001
    """A run's last lines: what it did, what it spent; failed questions exit 3, a budget that
    left questions unstarted exits 4."""
    console.print(
        f"{summary.finished} finished, {summary.failed} failed, {summary.skipped_done} already "
        f"done, {len(summary.problems)} bad question line(s); {summary.seconds:.1f}s -> {out}"
    )
    if budget:
        console.print(f"spent: {spent_text(summary.spent)} of {spent_text(vars(budget))}")
    if summary.failed:
        failed_questions(summary.errors)
    if summary.budget_stopped:
        err.print(
            f"[yellow]budget reached:[/yellow] {summary.budget_stopped} question(s) not "
            "started; re-run with a larger budget to answer them"
        )
        raise typer.Exit(BUDGET_SPENT)


QUESTIONS_FAILED = 3
"""``hopgraph run``'s exit status when it ended with questions failed (the rest are kept)."""
BUDGET_SPENT = 4
"""``hopgraph run``'s exit status when its budget left questions unstarted."""


def run_budget(tokens: int, usd: float, price: str):  # noqa: ANN201 - a Budget or None
    """The run's budget from its flags, refused (exit 2) where they do not make one."""
    from hopgraph.harness.cost import Budget

    try:
        budget = Budget(tokens=tokens, usd=usd, price=parsed_price(price))
    except ValueError as e:
        refuse(str(e))
    return budget if (tokens or usd) else None


def spent_text(spent: dict) -> str:
    parts = [f"{spent['tokens']:,} tokens"] if spent.get("tokens") else []
    return ", ".join(parts + ([f"${spent['usd']:.4f}"] if spent.get("usd") else [])) or "nothing"


def failed_questions(errors: list[tuple[str, str]], shown: int = 3) -> NoReturn:
    """Name the failed questions' first reasons and exit with ``QUESTIONS_FAILED``."""
    err.print(f"[red]error:[/red] {len(errors)} question(s) failed; the first:")
    for qid, error in errors[:shown]:
        err.print(f"  {qid}: {redacted(error[:500])}", markup=False, highlight=False)
    err.print("their traces hold the details; re-run the same command to retry them")
    raise typer.Exit(QUESTIONS_FAILED)


Image = Annotated[
    list[str] | None, typer.Option(help="an image of the question (repeatable; needs a VLM)")
]


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="the question to answer, in quotes")],
    agent: Annotated[str, typer.Option(help="graph to run")] = "rag",
    graph: GraphSpec = "",
    kb: Annotated[str, typer.Option(help="knowledge-base folder")] = "kb",
    image: Image = None,
    out: Annotated[str, typer.Option(help="run folder for the trace")] = "",
    quiet: Annotated[bool, typer.Option(help="only the answer, no live steps")] = False,
    base_url: BaseUrl = "",
    model: ModelName = "",
    prompts: PromptsDir = "",
    otel_endpoint: OtelEndpoint = "",
    cache: CacheDir = "",
    sets: Sets = None,
) -> None:
    """Answer one question, showing each step live (nodes starting and ending, LLM calls,
    retrievals), then the answer with its numbered citations and the trace path."""
    import hashlib
    import tempfile

    from hopgraph.harness.run_folder import packed, trace_path
    from hopgraph.harness.runner import Runner
    from hopgraph.presentation.report import live_line
    from hopgraph.questions.datasets import Question

    agent = chosen_graph(agent, graph)
    refuse_foreign_overlay(prompts, agent)  # before a folder or a model server exists
    ctx = build_context(
        base_url, model, prompts, [*(sets or []), f"kb_dir={kb}"], cache, schema=schema_of(agent)
    )
    _refuse_unseen_images(image or [], ctx.vlm_model)
    if agent != "direct":  # the one method that reads no KB
        _check_kb(kb, sets, schema_of(agent))  # before any model starts, as run does
    qid = "ask-" + hashlib.sha1(question.encode()).hexdigest()[:10]
    run_dir = Path(
        out or Path(tempfile.gettempdir()) / "hopgraph-ask" / f"{agent}-{int(time.time())}"
    )
    endpoint = started_endpoint(ctx, quiet)
    images = [str(Path(p).resolve()) for p in image or []]
    asked = Question(qid, question, images=images)
    console.print(f"[bold]Q:[/bold] {question}")
    live, running = None, {}

    def show(_qid, ns, mode, data):
        if mode == "tasks" and isinstance(data, dict):  # a node starts ("input") or ends
            if "input" in data:
                running[data.get("id")] = data.get("name", "?")
            else:
                running.pop(data.get("id"), None)
        line = live_line(ns, mode, data)
        if line:
            console.print(line, markup=False, highlight=False)
        if live is not None:
            live.update(spinner(f"{agent}: {', '.join(running.values()) or '…'}"))

    otel = otel_export(otel_endpoint)
    runner = Runner(
        agent, run_dir, ctx, endpoint=endpoint, exporter=otel, on_record=None if quiet else show
    )
    began = time.perf_counter()
    if console.is_terminal and not quiet:
        from rich.live import Live

        with Live(spinner(f"{agent}: starting"), console=console, transient=True) as live:
            pred = runner.ask(asked)
    else:  # plain lines (piped, or a log): the same steps, no spinner
        pred = runner.ask(asked)
    if otel is not None:
        otel.close()
    if pred.get("error"):
        err.print(f"[red]error:[/red] {pred['error']}")
        raise typer.Exit(1)
    _print_answer(
        pred,
        f"{agent} on {ctx.model}",
        time.perf_counter() - began,
        packed(trace_path(run_dir, qid)),
    )


def _refuse_unseen_images(images: list[str], vlm_model: str) -> None:
    """Refuse an image that is not a file, or any image with no VLM to see it (it would be
    answered blind otherwise): refused like every setup fault, before a model starts."""
    for path in images:
        if not Path(path).is_file():
            refuse(f"no image at {path}")
    if images and not vlm_model:
        refuse("--image needs a vision-language model: set vlm_base_url/vlm_model to one")


def _print_answer(pred: Prediction, who: str, seconds: float, trace: Path) -> None:
    """An asked question's answer, its response where it says more, each citation by its
    [n] in the response, and what it cost."""
    console.print(f"[bold]A:[/bold] {pred['answer']}")
    if pred.get("response") and pred["response"] != pred["answer"]:
        console.print(f"[dim]{pred['response']}[/dim]")
    cited = {e["id"]: e for e in pred.get("cited", [])}
    numbered = pred.get("contexts_ids") or []
    for k, cid in enumerate(pred.get("citations", []), 1):
        n = numbered.index(cid) + 1 if cid in numbered else k  # the response's own [n]
        hit = cited.get(cid)
        title = f"{hit.get('title', '')}: {hit.get('text', '')[:90]}" if hit else "(no context)"
        console.print(f"  [{n}] {title}  ({cid})", markup=False, highlight=False)
    console.print(
        f"[dim]{who}: {counted(pred['llm_calls'], 'LLM call')}, {seconds:.1f}s; trace {trace}[/dim]"
    )


def chosen_graph(agent: str, graph: str) -> str:
    """The agent name or graph spec a command runs, refused once if it cannot run."""
    from hopgraph.graphs import load_graph

    chosen = graph or agent
    if not chosen:
        refuse(f"name a graph: --agent {' | '.join(GRAPHS)}, or --graph module:graph")
    try:
        load_graph(chosen)
    except ValueError as e:
        refuse(str(e))
    return chosen
