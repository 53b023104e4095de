"""Index a source into the knowledge base in batches, with a report of what happened."""

from __future__ import annotations

import hashlib
import itertools
import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from hopgraph.memory.files import Record, Skipped
from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.memory.sources import detect_format, source_units
from hopgraph.models.ocr import ocr_engine


@dataclass
class IndexReport:
    source: str
    format: str
    added: int = 0
    existing: int = 0
    derived: int = 0
    visual: int = 0
    """Images embedded into the visual space (the image embedder's)."""
    unchanged: int = 0
    """Sources skipped unread: registered with the same content and settings."""
    replaced: list[str] = field(default_factory=list)
    """Sources whose changed content replaced their old version."""
    vanished: list[str] = field(default_factory=list)
    """Registered sources under the indexed folder that are gone from it (kept)."""
    pruned: list[str] = field(default_factory=list)
    removed: int = 0
    """Items deleted: old versions' leftovers and pruned sources'."""
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    by_modality: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    embed_seconds: float = 0.0
    store_seconds: float = 0.0

    @property
    def items(self) -> int:
        return self.added + self.existing

    def as_dict(self) -> dict:
        return {
            "source": self.source,
            "format": self.format,
            "added": self.added,
            "existing": self.existing,
            "derived": self.derived,
            "visual": self.visual,
            "unchanged": self.unchanged,
            "replaced": self.replaced,
            "vanished": self.vanished,
            "pruned": self.pruned,
            "removed": self.removed,
            "skipped": [{"where": s.where, "reason": s.reason} for s in self.skipped],
            "notes": self.notes,
            "by_modality": dict(self.by_modality),
            "seconds": round(self.seconds, 3),
            "embed_seconds": round(self.embed_seconds, 3),
            "store_seconds": round(self.store_seconds, 3),
        }


def _items(records: Iterable[Record], skipped: list[Skipped]) -> Iterator[Item]:
    for record in records:
        if isinstance(record, Skipped):
            skipped.append(record)
        else:
            yield record


def _derive(
    kb: KnowledgeBase, batch: list[Item], derive, report: IndexReport, key: str, version: str
) -> int:
    extra: list[Item] = []
    for item in batch:
        if item.modality != "text" or item.parent:
            continue
        try:
            extra += derive(item)
        except Exception as e:  # one passage's failure must not stop the index
            report.skipped.append(Skipped(f"{item.source or item.id}", f"derivation failed: {e}"))
    return _store(kb, extra, report, key, version)


def _store(kb: KnowledgeBase, items: list[Item], report: IndexReport, key: str, version: str):
    """Add ``items`` as held by ``version`` of source ``key``: held first, so an item a crash
    leaves stored is never one that no version holds."""
    if kb.registry is not None:
        kb.registry.hold(key, version, [(it.id, it.modality) for it in items])
    stats = kb.add(items, source=key, version=version)
    report.embed_seconds += stats.embed_seconds
    report.store_seconds += stats.store_seconds
    return stats


def _visual_embedder(kb: KnowledgeBase, report: IndexReport):  # noqa: ANN202
    """The KB's image embedder, or None with one note saying why images go without it."""
    from hopgraph.models.embedders import image_embedder
    from hopgraph.models.errors import ModelPackageMissing, ModelWeightsMissing

    if not kb.image_embedder_name:
        return None
    try:
        return image_embedder(kb.image_embedder_name)
    except (ModelWeightsMissing, ModelPackageMissing) as e:
        report.notes.append(f"{e} Images are indexed by their titles, captions and OCR text only.")
        return None


def _version(sha256: str, build: dict) -> str:
    """A source version: its content and the settings it is read with (another OCR engine
    or limit makes other items from the same bytes)."""
    blob = sha256 + json.dumps(build, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def index_source(
    kb: KnowledgeBase,
    source: str | Path,
    fmt: str = "auto",
    *,
    limit: int | None = None,
    batch_size: int = 256,
    images_dir: str | Path | None = None,
    render_pages: bool = True,
    page_pixels: int = 1024 * 28 * 28,
    derive: Callable[[Item], list[Item]] | None = None,
    ocr: str = "auto",
    prune: bool = False,
    on_batch: Callable[[IndexReport], None] | None = None,
) -> IndexReport:
    """Read ``source`` and add its items; already indexed items are counted, not re-embedded.

    Each file (a dataset file, a MultimodalQA folder) is a source of the KB's registry: one
    whose size and mtime, else content hash, and settings are those registered is skipped
    unread; a changed one replaces its old version whole (``memory/registry.py``); one that
    vanished from ``source`` is reported, and removed with ``prune``. Batches are committed as
    they fill, so an interrupted run keeps what it stored, hidden until its source is whole,
    and the next run stores only the rest. ``derive`` adds items made from each text item
    (MMAPG's triplets); a failure there is reported for that item and the rest goes on.
    ``ocr`` (auto | rapidocr | tesseract | off) reads PDF pages without a text layer and image
    files; its results are cached under the KB folder by image bytes. Image files also go into
    the visual space when the KB's image embedder (CLIP / SigLIP) has weights here; else a note
    says so once. The settings are recorded with the KB (``builds.jsonl``) before anything is
    read, so a run's manifest names the KB it read and a record never resumes on one built
    another way."""
    began = time.perf_counter()
    path = Path(source)
    resolved = detect_format(path) if fmt == "auto" and path.exists() else fmt
    report = IndexReport(source=str(path), format=resolved)
    engine = ocr_engine(ocr)
    if engine is None and ocr == "auto":
        report.notes.append("no OCR engine found: pip install rapidocr_onnxruntime")
    build = {
        "format": resolved,
        "ocr": engine.name if engine is not None else "off",
        "page_pixels": page_pixels if render_pages else 0,
        "limit": limit,
        "derived": derive is not None,
    }
    kb.record_build({"source": path.name} | build)
    units = source_units(path, resolved)
    opts = {
        "notes": report.notes,
        "pages_dir": (kb.path / "pages") if render_pages else None,
        "page_pixels": page_pixels,
        "images_dir": Path(images_dir) if images_dir else None,
        "ocr": engine,
        "ocr_cache": kb.path / "ocr",
    }
    registry = kb.registry
    known = {s.path: s for s in registry.sources()} if registry is not None else {}
    kb.collect_garbage()  # what a crash left queued
    left = limit
    visual: list = []
    for unit in units:
        if left is not None and left <= 0:
            break
        size, mtime = unit.stat()
        was = known.get(unit.key)
        if (
            was is not None
            and not was.pending
            and was.complete
            and was.build == build
            and ((was.size, was.mtime_ns) == (size, mtime))
        ):
            report.unchanged += 1
            continue
        sha256 = unit.sha256()
        version = _version(sha256, build)
        if was is not None and not was.pending and was.complete and was.hash == version:
            registry.touch(unit.key, size, mtime)
            report.unchanged += 1
            continue
        if registry is not None:
            registry.begin(unit.key, resolved, version, build)
        failed_before = len(report.skipped)
        items = _items(unit.read(**opts), report.skipped)
        if left is not None:
            items = itertools.islice(items, left)
        count = 0
        while batch := list(itertools.islice(items, batch_size)):
            count += len(batch)
            stats = _store(kb, batch, report, unit.key, version)
            report.added += stats.added
            report.existing += stats.existing
            _add_visual(kb, batch, report, visual, version)
            report.by_modality.update(it.modality for it in batch)
            if derive is not None:
                report.derived += _derive(kb, batch, derive, report, unit.key, version).added
            report.seconds = time.perf_counter() - began
            if on_batch is not None:
                on_batch(report)
        if left is not None:
            left -= count
        if registry is not None and not count and was is None:
            registry.discard(unit.key)  # nothing to hold: read (and reported) again next time
        elif registry is not None:
            kb.keep_shared(unit.key, version)
            underived = any(
                s.reason.startswith("derivation failed") for s in report.skipped[failed_before:]
            )
            registry.commit(unit.key, version, sha256, size, mtime, complete=not underived)
            report.removed += kb.collect_garbage()
            if was is not None and was.hash:
                report.replaced.append(unit.key)
    if registry is not None and resolved in ("folder", "pdf") and path.is_dir() and limit is None:
        root = str(path.resolve())
        here = {u.key for u in units}
        for key in sorted(known):
            if key.startswith(root + "/") and key not in here:
                if prune:
                    report.removed += kb.remove_source(key)
                    report.pruned.append(key)
                else:
                    report.vanished.append(key)
    report.seconds = time.perf_counter() - began
    return report


def _add_visual(kb: KnowledgeBase, batch: list[Item], report: IndexReport, visual: list, version):  # noqa: ANN001
    """Image files into the visual space; the embedder is looked up once (``visual`` keeps it)."""
    pictures = [it for it in batch if it.modality == "image" and it.path]
    if not pictures:
        return
    if not visual:
        visual.append(_visual_embedder(kb, report))
    if visual[0] is not None:
        seen = kb.add_visual(pictures, visual[0], version=version)
        report.visual += seen.added
        report.embed_seconds += seen.embed_seconds


def triplet_items(item: Item, facts: list[list[str]]) -> list[Item]:
    """Each triplet as its own text item (embedded alone, Eq. 2), pointing at its passage."""
    return [
        Item(
            "text",
            f"triplet:{item.id}:{s}|{r}|{o}",
            f"{s} {r} {o}",
            title=item.title,
            source=item.source,
            parent=item.id,
            meta={"triplet": [s, r, o]},
        )
        for s, r, o in facts
    ]
