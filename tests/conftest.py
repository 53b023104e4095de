from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # tests/scripted.py

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

NEEDS = {
    "server": (
        "start_chroma",
        "start_postgres",
        "bin/langgraph",
        "llama_cpp.server",
        "EmbeddedServer",
    ),
    "browser": ("chromium",),
    "npm": ("node_modules",),
    "build": ("bdist_wheel", "mypy", "venv-vllm", "=venv", "=pip", "=wheel"),
}
"""What a test needs beyond this process, by the names its code uses: a server it starts
(Chroma, PostgreSQL, ``langgraph dev``, the embedded llama.cpp), a browser, npm, a built
wheel, venv or type check. The code is the test's own, its fixtures' and every function of
the test folder they call, followed down; each need becomes a marker (pyproject's markers),
set at collection, so a new test cannot forget its own. ``make test-fast`` runs the tests
that need none of them, ``make test`` every one. A sign ``=word`` must be a whole word
(``"venv"`` in a command, not a path through ``.venv``)."""


def _needs(item: pytest.Item) -> set[str]:
    funcs = [getattr(item, "function", None)]
    for defs in item._fixtureinfo.name2fixturedefs.values():  # noqa: SLF001 - pytest's own
        funcs += [d.func for d in defs]
    words: set[str] = set()
    for f in funcs:
        if f is not None:
            words |= _words(f)
    return {mark for mark, signs in NEEDS.items() if any(_shows(s, words) for s in signs)}


def _shows(sign: str, words: set[str]) -> bool:
    """A sign in a code's words: ``=name`` a word of its own, else part of one."""
    return sign[1:] in words if sign.startswith("=") else any(sign in w for w in words)


@functools.cache
def _words(func) -> frozenset[str]:  # noqa: ANN001
    """The names and strings ``func``'s code uses (a module constant it reads by its value),
    and those of the test folder's functions it calls (followed down, each once)."""
    import types

    tests = Path(__file__).parent
    seen: set[types.CodeType] = set()
    words: set[str] = set()
    todo = [(getattr(func, "__code__", None), getattr(func, "__globals__", {}))]
    while todo:
        code, scope = todo.pop()
        if code is None or code in seen:
            continue
        seen.add(code)
        words |= set(code.co_names) | {c for c in code.co_consts if isinstance(c, str)}
        todo += [(c, scope) for c in code.co_consts if isinstance(c, types.CodeType)]
        for name in code.co_names:
            target = scope.get(name)
            if isinstance(target, str | Path):  # a module's constant: the program it names
                words.add(str(target))
            inner = getattr(target, "__code__", None)
            if inner is not None and Path(inner.co_filename).parent == tests:
                todo.append((inner, target.__globals__))
    return frozenset(words)


DURATIONS = Path(__file__).with_name("durations.json")
"""Each test's seconds (setup, call and teardown) in the last full run on 2 cores, written
by ``make durations``; a test over ``HEAVY_SECONDS`` there is marked ``heavy``, and one it
does not name yet (a new test) is not: the fast tier stays short as the suite grows."""
HEAVY_SECONDS = 2.0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    import json

    recorded = json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {}
    for item in items:
        for mark in sorted(_needs(item)):
            item.add_marker(mark)
        if recorded.get(item.nodeid, 0.0) > HEAVY_SECONDS:
            item.add_marker("heavy")


_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _SECONDS[report.nodeid] = _SECONDS.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    """``HOPGRAPH_DURATIONS=FILE``: each test's seconds written there (``make durations``)."""
    import json

    worker = hasattr(session.config, "workerinput")  # pytest-xdist: the controller writes it
    if (out := os.environ.get("HOPGRAPH_DURATIONS")) and not worker:
        ranked = dict(
            sorted(((k, round(v, 2)) for k, v in _SECONDS.items()), key=lambda kv: -kv[1])
        )
        Path(out).write_text(json.dumps(ranked, indent=0) + "\n")


@pytest.fixture
def endpoint():
    from scripted import ScriptedEndpoint

    return ScriptedEndpoint


@pytest.fixture(autouse=True)
def _no_hopgraph_env(monkeypatch):
    """Tests see the documented defaults, not the developer's HOPGRAPH_* settings."""
    for key in list(os.environ):
        if key.startswith("HOPGRAPH_"):
            monkeypatch.delenv(key)


@pytest.fixture(scope="session")
def town_kb(tmp_path_factory):
    """A knowledge base of eight one-line passages, "Fact i about town i." (title "Town i")."""
    from hopgraph.memory.kb import Item, KnowledgeBase

    path = tmp_path_factory.mktemp("town-kb")
    KnowledgeBase(path).add(
        [Item("text", f"k{i}", f"Fact {i} about town {i}.", title=f"Town {i}") for i in range(8)]
    )
    return path


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server on loopback for the session (.ci/run installs the package)."""
    from servers import PG_BIN, start_postgres

    if not PG_BIN:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql; .ci/run does)")
    url, stop = start_postgres()
    yield url
    stop()


def fresh_database(postgres: str, name: str) -> str:
    from servers import fresh_database as fresh

    return fresh(postgres, name)


@pytest.fixture
def chroma_server(tmp_path):
    """``chroma run`` from this environment on a free loopback port."""
    from servers import CHROMA, start_chroma

    if not CHROMA.exists():
        pytest.skip("the chroma CLI is not installed")
    proc, url = start_chroma(tmp_path / "srv")
    yield url
    proc.terminate()
    proc.wait(timeout=20)
