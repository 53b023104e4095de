"""The manual: its generated reference pages are what the code gives, every command a page shows
names only options that command has, and the site builds with ``mkdocs build --strict`` and
reads in a real browser (home, a method page, the command reference, search for a knob)."""

from __future__ import annotations

import functools
import http.server
import re
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hopgraph.cli import reference

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
needs_chromium = pytest.mark.skipif(
    not __import__("shutil").which("chromium"), reason="chromium is not installed"
)


def test_the_committed_reference_pages_are_what_the_code_gives():
    for name, text in reference.render().items():
        assert (DOCS / "reference" / name).read_text() == text, (
            f"docs/reference/{name} is stale: run `make docs` and commit it"
        )


def test_every_option_and_knob_is_on_a_reference_page():
    cli, knobs = (DOCS / "reference" / "cli.md").read_text(), (DOCS / "reference" / "knobs.md")
    for words, command in reference.commands():
        assert f"## `{words}`" in cli
        for param in command.params:
            for opt in param.opts if param.param_type_name == "option" else []:
                assert f"`{opt}`" in cli, (words, opt)
    from hopgraph.graphs import every_context

    text = knobs.read_text()
    for field in __import__("dataclasses").fields(every_context()):
        assert f"| `{field.name}` |" in text, field.name


def shown_commands() -> list[tuple[Path, str]]:
    """Each ``hopgraph ...`` line of a bash block on a docs page or the README."""
    out = []
    for page in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        if "results" in page.parts or "reference" in page.parts:
            continue
        for block in re.findall(r"```bash\n(.*?)```", page.read_text(), re.S):
            block = re.sub(r"\\\n\s*", " ", block)  # a command continued on the next line
            for line in block.splitlines():
                line = line.split("  #")[0].split(" # ")[0].strip()
                line = re.sub(r"^(\.venv/bin/|\$ )", "", line)
                if line.startswith("hopgraph "):
                    out.append((page, line))
    return out


def test_every_command_a_page_shows_names_options_its_command_has():
    """A page's example with an option its command lacks fails its reader at once."""
    known = dict(reference.commands())
    shown = shown_commands()
    assert len(shown) > 40
    bad = []
    for page, line in shown:
        try:
            words = shlex.split(line.replace("...", ""))
        except ValueError:
            continue
        path = ["hopgraph"]
        for w in words[1:]:
            if " ".join([*path, w]) in known or any(
                k.startswith(" ".join([*path, w]) + " ") for k in known
            ):
                path.append(w)
            else:
                break
        name = " ".join(path)
        if name not in known:
            bad.append(f"{page.name}: {line} (no command {name!r})")
            continue
        opts = {
            o
            for p in known[name].params
            for o in [*p.opts, *p.secondary_opts]
            if not getattr(p, "hidden", False)
        }  # an old hidden name is not one to show
        opts |= {"--help", "-v", "--verbose"}
        for w in words[len(path) :]:
            flag = w.split("=")[0]
            if flag.startswith("-") and not re.fullmatch(r"-\d.*", flag) and flag not in opts:
                bad.append(f"{page.name}: {line} ({flag} is not an option of {name})")
    assert bad == []


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site as `make docs` builds it (--strict), served on loopback."""
    out = tmp_path_factory.mktemp("site")
    (ROOT / ".typecheck").mkdir(exist_ok=True)
    link = ROOT / ".typecheck" / "hopgraph"
    if not link.is_symlink():
        link.symlink_to("..")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=1100,  # a safety cap under pytest's 1200 s: a loaded CI machine took 523 s
    )
    assert built.returncode == 0, built.stdout + built.stderr

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield out, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def test_the_site_builds_strict_with_every_page(site):
    out, _ = site
    for page in (
        "index.html",
        "getting-started/index.html",
        "methods/mmapg/index.html",
        "reference/cli/index.html",
        "reference/knobs/index.html",
        "reference/api/index.html",
        "results/index.html",
    ):
        assert (out / page).is_file(), page
    api = (out / "reference" / "api" / "index.html").read_text()
    assert "Runs one agent over questions into a run folder" in api  # from Runner's docstring


@needs_chromium
def test_the_site_reads_in_a_browser_and_search_finds_a_knob(site):
    from browser import Browser

    _, url = site
    b = Browser()
    try:

        def text_of(path: str, *wanted: str, timeout: float = 30) -> str:
            """The page's text once every wanted string is in it: a page half parsed shows its
            header ("hopgraph", "QDRAG") before its body, so waiting on a title alone raced."""
            b.send("Page.navigate", url=url + path)
            deadline = time.monotonic() + timeout
            while True:
                body = b.eval("document.body ? document.body.innerText : ''") or ""
                if all(w in body for w in wanted):
                    return body
                assert time.monotonic() < deadline, (path, wanted, body[:500])
                time.sleep(0.1)

        text_of("", "hopgraph", "multimodal multi-hop question answering")
        text_of("methods/qdrag/", "QDRAG", "What the paper does")
        text_of("reference/cli/", "--concurrency", "hopgraph run")
        found = text_of("?q=qdrag_entropy_budget", "hopgraph")  # Material opens its search
        deadline = time.monotonic() + 30
        while not b.eval("document.querySelectorAll('.md-search-result__item').length"):
            assert time.monotonic() < deadline, found[:500]
            time.sleep(0.1)
        hits = b.eval(
            "[...document.querySelectorAll('.md-search-result__item a')].map(a => a.href).join(' ')"
        )
        assert "reference/knobs/" in hits, hits
    finally:
        b.close()


PATH_NAMED = re.compile(
    r"`((?:benchmarks|tests|docs|examples|agents|graphs|tools|memory|models|prompts|settings|"
    r"evals|harness|questions|optimizer|presentation|cli)/[A-Za-z0-9_./-]+)`"
)


def test_every_repository_path_a_page_names_exists():
    """Pages named `benchmarks/results/hotpotqa/reevals/` (never there), `docs/RESULTS.md` (gone)
    and README sections that no longer exist. Every path a page names in code, as a folder of
    this repository, must be there (a placeholder such as `graphs/M.py` aside)."""
    gone = []
    for page in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        if "results" in page.parts or "reference" in page.parts:
            continue
        text = page.read_text()
        gone += [
            (page.name, m[1])
            for m in PATH_NAMED.finditer(text)
            if not re.search(
                r"/M(\.py|/|$)|\.[a-z_]+$(?<!\.py)(?<!\.md)(?<!\.sh)"
                r"(?<!\.json)(?<!\.jsonl)(?<!\.j2)(?<!\.png)",
                m[1],
            )
            and not (ROOT / m[1].rstrip("/.")).exists()
        ]
        gone += [(page.name, "docs/RESULTS.md")] * ("RESULTS.md" in text)
    assert gone == []


def test_every_option_named_in_running_text_is_one_its_command_has():
    """`compare --questions` (an old hidden name) stood in a page's prose; an option named
    beside its command anywhere on a page, not only in a bash block, must be that command's."""
    known = {
        words.removeprefix("hopgraph ").strip(): command for words, command in reference.commands()
    }
    bad = []
    for page in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        if "results" in page.parts or "reference" in page.parts:
            continue
        for code in re.findall(r"`(hopgraph [^`]+)`", page.read_text()):
            words = code.split()[1:3]
            name = next((" ".join(words[:n]) for n in (2, 1) if " ".join(words[:n]) in known), None)
            if name is None:
                continue
            opts = {
                o
                for p in known[name].params
                for o in [*getattr(p, "opts", []), *getattr(p, "secondary_opts", [])]
                if not getattr(p, "hidden", False)
            }
            bad += [
                (page.name, name, o)
                for o in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", code)
                if o not in opts and o != "--help"
            ]
    assert bad == []
