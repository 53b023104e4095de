"""Running agents and reading their runs: run, ask, trace, eval, compare, results, and the
model server commands serve and doctor."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.table import Table

from hopgraph.cli.app import (
    BaseUrl,
    CacheDir,
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
)
from hopgraph.graphs import GRAPHS, every_context
from hopgraph.graphs import context_schema as schema_of

GraphSpec = Annotated[
    str,
    typer.Option(
        "--graph",
        help="your own graph instead of --agent: package.module:graph or path/file.py:graph, "
        "a compiled LangGraph graph whose schemas are hopgraph's InputState / OutputState",
    ),
]


@app.command()
def serve(
    model: ModelName = "",
    engine: Annotated[
        str,
        typer.Option(
            help="llama (llama.cpp, in hopgraph's environment) or vllm (vLLM's CPU "
            "build in its own environment, `make vllm`)"
        ),
    ] = "llama",  # fmt: skip
    vllm_python: Annotated[
        str, typer.Option(help="python of vLLM's environment (default .venv-vllm/bin/python)")
    ] = "",
    weights: Annotated[
        str,
        typer.Option(
            help="with --engine vllm: a local Hugging Face model folder served as it is under "
            "the name --model (a VLM such as Qwen2.5-VL); default: the embedded model"
        ),
    ] = "",  # fmt: skip
    sets: Sets = None,
) -> None:
    """Serve a model in the foreground and print its base URL: the embedded one with llama.cpp
    or with vLLM itself (its weights converted once from the verified GGUF, no download), or a
    local model folder with vLLM."""
    from hopgraph.models import embedded_server
    from hopgraph.models.errors import HopgraphModelError

    if engine not in ("llama", "vllm"):
        refuse(f"--engine is llama or vllm, not {engine!r}")
    if weights and engine != "vllm":
        refuse("--weights is for --engine vllm (llama.cpp serves the embedded GGUFs)")
    ctx = build_context(model=model, sets=sets)
    began = time.perf_counter()
    try:
        if engine == "vllm":
            from hopgraph.models.vllm_server import VllmServer

            server = VllmServer(ctx.model, cache_dir=ctx.cache_dir, python=vllm_python,
                                n_ctx=ctx.n_ctx, weights_dir=weights).start()  # fmt: skip
        else:
            server = embedded_server(ctx)
    except HopgraphModelError as e:
        refuse(str(e))
    console.print(f"{engine} {ctx.model} ready in {time.perf_counter() - began:.1f}s")
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
    from hopgraph.models import chat_model, vlm_model
    from hopgraph.models.doctor import diagnose, diagnose_vlm, images_per_call, method_support

    ctx = build_context(base_url, model, sets=sets, schema=every_context())
    rows = diagnose(chat_model(ctx), embedded=not ctx.base_url, vlm=bool(ctx.vlm_model))
    if ctx.vlm_model:  # images go to the VLM: probe it with as many as one call sends
        rows += diagnose_vlm(vlm_model(ctx), images_per_call(ctx))
    table = Table(title=f"hopgraph doctor: {ctx.model}")
    for col in ("capability", "supported", "detail"):
        table.add_column(col)
    for row in rows:
        table.add_row(row.capability, "yes" if row.ok else "no", row.detail)
    console.print(table)
    methods = Table(title="what each method needs of it")
    for col in ("method", "runs here", "missing"):
        methods.add_column(col)
    for row in method_support(rows):
        methods.add_row(*row)
    console.print(methods)


@app.command()
def run(
    questions: Annotated[str, typer.Option(help="canonical question JSONL")],
    out: Annotated[str, typer.Option(help="run folder (re-run to resume)")],
    agent: Annotated[
        str, typer.Option(help=f"graph to run: {' | '.join(GRAPHS)} (or --graph)")
    ] = "",
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
    cache: CacheDir = "",
    graph: GraphSpec = "",
    accept_code_change: Annotated[
        bool,
        typer.Option(
            help="extend a record whose answers came from other method code (its table in "
            "RESULTS.md then says that its columns mix code fingerprints)"
        ),
    ] = False,
    budget_tokens: Annotated[
        int, typer.Option(help="stop starting questions once the record has spent N tokens")
    ] = 0,
    budget_usd: Annotated[
        float, typer.Option(help="stop starting questions once the record has spent $X (--price)")
    ] = 0.0,
    price: PriceOption = "",
    sets: Sets = None,
) -> None:
    """Run an agent over a question file: checkpointed, resumable, traced. With a budget, no
    question starts once the record's answered questions have spent it (those in flight
    finish); the run then exits 4, and re-running with a larger budget goes on."""
    from hopgraph.evals.runner import Runner
    from hopgraph.models.embedded import unused_cpu_features

    # what fails every question is refused once, before a folder or a model server exists
    agent = chosen_graph(agent, graph)
    ctx = build_context(
        base_url, model, prompts, [*(sets or []), *([f"kb_dir={kb}"] if kb else [])], cache,
        schema_of(agent),
    )  # fmt: skip
    if concurrency < 1:
        refuse(f"--concurrency is how many questions run at once: 1 or more, not {concurrency}")
    budget = run_budget(budget_tokens, budget_usd, price)
    if budget and checkpointer:
        refuse("a budget applies to a local run: --budget-* and --checkpointer do not mix")
    read = _read_inputs(questions, kb, sets, type(ctx))
    endpoint = checked_endpoint(ctx)
    if not ctx.base_url and (unused := unused_cpu_features()):
        err.print(f"[yellow]note[/yellow] this llama.cpp build leaves {', '.join(unused)} of "
                  "this CPU unused: `make native` reads prompts about 1.9x faster")  # fmt: skip
    otel = otel_export(otel_endpoint)
    try:
        runner = Runner(
            agent, out, ctx, endpoint=endpoint, checkpointer=checkpointer, lease=lease,
            speed_probe=not ctx.base_url,  # the embedded server runs at the host's speed
            accept_code_change=accept_code_change, exporter=otel, budget=budget,
        )  # fmt: skip
    except Exception as e:  # noqa: BLE001 - a database that cannot be reached or used
        refuse(f"checkpointer {checkpointer}: {e}")
    summary = _run_showing_progress(runner, read, agent, otel, limit=limit,
                                    concurrency=concurrency, redo=redo or ())  # fmt: skip
    _report_run(summary, out, budget)


def _run_showing_progress(runner, read, agent: str, otel, *, limit, concurrency, redo):  # noqa: ANN001, ANN202
    """``Runner.run`` under a progress bar (done, failed, pace); Ctrl-C and SIGTERM stop the
    run and its server at once (exit 130 / 143), a run of failures exits 1."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from hopgraph.evals.runner import RunAborted

    total = len(read.first(limit))
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
            seconds.append(pred.get("seconds", 0.0))
            bar.update(
                task,
                completed=summary.skipped_done + summary.finished + summary.failed,
                failed=summary.failed,
                pace=f"last {seconds[-1]:.1f}s, mean {sum(seconds) / len(seconds):.1f}s/question",
            )

        try:
            return runner.run(read, limit=limit, concurrency=concurrency, on_done=advance,
                              redo=redo)  # fmt: skip
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


def _read_inputs(questions: str, kb: str, sets, schema):  # noqa: ANN001, ANN202 - a QuestionSet
    """The question file, read once, and the KB a run reads, each refused (exit 2) where every
    question would fail: a missing file, a KB that is a file, absent or empty, no valid line."""
    from hopgraph.evals.run_folder import QuestionSet

    if not Path(questions).is_file():
        refuse(f"no questions file at {questions}")
    if kb and Path(kb).is_file():
        refuse(f"--kb {kb} is a file, not a knowledge-base folder: name a folder")
    if kb and not (Path(kb) / "chroma").is_dir():
        refuse(f"no knowledge base at {kb}: build one with `hopgraph index SOURCE --kb {kb}`")
    if kb and not any(open_kb(kb, sets, schema=schema).counts().values()):
        refuse(f"the knowledge base at {kb} holds no item: every answer would be made up; "
               f"index a source into it first (`hopgraph index SOURCE --kb {kb}`)")  # fmt: skip
    read = QuestionSet.read(questions)  # once: the runner takes it as it is
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
        err.print(f"[yellow]budget reached:[/yellow] {summary.budget_stopped} question(s) not "
                  "started; re-run with a larger budget to answer them")  # fmt: skip
        raise typer.Exit(BUDGET_SPENT)


QUESTIONS_FAILED = 3
"""``hopgraph run``'s exit status when it ended with questions failed (the rest are kept)."""
BUDGET_SPENT = 4
"""``hopgraph run``'s exit status when its budget left questions unstarted."""


def run_budget(tokens: int, usd: float, price: str):  # noqa: ANN201 - a Budget or None
    """The run's budget from its flags, refused (exit 2) where they do not make one."""
    from hopgraph.evals.cost import Budget

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
        err.print(f"  {qid}: {error[:500]}", markup=False, highlight=False)
    err.print("their traces hold the details; re-run the same command to retry them")
    raise typer.Exit(QUESTIONS_FAILED)


@app.command()
def ask(
    question: str,
    agent: Annotated[str, typer.Option(help="graph to run")] = "rag",
    graph: GraphSpec = "",
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
    cache: CacheDir = "",
    sets: Sets = None,
) -> None:
    """Answer one question, showing each step live (nodes starting and ending, LLM calls,
    retrievals), then the answer with its numbered citations and the trace path."""
    import hashlib
    import tempfile

    from hopgraph.evals.datasets import Question
    from hopgraph.evals.report import live_line
    from hopgraph.evals.run_folder import packed, trace_path
    from hopgraph.evals.runner import Runner

    agent = chosen_graph(agent, graph)
    ctx = build_context(base_url, model, prompts, [*(sets or []), f"kb_dir={kb}"], cache,
                        schema_of(agent))  # fmt: skip
    for path in image or []:
        if not Path(path).is_file():
            refuse(f"no image at {path}")
    if image and not ctx.vlm_model:  # answered blind otherwise; refused like every setup fault
        refuse("--image needs a vision-language model: set vlm_base_url/vlm_model to one")
    qid = "ask-" + hashlib.sha1(question.encode()).hexdigest()[:10]
    run_dir = Path(
        out or Path(tempfile.gettempdir()) / "hopgraph-ask" / f"{agent}-{int(time.time())}"
    )
    endpoint = checked_endpoint(ctx)
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
    runner = Runner(agent, run_dir, ctx, endpoint=endpoint, exporter=otel,
                    on_record=None if quiet else show)  # fmt: skip
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
    _print_answer(pred, f"{agent} on {ctx.model}", time.perf_counter() - began,
                  packed(trace_path(run_dir, qid)))  # fmt: skip


def _print_answer(pred: dict, who: str, seconds: float, trace: Path) -> None:
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
    console.print(f"[dim]{who}: {pred['llm_calls']} LLM calls, {seconds:.1f}s; trace {trace}[/dim]")


@app.command()
def trace(
    args: Annotated[
        list[str],
        typer.Argument(help="RUN [QID], or RUN_A RUN_B QID: one question's two executions"),
    ],
    fmt: Annotated[str, typer.Option("--format", help="text | mermaid | html")] = "text",
    out: Annotated[str, typer.Option(help="where the html of a two-run diff goes")] = "",
    calls: Annotated[
        bool, typer.Option("--calls", help="each LLM call's prompt and reply under its node")
    ] = False,
) -> None:
    """Show a run's traces (a step tree, Mermaid, or the HTML report of the whole run), or
    put one question's executions in two runs side by side with their first divergence."""
    from hopgraph.evals import report
    from hopgraph.evals.run_folder import RunFolder, has_trace, trace_ids, trace_path

    if len(args) == 3:
        runs, qid = [Path(a) for a in args[:2]], args[2]
        paths = [trace_path(r, qid) for r in runs]
        for path in paths:
            if not has_trace(path):
                refuse(f"no trace for question {qid!r} at {path}")
        records = tuple(report.read_trace(p) for p in paths)
        hashes = tuple((RunFolder(r).manifest() or {}).get("prompts", {}) for r in runs)
        labels = tuple(run_labels([str(r) for r in runs]))
        if fmt == "html":
            page = Path(out or f"trace-{qid}.html")
            report.render_trace_diff_html(records, labels, qid, page, hashes)
            console.print(f"trace diff: {page}")
            return
        rows, first = report.trace_diff(*records, hashes)
        console.print(report.format_trace_diff(rows, first, labels, hashes), markup=False)
        console.print(report.format_call_diff(report.call_diff(*records), hashes), markup=False)
        return
    if len(args) > 2:
        refuse("trace takes RUN [QID], or RUN_A RUN_B QID")
    folder = Path(args[0])
    qid = args[1] if len(args) == 2 else None
    if fmt == "html":
        from hopgraph.evals.evaluate import load_metrics

        path = report.render_html(folder, load_metrics(folder))
        console.print(f"report: {path}")
        return
    traces = trace_ids(folder)
    if qid is not None:
        traces = [trace_path(folder, qid)]
        if not has_trace(traces[0]):
            raise ValueError(f"no trace for question {qid!r} in {folder}")
    for path in traces:
        records = report.read_trace(path)
        console.print(f"[bold]{path.stem}[/bold]")
        if fmt == "mermaid":
            console.print(report.to_mermaid(report.graph_view(records)), markup=False)
        elif fmt == "text":
            console.print(report.format_tree(records, calls=calls), markup=False)
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
    price: PriceOption = "",
    sets: Sets = None,
) -> None:
    """Score a run: metrics.json and a table, with what it cost (USD too with --price)."""
    from hopgraph.evals.evaluate import evaluate_run, headline
    from hopgraph.evals.run_folder import RunFolder

    priced = parsed_price(price)

    judge = kb_store = None
    judge_name = ""
    if citations:
        from hopgraph.agents.judge import JUDGE, supports
        from hopgraph.prompts import prompts_for, sha256_file
        from hopgraph.tools.retrieval import knowledge_base

        saved = RunFolder(run_dir).manifest()["context"]
        ctx = build_context(
            base_url or saved.get("base_url", ""),
            model or saved.get("model", ""),
            sets=[*(sets or []), f"kb_dir={saved.get('kb_dir', 'kb')}"],
        )
        kb_store = knowledge_base(ctx)

        def judge(evidence, claim):
            return supports(evidence, claim, ctx)

        # scores from another judge model or prompt are not kept: every question is judged anew
        prompt = prompts_for(ctx.prompts_dir).source_path(JUDGE.template)
        judge_name = f"{ctx.model} {JUDGE.template} {sha256_file(prompt)[:12]}"

    def judged(i: int, n: int) -> None:
        err.print(f"citations judged: {i}/{n} questions (kept as they are judged)")

    result = evaluate_run(
        run_dir, judge=judge, kb=kb_store, judge_name=judge_name, on_judged=judged, price=priced
    )
    _warn_missing_gold(run_dir, kb_store, sets)
    table = Table(title=f"{run_dir}: {result['questions']} questions, {result['failed']} failed")
    table.add_column("metric")
    table.add_column("value")
    for k, v in headline(result):
        table.add_row(k, f"{v:.3f}" if isinstance(v, float) else str(v))
    console.print(table)
    if result["by_template"]:
        per = Table(title="per question, by prompt template")
        for col in ("template", "calls", "prompt tokens", "completion tokens", "LLM seconds"):
            per.add_column(col)
        for name, t in result["by_template"].items():
            per.add_row(name, *(f"{t[k]:g}" for k in ("calls", "prompt_tokens",
                        "completion_tokens", "seconds")))  # fmt: skip
        console.print(per)
    console.print(f"cost: {cost_text(result['cost'])}")
    console.print(f"metrics: {Path(run_dir) / 'metrics.json'}")


def cost_text(cost: dict) -> str:
    """A run's cost in one line: calls, tokens, USD where priced, budget stops."""
    text = (f"{cost['llm_calls']:,} LLM calls, {cost['prompt_tokens']:,} prompt + "
            f"{cost['completion_tokens']:,} completion tokens")  # fmt: skip
    text += f", ${cost['usd']:.4f}" if "usd" in cost else ""
    stops = cost.get("budget_stops", 0)
    return text + (f"; {stops} question(s) stopped by max_question_tokens" if stops else "")


def _warn_missing_gold(run_dir: str, kb_store, sets) -> None:  # noqa: ANN001
    """Warn when the run's KB no longer holds gold evidence ids its questions name."""

    from hopgraph.evals.evaluate import missing_gold
    from hopgraph.evals.run_folder import RunFolder
    from hopgraph.memory.kb import KnowledgeBase, KnowledgeBaseError

    if kb_store is None:
        try:
            saved = RunFolder(run_dir).manifest()["context"]
            ctx = build_context(sets=[*(sets or []), f"kb_dir={saved.get('kb_dir', 'kb')}"])
            kb_store = KnowledgeBase.from_context(ctx, must_exist=True)
        except (OSError, ValueError, KeyError, KnowledgeBaseError):
            return  # no KB here to check against
    gone = missing_gold(run_dir, kb_store)
    if gone:
        err.print(
            f"[yellow]warning[/yellow] {len(gone)} gold evidence id(s) are not in the KB "
            f"{kb_store.location} (e.g. {', '.join(gone[:3])}): a source changed or was removed "
            "since, or was never indexed; recall counts them as missed"
        )


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
    questions: Annotated[
        bool,
        typer.Option("--questions", help="list the questions whose 0/1 score flipped (two runs)"),
    ] = False,
    by: Annotated[str, typer.Option(help="the 0/1 metric --questions reads")] = "em",
    fmt: Annotated[
        str, typer.Option("--format", help="text | html (html: a page of the flips)")
    ] = "text",
    out: Annotated[str, typer.Option(help="where --format html writes its page")] = "",
) -> None:
    """Runs side by side, and each run against the first on the questions both scored: better /
    worse / tied, sign test, McNemar (0/1 metrics), a 95 % bootstrap interval of the
    difference, and the questions 80 % power would need."""
    from hopgraph.evals.evaluate import compare_runs, flipped

    if len(runs) < 2:
        refuse("compare needs at least two run folders")
    if fmt not in ("text", "html"):
        refuse(f"unknown --format {fmt!r}: text or html")
    if (questions or fmt == "html") and len(runs) != 2:
        refuse("--questions and --format html compare exactly two runs")
    done = compare_runs(runs, common=common, metrics=metrics)
    if done.unknown:
        err.print(f"[yellow]no run has: {', '.join(done.unknown)}[/yellow]")
    labels = run_labels(runs)
    table = Table(title=f"compare ({' vs '.join(map(str, done.sizes))} questions)")
    table.add_column("metric", no_wrap=True)
    for col in labels:
        table.add_column(col, overflow="fold")
    for metric, values, deltas in done.rows:
        table.add_row(metric, *(_cell(v, d) for v, d in zip(values, deltas, strict=True)))
    console.print(table)
    _print_verdicts(done.paired, labels)
    if not (questions or fmt == "html"):
        return
    flips = flipped(runs[0], runs[1], by)
    if fmt == "html":
        console.print(f"flips page: {_flips_page(runs, labels, by, flips, out)}")
        return
    for key, title in (("lost", "right -> wrong"), ("gained", "wrong -> right")):
        console.print(f"[bold]{by}: {title} ({len(flips[key])})[/bold]")
        for f in flips[key]:
            console.print(
                f"  {f.id}  gold {' | '.join(f.gold)!r}\n"
                f"    {labels[0]}: {f.answers[0]!r} ({f.calls[0]:g} calls, {f.seconds[0]:.1f} s)\n"
                f"    {labels[1]}: {f.answers[1]!r} ({f.calls[1]:g} calls, {f.seconds[1]:.1f} s)",
                markup=False,
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


def _cell(value: float | None, delta: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.3f}" + ("" if delta is None else f" ({delta:+.3f})")


def run_labels(runs: list[str]) -> list[str]:
    """Column headers for runs: folder names, or the paths where two names collide."""
    names = [Path(r).name or r for r in runs]
    return names if len(set(names)) == len(names) else list(runs)


def _print_verdicts(paired, labels: list[str]) -> None:  # noqa: ANN001
    """Each run against the first, metric by metric: the paired tests and their verdict."""
    verdicts = Table(title=f"paired, against {labels[0]} (questions both scored)")
    for col in ("metric", "run", "n", "better/worse/tied", "sign p", "McNemar p",
                "difference [95 % CI]", "verdict", "n for 80 % power"):  # fmt: skip
        verdicts.add_column(col, overflow="fold")
    for metric, i, r in paired:
        ci = f" [{r.ci[0]:+.3f}, {r.ci[1]:+.3f}]" if r.ci else ""
        needed = "-" if r.needed_n is None or r.verdict != "not significant" else f"{r.needed_n}"
        verdicts.add_row(
            metric, labels[i], str(r.n), f"{r.better}/{r.worse}/{r.tied}", f"{r.sign_p:.3g}",
            "" if r.mcnemar_p is None else f"{r.mcnemar_p:.3g}", f"{r.diff:+.3f}{ci}",
            r.verdict, needed,
        )  # fmt: skip
    console.print(verdicts)


def _flips_page(runs: list[str], labels: list[str], by: str, flips, out: str) -> Path:  # noqa: ANN001
    """The HTML page of the questions that flipped between two runs (and each run's own page,
    which it links to)."""
    from hopgraph.evals import report
    from hopgraph.evals.evaluate import load_metrics

    for run in runs:  # the pages the flips link to
        report.render_html(Path(run), load_metrics(run))
    from hopgraph.evals import plots
    from hopgraph.evals.evaluate import LOWER_IS_BETTER

    scores = [load_metrics(r)["per_question"] for r in runs]
    figures = plots.comparison(scores, labels, by, by in LOWER_IS_BETTER)
    page = Path(out or f"compare-{labels[0]}-{labels[1]}.html")
    path = report.render_flips_html([Path(r) for r in runs], labels, by, flips, page, figures)
    return path


@app.command()
def results(
    check: Annotated[
        bool, typer.Option("--check", help="exit 1 if docs/RESULTS.md is not what the records give")
    ] = False,
) -> None:
    """Write docs/RESULTS.md from the committed result records in benchmarks/results/ (of the
    checkout this runs in)."""
    from hopgraph.evals.results import page_path, render, write

    try:
        page = page_path()
    except FileNotFoundError as e:
        refuse(str(e))
    if check:
        current = page.read_text() if page.exists() else ""
        if current != render():
            err.print(f"{page} is stale: run `hopgraph results` and commit it")
            raise typer.Exit(1)
        console.print(f"{page} is current")
        return
    console.print(f"wrote {write()}")
