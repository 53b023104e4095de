"""Every shell block of the manual is run by a test or says what it needs: a block with no mark
runs here, as written, line by line, in a folder of its own on a scripted model; a block
marked ``<!-- runs: tests/FILE -->`` is run by that test (which names its page); one marked
``<!-- needs: ... -->`` says what it needs that a test cannot have (a GPU, the benchmark data,
minutes on the embedded model). Transcripts are ``text`` blocks, not shell."""

import re
from pathlib import Path

import pytest
from scripted_server import ScriptedServer
from servers import as_written, docs_env

ROOT = Path(__file__).resolve().parents[1]
SHELL = re.compile(r"```(?:bash|sh|shell|console)\n(.*?)```", re.S)
MARK = re.compile(r"<!-- (runs|needs): (.+?) -->")


def pages() -> list[Path]:
    """The written pages (the generated results pages hold no shell to run)."""
    return [p for p in sorted((ROOT / "docs").rglob("*.md")) if "results" not in p.parts]


def shell_blocks(page: Path) -> list[tuple[str | None, str, str]]:
    """(mark kind, mark text, block) for each shell block: the mark is the last line before it."""
    text = page.read_text()
    out = []
    for m in SHELL.finditer(text):
        before = text[: m.start()].rstrip().splitlines()
        mark = MARK.fullmatch(before[-1].strip()) if before else None
        out.append((mark[1], mark[2], m[1]) if mark else (None, "", m[1]))
    return out


def commands(block: str) -> list[str]:
    """A block's commands: continued lines joined, comments and comment-only lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", block)
    lines = (re.split(r"\s+#\s", ln, maxsplit=1)[0].strip() for ln in joined.splitlines())
    return [ln for ln in lines if ln and not ln.startswith("#")]


UNMARKED = [
    (page, block) for page in pages() for kind, _, block in shell_blocks(page) if kind is None
]


def test_every_shell_block_is_run_by_a_test_or_marked_with_what_it_needs():
    blocks = [(p, k, t) for p in pages() for k, t, _ in shell_blocks(p)]
    assert len(blocks) >= 20, len(blocks)
    for page, kind, text in blocks:
        if kind == "runs":
            test = ROOT / text
            assert test.is_file(), (page, text)
            assert page.name in test.read_text(), f"{text} never names {page.name}"
        elif kind == "needs":
            assert len(text.split()) >= 2, (page, text)
    assert {p.name for p, _ in UNMARKED} >= {"knowledge-base.md", "budgets.md"}


@pytest.mark.parametrize("page,block", UNMARKED, ids=[p.name for p, _ in UNMARKED])
def test_an_unmarked_shell_block_runs_as_written(tmp_path, page, block):
    with ScriptedServer() as model:
        env = docs_env(model.base_url)
        for command in commands(block):
            as_written(command, tmp_path, env)
