"""The batch runner: an agent over a question file, concurrent, checkpointed and resumable.

A run is a folder: ``manifest.json``, ``predictions.jsonl`` (one line per finished question),
``traces/<qid>.jsonl`` (every node update and custom event), ``checkpoints.sqlite`` (LangGraph's
SqliteSaver, thread id ``<run>:<qid>``). Re-running the same command skips finished questions,
continues interrupted ones from their last checkpoint, and retries the ones that failed.
"""

from __future__ import annotations

import logging
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.sqlite import SqliteSaver

from hopgraph.config import Context
from hopgraph.graphs import context_schema, load_graph, recursion_limit
from hopgraph.graphs.shared import output_of
from hopgraph.harness.cost import Budget
from hopgraph.harness.run_folder import (
    EventCounts,
    Manifest,
    MaskingSerde,
    Prediction,
    QuestionSet,
    RunError,
    RunFolder,
    _line,
    as_disk_full,
    manifest,
    method_code,
    pack_trace,
    remember_keys,
    settings_key,
    trace_path,
    trace_records,
    writing,
)
from hopgraph.memory.files import Skipped
from hopgraph.models.embedded import llama_build_features
from hopgraph.models.errors import HopgraphModelError
from hopgraph.models.events import question_spend
from hopgraph.prompts import prompts_for, refuse_foreign_overlay
from hopgraph.questions.datasets import Question

if TYPE_CHECKING:
    from hopgraph.harness.otel import OtelExport

log = logging.getLogger(__name__)


class RunAborted(RunError):
    """Questions failed one after another: a run-wide fault (an endpoint that went down), not
    a bad question. The run stops instead of walking the whole file; re-running resumes."""

    summary: RunSummary | None = None


MAX_CONSECUTIVE_FAILURES = 5


@dataclass
class RunSummary:
    run_dir: Path
    total: int
    skipped_done: int = 0
    finished: int = 0
    failed: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)
    """(question id, error) of each question that failed this sitting, in the order they ended."""
    problems: list[Skipped] = field(default_factory=list)
    seconds: float = 0.0
    spent: dict[str, Any] = field(default_factory=dict)
    """What the record's answered questions spent (tokens, and USD at the budget's price), where
    the run has a budget."""
    budget_stopped: int = 0
    """Questions the budget left unstarted (0: it did not stop the run)."""


def unanswered(
    questions: list[Question], done: Mapping[str, Mapping[str, Any]], redo: Collection[str] = ()
) -> list[Question]:
    """The questions a sitting answers: not finished, failed before, or named to answer again."""
    return [q for q in questions if q.id in redo or q.id not in done or done[q.id].get("error")]


def preflight(ctx: Context) -> None:
    """What would fail every question, checked once before the first: the prompt overlay, and
    the model endpoint (it answers and serves the model; the VLM's too when one is set).
    Raises ``PromptError`` or a ``HopgraphModelError`` naming the fault."""
    from hopgraph.models import chat_model, vlm_model

    prompts_for(ctx.prompts_dir).check_overrides()
    chat_model(ctx).check()
    vlm = vlm_model(ctx)
    if vlm is not None:
        vlm.check()


def sitting_speed(ctx: Context) -> dict[str, float]:
    """The endpoint's prompt-reading and generation rates now (about 1,800 tokens of probe), or
    an empty dict, logged, when the probe fails: a run does not stop for want of it."""
    from hopgraph.models import chat_model
    from hopgraph.models.doctor import measure_speed

    try:
        return measure_speed(chat_model(ctx))
    except (HopgraphModelError, ValueError) as e:
        log.warning("speed probe failed, the sitting records no speed: %s", e)
        return {}


def reached_end(state) -> bool:  # noqa: ANN001 - a LangGraph StateSnapshot
    """Whether a question's graph ran to its end: nothing left to run, and its last
    checkpoint written by a step (``loop``), not the one that saves the input alone before any
    step ran (``input``), which a kill -9 at the start of a question leaves. A step whose
    writes were saved but whose own checkpoint was not (killed between the two) is still a
    task: LangGraph's snapshot then shows no ``next`` (its writes are applied), but the steps
    after it never ran."""
    meta = state.metadata or {}
    return (
        not state.next and not state.tasks and bool(state.values) and meta.get("source") == "loop"
    )


class Runner:
    """Runs one agent over questions into a run folder."""

    def __init__(
        self,
        agent: str,
        run_dir: str | Path,
        ctx: Context,
        *,
        endpoint: str = "",
        on_record: Callable[[str, list[str], str, Any], None] | None = None,
        exporter: OtelExport | None = None,
        checkpointer: str = "",
        lease: float = 60.0,
        speed_probe: bool = False,
        accept_code_change: bool = False,
        budget: Budget | None = None,
        notify: Callable[[str], None] | None = None,
    ):
        """``on_record(qid, ns, mode, data)`` sees every record of a question's stream as it
        happens, and each node's start (``tasks`` mode, not kept in the trace). ``exporter``
        (an ``harness.otel.OtelExport``) gets each finished question's trace records.
        ``checkpointer`` a ``postgres://`` URL: the run is shared with every worker that names
        the same database, agent and run folder name (``harness.shared_run``). ``speed_probe``:
        time the endpoint once per sitting, after its questions (``measure_speed``), and record
        its rates with the sitting, which every question it answers names; the CLI sets it for
        the embedded server, whose speed is the host's (two hosts of one kind read prompts 1.65x
        apart). ``budget``: no question starts once the record's answered questions have spent
        it (questions in flight finish); the summary says what was spent and how many were left
        unstarted. ``notify`` hears what a sitting waits for beyond its questions (the timing
        probe) and how long it took."""
        self.agent = agent
        self.accept_code_change = accept_code_change
        self.budget = budget
        self.notify = notify or (lambda _: None)
        self.on_record = on_record
        self.exporter = exporter
        self.graph_builder = load_graph(agent)
        fresh = not Path(run_dir).exists()
        self.folder = RunFolder(run_dir).make()
        self.run_dir = self.folder.path
        try:
            self._open(ctx, endpoint, speed_probe, checkpointer, lease)
        except BaseException:  # refused: a folder this sitting made is not left behind
            if fresh:
                shutil.rmtree(self.run_dir, ignore_errors=True)
            raise

    def _open(
        self, ctx: Context, endpoint: str, speed_probe: bool, checkpointer: str, lease: float
    ) -> None:
        """The rest of a Runner's making: its context, code, endpoint and checkpointer."""
        agent = self.agent
        # as its graph's Context (its method's knobs at their defaults where ``ctx`` lacks
        # them, so the manifest names them); whoever runs a Runner is the operator
        self.ctx = context_schema(agent).adopt(ctx).as_operator()
        remember_keys(self.ctx)  # an endpoint that echoes its key never writes it into the record
        refuse_foreign_overlay(self.ctx.prompts_dir, agent)
        self.code = method_code(agent, self.ctx).get("fingerprint", "")
        self.endpoint = endpoint
        self.speed_probe = speed_probe
        self.sitting_at: int | None = None  # this sitting's place in the manifest's sittings
        self.run_name = self.folder.name
        self.predictions = self.folder.predictions
        self.shared = None
        if checkpointer.startswith(("postgres://", "postgresql://")):
            from hopgraph.harness.shared_run import SharedRun

            self.shared = SharedRun(checkpointer, f"{agent}:{self.run_name}", lease=lease)
            self.saver = self.shared.checkpointer()
        elif checkpointer:
            raise RunError(f"--checkpointer takes a postgres:// URL, not {checkpointer!r}")
        else:
            conn = sqlite3.connect(self.run_dir / "checkpoints.sqlite", check_same_thread=False)
            self.saver = SqliteSaver(conn)
        self.saver.serde = MaskingSerde(self.saver.serde)
        self.graph = self.graph_builder.builder.compile(
            checkpointer=self.saver, name=self.graph_builder.name
        )

    def close(self) -> None:
        """Lets go of the checkpointer's connections (a process that ends lets go anyway)."""
        if self.shared is not None:
            self.shared.close()
        elif isinstance(self.saver, SqliteSaver):
            self.saver.conn.close()

    def thread(self, qid: str) -> dict[str, Any]:
        return {
            "configurable": {"thread_id": f"{self.run_name}:{self.settings_key}:{qid}"},
            "recursion_limit": recursion_limit(self.agent, self.ctx),
            "max_concurrency": self.ctx.max_concurrency,  # parallel tasks (MMAPG's Send fan-out)
        }

    def run_question(self, q: Question) -> tuple[Prediction, list[dict[str, Any]]]:
        """Stream the graph for one question; returns its prediction and its trace records.

        The one stream feeds everything: each record goes to the live view (``on_record``) and
        the trace file as it happens and is kept for the event counts and the export
        (``exporter``); the final state closes the trace (a ``values`` record, which the report
        draws with the graph's view)."""
        config = self.thread(q.id)
        trace_file = trace_path(self.run_dir, q.id)
        payload, streaming = self._input_or_resume(q, config)
        began = time.perf_counter()
        error = None
        # a resumed question's earlier sittings are in its trace already
        records = trace_records(trace_file) if payload is None else []
        with open(trace_file, "a", encoding="utf-8") as trace:

            def keep(record: dict[str, Any]) -> None:
                with writing(trace_file, "a question's trace"):
                    trace.write(_line(record))
                    trace.flush()
                records.append(record)

            keep(
                {
                    "mode": "start",
                    "data": {"id": q.id, "resume": payload is None, "wall": round(time.time(), 4)},
                }
            )
            before = EventCounts.of(records).stats() if records else None
            spent = before["prompt_tokens"] + before["completion_tokens"] if before else 0
            try:
                with question_spend(spent):  # the question's token cap counts what it spent
                    self._stream(q, payload, config, streaming, began, keep)
            except Exception as e:  # one question's failure is recorded, the batch goes on
                self._stop_if_disk_full(e)  # every question after it would fail the same way
                error = f"{type(e).__name__}: {e}"
                keep({"mode": "error", "data": {"error": error}})
            if sum(r.get("mode") == "start" for r in records) > 1:  # resumed: say what ran twice
                marks = EventCounts.of(records).marks()
                if any(marks.values()):
                    keep({"mode": "custom", "data": {"event": "resume_marks", **marks}})
            end = self.graph.get_state(config) if error is None else None
            if end is not None and not reached_end(end):
                error = f"the graph stopped before its end (next: {', '.join(end.next)})"
                keep({"mode": "error", "data": {"error": error}})
            values = end.values if end is not None and error is None else {}
            if values:
                keep({"mode": "values", "graph": self.graph.name, "data": values})
        out = output_of(values)
        evidence = out.get("evidence", [])
        cited = {e["id"]: e for e in evidence}
        pred: Prediction = {
            "id": q.id,
            "answer": out.get("answer", ""),
            "response": out.get("response", ""),
            "citations": out.get("citations", []),
            "contexts_ids": [e["id"] for e in evidence],
            "cited": [cited[i] for i in out.get("citations", []) if i in cited],
            **EventCounts.of(records).stats(),
            "seconds": round(time.perf_counter() - began, 3),
            "code": self.code,
            "error": error,
            "gold_evidence": q.evidence,
            "type": q.type,
            "doc": q.doc,
        }
        if "invalid_citations" in out:
            pred["invalid_citations"] = out["invalid_citations"]
        if self.sitting_at is not None:
            pred["sitting"] = self.sitting_at
        return pred, records

    def _input_or_resume(
        self, q: Question, config: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, bool]:
        """What to stream for ``q`` from its checkpoint: its input (a fresh start), or None to
        go on from where it was interrupted; and whether there is anything left to stream
        (not when it finished before a crash lost its prediction line)."""
        state = self.graph.get_state(config)
        stepped = (state.metadata or {}).get("source") == "loop"
        if (state.next or state.tasks) and stepped:  # interrupted: go on from its checkpoint
            return None, True
        if reached_end(state):
            return None, False
        if state.values or state.next:  # only its input was saved: killed before a step
            self.saver.delete_thread(config["configurable"]["thread_id"])
        payload: dict[str, Any] = {"id": q.id, "question": q.question}  # the shared InputState:
        payload |= {"images": q.images} if q.images else {}  # every graph takes the same fields
        payload |= {"doc": q.doc} if q.doc else {}  # (no gold text)
        return payload, True

    def _stop_if_disk_full(self, e: Exception) -> None:
        """A question's failure that is a full disk (its checkpoints, its trace) stops the run:
        raised as ``DiskFull`` naming the file."""
        full = as_disk_full(e, self.run_dir / "checkpoints.sqlite", "the checkpoints")
        if full is not None:
            raise full from e

    def _stream(self, q: Question, payload, config, streaming, began, keep) -> None:  # noqa: ANN001
        """One question's stream: each record to the live view and, through ``keep``, to the
        trace."""
        modes = ["updates", "custom", "tasks"]
        for ns, mode, chunk in (
            self.graph.stream(payload, config, context=self.ctx, stream_mode=modes, subgraphs=True)
            if streaming
            else ()
        ):
            if self.on_record is not None:
                self.on_record(q.id, list(ns), mode, chunk)
            if mode == "tasks":  # kept light: which node started or ended, not its state
                mode, chunk = (
                    "task",
                    {
                        "id": chunk.get("id"),
                        "name": chunk.get("name"),
                        "event": "start" if "input" in chunk else "end",
                        **({"error": str(chunk["error"])} if chunk.get("error") else {}),
                    },
                )
            keep(
                {
                    "t": round(time.perf_counter() - began, 4),
                    "ns": list(ns),
                    "mode": mode,
                    "data": chunk,
                }
            )

    def accept(self, pred: Prediction, records: list[dict[str, Any]]) -> None:
        """A finished question's line goes to the record, its trace is packed (a result record
        commits it), and the trace goes to the exporter."""
        self.predictions.append(pred)
        pack_trace(trace_path(self.run_dir, pred["id"]))
        if self.exporter is not None:
            self.exporter.export(self.agent, records, pred)

    def ask(self, q: Question) -> Prediction:
        """One question given directly (``hopgraph ask``): the run folder gets a manifest, the
        trace and the prediction line; no question file is written or read."""
        fresh = manifest(self.agent, None, self.ctx, self.endpoint)
        self.settings_key = settings_key(fresh, self._build(fresh))
        with self.folder.lock():
            self.folder.write_manifest(fresh)
            pred, records = self.run_question(q)
            self.accept(pred, records)
        return pred

    def run(
        self,
        questions: QuestionSet | str | Path,
        *,
        limit: int | None = None,
        concurrency: int = 1,
        on_done: Callable[[dict[str, Any], RunSummary], None] | None = None,
        redo: Collection[str] = (),
        max_consecutive_failures: int = MAX_CONSECUTIVE_FAILURES,
    ) -> RunSummary:
        """Answers the questions not finished yet (``questions``: a question file read once,
        or its path); ``redo`` names finished ones to answer afresh (their prediction, trace
        and checkpoint are dropped first). After ``max_consecutive_failures`` failures in a row
        (0: never) the run stops with ``RunAborted``; questions in flight finish and are
        recorded first. A local run holds the folder (``RunLock``): a second one on it is
        refused, naming the first."""
        qs = questions if isinstance(questions, QuestionSet) else QuestionSet.read(questions)
        if self.shared is not None:  # workers share by claims in the database
            summary = self._run(qs, limit, concurrency, on_done, redo, max_consecutive_failures)
            self._time_sitting(summary)
            return summary
        with self.folder.lock():
            summary = self._run(qs, limit, concurrency, on_done, redo, max_consecutive_failures)
            self._time_sitting(summary)
            return summary

    def left(
        self, qs: QuestionSet, limit: int | None = None, redo: Collection[str] = ()
    ) -> RunSummary | None:
        """A local run's checks before any model is needed: a record of another agent, question
        file or settings is refused (``RunError``); a run with nothing left to answer (every
        question finished, or its budget spent) gets its summary here, so it ends without a
        model server; None: it has questions to answer."""
        self._with_image_roots(qs)
        questions = qs.first(limit)
        self._checked(qs, questions, redo)
        done = self.folder.done()
        todo = unanswered(questions, done, redo)
        summary = RunSummary(self.run_dir, total=len(questions), problems=qs.problems)
        summary.skipped_done = len(questions) - len(todo)
        summary.spent = self.budget.spent(list(done.values())) if self.budget else {}
        if todo and self.budget and self.budget.reached(summary.spent):
            summary.budget_stopped = len(todo)
        return summary if not todo or summary.budget_stopped else None

    def _with_image_roots(self, qs: QuestionSet) -> None:
        """Question images come from beside the question file, unless the operator set roots."""
        if not self.ctx.image_roots:
            self.ctx = self.ctx.replace(image_roots=str(qs.path.resolve().parent))

    def _checked(
        self, qs: QuestionSet, questions: list[Question], redo: Collection[str]
    ) -> tuple[Manifest | None, list[str] | None]:
        """The record's checks (``RunFolder.check``'s refusals), and the manifest this sitting
        writes with the llama.cpp build answering it (None: nothing to answer)."""
        unknown = sorted(set(redo) - {q.id for q in questions})
        if unknown:
            raise RunError(f"--redo names questions not in this run's set: {', '.join(unknown)}")
        done = self.folder.done()
        finished = {qid for qid, p in done.items() if not p.get("error")} - set(redo)
        pending = bool(self.shared) or any(q.id not in finished for q in questions)
        fresh = manifest(self.agent, qs, self.ctx, self.endpoint)
        build = self._build(fresh)
        self.settings_key = settings_key(fresh, build)  # names the questions' checkpoint threads
        sitting = self.folder.check(
            fresh, sitting=pending, accept_code_change=self.accept_code_change
        )
        return sitting, build

    def _sitting(self, qs: QuestionSet, questions: list[Question], redo: Collection[str]) -> None:
        """The record's checks (refusals come first), then this sitting in its manifest, where
        it has questions to answer."""
        sitting, build = self._checked(qs, questions, redo)
        if sitting is not None:
            build = build or (llama_build_features() if self.speed_probe else None)
            self._warn_build(sitting, build)
            self.folder.record_sitting(sitting, build)
            self.sitting_at = len(sitting["sittings"]) - 1

    def _time_sitting(self, summary: RunSummary) -> None:
        """The endpoint timed for the record once the sitting's questions are answered (about
        30 s), never before the first: the rates go to the manifest's sitting, which each of its
        answers names (``sitting``). A sitting that answered nothing is not timed; Ctrl-C skips
        the timing and keeps the answers."""
        if not (self.speed_probe and summary.finished and self.sitting_at is not None):
            return
        self.notify("timing the endpoint for the record (about 30 s on 2 cores; Ctrl-C skips it)")
        began = time.perf_counter()
        try:
            speed = sitting_speed(self.ctx)
        except KeyboardInterrupt:
            self.notify("timing skipped: the answers are kept, the sitting records no speed")
            return
        self.notify(
            f"timed in {time.perf_counter() - began:.0f} s: "
            + (
                f"prompts read at {speed['prefill_tokens_per_s']:.0f} tokens/s, "
                f"replies at {speed['decode_tokens_per_s']:.0f} tokens/s"
                if speed
                else "no speed recorded (the probe failed)"
            )
        )
        if speed:
            self.folder.time_sitting(self.sitting_at, speed)

    @staticmethod
    def _build(fresh: Mapping[str, Any]) -> list[str] | None:
        """The llama.cpp build's vector extensions where the embedded server answers (the
        manifest names its GGUF), else None."""
        return llama_build_features() if fresh.get("gguf_sha256") else None

    def _warn_build(self, fresh: Mapping[str, Any], build: list[str] | None) -> None:
        """A sitting on another llama.cpp build than the record's last one is warned about: a
        build can change a greedy answer (docs/results/ flags a table whose answers mix
        builds)."""
        before = [s["llama_cpp_build"] for s in fresh.get("sittings", []) if "llama_cpp_build" in s]
        if build is not None and before and before[-1] != build:
            log.warning(
                "%s was answered on a llama.cpp build using %s; this sitting's uses %s, and a "
                "build can change a greedy answer, so the record will mix the two (the "
                "portable wheel: PYTHONPATH=runs/llama-portable, see benchmarks/hotpot_data.sh)",
                self.run_dir,
                "+".join(before[-1]) or "none",
                "+".join(build) or "none",
            )

    def _todo(self, questions: list[Question], redo: Collection[str]) -> list[Question]:
        """The questions this sitting answers: those not finished, failed ones (from their
        checkpoint) and ``redo``'s (afresh). The log drops the lines of those it asks again; a
        failure past this sitting's questions (a shorter ``--limit``) keeps its line."""
        done = self.folder.done()
        for qid in redo:
            done.pop(qid, None)
            self.saver.delete_thread(self.thread(qid)["configurable"]["thread_id"])
            self.folder.forget(qid)
        todo = unanswered(questions, done)
        asked = {q.id for q in todo}
        self.folder.keep([p for qid, p in done.items() if qid not in asked])
        return todo

    def _run(self, qs, limit, concurrency, on_done, redo, max_consecutive_failures) -> RunSummary:  # noqa: ANN001
        began = time.perf_counter()
        self._with_image_roots(qs)
        questions = qs.first(limit)
        self._sitting(qs, questions, redo)
        summary = RunSummary(self.run_dir, total=len(questions), problems=qs.problems)
        if self.shared is not None:
            if redo:
                raise RunError("--redo is not available on a shared (postgres) run")
            if self.budget:
                raise RunError("a budget applies to a local run, not a shared (postgres) one")
            return self._run_shared(questions, concurrency, summary, on_done, began)
        todo = self._todo(questions, redo)
        summary.skipped_done = len(questions) - len(todo)
        kept = list(self.folder.done().values())
        summary.spent = self.budget.spent(kept) if self.budget else {}
        queue = iter(todo)
        pool = ThreadPoolExecutor(max_workers=max(1, concurrency))
        in_a_row, aborted = 0, None
        inflight: set[Future] = set()

        def start_more() -> None:
            """Keep ``concurrency`` questions in flight, none once the run must stop."""
            while len(inflight) < max(1, concurrency) and aborted is None:
                if self.budget and self.budget.reached(summary.spent):
                    summary.budget_stopped = sum(1 for _ in queue)  # the ones never started
                    return
                q = next(queue, None)
                if q is None:
                    return
                inflight.add(pool.submit(self.run_question, q))

        try:
            start_more()
            while inflight:
                finished, _ = wait(inflight, return_when=FIRST_COMPLETED)
                for future in finished:
                    inflight.discard(future)
                    pred, records = future.result()
                    self.accept(pred, records)
                    kept.append(pred)
                    summary.spent = self.budget.spent(kept) if self.budget else {}
                    if pred["error"]:
                        summary.failed += 1
                        summary.errors.append((pred["id"], pred["error"]))
                        in_a_row += 1
                    else:
                        summary.finished += 1
                        in_a_row = 0
                    if on_done is not None:
                        on_done(pred, summary)
                    if (
                        aborted is None
                        and max_consecutive_failures
                        and (in_a_row >= max_consecutive_failures)
                    ):  # the queued ones never start; in-flight ones finish
                        aborted = RunAborted(
                            f"{in_a_row} questions in a row failed, so the run stopped; the "
                            f"last ({pred['id']}): {pred['error']}. Fix the cause and re-run the "
                            "same command: finished questions are kept and the rest resume"
                        )
                start_more()
        except Exception:  # a failed write (a full disk): start nothing new, and let the
            # questions in flight end before raising, so none runs on while the process exits
            # (its graph's own pool then refuses work and a traceback follows the error line)
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        except BaseException:  # Ctrl-C / SIGTERM: start nothing new; checkpoints keep the rest
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()
        summary.seconds = time.perf_counter() - began
        if aborted is not None:
            aborted.summary = summary
            raise aborted
        return summary

    def _run_shared(self, questions, concurrency, summary, on_done, began) -> RunSummary:
        """Workers claim questions one at a time until every one is done by someone (waiting
        on questions other live workers hold: a dead worker's lease runs out and its question
        is claimed here). A question this worker failed is not tried again this sitting."""
        shared, lock, tried = self.shared, threading.Lock(), set()
        if shared is None:
            raise RunError("a shared run needs --shared (its PostgreSQL database)")
        status = shared.status()
        summary.skipped_done = sum(status.get(q.id, {}).get("done", False) for q in questions)

        def next_question() -> Question | None:
            while True:
                status = shared.status()
                left = [q for q in questions if not status.get(q.id, {}).get("done")]
                left = [q for q in left if q.id not in tried]
                if not left:
                    return None
                for q in left:
                    with lock:
                        if q.id in tried:
                            continue
                        tried.add(q.id)
                    if shared.claim(q.id):
                        return q
                    with lock:
                        tried.discard(q.id)  # held by a live worker: look again later
                time.sleep(min(2.0, shared.lease / 4))

        def work() -> None:
            while (q := next_question()) is not None:
                pred, records = self.run_question(q)
                if not shared.finish({k: v for k, v in pred.items() if k != "cited"}):
                    continue  # another worker took it over meanwhile
                self.accept(pred, records)
                with lock:
                    summary.failed += bool(pred["error"])
                    summary.finished += not pred["error"]
                    if pred["error"]:
                        summary.errors.append((pred["id"], pred["error"]))
                if on_done is not None:
                    on_done(pred, summary)

        threads = [threading.Thread(target=work, daemon=True) for _ in range(max(1, concurrency))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # this worker's folder gets every worker's finished lines, so eval reads the whole run
        finished = {q: st["prediction"] for q, st in shared.status().items() if st["done"]}
        self.folder.keep([finished[q.id] for q in questions if q.id in finished])
        summary.seconds = time.perf_counter() - began
        return summary
