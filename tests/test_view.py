"""``hopgraph view`` over two real run folders (``hopgraph run`` on the scripted endpoint): its
JSON API, its refusals, and in headless Chromium the run list, a filter, a question's waterfall,
two runs' first divergence and a screenshot; passages, questions and replies holding
``<script>`` or ``onerror=`` never run, in ``view`` or in the static ``trace --format html``."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from bombs import gzip_bomb
from conftest import SHARED_DATA
from scripted_server import ScriptedServer, by_template
from servers import first_line, hopgraph, scripted, started

from hopgraph.questions.datasets import Question, write_questions

PAYLOAD = (
    "<img src=x onerror=\"document.body.dataset.pwned='{}'\">"
    "<script>document.body.dataset.pwned='{}'</script>"
)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def short_answer(wrong_on: int):
    def reply(body: dict) -> str:
        town = int(re.findall(r"What about town (\d+)\?", body["messages"][-1]["content"])[-1])
        if town == 2:
            return f"answer-2 {PAYLOAD.format('reply', 'reply')}"
        return "wrong" if town == wrong_on else f"answer-{town}"

    return reply


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two runs of rag over three questions (the second answers town 1 wrongly), a KB whose
    passage, a question and a reply hold markup that would run if parsed as HTML."""
    from hopgraph.memory.kb import Item, KnowledgeBase

    root = tmp_path_factory.mktemp("view")
    texts = [f"Fact {i} about town {i}." for i in range(3)]
    texts[2] += " " + PAYLOAD.format("passage", "passage")
    KnowledgeBase(root / "kb").add(
        [Item("text", f"k{i}", t, title=f"Town {i}") for i, t in enumerate(texts)]
    )
    asked = [f"What about town {i}?" for i in range(3)]
    asked[2] += " " + PAYLOAD.format("question", "question")
    qs = [Question(f"q{i}", a, [f"answer-{i}"], []) for i, a in enumerate(asked)]
    write_questions(qs, root / "q.jsonl")
    for name, wrong_on in (("first", -1), ("second", 1)):
        script = by_template(
            {"rag/answer": "The sources say so [1].", "rag/short_answer": short_answer(wrong_on)}
        )
        with ScriptedServer(script) as model:
            done = hopgraph(
                "run",
                "--agent",
                "rag",
                "--questions",
                "q.jsonl",
                "--kb",
                "kb",
                "--out",
                f"runs/{name}",
                *scripted(model.base_url),
                cwd=root,
            )
            assert done.returncode == 0, done.stderr
    return root


def start_view(root: Path, *args: str, env: dict | None = None, folders=("runs",)):
    """``hopgraph view`` on a free port, once it prints its address: the process and URL."""
    proc = started("view", *folders, "--port", "0", *args, cwd=root, env=env)
    line = first_line(proc)
    found = re.search(r"http://\S+/", line)
    if not found:
        proc.kill()
        assert found, line + proc.communicate()[1]
    return proc, found[0].replace("0.0.0.0", "127.0.0.1")


def test_the_address_printed_is_already_listening(runs, monkeypatch):
    """A client connecting as soon as the address was printed got 'connection refused' on a
    busy machine: the socket was bound, and listened only once uvicorn had started."""
    import socket

    import uvicorn

    from hopgraph.cli.view import view

    seen = []
    monkeypatch.setattr(
        uvicorn.Server,
        "run",
        lambda self, sockets: seen.extend(
            s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) for s in sockets
        ),
    )
    view(runs=[str(runs / "runs")], host="127.0.0.1", port=0, price="")
    assert seen == [1]


@pytest.fixture(scope="module")
def view(runs):
    proc, url = start_view(runs)
    yield url
    proc.terminate()
    proc.wait(timeout=30)


def test_the_api_lists_runs_and_opens_a_question_with_its_waterfall_and_calls(view):
    listed = httpx.get(f"{view}api/runs").json()
    assert [r["name"] for r in listed] == ["first", "second"]
    assert listed[0]["right"] == 2 and listed[1]["right"] == 1  # q2's reply carries markup
    assert listed[0]["metrics"]["em"] == round(2 / 3, 4) and listed[0]["code"]
    q = httpx.get(f"{view}api/question", params={"run": "second", "id": "q1"}).json()
    assert q["row"]["answer"] == "wrong" and q["row"]["gold"] == ["answer-1"]
    kinds = [s["kind"] for s in q["spans"]]
    assert "node" in kinds and kinds.count("llm") == 2 and "retrieval" in kinds
    assert all(s["end"] >= s["start"] for s in q["spans"])
    assert [c["template"] for c in q["calls"]] == ["rag/answer", "rag/short_answer"]
    assert [c["node"] for c in q["calls"]] == ["generate", "generate"]  # by the event's task
    assert "What about town 1?" in q["calls"][0]["messages"][-1]["text"]
    assert any(e["kept"] for e in q["evidence"])
    both = {"a": "first", "b": "second"}
    pair = httpx.get(f"{view}api/compare", params={**both, "metric": "f1"}).json()
    assert (pair["better"], pair["worse"], pair["common"]) == (0, 1, 3)
    diff = httpx.get(f"{view}api/compare_question", params={**both, "id": "q1"}).json()
    assert diff["first"] is not None and diff["rows"][diff["first"]]["differs"]


def test_the_api_refuses_what_it_does_not_have_and_other_hosts(view):
    missing = httpx.get(f"{view}api/question", params={"run": "first", "id": "nope"})
    assert missing.status_code == 404 and "nope" in missing.json()["detail"]
    assert httpx.get(f"{view}api/questions", params={"run": "0"}).status_code == 404
    assert httpx.get(f"{view}assets/../app.py").status_code == 404
    rebound = httpx.get(f"{view}api/runs", headers={"host": "attacker.example"})
    assert rebound.status_code == 400
    page = httpx.get(view)
    assert "script-src 'self'" in page.headers["content-security-policy"]


def test_off_loopback_it_needs_an_api_key(runs):
    refused = hopgraph("view", "runs", "--host", "0.0.0.0", cwd=runs)
    assert refused.returncode == 2 and "HOPGRAPH_API_KEYS" in refused.stderr
    proc, url = start_view(runs, "--host", "0.0.0.0", env={"HOPGRAPH_API_KEYS": "k1,k2"})
    try:
        assert httpx.get(f"{url}api/runs").status_code == 401
        assert httpx.get(f"{url}api/runs", headers={"x-api-key": "k2"}).status_code == 200
        other = {"x-api-key": "k2", "host": "viewer.example.org"}  # as clients elsewhere name it
        assert httpx.get(f"{url}api/runs", headers=other).status_code == 200
        with httpx.Client(
            follow_redirects=True
        ) as browser:  # a browser: the key once in the URL, then a cookie
            first = browser.get(f"{url}?key=k1")
            assert first.status_code == 200 and "k1" not in str(first.url)
            assert browser.get(f"{url}api/runs").status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_missing_folder_is_refused(tmp_path):
    done = hopgraph("view", "nowhere", cwd=tmp_path)
    assert done.returncode == 2 and "nowhere" in done.stderr


needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed")


def chromium(*args: str) -> str:
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--virtual-time-budget=15000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def dom(url: str) -> str:
    """The page's DOM once its app has rendered (``data-state="ready"``)."""
    page = chromium("--dump-dom", url)
    assert 'data-state="ready"' in page, page[-2000:]
    assert "data-pwned" not in page  # no markup from a trace ever ran
    return page


@needs_chromium
def test_the_run_list_and_a_filtered_question_table(view):
    listed = dom(f"{view}#/")
    assert 'id="runs"' in listed and ">first<" in listed and ">second<" in listed
    wrong = dom(f"{view}#/run/second?status=wrong")
    assert "2 of 3 questions" in wrong and 'data-id="q1"' in wrong and 'data-id="q0"' not in wrong
    searched = dom(f"{view}#/run/first?q=town%202")
    assert "1 of 3 questions" in searched and 'data-id="q2"' in searched
    assert "&lt;script&gt;document.body.dataset.pwned='question'" in searched


@needs_chromium
def test_a_question_shows_its_waterfall_calls_and_evidence_as_text(view, tmp_path):
    page = dom(f"{view}#/run/first/q/q2")
    assert page.count('data-kind="llm"') == 2 and 'id="call-1"' in page
    # the gold answer marked where it stands: the answer and the reply that gave it
    assert page.count('<mark class="gold">answer-2</mark>') >= 2
    assert "&lt;img src=x onerror=" in page  # the passage and the reply, shown as text
    shot = tmp_path / "question.png"
    chromium("--window-size=1280,1000", f"--screenshot={shot}", f"{view}#/run/first/q/q2")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


@needs_chromium
def test_two_runs_side_by_side_mark_the_first_divergence(view):
    changed = dom(f"{view}#/compare/first/second?metric=f1")
    assert "0 better, 1 worse of 3 common" in changed and 'data-id="q1"' in changed
    assert 'data-id="q0"' not in changed  # only what changed, unless asked for all
    steps = dom(f"{view}#/compare/first/second/q/q1")
    assert "first divergence at step" in steps and "first-divergence" in steps
    # one method twice: both replies of the first call that differs, and what came next
    first = steps[steps.index('id="first-call"') :]
    assert "First differing reply: call 1 (same prompt)" in first
    assert '<mark class="gold">answer-1</mark>' in first and ">wrong<" in first
    assert "then: (the end)" in first


@needs_chromium
def test_two_methods_on_one_question_show_what_each_held_not_a_step_alignment():
    """Between two methods "first divergence at step 1: another node" was always true and
    told nothing: the page shows the evidence each held (gold marked) and the call that
    wrote each answer. The committed MMAPG and rag records on 5ae5dab…."""
    rag = MMAPG_RECORD.parents[2] / "rag" / "test" / "hand-written"
    root = MMAPG_RECORD.parents[2]
    proc, url = start_view(root, folders=[str(MMAPG_RECORD), str(rag)])
    try:
        ids = [r["id"] for r in httpx.get(f"{url}api/runs").json()]
        qid = "5ae5dab455429929b08079d2"
        d = httpx.get(
            f"{url}api/compare_question", params={"a": ids[0], "b": ids[1], "id": qid}
        ).json()
        assert ids == ["hand-written", "test/hand-written"]  # told apart by a folder above
        page = dom(f"{url}#/compare/{ids[0]}/{quote(ids[1], safe='')}/q/{qid}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert d["same_method"] is False and d["first_call"] is None
    held = [sum(e["gold"] for e in h["evidence"]) for h in d["held"]]
    assert held[0] == 2 and all(h["last_calls"][-1]["reply"] for h in d["held"])
    rag_calls = [c["template"] for c in d["held"][1]["last_calls"]]
    assert rag_calls == ["rag/answer", "rag/short_answer"]
    assert "mmapg/reason" in [c["template"] for c in d["held"][0]["last_calls"]]
    assert "first divergence" not in page  # between two methods it says nothing
    # "2 gold of 29 held" read as 2 of 29 gold evidence, where the question page said 2 of 2
    n = len(d["held"][0]["evidence"])
    assert 'id="held"' in page and f"held {n} passages, {held[0]} of them gold evidence" in page


@needs_chromium
def test_the_static_report_runs_no_markup_from_a_trace(runs):
    done = hopgraph("trace", "runs/first", "--format", "html", cwd=runs)
    assert done.returncode == 0, done.stderr
    page = chromium("--dump-dom", (runs / "runs/first/report.html").as_uri())
    assert "data-pwned" not in page and "&lt;script&gt;" in page


def test_page_served_files_are_the_package_assets_only(view):
    js = httpx.get(f"{view}assets/app.js")
    assert js.status_code == 200 and "textContent" in js.text
    assert "innerHTML" not in js.text  # every trace text is written as text


def test_a_damaged_folder_or_trace_is_shown_and_the_rest_still_served(runs, tmp_path):
    """A run whose manifest is cut, empty or a folder took ``/api/runs`` down (500, and the
    page said ``Unexpected token 'I'``); a cut or garbage trace did the same to its question.
    Now such a run is listed with why, the others as they are; a damaged trace shows what
    could be read and says what is damaged; every API error is JSON."""
    import gzip

    from hopgraph.harness.run_folder import packed, trace_path

    root = tmp_path / "copy"
    shutil.copytree(runs, root)
    for name, damage in (("cut", "cut"), ("empty", "empty"), ("folder", "folder")):
        shutil.copytree(root / "runs" / "first", root / "runs" / name)
        manifest = root / "runs" / name / "manifest.json"
        if damage == "cut":
            manifest.write_text(manifest.read_text()[:40])
        elif damage == "empty":
            manifest.write_text("")
        else:
            manifest.unlink()
            manifest.mkdir()
    q1 = packed(trace_path(root / "runs" / "second", "q1"))
    q1.write_bytes(q1.read_bytes()[: len(q1.read_bytes()) // 2])  # cut short
    q0 = packed(trace_path(root / "runs" / "second", "q0"))
    q0.write_bytes(b"not gzip at all")
    assert gzip.decompress(packed(trace_path(root / "runs" / "first", "q0")).read_bytes())
    proc, url = start_view(root)
    try:
        listed = httpx.get(f"{url}api/runs")
        assert listed.status_code == 200, listed.text
        by_name = {r["name"]: r for r in listed.json()}
        assert by_name["first"]["right"] == 2 and not by_name["first"].get("error")
        for name in ("cut", "empty", "folder"):
            assert "cannot be read" in by_name[name]["error"], by_name[name]
            assert f"{name}/manifest.json" in by_name[name]["error"], by_name[name]
        if CHROMIUM is not None:  # the page where a browser is installed (.ci/run installs one)
            page = dom(url)  # the error stands in a column of its own, with its header
            assert "<th>problem</th>" in page and page.count('<td class="wrong">') == len(by_name)
        second = next(r["id"] for r in listed.json() if r["name"] == "second")
        cut = httpx.get(f"{url}api/question", params={"run": second, "id": "q1"})
        assert cut.status_code == 200, cut.text
        assert "cut short" in " ".join(cut.json()["damaged"]) and cut.json()["row"]["id"] == "q1"
        garbage = httpx.get(f"{url}api/question", params={"run": second, "id": "q0"}).json()
        assert "not a gzip file" in " ".join(garbage["damaged"])
        first = by_name["first"]["id"]
        whole = httpx.get(f"{url}api/question", params={"run": first, "id": "q1"}).json()
        assert whole["damaged"] == [] and whole["calls"]
        broken = next(r["id"] for r in listed.json() if r["name"] == "folder")
        failed = httpx.get(f"{url}api/questions", params={"run": broken})
        assert failed.headers["content-type"].startswith("application/json")
        assert failed.status_code in (404, 500) and failed.json()["detail"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_gzip_bomb_trace_is_refused_with_its_size_and_the_rest_is_served(runs, tmp_path):
    """A 260 KB trace that expands to 256 MB took ``hopgraph trace`` past 300 s at 2.76 GB and
    held every request of ``hopgraph view`` for over 7 minutes. Now it is read no further than
    the limit: its page and ``trace`` say it is too large, with the limit; the rest is served."""
    from hopgraph.harness.run_folder import packed, trace_path

    root = tmp_path / "copy"
    shutil.copytree(runs, root)
    bomb = packed(trace_path(root / "runs" / "second", "q1"))
    gzip_bomb(bomb)
    assert bomb.stat().st_size < 1_000_000
    shown = hopgraph("trace", "runs/second", "q1", cwd=root, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert "too large: over 64.0 MB unpacked" in shown.stdout, shown.stdout
    proc, url = start_view(root)
    try:
        listed = {r["name"]: r for r in httpx.get(f"{url}api/runs", timeout=60).json()}
        second = listed["second"]["id"]
        opened = httpx.get(f"{url}api/question", params={"run": second, "id": "q1"}, timeout=60)
        assert opened.status_code == 200, opened.text
        assert "too large" in " ".join(opened.json()["damaged"]), opened.json()["damaged"]
        other = httpx.get(f"{url}api/question", params={"run": second, "id": "q0"}, timeout=60)
        assert other.status_code == 200 and other.json()["calls"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_one_slow_question_never_stalls_another_request(runs, monkeypatch):
    """The viewer's handlers read files inside its async endpoints, so one question whose files
    were slow to read held every other request (``/api/runs`` timed out for 7 minutes). Here a
    question's reading is held on an event: the run list answers while it is held."""
    import threading

    import uvicorn

    from hopgraph.presentation.viewer import RunView
    from hopgraph.presentation.viewer.app import Viewer, build_app

    entered, release = threading.Event(), threading.Event()
    opened = RunView.question

    def held(self, qid):  # noqa: ANN001, ANN202 - a reading that waits as a huge file's would
        entered.set()
        release.wait(120)
        return opened(self, qid)

    monkeypatch.setattr(RunView, "question", held)
    viewer = Viewer([runs / "runs"])
    server = uvicorn.Server(
        uvicorn.Config(build_app(viewer), host="127.0.0.1", port=0, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            thread.join(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        url = f"http://127.0.0.1:{port}/"
        rid = httpx.get(f"{url}api/runs", timeout=30).json()[0]["id"]
        slow: list[httpx.Response] = []
        asking = threading.Thread(
            target=lambda: slow.append(
                httpx.get(f"{url}api/question", params={"run": rid, "id": "q1"}, timeout=150)
            )
        )
        asking.start()
        assert entered.wait(60)
        listed = httpx.get(f"{url}api/runs", timeout=15)  # held for good on the old code
        assert listed.status_code == 200 and len(listed.json()) == 2
        release.set()
        asking.join(150)
        assert slow and slow[0].status_code == 200
    finally:
        release.set()
        server.should_exit = True
        thread.join(30)


def test_a_run_is_addressed_by_its_folder_and_a_new_one_appears_without_a_restart(runs, tmp_path):
    """Runs were addressed by their place in the list (``#/run/1`` opened rag, then qdrag
    after a restart) and a folder written while the viewer ran appeared only after one; now a
    run's id is its folder's path under the folder served, and a new run is listed (and
    opened by its id) at once."""
    root = tmp_path / "copy"
    shutil.copytree(runs, root)
    proc, url = start_view(root)
    try:
        assert [r["id"] for r in httpx.get(f"{url}api/runs").json()] == ["first", "second"]
        shutil.copytree(root / "runs" / "second", root / "runs" / "later" / "third")
        opened = httpx.get(f"{url}api/questions", params={"run": "later/third"})
        assert opened.status_code == 200, opened.text
        assert opened.json()["run"]["id"] == "later/third"
        ids = [r["id"] for r in httpx.get(f"{url}api/runs").json()]
        assert ids == ["first", "later/third", "second"]
        second = httpx.get(f"{url}api/question", params={"run": "second", "id": "q1"}).json()
        assert second["row"]["answer"] == "wrong"  # the same run by the same name
        assert httpx.get(f"{url}api/questions", params={"run": "1"}).status_code == 404
    finally:
        proc.terminate()
        proc.wait(timeout=30)


MMAPG_RECORD = (
    Path(__file__).parents[1] / "benchmarks/results/hotpotqa/optimize/mmapg/test/hand-written"
)


@needs_chromium
def test_a_node_s_panel_shows_its_text_and_details_and_its_link_opens_it():
    """A click on a node showed ``[object HTMLElement],[object HTMLPreElement],…``: the
    panel wrote a nested list as text. On a committed MMAPG record it shows the node's text
    and details, and the address names the node, so a link opens the same panel."""
    proc, url = start_view(MMAPG_RECORD.parent, folders=[str(MMAPG_RECORD)])
    try:
        (run,) = httpx.get(f"{url}api/runs").json()
        qid = httpx.get(f"{url}api/questions", params={"run": run["id"]}).json()["rows"][0]["id"]
        q = httpx.get(f"{url}api/question", params={"run": run["id"], "id": qid}).json()
        node = next(n for n in q["graph"]["nodes"] if n.get("detail"))
        page = dom(f"{url}#/run/{run['id']}/q/{qid}?node={node['id']}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    panel = page[page.index('id="node-panel"') :]
    panel = panel[: panel.index("</div>")]
    assert "[object" not in panel and f'data-node="{node["id"]}"' in panel[:200]
    assert html.escape(node["label"][:30], quote=False) in panel
    assert panel.count("<pre>") == len(node["detail"])
    # the panel links to the calls the node made and the evidence it retrieved
    nodes = q["graph"]["nodes"]
    laid = [i for n in nodes for i in n["links"]["calls"]]
    assert laid == list(range(len(laid))) and 0 < len(laid) <= len(q["calls"])  # in order
    assert len(node["links"]["calls"]) == int(node["detail"]["calls"])
    assert panel.count('href="#call-') == len(node["links"]["calls"])
    searched = next(n for n in nodes if n["links"]["evidence"])
    assert set(searched["links"]["evidence"]) <= {e["id"] for e in q["evidence"]}


@needs_chromium
def test_a_question_s_page_shows_its_fallbacks_gold_evidence_and_gold_answer_where_they_are():
    """An MMAPG loss could not be explained from its page: the fallbacks its trace holds were
    never shown (the flag said "fallback" on 40 of 40 with no reason), nor was gold evidence
    among the passages. On the committed record's 5ae5dab… (answered Stamford Bridge) each
    is on the page, every call names its node, and the waterfall has a time axis."""
    qid = "5ae5dab455429929b08079d2"
    proc, url = start_view(MMAPG_RECORD.parent, folders=[str(MMAPG_RECORD)])
    try:
        (run,) = httpx.get(f"{url}api/runs").json()
        q = httpx.get(f"{url}api/question", params={"run": run["id"], "id": qid}).json()
        page = dom(f"{url}#/run/{run['id']}/q/{qid}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    fallbacks = [m for m in q["marks"] if m["text"].startswith("fallback")]
    assert len(fallbacks) == 2 and all(m["node"] == "planner" for m in fallbacks)
    assert "repeated_retrieval mended by rule" in fallbacks[0]["text"]
    assert f"Fallbacks and repairs ({len(q['marks'])})" in page
    assert "the step repeated R2 again: repeated_retrieval mended by rule" in page
    assert "gold evidence: 2 of 2 held" in page and page.count('class="gold-evidence"') == 2
    assert all(c["node"] for c in q["calls"]) and page.count('class="node-name"') >= len(q["calls"])
    assert 'class="wf-row wf-axis"' in page and page.count('data-kind="mark"') == len(q["marks"])


@pytest.fixture
def browser():
    from browser import Browser

    b = Browser()
    yield b
    b.close()


def _until(browser, expression: str, timeout: float = 20) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not browser.eval(expression):
        assert time.monotonic() < deadline, f"never true: {expression}"
        time.sleep(0.05)
    browser.ready()


@needs_chromium
def test_search_filters_as_one_types_and_j_k_step_through_the_questions(view, browser):
    """Search applied only on Enter and the page's redraw dropped the input's focus; a
    question had no next or previous. Typed, the rows filter at once with the focus kept and
    the address updated; j and k (and the arrows) step through the table's order; a search
    "in traces" reads prompts, replies and evidence."""
    browser.open(f"{view}#/run/first")
    browser.eval("document.getElementById('search').focus()")
    browser.type("town 1")
    assert browser.eval("document.activeElement.id") == "search"
    assert browser.eval("document.getElementById('count').textContent") == "1 of 3 questions"
    shown = browser.eval(
        "[...document.querySelectorAll('#questions tr[data-id]')]"
        ".filter((r) => !r.hidden).map((r) => r.dataset.id)"
    )
    assert shown == ["q1"] and "q=town+1" in browser.eval("location.hash")
    browser.open(f"{view}#/run/first")  # the whole table: its order is the one stepped through
    browser.open(f"{view}#/run/first/q/q0")
    assert "1 of 3" in browser.eval("document.querySelector('.nav').textContent")
    browser.press("j")
    _until(browser, "location.hash.endsWith('/q/q1')")
    browser.press("ArrowRight")
    _until(browser, "location.hash.endsWith('/q/q2')")
    browser.press("k")
    _until(browser, "location.hash.endsWith('/q/q1')")
    assert httpx.get(f"{view}api/search", params={"run": "first", "q": "ANSWER-1"}).json() == ["q1"]
    browser.open(f"{view}#/run/first?q=answer-1&traces=1")
    assert browser.eval("document.getElementById('count').textContent") == "1 of 3 questions"


@needs_chromium
def test_a_question_s_position_comes_from_its_address_not_the_table_seen_before(view, browser):
    """Previous / next said "2 of 40", "2 of 30" or nothing for one URL, by which table was
    visited before (the order was kept in the browser's session): the question's address
    carries the table's filters and sort, and one address gives one position."""
    rows = httpx.get(f"{view}api/questions", params={"run": "second"}).json()["rows"]
    right = [r["id"] for r in rows if r["right"] is True]
    assert 0 < len(right) < len(rows)
    browser.open(f"{view}#/run/second?status=right")
    href = browser.eval("document.querySelector('#questions a.qlink').getAttribute('href')")
    assert href.endswith("?status=right"), href
    nav = []
    for before in ("#/run/second", "#/run/second?status=wrong", "#/run/first?sort=id&asc=1"):
        browser.open(f"{view}{before}")
        browser.open(f"{view}#/run/second/q/{right[0]}?status=right")
        nav.append(browser.eval("document.querySelector('.nav').textContent"))
    assert len(set(nav)) == 1 and f"1 of {len(right)}" in nav[0], nav
    browser.open(f"{view}#/run/second/q/{right[0]}")  # no table named: the run's own order
    assert f"of {len(rows)}" in browser.eval("document.querySelector('.nav').textContent")


def test_a_call_s_wait_before_the_server_began_it_reaches_the_waterfall():
    """Six calls sent at once and served one after another: each one's queued time (what
    the model layer records from the server's timings) is on its waterfall bar."""
    from hopgraph.harness.trace import Trace

    records = [{"mode": "start", "data": {"id": "q"}}]
    for i in range(6):
        records.append(
            {
                "t": 0.0,
                "ns": [],
                "mode": "task",
                "data": {"id": f"t{i}", "name": "examine", "event": "start"},
            }
        )
    for i in range(6):
        served = {"first_token_s": 1.0 * i + 0.3, "prompt_s": 0.3, "queued_s": 1.0 * i}
        records.append(
            {
                "t": 1.0 * (i + 1),
                "ns": [],
                "mode": "custom",
                "data": {
                    "event": "llm_call",
                    "template": "mmapg/examine_text",
                    "latency_s": 1.0 * (i + 1),
                    "task": f"t{i}",
                    "extra": {"served": served},
                },
            }
        )
        records.append(
            {
                "t": 1.0 * (i + 1),
                "ns": [],
                "mode": "task",
                "data": {"id": f"t{i}", "name": "examine", "event": "end"},
            }
        )
    calls = [s.as_dict() for s in Trace.of(records).spans if s.kind == "llm"]
    assert [c["queued_s"] for c in calls] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert all(c["start"] == 0.0 and c["node"] == "examine" and c["depth"] == 1 for c in calls)


@needs_chromium
def test_the_waterfall_s_legend_says_what_its_hatch_measured():
    """MAB-DQA's committed record (llama-cpp-python, no server timings) hatched each 10 s
    one-token judge call whole under "waiting for the server": its hatch is the wait for the
    first token, prompt reading included, and the legend says so; a llama-server record's
    hatch is the slot queue its timings report."""
    results = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
    folders = ["mmlongbench/mabdqa-traced", "engine/llama-server/rag-c1"]
    proc, url = start_view(results, folders=folders)
    try:
        pages = {}
        for run in ("mabdqa-traced", "rag-c1"):
            first = httpx.get(f"{url}api/questions", params={"run": run}).json()["rows"][0]["id"]
            page = dom(f"{url}#/run/{run}/q/{first}")
            pages[run] = page[page.index('class="legend"') : page.index('id="waterfall"')]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    untimed = "until the first token (no server timings: waiting and prompt reading)"
    assert untimed in pages["mabdqa-traced"] and "server slot" not in pages["mabdqa-traced"]
    assert "waiting for a server slot" in pages["rag-c1"] and untimed not in pages["rag-c1"]
    assert all("waiting for the server" not in p for p in pages.values())


@needs_chromium
def test_an_optimize_folder_is_shown_as_a_search():
    """``view`` of an optimize folder listed its bootstrap and the hand-written arm only: the
    candidates, their validation scores and which was kept were in record.json alone. The
    committed searches: each listed, MMAPG's with its kept planner demonstrations, the
    scores question by question, links to each candidate's run; rag's with its verdict."""
    root = MMAPG_RECORD.parents[2]
    proc, url = start_view(root.parent, folders=[str(root)])
    try:
        listed = [x["id"] for x in httpx.get(f"{url}api/optimizations").json()]
        mmapg = httpx.get(f"{url}api/optimization", params={"id": "mmapg"}).json()
        page = dom(f"{url}#/optimization/mmapg")
        rag = dom(f"{url}#/optimization/rag")
        wide = httpx.get(f"{url}api/optimization", params={"id": "qdrag-wide"}).json()
        wide_page = dom(f"{url}#/optimization/qdrag-wide")
        home = dom(f"{url}#/")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert listed == sorted(listed) and {"mmapg", "qdrag", "rag", "rag-wide"} <= set(listed)
    kept = [c for c in mmapg["candidates"] if c["won"]]
    assert [c["id"] for c in kept] == ["01-mmapg.planner-demos"] == [mmapg["incumbent"]]
    assert kept[0]["run"] == "mmapg/candidates/01-mmapg.planner-demos"
    assert mmapg["arms"] == ["mmapg/test/hand-written", "mmapg/test/optimized"]
    assert 'data-id="01-mmapg.planner-demos" class="kept"' in page and ">kept<" in page
    n = len(kept[0]["scores"])
    assert n == 20 and page[page.index('id="validation"') :].count("<code>") == n
    assert "mmapg%2Fcandidates%2F01-mmapg.planner-demos" in page
    # the demonstrations it keeps are shown: each example's inputs and what it shows
    demos = kept[0]["demo_lines"]["mmapg/planner"]
    assert len(demos) == kept[0]["demos"]["mmapg/planner"] > 0 and demos[0]["output"]
    assert "the demonstrations it adds" in page and "shows: " in page
    assert 'href="#/optimization/mmapg"' in home
    # a search that kept nothing shows no test comparison of the same prompts with themselves
    assert "nothing kept; no verdict" in rag and "→ optimized" not in rag
    assert "the two arms side by side" not in rag
    assert wide["test"] is None and wide["arms"][1] is None and wide["kept_nothing"]
    # a tie on the minibatch and its tie-break are named; the incumbent's scores stand beside
    cut = [c for c in wide["candidates"] if c["stage"] == "minibatch"]
    assert cut and all(
        "tied on the minibatch with 01-qdrag.decompose_qdc-demos" in c["tie"]
        and "schedule order" in c["tie"]
        for c in cut
    )
    if SHARED_DATA.exists():  # the bootstrap's questions are re-made from the benchmark data
        assert len(wide["incumbent_scores"]) == 20
    assert "incumbent (hand-written)" in wide_page and "schedule order" in wide_page
    assert "7 h 8 min" in wide_page and "25680.0 s" not in wide_page  # durations in h / min


def test_a_cited_page_is_served_only_from_the_served_folders_or_the_run_s_kb(runs, tmp_path):
    """A run folder is data: a page path it names, or a link it holds, never makes the viewer
    read a file outside the folders it serves and the KB its manifest names (a link
    ``evil.png -> secret`` answered the secret, 200 image/png)."""
    import json

    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:the host's secret")
    served = tmp_path / "served"
    run = served / "run"
    shutil.copytree(runs / "runs" / "first", run)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["context"]["kb_dir"] = str(tmp_path / "kb")
    (run / "manifest.json").write_text(json.dumps(manifest))
    (tmp_path / "kb" / "pages").mkdir(parents=True)
    (tmp_path / "kb" / "chroma").mkdir()
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 32
    (tmp_path / "kb" / "pages" / "p1.png").write_bytes(png)
    (run / "page.png").write_bytes(png)
    (run / "evil.png").symlink_to(secret)
    (tmp_path / "elsewhere.png").write_bytes(png)
    os.link(secret, run / "hard.png")  # a hard link served /etc/shadow's bytes as image/png
    pages = {
        "kb": tmp_path / "kb" / "pages" / "p1.png",
        "inside": run / "page.png",
        "link": run / "evil.png",
        "outside": tmp_path / "elsewhere.png",
        "hard": run / "hard.png",
    }
    kept = [
        {"id": cid, "modality": "page", "path": str(p), "text": cid} for cid, p in pages.items()
    ]
    pred = json.loads((run / "predictions.jsonl").read_text().splitlines()[0])
    pred["citations"] = list(pages)
    (run / "predictions.jsonl").write_text(json.dumps(pred) + "\n")
    for old in (run / "traces").glob("*"):
        old.unlink()
    trace = {"mode": "values", "graph": "rag", "data": {"kept": kept, "question": "?"}}
    (run / "traces" / f"{pred['id']}.jsonl").write_text(json.dumps(trace) + "\n")
    proc, url = start_view(tmp_path, folders=("served",))
    try:
        got = {
            cid: httpx.get(f"{url}api/page", params={"run": "run", "id": pred["id"], "cid": cid})
            for cid in pages
        }
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert {cid: r.status_code for cid, r in got.items()} == {
        "kb": 200,
        "inside": 200,
        "link": 404,
        "outside": 404,
        "hard": 404,
    }
    assert all("the host's secret" not in r.text for r in got.values())
    from hopgraph.presentation.viewer import page_folders

    # a manifest's kb_dir opens its pages only where it is a KB whose pages lie inside it
    (tmp_path / "kb-out" / "chroma").mkdir(parents=True)
    (tmp_path / "kb-out" / "pages").symlink_to(tmp_path)
    for kb_dir in ("/", "~/..", str(tmp_path / "kb-out")):
        assert page_folders([served], {"context": {"kb_dir": kb_dir}}) == [served], kb_dir
    kb_pages = (tmp_path / "kb" / "pages").resolve()
    assert page_folders([served], {"context": {"kb_dir": str(tmp_path / "kb")}})[-1] == kb_pages


@needs_chromium
def test_the_compare_page_speaks_of_one_metric_both_runs_have():
    """Two MAB-DQA runs compared from the run list: the page said "f1: 0 better, 0 worse"
    while its selector showed recall@5 and its table was empty (the button always wrote
    metric=f1, which neither run had while unscored); and one of their questions, counted
    with its calls, listed "LLM calls (0)" because the record kept no trace."""
    root = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "mmlongbench"
    proc, url = start_view(root, folders=["mabdqa-li", "mabdqa-bandit"])
    try:
        listed = {r["id"]: r for r in httpx.get(f"{url}api/runs").json()}
        a, b = "mabdqa-li", "mabdqa-bandit"
        both = [k for k in listed[a]["metrics"] if k in listed[b]["metrics"]]
        page = dom(f"{url}#/compare/{a}/{b}")
        asked = dom(f"{url}#/compare/{a}/{b}?metric=precision@7")  # a metric neither has
        row = httpx.get(f"{url}api/questions", params={"run": b}).json()["rows"][0]
        question = dom(f"{url}#/run/{b}/q/{row['id']}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert both and "precision@7" not in both
    for shown in (page, asked):
        selected = re.search(r'<option value="([^"]+)" selected', shown)
        summary = re.search(r'id="summary">([^<]+)<', shown)
        assert selected and summary, shown[:2000]
        assert summary[1].startswith(f"{selected[1]}: ") and selected[1] in both
        assert " of 0 common questions" not in summary[1]
    # its questions' calls were counted ("14 calls") and shown as "LLM calls (0)": no trace kept
    assert row["calls"] > 0 and f"{row['calls']} calls" in question
    assert f"LLM calls ({row['calls']} made; this record kept no trace of them)" in question


@needs_chromium
def test_a_right_or_wrong_filter_on_an_unscored_run_says_it_is_unscored(runs, tmp_path):
    """``?status=wrong`` on a run whose question file is not here showed "0 of 40" with no
    word that nothing was scored."""
    import json

    run = tmp_path / "served" / "unscored"
    shutil.copytree(runs / "runs" / "first", run)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["questions"], manifest["questions_sha256"] = "gone.jsonl", "0" * 64
    (run / "manifest.json").write_text(json.dumps(manifest))
    proc, url = start_view(tmp_path, folders=("served",))
    try:
        wrong = dom(f"{url}#/run/unscored?status=wrong")
        every = dom(f"{url}#/run/unscored")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert "0 of 3 questions" in wrong
    assert "No question of this run is scored, so none can be wrong" in wrong
    assert 'id="unscored"' not in every


def test_the_committed_mabdqa_record_keeps_a_trace_of_every_question():
    """No committed MAB-DQA record kept traces, so its questions could not be read: this one
    does, and each question's page lists the calls its row counts."""
    from hopgraph.presentation.viewer import RunView

    record = Path(__file__).resolve().parents[1] / "benchmarks/results/mmlongbench/mabdqa-traced"
    view = RunView(record)
    rows = view.rows()
    assert len(rows) == 3
    for row in rows:
        q = view.question(row["id"])
        assert q["traced"] and len(q["calls"]) == row["calls"] > 0, row["id"]
        assert any(e["id"].startswith("page-") and e["page"] for e in q["evidence"])


@needs_chromium
def test_the_compare_table_fits_a_1400_pixel_window(browser):
    """Two committed runs side by side at 1,400 px: the question column was squeezed and the
    "change" column pushed off-screen by long unbroken headers and answers."""
    root = Path(__file__).resolve().parents[1] / "benchmarks"
    proc, url = start_view(root, folders=["results"])
    try:
        browser.send(
            "Emulation.setDeviceMetricsOverride",
            width=1400,
            height=900,
            deviceScaleFactor=1,
            mobile=False,
        )
        a, b = "hotpotqa/optimize/qdrag-wide/test/hand-written", "hotpotqa/remeasure/full"
        browser.open(f"{url}#/compare/{quote(a, safe='')}/{quote(b, safe='')}?all=1")
        width = browser.eval("document.documentElement.clientWidth")
        right = browser.eval(
            "Math.max(...[...document.querySelectorAll('#pairs th')]"
            ".map((c) => c.getBoundingClientRect().right))"
        )
        question = browser.eval(
            "document.querySelectorAll('#pairs th')[1].getBoundingClientRect().width"
        )
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert right <= width, (right, width)
    assert question >= 200, question


@needs_chromium
def test_a_gold_answer_is_marked_in_the_prompt_that_held_it_too():
    """The committed MMAPG loss 5ae5dab…: the gold answer stood in a prompt whose reply
    dropped it, and only replies were marked, so the call that lost it did not show."""
    proc, url = start_view(MMAPG_RECORD.parent, folders=[MMAPG_RECORD.name])
    try:
        rid = httpx.get(f"{url}api/runs").json()[0]["id"]
        page = dom(f"{url}#/run/{quote(rid, safe='')}/q/5ae5dab455429929b08079d2")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    prompts = re.findall(r'<pre class="prompt">(.*?)</pre>', page, re.S)
    assert prompts and any('<mark class="gold">' in p for p in prompts)


def test_an_optimize_record_reads_no_demonstrations_outside_its_folder(tmp_path):
    """``/api/optimization`` read any ``*.jsonl`` on the host a record's ``demos`` key named
    (``../../../…``) or a candidate's overlay linked to. Now a candidate's demonstrations are
    read only from inside its search's folder, as its own files."""
    import json

    from hopgraph.presentation.viewer import SEARCH_RECORD, optimize_search

    secret = tmp_path / "secret.jsonl"
    secret.write_text(json.dumps({"inputs": {"q": "the host's secret"}, "output": "x"}) + "\n")
    search = tmp_path / "search"
    (search / "candidates" / "c1" / "overlay").mkdir(parents=True)
    (search / "candidates" / "c2").mkdir(parents=True)
    (search / "candidates" / "c2" / "overlay").symlink_to(tmp_path)  # linked out
    good = {"inputs": {"q": "a real demonstration"}, "output": "y"}
    (search / "candidates" / "c1" / "overlay" / "qdrag.decompose.jsonl").write_text(
        json.dumps(good) + "\n"
    )
    climb = "../" * 6 + str(secret.with_suffix(""))[1:]
    record = {
        "agent": "qdrag",
        "candidates": [
            {"id": "c1", "demos": {"qdrag.decompose": [1], climb: [1]}},
            {"id": "c2", "demos": {"secret": [1]}},
        ],
    }
    (search / SEARCH_RECORD).write_text(json.dumps(record))
    shown = optimize_search(search, {})
    lines = {c["id"]: c["demo_lines"] for c in shown["candidates"]}
    assert lines["c1"] == {"qdrag.decompose": [good]} and lines["c2"] == {}
    assert "the host's secret" not in json.dumps(shown)
