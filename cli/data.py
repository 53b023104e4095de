"""Question files and datasets."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hopgraph.cli.app import (
    OldOut,
    app,
    console,
    file_flag,
)
from hopgraph.redaction import command_line

data_app = typer.Typer(
    rich_markup_mode="markdown", help="Question files and datasets.", no_args_is_help=True
)
app.add_typer(data_app, name="data")


@data_app.command("convert")
def data_convert(
    name: Annotated[
        str,
        typer.Argument(
            help="hotpotqa | musique | multimodalqa | mmlongbench | image-vqa (InfoSeek / "
            "E-VQA style: question, image, answer)"
        ),
    ],
    source: Annotated[str, typer.Argument(help="the benchmark's own question file")],
    jsonl: Annotated[str, typer.Option("--jsonl", help="the canonical JSONL to write")] = "",
    old_out: OldOut = "",
) -> None:
    """Convert a benchmark's questions into hopgraph's canonical JSONL."""
    out = file_flag("--jsonl", jsonl, old_out, required=True)

    from hopgraph.questions.datasets import convert, record_made

    n = convert(name, source, out)
    record_made(out, command_line())  # a record names how to re-make it
    console.print(f"{n} questions -> {out}")
    from hopgraph.questions.datasets import read_questions

    missing = [
        q.id
        for q in read_questions(out)[0]
        for ref in q.images
        if "://" not in ref and not Path(ref).is_file()
    ]
    if missing:
        console.print(
            f"[yellow]{len(missing)} question(s) name an image that is not there[/yellow] "
            f"(first: {missing[0]}); put the images beside the file or in its images/ folder"
        )


@data_app.command("download")
def data_download(
    name: Annotated[str, typer.Argument(help="the dataset to download (its name as listed)")],
    dest: Annotated[str, typer.Option("--dest", help="the folder it is written to")] = "data",
    mirror: Annotated[str, typer.Option(help="base URL of a copy of the same files")] = "",
) -> None:
    """Download a public dataset from its official URL (only ever on this command)."""
    from hopgraph.questions.datasets import download

    for path in download(name, dest, mirror=mirror):
        console.print(f"{path} ({path.stat().st_size} bytes)")


@data_app.command("demo")
def data_demo(
    dest: Annotated[str, typer.Argument(help="the folder the corpus and questions go to")] = "demo",
) -> None:
    """Write the demo corpus and its questions (hopgraph's own invented data)."""
    from hopgraph.questions.demo import write_demo

    corpus, questions = write_demo(dest)
    console.print(f"corpus: {corpus}\nquestions: {questions}")
