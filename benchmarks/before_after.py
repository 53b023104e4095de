"""A refactor's before/after check: every agent on a scripted endpoint, then the answers, calls
and citations of the two code revisions compared question by question.

    git worktree add /tmp/old REV && mkdir -p /tmp/oldpkg && ln -s /tmp/old /tmp/oldpkg/hopgraph
    PYTHONPATH=/tmp/oldpkg .venv/bin/python benchmarks/before_after.py run /tmp/before
    .venv/bin/python benchmarks/before_after.py run /tmp/after
    .venv/bin/python benchmarks/before_after.py compare /tmp/before /tmp/after [--out FILE]

A report committed under ``benchmarks/results/before-after/`` carries result records forward:
each configuration whose answers were all identical names its code fingerprint before and
after and the templates that changed, and a record answered by the code before counts as
today's where such reports chain its fingerprint to today's (``hopgraph results`` says which).

``--only NAME`` (repeatable, both commands) limits the check to those agent configurations.

The endpoint is scripted and sensitive to every prompt: a text reply names a hash of its prompt
and cites by it, a P(Yes) is drawn from it, and a structured reply is a valid instance of the
role's own schema; so a change in any prompt, context, order of contexts or call shows in the
answers, citations or calls. No model runs, so the check takes minutes on 2 cores. Agents: direct,
rag, QDRAG in each mode, MMAPG (3 iterations), MAB-DQA (bandit and LI) over the demo questions
(MAB-DQA over the demo passages laid out as the pages of one document).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bench_agents import instance, setup  # noqa: E402
from scripted_server import ScriptedServer  # noqa: E402

from hopgraph.graphs import every_context  # noqa: E402
from hopgraph.harness.run_folder import RunFolder, read_predictions  # noqa: E402
from hopgraph.harness.runner import Runner  # noqa: E402

Context = every_context()  # every built-in method's knobs (the runner keeps each graph's)

AGENTS: dict[str, tuple[str, dict[str, Any]]] = {
    "direct": ("direct", {}),
    "rag": ("rag", {}),
    "qdrag-qdc": ("qdrag", {"qdrag_mode": "qdc"}),
    "qdrag-qdr": ("qdrag", {"qdrag_mode": "qdr"}),
    "qdrag-sparse": ("qdrag", {"qdrag_mode": "sparse"}),
    "qdrag-dense": ("qdrag", {"qdrag_mode": "dense"}),
    "mmapg": ("mmapg", {"mmapg_max_iterations": 3}),
    "mabdqa": ("mabdqa", {"mabdqa_judge": "p_yes", "mabdqa_m": 4}),
    "mabdqa-li": ("mabdqa", {"mabdqa_retriever": "li"}),
}
COMPARED = ("answer", "response", "citations", "contexts_ids", "llm_calls", "prompt_tokens")


def reply(body: dict[str, Any]) -> Any:
    """A reply that is a function of the whole request."""
    text = json.dumps(body["messages"], sort_keys=True)
    h = int(hashlib.sha1(text.encode()).hexdigest()[:8], 16)
    if body.get("logprobs"):
        return 0.05 + (h % 90) / 100
    fmt = body.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema") or fmt.get("schema")
    if schema:
        return json.dumps(instance(schema, schema))
    word = f"w{h % 9973}"
    if "Short answer" in text:
        return word
    return f"{word} is the answer [1][{1 + h % 3}].\nAnswer: {word}"


def run(out: Path, names: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="hopgraph-before-after-") as tmp:
        kb, qfile, qdoc = setup(Path(tmp))
        with ScriptedServer(reply) as server:
            for name in names:
                agent, fields = AGENTS[name]
                ctx = Context(base_url=server.base_url, model="scripted", kb_dir=str(kb), **fields)
                questions = qdoc if agent == "mabdqa" else qfile
                summary = Runner(agent, out / name, ctx).run(questions)
                print(f"{name}: {summary.finished} finished, {summary.failed} failed", flush=True)


def calls_by_template(pred: dict[str, Any]) -> dict[str, int]:
    return {t: int(v["calls"]) for t, v in sorted((pred.get("by_template") or {}).items())}


def compare(before: Path, after: Path, names: list[str]) -> dict[str, Any]:
    """Per agent: the questions whose compared fields are all equal, and each difference."""
    report: dict[str, Any] = {"compared": [*COMPARED, "calls by template"], "agents": {}}
    for name in names:
        old = read_predictions(before / name / "predictions.jsonl")
        new = read_predictions(after / name / "predictions.jsonl")
        differences = []
        for qid in sorted(old.keys() | new.keys()):
            a, b = old.get(qid, {}), new.get(qid, {})
            for key in COMPARED:
                if a.get(key) != b.get(key):
                    differences.append(
                        {"id": qid, "field": key, "before": a.get(key), "after": b.get(key)}
                    )
            if calls_by_template(a) != calls_by_template(b):
                differences.append(
                    {
                        "id": qid,
                        "field": "calls by template",
                        "before": calls_by_template(a),
                        "after": calls_by_template(b),
                    }
                )
        same = sum(1 for q in old.keys() & new.keys() if not any(d["id"] == q for d in differences))
        errors = sum(bool(p.get("error")) for p in [*old.values(), *new.values()])
        report["agents"][name] = {
            "questions": len(old.keys() | new.keys()),
            "identical": same,
            "errors": errors,
            "differences": differences,
            **code_moved(before / name, after / name),
        }
    return report


def code_moved(before: Path, after: Path) -> dict[str, Any]:
    """The two runs' code fingerprints and the templates whose text differs: what a results
    record answered by the one may be carried forward to the other by, where every answer
    was identical (``presentation.results.freshness``)."""
    was, now = RunFolder(before).manifest() or {}, RunFolder(after).manifest() or {}
    a, b = was.get("prompts") or {}, now.get("prompts") or {}
    return {
        "code": {
            k: (m.get("code") or {}).get("fingerprint", "")
            for k, m in (("before", was), ("after", now))
        },
        "revisions": {"before": was.get("git_revision", ""), "after": now.get("git_revision", "")},
        "templates": {
            t: [a.get(t, ""), b.get(t, "")]
            for t in sorted(a.keys() | b.keys())
            if a.get(t) != b.get(t)
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    run_ap = sub.add_parser("run")
    run_ap.add_argument("out", type=Path)
    cmp = sub.add_parser("compare")
    cmp.add_argument("before", type=Path)
    cmp.add_argument("after", type=Path)
    cmp.add_argument("--out", type=Path)
    for p in (run_ap, cmp):
        p.add_argument(
            "--only",
            action="append",
            choices=list(AGENTS),
            metavar="NAME",
            help="only this agent configuration (repeatable)",
        )
    args = ap.parse_args()
    names = args.only or list(AGENTS)
    if args.command == "run":
        run(args.out, names)
        return
    report = compare(args.before, args.after, names)
    for name, row in report["agents"].items():
        errors = f", {row['errors']} errors" if row["errors"] else ""
        print(f"{name}: identical on {row['identical']} of {row['questions']} questions{errors}")
        for d in row["differences"][:5]:
            print(f"  {d['id']} {d['field']}: {d['before']!r} -> {d['after']!r}")
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
