import json
import shutil
import subprocess

import pytest

from hopgraph.harness.trace import Trace
from hopgraph.presentation import report
from hopgraph.tools.replies import parse_citations, strip_citations

RECORDS = [
    {"mode": "start", "data": {"id": "q"}},
    {
        "mode": "custom",
        "ns": [],
        "data": {"event": "retrieval", "query": "q?", "ids": ["t-1"], "scores": [0.9]},
    },
    {"mode": "updates", "ns": [], "data": {"retrieve": {"contexts": []}}},
    {
        "mode": "custom",
        "ns": [],
        "data": {
            "event": "llm_call",
            "role": "generator",
            "template": "rag/answer",
            "prompt_tokens": 10,
            "completion_tokens": 4,
            "latency_s": 0.5,
        },
    },
    {"mode": "updates", "ns": [], "data": {"generate": {"answer": "x"}}},
]


def test_citation_parsing():
    assert parse_citations("A [1][3].", 5) == ([1, 3], [])
    assert parse_citations("A [1, 3] and [3].", 5) == ([1, 3], [])
    assert parse_citations("A [12] [2]", 5) == ([2], [12])
    assert strip_citations("It is Paris [1][2].") == "It is Paris."


def test_step_tree_lists_nodes_calls_and_retrievals():
    text = report.format_tree(Trace.of(RECORDS))
    assert "● retrieve" in text and "● generate" in text
    assert "llm generator [rag/answer] 10+4 tok" in text and "retrieve 'q?' -> 1 hits" in text


def test_mermaid_and_svg_of_executed_steps():
    view = report.graph_view(Trace.of(RECORDS))
    assert [n["label"] for n in view["nodes"]] == ["retrieve", "generate (1 LLM)"]
    mermaid = report.to_mermaid(view)
    assert mermaid.startswith("flowchart TD") and "s0 --> s1" in mermaid
    svg = report.to_svg(view)
    assert svg.count('class="node"') == 2 and svg.count("<line") == 1


def test_a_published_graph_view_wins_and_branches_are_drawn():
    view = {
        "nodes": [
            {"id": "q", "label": "Q", "kind": "question"},
            {"id": "r1", "label": "R1", "kind": "retrieval"},
            {"id": "r2", "label": "R2", "kind": "retrieval"},
            {"id": "a", "label": "A", "kind": "answer"},
        ],
        "edges": [["q", "r1"], ["q", "r2"], ["r1", "a"], ["r2", "a"]],
    }
    records = [*RECORDS, {"mode": "updates", "ns": [], "data": {"plan": {"graph_view": view}}}]
    assert report.graph_view(Trace.of(records)) == view
    assert report._layers(view) == {"q": 0, "r1": 1, "r2": 1, "a": 2}
    assert "classDef answer" in report.to_mermaid(view)


def _write_run(root):
    run = root / "run"
    (run / "traces").mkdir(parents=True)
    (run / "traces" / "q1.jsonl").write_text("\n".join(json.dumps(r) for r in RECORDS))
    pred = {"id": "q1", "question": "Where?", "answer": "x", "gold": ["x"], "error": None}
    (run / "predictions.jsonl").write_text(json.dumps(pred) + "\n")
    (run / "manifest.json").write_text(json.dumps({"agent": "rag", "model": "m"}))
    return run


def test_html_report_is_written(tmp_path):
    run = _write_run(tmp_path)
    path = report.render_html(run, {"overall": {"em": 1.0}, "per_question": {"q1": {"em": 1.0}}})
    page = path.read_text()
    assert "<svg" in page and "Where?" in page and "rag/answer" in page


@pytest.mark.skipif(
    shutil.which("chromium") is None, reason="chromium not installed (.ci/run installs it)"
)
def test_html_report_loads_in_headless_chromium(tmp_path):
    run = _write_run(tmp_path)
    path = report.render_html(run, {"overall": {"em": 1.0}, "per_question": {"q1": {"em": 1.0}}})
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--enable-logging=stderr",
        "--v=0",
    ]
    out = subprocess.run(
        ["chromium", *flags, "--dump-dom", path.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    dom = out.stdout
    assert 'class="graph"' in dom and dom.count('class="node"') == 2  # the drawing is in the DOM
    assert "Uncaught" not in out.stderr and "CONSOLE" not in out.stderr
    shot = tmp_path / "shot.png"
    subprocess.run(
        ["chromium", *flags, f"--screenshot={shot}", "--window-size=1000,800", path.as_uri()],
        capture_output=True,
        timeout=120,
    )
    assert shot.exists() and shot.stat().st_size > 5000


def test_the_static_page_opens_on_a_summary_line_with_rounded_metrics_and_call_costs(tmp_path):
    """The report's first screen: right / wrong, tokens, USD and seconds in one line, the
    headline metrics rounded below it; each call with its cost and a mark where the response
    cache answered it."""
    run = _write_run(tmp_path)
    cached = {**RECORDS[3]["data"], "extra": {"cached": True}}
    trace = run / "traces" / "q1.jsonl"
    after = [{**RECORDS[3], "data": cached}, {"mode": "updates", "ns": [], "data": {"end": {}}}]
    trace.write_text(trace.read_text() + "".join("\n" + json.dumps(r) for r in after))
    metrics = {
        "overall": {"em": 1.0, "f1": 0.6666667, "seconds": 412.4285714},
        "per_question": {"q1": {"em": 1.0}},
        "cost": {"prompt_tokens": 20, "usd": 0.000036, "price": {"prompt": 1.0, "completion": 2.0}},
    }
    page = report.render_html(run, metrics).read_text()
    summary = page.index("class='summary'")
    assert "1 right, 0 wrong" in page[summary:] and "$0.0000" in page[summary:]
    assert summary < page.index("em 1.000 · f1 0.667") < page.index("<h2>Questions")
    assert "412.4285714" not in page and "412.429" in page
    assert page.count("$0.00002") == 2  # 10 prompt + 4 completion tokens at 1 and 2 USD / 1M
    assert "cached: not sent" in page
