"""Reading runs: ``eval`` scores a run, ``compare`` pairs runs question by question, ``results``
writes docs/results/ from the committed records."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from hopgraph.cli.app import (
    BaseUrl,
    DataDir,
    ModelName,
    OldOut,
    PriceOption,
    Sets,
    app,
    build_context,
    console,
    err,
    file_flag,
    name_column,
    parsed_price,
    refuse,
    run_folder,
    run_labels,
)
from hopgraph.wording import counted

Citations = Annotated[
    bool, typer.Option("--citations", help="ALCE citation recall/precision (LLM judge)")
]
Wrong = Annotated[
    bool, typer.Option("--wrong", help="also list each question answered wrongly or failed")
]


@app.command("eval")
def evaluate(
    run_dir: Annotated[str, typer.Argument(help="the run folder to score")],
    citations: Citations = False,
    base_url: BaseUrl = "",
    model: ModelName = "",
    price: PriceOption = "",
    sets: Sets = None,
    wrong: Wrong = False,
    data: DataDir = "",
) -> None:
    """Score a run: metrics.json and a table, with what it cost (USD too with --price)."""
    from hopgraph.evals.evaluate import evaluate_run, headline

    run_folder(run_dir)
    priced = parsed_price(price)

    judge, kb_store, judge_name = (
        _citation_judge(run_dir, base_url, model, sets) if citations else (None, None, "")
    )

    def judged(i: int, n: int) -> None:
        err.print(f"citations judged: {i}/{n} questions (kept as they are judged)")

    from hopgraph.evals.run_record import read_run
    from hopgraph.evals.stages import where_each_went

    stages, held = where_each_went(read_run(run_dir))
    result = evaluate_run(
        run_dir,
        judge=judge,
        kb=kb_store,
        judge_name=judge_name,
        on_judged=judged,
        price=priced,
        stages=stages,
        gold_answer=held,
    )
    _warn_missing_gold(run_dir, kb_store, sets)
    table = Table(title=f"{run_dir}: {gold_words(result)}, {result['failed']} failed")
    table.add_column("metric")
    table.add_column("value")
    for k, v in headline(result):
        table.add_row(k, f"{v:.3f}" if isinstance(v, float) else str(v))
    console.print(table)
    if result["by_template"]:
        per = Table(title="per question, by prompt template")
        timed = any("waited_s" in t for t in result["by_template"].values())
        waits = {
            "waited_s": "of which waiting for a slot",
            "prompt_reused": "prompt tokens from the server's cache",
        }
        cols = {
            "calls": "calls",
            "prompt_tokens": "prompt tokens",
            "completion_tokens": "completion tokens",
            "seconds": "LLM seconds",
            **(waits if timed else {}),
        }
        name_column(per, "template", result["by_template"])
        for col in cols.values():
            per.add_column(col)
        for name, t in result["by_template"].items():
            per.add_row(name, *(f"{t.get(k, 0):g}" for k in cols))
        console.print(per)
    _print_stages(run_dir, result["stages"])
    _print_held(held)
    console.print(f"cost: {cost_text(result['cost'])}")
    console.print(f"metrics: {Path(run_dir) / 'metrics.json'}")
    if wrong:
        _print_wrong(run_dir, result)


def _print_held(held: dict[str, dict[str, str]]) -> None:
    """Per template, in how many wrong answers it wrote the gold answer and in how many it only
    read it (``evals.stages.gold_answer_held``)."""
    from hopgraph.evals.stages import GOLD_ANSWER, gold_answer_table

    if not held:
        return
    table = Table(
        title=f"where the gold answer of {counted(len(held), 'wrong answer')} went (a template "
        "whose reply held it wrote it; one whose prompt alone held it read it only: a note or "
        "a short answer that did dropped it; a gold that is yes, no or words of the question "
        "is left out)"
    )
    rows = gold_answer_table(held.values())
    name_column(table, "template", [*rows, "(in no prompt or reply)"])
    for col in ("wrote it", "read it only"):
        table.add_column(col)
    for template, did in rows.items():
        table.add_row(template, *(str(did[d]) for d in GOLD_ANSWER))
    if unseen := sum(not h for h in held.values()):
        table.add_row("(in no prompt or reply)", "", str(unseen))
    console.print(table)


def _citation_judge(run_dir: str, base_url: str, model: str, sets: list[str] | None):  # noqa: ANN202
    """The citation judge on the run's own endpoint and KB (or those given): the judge, the KB
    and the judge's name (model, template, template hash). Scores from another judge model or
    prompt are not kept: every question is judged anew."""
    from hopgraph.agents.judge import JUDGE, supports
    from hopgraph.prompts import prompts_for, sha256_file
    from hopgraph.tools.retrieval import knowledge_base

    saved = _saved_context(run_dir)
    ctx = build_context(
        base_url or saved.get("base_url", ""),
        model or saved.get("model", ""),
        sets=[*(sets or []), f"kb_dir={saved.get('kb_dir', 'kb')}"],
    )

    def judge(evidence, claim):
        return supports(evidence, claim, ctx)

    prompt = prompts_for(ctx.prompts_dir).source_path(JUDGE.template)
    return judge, knowledge_base(ctx), f"{ctx.model} {JUDGE.template} {sha256_file(prompt)[:12]}"


def gold_words(result: dict) -> str:
    """How many questions a score is over: "2 questions, 1 with a gold answer (the answer
    scores are over it)" where some have none."""
    n, gold = result["questions"] - result["failed"], result.get("with_gold")
    head = counted(result["questions"], "question")
    if gold is None or gold == n:
        return head
    if not gold:
        return f"{head}, none with a gold answer (answers unscored; cost and citations shown)"
    over = "it" if gold == 1 else f"those {gold}"
    return f"{head}, {gold} with a gold answer (the answer scores are over {over})"


def _print_stages(run_dir: str, stages: dict[str, str]) -> None:
    """How many questions were lost at each stage of their evidence's path, and which."""
    from hopgraph.evals.stages import stage_counts

    if not stages:
        return
    table = Table(title="where questions were lost (the first stage their gold evidence failed)")
    for col in ("stage", "questions", "ids"):
        table.add_column(col)
    for stage, n in stage_counts(stages.values()).items():
        ids = [q for q, s in stages.items() if s == stage]
        table.add_row(stage, str(n), ", ".join(ids[:4]) + (f" (+{n - 4})" if n > 4 else ""))
    console.print(table)
    console.print(f"open them: hopgraph view {run_dir} (filter the table by stage)", markup=False)


def _print_wrong(run_dir: str, result: dict) -> None:
    """The questions scored wrong by the benchmark's own rule, and those that failed: id,
    answer and gold, for ``hopgraph trace RUN QID`` or the viewer."""
    from hopgraph.evals.run_record import answered_right
    from hopgraph.harness.run_folder import scored_predictions

    preds = scored_predictions(run_dir)
    lines = [
        (qid, "wrong")
        for qid, sc in result["per_question"].items()
        if "em" in sc or "mmlb_acc" in sc
        if not answered_right(sc)
    ]
    lines += [(qid, "failed") for qid, p in preds.items() if p.get("error")]
    unjudged = [q for q, p in preds.items() if not p.get("error") and not p.get("gold")]
    console.print(
        f"[bold]{len(lines)} wrong or failed[/bold]"
        + (
            f"; {len(unjudged)} could not be judged (no gold answer: "
            f"{', '.join(unjudged[:5])}{' …' if len(unjudged) > 5 else ''})"
            if unjudged
            else ""
        )
    )
    for qid, why in lines:
        p = preds.get(qid, {})
        said = f"error {p['error']}" if why == "failed" else f"answered {p.get('answer', '')!r}"
        lost = f"; lost at: {s}" if (s := (result.get("stages") or {}).get(qid)) else ""
        console.print(
            f"  {qid} ({why}): {said}; gold {' | '.join(p.get('gold') or [])!r}{lost}"
            f"{_trail(result, qid)}",
            markup=False,
        )


def cost_text(cost: dict) -> str:
    """A run's cost in one line: calls, tokens, USD where priced, budget stops."""
    text = (
        f"{counted(cost['llm_calls'], 'LLM call')}, {cost['prompt_tokens']:,} prompt + "
        f"{cost['completion_tokens']:,} completion tokens"
    )
    text += f", ${cost['usd']:.4f}" if "usd" in cost else ""
    stops = cost.get("budget_stops", 0)
    return text + (f"; {stops} question(s) stopped by max_question_tokens" if stops else "")


def _warn_missing_gold(run_dir: str, kb_store, sets) -> None:  # noqa: ANN001
    """Warn when the run's KB no longer holds gold evidence ids its questions name."""

    from hopgraph.evals.evaluate import missing_gold
    from hopgraph.memory.kb import KnowledgeBase, KnowledgeBaseError

    if kb_store is None:
        try:
            saved = _saved_context(run_dir)
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
            help="a metric to show and test, e.g. recall@3 (repeatable); default: the "
            "headline metrics shown, their answer and evidence metrics tested",
        ),
    ] = None,
    flips: Annotated[
        bool,
        typer.Option("--flips", help="list the questions whose 0/1 score flipped (two runs)"),
    ] = False,
    questions: Annotated[  # the old name of --flips (--questions names a file elsewhere)
        bool, typer.Option("--questions", hidden=True)
    ] = False,
    by: Annotated[str, typer.Option(help="the 0/1 metric --flips reads")] = "em",
    fmt: Annotated[
        str, typer.Option("--format", help="text | html (html: a page of the flips)")
    ] = "text",
    html: Annotated[str, typer.Option("--html", help="the page --format html writes")] = "",
    out: OldOut = "",
    data: DataDir = "",
) -> None:
    """Runs side by side, and each run against the first on the questions both scored: better /
    worse / tied, sign test, McNemar (0/1 metrics), a 95 % bootstrap interval of the
    difference, and the questions 80 % power would need."""
    from hopgraph.evals.evaluate import compare_runs, flipped, load_metrics

    if len(runs) < 2:
        refuse("compare needs at least two run folders")
    for run in runs:
        run_folder(run)
    if fmt not in ("text", "html"):
        refuse(f"unknown --format {fmt!r}: text or html")
    questions = flips or questions
    if (questions or fmt == "html") and len(runs) != 2:
        refuse("--flips and --format html compare exactly two runs")
    done = compare_runs(runs, common=common, metrics=metrics)
    if done.unknown:
        err.print(f"[yellow]no run has: {', '.join(done.unknown)}[/yellow]")
    labels = run_labels(runs)
    table = Table(title=f"compare ({' vs '.join(map(str, done.sizes))} questions)")
    name_column(table, "metric", (metric for metric, _, _ in done.rows))
    for col in labels:
        table.add_column(col, overflow="fold")
    for metric, values, deltas in done.rows:
        table.add_row(metric, *(_cell(v, d) for v, d in zip(values, deltas, strict=True)))
    console.print(table)
    _warn_models(runs, labels)
    _print_verdicts(done.paired, labels)
    loaded = [load_metrics(r) for r in runs]  # current after compare_runs: read, not re-scored
    _note_gold(loaded, labels)
    stages = [run_stages(r, m) for r, m in zip(runs, loaded, strict=True)]
    _print_stage_table(stages, labels)
    if not (questions or fmt == "html"):
        return
    changed = flipped(runs[0], runs[1], by)
    if fmt == "html":
        page = _flips_page(runs, labels, by, changed, file_flag("--html", html, out))
        console.print(f"flips page: {page}")
        return
    for key, title in (("lost", "right -> wrong"), ("gained", "wrong -> right")):
        console.print(f"[bold]{by}: {title} ({len(changed[key])})[/bold]")
        for f in changed[key]:
            console.print(
                f"  {f.id}  gold {' | '.join(f.gold)!r}\n"
                f"    {labels[0]}: {f.answers[0]!r} ({f.calls[0]:g} calls, {f.seconds[0]:.1f} s; "
                f"{stages[0].get(f.id, 'no trace')}{_trail(loaded[0], f.id)})\n"
                f"    {labels[1]}: {f.answers[1]!r} ({f.calls[1]:g} calls, {f.seconds[1]:.1f} s; "
                f"{stages[1].get(f.id, 'no trace')}{_trail(loaded[1], f.id)})",
                markup=False,
            )


def _trail(metrics: dict[str, Any], qid: str) -> str:
    """ "; gold answer: T wrote it → U read it only" where ``eval`` placed the question's gold
    answer (``evals.stages.gold_answer_held``), else ""."""
    from hopgraph.evals.stages import gold_answer_trail

    held = (metrics.get("gold_answer") or {}).get(qid)
    return "" if held is None else f"; gold answer: {gold_answer_trail(held)}"


def _note_gold(loaded: list[dict[str, Any]], labels: list[str]) -> None:
    """Where a run has questions without gold, say that its answer scores and the tests'
    n leave them out."""
    for m, label in zip(loaded, labels, strict=True):
        n, gold = m["questions"] - m["failed"], m.get("with_gold", m["questions"] - m["failed"])
        if gold < n:
            console.print(
                f"{label}: {n - gold} of its {n} answered questions have no gold "
                "answer: the answer scores and each test's n leave them out",
                markup=False,
            )


def run_stages(run_dir: str, metrics: dict[str, Any]) -> dict[str, str]:
    """Each question's stage (``evals.stages``): as ``eval`` wrote it into ``metrics``, else
    read from the run's traces now."""
    from hopgraph.evals.run_record import read_run
    from hopgraph.evals.stages import stage_of_each

    return metrics.get("stages") or stage_of_each(read_run(run_dir))


def _print_stage_table(stages: list[dict[str, str]], labels: list[str]) -> None:
    """Each run's questions per stage of their evidence's path, side by side."""
    from hopgraph.evals.stages import APART, STAGES

    if not any(stages):
        return
    table = Table(title="where questions were lost (the first stage their gold evidence failed)")
    table.add_column("stage", no_wrap=True)
    for col in labels:
        table.add_column(col)
    for stage in (*STAGES, *APART):
        counts = [sum(s == stage for s in run.values()) for run in stages]
        if any(counts):
            table.add_row(stage, *map(str, counts))
    console.print(table)


def _saved_context(run_dir: str | Path) -> dict[str, Any]:
    """The Context a run folder's manifest recorded ({} for a folder without one)."""
    from hopgraph.harness.run_folder import RunFolder

    m = RunFolder(run_dir).manifest()
    return m["context"] if m else {}


def _cell(value: float | None, delta: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.3f}" + ("" if delta is None else f" ({delta:+.3f})")


def _warn_models(runs: list[str], labels: list[str]) -> None:
    """Runs answered by different models (or GGUF files) differ by more than their method."""
    from hopgraph.harness.run_folder import RunFolder

    models = []
    for run in runs:
        m: Mapping[str, Any] = RunFolder(run).manifest() or {}
        models.append(
            f"{m.get('model', '?')}"
            + (f" ({m['gguf_sha256'][:12]})" if m.get("gguf_sha256") else "")
        )
    if len(set(models)) > 1:
        err.print(
            "[yellow]warning[/yellow] the runs used different models ("
            + ", ".join(f"{label}: {m}" for label, m in zip(labels, models, strict=True))
            + "): a difference is the model's as much as the method's"
        )


VERDICT_NOTE = (
    "The verdict is the sign test's (McNemar's for a 0/1 metric) at p < 0.05: it counts which "
    "run did better on each question. The 95 % interval is a bootstrap of the mean difference, "
    "which also weighs how much better: a few large gains can put it clear of 0 while the "
    "questions split evenly, so the two can disagree. Seconds are compared on the questions "
    "neither run answered from the response cache."
)


def _print_verdicts(paired, labels: list[str]) -> None:  # noqa: ANN001
    """Each run against the first, metric by metric: the paired tests and their verdict; as
    lines where the terminal is too narrow for the table."""
    if console.width < 110:
        console.print(f"[bold]paired, against {labels[0]} (questions both scored)[/bold]")
        for metric, i, r in paired:
            ci = f" [{r.ci[0]:+.3f}, {r.ci[1]:+.3f}]" if r.ci else ""
            mc = "" if r.mcnemar_p is None else f", McNemar p {r.mcnemar_p:.3g}"
            console.print(
                f"{metric}, {labels[i]}: {r.verdict} (n {r.n}, better/worse/tied "
                f"{r.better}/{r.worse}/{r.tied}, sign p {r.sign_p:.3g}{mc}; difference "
                f"{r.diff:+.3f}{ci})",
                markup=False,
            )
        console.print(VERDICT_NOTE, style="dim")
        return
    verdicts = Table(title=f"paired, against {labels[0]} (questions both scored)")
    for col in (
        "metric",
        "run",
        "n",
        "better/worse/tied",
        "sign p",
        "McNemar p",
        "difference [95 % CI]",
        "verdict",
        "n for 80 % power",
    ):
        verdicts.add_column(col, overflow="fold")
    for metric, i, r in paired:
        ci = f" [{r.ci[0]:+.3f}, {r.ci[1]:+.3f}]" if r.ci else ""
        needed = "-" if r.needed_n is None or r.verdict != "not significant" else f"{r.needed_n}"
        verdicts.add_row(
            metric,
            labels[i],
            str(r.n),
            f"{r.better}/{r.worse}/{r.tied}",
            f"{r.sign_p:.3g}",
            "" if r.mcnemar_p is None else f"{r.mcnemar_p:.3g}",
            f"{r.diff:+.3f}{ci}",
            r.verdict,
            needed,
        )
    console.print(verdicts)
    console.print(VERDICT_NOTE, style="dim")


def _flips_page(runs: list[str], labels: list[str], by: str, flips, out: str) -> Path:  # noqa: ANN001
    """The HTML page of the questions that flipped between two runs (and each run's own page,
    which it links to)."""
    from hopgraph.evals.evaluate import load_metrics
    from hopgraph.presentation import report

    for run in runs:  # the pages the flips link to
        report.render_html(Path(run), load_metrics(run))
    from hopgraph.evals.evaluate import LOWER_IS_BETTER
    from hopgraph.presentation import plots

    scores = [load_metrics(r)["per_question"] for r in runs]
    figures = plots.comparison(scores, labels, by, by in LOWER_IS_BETTER)
    page = Path(out or f"compare-{labels[0]}-{labels[1]}.html")
    path = report.render_flips_html([Path(r) for r in runs], labels, by, flips, page, figures)
    return path


@app.command()
def results(
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="exit 1 if docs/results/ is not what the records give; warn of headline "
            "columns whose answers are not today's code's",
        ),
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="print every study's columns: record, revision, code fingerprint, current",
        ),
    ] = False,
) -> None:
    """Write the results pages, docs/results/ (an index of every study's verdicts, then a page
    a study), from the committed result records in benchmarks/results/ of the checkout this
    runs in."""
    from hopgraph.presentation.results import pages_dir, stale, stale_headlines, studies_json, write

    try:
        folder = pages_dir()
    except FileNotFoundError as e:
        refuse(str(e))
    if as_json:
        print(json.dumps(studies_json(), indent=2))
        return
    if check:
        for line in stale_headlines():
            err.print(f"[yellow]stale headline column[/yellow] {line}")
        if wrong := stale(folder):
            err.print(
                f"{folder} is stale ({', '.join(wrong[:5])}): run `hopgraph results` and commit it"
            )
            raise typer.Exit(1)
        console.print(f"{folder} is current")
        return
    console.print(f"wrote {write()}")
