"""Question files: JSONL (canonical), a JSON array or CSV as users have them, converters from
the benchmarks, and dataset downloads.

Canonical line: ``{"id", "question", "answers": [...], "evidence": [item ids], "type",
"images": [...], "doc", "meta": {...}}``. Only ``question`` is required: an ``id`` is made from
the question's text where there is none, and gold answers are optional. A file whose columns or
keys have other names is read through a ``FieldSpec`` (``--fields question=Query,answers=Gold``);
every column it does not map is kept in ``meta``. Converters compute gold evidence ids with the
same key functions the indexer uses (``hopgraph.memory.sources``), so gold ids are ids in the
index.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import itertools
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from hopgraph import pysyntax
from hopgraph.memory.files import Skipped, load_json, read_jsonl, read_jsonl_lines
from hopgraph.memory.ids import mmqa_key, mmqa_row_key, page_id, passage_id
from hopgraph.memory.kb import item_id


@dataclass
class Question:
    """One question of a question file (a line of the canonical JSONL)."""

    id: str
    """Unique in its file; made from the question's text (``q-`` and 10 hex) where absent."""
    question: str
    """The question asked, the one required field."""
    answers: list[str] = field(default_factory=list)
    """Gold answers, any of which is right; empty: the question is answered but not scored."""
    evidence: list[str] = field(default_factory=list)
    """Gold evidence: ids of knowledge-base items (``hopgraph search`` shows them)."""
    type: str = ""
    """A category the metrics are also split by (HotpotQA's bridge / comparison)."""
    images: list[str] = field(default_factory=list)
    """Image files the question comes with (paths or URLs; they need a VLM)."""
    doc: str = ""
    """The one document a question is about (MAB-DQA: a PDF's file name)."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Anything else the file holds for the question, kept as it is."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)


FIELDS = ("id", "question", "answers", "evidence", "type", "images", "doc", "meta")
ALIASES = {"answers": "answer", "images": "image"}
"""A single-valued name read where the list's own is absent (a CSV's ``answer`` column)."""
LIST_FIELDS = ("answers", "evidence", "images")
SEPARATOR = "|"
"""Between values of a list field in one CSV cell (``Paris | Paris, France``)."""


@dataclass(frozen=True)
class FieldSpec:
    """Which column or key of a question file holds each field of ``Question``, where its name
    differs (``{"question": "Query", "answers": "Gold"}``); unnamed fields are read by their
    own name (``answer`` and ``image`` too, for one value)."""

    names: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, text: str) -> FieldSpec:
        """``question=Query,answers=Gold`` (``--fields``); a field that ``Question`` has not, or
        a pair without ``=``, is refused naming it."""
        pairs = []
        for part in filter(None, (p.strip() for p in text.split(","))):
            ours, sep, theirs = (x.strip() for x in part.partition("="))
            if not sep or not ours or not theirs:
                raise ValueError(f"--fields {part!r}: write FIELD=COLUMN, e.g. question=Query")
            if ours not in FIELDS[:-1]:
                raise ValueError(
                    f"--fields {ours!r} is not a question field: one of {', '.join(FIELDS[:-1])}"
                )
            pairs.append((ours, theirs))
        return cls(tuple(pairs))

    @classmethod
    def of(cls, names: dict[str, str] | None) -> FieldSpec:
        return cls(tuple((names or {}).items()))

    def as_dict(self) -> dict[str, str]:
        return dict(self.names)

    def canonical(self, row: dict[str, Any]) -> dict[str, Any]:
        """A file's row as the canonical fields, every column not mapped kept in ``meta``."""
        named = dict(self.names)
        out: dict[str, Any] = {}
        used: set[str] = set()
        for ours in FIELDS[:-1]:
            names = [n for n in (named.get(ours, ours), ALIASES.get(ours, "")) if n in row]
            used.update(names)
            if names:
                out[ours] = row[names[0]]
        for ours in LIST_FIELDS:
            if out.get(ours) is None:
                out.pop(ours, None)
            elif isinstance(out[ours], str):
                out[ours] = _listed(out[ours])
        given = row.get("meta")
        meta: dict[str, Any] = given if isinstance(given, dict) else {}
        extra = {k: v for k, v in row.items() if k not in used and k != "meta" and k is not None}
        if meta or extra:
            out["meta"] = {**extra, **meta}
        return out


def _listed(cell: str) -> list[str]:
    """A list field's cell: a JSON list, else values split at ``SEPARATOR``."""
    text = cell.strip()
    if text.startswith("["):
        try:
            value = json.loads(text)
            if isinstance(value, list):
                return [str(v) for v in value]
        except ValueError:
            pass
    return [v.strip() for v in text.split(SEPARATOR) if v.strip()]


def made_id(question: str) -> str:
    """The id of a question that came without one: stable under reordering of its file."""
    return "q-" + hashlib.sha1(question.encode("utf-8")).hexdigest()[:10]


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any] | Skipped]]:
    """(line number, row or ``Skipped``) of a question file: CSV (``.csv``, ``.tsv``) by its
    header, else JSON lines or one JSON array."""
    if path.suffix.lower() not in (".csv", ".tsv"):
        yield from read_jsonl_lines(path)
        return
    with path.open(encoding=_csv_encoding(path), errors="surrogateescape", newline="") as f:
        reader = csv.DictReader(f, delimiter="\t" if path.suffix.lower() == ".tsv" else ",")
        if not reader.fieldnames:
            yield 0, Skipped(str(path), "no header row: a CSV names its columns first")
            return
        if bad := _not_utf8(" ".join(reader.fieldnames)):
            yield 0, Skipped(str(path), f"the header row is not UTF-8 ({bad})")
            return
        for row in reader:
            where = f"{path}:{reader.line_num}"
            if None in row:
                cells, header = len(reader.fieldnames) + len(row[None]), len(reader.fieldnames)
                yield reader.line_num, Skipped(where, f"{cells} cells, the header has {header}")
                continue
            if undecoded := [f"{b} in column {k!r}" for k, v in row.items() if (b := _not_utf8(v))]:
                why = f"not UTF-8 ({undecoded[0]}): save it as UTF-8"
                yield reader.line_num, Skipped(where, why)
                continue
            if any(v not in (None, "") for v in row.values()):
                yield reader.line_num, dict(row)


def _csv_encoding(path: Path) -> str:
    """UTF-16 where the file opens with its byte-order mark (a spreadsheet's "Unicode" CSV),
    else UTF-8 (its mark, if any, dropped)."""
    with path.open("rb") as f:
        return "utf-16" if f.read(2) in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) else "utf-8-sig"


def _not_utf8(cell: str | None) -> str:
    """The first byte of ``cell`` that was not UTF-8 (read with ``surrogateescape``), or ""."""
    bad = next((c for c in cell or "" if "\udc80" <= c <= "\udcff"), "")
    return f"byte 0x{ord(bad) - 0xDC00:02x}" if bad else ""


def read_questions(
    path: str | Path, fields: FieldSpec | None = None
) -> tuple[list[Question], list[Skipped]]:
    """Valid questions in file order, and each bad line, duplicate id or empty question. A
    ``.csv`` / ``.tsv`` file is read by its header, anything else as JSON lines or a JSON
    array; ``fields`` names the columns that differ from ``Question``'s fields."""
    questions: list[Question] = []
    problems: list[Skipped] = []
    seen: set[str] = set()
    first: dict[str, int] = {}
    spec = fields or FieldSpec()
    for lineno, row in _rows(Path(path)):
        if isinstance(row, Skipped):
            problems.append(row)
            continue
        obj = spec.canonical(row)
        text = _scalar(obj.get("question"))
        qid = _scalar(obj.get("id")) or (made_id(text) if "id" not in obj and text else "")
        where = f"{path}:{lineno}: question {qid or '(no id)'}"
        if not qid:
            problems.append(Skipped(where, "missing id (null, empty or not a string/number)"))
        elif not text:
            problems.append(Skipped(where, "empty question (null, empty or not a string)"))
        elif qid in seen:
            problems.append(
                Skipped(where, f"duplicate id {qid!r} (the one on line {first[qid]} is kept)")
            )
        else:
            seen.add(qid)
            first[qid] = lineno
            known = {k: obj[k] for k in FIELDS[2:] if obj.get(k) is not None}
            for k in ("type", "doc"):
                if k in known:
                    known[k] = _scalar(known[k])
            questions.append(Question(id=qid, question=text, **known))
    return questions, problems


def _scalar(value: Any) -> str:
    """A field as text: strings and numbers; null, lists and objects are no value."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return ""
    return str(value).strip()


def write_questions(questions: Iterable[Question], path: str | Path) -> int:
    """Write atomically (a temp file renamed into place); returns how many were written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    n = 0
    with open(tmp, "w", encoding="utf-8") as f:
        for q in questions:
            f.write(q.to_json() + "\n")
            n += 1
    os.replace(tmp, path)
    return n


# -- converters -----------------------------------------------------------------------------------
def convert_hotpotqa(path: Path) -> Iterator[Question]:
    """HotpotQA distractor format; gold = the passages named by ``supporting_facts``."""
    for entry in load_json(path):
        paragraphs = {title: "".join(sents) for title, sents in entry["context"]}
        gold_titles = list(dict.fromkeys(title for title, _ in entry["supporting_facts"]))
        yield Question(
            id=entry["_id"],
            question=entry["question"],
            answers=[entry["answer"]],
            evidence=[passage_id(t, paragraphs[t]) for t in gold_titles if t in paragraphs],
            type=entry.get("type", ""),
            meta={"level": entry.get("level", ""), "supporting_titles": gold_titles},
        )


def convert_musique(path: Path) -> Iterator[Question]:
    """MuSiQue JSONL; gold = paragraphs marked ``is_supporting``."""
    for obj in read_jsonl(path):
        if isinstance(obj, Skipped):
            continue
        paras = obj.get("paragraphs", [])
        yield Question(
            id=obj["id"],
            question=obj["question"],
            answers=[obj.get("answer", ""), *obj.get("answer_aliases", [])],
            evidence=[
                passage_id(p.get("title", ""), p.get("paragraph_text", ""))
                for p in paras
                if p.get("is_supporting")
            ],
            type=obj["id"].split("__")[0] if "__" in obj["id"] else "",
        )


def convert_multimodalqa(path: Path) -> Iterator[Question]:
    """MultimodalQA questions; gold = supporting texts and images, and the answer's table rows.
    ``meta["candidate_images"]`` holds the question's candidate images (``image_doc_ids``) as
    item ids: they are a retrieval pool, not images the question shows."""
    for obj in read_jsonl(path):
        if isinstance(obj, Skipped):
            continue
        meta = obj.get("metadata", {})
        evidence: list[str] = []
        for ctx in obj.get("supporting_context", []):
            part = ctx.get("doc_part")
            if part in ("text", "image"):
                evidence.append(item_id(part, mmqa_key(ctx["doc_id"])))
            elif part == "table":
                rows = {r for a in obj.get("answers", []) for r, _ in a.get("table_indices", [])}
                evidence += [item_id("table", mmqa_row_key(ctx["doc_id"], r)) for r in sorted(rows)]
        yield Question(
            id=obj["qid"],
            question=obj["question"],
            answers=[str(a.get("answer", "")) for a in obj.get("answers", [])],
            evidence=list(dict.fromkeys(evidence)),
            type=meta.get("type", ""),
            meta={
                "modalities": meta.get("modalities", []),
                "candidate_images": [
                    item_id("image", mmqa_key(i)) for i in meta.get("image_doc_ids", [])
                ],
            },
        )


def _pages(value: Any) -> list[int]:
    if isinstance(value, list):
        return [int(v) for v in value]
    try:
        parsed = pysyntax.literal(str(value))
    except (ValueError, SyntaxError):
        return []
    return [int(v) for v in (parsed if isinstance(parsed, list | tuple) else [parsed])]


def convert_mmlongbench(path: Path) -> Iterator[Question]:
    """MMLongBench-Doc ``samples.json``; gold = the evidence pages; ``type`` = answer format."""
    for n, entry in enumerate(load_json(path)):
        doc = entry["doc_id"]
        sources = entry.get("evidence_sources", "[]")
        yield Question(
            id=f"{Path(doc).stem}-{n:04d}",
            question=entry["question"],
            answers=[str(entry.get("answer", ""))],
            evidence=[page_id(doc, p) for p in _pages(entry.get("evidence_pages", "[]"))],
            type=entry.get("answer_format", ""),
            doc=doc,
            meta={"doc_type": entry.get("doc_type", ""), "evidence_sources": _sources(sources)},
        )


def _sources(value: Any) -> list[str]:
    try:
        parsed = pysyntax.literal(value) if isinstance(value, str) else value
    except (ValueError, SyntaxError):
        return [str(value)]
    return [str(v) for v in parsed] if isinstance(parsed, list | tuple) else [str(parsed)]


IMAGE_SUFFIXES_TRIED = (".jpg", ".jpeg", ".png", ".JPEG", ".JPG", ".webp")


def _image_ref(ref: str, root: Path) -> str:
    """An image reference as an absolute path where a file is found (as given, by id under the
    file's folder or its ``images/``, with the usual suffixes); URLs and misses as given."""
    if not ref or "://" in ref:
        return ref
    for folder in (root, root / "images"):
        for candidate in (folder / ref, *(folder / f"{ref}{s}" for s in IMAGE_SUFFIXES_TRIED)):
            if candidate.is_file():
                return str(candidate.resolve())
    return ref


def _answers(*values: Any) -> list[str]:
    """Answer strings from strings ("a|b" splits), lists of strings, and the rest ignored
    (InfoSeek's numeric ranges are dicts)."""
    out: list[str] = []
    for value in values:
        if isinstance(value, str):
            out += [a.strip() for a in value.split("|") if a.strip()]
        elif isinstance(value, list):
            out += [str(a).strip() for a in value if isinstance(a, str | int | float)]
    return list(dict.fromkeys(out))


def convert_image_vqa(path: Path) -> Iterator[Question]:
    """Questions about a picture, InfoSeek / Encyclopedic-VQA style: JSONL or CSV rows with a
    question, its answer(s), and its image as ``image_path`` / ``image`` / ``image_id`` (InfoSeek)
    or ``dataset_image_ids`` (E-VQA, the first of "a|b"). An image id is looked up beside the
    file and in its ``images/`` folder. No evidence ids: the knowledge base is the user's."""
    import csv

    root = path.parent
    if path.suffix.lower() == ".csv":
        with open(path, encoding="utf-8", newline="") as f:
            rows: Iterable[Any] = list(csv.DictReader(f))
    else:
        rows = (r for r in read_jsonl(path) if not isinstance(r, Skipped))
    for n, row in enumerate(rows):
        ref = next(
            (str(row[k]) for k in ("image_path", "image", "image_id") if row.get(k)),
            str(row.get("dataset_image_ids") or "").split("|")[0],
        )
        yield Question(
            id=str(row.get("data_id") or row.get("id") or f"{path.stem}-{n:05d}"),
            question=str(row.get("question", "")),
            answers=_answers(row.get("answer"), row.get("answer_eval")),
            type=str(row.get("question_type") or row.get("data_split") or ""),
            images=[_image_ref(ref, root)] if ref else [],
            meta={k: row[k] for k in ("entity_id", "wikipedia_url", "dataset_name") if row.get(k)},
        )


CONVERTERS: dict[str, Callable[[Path], Iterator[Question]]] = {
    "hotpotqa": convert_hotpotqa,
    "musique": convert_musique,
    "multimodalqa": convert_multimodalqa,
    "mmlongbench": convert_mmlongbench,
    "image-vqa": convert_image_vqa,
}


EXPECTED = {
    "hotpotqa": "a JSON array of objects with _id, question, answer, context, supporting_facts",
    "musique": "JSON lines (or a JSON array) of objects with id, question, answer, paragraphs",
    "multimodalqa": "MMQA JSON lines of objects with qid, question, answers, metadata",
    "mmlongbench": "samples.json: a JSON array of objects with doc_id, question, answer, "
    "evidence_pages, answer_format",
    "image-vqa": "JSON lines (or a JSON array) of objects with a question, an answer and an image",
}
"""The shape each converter reads, for the error when a file yields nothing."""


def _what_it_holds(path: Path) -> str:
    """A line on what a file that yielded no question holds instead."""
    rows = list(itertools.islice(read_jsonl_lines(path), 200))
    objects = [obj for _, obj in rows if isinstance(obj, dict)]
    if objects:
        keys = sorted(set().union(*(o.keys() for o in objects[:20])))
        return f"{len(objects)}+ records with keys {keys[:12]}"
    bad = [obj for _, obj in rows if isinstance(obj, Skipped)]
    return f"no JSON record ({bad[0].reason})" if bad else "nothing"


def convert(name: str, source: str | Path, out: str | Path) -> int:
    """Convert ``source`` into canonical question lines at ``out``; a non-empty source that
    yields no question is an error naming the shape expected and what the file holds (the
    empty output is not written)."""
    if name not in CONVERTERS:
        raise ValueError(f"unknown dataset {name!r}; one of {', '.join(CONVERTERS)}")
    source = Path(source)
    if not source.is_file():
        raise FileNotFoundError(f"question file not found: {source}")
    try:
        questions = list(CONVERTERS[name](source))
    except (KeyError, TypeError, AttributeError) as e:
        raise ValueError(
            f"{source} is not {name} data: expected {EXPECTED.get(name, 'its format')}, found "
            f"{_what_it_holds(source)} (a record lacks or mistypes {e})"
        ) from None
    if not questions and source.stat().st_size:
        raise ValueError(
            f"{source} gave no {name} question: expected {EXPECTED.get(name, 'its format')}, "
            f"found {_what_it_holds(source)}"
        )
    return write_questions(questions, out)


# -- downloads (only on a user's explicit command) --------------------------------------------
DATASETS: dict[str, list[str]] = {
    "hotpotqa-dev": ["http://curtis.ml.cmu.edu/datasets/hotpot/hotpot_dev_distractor_v1.json"],
    "hotpotqa-train": ["http://curtis.ml.cmu.edu/datasets/hotpot/hotpot_train_v1.1.json"],
    "multimodalqa": [
        f"https://github.com/allenai/multimodalqa/raw/master/dataset/{name}"
        for name in (
            "MMQA_dev.jsonl.gz",
            "MMQA_train.jsonl.gz",
            "MMQA_texts.jsonl.gz",
            "MMQA_tables.jsonl.gz",
            "MMQA_images.jsonl.gz",
        )
    ],
    "mmlongbench": [
        "https://raw.githubusercontent.com/mayubo2333/MMLongBench-Doc/main/data/samples.json"
    ],
}


def download(
    name: str,
    dest: str | Path,
    *,
    mirror: str = "",
    on_progress: Callable[[str, int, int | None], None] | None = None,
    timeout: float = 60.0,
) -> list[Path]:
    """Fetch a public dataset's files into ``dest``; files already complete are kept.
    ``mirror`` replaces each URL's folder (a local copy of the same file names)."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; one of {', '.join(DATASETS)}")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    paths = []
    for url in DATASETS[name]:
        file_name = url.rsplit("/", 1)[1]
        if mirror:
            url = f"{mirror.rstrip('/')}/{file_name}"
        target = dest / file_name
        if target.is_file():
            paths.append(target)
            continue
        part = target.with_suffix(target.suffix + ".part")
        try:
            with httpx.stream("GET", url, follow_redirects=True, timeout=timeout) as resp:
                if resp.status_code != 200:
                    raise RuntimeError(f"download of {url} failed: HTTP {resp.status_code}")
                total = int(resp.headers.get("content-length", 0)) or None
                done = 0
                with open(part, "wb") as f:
                    for chunk in resp.iter_bytes(1 << 20):
                        f.write(chunk)
                        done += len(chunk)
                        if on_progress:
                            on_progress(file_name, done, total)
                if total is not None and done != total:
                    raise RuntimeError(f"download of {url} stopped at {done} of {total} bytes")
        except httpx.HTTPError as e:
            part.unlink(missing_ok=True)
            raise RuntimeError(f"download of {url} failed: {e}") from e
        except BaseException:
            part.unlink(missing_ok=True)
            raise
        os.replace(part, target)
        paths.append(target)
    return paths


def made_path(questions: str | Path) -> Path:
    """Where a question file's provenance lies: ``<file>.made.json`` beside it."""
    return Path(f"{questions}.made.json")


def record_made(questions: str | Path, command: str) -> None:
    """Write how ``questions`` was made (``hopgraph data convert ...`` or a script), with the
    file's sha256, so a run's manifest can name the command that re-creates it."""
    import hashlib

    digest = hashlib.sha256(Path(questions).read_bytes()).hexdigest()
    made_path(questions).write_text(json.dumps({"command": command, "sha256": digest}) + "\n")


def how_made(questions: str | Path, sha256: str) -> str:
    """The command that made ``questions`` as it is now (its content's ``sha256``, which the
    caller has); "" where none is recorded, or the file changed since."""
    try:
        made = json.loads(made_path(questions).read_text())
    except (OSError, ValueError):
        return ""
    return str(made.get("command", "")) if made.get("sha256") == sha256 else ""
