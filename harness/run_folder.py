"""A run folder, apart from running: ``manifest.json`` (what the run was made with),
``predictions.jsonl`` (one line per finished question, written atomically), ``traces/<qid>.jsonl``
and the counts read from a question's events. The runner writes it; ``eval``, ``trace``,
``results`` and the reports read it."""

from __future__ import annotations

import errno
import hashlib
import importlib.metadata
import json
import logging
import math
import os
import sqlite3
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from typing_extensions import NotRequired, TypedDict

from hopgraph.config import Context
from hopgraph.harness import bounded
from hopgraph.harness.code_fingerprint import code_changes, code_fingerprint
from hopgraph.harness.cost import critical_path_depth
from hopgraph.memory.disk import store_says_full
from hopgraph.memory.evidence import Evidence
from hopgraph.memory.files import Skipped
from hopgraph.models.events import EmptyReply, Fallback, LLMCall, LLMRequest, Retrieval
from hopgraph.prompts import prompts_for
from hopgraph.questions.datasets import FieldSpec, Question, how_made, read_questions
from hopgraph.questions.rebuild import how_to_rebuild
from hopgraph.redaction import (
    command_line,
    masked_known,
    masked_known_bytes,
    redacted,
    remember,
)

log = logging.getLogger(__name__)

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


PREPARE = "benchmarks/prepare_questions.sh"
"""The one script that makes every question file the committed records were run on."""


class RunError(RuntimeError):
    """A run folder cannot be used for this command (another agent or question file)."""


class FolderInUse(RunError):
    """Another local run holds the folder: a second one would answer its questions twice."""


class RunLock:
    """One local run of a folder at a time: an exclusive ``flock`` on ``run.lock``, which names
    its holder (pid and command). The kernel drops it when the holder exits, even by kill -9,
    so a crashed run never blocks the next."""

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / "run.lock"
        self._fd: int | None = None

    def __enter__(self) -> RunLock:
        import fcntl

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
            os.close(fd)
            raise FolderInUse(
                f"{self.path.parent} is in use by another run ({holder or 'a process'}); "
                "wait for it to end or stop it, then re-run to resume (two runs on one "
                "folder would answer every question twice), or use another --out"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}: {command_line()}".encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, *_: object) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing releases the lock
            self._fd = None


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def extends(path: Path, sha256: str) -> bool:
    """Whether the file's first lines are, byte for byte, a file whose sha256 is ``sha256``:
    a longer question file that keeps a record's questions (MMLongBench's second question
    per PDF after the first 24) lets the record grow instead of starting over."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for line in f:
            h.update(line)
            if h.hexdigest() == sha256:
                return True
    return False


def git_revision() -> str:
    """The commit of the checkout hopgraph runs from ("" outside one)."""
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
    return {name: prompts.digest(name) for name in prompts.names()}


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
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
        )
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


def kb_description(ctx: Context) -> dict[str, Any]:
    """The KB a run reads: items per modality, the settings it was indexed with and a digest
    of its sources' versions (``sources``, from its registry); {} where none opens (a graph
    that needs one says why when it runs)."""
    from hopgraph.memory.kb import KnowledgeBase

    try:
        kb = KnowledgeBase.from_context(ctx, must_exist=True)
        sources = {"sources": kb.registry.state()} if kb.registry is not None else {}
        return {"counts": kb.counts(), "builds": kb.builds.settings()} | sources
    except Exception:  # no KB, another embedder's, a server down: the manifest only describes
        return {}


def settings_key(m: Mapping[str, Any], build: list[str] | None = None) -> str:
    """12 hex of what in manifest ``m`` decides answers besides the questions: the Context apart
    from how it is served, the GGUF, the llama.cpp build serving it (``build``: the vector
    extensions it uses, which can change a greedy answer), every template's sha256 and the KB.
    A question's checkpoint thread is tied to it, so a checkpoint left from other settings
    (another KB, an edited template, another build) is never resumed."""
    context = {k: v for k, v in m["context"].items() if k not in Context.serving_fields()}
    settings = {"context": context} | {k: m[k] for k in ("gguf_sha256", "prompts", "kb")}
    if build is not None:
        settings["llama_cpp_build"] = build
    blob = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def settings_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The settings a run is given that differ from its record's: the GGUF and the Context
    apart from its serving fields (``SERVING``)."""
    changes = []
    if old.get("gguf_sha256") and new.get("gguf_sha256") != old["gguf_sha256"]:
        changes.append(f"GGUF {old['gguf_sha256'][:12]} (now {new.get('gguf_sha256', '')[:12]})")
    was, now = old.get("context", {}), new.get("context", {})
    return changes + [
        f"{k}={was[k]!r} (now {now[k]!r})"
        for k in sorted((was.keys() & now.keys()) - Context.serving_fields())
        if was[k] != now[k]
    ]


def record_changes(
    old: Mapping[str, Any], new: Mapping[str, Any], templates: set[str]
) -> list[str]:
    """How a sitting's manifest ``new`` would answer differently from the record's ``old``: the
    Context apart from its serving fields (``SERVING``), the GGUF, the ``templates`` its
    questions used, the KB's items and build settings. [] lets it resume. What an older
    manifest did not record is not compared, nor KB builds that one side does not know."""
    changes = settings_changes(old, new)
    was, now = old.get("prompts", {}), new.get("prompts", {})
    changes += [
        f"template {t} (edited since)"
        for t in sorted(templates & was.keys())
        if now.get(t) != was[t]
    ]
    was, now = old.get("kb") or {}, new.get("kb") or {}
    if was and now and was.get("counts") != now.get("counts"):
        changes.append(f"KB items {was.get('counts')} (now {now.get('counts')})")
    if was.get("builds") and now.get("builds") and was["builds"] != now["builds"]:
        changes.append(f"KB indexed with {was['builds']} (now {now['builds']})")
    if was.get("sources") and now.get("sources") and was["sources"] != now["sources"]:
        changes.append(f"KB sources {was['sources']} (now {now['sources']}: a source changed)")
    return changes


def method_code(agent: str, ctx: Context | None = None) -> dict[str, Any]:
    """The code fingerprint of the agent's graph module (a registered name or a spec; {} for
    one that cannot be found), with the parts ``ctx`` turns on."""
    from hopgraph.graphs import module_of

    try:
        return code_fingerprint(module_of(agent), ctx)
    except ValueError:
        return {}


@dataclass
class QuestionSet:
    """A question file read once: its questions, the lines it could not read, and what a
    manifest names it by (its path and content hash). The runner takes it as it is."""

    path: Path
    questions: list[Question]
    problems: list[Skipped]
    sha256: str
    fields: FieldSpec = FieldSpec()
    """The columns that differ from ``Question``'s fields (the manifest keeps them)."""

    @classmethod
    def read(cls, path: str | Path, fields: FieldSpec | None = None) -> QuestionSet:
        path, fields = Path(path), fields or FieldSpec()
        questions, problems = read_questions(path, fields)
        return cls(path, questions, problems, _sha256(path), fields)

    def first(self, n: int | None) -> list[Question]:
        return self.questions if n is None else self.questions[:n]


class Manifest(TypedDict):
    """``manifest.json``: what a run folder was made with (``manifest``), each sitting's
    settings appended (``RunFolder.record_sitting``). Read through ``RunFolder.manifest``; a
    record made before a field existed lacks it (hence ``NotRequired``)."""

    agent: str
    questions: str
    """The question file's path, or "(asked)" for ``hopgraph ask``."""
    questions_sha256: str
    questions_made: NotRequired[str]
    questions_fields: NotRequired[dict[str, str]]
    """The question file's columns named other than ``Question``'s fields (``--fields``)."""
    context: dict[str, Any]
    """The Context's fields as ``Context.as_dict`` records them (secrets redacted)."""
    endpoint: str
    model: str
    gguf_sha256: str
    prompts: dict[str, str]
    """Template name -> sha256 of its source."""
    kb: dict[str, Any]
    code: dict[str, Any]
    git_revision: str
    versions: dict[str, str]
    command: str
    machine: dict[str, Any]
    created: str
    resumed: NotRequired[int]
    """How many sittings resumed it."""
    sittings: NotRequired[list[dict[str, Any]]]
    extends: NotRequired[list[str]]
    """The shorter question files it grew from (scoring reads gold from the longest)."""
    engine: NotRequired[dict[str, Any]]
    """The embedded engine that served it (name, llama.cpp revision, slots): replies to
    concurrent requests on parallel slots can differ from run to run (RESULTS says how much)."""


def manifest(agent: str, questions: QuestionSet | None, ctx: Context, endpoint: str) -> Manifest:
    """What a run folder was made with; ``questions`` None: a question asked directly."""
    made = how_made(questions.path, questions.sha256) if questions else ""
    out: Manifest = {
        "agent": agent,
        "questions": str(questions.path) if questions else "(asked)",
        "questions_sha256": questions.sha256 if questions else "",
        "context": ctx.as_dict(),
        "endpoint": redacted(endpoint),
        "model": ctx.model,
        "gguf_sha256": _gguf_sha256(ctx),
        "prompts": prompt_hashes(ctx),
        "kb": kb_description(ctx),
        "code": method_code(agent, ctx),
        "git_revision": git_revision(),
        "versions": _versions(),
        "command": command_line(),
        "machine": machine(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    if made:
        out["questions_made"] = made
    if questions and questions.fields.names:
        out["questions_fields"] = questions.fields.as_dict()
    if not ctx.base_url:
        from hopgraph.models.llama_server import engine_description

        out["engine"] = engine_description(ctx)
    return out


# -- predictions file -------------------------------------------------------------------------
class DiskFull(OSError):
    """The disk (or the user's quota) filled while a run wrote a file: named with that file and
    what it holds. What was written before it is whole; re-running resumes."""


FULL = (errno.ENOSPC, errno.EDQUOT)


@contextmanager
def writing(path: str | Path, what: str):  # noqa: ANN201 - a context manager
    """Writes to ``path`` (``what`` it holds) inside this block: a full disk there raises
    ``DiskFull`` naming them, not a bare ``[Errno 28]``; SQLite's "database or disk is full"
    too."""
    try:
        yield
    except (OSError, sqlite3.OperationalError) as e:
        full = as_disk_full(e, path, what)
        if full is None or full is e:
            raise
        raise full from e


def as_disk_full(e: BaseException, path: str | Path, what: str) -> OSError | None:
    """``e`` as a ``DiskFull`` naming ``path`` and ``what`` where a full disk is behind it (an
    ``OSError`` ENOSPC / EDQUOT, SQLite's "database or disk is full"); None where not."""
    if isinstance(e, DiskFull):
        return e
    full = disk_full(e)
    if full is None and not store_says_full(e):
        return None
    return DiskFull(errno.ENOSPC, f"no space left on the device writing {what}", str(path))


def disk_full(e: BaseException) -> OSError | None:
    """The full-disk error behind ``e`` (itself, or one it was raised from or during), or
    None: a pool refusing new work after a write failed hides the write's error there."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [e]
    while todo:
        cause = todo.pop()
        if cause is None or id(cause) in seen:
            continue
        seen.add(id(cause))
        if isinstance(cause, DiskFull) or (isinstance(cause, OSError) and cause.errno in FULL):
            return cause
        todo += [cause.__cause__, cause.__context__]
    return None


def read_predictions(path: Path) -> dict[str, dict[str, Any]]:
    """Finished predictions by id, each line checked against ``Prediction`` as it is read. A
    line that cannot be read (cut short by a crash mid-write) or whose fields have the wrong
    type (``"seconds": "slow"``) is left out with a warning naming its line and why: its
    question counts as unanswered until the run is re-run, which answers it again and rewrites
    the file without that line; the other lines are read as they are."""
    out: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return out
    text = bounded.read_text(path, errors="replace")
    for number, line in enumerate(text.splitlines(), 1):
        try:
            obj = json.loads(line, parse_constant=_not_finite)
        except ValueError as e:  # not JSON, or NaN / Infinity
            why = str(e)
        else:
            if not (why := prediction_problem(obj)):
                out.setdefault(obj["id"], obj)
                continue
        log.warning(
            "%s:%d is unreadable (%s) and left out: its question counts as unanswered. "
            "Re-running the run (the same `hopgraph run` command) answers it again and repairs "
            "the file",
            path,
            number,
            why,
        )
    return out


def _not_finite(word: str) -> float:
    raise ValueError(f"a number is {word}, not a finite number")


def prediction_problem(obj: Any) -> str:
    """Why ``obj`` is not a prediction line ("" when it is one): an object with a string
    ``id`` whose every field that ``Prediction`` names has that field's type (a number where a
    count is, a list of ids where ids are); fields of older layouts it does not name pass."""
    if not isinstance(obj, dict):
        return f"a line is a JSON object, not {type(obj).__name__}"
    if not isinstance(obj.get("id"), str) or not obj["id"]:
        return "it has no string id"
    checks = _prediction_fields()
    for key, value in obj.items():
        check = checks.get(key)
        if check is None:
            continue
        try:
            check.validate_python(value, strict=True)
        except ValueError:
            return f"{key} is {json.dumps(value)[:40]}, not {_type_name(check)}"
        if wrong := _out_of_range(key, value):
            return wrong
    return ""


SAFE_INT = 2**53
"""The largest integer every JSON reader holds exactly (a count past it is no count)."""


def _out_of_range(key: str, value: Any) -> str:
    """Why a typed field's number is no count or duration ("" where it is one): an integer past
    ``SAFE_INT`` or an infinite float anywhere in it, or a negative top-level count."""
    numbers = list(leaves(value))
    for n in numbers:
        if isinstance(n, int) and not isinstance(n, bool) and abs(n) > SAFE_INT:
            return f"{key} holds {str(n)[:24]}, past the range of a count"
        if isinstance(n, float) and not math.isfinite(n):  # 1e400 reads as infinity
            return f"{key} holds {n}, not a finite number"
    if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
        return f"{key} is {value}, a negative count"
    return ""


def leaves(value: Any) -> Iterator[Any]:
    """Every value inside nested dicts and lists that is neither (keys aside)."""
    if isinstance(value, dict):
        for v in value.values():
            yield from leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from leaves(v)
    else:
        yield value


@lru_cache(maxsize=1)
def _prediction_fields() -> dict[str, Any]:
    """A pydantic check of each ``Prediction`` field's type (``cited`` is not written)."""
    from typing import get_type_hints

    from pydantic import TypeAdapter

    hints = get_type_hints(Prediction)
    return {key: TypeAdapter(hint) for key, hint in hints.items() if key != "cited"}


def _type_name(check: Any) -> str:
    return str(check.core_schema.get("type", "the type it has")).replace("_", " ")


def scored_predictions(run_dir: str | Path) -> dict[str, dict[str, Any]]:
    """A run's predictions with each question's text and gold answers joined back from the
    question file its manifest names (prediction lines hold no dataset text, so a run folder
    can be committed as a result record). Lines written before that carry their own gold."""
    run_dir = Path(run_dir)
    preds = read_predictions(run_dir / "predictions.jsonl")
    if all("gold" in p for p in preds.values()):
        return preds
    man = RunFolder(run_dir).manifest()
    if man is None:
        raise RunError(f"{run_dir} has predictions but no manifest.json naming its questions")
    qfile = question_file(run_dir, str(man.get("questions", "")), man.get("questions_sha256"))
    if not qfile.is_file() or _sha256(qfile) != man.get("questions_sha256"):
        raise RunError(
            f"scoring {run_dir} needs its question file {qfile} (sha256 "
            f"{str(man.get('questions_sha256'))[:12]}…), "
            + ("which has other content" if qfile.is_file() else "which is not here")
            + "; "
            + (
                how_to_rebuild(str(man.get("questions", "")), run_dir.resolve())
                or "re-create it with "
                + (
                    f"the command that made it: {man['questions_made']}"
                    if man.get("questions_made")
                    else f"`hopgraph data convert` from the benchmark's file ({PREPARE} makes "
                    "every question file the committed records need from ../shared/data)"
                )
            )
        )
    questions = {
        q.id: q for q in read_questions(qfile, FieldSpec.of(man.get("questions_fields")))[0]
    }
    sittings = man.get("sittings") or []
    for qid, p in preds.items():
        q = questions.get(qid)
        if q is not None and "gold" not in p:
            p |= {"question": q.question, "gold": q.answers}
        if "speed" not in p and (speed := sitting_of(p, sittings).get("speed")):
            p["speed"] = speed
    return preds


def sitting_of(pred: dict[str, Any], sittings: list[dict[str, Any]]) -> dict[str, Any]:
    """The sitting (an entry of a manifest's ``sittings``) that answered ``pred``: the one it
    names, or, for a line written before answers named it, the one whose timed speed it
    carries; {} when neither says."""
    at = pred.get("sitting")
    if isinstance(at, int) and 0 <= at < len(sittings):
        return sittings[at]
    speed = pred.get("speed")
    return next((s for s in reversed(sittings) if speed and s.get("speed") == speed), {})


def question_file(run_dir: Path, name: str, sha256: str | None, rebuild: bool = True) -> Path:
    """The question file a manifest names: ``name`` as written (from where the command runs),
    else a relative ``name`` under a folder above the run folder (the repository a record is
    committed in, wherever ``view`` or ``eval`` was started), the first with its content; else,
    with ``rebuild``, the same file re-made from the benchmark data it came from
    (``questions/rebuild.py``: a fresh clone with ``../shared/data`` beside it)."""
    named = Path(name)
    if not name:
        return named
    if named.is_absolute() and (not named.is_file() or _sha256(named) == sha256):
        return named
    for where in [Path.cwd(), *run_dir.resolve().parents]:
        candidate = where / named
        if candidate.is_file() and _sha256(candidate) == sha256:
            return candidate
    if rebuild and sha256:
        from hopgraph.questions.rebuild import rebuilt

        made = rebuilt(name, sha256, run_dir.resolve())
        if made is not None:
            return made
    return named


def _rewrite(path: Path, keep: list[dict[str, Any]]) -> None:
    lines = "".join(json.dumps(obj, ensure_ascii=False) + "\n" for obj in keep)
    write_whole(path, lines, "the prediction log")


def write_whole(path: Path, text: str, what: str) -> None:
    """``path`` replaced whole by ``text`` (``what`` it holds) through a file beside it: a stop
    mid-write loses nothing, and a full disk raises ``DiskFull`` naming ``path`` and leaves no
    partial file behind."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with writing(path, what), open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class Counts(TypedDict):
    """A question's counts, read from its trace's events (``EventCounts.stats``)."""

    llm_calls: int
    lost_calls: NotRequired[int]
    """Calls in flight when a sitting was killed (sent, no reply recorded)."""
    replayed_calls: NotRequired[int]
    prompt_tokens: int
    completion_tokens: int
    fallbacks: int
    empty_replies: int
    cache_hits: NotRequired[int]
    cached_tokens: NotRequired[int]
    """Tokens of the calls the response cache answered (counted in the totals, never sent)."""
    cached_completion_tokens: NotRequired[int]
    budget_stops: NotRequired[int]
    """1 where the question's token cap (``max_question_tokens``) stopped its method early."""
    depth: int
    retrieved: list[str]
    by_template: dict[str, dict[str, float]]
    """Per prompt template: calls, prompt and completion tokens, LLM seconds and, where the
    server reports its timings (llama-server), ``waited_s`` before a slot took the call and
    ``prompt_reused`` tokens taken from its cache."""
    summary: NotRequired[dict[str, Any]]


class Prediction(Counts):
    """One answered question: a line of ``predictions.jsonl``. Ids, outputs and counts only, no
    question, gold or passage text from a dataset, so a run folder can be committed as a result
    record (eval reads the gold from the question file). ``cited``, the cited contexts whole,
    lives in memory only (``hopgraph ask`` shows them; the line keeps their ids)."""

    id: str
    answer: str
    response: str
    citations: list[str]
    """Ids of the contexts the response cites."""
    invalid_citations: NotRequired[list[int]]
    contexts_ids: list[str]
    """The numbered contexts the response was written from: [n] is ``contexts_ids[n-1]``."""
    cited: NotRequired[list[Evidence]]
    seconds: float
    sitting: NotRequired[int]
    """The manifest's sitting that answered it (its index in ``sittings``), whose record holds
    the endpoint's timed rates and llama.cpp build."""
    speed: NotRequired[dict[str, float]]
    """The sitting's rates, on lines written before the sitting was timed after its answers."""
    code: str
    """The method's code fingerprint: a table shows if its columns mix them."""
    error: str | None
    gold_evidence: list[str]
    """The question's gold evidence ids (lines before 2026-11-25 name them ``evidence``)."""
    type: str
    doc: str


def gold_evidence(pred: dict[str, Any]) -> list[str]:
    """A prediction line's gold evidence ids, whichever name its line gives them."""
    return pred.get("gold_evidence", pred.get("evidence")) or []


class PredictionLog:
    """Appends one whole line per write, flushed and fsynced, under a lock."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()

    def append(self, obj: Prediction | dict[str, Any]) -> None:
        line = {k: v for k, v in obj.items() if k != "cited"}  # the line keeps ids, not text
        if line.get("error"):  # an error body may echo a header or a key=value
            line["error"] = redacted(str(line["error"]))
        text = masked_known(json.dumps(line, ensure_ascii=False, default=str))
        data = (text + "\n").encode("utf-8")
        with self._lock, writing(self.path, "a prediction line"):
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)


# -- traces --------------------------------------------------------------------------------------
class EventCounts:
    """LLM calls, tokens, fallbacks, retrieved ids and the method's ``run_summary``, counted
    from a question's events as they stream (or from a trace a resumed question already has).

    A question resumed after its process was killed has several sittings (a ``start`` record
    each). Its calls are those the endpoint received: every call that came back, once, and
    every request whose reply never came (``lost``: its ``llm_request`` has no ``llm_call`` in
    its sitting). A call that came back in one sitting and was sent again in a later one (its
    node ran again from the last checkpoint) is ``replayed``: counted (the endpoint answered
    it twice) and named in the question's ``resume_marks`` record."""

    def __init__(self) -> None:
        self.fallbacks = self.empty = self.cache_hits = self.budget_stops = 0
        self.cached_tokens = self.cached_completion = 0
        self.intervals: list[tuple[float, float]] = []
        self.templates: dict[str, dict[str, float]] = {}
        """Per prompt template: calls, prompt and completion tokens, seconds (where a
        question's tokens and time go); the question's totals are their sums."""
        self.retrieved: dict[str, None] = {}
        self.summary: dict[str, Any] = {}
        self.sittings: list[tuple[Counter[str], Counter[str], Counter[str]]] = [
            (Counter(), Counter(), Counter())
        ]
        """Per sitting, by request key: the requests sent, the calls that came back from the
        endpoint, and those the response cache answered."""

    @classmethod
    def of(cls, records: list[dict[str, Any]]) -> EventCounts:
        """The counts of a question's trace records (every sitting's, for a resumed one)."""
        counts = cls()
        for n, rec in enumerate(records):
            if rec.get("mode") == "start" and n:
                counts.sittings.append((Counter(), Counter(), Counter()))
            elif rec.get("mode") == "custom":
                counts.add(rec.get("data"))
        return counts

    def marks(self) -> dict[str, list[str]]:
        """By request key: the calls a resume made again (``replayed``; ``recached`` where
        the response cache answered the second time, no new call), and those lost in flight."""
        out: dict[str, list[str]] = {"replayed": [], "recached": [], "lost": []}
        earlier: Counter[str] = Counter()
        for n, (sent, back, hits) in enumerate(self.sittings):
            later = sum((b + h for _, b, h in self.sittings[n + 1 :]), Counter())
            out["replayed"] += [
                k for k, c in (back + hits).items() for _ in range(min(c, later[k]))
            ]
            out["recached"] += [k for k, c in hits.items() for _ in range(min(c, earlier[k]))]
            out["lost"] += [k for k, c in sent.items() for _ in range(max(0, c - back[k]))]
            earlier += back + hits
        return out

    def add(self, event: Any) -> None:
        if not isinstance(event, dict):
            return
        kind = event.get("event")
        if kind == LLMRequest.event:
            self.sittings[-1][0][event.get("request", "")] += 1
        elif kind == LLMCall.event:
            extra = event.get("extra") or {}
            if extra.get("request"):
                self.sittings[-1][2 if extra.get("cached") else 1][extra["request"]] += 1
            tally = self.templates.setdefault(
                event.get("template") or "?",
                {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0},
            )
            tally["calls"] += 1
            if extra.get("cached"):
                self.cache_hits += 1
                self.cached_tokens += event.get("prompt_tokens", 0)
                self.cached_tokens += event.get("completion_tokens", 0)
                self.cached_completion += event.get("completion_tokens", 0)
            tally["prompt_tokens"] += event.get("prompt_tokens", 0)
            tally["completion_tokens"] += event.get("completion_tokens", 0)
            tally["seconds"] += event.get("latency_s", 0.0)
            served: dict[str, Any] = (
                extra["served"] if isinstance(extra.get("served"), dict) else {}
            )
            for key, name in (("queued_s", "waited_s"), ("prompt_reused", "prompt_reused")):
                if isinstance(served.get(key), int | float):  # the server's own account
                    tally[name] = tally.get(name, 0) + served[key]
            if event.get("started"):
                self.intervals.append((event["started"], event["started"] + event["latency_s"]))
        elif kind == Fallback.event:  # a role's output, replaced by its declared fallback
            self.fallbacks += 1
        elif kind == "budget_stop":  # the question's token cap ended the method early
            self.budget_stops += 1
        elif kind == EmptyReply.event:
            self.empty += 1
        elif kind == Retrieval.event:
            self.retrieved.update(dict.fromkeys(event.get("ids", [])))
        elif kind == "run_summary":  # a method's own counts (MMAPG's loop, MAB-DQA's HRRA)
            self.summary = {k: v for k, v in event.items() if k != "event"}

    def stats(self) -> Counts:
        def total(key: str) -> int:
            return int(sum(t[key] for t in self.templates.values()))

        marks = self.marks()
        out: Counts = {
            "llm_calls": total("calls") + len(marks["lost"]) - len(marks["recached"]),
            "prompt_tokens": total("prompt_tokens"),
            "completion_tokens": total("completion_tokens"),
            "fallbacks": self.fallbacks,
            "empty_replies": self.empty,
            "depth": critical_path_depth(self.intervals),
            "retrieved": list(self.retrieved),
            "by_template": {
                name: {**t, "seconds": round(t["seconds"], 3)}
                | ({"waited_s": round(t["waited_s"], 3)} if "waited_s" in t else {})
                for name, t in sorted(self.templates.items())
            },
        }
        if marks["lost"]:
            out["lost_calls"] = len(marks["lost"])
        if marks["replayed"]:
            out["replayed_calls"] = len(marks["replayed"])
        if self.cache_hits:
            out["cache_hits"] = self.cache_hits
        if self.cached_tokens:
            out["cached_tokens"] = self.cached_tokens
        if self.cached_completion:
            out["cached_completion_tokens"] = self.cached_completion
        if self.budget_stops:
            out["budget_stops"] = self.budget_stops
        if self.summary:
            out["summary"] = self.summary
        return out


def _line(obj: dict[str, Any]) -> str:
    """A trace record's line, with any known secret value (the key sent) masked."""
    return masked_known(json.dumps(obj, ensure_ascii=False, default=_jsonable)) + "\n"


def remember_keys(ctx: Context) -> None:
    """The keys a run sends (``api_key``), masked by value in everything it writes: a reply or
    an error body that echoes one reaches no prediction, trace or checkpoint."""
    if ctx.api_key not in ("", "EMPTY"):
        remember(ctx.api_key)


class MaskingSerde:
    """A checkpointer's serializer whose every write has the known secret values overwritten
    (``masked_known_bytes``: same length, so the encoding stays readable)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        kind, data = self.inner.dumps_typed(obj)
        return kind, masked_known_bytes(data) if isinstance(data, bytes) else data

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        return self.inner.loads_typed(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump()
    if hasattr(value, "__dict__"):
        return {k: v for k, v in vars(value).items() if not k.startswith("_")}
    return str(value)


def trace_records(path: str | Path) -> list[dict[str, Any]]:
    """A question's trace records ([] for none): its packed part (``<qid>.jsonl.gz``, its
    finished sittings) then its open part (``<qid>.jsonl``, a sitting being written); a line
    cut short by a crash is skipped, and of a damaged file what can be read is read
    (``read_trace_checked`` also says what was not)."""
    return read_trace_checked(path)[0]


def read_trace_checked(path: str | Path) -> tuple[list[dict[str, Any]], list[str]]:
    """``trace_records``'s records and what was damaged: a packed part cut short or not gzip
    (read as far as it decompresses), bytes that are not UTF-8, lines that are not JSON."""
    import zlib

    path, damaged = Path(path), []
    texts = []
    try:
        if packed(path).exists():
            try:
                raw, whole = bounded.inflate(bounded.read_bytes(packed(path)), packed(path).name)
                if not whole:
                    damaged.append(f"{packed(path).name} is cut short (read {len(raw):,} bytes)")
            except zlib.error as e:
                raw = b""
                damaged.append(f"{packed(path).name} is not a gzip file ({e})")
            texts.append(_utf8(raw, packed(path).name, damaged))
        if path.exists():
            texts.append(_utf8(bounded.read_bytes(path), path.name, damaged))
    except ValueError as e:  # too large, or not a regular file: not read at all
        return [], [*damaged, str(e)]
    if len(texts) == 2 and texts[0].endswith(texts[1]):  # packed, then a crash kept the open part
        texts.pop()
    records, bad, last_bad = [], 0, False
    lines = "\n".join(texts).splitlines()
    for line in lines:
        try:
            records.append(json.loads(line))
            last_bad = False
        except json.JSONDecodeError:
            bad += line.strip() != ""
            last_bad = line.strip() != ""
    if bad > 1 or (bad and not last_bad):  # more than a last line a crash cut short
        damaged.append(f"{bad} of {len(lines)} lines are not JSON records")
    return records, damaged


def _utf8(raw: bytes, name: str, damaged: list[str]) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        damaged.append(f"{name} holds bytes that are not UTF-8 (replaced)")
        return raw.decode("utf-8", "replace")


_SAFE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_.")


def trace_name(qid: str) -> str:
    """A question's trace file name, one per id: the id itself where it is short and made of
    lower-case letters, digits and ``-_.`` only (most benchmarks' ids); else its safe
    characters cut to 80 and ``~`` with its hash, so ``col/1``, ``col_1`` and ``COL_1`` (on a
    case-blind disk), or two long ids alike in their first 120 characters, never share one."""
    if qid and len(qid) <= 120 and set(qid) <= _SAFE and qid not in {".", ".."}:
        return qid
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in qid)
    return f"{safe[:80]}~{hashlib.sha256(qid.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"


def trace_path(run_dir: str | Path, qid: str) -> Path:
    """Where a question's trace is written in a run folder (``trace_name``); once the question
    ends it is packed beside it (``packed``). Read it with ``trace_records``. A record written
    before names were one per id keeps its traces under the old name, found there."""
    path = Path(run_dir) / "traces" / f"{trace_name(qid)}.jsonl"
    if not has_trace(path):
        legacy = "".join(c if c.isalnum() or c in "-_." else "_" for c in qid)[:120]
        old = path.with_name(f"{legacy}.jsonl")
        if old != path and _started_by(old) == qid:  # its own, not another id's it shared
            return old
    return path


def _started_by(path: Path) -> str | None:
    """The question id a trace's first line (its ``start`` row) names, None without one."""
    import gzip

    try:
        if path.exists():
            with path.open(encoding="utf-8") as f:
                first = f.readline()
        elif packed(path).exists():
            with gzip.open(packed(path), "rt", encoding="utf-8") as f:
                first = f.readline()
        else:
            return None
        return json.loads(first)["data"]["id"]
    except (OSError, ValueError, KeyError, TypeError, EOFError):
        return None


def packed(path: Path) -> Path:
    """The compressed form of a trace file: ``<qid>.jsonl.gz``."""
    return Path(f"{path}.gz")


def has_trace(path: Path) -> bool:
    return path.exists() or packed(path).exists()


def pack_trace(path: Path) -> None:
    """Compress a question's trace once it ends (what a result record commits: about a tenth
    of the size), joining what an earlier sitting packed; written whole, then the open part
    removed: a crash in between leaves both, read and packed once (``trace_records``)."""
    import gzip

    if not path.exists():
        return
    done = (
        bounded.inflate(bounded.read_bytes(packed(path)), packed(path).name)[0].decode("utf-8")
        if packed(path).exists()
        else ""
    )
    tail = path.read_text(encoding="utf-8")
    text = done if done.endswith(tail) else done + tail  # a crash after packing, before unlink
    tmp = Path(f"{packed(path)}.tmp")
    try:
        with writing(packed(path), "a question's packed trace"):
            tmp.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, packed(path))
    path.unlink()


def trace_ids(run_dir: str | Path) -> list[Path]:
    """Each question's trace path in a run folder (packed or open), by file name."""
    folder = Path(run_dir) / "traces"
    names = {p.name.removesuffix(".gz") for p in folder.glob("*.jsonl*") if p.suffix != ".tmp"}
    return [folder / n for n in sorted(names)]


class RunFolder:
    """A run folder, the one owner of its files: ``manifest.json`` (read, written, the checks
    that refuse a sitting, the sittings), ``predictions.jsonl`` (``predictions``), the traces
    and the lock a local run holds."""

    MANIFEST = "manifest.json"
    """The file that makes a folder a run folder."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.predictions = PredictionLog(self.path / "predictions.jsonl")

    def make(self) -> RunFolder:
        """The folder and its traces folder, for a run that writes to it."""
        (self.path / "traces").mkdir(parents=True, exist_ok=True)
        return self

    @property
    def name(self) -> str:
        return self.path.resolve().name

    def manifest(self) -> Manifest | None:
        """What the run was made with, None before its first sitting."""
        path = self.path / self.MANIFEST
        return json.loads(bounded.read_text(path)) if path.exists() else None

    def time_sitting(self, index: int, speed: dict[str, float]) -> None:
        """The endpoint's rates, timed once sitting ``index``'s questions were answered, written
        into that sitting of the manifest."""
        m = self.manifest()
        sittings = m.get("sittings", []) if m is not None else []
        if m is not None and 0 <= index < len(sittings):
            sittings[index]["speed"] = speed
            self.write_manifest(m)

    def write_manifest(self, m: Manifest) -> None:
        (self.path / self.MANIFEST).write_text(json.dumps(m, indent=2) + "\n")

    @property
    def metrics_path(self) -> Path:
        return self.path / "metrics.json"

    def metrics(self) -> dict[str, Any] | None:
        """``metrics.json`` as ``hopgraph eval`` last wrote it (None: never, or unreadable)."""
        try:
            return json.loads(bounded.read_text(self.metrics_path))
        except (OSError, ValueError):
            return None

    def write_metrics(self, result: dict[str, Any]) -> None:
        """``metrics.json`` replaced whole: a stop mid-write loses nothing."""
        write_whole(self.metrics_path, json.dumps(result, indent=2), "the run's metrics")

    def done(self) -> dict[str, dict[str, Any]]:
        """The finished predictions by id (failed ones included, with their error)."""
        return read_predictions(self.predictions.path)

    def keep(self, preds: list[dict[str, Any]]) -> None:
        """Rewrite the prediction log with ``preds`` only (a sitting drops the lines of the
        questions it asks again)."""
        _rewrite(self.predictions.path, preds)

    def trace(self, qid: str) -> Path:
        return trace_path(self.path, qid)

    def forget(self, qid: str) -> None:
        """A question's trace, packed or not (``--redo`` answers it afresh)."""
        self.trace(qid).unlink(missing_ok=True)
        packed(self.trace(qid)).unlink(missing_ok=True)

    def lock(self) -> RunLock:
        return RunLock(self.path)

    def check(
        self, fresh: Manifest, *, sitting: bool = True, accept_code_change: bool = False
    ) -> Manifest | None:
        """Refuses a folder of another agent or question file and, where this sitting has
        questions to answer (``sitting``), one answered with other settings or other method
        code (unless ``accept_code_change``); returns the manifest the sitting will write
        (``record_sitting``), ``fresh`` carrying the record's history, None when it has nothing
        to do (a finished record re-run by its script must not churn)."""
        old = self.manifest()
        if old is not None:
            if old.get("agent") != fresh["agent"]:
                raise RunError(
                    f"{self.path} holds a run of agent {old.get('agent')!r}, not {fresh['agent']!r}"
                )
            grows = old.get("questions_sha256") != fresh["questions_sha256"]
            if grows and not extends(Path(fresh["questions"]), old.get("questions_sha256", "")):
                raise RunError(
                    f"{self.path} was run on another question file "
                    f"({old.get('questions')}); use a new --out folder (a file that starts "
                    "with that one's lines, unchanged, would extend it)"
                )
            # a finished record is refused other settings too (its code and templates may have
            # moved on: a script re-running it to score it must not fail)
            changes = settings_changes(old, fresh)
            if sitting:
                done = self.done().values()
                used = {t for p in done for t in p.get("by_template", {})} or {
                    t for t in old.get("prompts", {}) if t.startswith(f"{fresh['agent']}/")
                }  # records older than by_template: the agent's own templates
                changes = record_changes(old, fresh, used)
            code = fresh.get("code") or {}
            if sitting and not accept_code_change and code:
                if not old.get("code"):
                    changes.append("the method's code (the record predates code fingerprints)")
                elif old["code"].get("fingerprint") != code.get("fingerprint"):
                    edited = code_changes(old["code"], code)
                    changes.append(f"the method's code: {', '.join(edited)}")
            if changes:
                raise RunError(
                    f"{self.path} was answered with other settings than this run's: "
                    + "; ".join(changes)
                    + ". Its questions would mix them: use a new --out folder, or run with "
                    "the record's settings (--accept-code-change extends it across a code "
                    "change, and the results pages then flags its table)"
                )
            if not sitting:
                return None
            fresh["created"] = old.get("created", fresh["created"])
            fresh["resumed"] = old.get("resumed", 0) + 1
            fresh["sittings"] = old.get("sittings", [])
            # the shorter files it grew from (scoring reads gold from the longest, which holds all)
            extended = old.get("extends", []) + ([old.get("questions", "")] if grows else [])
            if extended:
                fresh["extends"] = extended
        return fresh if sitting else None

    def record_sitting(self, fresh: Manifest, build: list[str] | None) -> None:
        """Write the manifest with this sitting appended: its revision, machine, command, code
        fingerprint and, where known, the llama.cpp build (CPU features) that answers it (its
        speed comes once its questions are answered: ``time_sitting``)."""
        fresh.setdefault("sittings", []).append(
            {k: fresh[k] for k in ("git_revision", "machine", "command")}
            | {"code": (fresh.get("code") or {}).get("fingerprint", "")}
            | {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
            | ({"llama_cpp_build": build} if build is not None else {})
        )
        self.write_manifest(fresh)
