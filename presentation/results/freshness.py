"""Whether a result record's answers come from today's code: its method-code fingerprint and
the templates it called, each against what this checkout would run with the record's own
settings. A record whose answers were all made by today's code is "current"; otherwise it is
stale, with the modules and templates that changed since (read from the files, so a page says
the same on any checkout of one tree) and, where git's history is here, how many commits to
the method's files came after the record's revision."""

from __future__ import annotations

import subprocess
from collections import Counter
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from hopgraph.harness.code_fingerprint import code_changes
from hopgraph.harness.run_folder import RunFolder, method_code, prompt_hashes, read_predictions

ROOT = Path(__file__).resolve().parents[2]
"""The checkout (the package's root folder), where git is asked about commits."""


@dataclass
class Freshness:
    """One column's record and whether its answers are today's code's."""

    folder: str
    revision: str
    fingerprint: str
    current: bool
    changed: list[str] = field(default_factory=list)
    """Modules (``graphs.qdrag``) and templates (``qdrag/rerank``) that differ from today's."""
    commits_since: int | None = None
    """Commits to the method's files after ``revision`` (None: no git history here)."""
    carried: list[str] = field(default_factory=list)
    """The before/after reports that carry a record of changed code forward to today's: each
    showed every answer identical across one step of the change (``benchmarks/before_after.py``)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def words(self) -> str:
        """As a page says it: "current", or "stale: what changed"."""
        if self.current and self.carried:
            return f"current: carried forward by {', '.join(self.carried)} (answers identical)"
        if self.current:
            return "current"
        shown = ", ".join(self.changed[:4]) + (
            f" and {len(self.changed) - 4} more" if len(self.changed) > 4 else ""
        )
        return f"**stale**: {shown} changed since" if shown else "**stale**: no code recorded"


@lru_cache(maxsize=256)
def _today(agent: str, switches: tuple[tuple[str, Any], ...]) -> dict:
    """Today's fingerprint of ``agent``'s code with a record's settings (its parts on or off)."""
    return method_code(agent, SimpleNamespace(**dict(switches)))  # type: ignore[arg-type]


@lru_cache(maxsize=64)
def _templates_today(prompts_dir: str, agent: str) -> dict[str, str]:
    """Today's template hashes, through the record's overlay where it is still here, once
    ``agent``'s graph is loaded (a graph file's own templates register as it loads)."""
    _today(agent, ())
    try:
        return prompt_hashes(SimpleNamespace(prompts_dir=prompts_dir))  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - an overlay no longer here: the built-in templates
        return prompt_hashes(SimpleNamespace(prompts_dir=""))  # type: ignore[arg-type]


def freshness(
    folder: Path, label: str = "", commits: bool = False, proofs: Path | None = None
) -> Freshness:
    """``folder``'s record against today's code (``label``: how pages name the folder);
    ``commits``: count a stale one's commits since (git, asked for by ``--json`` only);
    ``proofs``: the folder of before/after reports that may carry it forward (the pages pass
    the one beside the records; none: a changed record is not carried)."""
    man: dict[str, Any] = dict(RunFolder(folder).manifest() or {})
    preds = read_predictions(folder / "predictions.jsonl").values()
    sittings = man.get("sittings") or []
    revision = str((sittings[-1] if sittings else man).get("git_revision") or "")
    answered = Counter(p.get("code") or "unrecorded" for p in preds if not p.get("error"))
    fingerprint = answered.most_common(1)[0][0] if answered else ""
    out = Freshness(label or str(folder), revision, fingerprint, current=False)
    recorded = man.get("code") or {}
    ctx = man.get("context") or {}
    switches = tuple(sorted((k, v) for k, v in ctx.items() if isinstance(v, str | bool | int)))
    agent = str(man.get("agent", ""))
    today = _today(agent, switches)
    if not today or not recorded:
        out.changed = ["the graph's module"] if not today else []
        return out
    changes = code_changes(recorded, today)
    out.changed = [c.split(" (")[0].removeprefix("hopgraph.") for c in changes]
    if set(answered) - {today.get("fingerprint")}:  # answers made by other code than today's
        out.changed = out.changed or [f"answers by {', '.join(sorted(answered))}"]
    used = sorted({t for p in preds for t in p.get("by_template") or {}})
    was, now = man.get("prompts") or {}, _templates_today(str(ctx.get("prompts_dir") or ""), agent)
    moved = {t: (was[t], now.get(t, "")) for t in used if t in was and was[t] != now.get(t)}
    out.changed += list(moved)
    out.current = not out.changed
    where = PROOFS or proofs
    if not out.current and where is not None and set(answered) == {fingerprint}:
        out.carried = carried_by(fingerprint, str(today.get("fingerprint", "")), moved, where) or []
        out.current = bool(out.carried)
    if commits and not out.current and revision:
        out.commits_since = commits_since(revision, _method_paths(recorded, used))
    return out


PROOFS: Path | None = None
"""Where the before/after reports are read, where set (a test's); else where ``freshness`` is
told: ``before-after/`` beside the records the pages are made from (the checkout's, not the
installed package's; ``benchmarks/before_after.py compare --out`` writes them)."""


@lru_cache(maxsize=4)
def _steps(proofs: Path) -> tuple[dict[str, dict[str, str]], dict[tuple[str, str], dict[str, str]]]:
    """Each answer-neutral step the reports show: code fingerprint -> {the one after: report},
    and (template, hash) -> {the hash after: report}, from configurations whose answers were
    all identical, without an error."""
    import json

    code: dict[str, dict[str, str]] = {}
    templates: dict[tuple[str, str], dict[str, str]] = {}
    for path in sorted(proofs.glob("*.json")) if proofs.is_dir() else []:
        try:
            agents = json.loads(path.read_text()).get("agents") or {}
        except (OSError, ValueError, AttributeError):
            continue
        name = f"before-after/{path.name}"
        for row in agents.values():
            neutral = row.get("identical") == row.get("questions") and not row.get("errors")
            fp = row.get("code") or {}
            if not neutral or not fp.get("before") or not fp.get("after"):
                continue
            code.setdefault(fp["before"], {})[fp["after"]] = name
            for t, (a, b) in (row.get("templates") or {}).items():
                templates.setdefault((t, a), {})[b] = name
    return code, templates


def _chain(steps: dict, start: Any, goal: Any, key: Any = None) -> list[str] | None:
    """The reports of a shortest chain of steps from ``start`` to ``goal`` (None: none)."""
    seen: dict[Any, list[str]] = {start: []}
    todo = [start]
    while todo:
        here = todo.pop(0)
        if here == goal:
            return seen[here]
        for nxt, report in steps.get(here if key is None else (key, here), {}).items():
            if nxt not in seen:
                seen[nxt] = [*seen[here], report]
                todo.append(nxt)
    return None


def carried_by(
    was: str, now: str, templates: dict[str, tuple[str, str]], proofs: Path
) -> list[str] | None:
    """The reports in ``proofs`` that carry a record answered by code ``was`` (and templates at
    their first hash) forward to code ``now`` (and their second): every step answer-neutral
    (None: not shown)."""
    code_steps, template_steps = _steps(proofs)
    reports = [] if was == now else _chain(code_steps, was, now)
    if reports is None:
        return None
    for t, (a, b) in templates.items():
        more = _chain(template_steps, a, b, key=t)
        if more is None:
            return None
        reports += more
    return sorted(set(reports))


def _method_paths(code: dict, templates: list[str]) -> list[str]:
    """The files behind a fingerprint's modules and the templates used, as git names them."""
    paths = []
    for module in code.get("files") or {}:
        rel = Path(*module.split(".")[1:])
        paths.append(str(rel / "__init__.py") if (ROOT / rel).is_dir() else f"{rel}.py")
    return paths + [f"prompts/{t}.j2" for t in templates]


def commits_since(revision: str, paths: list[str]) -> int | None:
    """Commits to ``paths`` after ``revision`` (None where git or that revision is not here)."""
    try:
        out = subprocess.run(
            ["git", "rev-list", "--count", f"{revision}..HEAD", "--", *paths],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return int(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None
