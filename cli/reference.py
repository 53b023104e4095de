"""The manual's reference pages, generated from the code so they cannot drift from it: every
``hopgraph`` command with its options (from the Typer app), and every knob of every method with
its type, default, bounds and who may set it (from ``config.Context`` and ``settings/``).

    python -m hopgraph.cli.reference docs/reference     # what `make docs` runs first

``tests/test_docs.py`` holds the committed pages to what this writes.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import sys
import textwrap
from pathlib import Path
from typing import Any

import typer

PAGES = ("cli.md", "knobs.md", "questions.md")


def cell(text: object) -> str:
    """A Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


# -- commands ------------------------------------------------------------------------------------
def commands() -> list[tuple[str, Any]]:
    """Every command of the ``hopgraph`` app as (its words, its click command), in the order
    ``hopgraph --help`` lists them, a group's commands under it."""
    import hopgraph.cli  # noqa: F401 - registers every command
    from hopgraph.cli.app import app

    out: list[tuple[str, Any]] = []

    def walk(command: Any, words: tuple[str, ...]) -> None:
        subs = getattr(command, "commands", None)
        if subs is None:
            out.append((" ".join(words), command))
            return
        for name, sub in subs.items():
            if not getattr(sub, "hidden", False):
                walk(sub, (*words, name))

    walk(typer.main.get_command(app), ("hopgraph",))
    return out


def _type_name(param: Any) -> str:
    if getattr(param, "is_flag", False):
        return "flag"
    hint = param.type_descriptor.annotation
    if getattr(hint, "__args__", None) or not hasattr(hint, "__name__"):
        return str(hint).replace("typing.", "")
    return hint.__name__


def _default(param: Any) -> str:
    value = param.default
    if value is None or value == () or value == [] or getattr(param, "required", False):
        return "required" if getattr(param, "required", False) else ""
    return f"`{value}`" if value != "" else ""


def command_page() -> str:
    """``cli.md``: each command, its help and a table of its arguments and options."""
    lines = [
        "# Commands",
        "",
        "Every `hopgraph` command and option, generated from the CLI "
        "itself (`python -m hopgraph.cli.reference`). Exit statuses: 0 done; 1 a run "
        "stopped (5 questions in a row failed); 2 refused before anything started; 3 "
        "done, some questions or sources failed; 4 a budget left questions unstarted; 5 "
        "the disk filled; 130 / 143 interrupted.",
        "",
    ]
    for words, command in commands():
        lines += [f"## `{words}`", "", textwrap.dedent(command.help or "").strip(), ""]
        params = [p for p in command.params if p.name != "help"]
        if not params:
            continue
        lines += ["| argument / option | type | default | what |", "|---|---|---|---|"]
        for p in params:
            names = ", ".join(f"`{o}`" for o in [*p.opts, *getattr(p, "secondary_opts", [])])
            shown = names if p.param_type_name == "option" else f"`{p.name.upper()}`"
            lines.append(
                f"| {shown} | {cell(_type_name(p))} | {cell(_default(p))} | "
                f"{cell(getattr(p, 'help', '') or '')} |"
            )
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


# -- knobs ---------------------------------------------------------------------------------------
def field_docs(cls: type) -> dict[str, str]:
    """Each field's docstring (the string under it) in ``cls`` and its bases."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for here, after in zip(body, body[1:], strict=False):
            if (
                isinstance(here, ast.AnnAssign)
                and isinstance(here.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[here.target.id] = after.value.value
    return docs


def _bounds(meta: Any) -> str:
    low, high, most = meta.get("minimum"), meta.get("maximum"), meta.get("most")
    out = []
    if low is not None or high is not None:
        out.append(f"{'' if low is None else low} .. {'' if high is None else high}")
    if most is not None:
        out.append(f"a client asks at most {most}")
    return "; ".join(out)


def _field_default(f: dataclasses.Field) -> str:
    if f.default is not dataclasses.MISSING:
        return f"`{f.default!r}`"
    return "(computed)" if f.default_factory is not dataclasses.MISSING else ""


def knob_table(cls: type, own: set[str] | None = None) -> list[str]:
    """A table of ``cls``'s fields (those named in ``own`` only, where given)."""
    docs = field_docs(cls)
    hints = {f.name: f.type for f in dataclasses.fields(cls)}
    rows = ["| knob | type | default | bounds | set by | what |", "|---|---|---|---|---|---|"]
    for f in dataclasses.fields(cls):
        if own is not None and f.name not in own:
            continue
        who = "operator" if f.metadata.get("owner") == "operator" else "anyone (a knob)"
        what = cell(docs.get(f.name, ""))
        rows.append(
            f"| `{f.name}` | {cell(hints[f.name])} | {cell(_field_default(f))} | "
            f"{cell(_bounds(f.metadata))} | {who} | {what} |"
        )
    return rows


def knob_page() -> str:
    """``knobs.md``: the fields every graph shares, then each method's knobs."""
    from hopgraph.config import Context
    from hopgraph.graphs import every_context  # noqa: F401 - every method's settings imported
    from hopgraph.settings import grail, mabdqa, mmapg, polarmem, qdrag

    lines = [
        "# Knobs",
        "",
        "Every setting a graph reads, generated from `config.py` and "
        "`settings/` (`python -m hopgraph.cli.reference`). Set any of them with `--set "
        "name=value` on a command, `HOPGRAPH_<NAME>` in the environment, or a field of "
        "the method's Context in Python. A value outside its bounds is refused before "
        "anything runs (exit 2). A served graph's client may set only the knobs; the "
        "operator's fields stay the operator's.",
        "",
        "## Shared by every graph (`Context`)",
        "",
        *knob_table(Context),
        "",
    ]
    for module in (mmapg, qdrag, mabdqa, polarmem, grail):
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if name.endswith("Settings") and cls.__module__ == module.__name__:
                own = set(getattr(cls, "__dataclass_fields__", {}))
                lines += [
                    f"## {name.removesuffix('Settings')}",
                    "",
                    f"`{module.__name__}.{name}`: {' '.join((cls.__doc__ or '').split())}",
                    "",
                    *knob_table(cls, own),
                    "",
                ]
    return "\n".join(lines).rstrip() + "\n"


DEFAULTS = {"id": "made from the question", "question": "required"}


def question_page() -> str:
    """``questions.md``: the question file's fields, from ``Question`` and its readers."""
    from hopgraph.questions import datasets as d

    docs = field_docs(d.Question)
    rows = ["| field | type | default | in a CSV cell | what |", "|---|---|---|---|---|"]
    for f in dataclasses.fields(d.Question):
        cellwise = (
            f"values split at `{d.SEPARATOR}`, or a JSON list"
            if f.name in d.LIST_FIELDS
            else "its text"
            if f.name != "meta"
            else "every column not mapped to a field"
        )
        alias = f" (or `{d.ALIASES[f.name]}`: one)" if f.name in d.ALIASES else ""
        rows.append(
            f"| `{f.name}`{alias} | {cell(f.type)} | "
            f"{DEFAULTS.get(f.name, 'empty')} | "
            f"{cell(cellwise)} | {cell(docs.get(f.name, ''))} |"
        )
    return "\n".join(
        [
            "# Question files",
            "",
            "Generated from `hopgraph.questions.datasets.Question` (`python -m "
            "hopgraph.cli.reference`). `--questions` reads JSON lines (one object a line: the "
            "canonical form, what `hopgraph data convert` writes), one JSON array of such objects, "
            "or a CSV (`.csv`, `.tsv` by tabs) with a header row, in UTF-8 or, where the file "
            "opens with its byte-order mark, UTF-16. Only `question` is required; a "
            "question without gold answers is answered and traced, and every score over answers "
            "says how many questions it is over. `--fields FIELD=COLUMN,...` reads columns named "
            "otherwise (`--fields question=Query,answers=Gold`); the run's manifest keeps the "
            "mapping, so `eval`, `compare` and `view` read the file the same way. A bad row (one "
            "with a cell that is not UTF-8, as a spreadsheet's plain CSV on Windows writes é) is "
            "named by file and line and the others are read.",
            "",
            *rows,
            "",
        ]
    )


def render() -> dict[str, str]:
    return {"cli.md": command_page(), "knobs.md": knob_page(), "questions.md": question_page()}


def write(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name, text in render().items():
        (folder / name).write_text(text)
        out.append(folder / name)
    return out


if __name__ == "__main__":
    for path in write(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/reference")):
        print(path)
