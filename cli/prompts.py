"""The prompt templates: which there are, and a copy of one to edit (``--prompts DIR``)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer

from hopgraph.cli.app import app, console, refuse

prompts_app = typer.Typer(
    rich_markup_mode="markdown",
    help="Prompt templates: list them, copy one out to edit.",
    no_args_is_help=True,
)
app.add_typer(prompts_app, name="prompts")


@prompts_app.command("list")
def prompts_list() -> None:
    """Every built-in template name (``method/name``)."""
    from hopgraph.prompts import prompts_for

    for name in prompts_for("").names():
        console.print(name)


@prompts_app.command("export")
def prompts_export(
    name: Annotated[str, typer.Argument(help="a template, e.g. mmapg/planner")],
    folder: Annotated[str, typer.Argument(help="the overrides folder to copy it into")],
) -> None:
    """Copy a built-in template to FOLDER/NAME.j2, where ``--prompts FOLDER`` picks it up."""
    from hopgraph.prompts import PromptError, prompts_for

    try:
        source = prompts_for("").source_path(name)
    except PromptError as e:
        refuse(f"{e}; `hopgraph prompts list` names them")
    target = Path(folder) / prompts_for("").filename(name)
    if target.exists():
        refuse(f"{target} exists already: edit it, or export into another folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    console.print(f"{target} (edit it, then run with --prompts {folder})")
