"""The formatter owns the layout, as docs/architecture.md's Development section states:
``# fmt: skip`` holds only a data table (a literal whose every element is a row)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def sources() -> list[Path]:
    """Every Python file of the tree (package, tests, benchmarks, examples), none generated."""
    skip = {".venv", ".venv-vllm", "site", "build", ".typecheck", "runs", "node_modules"}
    return [
        p
        for p in ROOT.rglob("*.py")
        if not any(part in skip or part.startswith(".") for part in p.relative_to(ROOT).parts)
    ]


def is_table(node: ast.AST) -> bool:
    """A list, tuple or set of rows (each a tuple or list), or a call given one (np.array)."""
    value = getattr(node, "value", node)
    if isinstance(value, ast.Call) and value.args:
        value = value.args[0]
    rows = getattr(value, "elts", None)
    return bool(rows) and all(isinstance(r, ast.Tuple | ast.List) for r in rows)


def skipped_statements(path: Path) -> list[tuple[int, ast.AST | None]]:
    """Each ``# fmt: skip`` line of a file with the statement ending on it (None if none)."""
    text = path.read_text(encoding="utf-8")
    marked = [i for i, line in enumerate(text.splitlines(), 1) if line.endswith("# fmt: skip")]
    if not marked:
        return []
    ends = {n.end_lineno: n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.stmt)}
    return [(line, ends.get(line)) for line in marked]


def test_the_formatter_owns_the_layout_but_for_data_tables():
    laid_by_hand = [
        f"{p.relative_to(ROOT)}:{line}"
        for p in sources()
        for line, stmt in skipped_statements(p)
        if stmt is None or not is_table(stmt)
    ]
    assert not laid_by_hand, (
        "`# fmt: skip` on code that is not a data table (let `make format` lay it out): "
        + ", ".join(laid_by_hand)
    )
