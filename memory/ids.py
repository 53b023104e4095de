"""Item ids from what identifies an item's content: the keys the indexer and the question
converters (``hopgraph.questions.datasets``) share, so gold evidence ids are ids in the index."""

from __future__ import annotations

import hashlib
from pathlib import Path

from hopgraph.memory.kb import item_id


# -- keys shared with the question converters ----------------------------------------------
def passage_key(title: str, text: str) -> str:
    return f"{title}\n{text}"


def passage_id(title: str, text: str) -> str:
    return item_id("text", passage_key(title, text))


def mmqa_key(doc_id: str) -> str:
    return f"mmqa:{doc_id}"


def mmqa_row_key(table_id: str, row: int) -> str:
    return f"mmqa:{table_id}#row{row}"


def page_key(file_name: str, page: int) -> str:
    """Pages are keyed by the document's file name and 1-based page number."""
    return f"{file_name}#{page}"


def page_id(file_name: str, page: int) -> str:
    return item_id("page", page_key(file_name, page))


def _sha1_file(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


def image_key(path: Path) -> str:
    """Image files are keyed by their bytes: the same picture is one item wherever it lies."""
    return f"image:{_sha1_file(path)}"
