"""Question files re-made from the benchmark data they came from, so a committed record (which
holds ids and answers, never the dataset's text) reads scored on a fresh clone.

A question set is described by the data it was made from: the benchmark's converter, its file
under a data folder (``../shared/data`` beside the checkout, ``HOPGRAPH_DATA`` or ``--data``),
the ids it selects in order, how its lines were written, and the sha256 of the result. The
committed records' sets are described in ``benchmarks/results/question-sets.json`` (made by
``benchmarks/question_sets.py``); a set is re-made only where every byte matches that hash, into
``~/.cache/hopgraph/questions/<sha256>.jsonl``.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hopgraph.config import _default_cache_dir
from hopgraph.questions.datasets import CONVERTERS

REGISTRY = Path("benchmarks") / "results" / "question-sets.json"
"""Where a checkout describes the question sets of its committed records."""

DATA_DIRS: list[Path] = []
"""Data folders named on the command line (``--data``), searched first."""


@dataclass(frozen=True)
class QuestionSetSource:
    """How a question file is made from a benchmark's data: ``convert`` (the converter's name)
    of ``data`` (a path under a data folder), the lines of ``ids`` in their order, each as the
    converter writes it (``form`` "lines") or as ``json.dumps`` of it (``form`` "dumps"), whose
    bytes hash to ``sha256``."""

    convert: str
    data: str
    ids: tuple[str, ...]
    sha256: str
    form: str = "lines"

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> QuestionSetSource:
        return cls(
            str(obj["convert"]),
            str(obj["data"]),
            tuple(obj["ids"]),
            str(obj["sha256"]),
            str(obj.get("form", "lines")),
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "convert": self.convert,
            "data": self.data,
            "sha256": self.sha256,
            "form": self.form,
            "ids": list(self.ids),
        }

    def text(self, data_file: Path) -> str:
        """The question file's text, from the benchmark's file (the demo's, from the code
        that writes it: ``hopgraph data demo``)."""
        if self.convert == DEMO:
            return _demo_questions()
        lines = {q.id: q.to_json() for q in CONVERTERS[self.convert](data_file)}
        missing = [i for i in self.ids if i not in lines]
        if missing:
            raise KeyError(f"{data_file} has no question {missing[0]!r}")
        picked = [lines[i] for i in self.ids]
        if self.form == "dumps":
            picked = [json.dumps(json.loads(line)) for line in picked]
        return "".join(line + "\n" for line in picked)


DEMO = "demo"
"""The converter name of the demo's questions, which hopgraph writes itself (no data file)."""


def _demo_questions() -> str:
    import tempfile

    from hopgraph.questions.demo import write_demo

    with tempfile.TemporaryDirectory() as folder:
        return write_demo(folder)[1].read_text(encoding="utf-8")


def data_dirs(near: Path) -> list[Path]:
    """Where benchmark data may be: ``--data`` folders, ``HOPGRAPH_DATA``, then ``shared/data``
    beside each folder at or above ``near`` (a checkout beside ``../shared``)."""
    env = [Path(p) for p in os.environ.get("HOPGRAPH_DATA", "").split(os.pathsep) if p]
    beside = [folder.parent / "shared" / "data" for folder in (near, *near.parents)]
    return [d for d in (*DATA_DIRS, *env, *beside) if d.is_dir()]


def registry_sources(near: Path) -> dict[str, QuestionSetSource]:
    """The question sets a checkout at or above ``near`` describes, by the name its records'
    manifests give them."""
    for folder in (near, *near.parents):
        path = folder / REGISTRY
        if path.is_file():
            sets = json.loads(path.read_text(encoding="utf-8"))
            return {name: QuestionSetSource.from_json(obj) for name, obj in sets.items()}
    return {}


def cache_dir() -> Path:
    """Where re-made question files are kept: ``questions/`` of hopgraph's cache folder."""
    return Path(_default_cache_dir()) / "questions"


PACKAGE_ROOT = Path(__file__).resolve().parents[1]
"""The checkout hopgraph runs from: its registry describes the committed records' question sets
wherever a record has been copied to."""


def rebuilt(name: str, sha256: str, near: Path) -> Path | None:
    """The question file ``name`` (content ``sha256``): the copy re-made earlier (hopgraph's
    cache, found by its hash), else re-made from its benchmark data, where a registry above
    ``near`` or in hopgraph's own checkout describes it and a data folder near the record (or
    named by ``--data`` / ``HOPGRAPH_DATA``) holds its file; None where it cannot be (no
    description, no data, or data whose questions hash otherwise)."""
    out = cache_dir() / f"{sha256}.jsonl"
    if out.is_file() and hashlib.sha256(out.read_bytes()).hexdigest() == sha256:
        return out
    for base in dict.fromkeys([near, PACKAGE_ROOT]):
        sources = registry_sources(base)
        source = sources.get(name) or next(
            (s for s in sources.values() if s.sha256 == sha256), None
        )
        if source is not None and source.sha256 == sha256:
            made = _remade(source, sha256, near, out)  # its data is looked for near the record
            if made is not None:
                return made
    return None


def _remade(source: QuestionSetSource, sha256: str, near: Path, out: Path) -> Path | None:
    """``source``'s questions written to ``out`` where its data is at hand and hashes right."""
    folders = [Path()] if source.convert == DEMO else data_dirs(near)
    for folder in folders:
        data_file = folder / source.data
        if source.convert != DEMO and not data_file.is_file():
            continue
        try:
            text = source.text(data_file)
        except (KeyError, ValueError, OSError):
            continue
        if hashlib.sha256(text.encode("utf-8")).hexdigest() == sha256:
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = out.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, out)
            return out
    return None


def how_to_rebuild(name: str, near: Path) -> str:
    """One line saying what re-makes ``name``: the data it needs, where it looked."""
    source = registry_sources(near).get(name)
    if source is None:
        return ""
    looked = ", ".join(str(d) for d in data_dirs(near)) or "no data folder found"
    return (
        f"it is made from {source.data} ({source.convert}); put that benchmark's data in "
        f"../shared/data beside the checkout, or name its folder with --data or "
        f"HOPGRAPH_DATA (looked in: {looked})"
    )
