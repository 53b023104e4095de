"""How hopgraph words a count in what it prints."""

from __future__ import annotations


def counted(n: int, noun: str) -> str:
    """``n`` and its noun, plural unless one: "1 LLM call", "3 questions"."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"
