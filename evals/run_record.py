"""A run folder read as one typed record: its manifest, and per question what was asked and
answered, the gold, the scores, and the trace (``harness.trace.Trace``) joined with the
prediction: which evidence was retrieved, kept, cited and gold, and which gold it held.
``hopgraph view``, the HTML report and ``hopgraph trace`` read runs through it, so a count
such as "calls", "gold held" or "right" has one source.

    from hopgraph import read_run

    run = read_run("demo/runs/rag")
    for q in run.questions():
        print(q.id, q.right, q.answer, q.gold, [c.template for c in q.trace.calls])
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hopgraph.evals.evaluate import score_prediction
from hopgraph.harness.cost import Price
from hopgraph.harness.run_folder import (
    RunError,
    RunFolder,
    gold_evidence,
    read_predictions,
    scored_predictions,
    trace_path,
)
from hopgraph.harness.trace import Trace, read_trace

JUDGED = ("em", "mmlb_acc")
"""The scores that say right or wrong: exact match, or MMLongBench-Doc's accuracy."""


def answered_right(scores: dict[str, float]) -> bool:
    """Whether a judged question was answered right (exact match, else the benchmark's own
    accuracy for MMLongBench-Doc)."""
    return scores.get("em", scores.get("mmlb_acc", 0.0)) >= 1.0


@dataclass
class Evidence:
    """A piece of evidence a question met: its best search score (None where it was held
    without being retrieved), and whether it was kept for the answer, cited, or gold."""

    id: str
    title: str
    text: str
    source: str
    page: Any
    score: float | None
    kept: bool
    cited: bool
    gold: bool
    retrieved: bool
    source_of_text: str = "trace"
    """Where its text came from: the trace, the run's knowledge base (a retrieved passage a
    trace names by id only), or "" where neither holds it."""
    page_image: bool = False
    page_size: list[float] | None = None
    regions: list[list[float]] = field(default_factory=list)


@dataclass
class QuestionRecord:
    """One answered question: its prediction line (question text and gold joined back where the
    question file is here), its scores, and its trace."""

    id: str
    prediction: dict[str, Any]
    scores: dict[str, float]
    trace: Trace

    @property
    def question(self) -> str:
        return str(self.prediction.get("question", ""))

    @property
    def answer(self) -> str:
        return str(self.prediction.get("answer", ""))

    @property
    def gold(self) -> list[str]:
        return [str(g) for g in self.prediction.get("gold") or []]

    @property
    def right(self) -> bool | None:
        """True or False where the question has gold, None where it is unscored."""
        return None if not self.gold else answered_right(self.scores)

    @property
    def calls_made(self) -> int:
        """The LLM calls its endpoint received (the prediction's count: a trace may keep
        fewer, or none)."""
        return int(self.prediction.get("llm_calls", 0))

    def evidence(self) -> list[Evidence]:
        """Every piece of evidence once, best score first: what was retrieved, what was kept
        for the answer (``contexts_ids``) or cited, and gold evidence it held without a search;
        a cited PDF page carries the regions its answer quotes."""
        pred, known = self.prediction, self.trace.passages
        kept, cited = set(pred.get("contexts_ids") or []), set(pred.get("citations") or [])
        gold = set(gold_evidence(pred))
        best = self.trace.best_scores()
        retrieved = set(best)
        for i in kept | cited | (gold & set(known)):
            best.setdefault(i, float("-inf"))
        pages = cited_pages(self.trace, pred)
        out = []
        for i in sorted(best, key=lambda i: -best[i]):
            e = known.get(i) or {}
            row = Evidence(
                id=i,
                title=str(e.get("title", "")),
                text=str(e.get("text", "")),
                source=str(e.get("source", "")),
                page=e.get("page"),
                score=None if best[i] == float("-inf") else round(best[i], 4),
                kept=i in kept,
                cited=i in cited,
                gold=i in gold,
                retrieved=i in retrieved,
            )
            if i in pages:
                page, boxes = pages[i]
                row.page_image = Path(str(page["path"])).suffix.lower() in PAGE_IMAGES
                row.page_size = list(page["provenance"]["page_size"])
                row.regions = [list(box) for box in boxes]
            out.append(row)
        return out

    def gold_held(self, evidence: list[Evidence] | None = None) -> list[tuple[str, bool]]:
        """Each gold evidence id and whether the question held it (retrieved, kept or cited);
        ``evidence``: its ``evidence()`` where the caller has read it already."""
        held = {e.id for e in (self.evidence() if evidence is None else evidence)}
        return [(g, g in held) for g in gold_evidence(self.prediction)]


PAGE_IMAGES = (".png", ".jpg", ".jpeg", ".webp")


def cited_pages(trace: Trace, pred: dict[str, Any]) -> dict[str, tuple[dict[str, Any], list]]:
    """Each cited PDF page whose size is known (its evidence as traced) and the regions of it,
    in PDF points, that the answer quotes (the static page and ``hopgraph view`` draw them)."""
    from hopgraph.memory.regions import cited_region

    said = f"{pred.get('response', '')}\n{pred.get('answer', '')}"
    out = {}
    for cid in pred.get("citations") or []:
        e = trace.passages.get(cid) or {}
        prov = e.get("provenance") or {}
        if e.get("modality") == "page" and e.get("path") and prov.get("page_size"):
            out[cid] = (e, cited_region(e, said))
    return out


@dataclass
class RunRecord:
    """A run folder: its manifest and its answered questions, scored where the question file
    its manifest names is here (else ``note`` says why not and how to make it)."""

    path: Path
    manifest: dict[str, Any]
    predictions: dict[str, dict[str, Any]]
    note: str = ""
    price: Price | None = None
    _opened: Any = field(default=None, repr=False)

    @property
    def ids(self) -> list[str]:
        return list(self.predictions)

    def scores(self, qid: str) -> dict[str, float]:
        pred = self.predictions[qid]
        return score_prediction(pred, self.price) if pred.get("gold") else {}

    def trace(self, qid: str) -> Trace:
        return read_trace(trace_path(self.path, qid))

    @property
    def kb_dir(self) -> str:
        return str((self.manifest.get("context") or {}).get("kb_dir") or "")

    def _kb(self, folder: str) -> Any:
        """The run's knowledge base, opened once for every question page that needs it."""
        if self._opened is None:
            from hopgraph.memory.kb import KnowledgeBase

            self._opened = KnowledgeBase(folder)
        return self._opened

    def fill_texts(self, evidence: list[Evidence]) -> str:
        """The text of evidence a trace names by id only (retrieved, never kept), read from
        the run's knowledge base where it is here; what was not found, and why, in a line."""
        missing = [e for e in evidence if not e.text]
        if not missing:
            return ""
        kb = Path(self.kb_dir).expanduser() if self.kb_dir else None
        if kb is None or not (kb / "chroma").is_dir():
            named = self.kb_dir or "none named"
            return (
                f"{len(missing)} retrieved passage(s) are named by id only in the trace, "
                f"and the run's knowledge base ({named}) is not here"
            )
        try:
            found = {h["id"]: h for h in self._kb(str(kb)).get([e.id for e in missing])}
        except Exception as err:  # noqa: BLE001 - a KB of another embedder or version: say so
            return f"the run's knowledge base {kb} cannot be read here ({err})"
        for row in missing:
            if row.id in found:
                hit = found[row.id]
                row.text, row.title = (
                    str(hit.get("text", "")),
                    row.title or str(hit.get("title") or ""),
                )
                row.source_of_text = "kb"
            else:
                row.source_of_text = ""
        lost = sum(not row.text for row in missing)
        return f"{lost} retrieved passage(s) are not found in {kb}" if lost else ""

    def question(self, qid: str) -> QuestionRecord:
        """Question ``qid`` with its trace (``KeyError`` where the run has no answer to it)."""
        pred = self.predictions[qid]
        return QuestionRecord(qid, pred, self.scores(qid), self.trace(qid))

    def questions(self) -> Iterator[QuestionRecord]:
        """Every answered question, in the order they were answered (each trace read as it
        comes)."""
        for qid in self.predictions:
            yield self.question(qid)


def read_run(folder: str | Path, price: Price | None = None) -> RunRecord:
    """Run folder ``folder`` as a ``RunRecord``: its manifest (one that cannot be read is a
    ``RunError`` naming its file) and its predictions, gold joined back where it can be."""
    path = Path(folder)
    try:
        manifest = dict(RunFolder(path).manifest() or {})
    except (ValueError, OSError) as e:
        raise RunError(f"{path / RunFolder.MANIFEST}: {e}") from e
    try:
        return RunRecord(path, manifest, scored_predictions(path), "", price)
    except RunError as e:
        return RunRecord(
            path, manifest, read_predictions(path / "predictions.jsonl"), str(e), price
        )
