"""The batch runner: an agent over a question file, concurrent, checkpointed and resumable.

A run is a folder: ``manifest.json``, ``predictions.jsonl`` (one line per finished question),
``traces/<qid>.jsonl`` (every node update and custom event), ``checkpoints.sqlite`` (LangGraph's
SqliteSaver, thread id ``<run>:<qid>``). Re-running the same command skips finished questions,
continues interrupted ones from their last checkpoint, and retries the ones that failed.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver

from hopgraph.config import Context
from hopgraph.evals.datasets import Question, read_questions
from hopgraph.evals.metrics import critical_path_depth
from hopgraph.graphs import load_graph, recursion_limit
from hopgraph.graphs.shared import output_of
from hopgraph.memory.sources import Skipped
from hopgraph.models.events import EmptyReply, Fallback, LLMCall, Retrieval
from hopgraph.prompts import prompts_for, sha256_file

PACKAGES = (
    "hopgraph",
    "langgraph",
    "langchain-core",
    "openai",
    "chromadb",
    "sentence-transformers",
    "torch",
    "llama-cpp-python",
)


class RunError(RuntimeError):
    """A run folder cannot be used for this command (another agent or question file)."""


class RunAborted(RunError):
    """Questions failed one after another: a run-wide fault (an endpoint that went down), not
    a bad question. The run stops instead of walking the whole file; re-running resumes."""


MAX_CONSECUTIVE_FAILURES = 5


@dataclass
class RunSummary:
    run_dir: Path
    total: int
    skipped_done: int = 0
    finished: int = 0
    failed: int = 0
    problems: list[Skipped] = field(default_factory=list)
    seconds: float = 0.0


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _git_revision() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
        return out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def prompt_hashes(ctx: Context) -> dict[str, str]:
    """sha256 of every template as this Context resolves it (user overrides included)."""
    prompts = prompts_for(ctx.prompts_dir)
    return {name: sha256_file(prompts.source_path(name)) for name in prompts.names()}


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


def machine() -> dict[str, Any]:
    """What ran a sitting: cores, CPU model, GPU (none unless nvidia-smi names one)."""
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gpu = ""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)  # fmt: skip
        gpu = out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired):
        pass
    return {"cores": os.cpu_count(), "cpu": cpu, "gpu": gpu or "none"}


def _gguf_sha256(ctx: Context) -> str:
    """The pinned sha256 of the embedded model's GGUF, when the run uses it."""
    if ctx.base_url:
        return ""
    from hopgraph.models.embedded import spec_for

    try:
        return spec_for(ctx.model).sha256
    except (KeyError, ValueError):
        return ""


def manifest(
    agent: str, questions_file: Path | None, ctx: Context, endpoint: str
) -> dict[str, Any]:
    """What a run folder was made with; ``questions_file`` None: a question asked directly."""
    return {
        "agent": agent,
        "questions": str(questions_file) if questions_file else "(asked)",
        "questions_sha256": _sha256(questions_file) if questions_file else "",
        "context": ctx.as_dict(),
        "endpoint": endpoint,
        "model": ctx.model,
        "gguf_sha256": _gguf_sha256(ctx),
        "prompts": prompt_hashes(ctx),
        "git_revision": _git_revision(),
        "versions": _versions(),
        "command": " ".join(["hopgraph", *sys.argv[1:]]) if sys.argv else "",
        "machine": machine(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


# -- predictions file -------------------------------------------------------------------------
def read_predictions(path: Path) -> dict[str, dict[str, Any]]:
    """Finished predictions by id; a torn last line (a crash mid-write) is ignored."""
    out: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        out.setdefault(obj["id"], obj)
    return out


def scored_predictions(run_dir: str | Path) -> dict[str, dict[str, Any]]:
    """A run's predictions with each question's text and gold answers joined back from the
    question file its manifest names (prediction lines hold no dataset text, so a run folder
    can be committed as a result record). Lines written before that carry their own gold."""
    run_dir = Path(run_dir)
    preds = read_predictions(run_dir / "predictions.jsonl")
    if all("gold" in p for p in preds.values()):
        return preds
    manifest_path = run_dir / "manifest.json"
    if not manifest_path.exists():
        raise RunError(f"{run_dir} has predictions but no manifest.json naming its questions")
    man = json.loads(manifest_path.read_text())
    qfile = Path(man.get("questions", ""))
    if not qfile.is_file() or _sha256(qfile) != man.get("questions_sha256"):
        raise RunError(
            f"scoring {run_dir} needs its question file {qfile} (sha256 "
            f"{str(man.get('questions_sha256'))[:12]}…), "
            + ("which has other content" if qfile.is_file() else "which is not here")
            + f"; re-create it as the record's command did: {man.get('command', '?')}"
        )
    questions = {q.id: q for q in read_questions(qfile)[0]}
    for qid, p in preds.items():
        q = questions.get(qid)
        if q is not None and "gold" not in p:
            p |= {"question": q.question, "gold": q.answers}
    return preds


def _rewrite(path: Path, keep: list[dict[str, Any]]) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for obj in keep:
            f.write(json.dumps(obj, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class PredictionLog:
    """Appends one whole line per write, flushed and fsynced, under a lock."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()

    def append(self, obj: dict[str, Any]) -> None:
        data = (json.dumps(obj, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)


# -- traces --------------------------------------------------------------------------------------
class EventCounts:
    """LLM calls, tokens, fallbacks, retrieved ids and the method's ``run_summary``, counted
    from a question's events as they stream (or from a trace a resumed question already has)."""

    def __init__(self) -> None:
        self.calls = self.prompt = self.completion = self.fallbacks = self.empty = 0
        self.intervals: list[tuple[float, float]] = []
        self.retrieved: dict[str, None] = {}
        self.summary: dict[str, Any] = {}

    @classmethod
    def from_trace(cls, trace: Path) -> EventCounts:
        counts = cls()
        if trace.exists():
            for line in trace.read_text(encoding="utf-8").splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if rec.get("mode") == "custom":
                    counts.add(rec.get("data"))
        return counts

    def add(self, event: Any) -> None:
        if not isinstance(event, dict):
            return
        kind = event.get("event")
        if kind == LLMCall.event:
            self.calls += 1
            self.prompt += event.get("prompt_tokens", 0)
            self.completion += event.get("completion_tokens", 0)
            if event.get("started"):
                self.intervals.append((event["started"], event["started"] + event["latency_s"]))
        elif kind == Fallback.event:  # a role's output, replaced by its declared fallback
            self.fallbacks += 1
        elif kind == EmptyReply.event:
            self.empty += 1
        elif kind == Retrieval.event:
            self.retrieved.update(dict.fromkeys(event.get("ids", [])))
        elif kind == "run_summary":  # a method's own counts (MMAPG's loop, MAB-DQA's HRRA)
            self.summary = {k: v for k, v in event.items() if k != "event"}

    def stats(self) -> dict[str, Any]:
        return {
            "llm_calls": self.calls,
            "prompt_tokens": self.prompt,
            "completion_tokens": self.completion,
            "fallbacks": self.fallbacks,
            "empty_replies": self.empty,
            "depth": critical_path_depth(self.intervals),
            "retrieved": list(self.retrieved),
            **({"summary": self.summary} if self.summary else {}),
        }


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
        checkpointer: str = "",
        lease: float = 60.0,
    ):
        """``on_record(qid, ns, mode, data)`` sees every record of a question's stream as it
        happens, and each node's start (``tasks`` mode, not kept in the trace).
        ``checkpointer`` a ``postgres://`` URL: the run is shared with every worker that names
        the same database, agent and run folder name (``evals.shared_run``)."""
        self.agent = agent
        self.on_record = on_record
        self.graph_builder = load_graph(agent)
        self.run_dir = Path(run_dir)
        self.ctx = ctx
        self.endpoint = endpoint
        self.run_name = self.run_dir.resolve().name
        (self.run_dir / "traces").mkdir(parents=True, exist_ok=True)
        self.predictions = PredictionLog(self.run_dir / "predictions.jsonl")
        self.shared = None
        if checkpointer.startswith(("postgres://", "postgresql://")):
            from hopgraph.evals.shared_run import SharedRun

            self.shared = SharedRun(checkpointer, f"{agent}:{self.run_name}", lease=lease)
            self.saver = self.shared.checkpointer()
        elif checkpointer:
            raise RunError(f"--checkpointer takes a postgres:// URL, not {checkpointer!r}")
        else:
            conn = sqlite3.connect(self.run_dir / "checkpoints.sqlite", check_same_thread=False)
            self.saver = SqliteSaver(conn)
        self.graph = self.graph_builder.builder.compile(
            checkpointer=self.saver, name=self.graph_builder.name
        )

    def thread(self, qid: str) -> dict[str, Any]:
        return {
            "configurable": {"thread_id": f"{self.run_name}:{qid}"},
            "recursion_limit": recursion_limit(self.agent, self.ctx),
            "max_concurrency": self.ctx.max_concurrency,  # parallel tasks (MMAPG's Send fan-out)
        }

    def check_manifest(self, questions_file: Path) -> None:
        path = self.run_dir / "manifest.json"
        fresh = manifest(self.agent, questions_file, self.ctx, self.endpoint)
        if path.exists():
            old = json.loads(path.read_text())
            if old.get("agent") != self.agent:
                raise RunError(
                    f"{self.run_dir} holds a run of agent {old.get('agent')!r}, not {self.agent!r}"
                )
            if old.get("questions_sha256") != fresh["questions_sha256"]:
                raise RunError(
                    f"{self.run_dir} was run on another question file "
                    f"({old.get('questions')}); use a new --out folder"
                )
            fresh["created"] = old.get("created", fresh["created"])
            fresh["resumed"] = old.get("resumed", 0) + 1
            fresh["sittings"] = old.get("sittings", [])
        fresh.setdefault("sittings", []).append(
            {k: fresh[k] for k in ("git_revision", "machine", "command")}
            | {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        )
        path.write_text(json.dumps(fresh, indent=2) + "\n")

    def run_question(self, q: Question) -> dict[str, Any]:
        """Stream the graph for one question into its trace; returns the prediction line."""
        config = self.thread(q.id)
        trace_file = trace_path(self.run_dir, q.id)
        state = self.graph.get_state(config)
        if state.next:  # interrupted: continue from the last checkpoint
            payload, streaming = None, True
        elif state.values:  # finished before a crash lost its prediction line
            payload, streaming = None, False
        else:  # the shared InputState: every graph takes the same fields (no gold text)
            payload, streaming = {"id": q.id, "question": q.question}, True
            payload |= {"images": q.images} if q.images else {}
            payload |= {"doc": q.doc} if q.doc else {}
        began = time.perf_counter()
        error = None
        # a resumed question's earlier sittings are in its trace already: counted once, here
        counts = EventCounts.from_trace(trace_file) if payload is None else EventCounts()
        with open(trace_file, "a", encoding="utf-8") as trace:
            start = {"id": q.id, "resume": payload is None, "wall": round(time.time(), 4)}
            trace.write(_line({"mode": "start", "data": start}))
            try:
                modes = ["updates", "custom", "tasks"]
                for ns, mode, chunk in (
                    self.graph.stream(
                        payload, config, context=self.ctx, stream_mode=modes, subgraphs=True
                    )
                    if streaming
                    else ()
                ):
                    if self.on_record is not None:
                        self.on_record(q.id, list(ns), mode, chunk)
                    if mode == "custom":
                        counts.add(chunk)
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
                    trace.write(
                        _line(
                            {
                                "t": round(time.perf_counter() - began, 4),
                                "ns": list(ns),
                                "mode": mode,
                                "data": chunk,
                            }
                        )
                    )
                    trace.flush()
            except Exception as e:  # one question's failure is recorded, the batch goes on
                error = f"{type(e).__name__}: {e}"
                trace.write(_line({"mode": "error", "data": {"error": error}}))
        out = output_of(self.graph.get_state(config).values) if error is None else {}
        seconds = time.perf_counter() - began
        # ids, outputs and counts only: no question or gold text from the dataset, so a run
        # folder can be committed as a result record (eval reads gold from the question file)
        return {
            "id": q.id,
            "answer": out.get("answer", ""),
            "response": out.get("response", ""),
            "citations": out.get("citations", []),
            **(
                {"invalid_citations": out["invalid_citations"]}
                if "invalid_citations" in out
                else {}
            ),
            # the numbered contexts the response was written from: [n] is contexts_ids[n-1]
            "contexts_ids": [e["id"] for e in out.get("evidence", [])],
            **counts.stats(),
            "seconds": round(seconds, 3),
            "error": error,
            "evidence": q.evidence,
            "type": q.type,
            "doc": q.doc,
        }

    def ask(self, q: Question) -> dict[str, Any]:
        """One question given directly (``hopgraph ask``): the run folder gets a manifest, the
        trace and the prediction line; no question file is written or read."""
        fresh = manifest(self.agent, None, self.ctx, self.endpoint)
        (self.run_dir / "manifest.json").write_text(json.dumps(fresh, indent=2) + "\n")
        pred = self.run_question(q)
        self.predictions.append(pred)
        return pred

    def run(
        self,
        questions_file: str | Path,
        *,
        limit: int | None = None,
        concurrency: int = 1,
        on_done: Callable[[dict[str, Any], RunSummary], None] | None = None,
        redo: Collection[str] = (),
        max_consecutive_failures: int = MAX_CONSECUTIVE_FAILURES,
    ) -> RunSummary:
        """Answers the questions not finished yet; ``redo`` names finished ones to answer
        afresh (their prediction, trace and checkpoint are dropped first). After
        ``max_consecutive_failures`` failures in a row (0: never) the run stops with
        ``RunAborted``; questions in flight finish and are recorded first."""
        began = time.perf_counter()
        questions_file = Path(questions_file)
        questions, problems = read_questions(questions_file)
        if limit is not None:
            questions = questions[:limit]
        unknown = sorted(set(redo) - {q.id for q in questions})
        if unknown:
            raise RunError(f"--redo names questions not in this run's set: {', '.join(unknown)}")
        self.check_manifest(questions_file)
        summary = RunSummary(self.run_dir, total=len(questions), problems=problems)
        if self.shared is not None:
            if redo:
                raise RunError("--redo is not available on a shared (postgres) run")
            return self._run_shared(questions, concurrency, summary, on_done, began)
        done = read_predictions(self.predictions.path)
        for qid in redo:
            done.pop(qid, None)
            self.saver.delete_thread(self.thread(qid)["configurable"]["thread_id"])
            trace_path(self.run_dir, qid).unlink(missing_ok=True)
        failed_before = {qid for qid, p in done.items() if p.get("error")}
        # keep finished successes; failed questions are retried (from their checkpoint)
        _rewrite(self.predictions.path, [p for qid, p in done.items() if qid not in failed_before])
        todo = [q for q in questions if q.id not in done or q.id in failed_before]
        summary.skipped_done = len(questions) - len(todo)
        pool = ThreadPoolExecutor(max_workers=max(1, concurrency))
        in_a_row, aborted = 0, None
        try:
            futures = [pool.submit(self.run_question, q) for q in todo]
            for future in as_completed(futures):
                if future.cancelled():
                    continue
                pred = future.result()
                self.predictions.append(pred)
                if pred["error"]:
                    summary.failed += 1
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
                ):
                    aborted = RunAborted(
                        f"{in_a_row} questions in a row failed, so the run stopped; the last "
                        f"({pred['id']}): {pred['error']}. Fix the cause and re-run the same "
                        "command: finished questions are kept and the rest resume"
                    )
                    for f in futures:  # the queued ones never start; in-flight ones finish
                        f.cancel()
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
                pred = self.run_question(q)
                if not shared.finish(pred):  # another worker took it over meanwhile
                    continue
                self.predictions.append(pred)
                with lock:
                    summary.failed += bool(pred["error"])
                    summary.finished += not pred["error"]
                if on_done is not None:
                    on_done(pred, summary)

        threads = [threading.Thread(target=work, daemon=True) for _ in range(max(1, concurrency))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # this worker's folder gets every worker's finished lines, so eval reads the whole run
        finished = {q: st["prediction"] for q, st in shared.status().items() if st["done"]}
        _rewrite(self.predictions.path, [finished[q.id] for q in questions if q.id in finished])
        summary.seconds = time.perf_counter() - began
        return summary


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, default=_jsonable) + "\n"


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump()
    if hasattr(value, "__dict__"):
        return {k: v for k, v in vars(value).items() if not k.startswith("_")}
    return str(value)


def trace_path(run_dir: str | Path, qid: str) -> Path:
    """Where a question's trace lives in a run folder (the id made safe as a file name)."""
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in qid)[:120]
    return Path(run_dir) / "traces" / f"{name}.jsonl"
