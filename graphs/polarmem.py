"""PolarMem's pathways, where its store (`memory/polarmem.py`) meets its roles
(`agents/polarmem.py`): the visual and knowledge pathways that fill the memory, recall with query
parsing, and the LangChain tools ``memory_ingest_text``, ``memory_ingest_image``,
``memory_recall``, ``memory_stats`` and ``memory_forget`` that any agent (or graph) can call."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hopgraph.agents import polarmem as roles
from hopgraph.config import Context, MethodSpec, knobs_of
from hopgraph.memory.evidence import Evidence, evidence
from hopgraph.memory.polarmem import (
    AddReport,
    Observation,
    PolarMemory,
    Recalled,
    normalize_concept,
)
from hopgraph.memory.sources import chunk_paragraphs
from hopgraph.models import StructuredOutputError
from hopgraph.models.events import Step, emit
from hopgraph.runtime import ProcessCache, process_cache
from hopgraph.settings.polarmem import PolarMemSettings
from hopgraph.tools.polarmem import Partition, partition

SPEC = MethodSpec(
    "polarmem",
    "recalls verified-present and verified-absent facts from the memory, logic first",
    settings=(PolarMemSettings,),
    needs=("logprobs / P(Yes)", "image input"),
    image_needs=(),
    code="hopgraph.graphs.polarmem",
    switch="polar_memory",
)
"""PolarMem as a part: its verifier rests on P(Yes) and its visual pathway always reads images;
its code counts in a graph's fingerprint only when ``polar_memory`` is on."""


log = logging.getLogger(__name__)
_memories: ProcessCache[tuple, PolarMemory] = process_cache("memories", PolarMemory.close)


def polar_memory(ctx: Context) -> PolarMemory:
    """The process-wide memory at ``ctx.polar_dir``."""
    key = (
        str(Path(knobs_of(ctx, PolarMemSettings).polar_dir).expanduser().resolve()),
        ctx.text_embedder,
    )
    return _memories.get(key, lambda: PolarMemory.from_context(ctx))


# -- pathways --------------------------------------------------------------------------------
def ingest_text(
    text: str,
    ctx: Context,
    *,
    source: str = "",
    present: Sequence[str] = (),
    absent: Sequence[str] = (),
    skip_stored: bool = False,
) -> AddReport:
    """The knowledge pathway (Sec. 3.2.2, Eq. 7): chunks, and each chunk's entities by the LLM
    with the polarity the text states: asserted present (HAS), asserted absent (NOT_HAS) or
    merely mentioned (MENTIONS, which constrains no recall). ``present`` / ``absent`` are facts
    the caller asserts about the text as a whole; they win over the LLM's reading. Every edge
    records where its polarity came from. ``skip_stored`` leaves chunks the memory already
    holds alone, before any LLM call (a re-run resumes)."""
    chunks = chunk_paragraphs(text)
    if not chunks:
        raise ValueError(f"no text to store (source {source!r} is empty)")
    memory = polar_memory(ctx)
    observations = [Observation(kind="text", content=chunk, source=source) for chunk in chunks]
    held = memory.stored([o.id for o in observations]) if skip_stored else set()
    todo = [o for o in observations if o.id not in held]
    for o in todo:
        _set_polarities(o, roles.extract_entities(o.content, ctx), ctx.model)
        for names, polarity in ((present, "HAS"), (absent, "NOT_HAS")):
            for name in names:
                _assert(o, name, polarity, "asserted by the caller")
    report = memory.add(todo)
    report.skipped = len(held)
    return report


@dataclass
class IngestSummary:
    stored: int = 0
    skipped: int = 0
    """Texts the memory already held (a re-run resumes)."""
    failed: int = 0


def ingest_sources(
    sources: list[Path],
    ctx: Context,
    *,
    present: Sequence[str] = (),
    absent: Sequence[str] = (),
    caption: str = "",
    limit: int = 0,
    on_progress: Callable[[str, str], None] = lambda kind, message: None,
) -> IngestSummary:
    """Images through the visual pathway, every text record of any other source (what
    ``hopgraph index`` reads; at most ``limit`` per source, 0: all) through the knowledge
    pathway. A source or text that fails is reported (``on_progress("failed", ...)``) and the
    rest go on; ``on_progress`` also hears of each image stored, each record skipped and each
    source read."""
    from hopgraph.memory.files import IMAGE_SUFFIXES, Skipped
    from hopgraph.memory.polarmem import PolarMemoryError
    from hopgraph.memory.sources import read_source, read_text_file
    from hopgraph.models.errors import HopgraphModelError

    done = IngestSummary()
    bad = (HopgraphModelError, PolarMemoryError, ValueError, OSError)
    for path in sources:
        try:
            if path.suffix.lower() in IMAGE_SUFFIXES:
                p = ingest_image(path, ctx, caption=caption).partition
                on_progress(
                    "image",
                    f"{path.name}: has {p.has}, not_has {p.not_has}, uncertain "
                    f"{p.uncertain} (tau {p.tau:.3f}, delta {p.delta:.3f})",
                )
                done.stored += 1
                continue
            texts = 0
            text_file = path.suffix.lower() in (".txt", ".md")
            for rec in read_text_file(path) if text_file else read_source(path):
                if isinstance(rec, Skipped) or rec.modality == "image":
                    where = rec.where if isinstance(rec, Skipped) else rec.source
                    on_progress("skipped", f"skipped {where}")
                    continue
                texts += 1
                name = rec.title or rec.source
                try:
                    report = ingest_text(
                        rec.text, ctx, source=name, present=present, absent=absent, skip_stored=True
                    )
                    done.stored += report.added + report.updated
                    done.skipped += report.skipped
                except bad as e:
                    done.failed += 1
                    on_progress("failed", f"{path} ({name}): {e}")
                if limit and texts >= limit:
                    break
            on_progress("read", f"{path}: {texts} text(s) read")
        except bad as e:
            done.failed += 1
            on_progress("failed", f"{path}: {e}")
    return done


def _set_polarities(o: Observation, entities: list[roles.Entity], model: str) -> None:
    for e in entities:
        if e.polarity == "mentioned":
            o.mentions.append(e.name)
            o.edge_provenance[normalize_concept(e.name)] = f"mentioned in the text ({model})"
        else:
            state = "HAS" if e.polarity == "present" else "NOT_HAS"
            _assert(o, e.name, state, f"asserted {e.polarity} in the text ({model})")


def _assert(o: Observation, name: str, state: str, why: str) -> None:
    """``name`` as HAS or NOT_HAS (score 1), replacing any other polarity the chunk gave it."""
    c = normalize_concept(name)
    if not c:
        return
    for group in (o.has, o.not_has):
        for other in [n for n in group if normalize_concept(n) == c]:
            del group[other]
    o.mentions = [m for m in o.mentions if normalize_concept(m) != c]
    (o.has if state == "HAS" else o.not_has)[name] = 1.0
    o.edge_provenance[c] = why


@dataclass
class ImageIngest:
    report: AddReport
    partition: Partition
    proposed: list[str] = field(default_factory=list)


def ingest_image(path: str | Path, ctx: Context, *, caption: str = "") -> ImageIngest:
    """The visual pathway (Sec. 3.2.1): the VLM proposes concepts, verifies each over an
    ensemble of wordings (Eq. 4), and the Otsu split with anchors and margin (Eq. 5-6) sorts
    them into HAS / NOT_HAS / uncertain."""
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"no image at {file}")
    roles.need_vlm(ctx)
    proposed = roles.propose_concepts(file, ctx, caption)
    scores = roles.verify_concepts(file, proposed, ctx) if proposed else {}
    split = partition(scores, knobs_of(ctx, PolarMemSettings).polar_kappa)
    emit(
        Step(
            "concept_partition",
            {
                "image": str(file),
                "tau": round(split.tau, 4),
                "delta": round(split.delta, 4),
                "scores": {c: round(s, 4) for c, s in scores.items()},
                "has": split.has,
                "not_has": split.not_has,
                "uncertain": split.uncertain,
            },
        )
    )
    obs = Observation(
        kind="image",
        content=caption or f"image {file.name}",
        source=file.name,
        path=str(file),
        key=hashlib.sha1(file.read_bytes()).hexdigest(),
        has={c: split.scores[c] for c in split.has},
        not_has={c: split.scores[c] for c in split.not_has},
        uncertain={c: split.scores[c] for c in split.uncertain},
        provenance=(
            f"verified by {ctx.vlm_model} over "
            f"{knobs_of(ctx, PolarMemSettings).polar_templates} wordings; "
            f"tau={split.tau:.3f} delta={split.delta:.3f}"
        ),
    )
    return ImageIngest(polar_memory(ctx).add([obs]), split, proposed)


# -- recall ----------------------------------------------------------------------------------
@dataclass
class Recall:
    items: list[Recalled]
    positive: list[str]
    negative: list[str]
    mode: str
    note: str = ""
    """Why the recall is not what was asked (a fallback), else empty."""

    def evidence(self) -> str:
        return "\n".join(r.evidence() for r in self.items) or "(nothing recalled)"


def recall(
    query: str,
    ctx: Context,
    *,
    k: int | None = None,
    mode: str | None = None,
    positive: list[str] | None = None,
    negative: list[str] | None = None,
) -> Recall:
    """Algorithm 1 with the query parsed by the LLM (unless Q+ / Q- are given), or vanilla
    similarity. A parsed concept that is not in the query is dropped (a small model echoes
    words the request never used); a query left with no concept falls back to similarity; a
    concept both wanted and excluded constrains nothing. Each is logged and noted."""
    mode = mode or knobs_of(ctx, PolarMemSettings).polar_recall
    k = k or knobs_of(ctx, PolarMemSettings).polar_top_k
    note = ""
    pos, neg = list(positive or []), list(negative or [])
    if mode == "logic" and positive is None and negative is None:
        try:
            parsed = roles.parse_query(query, ctx)
            pos, neg = _grounded(parsed.positive, query), _grounded(parsed.negative, query)
            loose = sorted({*parsed.positive, *parsed.negative} - {*pos, *neg})
            if loose:  # a small model may answer with words the request never used
                note = f"parsed concepts not in the query were dropped: {', '.join(loose)}"
                log.warning("memory recall %r: %s", query, note)
        except StructuredOutputError as e:
            note = f"query parsing failed ({e}); similarity recall"
    both = _overlap(pos, neg)
    if both:
        pos = [c for c in pos if normalize_concept(c) not in both]
        neg = [c for c in neg if normalize_concept(c) not in both]
        note = _join(
            note, f"concepts both wanted and excluded were dropped: {', '.join(sorted(both))}"
        )
        log.warning("memory recall %r: %s", query, note)
    if mode == "logic" and not (pos or neg):
        mode = "vanilla"
        note = _join(note, "no concept of the query was parsed; similarity recall")
        log.warning("memory recall %r: %s", query, note)
    items = polar_memory(ctx).recall(query, pos, neg, k=k, mode=mode)
    emit(
        Step(
            "memory_recall",
            {
                "query": query,
                "mode": mode,
                "positive": pos,
                "negative": neg,
                "note": note,
                "ids": [r.id for r in items],
                "s_log": [r.s_log for r in items],
                "s_sem": [round(r.s_sem, 4) for r in items],
            },
        )
    )
    return Recall(items, pos, neg, mode, note)


def _join(note: str, more: str) -> str:
    return f"{note}; {more}" if note else more


def _grounded(concepts: list[str], query: str) -> list[str]:
    """The parsed concepts whose every word stands in the query (plural or singular)."""
    words = set(normalize_concept(query).split()) | set(query.lower().split())
    words |= {normalize_concept(w) for w in words}
    return [
        c
        for c in concepts
        if normalize_concept(c) and all(w in words for w in normalize_concept(c).split())
    ]


def _overlap(pos: list[str], neg: list[str]) -> set[str]:
    return ({normalize_concept(c) for c in pos} & {normalize_concept(c) for c in neg}) - {""}


def memory_candidates(query: str, ctx: Context) -> list[Evidence]:
    """Recalled memories as Evidence, their text the Fact Check line, for graphs that take
    them as extra evidence (``polar_memory`` in the Context)."""
    return [
        evidence(
            f"memory:{r.id}",
            r.evidence(),
            score=r.s_sem,
            source=r.source,
            path=r.path,
            provenance={"s_log": r.s_log},
        )
        for r in recall(query, ctx).items
    ]


# -- LangChain tools -------------------------------------------------------------------------
def memory_tools(ctx: Context) -> list:
    """The memory tools bound to ``ctx``; each returns text an agent can read."""
    from langchain_core.tools import StructuredTool

    def memory_ingest_text(
        text: str,
        source: str = "",
        present: list[str] | None = None,
        absent: list[str] | None = None,
    ) -> str:
        """Store a text in the memory. Optionally list things the text asserts are present
        or absent."""
        report = ingest_text(text, ctx, source=source, present=present or [], absent=absent or [])
        return json.dumps(asdict(report))

    def memory_ingest_image(path: str, caption: str = "") -> str:
        """Store an image: its concepts are proposed and verified by the VLM and kept as
        present, absent or uncertain."""
        done = ingest_image(path, ctx, caption=caption)
        p = done.partition
        return json.dumps(
            {
                "has": p.has,
                "not_has": p.not_has,
                "uncertain": p.uncertain,
                "tau": round(p.tau, 4),
                "delta": round(p.delta, 4),
                **asdict(done.report),
            }
        )

    def memory_recall(query: str, k: int = 0) -> str:
        """Recall memories for a query; state exclusions in words ("... but no cars").
        Returns one [Fact Check: STATUS] line per memory."""
        return recall(query, ctx, k=k or None).evidence()

    def memory_stats() -> str:
        """Counts of memories, concepts and edges."""
        return json.dumps(polar_memory(ctx).stats())

    def memory_forget(ids: list[str]) -> str:
        """Forget memories by id: their edges and vectors go, and they are never stored again."""
        return json.dumps({"forgotten": polar_memory(ctx).forget(ids)})

    return [
        StructuredTool.from_function(fn)
        for fn in (
            memory_ingest_text,
            memory_ingest_image,
            memory_recall,
            memory_stats,
            memory_forget,
        )
    ]
