"""Index a source into the knowledge base in batches, with a report of what happened."""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeGuard

from hopgraph.memory.files import Failed, Record, Skipped
from hopgraph.memory.garbage import collect_garbage, keep_shared, remove_source
from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.memory.registry import Source, SourceRegistry
from hopgraph.memory.sources import (
    LINK_OUT,
    SourceUnit,
    detect_format,
    source_units,
    walk_folder,
)
from hopgraph.memory.visual import VisualSpace
from hopgraph.models.ocr import ocr_engine

log = logging.getLogger(__name__)


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
    copied: dict[str, str] = field(default_factory=dict)
    """Of those vanished or pruned: a source still on disk elsewhere whose copy (the same
    content at the same path inside its folder) is indexed here, to that copy's path (a KB
    copied with its corpus and indexed at the copy)."""
    removed: int = 0
    """Items deleted: old versions' leftovers and pruned sources'."""
    skipped: list[Skipped] = field(default_factory=list)
    """What could not be used, and why; ``Failed`` ones are whole sources (``failed``)."""
    notes: list[str] = field(default_factory=list)
    by_modality: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    embed_seconds: float = 0.0
    store_seconds: float = 0.0

    @property
    def items(self) -> int:
        return self.added + self.existing

    @property
    def failed(self) -> list[Failed]:
        """Whole sources that could not be read: damaged, cut short, unreadable."""
        return [s for s in self.skipped if isinstance(s, Failed)]

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
            "copied": self.copied,
            "removed": self.removed,
            "skipped": [{"where": s.where, "reason": s.reason} for s in self.skipped],
            "failed": [s.where for s in self.failed],
            "notes": self.notes,
            "by_modality": dict(self.by_modality),
            "seconds": round(self.seconds, 3),
            "embed_seconds": round(self.embed_seconds, 3),
            "store_seconds": round(self.store_seconds, 3),
        }


def _unreadable(unit: SourceUnit, e: OSError) -> Failed:
    return Failed(str(unit.path), f"cannot read {e.filename or unit.path}: {e.strerror or e}")


def _items(records: Iterable[Record], skipped: list[Skipped]) -> Iterator[Item]:
    for record in records:
        if isinstance(record, Skipped):
            skipped.append(record)
        else:
            yield record


Owner = tuple[str, str]
"""A registered source's key and the version of it being written."""


def _derive(
    kb: KnowledgeBase, batch: list[tuple[Item, Owner]], derive, report: IndexReport
) -> tuple[int, set[str]]:
    """Items made from each text item (MMAPG's triplets), held by its source; returns how many
    were added and the sources for which a derivation failed."""
    extra: list[tuple[Item, Owner]] = []
    failed: set[str] = set()
    for item, owner in batch:
        if item.modality != "text" or item.parent:
            continue
        try:
            extra += [(it, owner) for it in derive(item)]
        except Exception as e:  # one passage's failure must not stop the index
            report.skipped.append(Skipped(f"{item.source or item.id}", f"derivation failed: {e}"))
            failed.add(owner[0])
    return _store(kb, extra, report).added, failed


def _store(kb: KnowledgeBase, batch: list[tuple[Item, Owner]], report: IndexReport):
    """Add the items, each as held by its source's version: held first, so an item a crash
    leaves stored is never one that no version holds."""
    if kb.registry is not None:
        by_owner: dict[Owner, list[tuple[str, str]]] = {}
        for it, owner in batch:
            by_owner.setdefault(owner, []).append((it.id, it.modality))
        for (key, version), pairs in by_owner.items():
            kb.registry.hold(key, version, pairs)
    stats = kb.add([it for it, _ in batch], owners={it.id: owner for it, owner in batch})
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
    worker: str = "",
    lease_seconds: float = 60.0,
    follow_links: bool = False,
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
    another way.

    Several indexers (processes, machines) may index one KB at once: each source it reads is
    leased to one of them (``worker``, renewed while it reads, released at its commit), so a
    source is read once; one another indexer holds is tried again when the rest is done, and
    taken over when its lease (``lease_seconds``) runs out unrenewed (the holder died). A
    source leased with other build settings is refused (``LeaseConflict``).

    A file under a folder that a link leads to outside it is skipped and listed, unless
    ``follow_links``: a corpus folder says what may be served from it."""
    return _Indexer(
        kb,
        Path(source),
        fmt,
        limit=limit,
        batch_size=batch_size,
        images_dir=images_dir,
        render_pages=render_pages,
        page_pixels=page_pixels,
        derive=derive,
        ocr=ocr,
        on_batch=on_batch,
        worker=worker,
        lease_seconds=lease_seconds,
        follow_links=follow_links,
    ).run(prune)


class _Indexer:
    """One ``index_source`` call: its build settings, the buffer of items to store, the sources
    read whole and waiting for their last items, and this indexer's leases."""

    def __init__(
        self,
        kb: KnowledgeBase,
        path: Path,
        fmt: str,
        *,
        limit: int | None,
        batch_size: int,
        images_dir,
        render_pages: bool,
        page_pixels: int,
        derive,
        ocr: str,
        on_batch,
        worker: str,
        lease_seconds: float,
        follow_links: bool,
    ):  # noqa: ANN001
        self.began = time.perf_counter()
        self.kb, self.path, self.batch_size = kb, path, batch_size
        self.resolved = detect_format(path) if fmt == "auto" and path.exists() else fmt
        self.report = IndexReport(source=str(path), format=self.resolved)
        engine = ocr_engine(ocr)
        if engine is None and ocr == "auto":
            self.report.notes.append("no OCR engine found: pip install rapidocr_onnxruntime")
        self.build = {
            "format": self.resolved,
            "ocr": engine.name if engine is not None else "off",
            "page_pixels": page_pixels if render_pages else 0,
            "limit": limit,
            "derived": derive is not None,
        }
        kb.builds.record({"source": path.name} | self.build)
        self.units = source_units(path, self.resolved, follow_links)
        self.unreadable: list[str] = []
        if path.is_dir() and self.resolved in ("folder", "pdf"):
            walked = walk_folder(path, follow_links)
            self.report.skipped += [Skipped(str(f), LINK_OUT) for f in walked.outside]
            self.report.skipped += walked.unusable
            self.unreadable = [str(f.resolve()) for f in walked.unreadable]
        self.opts = {
            "notes": self.report.notes,
            "pages_dir": (kb.path / "pages") if render_pages else None,
            "page_pixels": page_pixels,
            "images_dir": Path(images_dir) if images_dir else None,
            "ocr": engine,
            "ocr_cache": kb.path / "ocr",
        }
        self.registry = kb.registry
        self.known = {s.path: s for s in self.registry.sources()} if self.registry else {}
        collect_garbage(kb)  # what a crash left queued
        self.derive, self.on_batch, self.left = derive, on_batch, limit
        self.visual: list = []
        self.buffer: list[tuple[Item, Owner]] = []
        self.read: list[_Pending] = []  # read whole, waiting for their last items to be stored
        self.underived: set[str] = set()
        self.lease = Lease(self.registry, worker or worker_id(), self.build, lease_seconds)

    def run(self, prune: bool) -> IndexReport:
        """Every source unit once (those another indexer holds when the rest is done: theirs
        when they commit, ours if they die), then what vanished from the folder."""
        try:
            held = [
                u
                for u in self.units
                if (self.left is None or self.left > 0) and not self.index_unit(u)
            ]
            while held:
                self.flush()
                time.sleep(min(2.0, self.lease.seconds / 4))
                self.lease.renew()
                held = [u for u in held if not self.index_unit(u)]
            self.flush()
        except (KeyboardInterrupt, SystemExit):  # Ctrl-C, SIGTERM: keep what was read whole
            self.keep_whole()
            self.lease.give_up()
            raise
        except BaseException:  # the engine or the registry lost: stored stays hidden
            self.lease.give_up()
            raise
        self.vanished(prune)
        self.report.seconds = time.perf_counter() - self.began
        return self.report

    def keep_whole(self) -> None:
        """On an interrupt, the sources read whole before it are stored and committed, and only
        the one being read stays hidden, so a re-run reads just the rest (up to a batch of
        sources was lost). A second interrupt, or a failure here, leaves them hidden as before."""
        whole = {p.key for p in self.read}
        self.buffer[:] = [b for b in self.buffer if b[1][0] in whole]
        try:
            self.flush()
        except Exception as e:  # noqa: BLE001 - the interrupt is what the caller hears
            log.warning("an interrupted index could not keep its finished sources: %s", e)

    def flush(self) -> None:
        """Store the buffered items (one embedding batch across sources), then commit every
        source read whole: its items are all stored now."""
        kb, report, registry = self.kb, self.report, self.registry
        if self.buffer:
            stats = _store(kb, self.buffer, report)
            report.added += stats.added
            report.existing += stats.existing
            _add_visual(kb, self.buffer, report, self.visual)
            report.by_modality.update(it.modality for it, _ in self.buffer)
            if self.derive is not None:
                added, failed = _derive(kb, self.buffer, self.derive, report)
                report.derived += added
                self.underived.update(failed)
            self.buffer.clear()
        if registry is not None:
            for done in self.read:
                self.commit(done, registry)
        if self.read and registry is not None:
            report.removed += collect_garbage(kb)
        self.read.clear()
        report.seconds = time.perf_counter() - self.began
        if self.on_batch is not None:
            self.on_batch(report)

    def commit(self, done: _Pending, registry: SourceRegistry) -> None:
        """A source read whole and stored: its version goes live (a source that gave nothing
        and was never indexed is left unregistered, read and reported next time)."""
        if not done.count and done.was is None:
            registry.discard(done.key)
        else:
            keep_shared(self.kb, done.key, done.version)
            registry.commit(
                done.key,
                done.version,
                done.sha256,
                done.size,
                done.mtime,
                complete=done.key not in self.underived,
            )
            if done.was is not None and done.was.hash:
                self.report.replaced.append(done.key)
        self.lease.release(done.key)

    def index_unit(self, unit: SourceUnit) -> bool:
        """Read one source into the buffer (or find it unchanged); False where another indexer
        holds it now (it is tried again once the others are done)."""
        registry, lease, report = self.registry, self.lease, self.report
        try:
            size, mtime = unit.stat()
            was = self.known.get(unit.key)
            if not _fresh(was, self.build, size, mtime):
                if not lease.claim(unit.key):
                    return False
                was = registry.get(unit.key) if registry is not None else None  # as it is now
            if _fresh(was, self.build, size, mtime):
                report.unchanged += 1
                lease.release(unit.key)
                return True
            sha256 = unit.sha256()
        except OSError as e:  # unreadable (permissions, an I/O error): this source alone fails
            report.skipped.append(_unreadable(unit, e))
            lease.release(unit.key)
            return True
        version = _version(sha256, self.build)
        if registry is not None and _live(was) and was.hash == version:
            registry.touch(unit.key, size, mtime)
            report.unchanged += 1
            lease.release(unit.key)
            return True
        self.read_unit(unit, _Pending(unit.key, version, sha256, size, mtime, was))
        return True

    def read_unit(self, unit: SourceUnit, pending: _Pending) -> None:
        """A changed or new source's items into the buffer, registered (hidden) at its first
        item; one that failed keeps its earlier version, if any, as it was."""
        report, registry = self.report, self.registry
        failures, begun = len(report.failed), registry is None
        try:
            items = _items(unit.read(**self.opts), report.skipped)
            left = self.left
            for item in itertools.islice(items, left) if left is not None else items:
                # registered once it gives an item: a failed source gives none
                if registry is not None and not begun:
                    registry.begin(unit.key, self.resolved, pending.version, self.build)
                    begun = True
                self.buffer.append((item, (unit.key, pending.version)))
                pending.count += 1
                self.lease.renew()
                if len(self.buffer) >= self.batch_size:
                    self.flush()
        except OSError as e:
            report.skipped.append(_unreadable(unit, e))
        if self.left is not None:
            self.left -= pending.count
        if len(report.failed) > failures:
            self.buffer[:] = [b for b in self.buffer if b[1][0] != unit.key]
            self.lease.release(unit.key)
            return
        # read whole, it gave nothing: that replaces it
        if registry is not None and not begun and pending.was is not None:
            registry.begin(unit.key, self.resolved, pending.version, self.build)
        self.read.append(pending)

    def _copies(self, root: str, here: set[str]) -> dict[str, str]:
        """Registered sources outside this folder, still on disk, whose content is indexed
        here at the same path inside the folder (``old/docs/a.pdf`` and ``new/docs/a.pdf``):
        the KB was copied with its corpus, and the old path is the original's, not this KB's."""
        if self.registry is None:
            return {}
        now = {s.path: s.sha256 for s in self.registry.sources()}
        by_tail = {(k[len(root) :], now.get(k)): k for k in here if now.get(k)}
        out = {}
        for key, was in self.known.items():
            if key in here or key.startswith(root + "/") or not was.sha256:
                continue
            if not Path(key).exists():  # moved, not copied: reported as no longer on disk
                continue
            for tail in (key[i:] for i, c in enumerate(key) if c == "/"):
                if (tail, was.sha256) in by_tail:
                    out[key] = by_tail[tail, was.sha256]
                    break
        return out

    def vanished(self, prune: bool) -> None:
        """Registered sources of an indexed folder that are gone from it, and any registered
        source no longer on disk (the KB was moved or copied away from the files it was
        indexed from): reported, or with ``prune`` removed. What lies under a folder that
        could not be listed is neither (that folder is a failed source)."""
        path, report = self.path, self.report
        folder = self.resolved in ("folder", "pdf") and path.is_dir()
        if self.registry is None or not folder or self.build["limit"] is not None:
            return  # a limited read does not see the whole folder
        root = str(path.resolve())
        here = {u.key for u in self.units}
        copies = self._copies(root, here)
        unknown = tuple(d.rstrip("/") + "/" for d in self.unreadable)
        for key in sorted(self.known):  # gone from this folder, or from disk wherever it was
            if key.startswith(unknown):
                continue  # under a folder that could not be listed: not known to be gone
            inside = key.startswith(root + "/")  # (a KB moved or copied with its corpus)
            if key in copies:
                report.copied[key] = copies[key]
            if key not in here and (inside or key in copies or not Path(key).exists()):
                if prune:
                    report.removed += remove_source(self.kb, key)
                    report.pruned.append(key)
                else:
                    report.vanished.append(key)


def _live(was: Source | None) -> TypeGuard[Source]:
    """A registered source whose live version is whole (none pending, none missing)."""
    return was is not None and not was.pending and was.complete


def _fresh(was: Source | None, build: dict, size: int, mtime: int) -> bool:
    """Registered whole with these settings, size and mtime: skipped unread."""
    return _live(was) and was.build == build and (was.size, was.mtime_ns) == (size, mtime)


def worker_id() -> str:
    """This indexer's name in the registry's leases: host, process and a random tag."""
    import os
    import socket
    import uuid

    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class LeaseConflict(ValueError):
    """Another indexer holds a source of this KB with other build settings."""


class Lease:
    """This indexer's leases on the sources it reads (``SourceRegistry.claim``); a KB with no
    registry leases nothing."""

    def __init__(self, registry, worker: str, build: dict, seconds: float):  # noqa: ANN001
        self.registry, self.worker, self.seconds = registry, worker, seconds
        self.build = json.dumps(build, sort_keys=True)
        self.renewed = time.monotonic()
        self.held: set[str] = set()

    def claim(self, key: str) -> bool:
        if self.registry is None:
            return True
        holder = self.registry.claim(key, self.worker, self.build, self.seconds)
        if holder is None:
            self.held.add(key)
            return True
        if holder[1] != self.build:
            raise LeaseConflict(
                f"{key} is being indexed by {holder[0]} with other settings ({holder[1]}; "
                f"these: {self.build}): index one KB with one set of settings at a time"
            )
        return False

    def renew(self) -> None:
        """Extend this indexer's leases, a third of a lease at most after the last time."""
        if self.registry is not None and time.monotonic() - self.renewed > self.seconds / 3:
            self.registry.renew(self.worker, self.seconds)
            self.renewed = time.monotonic()

    def release(self, key: str) -> None:
        if self.registry is not None:
            self.registry.release(key, self.worker)
            self.held.discard(key)

    def give_up(self) -> None:
        """Release what this indexer holds as it stops on an error, so a re-run need not wait
        out the leases (where the registry itself is lost, they run out instead)."""
        for key in list(self.held):
            try:
                self.release(key)
            except Exception:  # noqa: BLE001 - the error that stopped the index is the news
                return


@dataclass
class _Pending:
    """A source read whole, committed once its items are stored."""

    key: str
    version: str
    sha256: str
    size: int
    mtime: int
    was: Source | None
    count: int = 0


def _add_visual(
    kb: KnowledgeBase, batch: list[tuple[Item, Owner]], report: IndexReport, visual: list
) -> None:
    """Image files into the visual space; the embedder is looked up once (``visual`` keeps it)."""
    pictures = [(it, owner) for it, owner in batch if it.modality == "image" and it.path]
    if not pictures:
        return
    if not visual:
        visual.append(_visual_embedder(kb, report))
    if visual[0] is not None:
        versions = {it.id: owner[1] for it, owner in pictures}
        seen = VisualSpace(kb).add([it for it, _ in pictures], visual[0], versions=versions)
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
