"""Readers that turn corpus files into knowledge-base ``Item``s.

Each reader yields ``Item``s and, for anything it cannot use, a ``Skipped`` naming where and why;
one bad file, line or page never stops the rest. Ids come from ``memory.ids``, file reading from
``memory.files``.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from hopgraph.memory.files import (
    IMAGE_SUFFIXES,
    TEXT_SUFFIXES,
    Failed,
    Record,
    Skipped,
    load_json,
    read_jsonl,
)
from hopgraph.memory.ids import (
    _sha1_file,
    image_key,
    mmqa_key,
    mmqa_row_key,
    page_key,
    passage_key,
)
from hopgraph.memory.kb import Item
from hopgraph.models.ocr import OcrEngine, OcrText, read_image_text

FORMATS = ("folder", "pdf", "hotpotqa", "musique", "multimodalqa")


def row_sentence(title: str, header: list[str], row: list[str], index: int) -> str:
    """A table row as one sentence (MMAPG App. A.5: table rows are embedded as sentences)."""
    cells = "; ".join(f"{h} is {v}" for h, v in zip(header, row, strict=False) if str(v).strip())
    return f"{title}, row {index + 1}: {cells}." if title else f"Row {index + 1}: {cells}."


# -- HotpotQA / MuSiQue -------------------------------------------------------------------------
def passage(title: str, text: str, source: str = "") -> Item:
    return Item("text", passage_key(title, text), text, title=title, source=source or title)


def read_hotpotqa(path: Path, **_: Any) -> Iterator[Record]:
    """A corpus (``{title: sentences|text}`` or ``[{title, text}]``) or distractor questions
    (their ``context`` paragraphs)."""
    try:
        data = load_json(path)
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as e:
        yield Skipped(str(path), f"not a HotpotQA JSON file: {e}")
        return
    if isinstance(data, dict):
        for title, body in data.items():
            text = "".join(body) if isinstance(body, list) else str(body)
            yield passage(title, text)
        return
    for n, entry in enumerate(data):
        if isinstance(entry, dict) and "context" in entry:
            for title, sentences in entry["context"]:
                yield passage(title, "".join(sentences))
        elif isinstance(entry, dict) and "title" in entry and "text" in entry:
            text = entry["text"]
            yield passage(entry["title"], "".join(text) if isinstance(text, list) else text)
        else:
            yield Skipped(f"{path}[{n}]", "entry has neither context nor title/text")


def read_musique(path: Path, **_: Any) -> Iterator[Record]:
    """MuSiQue JSONL: every question's ``paragraphs``."""
    for obj in read_jsonl(path):
        if isinstance(obj, Skipped):
            yield obj
            continue
        for para in obj.get("paragraphs", []):
            yield passage(para.get("title", ""), para.get("paragraph_text", ""))


# -- MultimodalQA ---------------------------------------------------------------------------------
def _mmqa_file(root: Path, stem: str) -> Path | None:
    for name in (f"{stem}.jsonl.gz", f"{stem}.jsonl"):
        if (root / name).is_file():
            return root / name
    return None


def read_multimodalqa(
    path: Path, *, images_dir: Path | None = None, notes: list[str] | None = None, **_: Any
) -> Iterator[Record]:
    """``MMQA_texts``, ``MMQA_tables`` and ``MMQA_images`` (.jsonl or .jsonl.gz) in a folder,
    or one such file. Images are embedded by their title unless an image folder holds them."""
    root = path if path.is_dir() else path.parent
    only = None if path.is_dir() else path.name.split(".")[0]
    notes = notes if notes is not None else []
    found = False
    texts = _mmqa_file(root, "MMQA_texts")
    if texts and only in (None, "MMQA_texts"):
        found = True
        for obj in read_jsonl(texts):
            if isinstance(obj, Skipped):
                yield obj
                continue
            yield Item(
                "text",
                mmqa_key(obj["id"]),
                obj.get("text", ""),
                title=obj.get("title", ""),
                source=obj["id"],
                meta={"url": obj.get("url", "")},
            )
    tables = _mmqa_file(root, "MMQA_tables")
    if tables and only in (None, "MMQA_tables"):
        found = True
        for obj in read_jsonl(tables):
            if isinstance(obj, Skipped):
                yield obj
                continue
            table = obj.get("table", {})
            header = [h.get("column_name", "") for h in table.get("header", [])]
            title = obj.get("title", "")
            for r, row in enumerate(table.get("table_rows", [])):
                cells = [c.get("text", "") for c in row]
                yield Item(
                    "table",
                    mmqa_row_key(obj["id"], r),
                    row_sentence(title, header, cells, r),
                    title=title,
                    source=obj["id"],
                    meta={"row": r},
                )
    images = _mmqa_file(root, "MMQA_images")
    if images and only in (None, "MMQA_images"):
        found = True
        with_files = 0
        for obj in read_jsonl(images):
            if isinstance(obj, Skipped):
                yield obj
                continue
            file = images_dir / obj.get("path", "") if images_dir else None
            has_file = file is not None and file.is_file()
            with_files += has_file
            yield Item(
                "image",
                mmqa_key(obj["id"]),
                obj.get("title", ""),
                title=obj.get("title", ""),
                source=obj["id"],
                path=str(file) if has_file else "",
                meta={"url": obj.get("url", ""), "content": "title" if not has_file else "file"},
            )
        if not with_files:
            notes.append(
                "MultimodalQA images are indexed by title only: no image files were given "
                "(--images DIR); image examination will rely on titles"
            )
    if not found:
        yield Skipped(str(path), "no MMQA_texts / MMQA_tables / MMQA_images .jsonl(.gz) here")


# -- PDFs ------------------------------------------------------------------------------------------
MIN_TEXT_CHARS = 20  # a text layer shorter than this (a page number, a logo) is OCR'd


class OcrFailed(RuntimeError):
    """The OCR engine failed on one image; the item keeps its other text."""


def ocr_text(ocr: OcrEngine | None, image: bytes, cache: Path | None = None) -> OcrText | None:
    """OCR of an encoded image, remembered in ``cache`` by the image's hash and the engine, so
    re-indexing a source does not read its pages again."""
    if ocr is None:
        return None
    file = None
    if cache is not None:
        digest = hashlib.sha1(image).hexdigest()[:20]
        file = cache / f"{re.sub(r'[^A-Za-z0-9.-]', '_', ocr.name)}-{digest}.txt"
        if file.is_file():
            text = file.read_text(encoding="utf-8")
            return OcrText(text, ocr.name) if text else None
    try:
        found = read_image_text(ocr, image)
    except Exception as e:  # an engine's failure on one image costs that image's OCR only
        raise OcrFailed(f"OCR ({ocr.name}) failed: {type(e).__name__}: {str(e)[:200]}") from e
    if file is not None:
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(found.text if found else "", encoding="utf-8")
    return found


def with_ocr(layer: str, ocr: str) -> str:
    """A page's text from its short text layer and its OCR: the OCR alone where it already
    holds the layer's words (a page number, a title), else both."""
    if " ".join(layer.split()).lower() in " ".join(ocr.split()).lower():
        return ocr
    return f"{layer}\n{ocr}".strip()


def read_pdf(
    path: Path,
    *,
    pages_dir: Path | None = None,
    page_pixels: int = 1024 * 28 * 28,
    ocr: OcrEngine | None = None,
    ocr_cache: Path | None = None,
    notes: list[str] | None = None,
    **_: Any,
) -> Iterator[Record]:
    """Each page as a ``page`` item: its text layer, or OCR of the rendered page where that layer
    is (nearly) empty and an engine is given, and with ``pages_dir`` the page rendered to PNG
    within ``page_pixels``. OCR'd pages name their engine in ``meta["ocr"]``."""
    import pymupdf

    notes = notes if notes is not None else []
    try:
        doc: Any = pymupdf.open(path)  # its Document declares no iteration over pages
    except Exception as e:  # pymupdf raises its own FileDataError and friends
        yield Failed(str(path), f"not a readable PDF: {e}")
        return
    with doc:
        if doc.needs_pass:
            yield Failed(str(path), "PDF is encrypted")
            return
        if not len(doc):  # PyMuPDF "repairs" a file cut short into a document of no page
            why = (
                "damaged (cut short?): PyMuPDF repaired it to 0 pages"
                if doc.is_repaired
                else "it has no page"
            )
            yield Failed(str(path), f"no page to read: {why}")
            return
        if doc.is_repaired:
            notes.append(f"{path.name}: damaged, repaired by PyMuPDF; {len(doc)} page(s) read")
        folder = None
        if pages_dir is not None:
            folder = pages_dir / f"{path.stem[:60]}-{_sha1_file(path)[:10]}"
            folder.mkdir(parents=True, exist_ok=True)
        no_text = ocred = 0
        ocr_seconds = 0.0
        for number, page in enumerate(doc, 1):
            where = f"{path}#page{number}"
            try:
                text, meta, png, seconds = _pdf_page(
                    page, where, folder, number, page_pixels, ocr, ocr_cache, notes
                )
            except Exception as e:  # a damaged page: skip it, keep the document
                yield Skipped(where, f"page failed: {e}")
                continue
            ocr_seconds += seconds
            ocred += "ocr" in meta
            no_text += not text
            yield Item(
                "page",
                page_key(path.name, number),
                text,
                title=f"{path.stem} p.{number}",
                source=path.name,
                page=number,
                path=png,
                meta=meta,
            )
        if ocred and ocr is not None:
            notes.append(
                f"{path.name}: {ocred} page(s) read by OCR ({ocr.name}, {ocr_seconds:.1f} s)"
            )
        if no_text:
            why = "" if ocr is not None else " (no OCR: --ocr off, or no engine installed)"
            notes.append(f"{path.name}: {no_text} page(s) without text{why}")


def _pdf_page(
    page,
    where: str,
    folder: Path | None,
    number: int,
    page_pixels: int,
    ocr: OcrEngine | None,
    ocr_cache: Path | None,
    notes: list[str],
):  # noqa: ANN001, ANN202
    """One page's text (its layer, or OCR of the rendered page where the layer is nearly
    empty), meta, PNG path (rendered once into ``folder``) and the seconds OCR took."""
    layer = page.get_text().strip()
    text, meta = layer, {"pages": len(page.parent)} | text_lines(page, layer)
    png, seconds = "", 0.0
    if folder is not None:
        png_path = folder / f"page-{number:04d}.png"
        if not png_path.is_file():
            _render(page, page_pixels).save(png_path)
        png = str(png_path)
    if len(layer) < MIN_TEXT_CHARS and ocr is not None:
        began = time.perf_counter()
        image = Path(png).read_bytes() if png else _render(page, page_pixels).tobytes()
        try:
            found = ocr_text(ocr, image, ocr_cache)
        except OcrFailed as e:
            found, meta["ocr_error"] = None, str(e)
            notes.append(f"{where}: {e}; the page keeps its text layer")
        seconds = time.perf_counter() - began
        if found is not None:
            text = with_ocr(layer, found.text)
            meta |= {"ocr": found.engine, "text_layer_chars": len(layer)}
            if text != layer:  # OCR'd text has no boxes of its own here
                meta.pop("lines", None)
    return text, meta, png, seconds


def text_lines(page, text: str) -> dict[str, Any]:  # noqa: ANN001 - a pymupdf Page
    """Where the page's text lies: the page size and each text line's box in PDF points with its
    character span in ``text`` (``[x0, y0, x1, y1, start, end]``), so a citation can point at
    the region it quotes (``memory/regions.py``)."""
    lines, at = [], 0
    for block in page.get_text("dict")["blocks"]:
        for line in block.get("lines", []):
            said = "".join(span["text"] for span in line["spans"]).strip()
            if not said:
                continue
            start = text.find(said, at)
            if start < 0:
                start = text.find(said)
            if start < 0:
                continue
            x0, y0, x1, y1 = (round(v, 1) for v in line["bbox"])
            lines.append([x0, y0, x1, y1, start, start + len(said)])
            at = start + len(said)
    size = [round(page.rect.width, 1), round(page.rect.height, 1)]
    return {"page_size": size, "lines": lines} if lines else {}


def _render(page, page_pixels: int):  # noqa: ANN001, ANN202 - a pymupdf Page and Pixmap
    """The page as a pixmap of at most ``page_pixels`` pixels (zoom capped at 4x)."""
    import pymupdf

    w, h = page.rect.width, page.rect.height
    zoom = min(4.0, (page_pixels / max(w * h, 1.0)) ** 0.5)
    return page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom))


# -- a folder of files ---------------------------------------------------------------------------
def _captions(root: Path) -> dict[str, str]:
    file = root / "captions.json"
    if not file.is_file():
        return {}
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


MAX_CHUNK_CHARS = 2000
"""A passage's most characters (180 words are about 1,100): a file laid out as one 50 MB line
becomes many passages, not one that fills every prompt it reaches."""


def chunk_paragraphs(
    text: str, max_words: int = 180, max_chars: int = MAX_CHUNK_CHARS
) -> list[str]:
    """Paragraphs (blank-line separated), merged while they stay under ``max_words`` and
    ``max_chars``; a longer paragraph is split at its sentences, a longer sentence at its
    words, a longer word at ``max_chars``, so no passage passes either bound however its
    source is laid out."""
    return list(chunk_stream([text], max_words, max_chars))


PARAGRAPH_CAP = 1 << 20
"""The most characters a paragraph is held in memory as it streams: a longer one (a file that
is one 50 MB line) is cut at its last space before it, so reading holds about this much."""


def chunk_stream(
    blocks: Iterable[str], max_words: int = 180, max_chars: int = MAX_CHUNK_CHARS
) -> Iterator[str]:
    """``chunk_paragraphs`` over text that arrives in blocks, each passage yielded once it is
    whole: the same passages as of the joined text (paragraphs under ``PARAGRAPH_CAP``), with
    memory bounded by the cap, not by the file."""
    last = ""
    for para in _paragraphs(blocks):
        for piece in _bounded_pieces(" ".join(para.split()), max_words, max_chars):
            fits = len(last.split()) + len(piece.split()) <= max_words
            if last and fits and len(last) + 1 + len(piece) <= max_chars:
                last += " " + piece
            else:
                if last:
                    yield last
                last = piece
    if last:
        yield last


def _paragraphs(blocks: Iterable[str]) -> Iterator[str]:
    """The blank-line separated paragraphs of the joined ``blocks``; one reaching
    ``PARAGRAPH_CAP`` without a break is given in parts cut at spaces."""
    carry = ""
    for block in blocks:
        *whole, carry = re.split(r"\n\s*\n", carry + block)
        yield from whole
        while len(carry) >= PARAGRAPH_CAP:
            cut = carry.rfind(" ", 0, PARAGRAPH_CAP)
            cut = cut if cut > 0 else PARAGRAPH_CAP
            yield carry[:cut]
            carry = carry[cut:]
    yield carry


def _bounded_pieces(para: str, max_words: int, max_chars: int) -> Iterator[str]:
    """``para`` (spacing folded) in pieces within both bounds: itself where it fits, else its
    sentences packed greedily, a sentence too long by words, a word too long by characters."""
    if not para:
        return
    if len(para) <= max_chars and para.count(" ") < max_words:
        yield para
        return
    piece: list[str] = []
    size = words = 0
    for unit in _bounded_words(re.split(r"(?<=[.!?])\s+", para), max_words, max_chars):
        n = unit.count(" ") + 1
        if piece and (words + n > max_words or size + 1 + len(unit) > max_chars):
            yield " ".join(piece)
            piece, size, words = [], 0, 0
        piece.append(unit)
        size, words = size + len(unit) + (len(piece) > 1), words + n
    if piece:
        yield " ".join(piece)


def _bounded_words(sentences: list[str], max_words: int, max_chars: int) -> Iterator[str]:
    """The words of ``sentences`` in order, a sentence that fits kept as one unit (so a piece
    breaks between sentences where it can), a word longer than ``max_chars`` cut."""
    for sentence in sentences:
        if len(sentence) <= max_chars // 2 and sentence.count(" ") < max_words // 2:
            yield sentence
            continue
        for word in sentence.split(" "):
            for i in range(0, len(word), max_chars):
                yield word[i : i + max_chars]


def image_item(
    path: Path, caption: str = "", ocr: OcrEngine | None = None, ocr_cache: Path | None = None
) -> Record:
    """An image file as an ``image`` item: its caption (else its name), then any text OCR reads
    in it, so text search reaches a chart's or a sign's words."""
    from hopgraph.models.errors import ImageInputError
    from hopgraph.models.images import load_image

    try:
        load_image(path)
    except ImageInputError as e:
        return Skipped(str(path), str(e))
    title = path.stem.replace("_", " ").replace("-", " ")
    meta: dict[str, Any] = {"caption": bool(caption)}
    try:
        found = ocr_text(ocr, path.read_bytes(), ocr_cache)
    except OcrFailed as e:
        found, meta["ocr_error"] = None, str(e)
    if found is not None:
        meta["ocr"] = found.engine
    return Item(
        "image",
        image_key(path),
        f"{caption or title}\n{found.text}" if found else caption or title,
        title=title,
        source=path.name,
        path=str(path.resolve()),
        meta=meta,
    )


def read_text_file(path: Path, block: int = 1 << 20) -> Iterator[Record]:
    """A text file's passages (``chunk_stream``), read a block at a time: a file of any size,
    one 50 MB line too, is held about ``PARAGRAPH_CAP`` at once. A file that is not UTF-8 is
    skipped whole (checked before any passage is given)."""
    if not _is_utf8(path, block):
        yield Skipped(str(path), "not UTF-8 text")
        return
    title = path.stem.replace("_", " ")

    def blocks() -> Iterator[str]:
        with open(path, encoding="utf-8") as handle:
            while text := handle.read(block):
                yield text

    i = -1
    for i, chunk in enumerate(chunk_stream(blocks())):
        yield Item(
            "text",
            passage_key(title, chunk),
            chunk,
            title=title,
            source=path.name,
            meta={"chunk": i},
        )
    if i < 0:
        yield Skipped(str(path), "empty text file: nothing to index")


def _is_utf8(path: Path, block: int) -> bool:
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        with open(path, "rb") as handle:
            while data := handle.read(block):
                decoder.decode(data)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def read_csv_table(path: Path) -> Iterator[Record]:
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            rows = list(csv.reader(handle))
    except UnicodeDecodeError:
        yield Skipped(str(path), "not UTF-8 text")
        return
    except csv.Error as e:
        yield Skipped(str(path), f"bad CSV: {e}")
        return
    if len(rows) < 2:
        yield Skipped(str(path), "CSV needs a header row and at least one data row")
        return
    title = path.stem.replace("_", " ")
    header = rows[0]
    for r, row in enumerate(rows[1:]):
        sentence = row_sentence(title, header, row, r)
        yield Item(
            "table",
            passage_key(title, sentence),
            sentence,
            title=title,
            source=path.name,
            meta={"row": r},
        )


def read_records(path: Path) -> Iterator[Record]:
    """JSONL of passages: ``text`` required; ``title``, ``id`` and ``modality`` optional."""
    for obj in read_jsonl(path):
        if isinstance(obj, Skipped):
            yield obj
            continue
        text = obj.get("text")
        if not isinstance(text, str) or not text.strip():
            yield Skipped(f"{path}:{obj.get('id', '?')}", "record has no text")
            continue
        title = str(obj.get("title", ""))
        modality = obj.get("modality", "text")
        key = str(obj["id"]) if "id" in obj else passage_key(title, text)
        try:
            yield Item(modality, key, text, title=title, source=str(obj.get("source", title)))
        except ValueError as e:
            yield Skipped(f"{path}:{obj.get('id', '?')}", str(e))


LINK_OUT = "a link leading outside the indexed folder (--follow-links indexes it)"


def inside(file: Path, root: Path) -> bool:
    """Whether ``file``, its links followed, lies under ``root`` (resolved)."""
    return file.resolve().is_relative_to(root)


class Walk(NamedTuple):
    """A folder's entries as the index reads them."""

    files: list[Path]
    outside: list[Path]
    """Links (to files or folders) that lead outside it, skipped unless followed."""
    unusable: list[Skipped]
    """Entries no reader can take, each named with why (a link loop, a link to nothing, a
    name that is not UTF-8, a FIFO, socket or device): skipped, the rest indexed; a folder
    that cannot be listed is a ``Failed`` source among them."""
    unreadable: list[Path]
    """Folders that could not be listed (no permission, an I/O error): what they hold is
    unknown, so none of it counts as vanished."""


def walk_folder(path: Path, follow_links: bool = False) -> Walk:
    """The files under folder ``path``, the links there that lead outside it (a
    ``passwd.txt -> /etc/passwd`` dropped into a corpus: skipped and listed unless
    ``follow_links``, which follows them, each folder once), and the entries no reader can
    take; one bad entry never stops the walk."""
    root = path.resolve()
    files: list[Path] = []
    out: list[Path] = []
    bad: list[Skipped] = []
    seen: set[Path] = set()
    unreadable: list[Path] = []

    def cannot_list(e: OSError) -> None:
        where = Path(e.filename or path)
        unreadable.append(where)
        bad.append(Failed(shown_path(where), f"cannot read this folder: {e.strerror or e}"))

    for here, dirs, names in os.walk(path, onerror=cannot_list, followlinks=follow_links):
        real = Path(here).resolve()
        if real in seen:  # a link loop, or a folder reached twice
            dirs[:] = []
            continue
        seen.add(real)
        linked = (Path(here, d) for d in dirs if Path(here, d).is_symlink())
        out += [] if follow_links else [d for d in linked if not inside(d, root)]
        for name in names:
            file = Path(here, name)
            if (why := unusable(file)) is not None and why.startswith("unreadable"):
                # a folder listed but not entered (mode 444): its files are not known gone
                bad.append(Failed(shown_path(file), why))
                unreadable.append(Path(here))
            elif why is not None:
                bad.append(Skipped(shown_path(file), why))
            else:
                (files if follow_links or inside(file, root) else out).append(file)
    return Walk(sorted(files), sorted(out), bad, unreadable)


def shown_path(file: Path) -> str:
    """A path as a message can print it: bytes that are not UTF-8 shown as ``\\xNN``."""
    return os.fsencode(file).decode("utf-8", "backslashreplace")


def unusable(file: Path) -> str | None:
    """Why no reader can take ``file`` (None where one can)."""
    import stat

    try:
        str(file).encode("utf-8")
    except UnicodeEncodeError:
        return "its name is not UTF-8 (rename it to index it)"
    try:
        file.resolve(strict=True)
        mode = file.stat().st_mode
    except RuntimeError:
        return "a link loop"
    except FileNotFoundError:
        return "a link to nothing"
    except OSError as e:
        return "a link loop" if e.errno == 40 else f"unreadable: {e.strerror or e}"
    if stat.S_ISREG(mode):
        return None
    kinds = (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
        (stat.S_ISDIR, "a folder"),
    )
    kind = next((name for test, name in kinds if test(mode)), "not a file")
    return f"not a regular file ({kind})"


def folder_files(path: Path, follow_links: bool = False) -> list[Path]:
    """The files of a folder that ``read_folder`` reads (each a source of its own): not one a
    link leads to outside the folder, unless ``follow_links``."""
    files = walk_folder(path, follow_links).files
    usable = (p for p in files if p.is_file() and not p.name.startswith("."))
    return [p for p in usable if p.name != "captions.json"]


def caption_of(captions: dict[str, str], file: Path) -> str:
    if file.suffix.lower() not in IMAGE_SUFFIXES:
        return ""
    return captions.get(file.name, captions.get(file.stem, ""))


def read_file(file: Path, caption: str = "", **opts: Any) -> Iterator[Record]:
    """One file of a folder, by its type."""
    suffix = file.suffix.lower()
    if suffix in IMAGE_SUFFIXES:
        yield image_item(file, caption, opts.get("ocr"), opts.get("ocr_cache"))
    elif suffix in TEXT_SUFFIXES:
        yield from read_text_file(file)
    elif suffix == ".csv":
        yield from read_csv_table(file)
    elif suffix == ".jsonl":
        yield from read_records(file)
    elif suffix == ".pdf":
        yield from read_pdf(file, **opts)
    else:
        yield Skipped(str(file), f"unsupported file type {suffix or '(none)'}")


def read_folder(path: Path, **opts: Any) -> Iterator[Record]:
    """Every usable file below ``path``: images (captions from ``captions.json``), text and
    Markdown files, CSV tables, JSONL passages and PDFs."""
    captions = _captions(path)
    for file in folder_files(path):
        yield from read_file(file, caption_of(captions, file), **opts)


def pdf_files(path: Path, follow_links: bool = False) -> list[Path]:
    if path.is_file():
        return [path]
    return [f for f in walk_folder(path, follow_links).files if f.suffix.lower() == ".pdf"]


def read_pdfs(path: Path, **opts: Any) -> Iterator[Record]:
    for file in pdf_files(path):
        yield from read_pdf(file, **opts)


READERS = {
    "folder": read_folder,
    "pdf": read_pdfs,
    "hotpotqa": read_hotpotqa,
    "musique": read_musique,
    "multimodalqa": read_multimodalqa,
}


def detect_format(path: Path) -> str:
    """A best guess from names; ``--format`` overrides it."""
    name = path.name.lower()
    if path.is_dir():
        if _mmqa_file(path, "MMQA_images") or _mmqa_file(path, "MMQA_texts"):
            return "multimodalqa"
        return "folder"
    if name.endswith(".pdf"):
        return "pdf"
    if name.startswith("mmqa_"):
        return "multimodalqa"
    if "musique" in name:
        return "musique"
    if name.endswith(".json"):
        return "hotpotqa"
    raise ValueError(
        f"cannot tell the format of {path}; pass --format (one of {', '.join(FORMATS)})"
    )


@dataclass(frozen=True)
class SourceUnit:
    """One source as the KB's registry knows it: a file (a MultimodalQA folder is one), the
    files its content hash covers, and how its items are read."""

    path: Path
    files: tuple[Path, ...]
    read: Callable[..., Iterable[Record]]
    salt: str = ""
    """What else decides its items: an image's caption from ``captions.json``."""

    @property
    def key(self) -> str:
        """Its name in the registry: the absolute path."""
        return str(self.path.resolve())

    def stat(self) -> tuple[int, int]:
        """(bytes, latest mtime in ns) of its files: the cheap test of "unchanged"."""
        stats = [f.stat() for f in self.files]
        return sum(s.st_size for s in stats), max((s.st_mtime_ns for s in stats), default=0)

    def sha256(self) -> str:
        digest = hashlib.sha256()
        for file in self.files:
            digest.update(file.name.encode() + b"\0")
            with open(file, "rb") as handle:
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
        digest.update(self.salt.encode())
        return digest.hexdigest()


def source_units(path: Path, fmt: str, follow_links: bool = False) -> list[SourceUnit]:
    """The sources ``path`` read as ``fmt`` holds: each file of a folder, each PDF (not those a
    link leads to outside the folder, unless ``follow_links``), else the dataset file (or
    MultimodalQA folder) as one."""
    if not path.exists():
        raise FileNotFoundError(f"source not found: {path}")
    if fmt not in READERS:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    if fmt == "folder" and path.is_dir():
        captions = _captions(path)
        return [
            SourceUnit(
                f, (f,), partial(read_file, f, caption_of(captions, f)), caption_of(captions, f)
            )
            for f in folder_files(path, follow_links)
        ]
    if fmt == "folder":
        return [SourceUnit(path, (path,), partial(read_file, path))]
    if fmt == "pdf":
        return [SourceUnit(f, (f,), partial(read_pdf, f)) for f in pdf_files(path, follow_links)]
    files: tuple[Path, ...] = (path,)
    if fmt == "multimodalqa" and path.is_dir():
        stems = ("MMQA_texts", "MMQA_tables", "MMQA_images")
        files = tuple(f for stem in stems if (f := _mmqa_file(path, stem)))
    return [SourceUnit(path, files, partial(READERS[fmt], path))]


def read_source(path: Path, fmt: str = "auto", **opts: Any) -> Iterable[Record]:
    if not path.exists():
        raise FileNotFoundError(f"source not found: {path}")
    fmt = detect_format(path) if fmt == "auto" else fmt
    if fmt not in READERS:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    return READERS[fmt](path, **opts)
