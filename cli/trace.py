"""``trace``: one question's trace as text, JSON, Mermaid or a static HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hopgraph.cli.app import (
    OldOut,
    app,
    console,
    file_flag,
    refuse,
    run_folder,
    run_labels,
)


@app.command()
def trace(
    args: Annotated[
        list[str],
        typer.Argument(help="RUN [QID], or RUN_A RUN_B QID: one question's two executions"),
    ],
    fmt: Annotated[str, typer.Option("--format", help="text | mermaid | html")] = "text",
    html: Annotated[
        str, typer.Option("--html", help="the page a two-run diff with --format html writes")
    ] = "",
    out: OldOut = "",
    calls: Annotated[
        bool, typer.Option("--calls", help="each LLM call's prompt and reply under its node")
    ] = False,
) -> None:
    """Show a run's traces (a step tree, Mermaid, or the HTML report of the whole run), or
    put one question's executions in two runs side by side with their first divergence."""
    from hopgraph.harness.run_folder import RunFolder, has_trace, trace_ids, trace_path
    from hopgraph.harness.trace import read_trace
    from hopgraph.presentation import report

    if len(args) == 3:
        (run_a, run_b), qid = [run_folder(a) for a in args[:2]], args[2]
        path_a, path_b = trace_path(run_a, qid), trace_path(run_b, qid)
        for path in (path_a, path_b):
            if not has_trace(path):
                refuse(f"no trace for question {qid!r} at {path}")
        pair = read_trace(path_a), read_trace(path_b)

        def prompts(run: Path) -> dict[str, str]:
            m = RunFolder(run).manifest()
            return m["prompts"] if m and "prompts" in m else {}

        hashes = prompts(run_a), prompts(run_b)
        label_a, label_b = run_labels([str(run_a), str(run_b)])
        labels = label_a, label_b
        if fmt == "html":
            page = Path(file_flag("--html", html, out) or f"trace-{qid}.html")
            report.render_trace_diff_html(pair, labels, qid, page, hashes)
            console.print(f"trace diff: {page}")
            return
        rows, first = report.trace_diff(*pair, hashes)
        console.print(report.format_trace_diff(rows, first, labels, hashes), markup=False)
        console.print(report.format_call_diff(report.call_diff(*pair), hashes), markup=False)
        return
    if len(args) > 2:
        refuse("trace takes RUN [QID], or RUN_A RUN_B QID")
    folder = run_folder(args[0])
    only = args[1] if len(args) == 2 else None
    if fmt == "html":
        from hopgraph.evals.evaluate import load_metrics

        path = report.render_html(folder, load_metrics(folder))
        console.print(f"report: {path}")
        return
    traces = trace_ids(folder)
    if only is not None:
        traces = [trace_path(folder, only)]
        if not has_trace(traces[0]):
            refuse(f"no trace for question {only!r} in {folder}")
    if fmt not in ("text", "mermaid"):
        refuse(f"unknown --format {fmt!r}: text, mermaid or html")
    for path in traces:
        trace = read_trace(path)
        if fmt != "mermaid" and only is not None:
            console.print(_question_head(folder, only), markup=False)
        elif fmt != "mermaid":  # Mermaid's source stays pasteable: the diagram alone
            console.print(f"[bold]{path.name.removesuffix('.jsonl')}[/bold]")
        if fmt == "mermaid":
            console.print(report.to_mermaid(report.graph_view(trace)), markup=False)
        else:
            console.print(report.format_tree(trace, calls=calls), markup=False)


def _question_head(folder: Path, qid: str) -> str:
    """A question's trace heads with what it asked, answered, the gold and the verdict (the
    gold where the record's question file is here)."""
    from hopgraph.evals.evaluate import score_prediction
    from hopgraph.evals.run_record import answered_right
    from hopgraph.harness.run_folder import RunError, read_predictions, scored_predictions

    try:
        pred, note = scored_predictions(folder).get(qid, {}), ""
    except RunError as e:
        pred, note = read_predictions(folder / "predictions.jsonl").get(qid, {}), str(e)
    if not pred:
        return f"{qid}: not answered yet (no prediction line)"
    gold = pred.get("gold") or []
    scores = score_prediction(pred) if gold else {}
    verdict = "unscored" if not gold else "right" if answered_right(scores) else "wrong"
    verdict = f"failed: {pred['error']}" if pred.get("error") else verdict
    lines = [f"{qid}: {verdict}"]
    lines += [f"  question: {pred['question']}"] if pred.get("question") else []
    lines.append(f"  answer:   {pred.get('answer', '')!r}")
    lines.append(f"  gold:     {' | '.join(gold)!r}" if gold else f"  gold:     ({note or 'none'})")
    if "f1" in scores:
        lines[-1] += f"  (EM {scores.get('em', 0):g}, F1 {scores['f1']:.3f})"
    return "\n".join(lines)
