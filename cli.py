"""The ``hopgraph`` command."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.table import Table

from hopgraph.config import Context, parse_sets
from hopgraph.graphs import GRAPHS

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
OtelEndpoint = Annotated[
    str,
    typer.Option(
        "--otel-endpoint",
        help="export each question as an OpenTelemetry trace to this OTLP/HTTP collector "
        "(default: $OTEL_EXPORTER_OTLP_ENDPOINT)",
    ),
]
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


def _endpoint(ctx: Context) -> str:
    """The endpoint the run talks to (starting the embedded server when none is configured)."""
    if ctx.base_url:
        return ctx.base_url
    from hopgraph.models import embedded_server

    return embedded_server(ctx).base_url


@app.command()
def run(
    agent: Annotated[str, typer.Option(help=f"graph to run: {' | '.join(GRAPHS)}")],
    questions: Annotated[str, typer.Option(help="canonical question JSONL")],
    out: Annotated[str, typer.Option(help="run folder (re-run to resume)")],
    kb: Annotated[str, typer.Option(help="knowledge-base folder")] = "",
    limit: Annotated[int | None, typer.Option()] = None,
    concurrency: Annotated[int, typer.Option()] = 1,
    redo: Annotated[
        list[str] | None,
        typer.Option(help="a finished question's id to answer afresh (repeatable)"),
    ] = None,
    base_url: BaseUrl = "",
    model: ModelName = "",
    prompts: PromptsDir = "",
    otel_endpoint: OtelEndpoint = "",
    checkpointer: Annotated[
        str,
        typer.Option(
            help="postgres://… : share this run with every worker (any machine) that names the "
            "same database and run folder name; each claims questions atomically"
        ),
    ] = "",
    lease: Annotated[
        float, typer.Option(help="seconds without a heartbeat before a worker's claim is free")
    ] = 60.0,
    sets: Sets = None,
) -> None:
    """Run an agent over a question file: checkpointed, resumable, traced."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from hopgraph.evals.datasets import read_questions
    from hopgraph.evals.runner import RunAborted, Runner

    ctx = build_context(
        base_url, model, prompts, [*(sets or []), *([f"kb_dir={kb}"] if kb else [])]
    )
    # what fails every question is refused once, before a folder or a model server exists
    if agent not in GRAPHS:
        _refuse(f"unknown agent {agent!r}; agents: {', '.join(GRAPHS)}")
    if not Path(questions).is_file():
        _refuse(f"no questions file at {questions}")
    if kb and not (Path(kb) / "chroma").is_dir():
        _refuse(f"no knowledge base at {kb}: build one with `hopgraph index SOURCE --kb {kb}`")
    qs, problems = read_questions(questions)
    for p in problems:
        err.print(f"[yellow]question skipped[/yellow] {p.where}: {p.reason}")
    if not qs:
        _refuse(f"{questions} holds no valid question")
    endpoint = _checked_endpoint(ctx)
    try:
        runner = Runner(agent, out, ctx, endpoint=endpoint, checkpointer=checkpointer, lease=lease)
    except Exception as e:  # noqa: BLE001 - a database that cannot be reached or used
        _refuse(f"checkpointer {checkpointer}: {e}")
    otel = _otel(otel_endpoint)
    total = len(qs[:limit] if limit is not None else qs)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("failed {task.fields[failed]}"),
        TextColumn("{task.fields[pace]}"),
        TimeRemainingColumn(),
        console=err,
    ) as bar:
        task = bar.add_task(f"{agent}", total=total, failed=0, pace="")
        seconds: list[float] = []

        def advance(pred, summary):
            _export(otel, agent, out, pred)
            seconds.append(pred.get("seconds", 0.0))
            bar.update(
                task,
                completed=summary.skipped_done + summary.finished + summary.failed,
                failed=summary.failed,
                pace=f"last {seconds[-1]:.1f}s, mean {sum(seconds) / len(seconds):.1f}s/question",
            )

        try:
            summary = runner.run(
                questions, limit=limit, concurrency=concurrency, on_done=advance, redo=redo or ()
            )
        except KeyboardInterrupt:
            _interrupted(130, otel)
        except SystemExit as e:  # SIGTERM (install_sigterm_handler): stop now, not after the
            _interrupted(int(e.code or 143), otel)  # in-flight question, which may take minutes
        except RunAborted as e:
            err.print(f"[red]error:[/red] {e}")
            raise typer.Exit(1) from None
        finally:
            if otel is not None:
                otel.close()
    console.print(
        f"{summary.finished} finished, {summary.failed} failed, {summary.skipped_done} already "
        f"done, {len(summary.problems)} bad question line(s); {summary.seconds:.1f}s -> {out}"
    )
    if summary.failed:
        console.print("re-run the same command to retry the failed questions")


def _checked_endpoint(ctx: Context) -> str:
    """The endpoint, once the faults that would fail every question are ruled out (prompt
    overlay, endpoint reachable and serving the model); else a refusal naming the fault."""
    from hopgraph.evals.runner import preflight
    from hopgraph.models import HopgraphModelError
    from hopgraph.prompts import PromptError

    endpoint = _endpoint(ctx)
    try:
        preflight(ctx)
    except (PromptError, HopgraphModelError) as e:
        _refuse(str(e))
    return endpoint


def _otel(endpoint: str):
    """The OpenTelemetry export for a run, or None when no endpoint is configured."""
    from hopgraph.evals.otel import OtelExport, otel_endpoint

    url = otel_endpoint(endpoint)
    return OtelExport(url) if url else None


def _export(otel, agent: str, run_dir: str | Path, pred: dict) -> None:
    if otel is not None:
        from hopgraph.evals.report import read_trace
        from hopgraph.evals.runner import trace_path

        otel.export(agent, read_trace(trace_path(run_dir, pred["id"])), pred)


def _interrupted(code: int, otel=None) -> NoReturn:
    """Ctrl-C or SIGTERM: stop now. Every finished question's line is written; an in-flight
    one resumes from its checkpoint. The model server is killed, no worker thread is waited
    for, and the exit code says which signal (130, 143)."""
    import os

    from hopgraph.models.embedded import stop_all

    err.print("interrupted: finished questions are saved; re-run the same command to resume")
    stop_all(now=True)
    if otel is not None:  # the finished questions' spans still go out
        otel.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _refuse(message: str) -> NoReturn:
    err.print(f"[red]error:[/red] {message}")
    raise typer.Exit(2)


@app.command()
def ask(
    question: str,
    agent: Annotated[str, typer.Option(help="graph to run")] = "rag",
    kb: Annotated[str, typer.Option(help="knowledge-base folder")] = "kb",
    image: Annotated[
        list[str] | None, typer.Option(help="an image of the question (repeatable; needs a VLM)")
    ] = None,
    out: Annotated[str, typer.Option(help="run folder for the trace")] = "",
    quiet: Annotated[bool, typer.Option(help="only the answer, no live steps")] = False,
    base_url: BaseUrl = "",
    model: ModelName = "",
    prompts: PromptsDir = "",
    otel_endpoint: OtelEndpoint = "",
    sets: Sets = None,
) -> None:
    """Answer one question, showing each step live (nodes starting and ending, LLM calls,
    retrievals), then the answer with its numbered citations and the trace path."""
    import hashlib
    import tempfile

    from hopgraph.evals.datasets import Question, write_questions
    from hopgraph.evals.report import live_line
    from hopgraph.evals.runner import Runner, read_predictions, trace_path

    ctx = build_context(base_url, model, prompts, [*(sets or []), f"kb_dir={kb}"])
    for path in image or []:
        if not Path(path).is_file():
            _refuse(f"no image at {path}")
    qid = "ask-" + hashlib.sha1(question.encode()).hexdigest()[:10]
    run_dir = Path(
        out or Path(tempfile.gettempdir()) / "hopgraph-ask" / f"{agent}-{int(time.time())}"
    )
    endpoint = _checked_endpoint(ctx)
    qfile = run_dir / "question.jsonl"
    images = [str(Path(p).resolve()) for p in image or []]
    write_questions([Question(qid, question, images=images)], qfile)
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
            live.update(_spinner(f"{agent}: {', '.join(running.values()) or '…'}"))

    runner = Runner(agent, run_dir, ctx, endpoint=endpoint, on_record=None if quiet else show)
    began = time.perf_counter()
    if console.is_terminal and not quiet:
        from rich.live import Live

        with Live(_spinner(f"{agent}: starting"), console=console, transient=True) as live:
            runner.run(qfile)
    else:  # plain lines (piped, or a log): the same steps, no spinner
        runner.run(qfile)
    pred = read_predictions(run_dir / "predictions.jsonl")[qid]
    otel = _otel(otel_endpoint)
    if otel is not None:
        _export(otel, agent, run_dir, pred)
        otel.close()
    if pred.get("error"):
        err.print(f"[red]error:[/red] {pred['error']}")
        raise typer.Exit(1)
    console.print(f"[bold]A:[/bold] {pred['answer']}")
    if pred.get("response") and pred["response"] != pred["answer"]:
        console.print(f"[dim]{pred['response']}[/dim]")
    if pred.get("citations"):
        from hopgraph.tools.retrieval import knowledge_base

        hits = {h.id: h for h in knowledge_base(ctx).get(pred["citations"])}
        numbered = pred.get("contexts_ids") or []
        for k, cid in enumerate(pred["citations"], 1):
            n = numbered.index(cid) + 1 if cid in numbered else k  # the response's own [n]
            hit = hits.get(cid)
            title = f"{hit.title}: {hit.text[:90]}" if hit else "(not in the knowledge base)"
            console.print(f"  [{n}] {title}  ({cid})", markup=False, highlight=False)
    console.print(
        f"[dim]{agent} on {ctx.model}: {pred['llm_calls']} LLM calls, "
        f"{time.perf_counter() - began:.1f}s; "
        f"trace {trace_path(run_dir, qid)}[/dim]"
    )


def _spinner(text: str):
    from rich.spinner import Spinner

    return Spinner("dots", text=text)


@app.command()
def trace(
    run_dir: str,
    qid: Annotated[str | None, typer.Argument()] = None,
    fmt: Annotated[str, typer.Option("--format", help="text | mermaid | html")] = "text",
) -> None:
    """Show a run's traces: a step tree, Mermaid, or the HTML report of the whole run."""
    from hopgraph.evals import report

    folder = Path(run_dir)
    if fmt == "html":
        from hopgraph.evals.evaluate import load_metrics

        path = report.render_html(folder, load_metrics(folder))
        console.print(f"report: {path}")
        return
    traces = sorted((folder / "traces").glob("*.jsonl"))
    if qid is not None:
        from hopgraph.evals.runner import trace_path

        traces = [trace_path(folder, qid)]
        if not traces[0].exists():
            raise ValueError(f"no trace for question {qid!r} in {folder}")
    for path in traces:
        records = report.read_trace(path)
        console.print(f"[bold]{path.stem}[/bold]")
        if fmt == "mermaid":
            console.print(report.to_mermaid(report.graph_view(records)), markup=False)
        elif fmt == "text":
            console.print(report.format_tree(records), markup=False)
        else:
            raise ValueError(f"unknown --format {fmt!r}; text, mermaid or html")


@app.command("eval")
def evaluate(
    run_dir: str,
    citations: Annotated[
        bool, typer.Option("--citations", help="ALCE citation recall/precision (LLM judge)")
    ] = False,
    base_url: BaseUrl = "",
    model: ModelName = "",
    sets: Sets = None,
) -> None:
    """Score a run: metrics.json and a table."""
    from hopgraph.evals.evaluate import evaluate_run, headline

    judge = kb_store = None
    if citations:
        import json as _json

        from hopgraph.agents.judge import supports
        from hopgraph.tools.retrieval import knowledge_base

        saved = _json.loads((Path(run_dir) / "manifest.json").read_text())["context"]
        ctx = build_context(
            base_url or saved.get("base_url", ""),
            model or saved.get("model", ""),
            sets=[*(sets or []), f"kb_dir={saved.get('kb_dir', 'kb')}"],
        )
        kb_store = knowledge_base(ctx)

        def judge(evidence, claim):
            return supports(evidence, claim, ctx)

    result = evaluate_run(run_dir, judge=judge, kb=kb_store)
    table = Table(title=f"{run_dir}: {result['questions']} questions, {result['failed']} failed")
    table.add_column("metric")
    table.add_column("value")
    for k, v in headline(result):
        table.add_row(k, f"{v:.3f}" if isinstance(v, float) else str(v))
    console.print(table)
    console.print(f"metrics: {Path(run_dir) / 'metrics.json'}")


@app.command()
def compare(
    runs: Annotated[
        list[str], typer.Argument(help="two or more run folders; the first is the base")
    ],
    common: Annotated[
        bool, typer.Option("--common", help="only the questions every run finished")
    ] = False,
    metrics: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            help="a metric to show, e.g. recall@3 (repeatable); default: the headline metrics",
        ),
    ] = None,
) -> None:
    """Runs' metrics side by side (with the change from the first run)."""
    from hopgraph.evals.evaluate import headline, load_metrics, restrict

    if len(runs) < 2:
        err.print("[red]error:[/red] compare needs at least two run folders")
        raise typer.Exit(2)
    results = [load_metrics(r) for r in runs]
    if common:
        shared = set.intersection(*(set(r["per_question"]) for r in results))
        results = [restrict(r, shared) for r in results]
    if metrics:
        heads = [{k: r["overall"][k] for k in metrics if k in r["overall"]} for r in results]
        unknown = [k for k in metrics if not any(k in h for h in heads)]
        if unknown:
            err.print(f"[yellow]no run has: {', '.join(unknown)}[/yellow]")
    else:
        heads = [dict(headline(r)) for r in results]
    sizes = " vs ".join(str(len(r["per_question"])) for r in results)
    table = Table(title=f"compare ({sizes} questions)")
    table.add_column("metric", no_wrap=True)
    for col in run_labels(runs):
        table.add_column(col, overflow="fold")
    base = heads[0]
    for k in dict.fromkeys(k for h in heads for k in h):
        cells = []
        for i, h in enumerate(heads):
            v = h.get(k)
            cell = "" if v is None else f"{v:.3f}"
            if i and v is not None and base.get(k) is not None:
                cell += f" ({v - base[k]:+.3f})"
            cells.append(cell)
        table.add_row(k, *cells)
    console.print(table)


def run_labels(runs: list[str]) -> list[str]:
    """Column headers for runs: folder names, or the paths where two names collide."""
    names = [Path(r).name or r for r in runs]
    return names if len(set(names)) == len(names) else list(runs)


@app.command()
def results(
    check: Annotated[
        bool, typer.Option("--check", help="exit 1 if docs/RESULTS.md is not what the records give")
    ] = False,
) -> None:
    """Write docs/RESULTS.md from the committed result records in benchmarks/results/."""
    from hopgraph.evals.results import PAGE, render, write

    if check:
        current = PAGE.read_text() if PAGE.exists() else ""
        if current != render():
            err.print(f"{PAGE} is stale: run `hopgraph results` and commit it")
            raise typer.Exit(1)
        console.print(f"{PAGE} is current")
        return
    console.print(f"wrote {write()}")


KbDir = Annotated[str, typer.Option("--kb", help="knowledge-base folder")]


def open_kb(kb: str, sets=None, *, must_exist: bool = False):
    from hopgraph.memory.kb import KnowledgeBase

    ctx = build_context(sets=sets)
    return KnowledgeBase.from_context(ctx.replace(kb_dir=kb) if kb else ctx, must_exist=must_exist)


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

    if not Path(source).exists():
        _refuse(f"nothing to index at {source}: no such file or folder")
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
            on_batch=show,
        )
    console.print(
        f"[bold]{report.source}[/bold] ({report.format}) -> {store.location}: "
        f"{report.added} added, {report.existing} already indexed, {len(report.skipped)} skipped, "
        + (f"{report.derived} triplets added, " if triplets else "")
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
    table.add_column("id", no_wrap=True, min_width=max((len(h.id) for h in hits), default=2))
    for col in ("modality", "title", "text"):
        table.add_column(col, overflow="fold")
    for h in hits:
        table.add_row(f"{h['score']:.3f}", h["id"], h["modality"], h["title"], h["text"][:120])
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


grail_app = typer.Typer(
    help="GRAIL: gap-aware query steering (no LLM calls).", no_args_is_help=True
)
app.add_typer(grail_app, name="grail")


def _grail_inputs(questions: str, kb: str, sets):
    from hopgraph.evals.datasets import read_questions

    qs, problems = read_questions(questions)
    for p in problems:
        err.print(f"[yellow]question skipped[/yellow] {p.where}: {p.reason}")
    ctx = build_context(sets=[*(sets or []), f"kb_dir={kb}"])
    from hopgraph.memory.kb import KnowledgeBase

    return qs, KnowledgeBase.from_context(ctx, must_exist=True)


@grail_app.command("train")
def grail_train(
    questions: Annotated[str, typer.Option(help="question JSONL with gold evidence ids")],
    kb: KbDir,
    out: Annotated[str, typer.Option(help="folder for grail.safetensors + card.json")],
    epochs: int = 20,
    seed: int = 0,
    test_share: Annotated[float, typer.Option(help="share of questions held out")] = 0.5,
    align: Annotated[bool, typer.Option(help="train the query-evidence adapter")] = True,
    router_questions: Annotated[
        str, typer.Option(help="question JSONL with types (MultimodalQA) for the router")
    ] = "",
    sets: Sets = None,
) -> None:
    """Train the alignment adapter, the gap module and (optionally) the router on CPU."""
    import json as _json

    from hopgraph.evals.datasets import read_questions
    from hopgraph.evals.grail import run_train

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
    out: Annotated[str, typer.Option(help="write the results as JSON")] = "",
    sets: Sets = None,
) -> None:
    """Evidence set completion (R@K, Δesc) and pool construction (Set-Rec, Jump, NRM)."""
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
        from hopgraph.evals.runner import _git_revision, machine

        res["manifest"] = {
            "command": " ".join(["hopgraph", *sys.argv[1:]]),
            "git_revision": _git_revision(),
            "machine": machine(),
            "embedder": store.embedder_name,
        }
        Path(out).write_text(_json.dumps(res, indent=2) + "\n")


qdrag_app = typer.Typer(help="QDRAG utilities.", no_args_is_help=True)
app.add_typer(qdrag_app, name="qdrag")


@qdrag_app.command("preferences")
def qdrag_preferences(
    questions: Annotated[str, typer.Option(help="training questions with gold evidence ids")],
    kb: KbDir,
    out: Annotated[str, typer.Option(help="DPO pairs JSONL (prompt / chosen / rejected)")],
    samples: Annotated[int, typer.Option(help="plans sampled per question")] = 4,
    temperature: float = 0.8,
    k: Annotated[int, typer.Option(help="contexts retrieved per subquestion for the reward")] = 5,
    limit: Annotated[int | None, typer.Option()] = None,
    base_url: BaseUrl = "",
    model: ModelName = "",
    sets: Sets = None,
) -> None:
    """QDARF: sample QD-R plans, reward = gold-context recall, write DPO pairs for TRL."""
    from hopgraph.evals.datasets import read_questions
    from hopgraph.evals.qdarf import preference_pairs, write_pairs

    ctx = build_context(base_url, model, sets=[*(sets or []), f"kb_dir={kb}"])
    qs = read_questions(questions)[0][:limit]
    pairs = preference_pairs(
        qs,
        ctx,
        samples=samples,
        temperature=temperature,
        k=k,
        on_question=lambda q, info: err.print(f"{q.id}: rewards {info['rewards']}"),
    )
    write_pairs(pairs, out)
    console.print(f"{len(pairs)} preference pairs from {len(qs)} questions -> {out}")


memory_app = typer.Typer(help="The PolarMem memory: ingest, recall, stats.", no_args_is_help=True)
app.add_typer(memory_app, name="memory")
MemoryDir = Annotated[str, typer.Option("--memory", help="memory folder (polar_dir)")]
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp"}


def memory_context(memory: str, base_url: str, model: str, prompts: str, sets) -> Context:
    ctx = build_context(base_url, model, prompts, sets)
    return ctx.replace(polar_dir=memory) if memory else ctx


@memory_app.command("ingest")
def memory_ingest(
    sources: Annotated[
        list[str], typer.Argument(help="image files (visual pathway) or any source `index` reads")
    ],
    memory: MemoryDir = "",
    present: Annotated[list[str] | None, typer.Option(help="asserted present (text)")] = None,
    absent: Annotated[list[str] | None, typer.Option(help="asserted absent (text)")] = None,
    caption: Annotated[str, typer.Option(help="caption for an image")] = "",
    limit: Annotated[int, typer.Option(help="at most this many texts (0: all)")] = 0,
    base_url: BaseUrl = "",
    model: ModelName = "",
    prompts: PromptsDir = "",
    sets: Sets = None,
) -> None:
    """Store images (concepts verified by the VLM) and texts (entities by the LLM). A source
    or text that fails is reported and the rest go on; texts already stored are skipped, so a
    re-run resumes."""
    from hopgraph.memory.polar import PolarMemoryError
    from hopgraph.memory.services import ingest_image, ingest_text
    from hopgraph.memory.sources import Skipped, read_source, read_text_file
    from hopgraph.models.errors import HopgraphModelError

    ctx = memory_context(memory, base_url, model, prompts, sets)
    stored = skipped = failed = 0
    bad = (HopgraphModelError, PolarMemoryError, ValueError, OSError)
    for src in sources:
        path = Path(src)
        try:
            if path.suffix.lower() in IMAGE_SUFFIXES:
                done = ingest_image(path, ctx, caption=caption)
                p = done.partition
                console.print(
                    f"{path.name}: has {p.has}, not_has {p.not_has}, uncertain {p.uncertain} "
                    f"(tau {p.tau:.3f}, delta {p.delta:.3f})"
                )
                stored += 1
                continue
            texts = 0
            records = read_text_file(path) if path.suffix.lower() in (".txt", ".md") else (
                read_source(path)
            )  # fmt: skip
            for rec in records:
                if isinstance(rec, Skipped) or rec.modality == "image":
                    err.print(f"skipped {rec.where if isinstance(rec, Skipped) else rec.source}")
                    continue
                texts += 1
                try:
                    report = ingest_text(rec.text, ctx, source=rec.title or rec.source,
                                         present=present or [], absent=absent or [],
                                         skip_stored=True)  # fmt: skip
                    stored += report.added + report.updated
                    skipped += report.skipped
                except bad as e:
                    failed += 1
                    err.print(f"[red]failed[/red] {src} ({rec.title or rec.source}): {e}")
                if limit and texts >= limit:
                    break
            console.print(f"{src}: {texts} text(s) read")
        except bad as e:
            failed += 1
            err.print(f"[red]failed[/red] {src}: {e}")
    console.print(
        f"{stored} memories stored, {skipped} already there, {failed} failed -> {ctx.polar_dir}"
    )
    if failed:
        raise typer.Exit(1)


@memory_app.command("recall")
def memory_recall(
    query: str,
    memory: MemoryDir = "",
    k: Annotated[int, typer.Option("-k")] = 5,
    mode: Annotated[str, typer.Option(help="logic (Algorithm 1) | vanilla")] = "logic",
    positive: Annotated[list[str] | None, typer.Option(help="Q+ (skips parsing)")] = None,
    negative: Annotated[list[str] | None, typer.Option(help="Q- (skips parsing)")] = None,
    base_url: BaseUrl = "",
    model: ModelName = "",
    prompts: PromptsDir = "",
    sets: Sets = None,
) -> None:
    """Recall memories: logic first, similarity second (or similarity only)."""
    from hopgraph.memory.services import recall

    ctx = memory_context(memory, base_url, model, prompts, sets)
    given = positive is not None or negative is not None
    out = recall(query, ctx, k=k, mode=mode, positive=positive if given else None,
                 negative=(negative or []) if given else None)  # fmt: skip
    console.print(f"Q+ {out.positive}  Q- {out.negative}  ({out.mode})")
    if out.note:
        err.print(f"note: {out.note}")
    for r in out.items:
        console.print(f"{r.s_log:+d} {r.s_sem:.3f} {r.id}  {r.evidence(300)}")


@memory_app.command("stats")
def memory_stats(memory: MemoryDir = "", sets: Sets = None) -> None:
    """Counts of memories, concepts, edges and vectors."""
    import json

    from hopgraph.memory.services import polar_memory

    console.print_json(json.dumps(polar_memory(memory_context(memory, "", "", "", sets)).stats()))


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
