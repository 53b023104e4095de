"""GRAIL: gap-aware query steering over precomputed vectors (grail.txt). No LLM calls."""
