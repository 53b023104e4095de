"""Prompt templates: ``.j2`` files under ``prompts/<method>/``, rendered in a jinja2 sandbox.

A user folder overrides built-in templates by file name: ``DIR/<method>/<name>.j2`` first, then
``DIR/<name>.j2``, then the built-in file. Rendering is strict (a missing variable is an error
naming the template and the variable) and sandboxed (Python internals are refused).

The folder may also hold a role's demonstrations beside its template, ``DIR/<method>/<name>.jsonl``:
one ``{"inputs": {...}, "output": "..."}`` per line (the template's variables and the reply
wanted), rendered before the task by the one shared partial ``common/demos.j2``. They are hashed
with their template (``Prompts.digest``), so a run's manifest and ``compare`` see them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import (
    BaseLoader,
    ChainableUndefined,
    StrictUndefined,
    TemplateNotFound,
    TemplateSyntaxError,
    UndefinedError,
    meta,
    nodes,
)
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment

from hopgraph.confine import confined, inside

BUILTIN_DIR = Path(__file__).resolve().parent


class PromptError(ValueError):
    """A template is missing, invalid, or lacks a variable it needs."""


class PromptSecurityError(PromptError):
    """A template reached for something the sandbox forbids (Python internals)."""


DEMOS = "common/demos"
"""The partial every role's demonstrations render through (``demos``, ``prompt``)."""


MARK = "optimized.json"
"""The file an optimized overlay carries (``hopgraph optimize``): the agent it was made for."""


def overlay_agent(folder: str | Path) -> str:
    """The agent an optimized overlay was made for ("" for a hand-made folder)."""
    mark = Path(folder) / MARK
    try:
        return str(json.loads(mark.read_text(encoding="utf-8"))["agent"]) if mark.is_file() else ""
    except (ValueError, KeyError, TypeError) as e:
        raise PromptError(f"{mark} is not an optimized overlay's mark: {e}") from e


def refuse_foreign_overlay(folder: str, agent: str) -> None:
    """An overlay optimized for another agent is refused (its roles are not this agent's)."""
    if folder and (made_for := overlay_agent(folder)) and made_for != agent:
        raise PromptError(f"prompt folder {folder} was optimized for {made_for}, not {agent}")


def read_demos(path: Path) -> list[dict[str, Any]]:
    """The demonstrations of one JSONL file, each ``{"inputs": {name: value}, "output": str}``;
    a bad line is an error naming the file and the line."""
    demos = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            demo = json.loads(line)
        except json.JSONDecodeError as e:
            raise PromptError(f"{path} line {n} is not JSON: {e.msg}") from e
        if not (
            isinstance(demo, dict)
            and isinstance(demo.get("inputs"), dict)
            and isinstance(demo.get("output"), str)
        ):
            raise PromptError(
                f'{path} line {n}: a demonstration is {{"inputs": {{...}}, "output": "..."}}'
            )
        demos.append({"inputs": demo["inputs"], "output": demo["output"]})
    return demos


class _Placeholder(ChainableUndefined):
    """A dry-run value for any variable: absorbs every use, except what the sandbox refused
    (which raises its ``SecurityError`` as soon as it is used)."""

    __slots__ = ()

    def _refused(self) -> None:
        if issubclass(self._undefined_exception, SecurityError):
            self._fail_with_undefined_error()

    def __getattr__(self, name: str):
        if name[:2] == "__":
            raise AttributeError(name)
        self._refused()
        return self

    def __str__(self) -> str:
        self._refused()
        return ""


PACKAGE_DIRS: list[Path] = []
"""Template folders of methods outside hopgraph (``add_template_folder``), searched after the
user's overlay and before the built-ins."""


def add_template_folder(folder: str | Path) -> None:
    """Make the ``method/name.j2`` templates under ``folder`` renderable by name: how a method
    of one's own ships its prompts (a user's ``--prompts`` still overrides them)."""
    path = Path(folder).resolve()
    if not path.is_dir():
        raise PromptError(f"prompt folder not found: {path}")
    if path not in PACKAGE_DIRS:
        PACKAGE_DIRS.append(path)


def name_problem(name: str) -> str:
    """Why ``name`` is not a template name ("" when it is one): a name is ``method/name.j2``
    relative to a template folder, never an absolute path or one climbing out with ``..``, so
    an ``include`` or ``extends`` can reach only the overlay's and the shipped templates."""
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "~")) or "\\" in name or ":" in parts[0]:
        return f"{name!r} is a path, not a template name (method/name.j2)"
    if any(part in ("..", ".", "") for part in parts):
        return f"{name!r} leaves the template folders ('..', '.' or an empty part)"
    return ""


class _OverlayLoader(BaseLoader):
    """Looks a template ``method/name.j2`` up in the user folder, then the folders methods of
    one's own added, then the built-ins; a name that is a path, or a file whose link leads out
    of its folder, is never read."""

    def __init__(self, user_dir: Path | None):
        self.user_dir = user_dir

    def candidates(self, name: str) -> list[Path]:
        if name_problem(name):
            return []
        paths = []
        if self.user_dir is not None:
            paths += [
                (self.user_dir, self.user_dir / name),
                (self.user_dir, self.user_dir / Path(name).name),
            ]
        paths += [(folder, folder / name) for folder in PACKAGE_DIRS]
        paths.append((BUILTIN_DIR, BUILTIN_DIR / name))
        return [path for root, path in paths if self._readable(path, root)]

    def _readable(self, path: Path, root: Path) -> bool:
        """Inside its folder, links followed; a user's file also no hard link (``confine``).
        An installed package's files may be hard links (an installer's cache), so not them."""
        if root != self.user_dir or not path.is_file():
            return inside(path, root)
        try:
            confined(path, root)
        except ValueError:
            return False
        return True

    def get_source(self, environment, template):  # noqa: ANN001 - jinja2's signature
        if why := name_problem(template):
            raise PromptSecurityError(f"template reference refused: {why}")
        for path in self.candidates(template):
            if path.is_file():
                text = path.read_text(encoding="utf-8")
                mtime = path.stat().st_mtime
                return (
                    text,
                    str(path),
                    lambda p=path, m=mtime: p.is_file() and p.stat().st_mtime == m,
                )
        raise TemplateNotFound(template)


class Prompts:
    """Renders templates by name (``"mmapg/plan"``) and remembers the sha256 of each one used."""

    def __init__(self, user_dir: str | Path | None = None):
        self.user_dir = Path(user_dir).expanduser() if user_dir else None
        if self.user_dir is not None and not self.user_dir.is_dir():
            raise PromptError(f"prompt folder not found: {self.user_dir}")
        self._loader = _OverlayLoader(self.user_dir)
        self.env = SandboxedEnvironment(
            loader=self._loader,
            undefined=StrictUndefined,
            autoescape=False,
            keep_trailing_newline=False,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.used: dict[str, str] = {}
        """Template name -> sha256 of the source that was rendered (for run manifests)."""

    @staticmethod
    def filename(name: str) -> str:
        return name if name.endswith(".j2") else f"{name}.j2"

    def source_path(self, name: str) -> Path:
        fname = self.filename(name)
        if why := name_problem(fname):
            raise PromptError(f"prompt template refused: {why}")
        for path in self._loader.candidates(fname):
            if path.is_file():
                return path
        searched = ", ".join(str(p) for p in self._loader.candidates(fname))
        raise PromptError(f"prompt template {name!r} not found (looked in: {searched})")

    def demos_path(self, name: str) -> Path | None:
        """The user folder's demonstrations for template ``name`` (``<method>/<name>.jsonl``)."""
        if self.user_dir is None:
            return None
        path = self.user_dir / f"{name.removesuffix('.j2')}.jsonl"
        if not path.is_file():
            return None
        try:  # never a file linked in from outside the overlay, nor a hard link
            return confined(path, self.user_dir)
        except ValueError as e:
            raise PromptError(f"demonstrations refused: {e}") from e

    def demos(self, name: str) -> list[dict[str, Any]]:
        path = self.demos_path(name)
        return read_demos(path) if path is not None else []

    def digest(self, name: str) -> str:
        """sha256 of what ``name`` renders from: its template and, where it has them, its
        demonstrations."""
        path, demos = self.source_path(name), self.demos_path(name)
        if demos is None:
            return sha256_file(path)
        return hashlib.sha256(path.read_bytes() + b"\0demos\0" + demos.read_bytes()).hexdigest()

    def render(self, name: str, **variables: Any) -> str:
        text = self._render(name, **variables)
        if demos := self.demos(name):
            text = self._render(DEMOS, demos=demos, prompt=text)
        self.used[name] = self.digest(name)
        return text

    def _render(self, name: str, **variables: Any) -> str:
        fname = self.filename(name)
        path = self.source_path(name)
        try:
            template = self.env.get_template(fname)
            text = template.render(**variables)
        except SecurityError as e:
            raise PromptSecurityError(f"prompt template {name!r} ({path}) is unsafe: {e}") from e
        except PromptSecurityError as e:
            raise PromptSecurityError(f"prompt template {name!r} ({path}): {e}") from e
        except UndefinedError as e:
            missing = re.search(r"'([^']+)' is undefined", str(e))
            var = missing.group(1) if missing else str(e)
            raise PromptError(
                f"prompt template {name!r} ({path}) needs variable {var!r}, which was not given"
            ) from e
        except TemplateSyntaxError as e:
            raise PromptError(
                f"prompt template {name!r} ({path}) is invalid at line {e.lineno}: {e.message}"
            ) from e
        return text.strip()

    def overrides(self) -> dict[Path, list[str]]:
        """Each ``.j2`` file of the user folder -> the built-in names it overrides (the
        method-specific file wins over a bare file name, as in lookup)."""
        if self.user_dir is None:
            return {}
        out: dict[Path, list[str]] = {}
        for path in sorted(self.user_dir.rglob("*.j2")):
            out[path] = [n for n in self.names() if self.source_path(n) == path]
        return out

    def check_overrides(self) -> None:
        """Refuse a broken overlay once, before a run, instead of failing every question: each
        override must compile, use only the variables its built-in template is given, and
        stay inside the sandbox when rendered with placeholder values."""
        problems = []
        dry = SandboxedEnvironment(undefined=_Placeholder, trim_blocks=True, lstrip_blocks=True)
        for path, names in self.overrides().items():
            try:
                confined(path, self.user_dir or path)
            except ValueError as e:
                problems.append(f"{e} (links to {path.resolve()}; the overlay is {self.user_dir})")
                continue
            if not names:
                problems.append(f"{path} overrides no template (names: method/name.j2 or name.j2)")
                continue
            source = path.read_text(encoding="utf-8")
            try:
                used = meta.find_undeclared_variables(self.env.parse(source))
            except TemplateSyntaxError as e:
                problems.append(f"{path} is invalid at line {e.lineno}: {e.message}")
                continue
            problems += self._reference_problems(path, source)
            if loop := self._include_loop(path):
                problems.append(f"{path} includes itself: {' -> '.join(map(str, loop))}")
            for name in names:
                given = meta.find_undeclared_variables(
                    self.env.parse(self.shipped(name).read_text("utf-8"))
                )
                if used - given:
                    problems.append(
                        f"{path} (for {name}) uses {', '.join(sorted(used - given))}, which "
                        f"{name} is never given; it is given: {', '.join(sorted(given))}"
                    )
            try:
                dry.from_string(source).render()
            except SecurityError as e:
                problems.append(f"{path} is unsafe: {e}")
            except Exception:  # noqa: BLE001 - placeholders cannot satisfy every expression
                pass
        problems += self._demo_problems() + self._linked_out_folders()
        if problems:
            raise PromptError("prompt overlay refused: " + "; ".join(problems))

    def _reference_problems(self, path: Path, source: str) -> list[str]:
        """Each ``include``, ``extends`` or ``import`` of ``source`` must name, literally, a
        template of the overlay or a shipped one: never a path, ``..`` or a computed name."""
        problems = []
        for node, ref in self._references(source):
            if not isinstance(ref, nodes.Const) or not isinstance(ref.value, str):
                why = "a template is named by a computed value; name it literally"
                problems.append(f"{path} line {node.lineno}: {why} (method/name.j2)")
            elif why := name_problem(ref.value):
                problems.append(f"{path} line {node.lineno}: {why}")
            elif not any(p.is_file() for p in self._loader.candidates(ref.value)):
                problems.append(
                    f"{path} line {node.lineno}: no template {ref.value!r} in "
                    "the overlay or the shipped prompts"
                )
        return problems

    def _include_loop(self, path: Path, chain: tuple[Path, ...] = ()) -> list[Path] | None:
        """A chain of templates that ``path`` includes, extends or imports back to one already
        on it, which would fail every question with a RecursionError (None: no loop)."""
        path = path.resolve()
        if path in chain:
            return [*chain, path]
        try:
            found = list(self._references(path.read_text(encoding="utf-8")))
        except (OSError, TemplateSyntaxError):
            return None  # said by the other checks
        for _, ref in found:
            if not isinstance(ref, nodes.Const) or not isinstance(ref.value, str):
                continue
            target = next((p for p in self._loader.candidates(ref.value) if p.is_file()), None)
            if target is not None and (loop := self._include_loop(target, (*chain, path))):
                return loop
        return None

    def _references(self, source: str) -> Iterator[tuple[nodes.Node, nodes.Expr]]:
        """Each template name ``source`` includes, extends or imports, with its node."""
        refs = (nodes.Include, nodes.Extends, nodes.Import, nodes.FromImport)
        for node in self.env.parse(source).find_all(refs):
            named: nodes.Expr = getattr(node, "template")  # noqa: B009 - each ref type has one
            for ref in named.items if isinstance(named, nodes.List) else [named]:
                yield node, ref

    def _linked_out_folders(self) -> list[str]:
        """A folder of the overlay linked to one outside it: its files are never read, which
        a user is told here rather than finding the shipped templates used instead."""
        if self.user_dir is None:
            return []
        return [
            f"{path} lies outside the folders it may be read from (links to {path.resolve()}; "
            f"the overlay is {self.user_dir})"
            for path in sorted(self.user_dir.rglob("*"))
            if path.is_symlink() and path.is_dir() and not inside(path, self.user_dir)
        ]

    def _demo_problems(self) -> list[str]:
        """Each demonstrations file must sit beside a template name, give only variables that
        template is given, and render through the demonstrations partial."""
        if self.user_dir is None:
            return []
        problems, names = [], set(self.names())
        for path in sorted(self.user_dir.rglob("*.jsonl")):
            try:
                confined(path, self.user_dir)
            except ValueError as e:
                problems.append(f"{e} (links to {path.resolve()}; the overlay is {self.user_dir})")
                continue
            name = str(path.relative_to(self.user_dir).with_suffix(""))
            if name not in names:
                problems.append(
                    f"{path} gives demonstrations to no template (<method>/<name>.jsonl)"
                )
                continue
            given = meta.find_undeclared_variables(
                self.env.parse(self.source_path(name).read_text("utf-8"))
            )
            try:
                demos = read_demos(path)
            except PromptError as e:
                problems.append(str(e))
                continue
            for n, demo in enumerate(demos, 1):
                if extra := set(demo["inputs"]) - given:
                    problems.append(
                        f"{path} demonstration {n} gives {', '.join(sorted(extra))}, "
                        f"which {name} is never given"
                    )
                    continue
                try:  # rendered once here, not failing every question of a run
                    self._render(DEMOS, demos=[demo], prompt="")
                except PromptError as e:
                    problems.append(f"{path} demonstration {n} does not render: {e}")
        return problems

    def names(self) -> list[str]:
        """Every template name, built-in or added by a method of one's own, as ``method/name``."""
        return sorted(
            {
                str(p.relative_to(root).with_suffix(""))
                for root in (*PACKAGE_DIRS, BUILTIN_DIR)
                for p in root.glob("*/*.j2")
            }
        )

    @staticmethod
    def shipped(name: str) -> Path:
        """The template a method ships under ``name`` (what a user's file overrides)."""
        fname = Prompts.filename(name)
        return next(
            (root / fname for root in PACKAGE_DIRS if (root / fname).is_file()), BUILTIN_DIR / fname
        )


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@lru_cache(maxsize=16)
def prompts_for(user_dir: str = "") -> Prompts:
    """One shared ``Prompts`` per override folder (the Context's ``prompts_dir``)."""
    return Prompts(user_dir or None)
