"""The results pages (``docs/results/``), generated from the committed result records in
``benchmarks/results/``: an index with every study's headline verdict, then a page a study.

A record is a run folder (``manifest.json``, ``predictions.jsonl``, ``metrics.json``) or a
benchmark's JSON report. A study (``RunTable``) is one table: the paper's finding in a line,
our variants side by side on the same questions, whether the finding holds here (a paired sign
test on the questions both variants finished), n, model, cost, and the command that
reproduces it. The studies themselves are defined beside the records
(``benchmarks/results/studies.py``), not in the library. Nothing here runs a model: the pages
are a pure function of the records, so CI can check that the committed pages are current.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from statistics import mean
from typing import Any

from hopgraph.evals.evaluate import CITATION_SCORES
from hopgraph.evals.stats import fmt, paired
from hopgraph.harness.run_folder import RunFolder, read_predictions, sitting_of
from hopgraph.presentation.results.freshness import Freshness, freshness
from hopgraph.presentation.results.spec import BenchTable, Claim, RunTable
from hopgraph.wording import counted

RESULTS_DIR: Path | None = None
"""The records folder; None: ``benchmarks/results`` of the checkout ``hopgraph results`` runs in."""


def checkout(start: Path | None = None) -> Path:
    """The checkout the page is made in: the nearest folder at or above the working directory
    that holds ``benchmarks/results`` (the records are committed, never installed)."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "benchmarks" / "results").is_dir():
            return folder
    raise FileNotFoundError(
        f"no benchmarks/results/ in {here} or above it: run `hopgraph results` inside a "
        "checkout of hopgraph (result records are committed there, not installed)"
    )


def records_dir() -> Path:
    return RESULTS_DIR or checkout() / "benchmarks" / "results"


def pages_dir() -> Path:
    """Where the pages go: ``docs/results/`` of the checkout."""
    return checkout() / "docs" / "results"


STUDIES = "benchmarks/results/studies.py"
"""The file, in the checkout, that defines the studies (``TABLES``)."""


def _load(rel: str) -> dict[str, Any] | None:
    path = records_dir() / rel
    return json.loads(path.read_text()) if path.is_file() else None


def _manifest(rel: str) -> Mapping[str, Any]:
    """A committed record's manifest ({} where it has none)."""
    return RunFolder(records_dir() / rel).manifest() or {}


def tuning_split(t: RunTable) -> set[str]:
    """The ids of the table's tuning split (none without one)."""
    if not t.tuning:
        return set()
    split = _load(t.tuning)
    if split is None:
        raise FileNotFoundError(f"{t.method}: its tuning split {t.tuning} is not in the records")
    return set(split["ids"])


def run_table(t: RunTable) -> list[str]:
    metrics = {label: _load(f"{rel}/metrics.json") for label, rel in t.rows.items()}
    held = tuning_split(t)
    reported = {
        k: v | {"per_question": {q: s for q, s in v["per_question"].items() if q not in held}}
        for k, v in metrics.items()
        if v
    }  # (a by_template table reads each column's whole record)
    have = {k: v for k, v in reported.items() if v.get("per_question")}
    out = [f"## {t.method}: {t.title}", ""]
    fresh = column_freshness(t)
    gone = bool(fresh) and not any(f.current for f in fresh.values())
    if t.history or gone:
        why = t.history or (
            "every column was answered by method code that has changed since "
            "(its Records below say what changed)"
        )
        out += [f"{HISTORY} {why}.", ""]
    out += [f"**Paper:** {t.finding}", ""]
    out += _deviation_lines(t.deviations) if t.deviations else []
    if held:
        out += [
            f"**Tuning split:** the {len(held)} questions of `{t.tuning}` are the ones "
            "prompts and settings may be tuned on; every figure below reads only the "
            "others.",
            "",
        ]
    missing = [k for k in t.rows if k not in have]
    if not have:
        out += ["Not measured yet.", ""]
    else:
        common = sorted(set.intersection(*(set(m["per_question"]) for m in have.values())))
        model = _manifest_model(t.rows[next(iter(have))])
        out += [_size_line(t, have, len(common), model, len(held)) + _kb_line(t, have), ""]
        builds = {} if t.speed_is_compared else build_by_question(t, have)
        out += _record_lines(fresh, have)
        out += _code_lines(t, have) + _build_lines(builds) + _trace_lines(t, have)
        out += ["| metric | " + " | ".join(have) + " |", "|---" * (len(have) + 1) + "|"]
        uncited = {k for k in have if _cites_none(t.rows[k], common)}
        for metric in t.metrics:
            cells = []
            for k, m in have.items():
                vals = [m["per_question"][q].get(metric) for q in common]
                vals = [v for v in vals if v is not None]
                # a score some questions lack yet (citations judged before the run grew)
                part = f" ({len(vals)} of {len(common)})" if 0 < len(vals) < len(common) else ""
                if vals and metric in CITATION_SCORES and k in uncited:
                    part += " (no answer cites)"
                cells.append(fmt(mean(vals)) + part if vals else "")
            if any(cells):  # a metric no column recorded (e.g. an old run's decode rate)
                out.append(f"| {metric} | " + " | ".join(cells) + " |")
        out.append("")
        out += _stage_lines(t, have, common)
        if t.by_template:
            out += _template_rows(have)
        for c in t.claims:
            line = _claim_line(c, have, t.pool - len(held) if t.pool else 0)
            out.append("- " + line + _cross_build_text(c, builds))
        figures = list(table_plots(t, have, common))
        if figures:
            what = {"cost.svg": "quality against cost", "strip.svg": "wins and losses"}
            out += [""] + [f"![{what[name.rsplit('-', 1)[-1]]}](plots/{name})" for name in figures]
        caveats = [] if t.speed_is_compared else _seconds_caveats(have, common)
        if "seconds" in t.metrics:
            out += ["- " + c for c in caveats]
        if t.claims or caveats:
            out.append("")
    if missing and have:
        out += [f"Not measured yet: {', '.join(missing)}.", ""]
    if t.command:
        out += ["Reproduce (resumes the committed records):", "", f"    {t.command}", ""]
    return out


def _cites_none(rel: str, common: list[str]) -> bool:
    """Whether none of a record's answers to ``common`` carries a citation (a method that
    writes none, as MMAPG): ALCE scores such an answer's citations 0, which a table would
    otherwise leave to be read as wrong citations."""
    preds = read_predictions(records_dir() / rel / "predictions.jsonl")
    asked = [preds[q] for q in common if q in preds]
    return bool(asked) and not any(p.get("citations") for p in asked)


def _size_line(t: RunTable, have: dict[str, dict], n: int, model: str, held: int = 0) -> str:
    """How many questions the table shows; when the columns finished different numbers, each
    one's count against its own target (an ablation at its 15 beside two at 30 is complete,
    not "15 of 30 planned"; QD-C grown to 50 for its own table is not "50 of 30"). Counts and
    targets leave out the ``held`` questions of a tuning split."""
    counts = {k: len(m["per_question"]) for k, m in have.items()}
    target = t.target if isinstance(t.target, dict) else dict.fromkeys(t.rows, t.target)
    target = {k: max(goal - held, 0) if goal else goal for k, goal in target.items()}
    if set(counts.values()) == {n} and len(set(target.values())) == 1:
        goal = next(iter(target.values()))
        part = f" (of {goal} planned)" if goal and n < goal else ""
        return f"{n} questions{part}, every column on the same ones; model {model}."

    def finished(k: str, c: int) -> str:  # a record grown past this table's size for another
        goal = target.get(k)
        return f"{k} {c}" + (
            "" if not goal else f" of {goal}" if c <= goal else f" ({goal} asked here)"
        )

    per = ", ".join(finished(k, c) for k, c in counts.items())
    return (
        f"{n} questions, every column on the same ones; model {model}. "
        f"Questions finished per column (of its target): {per}."
    )


def _kb_line(t: RunTable, have: dict[str, dict]) -> str:
    """The KB the columns read, as their manifests recorded it ('' where none did): columns
    that read KBs built two ways (with OCR and without) say so, each its own."""

    def words(kb: dict[str, Any]) -> str:
        builds = "; ".join(
            f"{b['source']} ({b['format']}, OCR {b['ocr']}{', triplets' if b['derived'] else ''})"
            for b in kb["builds"]
        )
        return f"{builds}, {_items(kb['counts'])} items"

    kbs = {k: _manifest(t.rows[k]).get("kb") or {} for k in have}
    known = {k: words(kb) for k, kb in kbs.items() if kb.get("builds")}
    moves = "".join(_kb_move(k, t.rows[k], kbs[k]) for k in have)
    if not known:
        return moves
    if len(known) == len(have) and len(set(known.values())) == 1:
        return f" KB: {next(iter(known.values()))}." + moves
    unknown = [k for k in have if k not in known]
    return (
        " KB per column: "
        + "; ".join(f"{k}: {w}" for k, w in known.items())
        + (f"; {', '.join(unknown)}: not recorded" if unknown else "")
        + "."
        + moves
    )


def _items(counts: dict[str, int]) -> str:
    """A KB's items per modality, as "3,420 text" (the empty ones left out)."""
    return ", ".join(f"{n:,} {m}" for m, n in counts.items() if n)


def _kb_move(label: str, rel: str, kb: dict[str, Any]) -> str:
    """Where a column's record was moved to a rebuilt KB (``benchmarks/kb_replay.py --carry``:
    every candidate step its traces hold came back the same there), the sentence saying so."""
    out = ""
    for path in sorted((records_dir() / "kb-replay").glob("*.json")):
        report = json.loads(path.read_text(encoding="utf-8"))
        moved = report.get("carried") or {}
        if not moved or Path(report["record"]).parts[-len(Path(rel).parts) :] != Path(rel).parts:
            continue
        if moved.get("to") != kb.get("counts"):
            continue
        n = len(report["questions"])
        out += (
            f" {label}'s record: its first {counted(n, 'question')} {'was' if n == 1 else 'were'}"
            f" answered on a build of this KB with {_items(moved['from'])} items; rebuilt with its "
            f"derived items extracted again ({_items(moved['to'])} items), it gave each of their "
            f"{report['steps']} candidate searches the same candidates, so the record moved to "
            f"it (`kb-replay/{path.name}`)."
        )
    return out


def code_by_column(t: RunTable, labels: list[str]) -> dict[str, Counter]:
    """Answers per method-code fingerprint in each column ("unrecorded" for answers made
    before fingerprints were kept)."""
    out = {}
    for k in labels:
        preds = read_predictions(records_dir() / t.rows[k] / "predictions.jsonl").values()
        out[k] = Counter(p.get("code") or "unrecorded" for p in preds if not p.get("error"))
    return out


def column_freshness(t: RunTable, commits: bool = False) -> dict[str, Freshness]:
    """Each measured column's record and whether its answers are today's code's (``commits``:
    with a stale one's commits since, from git)."""
    return {
        k: freshness(records_dir() / rel, rel, commits, records_dir() / "before-after")
        for k, rel in t.rows.items()
        if (records_dir() / rel / "predictions.jsonl").is_file()
    }


def _stage_lines(t: RunTable, have: dict[str, dict], common: list[str]) -> list[str]:
    """Where each column's questions were lost (``evals.stages``, as ``eval`` wrote it), on the
    questions of the table; none where no column's record has them."""
    from hopgraph.evals.stages import APART, STAGES

    staged = {k: m["stages"] for k, m in have.items() if m.get("stages")}
    if not staged:
        return []
    out = [
        "Where the questions were lost (the first stage their gold evidence failed; "
        "`hopgraph view` on a record filters its questions by it):",
        "",
        "| stage | " + " | ".join(staged) + " |",
        "|---" * (len(staged) + 1) + "|",
    ]
    for stage in (*STAGES, *APART):
        counts = [sum(s.get(q) == stage for q in common) for s in staged.values()]
        if any(counts):
            out.append(f"| {stage} | " + " | ".join(map(str, counts)) + " |")
    unstaged = [
        f"{k} (`hopgraph eval benchmarks/results/{t.rows[k]}`)" for k in have if k not in staged
    ]
    if unstaged:
        out += ["", "Not counted, their metrics.json holds no stages: " + ", ".join(unstaged) + "."]
    return out + ["", *_gold_answer_lines(have, common)]


def _gold_answer_lines(have: dict[str, dict], common: list[str]) -> list[str]:
    """Per column, where its wrong answers' gold answer went (``evals.stages.gold_answer_held``,
    as ``eval`` wrote it): each template that wrote it, and that only read it."""
    from hopgraph.evals.stages import gold_answer_table

    rows = []
    for k, m in have.items():
        held = [m["gold_answer"][q] for q in common if q in (m.get("gold_answer") or {})]
        if held:
            label = f"{k} ({len(held)}; in no prompt or reply: {sum(not h for h in held)})"
            for tpl, did in gold_answer_table(held).items():
                rows.append(f"| {label} | `{tpl}` | {did['wrote']} | {did['read']} |")
                label = ""
    if not rows:
        return []
    head = (
        "Where a wrong answer's gold answer went (`hopgraph eval`: a template whose reply held "
        "it wrote it; one whose prompt alone held it read it only, and a note or a short answer "
        "that did dropped it; a gold that is yes, no or words of the question is left out):"
    )
    table = ["| column (wrong answers) | template | wrote it | read it only |", "|---|---|---|---|"]
    return [head, "", *table, *rows, ""]


HISTORY = "**History, not today's code:**"


def _record_lines(fresh: dict[str, Freshness], have: dict[str, dict]) -> list[str]:
    """Which record, revision and method code each column reads, and whether that code is
    today's: a stale column names what changed since."""
    rows = [
        f"| {k} | `{f.folder}` | {f.revision[:7] or '?'} | {f.fingerprint or '?'} | {f.words()} |"
        for k, f in fresh.items()
        if k in have
    ]
    return [
        "**Records:**",
        "",
        "| column | record | revision | code | today's code? |",
        "|---|---|---|---|---|",
        *rows,
        "",
    ]


def _code_lines(t: RunTable, have: dict[str, dict]) -> list[str]:
    """A warning where the table's answers mix method code: a column answered by two code
    fingerprints, or two columns of one agent by different ones (columns of different agents
    run different graphs, so their fingerprints differ by nature)."""
    codes = code_by_column(t, list(have))
    agent = {k: _manifest(t.rows[k]).get("agent", "") for k in have}
    mixed = [k for k, c in codes.items() if len(c) > 1]
    per_agent: dict[str, set] = {}
    for k, c in codes.items():
        per_agent.setdefault(agent[k], set()).update(c)
    split = [a for a, fps in per_agent.items() if len(fps) > 1]
    unrecorded = [k for k, c in codes.items() if "unrecorded" in c]
    if not mixed and not split and unrecorded:
        return [
            f"**Code:** not fingerprinted ({', '.join(unrecorded)}: answers made before "
            "fingerprints were kept), so the columns may come from different revisions of "
            "the method's code.",
            "",
        ]
    if not mixed and not split:
        return []
    words = "; ".join(
        f"{k}: " + ", ".join(f"{fp} ({n})" for fp, n in c.most_common()) for k, c in codes.items()
    )
    return [
        f"**Mixed code:** these answers come from more than one revision of the method's "
        f"code (answers per fingerprint: {words}).",
        "",
    ]


def _trace_lines(t: RunTable, have: dict[str, dict]) -> list[str]:
    """Which columns' records keep no traces (made before records kept them, 2026-11-27), so a
    reader knows where the why of a question cannot be looked up."""
    bare = [k for k in have if not any((records_dir() / t.rows[k] / "traces").glob("*.jsonl.gz"))]
    if not bare:
        return []
    return [
        f"**Traces:** the records of {', '.join(bare)} keep none (made before result records "
        "kept their traces); `hopgraph trace` can show a question of a column only once "
        "it is re-made.",
        "",
    ]


def build_by_question(t: RunTable, have: dict[str, dict]) -> dict[str, dict[str, str]]:
    """The llama.cpp build of the embedded model's server behind each reported answer, per
    column: the manifest lists each sitting's build (``llama_cpp_build``: the CPU features it
    uses) and each answer names its sitting (older lines carry the sitting's speed instead);
    an answer whose sitting recorded no build (an older sitting, or another server) is
    "unrecorded"."""
    out = {}
    for k, m in have.items():
        sittings = _manifest(t.rows[k]).get("sittings") or []
        preds = read_predictions(records_dir() / t.rows[k] / "predictions.jsonl")
        out[k] = {
            q: _build_name(sitting_of(preds[q], sittings).get("llama_cpp_build"))
            for q in m["per_question"]
            if q in preds
        }
    return out


def _build_name(features: list[str] | None) -> str:
    if not features:
        return "unrecorded"
    return "AVX-512" if any(f.startswith("AVX512") for f in features) else "+".join(features)


def _mixes_builds(builds: dict[str, dict[str, str]]) -> bool:
    return len({b for col in builds.values() for b in col.values()} - {"unrecorded"}) > 1


def _build_lines(builds: dict[str, dict[str, str]]) -> list[str]:
    """A warning where the table's answers come from more than one llama.cpp build: with the
    same model and code, QD-C without the entropy budget (which acts after decomposition)
    made 53 LLM calls on the first reported HotpotQA question on the AVX-512 build and 33 on
    the portable AVX2 wheel, as QD-C's record did, and the wheel reproduced QD-C's recorded
    answer exactly; a paired difference across builds carries that noise too."""
    if not _mixes_builds(builds):
        return []
    counts = {k: Counter(b.values()) for k, b in builds.items()}
    words = "; ".join(
        f"{k}: " + ", ".join(f"{b} ({n})" for b, n in c.most_common()) for k, c in counts.items()
    )
    return [
        f"**llama.cpp builds:** these answers come from more than one build of the "
        "embedded model's server, and a build can change a greedy answer, so paired "
        f"differences carry that noise too (reported answers per build: {words}; each "
        "verdict below says how many of its pairs were answered on two builds).",
        "",
    ]


def _template_rows(have: dict[str, dict]) -> list[str]:
    """Calls per question and LLM seconds per call, by prompt template (over each column's
    questions that list them)."""
    names = sorted({n for m in have.values() for n in m.get("by_template", {})})
    out = [
        "| template: calls per question, LLM seconds per call | " + " | ".join(have) + " |",
        "|---" * (len(have) + 1) + "|",
    ]
    for name in names:
        cells = []
        for m in have.values():
            t = m.get("by_template", {}).get(name)
            cells.append(f"{t['calls']:.2f}, {t['seconds'] / t['calls']:.1f} s" if t else "")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return out + [""]


def _claim_line(c: Claim, have: dict[str, dict], pool: int = 0) -> str:
    """The sign test on every question both variants finished: a third column that has run
    fewer (an ablation sized 15 beside two at 30) narrows the table, not the test."""
    if c.better not in have or c.worse not in have:
        return f"{c.better} vs {c.worse} on {c.metric}: not measured yet."
    common = sorted(set(have[c.better]["per_question"]) & set(have[c.worse]["per_question"]))
    a = [have[c.better]["per_question"][q].get(c.metric) for q in common]
    b = [have[c.worse]["per_question"][q].get(c.metric) for q in common]
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    if not pairs:
        return f"{c.better} vs {c.worse} on {c.metric}: no question has both scored yet."
    worse, better = [y for _, y in pairs], [x for x, _ in pairs]
    r = paired(worse, better, lower=c.lower)
    verdict = {"better": "holds", "worse": "reversed"}.get(r.verdict, "not significant")
    both = "both finished" if len(pairs) == len(common) else "scored in both"
    interval = f"; difference {r.diff:+.3f}" + (
        f", 95 % interval [{r.ci[0]:+.3f}, {r.ci[1]:+.3f}]" if r.ci else ""
    )
    return (
        f"{c.better} beats {c.worse} on {c.metric}: **{verdict}** ({fmt(r.mean_b)} vs "
        f"{fmt(r.mean_a)}; better on {r.better}, worse on {r.worse} of the {r.n} questions "
        f"{both}; sign test p = {r.sign_p:.3g}{interval})"
        + needed_text(r.verdict, r.needed_n, pool)
        + "."
    )


def _cross_build_text(c: Claim, builds: dict[str, dict[str, str]]) -> str:
    """Where a table mixes builds: how many of a claim's pairs had their two answers made on
    different llama.cpp builds (both known)."""
    if not _mixes_builds(builds):
        return ""
    a, b = builds.get(c.better, {}), builds.get(c.worse, {})
    pairs = [q for q in a if q in b]
    known = [q for q in pairs if "unrecorded" not in (a[q], b[q])]
    cross = sum(a[q] != b[q] for q in known)
    return f" Answered on two builds: {cross} of its {len(known)} pairs." if known else ""


def needed_text(verdict: str, needed_n: int | None, pool: int) -> str:
    """Where a verdict is not significant: how many questions its effect would need, and
    whether the data holds that many (a row needing more stops there)."""
    if verdict != "not significant":
        return ""
    if needed_n is None:
        return "; no difference to detect"
    if pool and needed_n > pool:
        return f"; about {needed_n:,} questions for 80 % power, more than the {pool} the data holds"
    return f"; about {needed_n:,} questions would give it 80 % power"


def _seconds_caveats(have: dict[str, dict], common: list[str]) -> list[str]:
    """Why a table's seconds may not compare: replies from the response cache, which took no
    time at the endpoint (a verdict's second arm asks what its first already asked), and
    endpoints of different speed on the questions the endpoint did answer."""
    from hopgraph.evals.evaluate import uncached

    live = {n: sorted(set(common) & set(uncached(m["per_question"]))) for n, m in have.items()}
    hits = [
        f"{n} {len(common) - len(qs)} of {len(common)}" for n, qs in live.items() if qs != common
    ]
    speed = _speed_caveat({n: m for n, m in have.items() if live[n]}, live)
    return [
        f"Seconds: questions answered in whole or part from the response cache ({'; '.join(hits)})"
        " took no time at the endpoint, so those columns' seconds are not the method's."
    ] * bool(hits) + [speed] * bool(speed)


def _speed_caveat(have: dict[str, dict], live: dict[str, list[str]]) -> str:
    """Seconds compare only where the endpoint ran equally fast: two hosts of one kind read
    the embedded model's prompts 1.65x apart, and two llama.cpp builds 1.9x apart on one.
    Says so when the columns' recorded rates (each sitting's probe, on its ``live`` questions:
    those not answered from the cache) differ by more than SPEED_TOLERANCE, or when some
    columns recorded none and others did."""
    differ, unknown = [], set()
    for key, label in SPEEDS:
        rates = {}
        for name, m in have.items():
            vals = [v for q in live[name] if (v := m["per_question"][q].get(key))]
            rates[name] = mean(vals) if vals else None
        known = {n: r for n, r in rates.items() if r is not None}
        if known and len(known) < len(rates):
            unknown |= set(rates) - set(known)
        elif known and max(known.values()) > (1 + SPEED_TOLERANCE) * min(known.values()):
            differ.append(f"{label} " + " / ".join(f"{r:.1f}" for r in known.values()))
    varied = []  # a column whose sittings ran on another machine or build (probe noise aside)
    for name, m in have.items():
        vals = [v for q in live[name] if (v := m["per_question"][q].get("prefill_tokens_per_s"))]
        if vals and max(vals) > MACHINE_RATIO * min(vals):
            varied.append(f"{name} {min(vals):.1f} to {max(vals):.1f}")
    within = (
        f" within a column, its sittings read prompts at other speeds ({'; '.join(varied)} "
        "tokens/s), so its mean seconds mix machines."
        if varied
        else ""
    )
    if differ:
        return (
            f"Seconds: the endpoint's speed differed between these columns ({'; '.join(differ)} "
            "tokens/s), so their seconds do not compare; their token counts do."
            + (" Also" + within if within else "")
        )
    if within:
        return "Seconds:" + within
    if unknown:
        return (
            f"Seconds: {', '.join(sorted(unknown))} recorded no endpoint speed (run before "
            "sittings were timed), so the seconds may come from machines of different speed; "
            "the token counts compare."
        )
    return ""


SPEEDS = (("prefill_tokens_per_s", "prompt reading"), ("decode_tokens_per_s", "generation"))
SPEED_TOLERANCE = 0.15
MACHINE_RATIO = 1.5
"""Prompt-reading rates this far apart within one column come from another machine or
llama.cpp build (1.65x and 1.9x measured), not from the probe's own spread (about 1.2x)."""


def _manifest_model(rel: str) -> str:
    man = _manifest(rel)
    return str(man.get("model", "?"))


def _deviation_lines(deviations: list[str]) -> list[str]:
    return ["**Differs from the paper:**", ""] + [f"- {d}" for d in deviations] + [""]


def bench_table(t: BenchTable) -> list[str]:
    out = [f"## {t.method}: {t.title}", "", f"**Paper:** {t.finding}", ""]
    out += _deviation_lines(t.deviations) if t.deviations else []
    reports = [_load(f) for f in t.files]
    progress = bool(t.progress) and not any(reports)
    answered = RunFolder(records_dir() / t.progress).done() if progress else {}
    if answered:
        out += _progress_lines(t.progress, answered)
    else:
        out += renderer(t.render)(reports)
    if t.command:
        out += ["", "Reproduce:", "", f"    {t.command}", ""]
    return out


def _progress_lines(rel: str, answered: dict[str, dict[str, Any]]) -> list[str]:
    """A run that has begun but has no report yet: how far it has come, so the page does not
    say "Not measured yet" of records that are committed."""
    failed = sum(1 for p in answered.values() if p.get("error"))
    q = _manifest(rel).get("questions", "its question file")
    return [
        f"In progress: {len(answered)} questions of `{q}` answered so far"
        + (f" ({failed} failed)" if failed else "")
        + f", committed as they come in `benchmarks/results/{rel}`; the table appears when the "
        "run ends and writes its report.",
        "",
    ]


# -- the tables ------------------------------------------------------------------------------
def renderer(spec: str) -> Callable[[list[dict[str, Any] | None]], list[str]]:
    """A benchmark's renderer: ``benchmarks/file.py:function`` (a path in the checkout) or
    ``package.module:function``."""
    import importlib

    from hopgraph.graphs import load_file

    where, _, name = spec.rpartition(":")
    if where.endswith(".py"):
        module = load_file(checkout() / where)
    else:
        module = importlib.import_module(where)
    return getattr(module, name)


def all_tables() -> list[RunTable | BenchTable]:
    """The studies, in page order (``STUDIES`` of the checkout)."""
    from hopgraph.graphs import load_file

    return list(load_file(checkout() / STUDIES).TABLES)


INTRO = (
    "Generated by `hopgraph results` from the records in `benchmarks/results/`; do not edit. "
    "Every figure comes from a committed record; CI checks that these pages are current. A "
    "claim's verdict is a two-sided sign test on the questions both variants finished."
)


def render_pages(tables: list[RunTable | BenchTable] | None = None) -> dict[str, str]:
    """File name -> Markdown: ``index.md`` (every study with its headline verdicts) and one
    page a study (``<slug>.md``)."""
    pages: dict[str, str] = {}
    index = ["# Results", "", INTRO, ""]
    for t in all_tables() if tables is None else tables:
        lines = run_table(t) if isinstance(t, RunTable) else bench_table(t)
        title = lines[0].removeprefix("## ") if lines else _title(t)
        name = f"{_slug(t)}.md"
        pages[name] = "\n".join([f"# {title}", "", *lines[1:]]).rstrip() + "\n"
        marked = ["- **history**: answered by code that is gone (its page says why)"]
        index += [
            f"## [{title}]({name})",
            "",
            *(marked if HISTORY in "".join(lines) else []),
            *_headlines(lines),
            "",
        ]
    pages["index.md"] = "\n".join(index).rstrip() + "\n"
    return pages


def _title(t: RunTable | BenchTable) -> str:
    return f"{t.method}: {t.title}"


def _headlines(lines: list[str]) -> list[str]:
    """A study's verdicts as the index shows them: each claim's sentence with its n and p."""
    out = []
    for line in lines:
        if line.startswith("- ") and "**" in line:
            n = re.search(r"of the (\d+) questions", line)
            p = re.search(r"sign test p = ([0-9.e-]+)", line)
            figures = ", ".join([*([f"n = {n[1]}"] if n else []), *([f"p = {p[1]}"] if p else [])])
            out.append(line.split(" (", 1)[0].rstrip(":;,") + (f" ({figures})" if figures else ""))
    return out or ["- no claim tested (a measurement: see its page)"]


def write(folder: Path | None = None) -> Path:
    """The pages, and the plots they show in ``plots/`` beside them (only those, fresh); a
    page of a study no longer defined is removed."""
    folder = folder or pages_dir()
    folder.mkdir(parents=True, exist_ok=True)
    tables = all_tables()  # the studies file is loaded once, for the pages and their plots
    pages = render_pages(tables)
    for old in folder.glob("*.md"):
        if old.name not in pages:
            old.unlink()
    for name, text in pages.items():
        (folder / name).write_text(text)
    path = folder / "index.md"
    folder = folder / "plots"
    folder.mkdir(exist_ok=True)
    made: dict[str, str] = {}
    for t in tables:
        if isinstance(t, RunTable):
            have = _have(t)
            if have:
                common = sorted(set.intersection(*(set(m["per_question"]) for m in have.values())))
                made |= table_plots(t, have, common)
    for old in folder.glob("*.svg"):
        if old.name not in made:
            old.unlink()
    for name, svg in made.items():
        (folder / name).write_text(svg)
    return path


def _have(t: RunTable) -> dict[str, dict]:
    metrics = {label: _load(f"{rel}/metrics.json") for label, rel in t.rows.items()}
    return {k: v for k, v in metrics.items() if v and v.get("per_question")}


def stale(folder: Path | None = None) -> list[str]:
    """The pages under ``folder`` (default ``pages_dir``) that are not what the records give:
    missing, different, or of a study no longer defined."""
    folder = folder or pages_dir()
    pages = render_pages()
    wrong = [
        n
        for n, text in pages.items()
        if not (folder / n).is_file() or (folder / n).read_text() != text
    ]
    return sorted(wrong + [p.name for p in folder.glob("*.md") if p.name not in pages])


def studies_json(headlines_only: bool = False) -> list[dict[str, Any]]:
    """Every study of record columns (the headline ones only, where asked): its page, and each
    column's record, revision, fingerprint, whether it is current and, where it is not, the
    commits to its method since (``hopgraph results --json``)."""
    return [
        {
            "page": f"docs/results/{_slug(t)}.md",
            "title": _title(t),
            "headline": t.headline,
            "columns": [{"column": k, **f.as_dict()} for k, f in column_freshness(t, True).items()],
        }
        for t in all_tables()
        if isinstance(t, RunTable) and (t.headline or not headlines_only)
    ]


def stale_headlines() -> list[str]:
    """The headline studies' columns whose answers are not today's code's, one line each."""
    return [
        f"{s['title']}: {c['column']} ({c['folder']} at {c['revision'][:7]}; "
        + (
            f"{c['commits_since']} commits to its method since"
            if c["commits_since"] is not None
            else "its method changed since"
        )
        + ")"
        for s in studies_json(headlines_only=True)
        for c in s["columns"]
        if not c["current"]
    ]


def _slug(t: RunTable | BenchTable) -> str:
    """A plot's file name stem: the title's first 60 characters, and where it was cut, a hash
    of the whole title, so two tables whose titles share a beginning keep their own plots."""
    full = re.sub(r"[^a-z0-9]+", "-", f"{t.method} {t.title}".lower()).strip("-")
    if len(full) <= 60:
        return full
    return f"{full[:60]}-{hashlib.sha256(full.encode()).hexdigest()[:6]}"


def table_plots(t: RunTable, have: dict[str, dict], common: list[str]) -> dict[str, str]:
    """File name -> SVG: quality against cost for the table's first quality claim (one point
    per column, the paired interval against that claim's base as the bar), and the claims'
    per-question win / loss strips. {} for a table without claims."""
    from hopgraph.evals.evaluate import LOWER_IS_BETTER
    from hopgraph.presentation import plots

    out: dict[str, str] = {}
    claims = [c for c in t.claims if c.better in have and c.worse in have]
    quality = [c for c in claims if c.metric not in LOWER_IS_BETTER]
    costs = [k for k, _ in plots.COSTS if k in t.metrics]
    if quality and costs and len(have) > 1:
        metric, base = quality[0].metric, quality[0].worse
        scores = {k: have[k]["per_question"] for k in have}
        points = []
        for k in have:
            ids = [q for q in common if metric in scores[k][q] and metric in scores[base][q]]
            if not ids:
                continue
            vals = [scores[k][q][metric] for q in ids]
            base_vals = [scores[base][q][metric] for q in ids]
            r = paired(base_vals, vals) if k != base else None
            interval = (r.mean_a + r.ci[0], r.mean_a + r.ci[1]) if r and r.ci else None
            cost = {c: mean(scores[k][q].get(c, 0.0) for q in ids) for c in costs}
            points.append(plots.Point(k, mean(vals), cost, interval))
        out[f"{_slug(t)}-cost.svg"] = plots.quality_cost(points, metric)
    rows = []
    for c in claims:
        per = (have[c.better]["per_question"], have[c.worse]["per_question"])
        ids = [q for q in common if c.metric in per[0][q] and c.metric in per[1][q]]
        if ids:
            row = plots.verdicts(
                [per[1][q][c.metric] for q in ids], [per[0][q][c.metric] for q in ids], c.lower
            )
            rows.append((f"{c.better} vs {c.worse}, {c.metric}", row))
    if rows:
        out[f"{_slug(t)}-strip.svg"] = plots.win_loss_strip(rows)
    return out
