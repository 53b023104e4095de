"""A method's own drawing of one question, as a pure function of the graph's final state.

Graphs never draw: the runner writes each question's final state into its trace (a ``values``
record naming the graph), and the report draws it with the view registered under the graph's
name (``{"nodes": [{"id", "label", "kind", "detail"?}], "edges": [[src, dst], ...]}``). A graph
without a view is drawn as the chain of its executed steps (``report.graph_view``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

View = dict[str, Any]


def qdrag_view(values: dict[str, Any]) -> View:
    """QDRAG's decomposition tree: question → subquestions (with their share n of the budget)
    → the kept contexts, each under the subquestions that scored it."""
    nodes = [{"id": "q", "label": values.get("question", ""), "kind": "question"}]
    edges = []
    subs = values.get("solved") or values.get("subquestions") or []
    allocation, scores = values.get("allocation") or {}, values.get("scores") or {}
    for s in subs:
        label = f"{s['question']} → {s['answer']}" if s.get("answer") else s["question"]
        n = allocation.get(s["id"], 0)
        nodes.append({"id": f"s{s['id']}", "label": f"{label} (n={n})", "kind": "question"})
        edges.append(["q", f"s{s['id']}"])
    for j, c in enumerate(values.get("kept") or [], 1):
        nodes.append(
            {"id": f"c{j}", "label": f"[{j}] {c.get('title') or c['id']}", "kind": "retrieval"}
        )
        owners = [f"s{s['id']}" for s in subs if c["id"] in scores.get(s["id"], {})] or ["q"]
        edges += [[o, f"c{j}"] for o in owners[:2]]
    return {"nodes": nodes, "edges": edges}


def mmapg_view(values: dict[str, Any]) -> View:
    """MMAPG's Adaptive Planning Graph: typed nodes, edges from their parents, and each node's
    instruction, content and LLM calls (``detail``, tabled in the HTML report)."""
    out = []
    nodes = values.get("nodes") or []
    for n in nodes:
        content = n["content"] if n["id"] != "Q0" else values.get("question", "")
        text = f"{n['instruction']} → {content}" if n.get("instruction") else content
        detail = {
            "parents": ", ".join(n.get("parents", [])),
            "instruction": n.get("instruction", ""),
            "content": content,
            "calls": n.get("calls", 0),
            "tokens": n.get("tokens", 0),
        }
        label = f"{n['id']} [{n.get('calls', 0)} LLM] {text}"
        out.append({"id": n["id"], "kind": n["type"], "label": label, "detail": detail})
    edges = [[p, n["id"]] for n in nodes for p in n.get("parents", [])]
    return {"nodes": out, "edges": edges}


VIEWS: dict[str, Callable[[dict[str, Any]], View]] = {
    "subquestions": qdrag_view,
    "planning_graph": mmapg_view,
}
"""A view's name, as a method's spec names it (``MethodSpec.view``) -> its drawing."""


def view_of(graph: str, values: dict[str, Any]) -> View | None:
    """The drawing of a final state by the view its graph's spec names (the graph's name is
    its method's); None for a graph without one."""
    from hopgraph.graphs import specs

    spec = specs().get(graph)
    draw = VIEWS.get(spec.view) if spec is not None else None
    return draw(values) if draw is not None and values else None
