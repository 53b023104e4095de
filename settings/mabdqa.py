"""MAB-DQA's knobs (mab-dqa.txt, Sec. 4.4) and its graph's Context."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hopgraph.config import Context, knob


@dataclass(kw_only=True)
class MABDQASettings:
    """MAB-DQA's knobs (mab-dqa.txt, Sec. 4.4): the paper's defaults; the authors'
    public code uses beta=0.01, lambda=1."""

    mabdqa_alpha: float = 0.8
    """Weight of the page judgement against late interaction (Eq. 8)."""
    mabdqa_beta: float = 0.1
    """Weight of the hypergraph term (Eq. 8)."""
    mabdqa_lambda: float = 0.75
    """Arm confidence against page degree inside the hypergraph term (Eq. 8)."""
    mabdqa_theta_g: float = 0.8
    """Page-graph edge threshold (Eq. 2)."""
    mabdqa_theta_h: int = knob(10, most=50)
    """Pages per hyperedge (Algorithm 1)."""
    mabdqa_m: int = knob(20, least=0, most=50)
    """Pages judged by the bandit walk (Algorithm 2's iterations)."""
    mabdqa_batch: int = knob(1, least=1, most=16)
    """Pages drawn and judged concurrently per bandit round (ours; 1 is the paper's walk)."""
    mabdqa_seed: int = 42
    mabdqa_top_pages: int = knob(4, least=1, most=10)
    """Pages the answer reads (the paper's Top-4)."""
    mabdqa_retriever: Literal["bandit", "li"] = "bandit"
    """bandit (Algorithm 2) | li (plain late-interaction top-k, the M3DocRAG-style baseline)."""
    mabdqa_page_graph: bool = True
    """Off: no query-agnostic page graph (Table 6 ablation)."""
    mabdqa_atoms_only: bool = False
    """On: arms are the atomic subqueries only, no global query (Table 6 ablation)."""
    mabdqa_question_reflection: bool = True
    mabdqa_answer_reflection: bool = True
    """Off: the initial answer is final and the hypergraph is never re-entered."""
    mabdqa_reentries: int = knob(1, most=3)
    """Times HRRA may re-enter the hypergraph for more pages when the answer falls short."""
    mabdqa_reentry_m: int = knob(8, most=20)
    """Pages judged per re-entry."""
    mabdqa_max_aspects: int = knob(5, most=10)
    mabdqa_page_chars: int = 1500
    """Page text the LLM reads per page when no VLM sees the page image."""
    mabdqa_judge_tokens: int = 160
    mabdqa_judge: Literal["scale", "p_yes"] = "scale"
    """Page judge: "scale" (the paper's 1-5 rating) or "p_yes" (P(Yes) from one forward pass)."""


@dataclass(kw_only=True)
class MABDQAContext(Context, MABDQASettings):
    """MAB-DQA's Context: the shared fields and its knobs."""
