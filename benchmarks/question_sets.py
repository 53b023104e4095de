"""Describe every question file the committed records read by the benchmark data it is made from
(``benchmarks/results/question-sets.json``), so ``view``, ``eval``, ``compare`` and ``results``
re-make it on a fresh clone (``hopgraph.questions.rebuild``). Run after
``benchmarks/prepare_questions.sh`` has made the files (and after an optimize search, its
validation split):

    .venv/bin/python benchmarks/question_sets.py
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from hopgraph.harness.run_folder import RunFolder, question_file
from hopgraph.questions.rebuild import DEMO, REGISTRY, QuestionSetSource, data_dirs

ROOT = Path(__file__).resolve().parents[1]
DATASETS = {
    "hotpot": ("hotpotqa", "hotpotqa/hotpotqa_train.json"),
    "mmlb": ("mmlongbench", "mmlongbench/samples.json"),
}


def describe(name: str, path: Path, sha256: str, data: Path) -> QuestionSetSource | None:
    """The source that re-makes ``path`` byte for byte, in whichever line form does (the
    demo's questions from the code that writes them)."""
    ids = tuple(json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip())
    demo = QuestionSetSource(DEMO, "", ids, sha256)
    if hashlib.sha256(demo.text(Path()).encode()).hexdigest() == sha256:
        return demo
    stem = Path(name).name
    kind = "hotpot" if "hotpot" in stem or "splits" in name else "mmlb"
    convert, rel = DATASETS[kind]
    for form in ("lines", "dumps"):
        source = QuestionSetSource(convert, rel, ids, sha256, form)
        text = source.text(data / rel)
        if hashlib.sha256(text.encode()).hexdigest() == sha256:
            return source
    return None


def make_split(name: str) -> Path | None:
    """An optimize search's validation split (kept out of git), made again from its training
    file with the seed and share its record and command name, checked against the record."""
    import re

    from hopgraph.optimizer.search import ids_hash, split

    path = ROOT / name
    search = path.parent.parent
    record = json.loads((search / "record.json").read_text())
    made = json.loads(path.with_name(path.name + ".made.json").read_text())
    share = float(re.search(r"--val-share ([0-9.]+)", made["command"])[1])
    train = ROOT / record["splits"]["train"]
    lines = [ln for ln in train.read_text().splitlines() if ln.strip()]
    _, val = split([json.loads(ln)["id"] for ln in lines], share, int(record.get("seed", 0)))
    if ids_hash(val) != record["splits"]["validation_ids"]:
        return None
    keep = set(val)
    path.write_text("\n".join(ln for ln in lines if json.loads(ln)["id"] in keep) + "\n")
    return path


def main() -> None:
    data = data_dirs(ROOT)[0]
    sets: dict[str, dict] = {}
    for manifest in sorted((ROOT / "benchmarks" / "results").rglob(RunFolder.MANIFEST)):
        m = json.loads(manifest.read_text())
        name, sha = str(m.get("questions", "")), m.get("questions_sha256")
        if not name or not sha or name in sets:
            continue
        path = question_file(manifest.parent, name, sha, rebuild=False)
        if not path.is_file() and name.endswith("/splits/validation.jsonl"):
            path = make_split(name) or path
        if not path.is_file():
            print(f"{name}: not here ({manifest.parent}); make it first")
            continue
        source = describe(name, path, sha, data)
        if source is None:
            print(f"{name}: no line form of the data re-makes it")
            continue
        sets[name] = source.as_json()
    (ROOT / REGISTRY).write_text(json.dumps(sets, indent=1) + "\n")
    print(f"{len(sets)} question sets -> {REGISTRY}")


if __name__ == "__main__":
    main()
