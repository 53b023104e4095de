"""Evidence you can point at in a PDF: the region of a page a citation quotes.

A page read from a PDF keeps each text line's box and its character span in the page's text
(``memory/sources.py:text_lines``, in the item's provenance). ``quoted_span`` finds the longest
run of an answer's words that the page's text holds, and ``region`` gives the boxes of the lines
that span covers, in PDF points: what the report highlights on the rendered page.
"""

from __future__ import annotations

import re
from typing import Any

WORD = re.compile(r"\w+")


def _words(text: str) -> list[tuple[str, int, int]]:
    """Each word of ``text`` folded to lower case, with its character span."""
    return [(m.group().lower(), m.start(), m.end()) for m in WORD.finditer(text)]


def quoted_span(answer: str, text: str, min_words: int = 4) -> tuple[int, int] | None:
    """The character span in ``text`` of the longest run of at least ``min_words`` consecutive
    words of ``answer`` that ``text`` holds in the same order (case and punctuation aside); a
    short answer of two words or more (a name: "Allison Crimmins") counts where it is quoted
    whole."""
    said, page = _words(answer), _words(text)
    min_words = max(2, min(min_words, len(said)))
    if len(said) < min_words or len(page) < min_words:
        return None
    where: dict[str, list[int]] = {}
    for i, (w, _, _) in enumerate(page):
        where.setdefault(w, []).append(i)
    best = (0, 0, 0)  # length, first page word, last page word
    for a in range(len(said)):
        for p in where.get(said[a][0], []):
            n = 0
            while a + n < len(said) and p + n < len(page) and said[a + n][0] == page[p + n][0]:
                n += 1
            if n > best[0]:
                best = (n, p, p + n - 1)
    n, first, last = best
    return (page[first][1], page[last][2]) if n >= min_words else None


def region(provenance: dict[str, Any], start: int, end: int) -> list[list[float]]:
    """The boxes ``[x0, y0, x1, y1]`` (PDF points) of the text lines that ``[start, end)``
    covers; [] where the page kept no line boxes (an OCR'd page, an older index)."""
    return [line[:4] for line in provenance.get("lines") or [] if line[4] < end and line[5] > start]


def cited_region(evidence: dict[str, Any], answer: str) -> list[list[float]]:
    """The region of a cited page that ``answer`` quotes, each of its lines read apart (a
    response and its short answer); [] where it quotes none of it."""
    boxes: list[list[float]] = []
    for said in answer.splitlines():
        span = quoted_span(said, evidence.get("text", ""))
        found = region(evidence.get("provenance") or {}, *span) if span else []
        boxes += [b for b in found if b not in boxes]
    return boxes
