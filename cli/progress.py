"""A long command's progress on stderr, the same for every command: rich's live bar where
stderr is a terminal; where it is not (piped, a log file, a CI job) one plain line per
finished step, with its counts, the time elapsed and, given a total, an estimate of what is
left, as inspect-ai and pytest print a line per sample; nothing at all with ``--quiet``."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer

from hopgraph.cli.app import err

if TYPE_CHECKING:
    from rich.progress import Progress

Quiet = Annotated[
    bool,
    typer.Option("--quiet", "-q", help="no progress (a bar on a terminal, else a line a step)"),
]


def clock(seconds: float) -> str:
    """``h:mm:ss``, as rich's bar shows elapsed time."""
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class Steps:
    """Progress of ``what`` over ``total`` steps (None: not known ahead). ``every``: the
    fewest seconds between two plain lines (0: a line a step), for steps that come in
    bursts, such as an index's batches; ``unit``: what the count counts."""

    def __init__(
        self,
        what: str,
        total: int | None = None,
        *,
        quiet: bool = False,
        every: float = 0.0,
        unit: str = "done",
    ) -> None:
        self.what, self.total, self.quiet, self.every = what, total, quiet, every
        self.unit = unit
        self.began = time.monotonic()
        self._printed = float("-inf")
        self.bar: Progress | None = None

    def __enter__(self) -> Steps:
        if err.is_terminal and not self.quiet:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            counted = [BarColumn(), MofNCompleteColumn()] if self.total is not None else []
            left = [TimeRemainingColumn()] if self.total is not None else []
            bar = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                *counted,
                TextColumn("{task.fields[note]}"),
                TimeElapsedColumn(),
                *left,
                console=err,
            )
            bar.start()
            self.task = bar.add_task(self.what, total=self.total, note="")
            self.bar = bar
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def step(self, done: int, note: str = "", *, before: int = 0) -> None:
        """``done`` steps finished, ``before`` of them in an earlier sitting (kept out of the
        pace the estimate uses); ``note``: what else to say (failures, the last step)."""
        if self.quiet:
            return
        if self.bar is not None:
            self.bar.update(self.task, completed=done, note=note)
            return
        now = time.monotonic()
        if now - self._printed < self.every and (self.total is None or done < self.total):
            return
        self._printed = now
        elapsed = now - self.began
        count = f"{done}/{self.total}" if self.total is not None else str(done)
        parts = [f"{count} {self.unit}"]
        parts += [note] if note else []
        parts.append(f"{clock(elapsed)} elapsed")
        ran = done - before
        if self.total is not None and ran > 0 and done < self.total:
            parts.append(f"about {clock(elapsed / ran * (self.total - done))} left")
        err.print(f"{self.what}: {', '.join(parts)}", markup=False, highlight=False)


def question_steps(steps: Steps):  # noqa: ANN201 - an on_done for Runner.run
    """``Runner.run``'s ``on_done``: each finished question shown on ``steps`` with the
    failures so far and the pace (questions an earlier sitting answered are not in it)."""
    seconds: list[float] = []

    def advance(pred: dict, summary) -> None:  # noqa: ANN001 - a RunSummary
        seconds.append(float(pred.get("seconds", 0.0)))
        done = summary.skipped_done + summary.finished + summary.failed
        pace = f"last {seconds[-1]:.1f}s, mean {sum(seconds) / len(seconds):.1f}s/question"
        steps.step(done, f"failed {summary.failed}, {pace}", before=summary.skipped_done)

    return advance
