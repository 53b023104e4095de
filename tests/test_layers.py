"""The layering docs/architecture.md states is the code's: every hopgraph module's imports (at
its top or inside a function) go to its own layer, a layer its row lists, ``settings``, or
``config`` / ``runtime`` / ``pysyntax``; and no import closes a cycle."""

from pathlib import Path

import pytest

from hopgraph.harness.code_fingerprint import imported

ROOT = Path(__file__).resolve().parents[1]
LAYERS = (
    "cli",
    "presentation",
    "optimizer",
    "evals",
    "harness",
    "questions",
    "graphs",
    "agents",
    "tools",
    "memory",
    "models",
    "prompts",
)
BASE = {"config", "confine", "runtime", "pysyntax", "redaction", "wording"}
"""Under every layer: anyone may import them; they import no hopgraph module but each other."""
OVER_BASE = {"settings": BASE}
"""Under every layer too, each importing only its own modules and those named (every method's
knobs and Contexts, built on ``config``)."""


def layer_table(doc: Path = ROOT / "docs" / "architecture.md") -> dict[str, set[str]]:
    """Layer -> the layers it may import, read from the doc's table."""
    table = {}
    for line in doc.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`") and cells[0].endswith("/`"):
            name = cells[0].strip("`/")
            table[name] = set() if cells[2] == "—" else {x.strip() for x in cells[2].split(",")}
    return table


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(("hopgraph", *(parts[:-1] if parts[-1] == "__init__" else parts)))


def modules() -> dict[str, Path]:
    return {
        module_name(p): p
        for p in ROOT.rglob("*.py")
        if p.relative_to(ROOT).parts[0]
        in (*LAYERS, *OVER_BASE, *(f"{b}.py" for b in BASE), "__init__.py")
    }


def imports(path: Path, module: str, known: set[str]) -> set[str]:
    """The hopgraph modules ``path`` imports (the fingerprint's reading of import lines), the
    package root left out (``from hopgraph import prompts`` imports hopgraph.prompts)."""
    return {m for m in imported(path, module) if m in known and m != "hopgraph"}


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "hopgraph"


def upward_imports(table: dict[str, set[str]], mods: dict[str, Path] | None = None) -> list[str]:
    mods = mods or modules()
    bad = []
    for mod, path in sorted(mods.items()):
        here = layer_of(mod)
        for target in sorted(imports(path, mod, set(mods))):
            there = layer_of(target)
            if here in BASE and there not in BASE:
                bad.append(f"{mod} imports {target} ({here} sits under every layer)")
            elif here in OVER_BASE and there not in OVER_BASE[here] | {here}:
                bad.append(f"{mod} imports {target} ({here} sits under every layer but {there})")
            elif there not in BASE | set(OVER_BASE) | {here} | table.get(here, set()):
                bad.append(f"{mod} ({here}) imports {target} ({there})")
    return bad


def cycles() -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm)."""
    mods = modules()
    edges = {m: imports(p, m, set(mods)) & set(mods) for m, p in mods.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.remove(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for m in sorted(edges):
        if m not in index:
            visit(m)
    return found


def test_the_doc_states_a_row_for_every_layer():
    assert set(layer_table()) == set(LAYERS)


def test_no_module_imports_a_layer_above_its_own():
    assert upward_imports(layer_table()) == []


def test_no_import_closes_a_cycle():
    assert cycles() == []


@pytest.mark.parametrize(
    "where, line",
    [
        ("memory/kb.py", "from hopgraph.agents.role import Role"),
        ("tools/retrieval.py", "from hopgraph.graphs.shared import context"),
        ("models/chat.py", "from hopgraph.memory.kb import KnowledgeBase"),
        ("config.py", "from hopgraph.models import chat_model"),
    ],
)
def test_an_upward_import_added_to_a_module_is_caught(where, line, tmp_path):
    """The check reads what is on disk: the same file with one upward import, inside a
    function, fails it, naming the module and what it imported."""
    real = ROOT / where
    copy = tmp_path / real.name
    copy.write_text(real.read_text() + "\n\ndef added():\n    " + line + "\n")
    mods = modules() | {module_name(real): copy}
    target = line.split()[1]
    found = upward_imports(layer_table(), mods)
    assert len(found) == 1 and found[0].startswith(module_name(real)) and target in found[0]


def test_the_layout_holds_for_every_method():
    """Each method, as ``graphs.specs`` lists them (a graph's spec or a part's), has its code
    at its name in each layer it has code in: its settings in ``settings/M.py``, a graph's in
    ``graphs/M.py``, a part's package or module where its spec's ``code`` says; no module of a
    layer is named for a method without being that method's (``mmapg_extra.py``). So a new
    method is its own files plus its line in ``graphs.BUILT_IN``."""
    from hopgraph.graphs import specs

    every = specs()
    for name, spec in every.items():
        assert {k.__module__ for k in spec.settings} <= {f"hopgraph.settings.{name}"}, name
        code = spec.code.removeprefix("hopgraph.").split(".") if spec.code else ["graphs", name]
        assert code[-1] == name, (name, spec.code)
        where = ROOT.joinpath(*code)
        assert where.is_dir() or where.with_suffix(".py").is_file(), where
        for layer in ("agents", "tools", "prompts"):
            if any((ROOT / layer).glob(f"{name}*")):
                assert (ROOT / layer / name).exists() or (ROOT / layer / f"{name}.py").exists()
    for layer in ("agents", "tools", "memory", "graphs", "settings", "prompts"):
        for p in (ROOT / layer).iterdir():
            assert not any(p.stem.startswith(m) and p.stem != m for m in every), p


def test_a_fingerprint_covers_what_the_method_runs():
    """rag never steers: GRAIL's modules are not in its fingerprint, so editing GRAIL leaves
    rag's records alone; QDRAG covers GRAIL and PolarMem only when its Context turns them on."""
    from hopgraph.graphs import every_context

    Context = every_context()
    from hopgraph.harness.run_folder import method_code

    def parts(agent, **fields):
        files = method_code(agent, Context(**fields))["files"]
        return {
            "grail" if ".grail" in m else m.split(".")[1]
            for m in files
            if "grail" in m or "polarmem" in m
        }

    assert parts("rag") == set() and parts("rag", grail_mode="gap-fixed") == set()
    assert parts("qdrag") == set() and parts("mmapg") == set()
    assert parts("qdrag", grail_mode="gap-fixed") == {"grail"}
    assert parts("mmapg", polar_memory=True) == {"graphs", "agents", "tools", "memory", "settings"}
    assert method_code("rag", Context())["fingerprint"] == method_code("rag")["fingerprint"]


MOST_LINES = 80
"""A function longer than this is a sign to name its steps (the code's own rule)."""


def long_functions(mods: dict[str, Path] | None = None) -> list[str]:
    """Every function or method of the package longer than ``MOST_LINES``, from its ``def`` line
    to its last (decorators and the lines before ``def`` not counted)."""
    import ast

    found = []
    for mod, path in sorted((mods or modules()).items()):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n > MOST_LINES:
                    found.append(f"{mod}.{node.name} ({path.name}:{node.lineno}): {n} lines")
    return found


def test_no_function_is_longer_than_80_lines():
    assert long_functions() == []


def test_no_class_has_30_methods():
    """A class that grows past 29 methods names its parts (``memory/kb.py``'s ``BuildLog``)."""
    import ast

    big = [
        f"{mod}.{node.name} ({count})"
        for mod, path in sorted(modules().items())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
        for count in [sum(isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef) for m in node.body)]
        if count >= 30
    ]
    assert big == []


def test_a_function_grown_past_80_lines_is_caught(tmp_path):
    long = tmp_path / "long.py"
    body = "".join(f"    x{i} = {i}\n" for i in range(MOST_LINES))
    long.write_text(f"def grown():\n{body}\n\ndef short():\n    return 1\n")
    assert long_functions({"hopgraph.long": long}) == ["hopgraph.long.grown (long.py:1): 81 lines"]


def test_chroma_is_imported_in_one_place():
    """Every other module reaches Chroma through ``memory/chroma.py`` (issue 73 item 3)."""
    import ast

    importers = []
    for mod, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            if any(n == "chromadb" or n.startswith("chromadb.") for n in names):
                importers.append(mod)
    assert sorted(set(importers)) == ["hopgraph.memory.chroma"]
