"""MMAPG's knobs (mmapg.txt, Alg. 1) and its graph's Context."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hopgraph.config import Context, knob
from hopgraph.settings.grail import GrailSettings
from hopgraph.settings.polarmem import PolarMemSettings


@dataclass(kw_only=True)
class MMAPGSettings:
    """MMAPG's knobs (mmapg.txt, Alg. 1)."""

    mmapg_max_iterations: int = knob(10, least=1, most=20)
    """The planner loop's cap k (Alg. 1, line 3)."""
    mmapg_single_path: bool = False
    """Table 3 "w/o graph-guided planning": every step builds on the previous node only."""
    mmapg_triplets: bool = True
    """Match text through its triplets too (a KB indexed with ``--triplets``), reading the
    passage a triplet came from; off: Table 3 "w/o triplet conversion" (passages only)."""
    mmapg_retrieval: Literal["module", "similarity"] = "module"
    """module (Sec. 3.4) | similarity: Table 3 "w/o retrieval module", top-k by the
    instruction's embedding, no query building, no examination."""
    mmapg_text_radius: float = 0.6
    """r_t (Eq. 11) as a cosine distance (1 - similarity) for the text collections."""
    mmapg_image_radius: float = 0.7
    """r_i for the image collection (text-to-image similarities sit lower, App. A.1)."""
    mmapg_max_candidates: int = knob(6, least=1, most=20)
    """Candidates examined per retrieval node, best first: each costs one model call, and the
    radius search alone has no upper bound."""
    mmapg_examine_filter: bool = False
    """Ours, off by default: drop a candidate the examiner judges unhelpful before extraction
    (each drop is a ``dropped_candidate`` step in the trace). The paper collects every
    examination result O_i and lets extraction (Eq. 14) decide what matters (Eq. 12-14)."""


@dataclass(kw_only=True)
class MMAPGContext(Context, MMAPGSettings, GrailSettings, PolarMemSettings):
    """MMAPG's Context: the shared fields, its knobs, and GRAIL's and PolarMem's parts."""
