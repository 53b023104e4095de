"""What a study of the results pages is: run records side by side (``RunTable``) with the
claims to test on them (``Claim``), or a benchmark's own report (``BenchTable``). The studies
(``benchmarks/results/studies.py``, beside the records) are instances; ``__init__`` renders
them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Claim:
    """ "``better`` beats ``worse`` on ``metric``" (higher is better unless ``lower``)."""

    better: str
    worse: str
    metric: str
    lower: bool = False


@dataclass
class RunTable:
    """Run records side by side on the questions all of them finished."""

    method: str
    title: str
    finding: str
    rows: dict[str, str]
    """Column label -> record folder, relative to ``benchmarks/results``."""
    metrics: list[str]
    claims: list[Claim] = field(default_factory=list)
    command: str = ""
    target: int | dict[str, int] = 0
    """Questions the issue asks for (one number, or one per column label); fewer are reported
    as partial."""
    deviations: list[str] = field(default_factory=list)
    """Each setting of these records that differs from the paper, and why (one line each),
    shown above the table."""
    pool: int = 0
    """Questions the data holds for this table (a verdict needing more says so)."""
    by_template: bool = False
    """Also list each prompt template's calls and LLM seconds per call, per column."""
    speed_is_compared: bool = False
    """The columns differ in the endpoint's speed on purpose (e.g. two llama.cpp builds), so
    their seconds are the finding and no caveat (of speed or build) is added."""
    history: str = ""
    """Why this study is kept as history, not a headline (its code is gone; what replaces it),
    shown first on its page and in the index."""
    headline: bool = False
    """The README's results read this study: ``hopgraph results --check`` warns where a
    column's answers are not today's code's."""
    tuning: str = ""
    """A committed tuning split (a JSON file under ``benchmarks/results`` whose ``ids`` are
    the questions prompts and settings may be tuned on): every figure of the table,
    its claims and the n they would need read only the other questions, and the page says so."""


@dataclass
class BenchTable:
    """A benchmark's JSON report(s), rendered by ``render``."""

    method: str
    title: str
    finding: str
    files: list[str]
    render: str
    """Its renderer, beside the code that writes the report (``renderer``): ``files``'
    reports (None where missing) -> the page's lines."""
    command: str = ""
    deviations: list[str] = field(default_factory=list)
    """As ``RunTable.deviations``."""
    progress: str = ""
    """A run folder the report is made from, which grows before it exists (a search's
    bootstrap): while no report is there, the page says how many questions it has answered
    rather than "Not measured yet"."""
