"""``hopgraph optimize``: better prompts for a graph's roles, found from its own traces (DSPy's
MIPROv2 bootstrap / propose / select, GEPA's minibatch-first acceptance, on hopgraph's run
folders and statistics).

- **bootstrap**: the method answers the training questions as a normal run folder; each role's
  calls on questions it answered right (exact match) are demonstration candidates (the call's
  template variables and reply, ``extra.inputs``); a set is drawn to cover the choices those
  replies made (``draw_demos``), and where it does not fit the context window its passages are
  cut to those its reply used (``cut_demo``);
- **propose**: per role and round, ``candidates`` candidates: demonstration sets from several
  draws, and instructions the proposer (``optimizer.proposer``) writes from different samples of
  the role's wrong answers, each after the first sampled and given a short tip (``TIPS``); then
  the joint candidate of the best of each kind. Round 1 proposes from the bootstrap's failures,
  a later round from the kept candidate's own (``_failure_source``), so rounds chain;
- **select**: successive halving over two rungs (``halve``): every candidate answers a
  minibatch of the validation questions, and only the better half that is not below the
  incumbent there answers the whole validation; a candidate replaces the incumbent when its
  validation mean beats the incumbent's by more than one question's worth (``keeps``); its sign
  test and interval are recorded beside it, never the gate. The hand-written incumbent's
  validation answers are the bootstrap's own. The search ends after ``rounds``, at the budget,
  or in a round no candidate wins; the paired test on held-out questions (``--test``) is the
  last word.

Every step is a run folder sharing one response cache, so a candidate pays only for the calls its
change reaches, and a killed search resumes where it was: finished runs are read back, the
record (``record.json``) is rewritten after each candidate."""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import math
import random
import re
import shutil
import time
import typing
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from statistics import fmean
from typing import Any, Literal

from hopgraph.agents.role import Role, roles_in
from hopgraph.config import Context
from hopgraph.evals.evaluate import score_prediction
from hopgraph.evals.stats import paired
from hopgraph.harness.cost import Budget
from hopgraph.harness.run_folder import (
    QuestionSet,
    method_code,
    scored_predictions,
    trace_path,
    trace_records,
)
from hopgraph.models.chat import parse_reply
from hopgraph.models.events import tally_calls
from hopgraph.optimizer.proposer import propose_instruction
from hopgraph.optimizer.record import (
    KEEP_RULE,
    BudgetSpent,
    SearchRecord,
    budget_text,
    is_under_way,
    preds_in,
    scored,
    sent_tokens,
)
from hopgraph.prompts import DEMOS, MARK, PromptError, Prompts, prompts_for
from hopgraph.wording import counted

RACE_RULE = (
    "successive halving: every candidate on the minibatch first, the better half not below the "
    "incumbent there on the whole validation"
)

TIPS = (
    "",
    "Keep the instruction to one or two sentences about what the step must do.",
    "Say which part of what the step is sent it must read first, and what to reply when that "
    "part does not settle the question.",
    "Name the mistake these cases share and say how to avoid it.",
    "Say what a right reply looks like in general terms: its form and its length.",
    "Say when the step should stop, or look for more evidence, rather than guess.",
)
"""Short stated tips, one per instruction proposal after the first (MIPROv2's grounded proposer
hands its proposer tips of this kind), so the proposals differ in what they attend to."""

SAMPLING = 0.7
"""The proposer's temperature for the proposals after the first (the first is greedy)."""

POOL_FAILURES = 12
"""Pool questions a later round's incumbent answers to find its own failures (at most)."""


def declared_roles(agent: str, ctx: Context | None = None) -> dict[str, Role]:
    """The ``Role``s in the agent's code (its fingerprinted modules), by template."""
    found: dict[str, Role] = {}
    for module in method_code(agent, ctx).get("files", {}):
        try:
            found |= {r.template: r for r in roles_in(importlib.import_module(module))}
        except ImportError:
            continue
    return found


def choice_of(role: Role | None, reply: str) -> str:
    """The choice a reply made: the value of its schema's first choice field (MMAPG's
    planner: the step's ``type``); "" for a role without one or a reply that does not parse."""
    schema = role.schema if role is not None else None
    fields = schema.model_fields if schema is not None else {}
    name = next((n for n, f in fields.items() if typing.get_origin(f.annotation) is Literal), "")
    if not name or schema is None:
        return ""
    try:
        return str(getattr(parse_reply(schema, reply), name))
    except ValueError:
        return ""


def demo_tokens(call: dict[str, Any]) -> int:
    """What a call costs as a demonstration, in tokens: its own prompt and reply, or, where
    its rendered demonstration is longer (inputs holding more than its prompt showed, as
    MMAPG's planner nodes held their passages in older traces), that text at the call's own
    characters per token (traces with their content; else the call's tokens)."""
    tokens = (call.get("prompt_tokens") or 0) + (call.get("completion_tokens") or 0)
    shown = sum(len(str(m.get("content") or "")) for m in call.get("messages") or [])
    if not shown or not call.get("prompt_tokens"):
        return tokens
    # 0 where refused: refused with its reason when its candidate's overlay is checked
    chars = _rendered({"inputs": call["extra"]["inputs"], "output": call["reply"]})
    return max(tokens, round(chars * call["prompt_tokens"] / shown)) if chars else tokens


def draw_demos(calls: list[dict[str, Any]], k: int, rng: random.Random) -> list[dict[str, Any]]:
    """``k`` demonstrations drawn from ``calls``, covering first the choices the role made
    (one call per choice, each from a question not drawn yet where one is left), then at
    random: a set of a looped role's commonest step alone would teach only that step (the
    majority-label bias of few-shot prompts), and MMAPG's planner ends a loop by a Stop in few
    of its calls. Where every call made the same choice, or none, this is ``rng.sample``."""
    choices = sorted({c["choice"] for c in calls})
    if len(choices) < 2:
        return rng.sample(calls, min(k, len(calls)))
    drawn: list[dict[str, Any]] = []
    for choice in sorted(choices, key=lambda ch: sum(c["choice"] == ch for c in calls)):
        if len(drawn) == k:
            break
        left = [c for c in calls if c["choice"] == choice]
        fresh = [c for c in left if c["qid"] not in {d["qid"] for d in drawn}]
        drawn.append(rng.choice(fresh or left))
    rest = [c for c in calls if c not in drawn]
    return drawn + rng.sample(rest, min(k - len(drawn), len(rest)))


def roles_of(agent: str, ctx: Context | None = None) -> list[str]:
    """The templates of the agent's roles: what ``--roles`` may name."""
    return sorted(declared_roles(agent, ctx))


@dataclass
class Candidate:
    id: str
    role: str
    kind: str
    """``demos`` | ``instruction``"""
    instructions: dict[str, str]
    demos: dict[str, list[str]]
    """role -> question ids whose calls are its demonstrations."""
    reasoning: str = ""
    scores: dict[str, float] = field(default_factory=dict)
    better: int = 0
    worse: int = 0
    p: float = 1.0
    mean: float = 0.0
    incumbent_mean: float = 0.0
    won: bool = False
    tokens: int = 0
    sent: list[int] = field(default_factory=lambda: [0, 0])
    """Prompt and completion tokens it sent to the endpoint (its proposal and its run)."""
    seconds: float = 0.0
    """Its proposal's time and its validation questions' own seconds."""
    skipped: str = ""
    """Why it was never scored (the proposer wrote no instruction)."""
    stage: str = ""
    """How far it was scored: "" (not yet), ``minibatch``, ``validation``."""
    minibatch: dict[str, Any] = field(default_factory=dict)
    """Its minibatch rung: ``n``, ``mean``, ``incumbent_mean`` and ``scores`` per question."""
    stopped: str = ""
    """Why it never answered the whole validation (it lost on the minibatch)."""
    proposed_sent: list[int] = field(default_factory=lambda: [0, 0])
    proposed_seconds: float = 0.0
    """Its proposal's own tokens and time (``sent`` and ``seconds`` add its runs')."""
    tip: str = ""
    """The tip its proposer was given (``TIPS``)."""
    cut: dict[str, list[str]] = field(default_factory=dict)
    """role -> its demonstrations whose passages were cut to fit (``cut_demo``)."""


@dataclass
class Plan:
    agent: str
    train: Path
    out: Path
    roles: list[str]
    metric: str = "f1"
    rounds: int = 2
    demos: int = 3
    val_share: float = 0.5
    minibatch: int = 0
    """Validation questions every candidate answers first (0: each answers all)."""
    candidates: int = 2
    """Candidates per role and round: demonstration sets and instructions, half each (the
    joint candidate of the best of each comes on top)."""
    alpha: float = 0.1
    seed: int = 0
    budget: Budget | None = None
    test: Path | None = None

    def check(self, ctx: Context | None = None) -> list[str]:
        """What is refused before any call (each a line naming it)."""
        problems = []
        known = roles_of(self.agent, ctx)
        problems += [
            f"--roles {r}: {self.agent} has no such role (its roles: {', '.join(known)})"
            for r in self.roles
            if r not in known
        ]
        if self.test is not None:
            problems += shared_questions(self.train, self.test)
        if self.candidates < 1:
            problems.append(f"--candidates must be at least 1, not {self.candidates}")
        if not 0 < self.val_share < 1:
            problems.append(f"--val-share is a fraction between 0 and 1, not {self.val_share}")
        return problems


LOOKALIKES = str.maketrans(
    "аеорсухіјѕԁһӏԛԝαεοριυνκτχАВЕКМНОРСТХІЈЅАΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijsdhlqwaeopiuvktxABEKMHOPCTXIJSABEZHIKMNOPTYX",
)
"""Cyrillic and Greek letters drawn as Latin ones (Cyrillic о for o): a question written with
them is the same question to a reader."""


def question_text(text: str) -> str:
    """A question as two files are compared: Unicode compatibility form (NFKC: fullwidth and
    composed letters as their plain ones), accents, zero-width and other format characters,
    Cyrillic and Greek look-alikes of Latin letters and every script's digits (Arabic-Indic
    ٣ as 3) as their plain forms, case, punctuation and spacing dropped."""
    import unicodedata

    text = unicodedata.normalize("NFKD", text)
    text = "".join(
        c for c in text if not unicodedata.combining(c) and unicodedata.category(c) != "Cf"
    )
    text = unicodedata.normalize("NFKC", text).translate(LOOKALIKES)
    text = "".join(str(unicodedata.decimal(c)) if c.isdecimal() else c for c in text)
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def shared_questions(train: Path, test: Path) -> list[str]:
    """Why ``test`` cannot judge a search on ``train``: questions they share by id or by text
    (``question_text``: a training question under a new id, or in other case and spacing, is
    one the search read), each a line naming both."""
    known = QuestionSet.read(train).questions
    by_text = {question_text(q.question): q.id for q in known}
    ids = {q.id for q in known}
    problems = []
    for q in QuestionSet.read(test).questions:
        if q.id in ids:
            problems.append(f"--test {test}: {q.id} is a question of {train} too")
        elif (twin := by_text.get(question_text(q.question))) is not None:
            problems.append(f"--test {test}: {q.id} asks what {train}'s {twin} asks")
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        return [
            "; ".join(problems[:3]) + more + ": the verdict must be on questions the "
            "optimizer never read"
        ]
    return []


def keeps(mean: float, incumbent_mean: float, n: int) -> bool:
    """The keep rule: a candidate replaces the incumbent when its validation mean beats the
    incumbent's by more than one question's worth (1 / n of the metric's 0-1 range); closer is a
    tie and the incumbent stays. Significance cannot be the gate on a validation split this
    small: a two-sided sign test on k untied questions never goes below 2 * 0.5**k, so 4 better
    and 0 worse is p = 0.125 at best. The held-out verdict is the paired check."""
    return n > 0 and round(mean - incumbent_mean, 4) > round(1 / n, 4)


def schedule(r: int, role: str, n: int) -> list[tuple[str, str, int]]:
    """Round ``r``'s candidates for ``role``: ``(id, kind, k)``, the k-th demonstration draw or
    instruction proposal, ``n`` in all, demonstrations first where ``n`` is odd. The first of
    each kind keeps the id a one-candidate search gave it, so its records resume."""
    prefix = f"{r:02d}-{role.replace('/', '.')}"
    kinds = [("demos", k) for k in range((n + 1) // 2)]
    kinds += [("instruction", k) for k in range(n // 2)]
    return [(f"{prefix}-{kind}{k + 1 if k else ''}", kind, k) for kind, k in kinds]


def lead(c: Candidate) -> float:
    """How far a candidate is ahead of the incumbent on its last rung."""
    if c.stage == "minibatch":
        return round(c.minibatch["mean"] - c.minibatch["incumbent_mean"], 4)
    return round(c.mean - c.incumbent_mean, 4)


def halve(cands: list[Candidate]) -> list[Candidate]:
    """Successive halving's second rung: of candidates scored on the minibatch, the better half
    by their lead there (ties in schedule order) that is not below the incumbent go on to the
    whole validation; each other is marked ``stopped`` with why. The same minibatch scores give
    the same cut, so a resumed search promotes the same ones. Racing with confidence bounds
    would promote every candidate here: on a minibatch of a few questions no bound separates
    two candidates (the reason significance cannot be the keep rule), so the rung cuts by rank."""
    room = math.ceil(len(cands) / 2)
    ahead = {id(c): c.minibatch["mean"] - c.minibatch["incumbent_mean"] for c in cands}
    promoted = []
    for i, c in enumerate(sorted(cands, key=lambda c: -ahead[id(c)])):
        mb = c.minibatch
        if ahead[id(c)] < 0:
            c.stopped = (
                f"below the incumbent on the minibatch ({mb['mean']:.3f} against "
                f"{mb['incumbent_mean']:.3f} on {mb['n']})"
            )
        elif i >= room:
            c.stopped = f"not among the best {room} of {len(cands)} on the minibatch"
        else:
            promoted.append(c)
    return promoted


def cut_demo(demo: dict[str, Any]) -> dict[str, Any] | None:
    """A demonstration whose passage lists (inputs holding items with a ``text``, as QD-C's
    ``contexts``) are cut to the passages its reply used: those it cites as ``[i]`` (the
    templates number passages from 1) or whose title it names. Its ``tokens`` shrink with its
    rendered text; ``cut`` says what went (kept of all, per input). None where nothing is cut."""
    reply = demo["output"] if isinstance(demo["output"], str) else json.dumps(demo["output"])
    said = f" {question_text(reply)} "
    inputs, note = dict(demo["inputs"]), {}
    for name, value in demo["inputs"].items():
        if not isinstance(value, list) or not all(
            isinstance(x, dict) and "text" in x for x in value
        ):
            continue
        titles = [question_text(str(x.get("title") or "")) for x in value]
        kept = [
            x
            for i, (x, title) in enumerate(zip(value, titles, strict=True), 1)
            if f"[{i}]" in reply or (title and f" {title} " in said)
        ]
        if len(kept) < len(value):
            inputs[name], note[name] = kept, [len(kept), len(value)]
    if not note:
        return None
    before, after = _rendered(demo), _rendered({**demo, "inputs": inputs})
    tokens = round(demo["tokens"] * after / before) if before else demo["tokens"]
    return {**demo, "inputs": inputs, "tokens": tokens, "cut": note}


def _rendered(demo: dict[str, Any]) -> int:
    """Characters of ``demo`` rendered as a demonstration (0 where the template refuses it)."""
    try:
        text = prompts_for().render(
            DEMOS, demos=[{"inputs": demo["inputs"], "output": demo["output"]}], prompt=""
        )
    except PromptError:
        return 0
    return len(text)


def split(ids: list[str], val_share: float, seed: int) -> tuple[list[str], list[str]]:
    """Training ids -> (demonstration pool, validation), by a seeded hash (stable under
    reordering)."""
    order = sorted(ids, key=lambda i: hashlib.sha256(f"{seed}:{i}".encode()).hexdigest())
    n_val = max(1, round(len(order) * val_share))
    return order[n_val:], order[:n_val]


def ids_hash(ids: list[str]) -> str:
    return hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()[:16]


@dataclass
class Pool:
    """The demonstration pool: its question ids, and per role the calls it answered right on
    them (each call's variables and reply; its ``id`` the question's id for the question's
    first call of the role, ``<id>#<n>`` for its n-th, as a role called in a loop has)."""

    ids: set[str]
    calls: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    longest: dict[str, int] = field(default_factory=dict)
    """Per role, its longest prompt on them in tokens (what demonstrations must fit beside)."""


class Optimizer:
    """One search into ``plan.out``; ``run(ctx)`` answers through ``runner(agent, dir, ctx,
    budget)`` (an ``harness.runner.Runner`` factory: the CLI's, with its endpoint)."""

    def __init__(
        self,
        plan: Plan,
        ctx: Context,
        runner,  # noqa: ANN001
        proposer_ctx: Context | None = None,
        say: Callable[[str], None] = lambda line: None,
        on_save: Callable[[dict[str, Any]], None] = lambda record: None,
    ):
        """``say``: each step's line as it starts and ends (the CLI prints them);
        ``on_save``: the record each time it is written (the CLI's table of candidates)."""
        self.plan, self.ctx, self.runner, self.say = plan, ctx, runner, say
        self.proposer_ctx = proposer_ctx or ctx
        self.out = plan.out
        self.book = SearchRecord(plan, on_save)
        self.record: dict[str, Any] = self.book.data
        self.pool = Pool(set())
        self._traced: dict[str, list[dict[str, Any]]] = {}
        """The bootstrap's calls per question, read once (pool and proposals read them)."""
        self._order: dict[Path, list[str]] = {}
        """A question file's ids in order, read once (every candidate answers the validation
        file)."""
        self._sources: dict[int, tuple[dict[str, dict], Callable[[str], list]]] = {}
        """Per round, the answers its proposals read failures from, and their calls."""

    @cached_property
    def roles(self) -> dict[str, Role]:
        """The agent's roles by template, found once (``declared_roles``)."""
        return declared_roles(self.plan.agent, self.ctx)

    def save(self) -> None:
        self.book.save()

    # -- steps ----------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        train = QuestionSet.read(self.plan.train)
        demo_ids, val_ids = split(
            [q.id for q in train.questions], self.plan.val_share, self.plan.seed
        )
        self.record["splits"] = {
            "train": str(self.plan.train),
            "train_sha256": train.sha256,
            "demo_pool": len(demo_ids),
            "validation": len(val_ids),
            "demo_pool_ids": ids_hash(demo_ids),
            "validation_ids": ids_hash(val_ids),
        }
        self.record["keep"] = KEEP_RULE
        if self.plan.minibatch:
            self.record["race"] = f"{RACE_RULE} (minibatch {self.plan.minibatch})"
        val_file = self._subset(train, val_ids, "validation")
        self.say(
            f"bootstrap: {len(train.questions)} training questions -> {self.out / 'bootstrap'}"
        )
        boot = self._answer("bootstrap", self.plan.train, None)
        self.record["bootstrap_sent"] = sent_tokens(boot)
        self.pool = self._pool(boot, set(demo_ids))
        self.say(
            f"{len(demo_ids)} for demonstrations and proposals, {len(val_ids)} for "
            f"validation; the incumbent (hand-written) on validation: the bootstrap's answers"
        )
        # the same prompts answered them in the bootstrap: asking again would cost a method's
        # whole run per question wherever the response cache is gone (another machine)
        incumbent = {i: boot[i] for i in val_ids if i in boot}
        self.save()
        for r in range(1, self.plan.rounds + 1):
            best = self._round(r, incumbent, boot, val_file)
            if best is None:
                self.record["stopped"] = f"round {r}: no candidate won"
                break
            incumbent = best
        else:
            self.record["stopped"] = f"after {self.plan.rounds} rounds"
        self._write_overlay()
        self.save()
        if self.plan.test is not None:
            self._verdict(self.plan.test)
        return self.record

    def _verdict(self, test: Path) -> None:
        """The last word: the overlay against the hand-written prompts on ``test`` (questions
        the search never read), paired on the metric, with the validation-to-test gap."""
        self.say(f"verdict: the overlay against the hand-written prompts on {test}")
        hand = self._answer("test/hand-written", test, self._overlay_of(None))
        best, linked = self._current(), self.out / "test" / "optimized"
        if linked.is_symlink():  # an older record's stand-in for an arm never asked
            linked.unlink()
        questions = {"questions": str(test), "questions_sha256": QuestionSet.read(test).sha256}
        if best.id == "hand-written":  # nothing kept: no second arm, and nothing to compare
            scores = [score_prediction(p).get(self.plan.metric, 0.0) for p in hand.values()]
            self.record["test"] = questions | {
                "n": len(scores),
                "hand_written": round(fmean(scores), 4) if scores else None,
                "same_prompts": True,
                "kept": "hand-written",
                "verdict": None,
                "sent": list(sent_tokens(hand)),
            }
            self.say(
                f"verdict: none; nothing was kept, so the test split answered the "
                f"hand-written prompts only ({self.plan.metric} "
                f"{self.record['test']['hand_written']})"
            )
            self.save()
            return
        opt = self._answer("test/optimized", test, self.out / "overlay")
        arms = [hand, opt]
        ids = sorted(set(hand) & set(opt))
        a = [score_prediction(hand[i]).get(self.plan.metric, 0.0) for i in ids]
        b = [score_prediction(opt[i]).get(self.plan.metric, 0.0) for i in ids]
        t = paired(a, b)
        won = next((c for c in self.record["candidates"] if c["id"] == best.id), None)
        self.record["test"] = questions | {
            "n": t.n,
            "hand_written": round(t.mean_a, 4),
            "optimized": round(t.mean_b, 4),
            "better": t.better,
            "worse": t.worse,
            "sign_p": round(t.sign_p, 4),
            "ci": [round(x, 4) for x in t.ci] if t.ci else None,
            "needed_n": t.needed_n,
            "same_prompts": False,
            "kept": best.id,
            "sent": [sum(n) for n in zip(*map(sent_tokens, arms), strict=True)],
            "gap": {
                "validation": round(won["mean"] - won["incumbent_mean"], 4) if won else 0.0,
                "test": round(t.diff, 4),
            },
        }
        ci = f", 95 % CI [{t.ci[0]:+.3f}, {t.ci[1]:+.3f}]" if t.ci else ""
        self.say(
            f"verdict: {self.plan.metric} {t.mean_a:.3f} hand-written, {t.mean_b:.3f} "
            f"optimized ({best.id}) on {t.n} test questions: {t.better} better, "
            f"{t.worse} worse, sign p {t.sign_p:.3g}{ci}"
        )
        self.save()

    def redecide(self) -> bool:
        """The recorded search decided anew under ``keeps`` from its recorded scores (no call):
        rounds in order, each round's best kept candidate the incumbent, a round that keeps
        none the end (the committed searches are one round each); a test verdict made for
        another incumbent is dropped, and a linked optimized arm unlinked, so ``--test``
        answers the kept overlay. True if anything changed."""
        before = json.dumps(self.record, sort_keys=True)
        rounds = sorted({c["id"][:2] for c in self.record["candidates"]})
        self.record["incumbent"], self.record["keep"] = "hand-written", KEEP_RULE
        for r in rounds:
            kept = []
            for c in self.record["candidates"]:
                if c["id"][:2] == r and scored(c) and not c.get("skipped"):
                    c["won"] = keeps(c["mean"], c["incumbent_mean"], len(c["scores"]))
                    kept += [c] * c["won"]
            if not kept:
                self.record["stopped"] = f"round {int(r)}: no candidate won"
                break
            self.record["incumbent"] = max(kept, key=lambda c: c["mean"] - c["incumbent_mean"])[
                "id"
            ]
            self.record["stopped"] = f"after {counted(int(r), 'round')}"
        if json.dumps(self.record, sort_keys=True) == before:
            return False
        self._write_overlay()
        test, linked = self.record.get("test"), self.out / "test" / "optimized"
        if test and test.get("kept", "hand-written") != self.record["incumbent"]:
            del self.record["test"]
            if linked.is_symlink():
                linked.unlink()
        self.book.write()  # its cost as recorded: nothing was asked
        return True

    def _round(self, r: int, incumbent: dict, boot: dict, val_file: Path):  # noqa: ANN202
        """One round: per role, the scheduled candidates and their joint, raced against the
        incumbent (``_race``); the best one kept by ``keeps`` (or None) becomes the incumbent."""
        base = self._current()
        winners = []
        for role in self.plan.roles:
            made = [
                self._known(cid) or self._make(cid, role, kind, k, base, boot, r)
                for cid, kind, k in schedule(r, role, self.plan.candidates)
            ]
            winners += [c for c in self._race(r, role, base, made, incumbent, val_file) if c.won]
        if not winners:
            return None
        best = max(winners, key=lead)
        self.record["incumbent"] = best.id
        self.save()
        return scored_predictions(self.out / "candidates" / best.id)

    def _race(self, r, role, base, made, incumbent, val_file) -> list[Candidate]:  # noqa: ANN001
        """Round ``r``'s candidates for ``role`` scored: on the minibatch, then the joint
        candidate, then ``halve``'s survivors on the whole validation (with no minibatch, every
        candidate on the whole validation). Returns those scored on it, each decided."""
        cands = [c for c in made if c is not None and not c.skipped]
        mb = self.plan.minibatch if self.plan.minibatch < len(self._ids(val_file)) else 0
        for c in cands:
            if not c.stage and not c.stopped:
                self._score(c, incumbent, val_file, mb or None)
        cands = [c for c in cands if not c.skipped]
        joint = self._joint(r, role, base, cands)
        if joint is not None:
            if not joint.stage and not joint.skipped:
                self._score(joint, incumbent, val_file, mb or None)
            cands += [joint] * (not joint.skipped)
        promoted = halve(cands) if mb else cands
        self._replace(*[c for c in cands if c.stopped])
        for c in promoted:
            if c.stage != "validation":
                self._score(c, incumbent, val_file)
        scored = [c for c in cands if c.stage == "validation"]
        for c in scored:
            decided = keeps(c.mean, c.incumbent_mean, len(c.scores))
            if decided != c.won:  # a record scored under another rule, decided anew
                c.won = decided
                self._replace(c)
        return scored

    def _joint(self, r, role, base, cands) -> Candidate | None:  # noqa: ANN001
        """The best demonstration set with the best instruction, where both are ahead of the
        incumbent or level with it, not both level (a joint of two ties is a tie)."""
        cid = f"{r:02d}-{role.replace('/', '.')}-joint"
        if (known := self._known(cid)) is not None:
            return known
        best = {}
        for kind in ("demos", "instruction"):
            mine = [c for c in cands if c.kind == kind and lead(c) >= 0]
            best[kind] = max(mine, key=lead) if mine else None
        demos, instr = best["demos"], best["instruction"]
        if demos is None or instr is None or lead(demos) + lead(instr) <= 0:
            return None
        joint = Candidate(cid, role, "joint", dict(base.instructions), dict(base.demos))
        joint.instructions[role], joint.demos[role] = instr.instructions[role], demos.demos[role]
        joint.cut = {**base.cut, role: demos.cut.get(role, [])}
        joint.reasoning = f"{demos.id} with {instr.id}"
        self.record["candidates"].append(asdict(joint))
        self.save()
        return joint

    def _current(self) -> Candidate:
        cid = self.record["incumbent"]
        for c in self.record["candidates"]:
            if c["id"] == cid:
                return Candidate(**c)
        return Candidate("hand-written", "", "", {}, {})

    def _known(self, cid: str) -> Candidate | None:
        return next((Candidate(**c) for c in self.record["candidates"] if c["id"] == cid), None)

    def _make(self, cid, role, kind, k, base, boot, r) -> Candidate | None:  # noqa: ANN001
        """The k-th demonstration draw or instruction proposal of round ``r`` for ``role``,
        recorded (skipped, saying why, where it repeats an earlier one of the round)."""
        cand = Candidate(cid, role, kind, dict(base.instructions), dict(base.demos))
        cand.cut = dict(base.cut)
        if kind == "demos":
            calls = self.pool.calls.get(role, [])
            if not calls:
                return None
            rng = random.Random(f"{self.plan.seed}:{r}:{role}" + (f":{k}" if k else ""))
            fitting, cut = self._fitting(role, draw_demos(calls, self.plan.demos, rng))
            cand.demos[role] = sorted(c["id"] for c in fitting)
            cand.cut[role] = sorted(cut)
            if not cand.demos[role]:
                cand.skipped = "no demonstration fits the context window beside the role's prompt"
        elif not self._propose(cand, role, k, base, boot, r):
            return None
        twin = next(
            (
                c
                for c in self.record["candidates"]
                if c["id"][:2] == cid[:2]
                and c["role"] == role
                and c["kind"] == kind
                and not c.get("skipped")
                and c["demos"] == cand.demos
                and c["instructions"] == cand.instructions
            ),
            None,
        )
        if twin is not None and not cand.skipped:
            cand.skipped = f"the same prompts as {twin['id']}"
        self.record["candidates"].append(asdict(cand))
        self.save()
        return cand

    def _propose(self, cand: Candidate, role: str, k: int, base, boot, r: int) -> bool:  # noqa: ANN001
        """The proposer's instruction for ``cand`` from a sample of the round's failures (the
        first proposal greedy on the first failures, each later one sampled, on another
        sample, with a tip). False where there is no failure to read."""
        preds, calls_of = self._failure_source(r, base, boot)
        rng = random.Random(f"{self.plan.seed}:{r}:{role}:{k}") if k else None
        failures = self._failures(role, preds, calls_of, rng=rng)
        if not failures:
            return False
        ctx = self.proposer_ctx.replace(temperature=SAMPLING) if k else self.proposer_ctx
        cand.tip = TIPS[k % len(TIPS)]
        began = time.time()
        with tally_calls() as tally:
            self.say(f"{cand.id}: the proposer reads {len(failures)} wrong answers")
            proposal = propose_instruction(role, self.roles[role].source(), failures, ctx, cand.tip)
        cand.seconds = cand.proposed_seconds = round(time.time() - began, 1)
        cand.sent = [tally["sent_prompt"], tally["sent_completion"]]
        cand.proposed_sent, cand.tokens = list(cand.sent), sum(cand.sent)
        text = " ".join(proposal.instruction.replace("{", "(").replace("}", ")").split())
        cand.reasoning = proposal.reasoning
        named = [g for f in failures for g in f["gold"].split("; ") if _names(text, g)]
        if not text:
            cand.skipped = "the proposer wrote no instruction"
        elif named:  # an instruction that carries a case's answer teaches nothing general
            cand.skipped = f"the instruction names a gold answer it was shown ({named[0]!r})"
        if text:
            cand.instructions[role] = text
        return True

    def _failure_source(self, r: int, base: Candidate, boot: dict[str, dict]):  # noqa: ANN202
        """Where round ``r``'s proposals read failures: the bootstrap while the hand-written
        prompts are the incumbent; after a round kept a candidate, that candidate's own answers
        on the pool questions the bootstrap got wrong (up to ``POOL_FAILURES``, answered once
        into ``rounds/<r>-pool``), so a round proposes from what is still wrong."""
        if base.id == "hand-written":
            return boot, self._boot_calls
        if r not in self._sources:
            wrong = [q for q in sorted(self.pool.ids) if _wrong(boot.get(q))][:POOL_FAILURES]
            if not wrong:
                return {}, self._boot_calls
            train = QuestionSet.read(self.plan.train)
            path = self._subset(train, wrong, f"round-{r:02d}-pool")
            folder = self.out / "rounds" / f"{r:02d}-pool"
            preds = self._answer(f"rounds/{r:02d}-pool", path, self._overlay_of(base))
            self._sources[r] = (preds, functools.cache(lambda qid: _calls(folder, qid)))
        return self._sources[r]

    def _fitting(self, role: str, drawn: list[dict[str, Any]]) -> tuple[list[dict], set[str]]:
        """``drawn`` made to fit the embedded model's context window beside the role's longest
        prompt and a reply (QD-C's decomposition carries 10 passages: two such demonstrations
        overflowed 4096 tokens), each costing ``demo_tokens``: the largest first cut to the
        passages their replies used (``cut_demo``), then, while still too long, the largest
        left out. Returns the demonstrations and the ids of those cut; a served endpoint's
        window is unknown here, so all are kept whole."""
        if self.ctx.base_url or not self.ctx.n_ctx:
            return drawn, set()
        room = self.ctx.n_ctx - self.ctx.max_tokens - self.pool.longest.get(role, 0)
        kept, cut = sorted(drawn, key=lambda c: c["tokens"]), set()
        for i in reversed(range(len(kept))):
            if sum(c["tokens"] for c in kept) <= room:
                break
            if (short := cut_demo(kept[i])) is not None:
                kept[i] = short
                cut.add(short["id"])
        kept.sort(key=lambda c: c["tokens"])
        while kept and sum(c["tokens"] for c in kept) > room:
            cut.discard(kept.pop()["id"])
        return kept, cut

    def _score(
        self, cand: Candidate, incumbent: dict, val_file: Path, limit: int | None = None
    ) -> None:
        """``cand`` against the incumbent on the first ``limit`` validation questions (its
        minibatch rung) or on all of them, its run resumed in one folder either way."""
        self.say(f"{cand.id}: on " + (f"the minibatch ({limit})" if limit else "validation"))
        overlay = self._overlay_of(cand)
        try:  # refused once here, not by every question of its run
            Prompts(overlay).check_overrides()
        except PromptError as e:
            cand.skipped = f"its overlay is refused: {e}"
            self._replace(cand)
            return
        preds = self._answer(f"candidates/{cand.id}", val_file, overlay, limit)
        ids = sorted(set(self._ids(val_file, limit)) & set(preds) & set(incumbent))
        a = [score_prediction(incumbent[i]).get(self.plan.metric, 0.0) for i in ids]
        b = [score_prediction(preds[i]).get(self.plan.metric, 0.0) for i in ids]
        test = paired(a, b)
        if limit:
            cand.stage, cand.minibatch = (
                "minibatch",
                {
                    "n": len(ids),
                    "mean": round(test.mean_b, 4),
                    "incumbent_mean": round(test.mean_a, 4),
                    "scores": dict(zip(ids, b, strict=True)),
                },
            )
        else:
            cand.stage, cand.scores = "validation", dict(zip(ids, b, strict=True))
            cand.better, cand.worse, cand.p = test.better, test.worse, round(test.sign_p, 4)
            cand.mean, cand.incumbent_mean = round(test.mean_b, 4), round(test.mean_a, 4)
            cand.won = keeps(cand.mean, cand.incumbent_mean, len(ids))
        cand.sent = [a + b for a, b in zip(cand.proposed_sent, sent_tokens(preds), strict=True)]
        cand.tokens = sum(cand.sent)
        answered = sum(p.get("seconds", 0.0) for p in preds.values())
        cand.seconds = round(cand.proposed_seconds + answered, 1)
        self._replace(cand)

    def _replace(self, *cands: Candidate) -> None:
        """The record's entries of ``cands`` rewritten, then saved once."""
        if not cands:
            return
        new = {c.id: asdict(c) for c in cands}
        self.record["candidates"] = [new.get(c["id"], c) for c in self.record["candidates"]]
        self.save()

    # -- run folders ----------------------------------------------------------------------
    def _ids(self, questions: Path, limit: int | None = None) -> list[str]:
        """The first ``limit`` (else all) question ids of a file, in its order."""
        if questions not in self._order:
            self._order[questions] = [q.id for q in QuestionSet.read(questions).questions]
        return self._order[questions][:limit] if limit else self._order[questions]

    def _answer(
        self, name: str, questions: Path, overlay: Path | None, limit: int | None = None
    ) -> dict[str, dict]:
        """The method's answers to ``questions`` (the first ``limit``) in run folder
        ``out/name`` (resumed where it stopped), prompts from ``overlay``; a spent budget
        raises ``BudgetSpent``."""
        folder = self.out / name
        done = preds_in(folder)
        if set(self._ids(questions, limit)) <= set(done):
            return done  # finished: read back, no model started
        self.book.check_budget()
        ctx = self.ctx.replace(prompts_dir=str(overlay) if overlay else self.ctx.prompts_dir)
        summary = self.runner(self.plan.agent, folder, ctx, self.book.folder_budget(folder)).run(
            questions, **({"limit": limit} if limit else {})
        )
        if summary.budget_stopped:
            self.save()
            raise BudgetSpent(f"the budget ({budget_text(self.plan.budget)}) is spent")
        return scored_predictions(folder)

    def _subset(self, train: QuestionSet, ids: list[str], name: str) -> Path:
        """The training file's lines of ``ids`` as ``out/splits/<name>.jsonl`` (kept out of
        git: they hold the dataset's text), with the command that re-makes it."""
        folder = self.out / "splits"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ".gitignore").write_text("*.jsonl\n")
        keep = set(ids)
        lines = [
            ln
            for ln in train.path.read_text(encoding="utf-8").splitlines()
            if ln.strip() and json.loads(ln).get("id") in keep
        ]
        path = folder / f"{name}.jsonl"
        text = "\n".join(lines) + "\n"
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        digest = hashlib.sha256(text.encode()).hexdigest()
        made = {
            "command": f"hopgraph optimize --agent {self.plan.agent} --questions "
            f"{self.plan.train} --seed {self.plan.seed} --val-share "
            f"{self.plan.val_share} --out {self.out} (its {name} split)",
            "sha256": digest,
        }
        Path(f"{path}.made.json").write_text(json.dumps(made) + "\n")
        return path

    def _pool(self, boot: dict[str, dict], demo_ids: set[str]) -> Pool:
        """Demonstration candidates per role: its calls (variables, reply, and the choice the
        reply made, ``choice_of``) on pool questions the method answered right by exact match;
        every call of a role called in a loop, so the step that ended a loop is one."""
        pool = Pool(demo_ids)
        for qid, pred in boot.items():
            if qid not in demo_ids:
                continue
            right = score_prediction(pred).get("em", 0.0) >= 1.0
            made: dict[str, int] = {}
            for call in self._boot_calls(qid):
                role, tokens = call["template"], call.get("prompt_tokens") or 0
                pool.longest[role] = max(pool.longest.get(role, 0), tokens)
                answered = isinstance(call.get("reply"), str) and not call.get("error")
                if right and answered and role in self.plan.roles and "inputs" in call["extra"]:
                    n = made[role] = made.get(role, 0) + 1
                    pool.calls.setdefault(role, []).append(
                        {
                            "id": qid if n == 1 else f"{qid}#{n}",
                            "qid": qid,
                            "inputs": call["extra"]["inputs"],
                            "output": call["reply"],
                            "choice": choice_of(self.roles.get(role), call["reply"]),
                            "tokens": demo_tokens(call),
                        }
                    )
        self.record["demo_candidates"] = {r: len(pool.calls.get(r, [])) for r in self.plan.roles}
        return pool

    def _boot_calls(self, qid: str) -> list[dict[str, Any]]:
        if qid not in self._traced:
            self._traced[qid] = _calls(self.out / "bootstrap", qid)
        return self._traced[qid]

    def _failures(
        self,
        role: str,
        preds: dict[str, dict],
        calls_of: Callable[[str], list] | None = None,
        n: int = 3,
        rng: random.Random | None = None,
    ) -> list:
        """Up to ``n`` pool questions answered wrong in ``preds`` (the first in id order, or a
        sample drawn by ``rng``), with the role's real prompt and reply: its last call of the
        question, for a role called in a loop (MMAPG's planner) the one whose prompt holds the
        whole loop so far and whose reply ended it. ``calls_of``: a question's calls (the
        bootstrap's by default)."""
        calls_of = calls_of or self._boot_calls
        wrong = [q for q in sorted(self.pool.ids) if _wrong(preds.get(q))]
        if rng is not None:
            wrong = rng.sample(wrong, len(wrong))
        out = []
        for qid in wrong:
            pred = preds[qid]
            calls = calls_of(qid)
            call = next((c for c in reversed(calls) if c["template"] == role), None)
            if call is None:
                continue
            prompt = "\n".join(
                m.get("content", "") if isinstance(m.get("content"), str) else ""
                for m in call.get("messages", [])
            )
            out.append(
                {
                    "question": pred.get("question", ""),
                    "gold": "; ".join(pred.get("gold", [])),
                    "answer": pred.get("answer", ""),
                    "prompt": prompt[-2000:],
                    "reply": (call.get("reply") or "")[:600],
                }
            )
            if len(out) == n:
                break
        return out

    def _overlay_of(self, cand: Candidate | None) -> Path | None:
        """A candidate's prompt folder: an instruction before a role's shipped template, its
        demonstrations beside it. None for the hand-written prompts."""
        if cand is None or (not cand.instructions and not cand.demos):
            return None
        folder = self.out / "candidates" / cand.id / "overlay"
        write_overlay(
            folder,
            self.plan.agent,
            cand.instructions,
            {
                role: [
                    (cut_demo(c) or c) if c["id"] in cand.cut.get(role, ()) else c
                    for c in self.pool.calls.get(role, [])
                    if c["id"] in set(ids)
                ]
                for role, ids in cand.demos.items()
            },
        )
        return folder

    def _write_overlay(self) -> None:
        """The incumbent's prompts as ``out/overlay``, usable as ``--prompts`` whatever won
        (where the hand-written prompts stayed, it holds only its mark)."""
        target = self.out / "overlay"
        shutil.rmtree(target, ignore_errors=True)
        best = self._current()
        if best.id == "hand-written":
            write_overlay(target, self.plan.agent, {}, {})
        else:
            shutil.copytree(self.out / "candidates" / best.id / "overlay", target)
        self.record["overlay"] = str(target)
        self.record["overlay_changes"] = sorted({*best.instructions, *best.demos})


def write_overlay(
    folder: Path, agent: str, instructions: dict[str, str], demos: dict[str, list[dict[str, Any]]]
) -> None:
    """Templates with an instruction placed first (as literal text) and demonstration files."""
    folder.mkdir(parents=True, exist_ok=True)
    for role, text in instructions.items():
        path = folder / f"{role}.j2"
        path.parent.mkdir(parents=True, exist_ok=True)
        shipped = Prompts.shipped(role).read_text(encoding="utf-8")
        path.write_text(f"{{% raw %}}{text}{{% endraw %}}\n\n{shipped}", encoding="utf-8")
    for role, rows in demos.items():
        path = folder / f"{role}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            "".join(
                json.dumps({"inputs": r["inputs"], "output": r["output"]}, ensure_ascii=False)
                + "\n"
                for r in rows
            ),
            encoding="utf-8",
        )
    (folder / MARK).write_text(json.dumps({"agent": agent}) + "\n")


def _calls(run_dir: Path, qid: str) -> list[dict[str, Any]]:
    return [
        r["data"]
        for r in trace_records(trace_path(run_dir, qid))
        if r.get("mode") == "custom" and r.get("data", {}).get("event") == "llm_call"
    ]


def _wrong(pred: dict[str, Any] | None) -> bool:
    """An answered question whose answer is not an exact match."""
    return pred is not None and score_prediction(pred).get("em", 0.0) < 1.0


def _names(text: str, gold: str) -> bool:
    """Whether ``text`` contains the answer ``gold`` (as the benchmark normalises both)."""
    from hopgraph.evals.metrics import normalize_answer

    g = normalize_answer(gold)
    return bool(g) and f" {g} " in f" {normalize_answer(text)} "


ROW_HEADS = ("candidate", "kind", "minibatch", "validation", "kept", "tokens", "seconds")


def candidate_rows(record: dict[str, Any]) -> list[tuple[str, ...]]:
    """One row per candidate (``ROW_HEADS``): its scores against the incumbent on each rung it
    reached, or why it has none; the CLI's live table and the results pages's."""
    rows: list[tuple[str, ...]] = []
    for c in record["candidates"]:
        mb = c.get("minibatch") or {}
        mini = f"{mb['mean']:.3f} vs {mb['incumbent_mean']:.3f} ({mb['n']})" if mb else "–"
        if c.get("skipped"):
            val = f"skipped: {c['skipped']}"
        elif c.get("stopped"):
            val = f"stopped after the minibatch: {c['stopped']}"
        elif is_under_way(c):
            val = "under way"
        else:
            val = (
                f"{c['mean']:.3f} vs {c['incumbent_mean']:.3f} ({len(c['scores'])}): "
                f"{c['better']} better / {c['worse']} worse, sign p {c['p']:.3g}"
            )
        kept = ("yes" if c.get("won") else "no") if scored(c) else ""
        rows.append(
            (
                c["id"],
                c["kind"],
                mini,
                val,
                kept,
                f"{c.get('tokens', 0):,}",
                f"{c.get('seconds', 0.0):.0f}",
            )
        )
    return rows


def render(reports: list[dict[str, Any] | None]) -> list[str]:
    """the results pages's lines for one search: ``[record.json, hand-written test metrics.json,
    optimized test metrics.json]`` (the last two from ``hopgraph eval``; None where missing)."""
    record, hand, opt = (*reports, None, None)[:3]
    if not record:
        return ["Not measured yet.", ""]
    s = record.get("splits", {})
    out = [
        f"Roles searched: {', '.join(record['roles'])}; metric {record['metric']}, a candidate "
        + (
            f"is kept by its {record['keep']} (its sign test is reported, not the gate)"
            if record.get("keep")
            else f"wins at sign-test p < {record['alpha']}"
        )
        + f". Training questions {s.get('train', '?')}: "
        f"{s.get('demo_pool', '?')} for demonstrations and proposals, {s.get('validation', '?')} "
        f"for validation (ids' hashes {s.get('demo_pool_ids', '?')}, "
        f"{s.get('validation_ids', '?')}). Demonstration candidates (right answers in the pool): "
        + ", ".join(f"{r} {n}" for r, n in record.get("demo_candidates", {}).items())
        + ".",
        "",
        "| " + " | ".join(h if h != "tokens" else "tokens sent" for h in ROW_HEADS) + " |",
        "|" + "---|" * len(ROW_HEADS),
    ]
    if record.get("race"):
        out[0] += f" Candidates raced by {record['race']}."
    out += ["| " + " | ".join(row) + " |" for row in candidate_rows(record)]
    hours = record.get("seconds", 0.0) / 3600
    out += [
        "",
        f"Stopped: {record.get('stopped', 'in progress')}. Kept: "
        f"{', '.join(record.get('overlay_changes', [])) or 'nothing (the hand-written prompts)'}."
        f" Spent {record.get('spent', {}).get('tokens', 0):,} tokens sent to the endpoint "
        f"(the bootstrap {sum(record.get('bootstrap_sent', [0])):,}), {hours:.2f} hours.",
    ]
    for c in record["candidates"]:
        if c.get("reasoning"):
            out.append(f'Proposer on {c["role"]} ({c["id"]}): "{c["reasoning"][:300]}"')
    t = record.get("test")
    if t and t.get("same_prompts"):
        out += [
            "",
            f"Nothing kept; no verdict: the optimized prompts are the hand-written ones, so the "
            f"{t['n']} test questions the search never read ({t['questions']}) were answered "
            f"once, by the hand-written prompts ({record['metric']} {t['hand_written']}).",
        ]
    elif t:
        needed = f"needed n {t['needed_n']}" if t.get("needed_n") else "no difference to power"
        out += [
            "",
            f"Verdict on the {t['n']} test questions the search never read ({t['questions']}): "
            f"{record['metric']} {t['hand_written']:.3f} hand-written, {t['optimized']:.3f} "
            + ("(the same prompts: nothing won)" if t.get("same_prompts") else "optimized")
            + f"; {t['better']} better / {t['worse']} worse, sign p {t['sign_p']:.3g}, {needed}. "
            f"Validation-to-test gap: {t['gap']['validation']:+.3f} on validation, "
            f"{t['gap']['test']:+.3f} on test.",
        ]
    elif hand and opt:  # an arm under way: both read on the questions both have answered
        metric = record["metric"]
        both = sorted(set(hand["per_question"]) & set(opt["per_question"]))
        a = fmean(hand["per_question"][q].get(metric, 0.0) for q in both) if both else 0.0
        b = fmean(opt["per_question"][q].get(metric, 0.0) for q in both) if both else 0.0
        best = next((c for c in record["candidates"] if c["id"] == record.get("incumbent")), None)
        val = (best["mean"] - best["incumbent_mean"]) if best else 0.0
        out += [
            "",
            f"Validation-to-test gap so far: {metric} {val:+.3f} on validation, {b - a:+.3f} on "
            f"the {len(both)} test questions both arms have answered, of "
            f"{max(hand['questions'], opt['questions'])} ({a:.3f} -> {b:.3f}).",
        ]
    return [*out, ""]
