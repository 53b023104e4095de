"""What ``hopgraph view`` shows, read from run folders on demand: a run list, a run's question
table (from ``predictions.jsonl`` and the question file only), one question's trace (its
drawing, a timing waterfall, every call, its evidence) and two runs side by side. A question's
trace is read only when that question is opened, so a run of any size lists at once.

Everything here returns plain JSON-able dicts; ``presentation.viewer.app`` serves them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any

from hopgraph.confine import confined
from hopgraph.evals.evaluate import score_prediction
from hopgraph.evals.run_record import PAGE_IMAGES, QuestionRecord, RunRecord, read_run
from hopgraph.evals.stages import gold_answer_held, loss_stage
from hopgraph.harness import bounded
from hopgraph.harness.cost import Price
from hopgraph.harness.run_folder import RunError, RunFolder, leaves, scored_predictions
from hopgraph.harness.trace import Call, Trace
from hopgraph.presentation.report import (
    SHOWN_SCORES,
    call_diff,
    graph_view,
    message_text,
    step_retrieved,
    step_templates,
    to_svg,
    trace_diff,
)
from hopgraph.redaction import redacted

"""The metrics a run list and a question table show (those a run has)."""


def find_runs(paths: list[Path]) -> list[Path]:
    """The run folders (folders holding ``manifest.json``) each path is or holds, in order,
    once each; a path holding none is refused naming it."""
    return list(run_ids(paths, strict=True).values())


def run_ids(roots: list[Path], strict: bool = False) -> dict[str, Path]:
    """Each run folder under ``roots`` by its id, which lasts as long as the folder does: its
    path below the root that holds it (a root that is a run folder: the root's name), under as
    many of the root's own folders as tell it apart where two roots would give one id.
    ``strict``: a root that is no folder or holds no run is refused naming it (else skipped:
    it may appear later)."""
    found: dict[str, Path] = {}
    seen: set[Path] = set()
    for root in roots:
        if (root / RunFolder.MANIFEST).is_file():
            inside = {root.resolve().name or str(root): root}
        elif root.is_dir():
            inside = {
                m.parent.relative_to(root).as_posix(): m.parent
                for m in sorted(root.rglob(RunFolder.MANIFEST))
            }
        elif strict:
            raise RunError(f"{root} is not a folder")
        else:
            continue
        if strict and not inside:
            raise RunError(f"no run folder (a folder with manifest.json) under {root}")
        for rid, path in inside.items():
            if path.resolve() in seen:
                continue
            seen.add(path.resolve())
            found[_unique(rid, root.resolve(), found)] = path
    return found


SEARCH_RECORD = "record.json"
"""What marks an optimize folder (``hopgraph optimize --out``): its search's record."""


def search_ids(runs: dict[str, Path]) -> dict[str, Path]:
    """The optimize folders among ``runs``' ancestors (a record.json with candidates beside
    the run folders it answered), by an id made as a run's is."""
    found: dict[str, Path] = {}
    for rid, path in runs.items():
        parents = path.resolve().parents
        for up in range(1, min(4, len(parents))):
            folder, sid = parents[up - 1], "/".join(rid.split("/")[:-up])
            if (folder / SEARCH_RECORD).is_file() and folder not in found.values():
                found[sid or folder.name] = folder
    return found


# what the viewer shows of a search's candidates and of its test verdict
CANDIDATE_FIELDS = (
    "id",
    "role",
    "kind",
    "mean",
    "incumbent_mean",
    "better",
    "worse",
    "p",
    "won",
    "tokens",
    "seconds",
    "skipped",
    "reasoning",
    "stopped",
    "tip",
)
VERDICT_FIELDS = (
    "n",
    "hand_written",
    "optimized",
    "better",
    "worse",
    "sign_p",
    "ci",
    "needed_n",
    "gap",
)


def _candidate(c: dict[str, Any], folder: Path, run: Callable[[str], str | None]) -> dict[str, Any]:
    """One candidate of a search as the viewer shows it: its fields, scores (rounded), the
    minibatch it raced on, its demonstrations and the run folder it answered in."""
    minibatch = c.get("minibatch") or {}
    return {
        **{k: c.get(k) for k in CANDIDATE_FIELDS},
        "stage": c.get("stage") or ("validation" if c.get("scores") else ""),
        "scores": _rounded(c.get("scores") or {}),
        "minibatch": {**minibatch, "scores": _rounded(minibatch.get("scores") or {})},
        "cut": c.get("cut") or {},
        "instructions": c.get("instructions") or {},
        "demos": {role: len(d or []) for role, d in (c.get("demos") or {}).items()},
        "demo_lines": _demonstrations(folder / "candidates" / str(c.get("id")), c, folder),
        "run": run(f"candidates/{c.get('id')}"),
    }


def optimize_search(folder: Path, run_of: dict[Path, str]) -> dict[str, Any]:
    """One optimize search as the viewer shows it: each candidate with its scores per question
    on the minibatch and on the whole validation, where it stopped and why, whether it was
    kept and what it cost, the run folder (by viewer id) each candidate answered in, and the
    test verdict's two arms."""
    record = json.loads((folder / SEARCH_RECORD).read_text(encoding="utf-8"))

    def run(sub: str) -> str | None:
        return run_of.get((folder / sub).resolve())

    candidates = [_candidate(c, folder, run) for c in record.get("candidates") or []]
    test = record.get("test") or {}
    kept_nothing = not any(c.get("won") for c in record.get("candidates") or [])
    same = bool(test.get("same_prompts")) or (
        (folder / "test" / "optimized").resolve() == (folder / "test" / "hand-written").resolve()
    )
    _name_ties(candidates)
    no_verdict = kept_nothing or same
    return {
        "agent": record.get("agent", "?"),
        "metric": record.get("metric", ""),
        "keep": record.get("keep", ""),
        "race": record.get("race", ""),
        "incumbent": record.get("incumbent", ""),
        "stopped": record.get("stopped", ""),
        "spent": record.get("spent") or {},
        "seconds": record.get("seconds"),
        "roles": record.get("roles") or [],
        "candidates": candidates,
        "bootstrap": run("bootstrap"),
        "incumbent_scores": _incumbent_scores(folder, record, candidates),
        "kept_nothing": kept_nothing,
        "no_verdict": (
            "nothing kept; no verdict: the optimized prompts are the hand-written ones, so "
            f"the test split ({test.get('n', 0)} questions) compared them with themselves"
            if no_verdict and test
            else ""
        ),
        "test": {k: test.get(k) for k in VERDICT_FIELDS} if test and not no_verdict else None,
        "arms": [run("test/hand-written"), None if no_verdict else run("test/optimized")],
    }


def _demonstrations(folder: Path, c: dict[str, Any], search: Path) -> dict[str, list[dict]]:
    """The demonstrations a candidate adds, per role, as its overlay holds them (each example's
    inputs and the output it shows); a line that cannot be read is left out."""
    out: dict[str, list[dict[str, Any]]] = {}
    for role in c.get("demos") or {}:
        try:  # a role or candidate id naming ../.., or an overlay linked out, reads nothing
            path = confined(folder / "overlay" / f"{role}.jsonl", search)
        except (ValueError, OSError):
            continue
        lines = []
        for line in bounded.read_text(path).splitlines():
            try:
                demo = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(demo, dict):
                lines.append({"inputs": demo.get("inputs") or {}, "output": demo.get("output")})
        out[role] = lines
    return out


def _name_ties(candidates: list[dict[str, Any]]) -> None:
    """A candidate cut on the minibatch whose lead equals one that went on is marked ``tie``:
    successive halving breaks ties in schedule order (``optimizer.search.halve``)."""

    def lead(c: dict[str, Any]) -> float | None:
        mb = c["minibatch"]
        if mb.get("mean") is None or mb.get("incumbent_mean") is None:
            return None
        return round(float(mb["mean"]) - float(mb["incumbent_mean"]), 4)

    went_on = [c for c in candidates if c["stage"] == "validation" and lead(c) is not None]
    for c in candidates:
        mine = lead(c)
        if c.get("stopped", "") and "not among the best" in c["stopped"] and mine is not None:
            twins = [o["id"] for o in went_on if lead(o) == mine]
            if twins:
                c["tie"] = (
                    f"tied on the minibatch with {', '.join(twins)} (lead {mine:+.3f}); "
                    "ties go on in schedule order, so the earlier went on"
                )


def _incumbent_scores(
    folder: Path, record: dict[str, Any], candidates: list[dict[str, Any]]
) -> dict[str, float]:
    """The incumbent's (hand-written prompts') score on each question the candidates were
    scored on, from the bootstrap run that answered them ({} where it cannot be scored)."""
    qids = {q for c in candidates for q in (c["scores"] or c["minibatch"]["scores"])}
    try:
        preds = scored_predictions(folder / "bootstrap")
    except Exception:  # noqa: BLE001 - no bootstrap or no questions: the column stays empty
        return {}
    metric = str(record.get("metric", "f1"))
    out = {}
    for qid in sorted(qids & set(preds)):
        value = score_prediction(preds[qid]).get(metric)
        if value is not None:
            out[qid] = round(float(value), 4)
    return out


def _unique(rid: str, root: Path, taken: dict[str, Path]) -> str:
    """``rid``, or where another root gave it already, it under as many of its root's own
    folders as tell the two apart (``mmapg/test/hand-written`` beside ``rag/test/...``)."""
    held = Path(rid)
    parents = [*(root.parts[:-1] if held.parts == (root.name,) else root.parts)]
    while rid in taken and parents:
        held = Path(parents.pop()) / held
        rid = held.as_posix()
    return rid


def _rounded(scores: dict[str, float]) -> dict[str, float]:
    return {k: round(float(v), 4) for k, v in scores.items()}


def unreadable(path: Path, rid: str, e: Exception) -> dict[str, Any]:
    """A run-list row for a folder whose files cannot be read (a cut or empty manifest, one
    that is a folder): its id and why, so the other runs are still listed."""
    return {
        "id": rid,
        "name": rid,
        "path": str(path),
        "agent": "?",
        "model": "?",
        "questions": 0,
        "right": 0,
        "scored": 0,
        "errors": 0,
        "metrics": {},
        "tokens": 0,
        "usd": None,
        "seconds": 0.0,
        "created": "",
        "code": "",
        "git": "",
        "note": "",
        "error": redacted(f"cannot be read: {type(e).__name__}: {e}"),
    }


@dataclass
class RunView:
    """One run folder as the viewer reads it (``evals.run_record``); its question rows are kept
    until ``predictions.jsonl`` changes (a run still answering shows its new questions)."""

    path: Path
    price: Price | None = None
    _read: tuple[float, RunRecord, list[dict[str, Any]]] | None = field(default=None, repr=False)
    """predictions.jsonl's stamp, the run as read then, its rows."""

    def record(self) -> RunRecord:
        """The run, read again where its predictions changed since."""
        preds_file = self.path / "predictions.jsonl"
        stamp = preds_file.stat().st_mtime if preds_file.exists() else 0.0
        if self._read is None or self._read[0] != stamp:
            run = read_run(self.path, self.price)
            stages = (RunFolder(self.path).metrics() or {}).get("stages") or {}
            self._read = (
                stamp,
                run,
                [self._row(run, qid) | {"stage": stages.get(qid, "")} for qid in run.ids],
            )
        return self._read[1]

    def manifest(self) -> dict[str, Any]:
        """The run's manifest; one that cannot be read is an error naming its file."""
        return self.record().manifest

    def rows(self) -> list[dict[str, Any]]:
        """One row per answered question: its text, answer, gold, scores and cost."""
        self.record()
        return self._read[2] if self._read else []

    def note(self) -> str:
        return self.record().note

    @staticmethod
    def _row(run: RunRecord, qid: str) -> dict[str, Any]:
        pred, scores = run.predictions[qid], run.scores(qid)
        shown = {k: scores[k] for k in SHOWN_SCORES if k in scores}
        q = QuestionRecord(qid, pred, scores, Trace([]))
        return {
            "id": qid,
            "question": q.question,
            "answer": q.answer,
            "gold": q.gold,
            "scores": _rounded(shown),
            "right": q.right,
            "calls": q.calls_made,
            "tokens": int(pred.get("prompt_tokens", 0)) + int(pred.get("completion_tokens", 0)),
            "usd": scores.get("usd"),
            "seconds": round(float(pred.get("seconds", 0.0)), 2),
            "fallbacks": int(pred.get("fallbacks", 0)),
            "budget_stops": int(pred.get("budget_stops", 0)),
            "cache_hits": int(pred.get("cache_hits", 0)),
            "error": redacted(str(pred.get("error") or "")),
            "templates": sorted(pred.get("by_template") or {}),
        }

    def summary(self, rid: str) -> dict[str, Any]:
        """A run-list row: what made the run and its headline figures."""
        man, rows = self.manifest(), self.rows()
        metrics = {  # each over the questions that have it (those with gold)
            k: round(fmean(vals), 4)
            for k in SHOWN_SCORES
            if (vals := [r["scores"][k] for r in rows if k in r["scores"]])
        }
        usd = [r["usd"] for r in rows if r["usd"] is not None]
        return {
            "id": rid,
            "name": rid,
            "path": str(self.path),
            "agent": redacted(str(man.get("agent", "?"))),
            "model": redacted(str(man.get("model", "?"))),
            "questions": len(rows),
            "right": sum(r["right"] is True for r in rows),
            "scored": sum(r["right"] is not None for r in rows),
            "errors": sum(bool(r["error"]) for r in rows),
            "metrics": metrics,
            "tokens": sum(r["tokens"] for r in rows),
            "usd": round(sum(usd), 6) if usd else None,
            "seconds": round(sum(r["seconds"] for r in rows), 1),
            "created": man.get("created", ""),
            "code": (man.get("code") or {}).get("fingerprint", ""),
            "git": str(man.get("git_revision", ""))[:12],
            "note": self.note(),
        }

    def row(self, qid: str) -> dict[str, Any]:
        for r in self.rows():
            if r["id"] == qid:
                return r
        raise KeyError(qid)

    def trace(self, qid: str) -> Trace:
        return self.record().trace(qid)

    def opened(self, qid: str) -> QuestionRecord:
        """Question ``qid`` with its trace; one the run never answered, with the trace alone."""
        run = self.record()
        if qid in run.predictions:
            return run.question(qid)
        return QuestionRecord(qid, {}, {}, run.trace(qid))

    def question(self, qid: str) -> dict[str, Any]:
        """One question opened: its row, drawing, waterfall, calls and evidence."""
        row = self.row(qid)
        q = self.opened(qid)
        evidence = q.evidence()
        unread = self.record().fill_texts(evidence)
        view = _linked(graph_view(q.trace), q.trace)
        return {
            "row": row,
            "graph": view,
            "svg": to_svg(view) if view.get("nodes") else "",
            "spans": [s.as_dict() for s in q.trace.spans],
            "calls": [call_row(c, self.price) for c in q.trace.calls],
            "marks": [
                {
                    "node": m.node,
                    "t": round(m.at, 4),
                    "text": f"{m.kind.replace('_', ' ')}: {m.reason}",
                }
                for m in q.trace.marks
            ],
            "evidence": [_evidence_row(e) for e in evidence],
            "evidence_note": unread,
            "gold_evidence": [{"id": g, "held": held} for g, held in q.gold_held(evidence)],
            "stage": loss_stage(q),
            "gold_answer": gold_answer_held(q),
            "traced": bool(q.trace.records),
            "damaged": q.trace.damaged,
        }

    def prediction(self, qid: str) -> dict[str, Any]:
        """A question's prediction as its rows were read (``{}`` where there is none)."""
        return self.record().predictions.get(qid, {})

    def search(self, text: str) -> list[str]:
        """The questions whose trace holds ``text`` (any case) in any of its strings: prompts,
        replies, passages, notes (every trace read: asked for, not by default)."""
        wanted = text.lower()
        if not wanted:
            return [r["id"] for r in self.rows()]
        return [
            r["id"]
            for r in self.rows()
            if any(wanted in t.lower() for t in _strings(self.trace(r["id"]).records))
        ]

    def nodes(self) -> dict[str, list[str]]:
        """Each question's executed node names (its whole trace read: asked for only when a
        person filters by node)."""
        out = {}
        for r in self.rows():
            found = [s.label for s in self.trace(r["id"]).spans if s.kind == "node"]
            out[r["id"]] = sorted(set(found))
        return out


def _strings(value: Any) -> Iterator[str]:
    """Every string inside a trace's records, keys aside."""
    return (v for v in leaves(value) if isinstance(v, str))


def call_row(c: Call, price: Price | None) -> dict[str, Any]:
    """One LLM call as the viewer shows it: the node that made it, prompt, reply, parsed
    object, settings, a cached mark, its cost and the server's account of its time."""
    return {
        "node": c.node,
        "template": c.template,
        "role": c.role,
        "model": c.model,
        "kind": c.kind,
        "messages": [{"role": str(m.get("role", "")), "text": message_text(m)} for m in c.messages],
        "reply": c.reply,
        "parsed": c.parsed,
        "parse_error": c.parse_error,
        "settings": c.sampling,
        "cached": c.cached,
        "prompt_tokens": c.prompt_tokens,
        "completion_tokens": c.completion_tokens,
        "usd": round(price.usd(c.prompt_tokens, c.completion_tokens), 6) if price else None,
        "seconds": round(c.seconds, 3),
        "served": c.served,
        "attempts": c.attempts,
        "error": redacted(c.error) if c.error else None,
    }


def _linked(view: dict[str, Any], trace: Trace) -> dict[str, Any]:
    """Each drawn node's links into the page: the calls it made (a planning graph's nodes count
    theirs and were made in order, so the trace's calls lay out among them; the calls after
    the last node, its stop and the answer's extraction, belong to none) and the evidence it
    retrieved (its hits in the final state)."""
    nodes = view.get("nodes") or []
    counts = [str((n.get("detail") or {}).get("calls", "")) for n in nodes]
    hits = {
        str(n.get("id")): [str(h.get("id")) for h in n.get("hits") or [] if isinstance(h, dict)]
        for n in trace.final_state.get("nodes") or []
        if isinstance(n, dict)
    }
    laid = bool(counts) and all(c.isdigit() for c in counts)
    laid = laid and sum(map(int, counts)) <= len(trace.calls)
    first = 0
    for n, count in zip(nodes, counts, strict=True):
        calls = list(range(first, first + int(count))) if laid else []
        first += int(count) if laid else 0
        n["links"] = {"calls": calls, "evidence": hits.get(str(n.get("id")), [])}
    return view


def _evidence_row(e: Any) -> dict[str, Any]:
    """An ``Evidence`` as the page's JSON (a page's size and regions only for a cited page)."""
    row = {
        k: getattr(e, k)
        for k in (
            "id",
            "title",
            "text",
            "source",
            "page",
            "score",
            "kept",
            "cited",
            "gold",
            "retrieved",
            "source_of_text",
        )
    }
    if e.page_size is not None:
        row |= {"page_image": e.page_image, "page_size": e.page_size, "regions": e.regions}
    return row


def page_image(trace: Trace, pred: dict[str, Any], cid: str, inside: list[Path]) -> Path:
    """The image of a cited PDF page this question's trace names, when it lies (links
    followed) inside one of the folders ``inside``: a run folder is data, and a path it names
    never makes the viewer read elsewhere (nothing else is served)."""
    e = trace.passages.get(cid) or {}
    path = Path(str(e.get("path") or ""))
    if (
        cid not in (pred.get("citations") or [])
        or e.get("modality") != "page"
        or path.suffix.lower() not in PAGE_IMAGES
        or not path.is_file()
    ):
        raise KeyError(cid)
    try:
        real = confined(path, *inside)
    except (ValueError, OSError):
        raise KeyError(cid) from None
    if real.suffix.lower() not in PAGE_IMAGES:
        raise KeyError(cid)
    return real


def page_folders(roots: list[Path], manifest: dict[str, Any]) -> list[Path]:
    """Where a run's page images may be read from: the folders the viewer serves, and the
    rendered pages of the KB its manifest names (``<kb_dir>/pages``), where that names a
    knowledge base (it holds ``chroma/``) whose ``pages`` lie inside it, links followed: a
    manifest naming ``/`` or a KB whose ``pages`` links out opens nothing more."""
    kb_dir = str((manifest.get("context") or {}).get("kb_dir") or "")
    if not kb_dir:
        return list(roots)
    kb = Path(kb_dir).expanduser().resolve()
    pages = (kb / "pages").resolve()
    if (kb / "chroma").is_dir() and pages.is_relative_to(kb) and pages != kb:
        return [*roots, pages]
    return list(roots)


def pair(a: RunView, b: RunView, metric: str) -> dict[str, Any]:
    """Two runs over their common questions: each question's ``metric`` in both, and those
    where it changed (an F1 drop counts as much as a flip)."""
    rows_a = {r["id"]: r for r in a.rows()}
    rows = []
    for r in b.rows():
        x = rows_a.get(r["id"])
        if x is None:
            continue
        va, vb = x["scores"].get(metric), r["scores"].get(metric)
        rows.append(
            {
                "id": r["id"],
                "question": r["question"],
                "gold": r["gold"],
                "answers": [x["answer"], r["answer"]],
                "values": [va, vb],
                "changed": va != vb,
                "delta": None if va is None or vb is None else round(vb - va, 4),
                "calls": [x["calls"], r["calls"]],
                "seconds": [x["seconds"], r["seconds"]],
            }
        )
    return {
        "metric": metric,
        "common": len(rows),
        "better": sum((q["delta"] or 0) > 0 for q in rows),
        "worse": sum((q["delta"] or 0) < 0 for q in rows),
        "rows": rows,
    }


def pair_question(a: RunView, b: RunView, qid: str) -> dict[str, Any]:
    """One question's two executions aligned step by step, the first divergence marked (the
    logic of ``hopgraph trace A B QID``)."""
    hashes = (a.manifest().get("prompts") or {}, b.manifest().get("prompts") or {})
    ta, tb = a.trace(qid), b.trace(qid)
    if not ta.records and not tb.records:
        raise KeyError(qid)
    rows, first = trace_diff(ta, tb, hashes)

    def cell(step: Any, hashes: dict) -> dict[str, Any] | None:
        if step is None:
            return None
        return {
            "node": "/".join([*(part.split(":")[0] for part in step.ns), step.node]),
            "templates": [
                f"{t} {str(hashes.get(t, ''))[:8]}".strip() for t in step_templates(step)
            ],
            "retrieved": sum(len(ids) for ids in step_retrieved(step)),
            "wrote": sorted(k for k in step.update if k != "graph_view"),
        }

    same = a.manifest().get("agent") == b.manifest().get("agent")
    return {
        "same_method": same,
        "first": first,
        "rows": [
            {"a": cell(r.a, hashes[0]), "b": cell(r.b, hashes[1]), "differs": r.differs}
            for r in rows
        ],
        "answers": [_answer(a, qid), _answer(b, qid)],
        "first_call": _first_differing_call(ta, tb) if same else None,
        "held": [_held(run, qid) for run in (a, b)],
    }


def _call_side(call: Call | None, then: Call | None) -> dict[str, Any] | None:
    if call is None:
        return None
    return {
        "template": call.template,
        "node": call.node,
        "prompt": message_text((call.messages or [{}])[-1]),
        "reply": call.reply,
        "then": then.template if then else "(the end)",
    }


def _first_differing_call(ta: Trace, tb: Trace) -> dict[str, Any] | None:
    """Where one method's two executions parted: the first call whose reply differs, both
    replies (and prompts), the node that made each and the call that followed it."""
    calls = call_diff(ta, tb)
    for i, c in enumerate(calls):
        if c.reply_changed:
            nxt = calls[i + 1] if i + 1 < len(calls) else None
            sides = [
                _call_side(c.a, nxt.a if nxt else None),
                _call_side(c.b, nxt.b if nxt else None),
            ]
            return {"index": i, "prompt_changed": c.prompt_changed, "sides": sides}
    return None


def _held(run: RunView, qid: str) -> dict[str, Any]:
    """What one execution held when it answered: its evidence (gold marked) and what it did
    with it: after its last search, the last call of each template (in their order), so the
    reasoning that wrote the answer and the answer's extraction where a method has one; and,
    for a wrong answer, where its gold answer went (``gold_answer_held``)."""
    q = run.opened(qid)
    return {
        "gold_answer": gold_answer_held(q),
        "evidence": [
            {"id": e.id, "title": e.title, "gold": e.gold, "kept": e.kept, "cited": e.cited}
            for e in q.evidence()
        ],
        "last_calls": [
            {**(_call_side(c, None) or {}), "node": "", "then": "(the end)"}
            for c in q.trace.calls_after_last_search()
        ],
    }


def _answer(run: RunView, qid: str) -> dict[str, Any] | None:
    try:
        return run.row(qid)
    except KeyError:
        return None
