"""Index a source into the knowledge base in batches, with a report of what happened."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from hopgraph.memory.files import Record, Skipped
from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.memory.sources import detect_format, read_source
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


def _derive(kb: KnowledgeBase, batch: list[Item], derive, report: IndexReport) -> int:
    extra: list[Item] = []
    for item in batch:
        if item.modality != "text" or item.parent:
            continue
        try:
            extra += derive(item)
        except Exception as e:  # one passage's failure must not stop the index
            report.skipped.append(Skipped(f"{item.source or item.id}", f"derivation failed: {e}"))
    stats = kb.add(extra)
    report.embed_seconds += stats.embed_seconds
    report.store_seconds += stats.store_seconds
    return stats.added


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
    on_batch: Callable[[IndexReport], None] | None = None,
) -> IndexReport:
    """Read ``source`` and add its items; already indexed items are counted, not re-embedded.

    Batches are committed as they fill, so an interrupted run keeps what it stored and the next
    run skips it (ids are content-derived). ``derive`` adds items made from each text item
    (MMAPG's triplets); a failure there is reported for that item and the rest goes on.
    ``ocr`` (auto | rapidocr | tesseract | off) reads PDF pages without a text layer and image
    files; its results are cached under the KB folder. Image files also go into the visual space
    when the KB's image embedder (CLIP / SigLIP) has weights here; else a note says so once.
    The settings are recorded with the KB (``builds.jsonl``) before anything is read, so a run's
    manifest names the KB it read and a record never resumes on one built another way."""
    began = time.perf_counter()
    path = Path(source)
    resolved = detect_format(path) if fmt == "auto" and path.exists() else fmt
    report = IndexReport(source=str(path), format=resolved)
    engine = ocr_engine(ocr)
    if engine is None and ocr == "auto":
        report.notes.append("no OCR engine found: pip install rapidocr_onnxruntime")
    kb.record_build(
        {
            "source": path.name,
            "format": resolved,
            "ocr": engine.name if engine is not None else "off",
            "page_pixels": page_pixels if render_pages else 0,
            "limit": limit,
            "derived": derive is not None,
        }
    )
    records = read_source(
        path,
        resolved,
        notes=report.notes,
        pages_dir=(kb.path / "pages") if render_pages else None,
        page_pixels=page_pixels,
        images_dir=Path(images_dir) if images_dir else None,
        ocr=engine,
        ocr_cache=kb.path / "ocr",
    )
    items = _items(records, report.skipped)
    if limit is not None:
        items = itertools.islice(items, limit)
    visual, tried = None, False
    while batch := list(itertools.islice(items, batch_size)):
        stats = kb.add(batch)
        report.added += stats.added
        report.existing += stats.existing
        report.embed_seconds += stats.embed_seconds
        report.store_seconds += stats.store_seconds
        pictures = [it for it in batch if it.modality == "image" and it.path]
        if pictures and not tried:
            visual, tried = _visual_embedder(kb, report), True
        if pictures and visual is not None:
            seen = kb.add_visual(pictures, visual)
            report.visual += seen.added
            report.embed_seconds += seen.embed_seconds
        report.by_modality.update(it.modality for it in batch)
        if derive is not None:
            report.derived += _derive(kb, batch, derive, report)
        report.seconds = time.perf_counter() - began
        if on_batch is not None:
            on_batch(report)
    report.seconds = time.perf_counter() - began
    return report


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
