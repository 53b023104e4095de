"""Which code a method's answers come from: the graph module and every hopgraph module of the
method layers (graphs, agents, tools, memory, prompts), of its knobs' defaults (settings) and
of the model layer it imports, followed statically through their ``import`` lines. The model
layer counts because its settings change answers (``models/chat.py``'s sampling per backend,
the embedders, the structured-output dialects); the CLI, the harness, measurement, the
optimizer and the presentation are left out: a change there does not change what a method
answers. Templates are hashed apart, in the manifest's ``prompts``.

A part a graph includes only when a setting turns it on (GRAIL's steering, PolarMem's recall)
is followed only when the run's Context turns it on, its settings' module too, so a run that
never steers is not re-fingerprinted by an edit of GRAIL."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import sys
from pathlib import Path

from hopgraph import pysyntax

METHOD_LAYERS = ("graphs", "agents", "tools", "memory", "prompts", "models", "settings")
ROOT = "hopgraph"


def parts() -> dict[str, str]:
    """A part's package or module, and its settings' module, -> the Context field that makes a
    graph run it, from the parts' specs (``MethodSpec.code``, ``settings`` and ``switch``)."""
    from hopgraph.graphs import specs

    out: dict[str, str] = {}
    for s in specs().values():
        if s.code:
            out |= {s.code: s.switch} | {k.__module__: s.switch for k in s.settings}
    return out


def parts_off(ctx: object | None) -> tuple[str, ...]:
    """The parts ``ctx`` leaves off (none without a Context: everything counts)."""
    if ctx is None:
        return ()
    return tuple(p for p, field in parts().items() if not getattr(ctx, field, False))


def _in_layers(module: str) -> bool:
    parts = module.split(".")
    return len(parts) >= 2 and parts[0] == ROOT and parts[1] in METHOD_LAYERS


def _file_of(module: str) -> Path | None:
    loaded = sys.modules.get(module)
    file = getattr(loaded, "__file__", None)
    if file:  # a graph file loaded by path (graphs.load_graph)
        return Path(file)
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    origin = spec.origin if spec else None
    return Path(origin) if origin and origin.endswith(".py") else None


def imported(path: Path, module: str) -> set[str]:
    """Modules a file names in its import lines (``from a.b import c`` names a.b and, where c is
    a module, a.b.c); relative imports resolved against ``module``."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(pysyntax.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}
    return out


def method_files(module: str, skip: tuple[str, ...] = ()) -> dict[str, Path]:
    """Module name -> file, for ``module`` and what it imports within the method layers, less
    the modules under ``skip`` (parts left off)."""
    seen: dict[str, Path] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen or any(name == p or name.startswith(p + ".") for p in skip):
            continue
        path = _file_of(name)
        if path is None:
            continue
        seen[name] = path
        todo += [m for m in imported(path, name) if _in_layers(m) and m not in seen]
    return seen


def code_fingerprint(module: str, ctx: object | None = None) -> dict[str, object]:
    """``{"fingerprint": 12 hex, "files": {module: sha256[:16]}}`` of a graph module's code, as
    run with ``ctx``'s parts."""
    files = {
        name: hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        for name, path in sorted(method_files(module, parts_off(ctx)).items())
    }
    blob = json.dumps(files, sort_keys=True).encode()
    return {"fingerprint": hashlib.sha256(blob).hexdigest()[:12], "files": files}


def code_changes(old: dict[str, object], new: dict[str, object]) -> list[str]:
    """The modules whose code differs between two fingerprints: edited, added or gone."""
    was, now = old.get("files") or {}, new.get("files") or {}
    assert isinstance(was, dict) and isinstance(now, dict)
    return [
        f"{m} ({'edited' if m in was and m in now else 'new' if m in now else 'no longer used'})"
        for m in sorted(was.keys() | now.keys())
        if was.get(m) != now.get(m)
    ]
