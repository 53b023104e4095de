"""Reading traces back: a step tree, Mermaid, and a self-contained HTML report with drawings.

A method's drawing of its own reasoning (MMAPG's planning graph, QDRAG's decomposition tree) is
drawn from the question's final state by the view ``presentation.views`` registers for its graph;
otherwise the drawing is the executed steps.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hopgraph.evals.run_record import answered_right, cited_pages
from hopgraph.harness.cost import Price
from hopgraph.harness.trace import Call, Step, Trace
from hopgraph.models.events import LLMRequest
from hopgraph.presentation.views import view_of
from hopgraph.wording import counted

KIND_COLOURS = {
    "question": "#dbeafe",
    "retrieval": "#dcfce7",
    "answer": "#fde68a",
    "stop": "#e5e7eb",
    "step": "#ede9fe",
    "error": "#fecaca",
}


def graph_view(trace: Trace) -> dict[str, Any]:
    """The method's own drawing of the question's final state (``presentation.views``), else the
    chain of executed steps. (Traces written before views moved out of the graphs carry the
    drawing in a node's update, which is used as it is.)"""
    view = None
    for rec in trace.records:
        data = rec.get("data")
        if rec.get("mode") == "values" and isinstance(data, dict):
            view = view_of(rec.get("graph", ""), data) or view
        elif rec.get("mode") == "updates" and isinstance(data, dict):
            for update in data.values():
                if isinstance(update, dict) and isinstance(update.get("graph_view"), dict):
                    view = update["graph_view"]
    if view is not None:
        return view
    nodes, edges = [], []
    for i, step in enumerate(trace.steps):
        calls = len(step.calls)
        label = "/".join([*step.ns, step.node]) + (f" ({calls} LLM)" if calls else "")
        nodes.append(
            {"id": f"s{i}", "label": label, "kind": "error" if step.node == "error" else "step"}
        )
        if i:
            edges.append([f"s{i - 1}", f"s{i}"])
    return {"nodes": nodes, "edges": edges}


def format_tree(trace: Trace, calls: bool = False) -> str:
    """A readable step tree: nodes, the LLM calls and retrievals inside them; ``calls``: each
    call's messages and reply under it (``call_lines``)."""
    lines = [f"damaged trace: {d}" for d in trace.damaged]
    for step in trace.steps:
        indent = "  " * len(step.ns)
        where = "/".join([*step.ns, step.node])
        lines.append(f"{indent}● {where}" + (f"  -> {', '.join(step.keys)}" if step.keys else ""))
        for e in step.events:
            lines.append(event_line(e, indent))
            if calls and e.get("event") == "llm_call":
                lines += call_lines(e, indent + "      ")
    return "\n".join(lines)


def message_text(message: dict[str, Any]) -> str:
    """A traced message's text; an image as its reference."""
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(
            f"[image {p.get('image_url')}]" if p.get("type") == "image_url" else p.get("text", "")
            for p in content
        )
    return str(content or "")


def call_lines(e: dict[str, Any], indent: str) -> list[str]:
    """An LLM call's content, as `hopgraph trace --calls` shows it: each message, the reply,
    what was read from it, and the settings sent."""
    if "messages" not in e:
        return [f"{indent}(this trace was written before calls kept their content)"]
    out = []
    for m in e["messages"]:
        out.append(f"{indent}┌ {m.get('role', '?')}")
        out += [f"{indent}│ {line}" for line in message_text(m).splitlines() or [""]]
    out.append(f"{indent}┌ reply")
    out += [f"{indent}│ {line}" for line in (e.get("reply") or "(none)").splitlines() or [""]]
    if e.get("parsed") is not None:
        out.append(f"{indent}└ read: {json.dumps(e['parsed'], ensure_ascii=False)[:400]}")
    if e.get("parse_error"):
        out.append(f"{indent}└ did not validate: {e['parse_error']}")
    sampling = {k: v for k, v in (e.get("sampling") or {}).items() if k != "response_format"}
    out.append(f"{indent}  sent with {json.dumps(sampling, default=str)}")
    return out


def _count_by_template(rows: list) -> str:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.template] = counts.get(r.template, 0) + 1
    return (": " + ", ".join(f"{t} ({n})" for t, n in counts.items())) if counts else ""


@dataclass
class CallDiff:
    """The n-th LLM call of two executions of one question: whether its prompt and its reply
    differ."""

    a: Call | None
    b: Call | None
    prompt_changed: bool
    reply_changed: bool

    @property
    def template(self) -> str:
        call = self.a or self.b
        return call.template if call else ""


def call_diff(a: Trace, b: Trace) -> list[CallDiff]:
    """Two executions' LLM calls side by side in the order they were made."""
    ca, cb = a.calls, b.calls
    out = []
    for i in range(max(len(ca), len(cb))):
        x, y = (ca[i] if i < len(ca) else None), (cb[i] if i < len(cb) else None)
        out.append(
            CallDiff(
                x,
                y,
                prompt_changed=x is None or y is None or x.messages != y.messages,
                reply_changed=x is None or y is None or x.reply != y.reply,
            )
        )
    return out


def format_call_diff(rows: list[CallDiff], hashes: tuple[dict, dict] = ({}, {})) -> str:
    """Which calls' prompts changed, by template: those whose template was edited (the runs'
    ``hashes`` differ) apart from those whose inputs changed (an earlier reply, other
    evidence); then the first call whose reply diverges, with both replies."""
    if rows and all("messages" not in c.event for r in rows if (c := r.a or r.b)):
        return "calls: these traces keep no call content (written before it was kept)"
    edited = {
        t for t in hashes[0].keys() | hashes[1].keys() if hashes[0].get(t) != hashes[1].get(t)
    }
    changed = [r for r in rows if r.prompt_changed]
    swapped = [r for r in changed if r.template in edited]
    fed = [r for r in changed if r.template not in edited]
    lines = [
        f"calls: {len(rows)}; prompts changed in {len(swapped)} by an edited template"
        + _count_by_template(swapped)
        + f"; in {len(fed)} by their inputs (earlier replies, other evidence)"
        + _count_by_template(fed)
    ]
    first = next((i for i, r in enumerate(rows) if r.reply_changed), None)
    if first is None:
        lines.append("every reply is the same")
        return "\n".join(lines)
    r = rows[first]
    lines.append(
        f"first reply that differs: call {first} ({r.template})"
        + (", whose prompt changed" if r.prompt_changed else ", same prompt")
    )
    for label, call in (("a", r.a), ("b", r.b)):
        reply = "(no such call)" if call is None else (call.reply or "(none)")
        lines.append(f"  {label}: {_brief(reply, 300)}")
    return "\n".join(lines)


def event_line(e: dict[str, Any], indent: str = "") -> str:
    """One custom trace event as a line: an LLM call, a retrieval, an error or any other."""
    kind = e.get("event")
    if kind == "llm_call":
        return (
            f"{indent}    llm {e.get('role')} [{e.get('template')}] "
            f"{e.get('prompt_tokens')}+{e.get('completion_tokens')} tok "
            f"{e.get('latency_s', 0):.2f}s" + (f" ERROR {e['error']}" if e.get("error") else "")
        )
    if kind == "retrieval":
        ids = e.get("ids", [])
        return f"{indent}    retrieve {e.get('query', '')!r} -> {len(ids)} hits {ids[:3]}"
    if "error" in e:
        return f"{indent}    {e['error']}"
    return f"{indent}    {kind or 'event'} {json.dumps(e, default=str)[:160]}"


def live_line(ns: list[str], mode: str, data: Any) -> str | None:
    """A record of a question's stream as it happens, for ``hopgraph ask``: a node starting
    (``tasks``), a node done with what it wrote, or an event inside it; None to show nothing."""
    indent = "  " * len(ns)
    if mode == "custom" and isinstance(data, dict):
        return None if data.get("event") == LLMRequest.event else event_line(data, indent)
    if mode == "tasks" and isinstance(data, dict) and "input" in data:
        return f"{indent}▶ {'/'.join([*ns, data.get('name', '?')])}"
    if mode == "updates" and isinstance(data, dict):
        lines = []
        for node, update in data.items():
            shown = ", ".join(
                f"{k}={_brief(v)}" for k, v in (update or {}).items() if k != "graph_view"
            )
            lines.append(f"{indent}● {'/'.join([*ns, node])}" + (f"  {shown}" if shown else ""))
        return "\n".join(lines) or None
    return None


def _brief(value: Any, width: int = 70) -> str:
    if isinstance(value, list):
        items = [_brief(v, 30) for v in value[:3]]
        return f"[{', '.join(items)}{', …' if len(value) > 3 else ''}] ({len(value)})"
    if isinstance(value, dict):
        if "id" in value:  # a context or a node: its id says which
            return str(value["id"])
        return "{" + ", ".join(list(value)[:4]) + (", …}" if len(value) > 4 else "}")
    text = str(value).replace("\n", " ")
    return repr(text if len(text) <= width else text[: width - 1] + "…")


def to_mermaid(view: dict[str, Any]) -> str:
    lines = ["flowchart TD"]
    for node in view["nodes"]:
        label = str(node.get("label", node["id"])).replace('"', "'")[:80]
        lines.append(f'    {node["id"]}["{label}"]:::{node.get("kind", "step")}')
    for src, dst in view["edges"]:
        lines.append(f"    {src} --> {dst}")
    for kind, colour in KIND_COLOURS.items():
        lines.append(f"    classDef {kind} fill:{colour}")
    return "\n".join(lines)


def _layers(view: dict[str, Any]) -> dict[str, int]:
    """Longest-path depth of each node (roots at 0); cycles are cut."""
    parents: dict[str, list[str]] = {n["id"]: [] for n in view["nodes"]}
    for src, dst in view["edges"]:
        if src in parents and dst in parents:
            parents[dst].append(src)
    depth: dict[str, int] = {}

    def visit(node: str, seen: frozenset) -> int:
        if node in depth:
            return depth[node]
        ps = [p for p in parents[node] if p not in seen]
        depth[node] = 1 + max((visit(p, seen | {node}) for p in ps), default=-1)
        return depth[node]

    for node in parents:
        visit(node, frozenset())
    return depth


def to_svg(view: dict[str, Any], width: int = 190, height: int = 46, gap: int = 34) -> str:
    """A layered drawing as inline SVG (no scripts, no network)."""
    depth = _layers(view)
    rows: dict[int, list[dict[str, Any]]] = {}
    for node in view["nodes"]:
        rows.setdefault(depth[node["id"]], []).append(node)
    pos = {}
    columns = max((len(r) for r in rows.values()), default=1)
    for level, row in rows.items():
        offset = (columns - len(row)) * (width + gap) / 2
        for i, node in enumerate(row):
            pos[node["id"]] = (gap + offset + i * (width + gap), gap + level * (height + gap))
    total_w = int(gap + columns * (width + gap))
    total_h = int(gap + (max(rows, default=0) + 1) * (height + gap))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" width="{total_w}" '
        f'height="{total_h}" viewBox="0 0 {total_w} {total_h}">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
    ]
    for src, dst in view["edges"]:
        if src in pos and dst in pos:
            (x1, y1), (x2, y2) = pos[src], pos[dst]
            parts.append(
                f'<line x1="{x1 + width / 2}" y1="{y1 + height}" x2="{x2 + width / 2}" y2="{y2}" '
                'stroke="#555" stroke-width="1.4" marker-end="url(#arrow)"/>'
            )
    for node in view["nodes"]:
        x, y = pos[node["id"]]
        label = str(node.get("label", node["id"]))
        short = label if len(label) <= 30 else label[:29] + "…"
        colour = KIND_COLOURS.get(node.get("kind", "step"), KIND_COLOURS["step"])
        parts.append(
            f'<g class="node" data-id="{html.escape(node["id"])}">'
            f"<title>{html.escape(label)}</title>"
            f'<rect x="{x}" y="{y}" width="{width}" height="{height}" rx="8" fill="{colour}" '
            f'stroke="#334155"/><text x="{x + width / 2}" y="{y + height / 2 + 4}" '
            'text-anchor="middle" font-size="12" font-family="sans-serif">'
            f"{html.escape(short)}</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)


_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem;color:#111;max-width:1200px}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ccc;padding:.25rem .5rem;
font-size:.9rem;text-align:left}details{border:1px solid #ddd;border-radius:8px;margin:.6rem 0;
padding:.4rem .8rem}summary{cursor:pointer;font-weight:600}.ok{color:#15803d}.bad{color:#b91c1c}
.graph{max-width:100%;height:auto;display:block;margin:.5rem 0}g.node{cursor:pointer}
code{background:#f3f4f6;padding:0 .2rem}.dim{color:#6b7280}
.steps>li{margin:.4rem 0}.call,.retrieval,.flag,.event{margin:.3rem 0 .3rem 1rem}
details.call{border-color:#c7d2fe;background:#f8faff}details.call.error{border-color:#fca5a5}
.flag{background:#fef3c7;border-left:4px solid #d97706;padding:.2rem .5rem}
.msg pre,.hit pre{white-space:pre-wrap;background:#f9fafb;border:1px solid #eee;padding:.4rem;
margin:.2rem 0;max-height:24rem;overflow:auto;font-size:.85rem}.msg.reply pre{background:#ecfdf5}
.hit details{border:none;margin:0;padding:0}.hit summary{font-weight:400}
.badge{font-size:.75rem;border-radius:4px;padding:0 .3rem;margin-right:.3rem;color:#fff}
.badge.kept{background:#2563eb}.badge.cited{background:#15803d}
.node-detail{border:2px solid #6366f1;border-radius:8px;padding:.4rem .8rem;margin:.4rem 0}
figure.page{display:inline-block;margin:.5rem;vertical-align:top;max-width:45%}
.sheet{position:relative;border:1px solid #ccc}.sheet img{display:block;width:100%}
.sheet svg{position:absolute;inset:0;width:100%;height:100%}
rect.quoted{fill:rgba(250,204,21,.45);stroke:#ca8a04;stroke-width:1}
.summary{font-size:1.15rem}.metrics{color:#374151}.cached{background:#e0f2fe;color:#075985;
border-radius:3px;padding:0 .3rem}
"""


def _drawing(view: dict[str, Any], trace: Trace | None = None) -> str:
    """The SVG, then, where the graph's nodes carry ``detail`` (MMAPG: instruction, content,
    parents, calls), a table of them (the boxes are too small to read those in) and one panel
    per node, shown when its box is clicked: its instruction, parents, hits and content."""
    rows = [
        f"<tr><td>{html.escape(n['id'])}</td><td>{html.escape(n.get('kind', ''))}</td>"
        + "".join(f"<td>{html.escape(str(n['detail'].get(k, '')))}</td>" for k in DETAIL)
        + "</tr>"
        for n in view["nodes"]
        if isinstance(n.get("detail"), dict)
    ]
    if not rows:
        return to_svg(view)
    hits = _node_hits(trace)
    panels = "".join(
        f"<div class='node-detail' data-for='{_esc(n['id'])}' hidden><b>{_esc(n['id'])}</b> "
        f"({_esc(n.get('kind', ''))})"
        + "".join(f"<p><b>{k}:</b> {_esc(n['detail'].get(k, ''))}</p>" for k in DETAIL)
        + (
            "<p><b>hits:</b></p><ul>"
            + "".join(
                f"<li><code>{_esc(h['id'])}</code> {_esc(h.get('title', ''))}: "
                f"{_esc(str(h.get('text', ''))[:300])}</li>"
                for h in hits.get(n["id"], [])
            )
            + "</ul>"
            if hits.get(n["id"])
            else ""
        )
        + "</div>"
        for n in view["nodes"]
        if isinstance(n.get("detail"), dict)
    )
    head = "".join(f"<th>{c}</th>" for c in ("node", "type", *DETAIL))
    return f"{to_svg(view)}{panels}<table><tr>{head}</tr>{''.join(rows)}</table>"


def _node_hits(trace: Trace | None) -> dict[str, list[dict[str, Any]]]:
    """A planning graph's nodes' hits, from the final state (MMAPG's ``nodes``)."""
    state = trace.final_state if trace else {}
    return {n["id"]: n.get("hits") or [] for n in state.get("nodes") or [] if "id" in n}


_SCRIPT = """
function showNode(root, id){root.querySelectorAll('.node-detail').forEach(function(p){
p.hidden = p.dataset.for !== id;});}
document.querySelectorAll('details.question').forEach(function(q){
q.querySelectorAll('g.node').forEach(function(g){g.addEventListener('click', function(){
showNode(q, g.dataset.id);});});});
var m = location.hash.match(/^#(.+):(.+)$/);
if (m) {var q = document.getElementById(decodeURIComponent(m[1]));
if (q) {q.open = true; showNode(q, decodeURIComponent(m[2]));}}
"""
"""Clicking a planning-graph node shows its panel; ``report.html#QID:NODE`` opens one."""


DETAIL = ("parents", "instruction", "content", "calls", "tokens")


def _calls_table(trace: Trace, price: Price | None = None) -> str:
    """Every call of the question: node, role, template, tokens, seconds, its cost at the
    run's price, and a mark where the response cache answered it (nothing was sent)."""
    rows = []
    for c in trace.calls:
        tokens = (c.prompt_tokens, c.completion_tokens)
        rows.append(
            f"<tr><td>{html.escape(c.node)}</td><td>{html.escape(c.role)}</td>"
            f"<td>{html.escape(c.template)}</td><td>{tokens[0]}</td>"
            f"<td>{tokens[1]}</td><td>{c.seconds:.2f}</td>"
            + (f"<td>${price.usd(*tokens):.5f}</td>" if price else "")
            + f"<td>{'cached: not sent' if c.cached else ''}</td></tr>"
        )
    if not rows:
        return "<p>No LLM calls.</p>"
    names = (
        "node",
        "role",
        "template",
        "prompt tok",
        "completion tok",
        "s",
        *(("USD",) if price else ()),
        "cache",
    )
    head = "".join(f"<th>{c}</th>" for c in names)
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _esc(value: Any) -> str:
    return html.escape(str(value))


def _hit_html(i: str, score: Any, known: dict, kept: set, cited: set) -> str:
    """One retrieved item: rank line (score, id, title, source, page), its text collapsed;
    marked kept (in the contexts the answer was written from) and cited."""
    e = known.get(i, {})
    marks = [m for m, on in (("kept", i in kept), ("cited", i in cited)) if on]
    where = " · ".join(
        str(x)
        for x in (e.get("title"), e.get("source"), f"p.{e['page']}" if e.get("page") else "")
        if x
    )
    badge = "".join(f"<span class='badge {m}'>{m}</span>" for m in marks)
    text = e.get("text")
    body = f"<pre>{_esc(text)}</pre>" if text else "<p class='dim'>(text not in the trace)</p>"
    return (
        f"<li class='hit {' '.join(marks)}'><details><summary>{badge}"
        f"<code>{_esc(i)}</code> {score} <span class='dim'>{_esc(where)}</span></summary>"
        f"{body}</details></li>"
    )


def _call_html(e: dict[str, Any]) -> str:
    """An LLM call, collapsed: role, template, tokens, latency; open: each message, the reply,
    what was read from it, the settings."""
    flags = (
        " error" if e.get("error") else (" repair" if (e.get("extra") or {}).get("repair") else "")
    )
    head = (
        f"llm <b>{_esc(e.get('role'))}</b> [{_esc(e.get('template'))}] "
        f"{e.get('prompt_tokens', 0)}+{e.get('completion_tokens', 0)} tok "
        f"{e.get('latency_s', 0):.2f}s"
        + (
            " · <span class='cached'>cached: not sent</span>"
            if (e.get("extra") or {}).get("cached")
            else ""
        )
        + (" · repair request" if flags == " repair" else "")
        + (f" · <b>error</b> {_esc(e['error'])}" if e.get("error") else "")
    )
    if "messages" not in e:
        return f"<div class='call{flags}'>{head}</div>"
    body = "".join(
        f"<div class='msg {_esc(m.get('role', ''))}'><b>{_esc(m.get('role', ''))}</b>"
        f"<pre>{_esc(message_text(m))}</pre></div>"
        for m in e["messages"]
    )
    body += (
        f"<div class='msg reply'><b>reply</b><pre>{_esc(e.get('reply') or '(none)')}</pre></div>"
    )
    if e.get("parsed") is not None:
        body += (
            f"<p><b>read:</b> <code>{_esc(json.dumps(e['parsed'], ensure_ascii=False))}</code></p>"
        )
    if e.get("parse_error"):
        body += f"<p class='bad'><b>did not validate:</b> {_esc(e['parse_error'])}</p>"
    sampling = {k: v for k, v in (e.get("sampling") or {}).items() if k != "response_format"}
    body += f"<p class='dim'>sent with {_esc(json.dumps(sampling, default=str))}</p>"
    return f"<details class='call{flags}' open><summary>{head}</summary>{body}</details>"


def _event_html(e: dict[str, Any], known: dict, kept: set, cited: set) -> str:
    """One event inside a step: a call, a retrieval with its hits, a flag, or its kind."""
    kind = e.get("event")
    if kind == "llm_call":
        return _call_html(e)
    if kind == "retrieval":
        ids = e.get("ids", [])
        hits = "".join(
            _hit_html(i, score, known, kept, cited)
            for i, score in zip(ids, e.get("scores", []), strict=False)
        )
        return (
            f"<div class='retrieval'>retrieve <q>{_esc(e.get('query', ''))}</q> "
            f"({_esc(e.get('role', ''))}, {len(ids)} hits)<ol>{hits}</ol></div>"
        )
    if kind in ("fallback", "empty_reply", "repair"):
        shown = json.dumps({k: v for k, v in e.items() if k != "event"}, default=str)[:400]
        return f"<div class='flag'>{_esc(kind)}: {_esc(shown)}</div>"
    if "error" in e:
        return f"<div class='flag bad'>error: {_esc(e['error'])}</div>"
    return f"<div class='event dim'>{_esc(kind or 'event')}</div>"


def _steps_html(trace: Trace, pred: dict[str, Any]) -> str:
    """Each executed node in order with what happened inside it: retrievals with their hits
    (kept and cited marked), LLM calls with prompt and reply, fallbacks and empty replies
    flagged, and the state keys it wrote."""
    known = trace.passages
    kept, cited = set(pred.get("contexts_ids") or []), set(pred.get("citations") or [])
    out = ["<ol class='steps'>"]
    for step in trace.steps:
        where = "/".join([*step.ns, step.node])
        wrote = f" <span class='dim'>→ {_esc(', '.join(step.keys))}</span>" if step.keys else ""
        inner = [_event_html(e, known, kept, cited) for e in step.events]
        out.append(f"<li class='step'><b>{_esc(where)}</b>{wrote}{''.join(inner)}</li>")
    out.append("</ol>")
    return "".join(out)


def _cited_pages_html(trace: Trace, pred: dict[str, Any]) -> str:
    """Each cited PDF page, rendered, with the region the answer quotes highlighted (an SVG in
    PDF points laid over the page image)."""
    figures = []
    for cid, (e, boxes) in cited_pages(trace, pred).items():
        w, h = e["provenance"]["page_size"]
        rects = "".join(
            f"<rect class='quoted' x='{x0}' y='{y0}' width='{x1 - x0}' height='{y1 - y0}'/>"
            for x0, y0, x1, y1 in boxes
        )
        caption = f"{_esc(e.get('source', ''))} p.{e.get('page')}: " + (
            "the highlighted lines are what the answer quotes"
            if boxes
            else "cited; the answer quotes none of its text"
        )
        figures.append(
            f"<figure class='page' data-id='{_esc(cid)}'><div class='sheet'>"
            f"<img src='{Path(e['path']).resolve().as_uri()}' alt='{_esc(e.get('title', ''))}'>"
            f"<svg viewBox='0 0 {w} {h}' preserveAspectRatio='none'>{rects}</svg></div>"
            f"<figcaption>{caption}</figcaption></figure>"
        )
    return f"<h3>Cited pages</h3>{''.join(figures)}" if figures else ""


SHOWN_SCORES = ("em", "f1", "keyword_em", "mmlb_acc", "recall@5")
"""A question's scores shown first (the report's lines, the viewer's columns)."""


def judged(scores: dict[str, float]) -> bool:
    """Whether a question has a right-or-wrong score: exact match or MMLongBench-Doc's accuracy."""
    return "em" in scores or "mmlb_acc" in scores


def _cost_line(pred: dict[str, Any], score: dict[str, float]) -> str:
    """A question's calls and tokens, USD where the run was scored with a price, and whether
    its token cap stopped it."""
    text = (
        f"{pred.get('llm_calls', 0)} calls, {pred.get('prompt_tokens', 0)} + "
        f"{pred.get('completion_tokens', 0)} tokens"
    )
    text += f", ${score['usd']:.5f}" if "usd" in score else ""
    return text + (" (stopped by max_question_tokens)" if pred.get("budget_stops") else "")


def _price_of(metrics: dict[str, Any]) -> Price | None:
    """The price the run was scored at (``eval --price``), if any."""
    price = (metrics.get("cost") or {}).get("price")
    return Price(price["prompt"], price["completion"]) if isinstance(price, dict) else None


def _number(value: Any) -> str:
    return f"{value:,.3f}".rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


def _first_screen(preds: dict[str, dict[str, Any]], metrics: dict[str, Any]) -> str:
    """A summary line (right / wrong, tokens, USD, seconds), the headline metrics rounded
    below it, and every metric folded away."""
    per_q = metrics.get("per_question", {})
    scored = [s for s in per_q.values() if judged(s)]
    right = sum(answered_right(s) for s in scored)
    failed = sum(bool(p.get("error")) for p in preds.values())
    tokens = sum(
        int(p.get("prompt_tokens", 0)) + int(p.get("completion_tokens", 0)) for p in preds.values()
    )
    usd = (metrics.get("cost") or {}).get("usd")
    line = (
        (f"{right} right, {len(scored) - right} wrong" if scored else "not scored")
        + (f", {failed} failed" if failed else "")
        + f" · {tokens:,} tokens"
        + (f" · ${usd:.4f}" if usd is not None else "")
        + f" · {sum(float(p.get('seconds', 0)) for p in preds.values()):,.1f} s"
    )
    overall = metrics.get("overall") or {}
    shown = " · ".join(f"{k} {overall[k]:.3f}" for k in SHOWN_SCORES if k in overall)
    cells = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(_number(v))}</td></tr>"
        for k, v in {**overall, **(metrics.get("cost") or {})}.items()
        if k != "price" and ("@" not in k or k.endswith("@5"))
    )
    return (
        f"<p class='summary'>{html.escape(line)}</p>"
        + (f"<p class='metrics'>{html.escape(shown)}</p>" if shown else "")
        + (
            f"<details><summary>every metric</summary><table>{cells}</table></details>"
            if cells
            else ""
        )
    )


def render_html(run_dir: str | Path, metrics: dict[str, Any] | None = None) -> Path:
    """``run_dir/report.html``: headline metrics, then per question its answer, gold, score,
    drawing and LLM calls."""
    from hopgraph.harness.run_folder import RunFolder, scored_predictions
    from hopgraph.harness.trace import read_question_trace

    run_dir = Path(run_dir)
    preds = scored_predictions(run_dir)
    manifest: Mapping[str, Any] = RunFolder(run_dir).manifest() or {}
    per_q = (metrics or {}).get("per_question", {})
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>hopgraph run {html.escape(run_dir.name)}"
        f"</title><style>{_CSS}</style></head><body>",
        f"<h1>Run <code>{html.escape(run_dir.name)}</code></h1>",
        f"<p>agent <b>{html.escape(str(manifest.get('agent', '?')))}</b> · model "
        f"<b>{html.escape(str(manifest.get('model', '?')))}</b> · "
        f"{counted(len(preds), 'question')}</p>",
    ]
    parts.append(_first_screen(preds, metrics or {}))
    price = _price_of(metrics or {})
    parts.append("<h2>Questions</h2>")
    for n, (qid, pred) in enumerate(preds.items()):
        trace = read_question_trace(run_dir, qid)
        score = per_q.get(qid, {})
        scored = " · ".join(f"{k} {v:.3f}" for k, v in score.items() if k in SHOWN_SCORES)
        good = answered_right(score)
        status = "bad" if pred.get("error") else ("ok" if good else "")
        parts.append(
            f"<details class='question' id='{html.escape(qid)}'{' open' if n == 0 else ''}>"
            f"<summary class='{status}'>"
            f"{html.escape(qid)}: {html.escape(pred.get('question', ''))}</summary>"
            f"<p><b>Answer:</b> {html.escape(str(pred.get('answer', '')))}<br>"
            f"<b>Gold:</b> {html.escape(' | '.join(map(str, pred.get('gold', []))))}<br>"
            f"<b>Score:</b> {html.escape(scored or '–')}<br>"
            f"<b>Cost:</b> {html.escape(_cost_line(pred, score))}"
            + (
                f"<br><b class='bad'>Error:</b> {html.escape(pred['error'])}"
                if pred.get("error")
                else ""
            )
            + f"</p>{_drawing(graph_view(trace), trace)}<h3>Steps</h3>"
            + f"{_steps_html(trace, pred)}{_cited_pages_html(trace, pred)}"
            + f"<h3>LLM calls</h3>{_calls_table(trace, price)}</details>"
        )
    parts.append(f"<script>{_SCRIPT}</script></body></html>")
    out = run_dir / "report.html"
    out.write_text("".join(parts), encoding="utf-8")
    return out


def render_flips_html(
    runs: list[Path],
    labels: list[str],
    metric: str,
    flips: dict[str, list[Any]],
    out: Path,
    figures: Sequence[str] = (),
) -> Path:
    """One page listing the questions whose ``metric`` flipped between two runs (``flips``
    from ``evaluate.flipped``), each linking to its two executions in the runs' reports."""
    base = out.resolve().parent

    def link(run: Path, qid: str, label: str) -> str:
        target = Path(os.path.relpath((run / "report.html").resolve(), base)).as_posix()
        return f"<a href='{html.escape(target)}#{html.escape(qid)}'>{html.escape(label)}</a>"

    a, b = labels
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>",
        html.escape(f"{a} vs {b}: {metric} flips"),
        f"</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(a)} → {html.escape(b)}: questions whose "
        f"{html.escape(metric)} flipped</h1>",
        *(f"<div class='plot'>{svg}</div>" for svg in figures),
    ]
    for key, title in (("lost", "right → wrong"), ("gained", "wrong → right")):
        rows = "".join(
            f"<tr><td>{html.escape(f.id)}</td><td>{html.escape(' | '.join(f.gold))}</td>"
            f"<td>{html.escape(str(f.answers[0]))}</td><td>{html.escape(str(f.answers[1]))}</td>"
            f"<td>{f.calls[0]:g} / {f.calls[1]:g}</td>"
            f"<td>{f.seconds[0]:.1f} / {f.seconds[1]:.1f}</td>"
            f"<td>{link(runs[0], f.id, a)} · {link(runs[1], f.id, b)}</td></tr>"
            for f in flips[key]
        )
        parts.append(
            f"<h2 id='{key}'>{title} ({len(flips[key])})</h2><table><tr><th>question</th>"
            f"<th>gold</th><th>{html.escape(a)}</th><th>{html.escape(b)}</th><th>calls</th>"
            f"<th>seconds</th><th>traces</th></tr>{rows}</table>"
        )
    parts.append("</body></html>")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(parts), encoding="utf-8")
    return out


@dataclass
class StepDiff:
    """One position of two executions of a question, side by side."""

    a: Step | None
    b: Step | None
    differs: str
    """"" where both did the same; else what differs: the node, the prompt it used (template or
    its hash), the retrieved ids, or what it wrote (the keys named)."""


def step_templates(step: Step) -> list[str]:
    """The templates of a step's LLM calls, in order."""
    return [str(e.get("template", "")) for e in step.calls]


def step_retrieved(step: Step) -> list[list[str]]:
    """The ids each of a step's searches returned, in order."""
    return [e.get("ids", []) for e in step.events if e.get("event") == "retrieval"]


def _written(step: Step) -> dict[str, str]:
    return {
        k: json.dumps(v, sort_keys=True, default=str)
        for k, v in step.update.items()
        if k != "graph_view"
    }


def _difference(a: Step, b: Step, hashes: tuple[dict, dict]) -> str:
    if "/".join([*a.ns, a.node]) != "/".join([*b.ns, b.node]):
        return "another node"
    if step_templates(a) != step_templates(b):
        return "other prompts"
    changed = [t for t in dict.fromkeys(step_templates(a)) if hashes[0].get(t) != hashes[1].get(t)]
    if changed:
        return f"edited template {', '.join(changed)}"
    if step_retrieved(a) != step_retrieved(b):
        return "other retrieved ids"
    wa, wb = _written(a), _written(b)
    keys = sorted(k for k in wa.keys() | wb.keys() if wa.get(k) != wb.get(k))
    return f"wrote another {', '.join(keys)}" if keys else ""


def trace_diff(
    a: Trace, b: Trace, hashes: tuple[dict, dict] = ({}, {})
) -> tuple[list[StepDiff], int | None]:
    """Two executions of one question aligned step by step, and the index of the first step
    where they diverge (None where they never do). ``hashes``: each run's template sha256s
    (its manifest's ``prompts``), so a node that read an edited template is marked too."""
    sa, sb = a.steps, b.steps
    rows = []
    for i in range(max(len(sa), len(sb))):
        x, y = (sa[i] if i < len(sa) else None), (sb[i] if i < len(sb) else None)
        why = "only in one run" if x is None or y is None else _difference(x, y, hashes)
        rows.append(StepDiff(x, y, why))
    first = next((i for i, r in enumerate(rows) if r.differs), None)
    return rows, first


def _step_cell(step: Step | None, hashes: dict) -> str:
    if step is None:
        return ""
    used = ", ".join(
        f"{t} {hashes.get(t, '')[:8]}".strip() for t in dict.fromkeys(step_templates(step))
    )
    hits = sum(len(ids) for ids in step_retrieved(step))
    return (
        "/".join([*step.ns, step.node])
        + (f" [{used}]" if used else "")
        + (f" {hits} ids" if hits else "")
    )


def format_trace_diff(
    rows: list[StepDiff],
    first: int | None,
    labels: tuple[str, str],
    hashes: tuple[dict, dict] = ({}, {}),
) -> str:
    """The diff as text: one line per step, both runs' node, prompts (hash) and ids, and the
    first divergence marked."""
    width = max([len(labels[0]), *(len(_step_cell(r.a, hashes[0])) for r in rows)]) + 2
    lines = [f"    {labels[0]:<{width}}{labels[1]}"]
    for i, r in enumerate(rows):
        mark = "▶" if i == first else " "
        note = f"   <- {r.differs}" if r.differs else ""
        lines.append(
            f"{mark}{i:>2} {_step_cell(r.a, hashes[0]):<{width}}{_step_cell(r.b, hashes[1])}{note}"
        )
    lines.append(
        "the executions never diverge"
        if first is None
        else f"first divergence at step {first}: {rows[first].differs}"
    )
    return "\n".join(lines)


def render_trace_diff_html(
    traces: tuple[Trace, Trace],
    labels: tuple[str, str],
    qid: str,
    out: Path,
    hashes: tuple[dict, dict] = ({}, {}),
) -> Path:
    """The two executions side by side: each run's drawing (MMAPG: its planning graph), then
    the step table with the first divergence marked."""
    rows, first = trace_diff(*traces, hashes)
    cells = "".join(
        f"<tr{' class=bad' if i == first else ''}><td>{i}</td>"
        f"<td>{html.escape(_step_cell(r.a, hashes[0]))}</td>"
        f"<td>{html.escape(_step_cell(r.b, hashes[1]))}</td><td>{html.escape(r.differs)}</td></tr>"
        for i, r in enumerate(rows)
    )
    drawings = "".join(
        f"<div style='flex:1;min-width:0'><h2>{html.escape(label)}</h2>"
        f"{_drawing(graph_view(trace), trace)}</div>"
        for label, trace in zip(labels, traces, strict=True)
    )
    verdict = "never diverge" if first is None else f"first diverge at step {first}"
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(qid)}</title>"
        f"<style>{_CSS}</style></head><body><h1>{html.escape(qid)}: "
        f"{html.escape(labels[0])} vs {html.escape(labels[1])}</h1>"
        f"<p>The executions {verdict}.</p><div style='display:flex;gap:1em'>{drawings}</div>"
        f"<table><tr><th>step</th><th>{html.escape(labels[0])}</th>"
        f"<th>{html.escape(labels[1])}</th><th>differs</th></tr>{cells}</table></body></html>"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out
