"""PolarMem's knobs (polarmem.txt): its own commands' and, as a part, MMAPG's and QDRAG's."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from hopgraph.config import OPERATOR, Context, knob


@dataclass(kw_only=True)
class PolarMemSettings:
    """PolarMem's knobs (polarmem.txt): its own commands' and, as a part, MMAPG's and QDRAG's."""

    polar_dir: str = field(default="polarmem", metadata=OPERATOR)
    """The memory's folder (graph.sqlite + chroma/)."""
    polar_templates: int = knob(3, most=10)
    """Verification templates averaged per concept (Eq. 4: at least 3)."""
    polar_kappa: float = 0.5
    """delta = kappa * sigma_w, the uncertainty margin around tau* (Eq. 6); the paper gives
    no value (the authors' code used a fixed 0.05)."""
    polar_max_concepts: int = knob(40, most=100)
    """Concepts kept from one image's proposal (App. B: at most 40)."""
    polar_memory: bool = field(default=False, metadata={"gate": "polar_serve"})
    """MMAPG and QDRAG also recall from the PolarMem memory at ``polar_dir``: recalled items
    join the candidates (MMAPG) or the cited sources (QDRAG) as Fact Check lines. A served
    client may turn it on only where ``polar_serve`` is."""
    polar_serve: bool = field(default=False, metadata=OPERATOR)
    """A served client may turn ``polar_memory`` on and so read the memory at ``polar_dir``:
    off by default, since that memory is the operator's (``hopgraph mcp --http`` points a
    caller's ``polar_dir`` at the caller's own memory, and opens that one)."""
    polar_recall: Literal["logic", "vanilla"] = "logic"
    """logic (Algorithm 1) | vanilla (similarity only, Eq. 2)."""
    polar_top_k: int = knob(3, most=20)
    """Memories recalled per query."""


@dataclass(kw_only=True)
class PolarMemContext(Context, PolarMemSettings):
    """The Context of PolarMem's own commands (``hopgraph memory``, the MCP memory tools)."""
