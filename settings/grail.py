"""GRAIL's knobs (grail.txt): a part any graph whose retriever can steer includes in its Context
(MMAPG's and QDRAG's do), and the Context of GRAIL's own commands."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from hopgraph.config import OPERATOR, Context, MethodSpec


@dataclass(kw_only=True)
class GrailSettings:
    grail_tau_base: float = 0.05
    grail_weights: str = field(default="", metadata=OPERATOR)
    """A trained GRAIL folder (``hopgraph grail train``); empty: the training-free variant."""
    grail_mode: Literal["", "query", "additive", "gap-fixed", "gap", "hybrid"] = ""
    """Retrievers that support it (MMAPG, QDRAG) search through GRAIL in this mode when set:
    query | additive | gap-fixed | gap | hybrid."""


SPEC = MethodSpec(
    "grail",
    "steers the query embedding away from the evidence already held (no LLM call)",
    settings=(GrailSettings,),
    needs=(),
    image_needs=(),
    code="hopgraph.tools.grail",
    switch="grail_mode",
)
"""GRAIL as a part: its knobs join a steering graph's Context; its code counts in that graph's
fingerprint only when ``grail_mode`` is set."""


@dataclass(kw_only=True)
class GrailContext(Context, GrailSettings):
    """The Context of GRAIL's own commands (``hopgraph grail``, steered ``search``)."""
