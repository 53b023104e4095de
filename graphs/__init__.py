"""LangGraph state machines, one module per method; each exposes a compiled ``graph``.

A graph is named by an agent name (``rag``: a built-in, or one another package registers under
the ``hopgraph.graphs`` entry-point group) or by a spec, ``package.module:graph`` or
``path/to/file.py:graph``. Any compiled LangGraph graph whose input and output schemas speak the
contract (``graphs.shared.InputState`` in, ``OutputState`` out) runs with everything the
built-ins get."""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import sys
from pathlib import Path
from typing import Any

ENTRY_POINTS = "hopgraph.graphs"
BUILT_IN = ("direct", "rag", "qdrag", "mmapg", "mabdqa")
"""The built-in methods, in the order they are listed: each is ``graphs/<name>.py``, whose
``graph`` runs it and whose ``SPEC`` (``config.MethodSpec``) says the rest. Adding a built-in
method is its own modules and a name here."""


def registered() -> dict[str, str]:
    """Agent name -> ``module:attribute`` of every graph runnable by name: the built-ins, then
    those installed packages register under the ``hopgraph.graphs`` entry-point group."""
    out = {name: f"{__name__}.{name}:graph" for name in BUILT_IN}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINTS):
        out.setdefault(ep.name, ep.value)
    return out


GRAPHS = registered()
"""Agent name -> ``module:attribute``, as ``registered()`` found them at import."""

DEFAULT_RECURSION_LIMIT = 200


def is_spec(agent: str) -> bool:
    """A ``module:attribute`` or ``file.py:attribute`` spec rather than a registered name."""
    return ":" in agent


def spec_of(agent: str) -> str:
    if is_spec(agent):
        return agent
    if agent not in GRAPHS:
        import difflib

        near = difflib.get_close_matches(agent, GRAPHS, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ValueError(f"unknown agent {agent!r}{hint}; agents: {', '.join(sorted(GRAPHS))}")
    return GRAPHS[agent]


def module_of(agent: str) -> str:
    """The module name the agent's graph lives in (a file spec's module is loaded first)."""
    where = spec_of(agent).rpartition(":")[0]
    if where.endswith(".py"):
        return load_file(Path(where)).__name__
    return where


def load_file(path: Path):  # noqa: ANN202 - a module
    """A Python file as a module named after its path (loaded once): a graph file, or a
    benchmark whose renderer ``hopgraph results`` uses."""
    name = "hopgraph_user_" + "_".join(path.resolve().with_suffix("").parts[-2:])
    name = "".join(c if c.isalnum() else "_" for c in name)
    if name in sys.modules:
        return sys.modules[name]
    if not path.is_file():
        raise ValueError(f"no graph file at {path}")
    folder = str(path.resolve().parent)
    if folder not in sys.path:  # as Python runs a script: its own folder's modules import
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"{path} cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _keys(schema: Any) -> set[str]:
    """The field names of a state schema (TypedDict, dataclass or pydantic model)."""
    fields = getattr(schema, "model_fields", None) or getattr(schema, "__dataclass_fields__", None)
    return set(fields or getattr(schema, "__annotations__", {}))


def contract_problems(graph: Any) -> list[str]:
    """What a graph lacks to run under hopgraph ([] when it speaks the contract)."""
    builder = getattr(graph, "builder", None)
    if builder is None or not hasattr(builder, "input_schema"):
        return [f"it is a {type(graph).__name__}, not a compiled LangGraph StateGraph"]
    problems = []
    inputs, outputs = _keys(builder.input_schema), _keys(builder.output_schema)
    if "question" not in inputs:
        problems.append("its input schema has no 'question' (use graphs.shared.InputState)")
    missing = [k for k in ("answer", "response") if k not in outputs]
    if missing:
        problems.append(
            f"its output schema has no {', '.join(map(repr, missing))} "
            "(use graphs.shared.OutputState)"
        )
    return problems


def load_graph(agent: str):  # noqa: ANN201 - a compiled graph
    """The compiled graph an agent name or spec names, checked against the contract."""
    module_name, _, attribute = spec_of(agent).rpartition(":")
    try:
        module = importlib.import_module(module_of(agent))
    except ModuleNotFoundError as e:
        raise ValueError(f"cannot import the graph {agent!r}: {e}") from None
    graph = getattr(module, attribute, None)
    if graph is None:
        raise ValueError(f"{module_name} has no {attribute!r}")
    problems = contract_problems(graph)
    if problems:
        raise ValueError(f"{agent!r} does not speak hopgraph's contract: {'; '.join(problems)}")
    return graph


def context_schema(agent: str):  # noqa: ANN201 - a Context class
    """The Context class an agent's graph runs with (its ``context_schema``, as the operator
    builds it): what ``--set`` may name for it. Context itself for a graph whose schema is
    not one of ours."""
    from hopgraph.config import Context

    schema = getattr(load_graph(agent).builder, "context_schema", None)
    if isinstance(schema, type) and issubclass(schema, Context):
        return schema.operator_class()
    return Context


@functools.cache
def specs() -> dict[str, Any]:
    """Name -> ``MethodSpec`` of every built-in method, then of the parts they include (GRAIL,
    PolarMem), in ``BUILT_IN``'s order: what the CLI, doctor, MCP, views and fingerprints list."""
    graphs = [importlib.import_module(f"{__name__}.{name}").SPEC for name in BUILT_IN]
    parts = {p.name: p for spec in graphs for p in spec.parts}
    return {spec.name: spec for spec in graphs} | parts


def endpoint_needs() -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Method -> (what every run needs of an endpoint, what only images need): the rows of
    ``hopgraph doctor``'s method table."""
    return {s.name: (s.needs, s.image_needs) for s in specs().values() if s.needs}


def spec_for(agent: str):  # noqa: ANN201 - a MethodSpec or None
    """The spec of a registered agent or spec'd graph module (``SPEC`` beside its graph), None
    for a graph that declares none."""
    return getattr(importlib.import_module(module_of(agent)), "SPEC", None)


def every_context():  # noqa: ANN201 - a Context class
    """One Context class with every built-in method's and part's knobs, for a server that
    answers with any of them (``hopgraph mcp``)."""
    from hopgraph.config import context_class

    global _EVERY
    if _EVERY is None:
        knobs = dict.fromkeys(s for spec in specs().values() for s in spec.settings)
        _EVERY = context_class("EveryContext", *knobs, module=__name__)
    return _EVERY


_EVERY: Any = None


def recursion_limit(agent: str, ctx) -> int:  # noqa: ANN001 - a Context
    """The LangGraph recursion limit a run of ``agent`` sets: the module's own
    ``recursion_limit(ctx)`` where its loop has a cap (MMAPG), else a generous default."""
    module = importlib.import_module(module_of(agent))
    limit = getattr(module, "recursion_limit", None)
    return limit(ctx) if limit else DEFAULT_RECURSION_LIMIT
