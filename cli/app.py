"""The Typer app, the options several commands share, and the helpers they use: building a
Context, opening the knowledge base, the run endpoint, refusals and interruptions."""

from __future__ import annotations

import logging
import math
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, NoReturn, TypeVar, overload

import typer
from rich.console import Console
from rich.table import Table

from hopgraph.config import Context, bounded, parse_sets
from hopgraph.redaction import redacted

C = TypeVar("C", bound=Context)

app = typer.Typer(
    help="hopgraph: multimodal multi-hop question answering on LangGraph.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",  # a docstring's lines join into one paragraph at any width
)


def _plain_types() -> None:
    """Help names a value by what one types (``TEXT``, ``INTEGER``, ``PATH``), as click does,
    and a switch by nothing: this Typer writes Python's type names (``<str>``, ``<bool>``,
    ``<list[str]>``), which say how the code holds a value, not what to give."""
    from typer.core import TyperArgument, TyperOption

    words = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "bool": "", "Path": "PATH"}

    def plain(shown: str) -> str:
        inner = shown.removeprefix("<").removesuffix(">")
        inner = inner.removeprefix("list[").removesuffix("]")  # a repeatable option: one value
        return words.get(inner, inner.upper())

    for cls in (TyperOption, TyperArgument):
        typed = cls.display_type
        setattr(cls, "display_type", lambda self, ctx, typed=typed: plain(typed(self, ctx)))  # noqa: B010


_plain_types()


console = Console(soft_wrap=True)


err = Console(stderr=True, soft_wrap=True)


def name_column(table: Table, heading: str, names: Iterable[str]) -> None:
    """A column of names a reader copies into another command or tells rows apart by (ids,
    templates, metrics): never cut, whatever the width (80 into a file or a pipe); the other
    columns wrap instead."""
    widest = max(map(len, [heading, *names]))
    table.add_column(heading, no_wrap=True, min_width=widest)


BaseUrl = Annotated[
    str, typer.Option("--base-url", help="OpenAI-compatible endpoint; default: embedded llama.cpp")
]


ModelName = Annotated[str, typer.Option("--model", help="model name served at --base-url")]


OtelEndpoint = Annotated[
    str,
    typer.Option(
        "--otel-endpoint",
        help="export each question as an OpenTelemetry trace to this OTLP/HTTP collector "
        "(default: $OTEL_EXPORTER_OTLP_ENDPOINT)",
    ),
]


PromptsDir = Annotated[str, typer.Option("--prompts", help="folder of .j2 overrides")]


Sets = Annotated[
    list[str] | None, typer.Option("--set", help="any Context field: key=value (repeatable)")
]


PriceOption = Annotated[
    str, typer.Option("--price", help="the model's price: prompt=USD,completion=USD per 1M tokens")
]
KbDir = Annotated[str, typer.Option("--kb", help="knowledge-base folder")]
Fields = Annotated[
    str,
    typer.Option(
        "--fields",
        help="the question file's columns named otherwise than the fields: FIELD=COLUMN,... "
        "(e.g. question=Query,answers=Gold); unmapped columns are kept as metadata",
    ),
]


def _data_folder(value: str) -> str:
    """``--data``: a benchmark data folder, searched first when a record's question file is
    re-made (``questions/rebuild.py``)."""
    if value:
        from hopgraph.questions.rebuild import DATA_DIRS

        if not Path(value).is_dir():
            refuse(f"--data {value}: no such folder")
        DATA_DIRS.insert(0, Path(value))
    return value


DataDir = Annotated[
    str,
    typer.Option(
        "--data",
        help="benchmark data folder (default: ../shared/data beside the checkout, or "
        "HOPGRAPH_DATA): a record's question file is re-made from it where missing",
        callback=_data_folder,
    ),
]


CacheDir = Annotated[
    str,
    typer.Option(
        "--cache",
        help="folder of greedy replies kept by their exact request: a re-run pays only for "
        "the calls that changed (response_cache)",
    ),
]


OldOut = Annotated[str, typer.Option("--out", hidden=True)]
"""``--out`` names a folder in every command (a run, a search, a trained model); a command
that writes one file names it by what it holds (``--html``, ``--jsonl``, ``--results``) and
still takes ``--out`` for it, unlisted, so that scripts written before go on working."""


def file_flag(flag: str, value: str, old: str, *, required: bool = False) -> str:
    """The file a command writes, from its ``flag`` or the old ``--out`` spelling of it."""
    if value and old and value != old:
        refuse(f"{flag} and --out name the same file: give one ({value!r}, {old!r})")
    if required and not (value or old):
        refuse(f"missing option {flag}: the file to write")
    return value or old


DISK_FULL = 5
"""The exit status of a command stopped by a full disk (the file it was writing is named)."""


def within(least: float = -math.inf, most: float = math.inf):  # noqa: ANN201
    """A numeric flag's check (its option's ``callback``), the rule ``--set`` fields follow
    (``config.bounded``): a value not finite or outside ``least..most`` is refused before the
    command starts, exit 2, naming the flag, the value and the range; nothing is written."""

    def check(param: typer.CallbackParam, value: float | None) -> float | None:
        if value is None:
            return value
        try:
            flag = max(param.opts, key=len) if param.opts else f"--{param.name}"
            return bounded(flag.replace("_", "-"), value, least=least, most=most)
        except ValueError as e:
            refuse(str(e))

    return check


@overload
def build_context(
    base_url: str = "", model: str = "", prompts: str = "", sets=None, cache: str = ""
) -> Context: ...
@overload
def build_context(
    base_url: str = "",
    model: str = "",
    prompts: str = "",
    sets=None,
    cache: str = "",
    *,
    schema: type[C],
) -> C: ...
def build_context(
    base_url: str = "",
    model: str = "",
    prompts: str = "",
    sets=None,
    cache: str = "",
    schema: type[Context] = Context,
) -> Context:
    """``schema`` (a graph's Context class, or a command's) from defaults, HOPGRAPH_*
    environment, then command-line options (which win): ``--set`` names only its fields."""
    changes: dict[str, str] = parse_sets(sets)
    options = (
        ("base_url", base_url),
        ("model", model),
        ("prompts_dir", prompts),
        ("response_cache", cache),
    )
    for key, value in options:
        if value:
            changes[key] = value
    try:
        return schema().replace(**changes).as_operator()  # the CLI's user is the operator
    except ValueError as e:
        if "unknown Context field" not in str(e):
            raise
        from hopgraph.graphs import every_context

        every_context()  # every built-in method's knobs known: the refusal says whose it names
        return schema().replace(**changes).as_operator()


def _version(shown: bool) -> None:
    """``--version``: the project's version (CHANGELOG.md says what each one brought)."""
    if shown:
        from hopgraph import __version__

        print(f"hopgraph {__version__}")
        raise typer.Exit()


@app.callback()
def _setup(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="log each library's INFO lines too")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="print the version and exit", callback=_version, is_eager=True
        ),
    ] = False,
) -> None:
    from hopgraph.models.embedded import install_sigterm_handler
    from hopgraph.redaction import redact_logs

    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    redact_logs()  # a library's log line (an exporter's retry naming its URL) holds no secret
    install_sigterm_handler()


def parsed_price(text: str):  # noqa: ANN201 - a Price or None
    """``--price``: the model's price, refused (exit 2) where it does not parse."""
    from hopgraph.harness.cost import Price

    try:
        return Price.parse(text) if text else None
    except ValueError as e:
        refuse(str(e))


def open_kb(kb: str, sets=None, *, must_exist: bool = False, schema: type[Context] = Context):
    """The KB ``--kb`` names, under the command's ``--set``s (``schema``: the Context class
    they are fields of, a run's agent's)."""
    from hopgraph.memory.kb import KnowledgeBase

    ctx = build_context(sets=sets, schema=schema)
    return KnowledgeBase.from_context(ctx.replace(kb_dir=kb) if kb else ctx, must_exist=must_exist)


def run_endpoint(ctx: Context) -> str:
    """The endpoint the run talks to (starting the embedded server when none is configured)."""
    if ctx.base_url:
        return ctx.base_url
    from hopgraph.models import embedded_server

    return embedded_server(ctx).base_url


def checked_endpoint(ctx: Context) -> str:
    """The endpoint, once the faults that would fail every question are ruled out (prompt
    overlay, endpoint reachable and serving the model); else a refusal naming the fault."""
    from hopgraph.harness.runner import preflight
    from hopgraph.models import HopgraphModelError
    from hopgraph.prompts import PromptError

    endpoint = run_endpoint(ctx)
    try:
        preflight(ctx)
    except (PromptError, HopgraphModelError) as e:
        refuse(str(e))
    return endpoint


def otel_export(endpoint: str):
    """The OpenTelemetry export for a run, or None when no endpoint is configured."""
    from hopgraph.harness.otel import OtelExport, otel_endpoint

    url = otel_endpoint(endpoint)
    return OtelExport(url) if url else None


def interrupted(code: int, otel=None, kept: str = "finished questions are saved") -> NoReturn:
    """Ctrl-C or SIGTERM: stop now. Every finished question's line is written; an in-flight
    one resumes from its checkpoint. The model server is killed, no worker thread is waited
    for, and the exit code says which signal (130, 143); ``kept`` says what was saved."""
    import os

    from hopgraph.models.embedded import stop_all

    err.print(f"interrupted: {kept}; re-run the same command to resume")
    stop_all(now=True)
    if otel is not None:  # the finished questions' spans still go out
        otel.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def refuse(message: str) -> NoReturn:
    """Exit 2 naming what was wrong; a secret the message quotes (a URL's password, a DSN's
    ``password=``) is never printed."""
    err.print(f"[red]error:[/red] {redacted(message)}")
    raise typer.Exit(2)


def run_folder(path: str | Path) -> Path:
    """A run folder a command reads, refused (exit 2) where there is none: no such folder, or
    one that no run wrote (no predictions.jsonl)."""
    folder = Path(path)
    if not folder.is_dir():
        refuse(f"no run folder at {folder}: make one with hopgraph run --out {folder}")
    if not (folder / "predictions.jsonl").exists():
        refuse(
            f"{folder} is not a run folder (no predictions.jsonl): hopgraph run --out writes one"
        )
    return folder


def spinner(text: str):
    from rich.spinner import Spinner

    return Spinner("dots", text=text)


def run_labels(runs: list[str]) -> list[str]:
    """Column headers for runs: folder names, or the paths where two names collide."""
    names = [Path(r).name or r for r in runs]
    return names if len(set(names)) == len(names) else list(runs)
