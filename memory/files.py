"""Reading corpus files safely: text in any common encoding (gzip too), JSON and JSON lines
with each bad line named, and ``Skipped``: what a reader could not use, and why."""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hopgraph.memory.kb import Item

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff"}


TEXT_SUFFIXES = {".txt", ".md"}


@dataclass
class Skipped:
    """Something a reader could not use, and why."""

    where: str
    reason: str


@dataclass
class Failed(Skipped):
    """A whole source that could not be read (damaged, cut short, unreadable): the index says
    so, keeps any earlier version of it, and exits with the status for failed sources."""


Record = Item | Skipped


# -- file helpers -----------------------------------------------------------------------------
def open_text(path: Path):
    """A text handle for plain or gzipped files (UTF-8, strict; a leading BOM dropped)."""
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig")
    return open(path, encoding="utf-8-sig")


def read_jsonl(path: Path) -> Iterator[dict[str, Any] | Skipped]:
    """Objects of a JSONL file; a bad line becomes a ``Skipped`` with its line number."""
    for _, obj in read_jsonl_lines(path):
        yield obj


BOM = b"\xef\xbb\xbf"
"""UTF-8's byte order mark, which some editors (Notepad, Excel's CSV) write first: not text."""


def _starts_with_array(path: Path) -> bool:
    """Whether the file is one JSON array (its first non-blank character is '[')."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle:
            head = handle.read(4096).removeprefix(BOM).lstrip()
    except (OSError, EOFError):
        return False
    return head[:1] == b"["


def read_jsonl_lines(path: Path) -> Iterator[tuple[int, dict[str, Any] | Skipped]]:
    """(line number, object or ``Skipped``) for each non-blank line. Each line is decoded on
    its own, so one line that is not UTF-8 costs that line, not the file. A file that is one
    JSON array instead (benchmarks are published both ways) gives its elements, numbered."""
    if _starts_with_array(path):
        try:
            items = load_json(path)
        except (ValueError, OSError, EOFError) as e:
            yield 0, Skipped(str(path), f"not a JSON array: {e}")
            return
        for n, obj in enumerate(items if isinstance(items, list) else [], 1):
            if isinstance(obj, dict):
                yield n, obj
            else:
                yield n, Skipped(f"{path}[{n - 1}]", "array element is not an object")
        return
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle:
            for lineno, raw in enumerate(handle, 1):
                where = f"{path}:{lineno}"
                try:
                    line = raw.removeprefix(BOM if lineno == 1 else b"").decode("utf-8")
                except UnicodeDecodeError as e:
                    yield (
                        lineno,
                        Skipped(
                            where, f"not UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1})"
                        ),
                    )
                    continue
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    yield (
                        lineno,
                        Skipped(
                            where, f"bad JSON line: {e.msg.removesuffix(' at')} at column {e.colno}"
                        ),
                    )
                    continue
                if not isinstance(obj, dict):
                    yield lineno, Skipped(where, "JSON line is not an object")
                    continue
                yield lineno, obj
    except (OSError, EOFError) as e:
        yield 0, Skipped(str(path), f"unreadable: {e}")


def load_json(path: Path) -> Any:
    with open_text(path) as handle:
        return json.load(handle)
