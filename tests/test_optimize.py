"""``hopgraph optimize`` on the scripted endpoint: demonstrations only from right answers, a
candidate kept only on a paired win, the overlay it writes answering through ``run``, the
proposer shown the role's real prompt and reply, a budget stop and a resume after kill -9, and
each refusal before any call."""

import json
import os
import re
import signal
import threading

from scripted_server import ScriptedServer, by_template
from servers import hopgraph, scripted, started

from hopgraph.harness.run_folder import read_predictions
from hopgraph.optimizer.search import split
from hopgraph.questions.datasets import Question, write_questions

N = 24
INSTRUCTION = "Always reply with the word wrong."


def short_answer(body: dict) -> str:
    """Right on even towns; right everywhere once the prompt carries demonstrations; wrong
    everywhere under the proposed instruction (so that candidate must lose)."""
    text = body["messages"][-1]["content"]
    town = int(re.findall(r"Question: What about town (\d+)\?", text)[-1])
    if INSTRUCTION in text:
        return "wrong"
    if "Here are worked examples" in text:
        return f"answer-{town}"
    return f"answer-{town}" if town % 2 == 0 else "wrong"


SCRIPT = by_template(
    {
        "rag/answer": "The sources say so [1].",
        "rag/short_answer": short_answer,
        "optimize/propose": json.dumps({"reasoning": "it guessed", "instruction": INSTRUCTION}),
    }
)


def questions(tmp_path, ids, name="train.jsonl"):
    path = tmp_path / name
    write_questions(
        [Question(f"q{i}", f"What about town {i}?", [f"answer-{i}"], []) for i in ids], path
    )
    return path


def trace_call(template, reply, inputs, **fields) -> str:
    """One ``llm_call`` line of a question's trace, as a run writes it."""
    data = {"event": "llm_call", "template": template, "reply": reply, **fields}
    return json.dumps({"mode": "custom", "data": {**data, "extra": {"inputs": inputs}}}) + "\n"


def base(train, out, kb, model, *extra):
    return [
        "optimize",
        "--agent",
        "rag",
        "--questions",
        str(train),
        "--out",
        str(out),
        "--kb",
        str(kb),
        *scripted(model.base_url),
        "--roles",
        "rag/short_answer",
        "--rounds",
        "1",
        "--candidates",
        "2",
        "--minibatch",
        "0",
        *extra,
    ]


def test_a_winning_demonstration_set_becomes_the_overlay_and_a_losing_instruction_never_does(
    tmp_path, town_kb
):
    train, out = questions(tmp_path, range(N)), tmp_path / "opt"
    test = questions(tmp_path, range(N, N + 4), "test.jsonl")
    with ScriptedServer(SCRIPT) as model:
        done = hopgraph(*base(train, out, town_kb, model, "--test", str(test)), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        record = json.loads((out / "record.json").read_text())
        # the last word: on test questions the search never read, with the gap to validation
        verdict = record["test"]
        assert (verdict["n"], verdict["hand_written"], verdict["optimized"]) == (4, 0.5, 1.0)
        assert (verdict["better"], verdict["worse"]) == (2, 0) and verdict["gap"]["test"] == 0.5
        assert verdict["gap"]["validation"] > 0 and not verdict["same_prompts"]
        by_kind = {c["kind"]: c for c in record["candidates"]}
        demos, instruction = by_kind["demos"], by_kind["instruction"]
        assert demos["won"] and demos["better"] > 0 and demos["worse"] == 0
        assert not instruction["won"] and instruction["worse"] > 0
        assert record["incumbent"] == demos["id"] and record["spent"]["tokens"] > 0
        # demonstrations come only from the pool's right answers, never from validation
        pool, val = split([f"q{i}" for i in range(N)], 0.5, 0)
        rows = [json.loads(x) for x in (out / "overlay/rag/short_answer.jsonl").open()]
        towns = [int(re.search(r"town (\d+)", r["inputs"]["question"])[1]) for r in rows]
        assert rows and all(t % 2 == 0 and f"q{t}" in pool for t in towns)
        assert all(r["output"] == f"answer-{t}" for r, t in zip(rows, towns, strict=True))
        # the proposer read a failing pool question's real prompt and reply from the traces
        (sent,) = [
            b["messages"][-1]["content"]
            for b, _ in model.log
            if "You improve the instructions" in b["messages"][-1]["content"]
        ]
        wrong = [f"q{i}" for i in range(1, N, 2) if f"q{i}" in pool]
        assert "Full answer: The sources say so" in sent and "This step replied:\nwrong" in sent
        assert any(f"What about town {q[1:]}?" in sent for q in wrong)
        assert not any(f"What about town {q[1:]}?" in sent for q in val)
        # the overlay round-trips through run: demonstrations in the prompt, every answer right
        run = hopgraph(
            "run",
            "--agent",
            "rag",
            "--questions",
            str(test),
            "--out",
            str(tmp_path / "run"),
            "--kb",
            str(town_kb),
            *scripted(model.base_url),
            "--prompts",
            str(out / "overlay"),
            cwd=tmp_path,
        )
        assert run.returncode == 0, run.stderr
        preds = read_predictions(tmp_path / "run" / "predictions.jsonl")
        assert {p["answer"] for p in preds.values()} == {f"answer-{i}" for i in range(N, N + 4)}
        manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
        shipped = json.loads((out / "bootstrap" / "manifest.json").read_text())
        assert manifest["prompts"]["rag/short_answer"] != shipped["prompts"]["rag/short_answer"]


def test_nothing_wins_so_the_hand_written_prompts_stay(tmp_path, town_kb):
    train, out = questions(tmp_path, range(0, 2 * N, 2)), tmp_path / "opt"  # all even: all right
    with ScriptedServer(SCRIPT) as model:
        done = hopgraph(*base(train, out, town_kb, model), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    # piped, each run folder's questions are shown as they finish
    assert re.search(rf"^bootstrap: {N}/{N} done, failed 0", done.stderr, re.M), done.stderr
    assert re.search(r"^01-rag.short_answer-demos: 1/\d+ done, .* left$", done.stderr, re.M)
    record = json.loads((out / "record.json").read_text())
    assert record["incumbent"] == "hand-written" and record["overlay_changes"] == []
    assert [p.name for p in (out / "overlay").iterdir()] == ["optimized.json"]  # runs as shipped
    assert "no candidate won" in record["stopped"] and not any(
        c["won"] for c in record["candidates"]
    )


def renamed(tmp_path, train):
    """``train``'s questions 1 and 2 under new ids, one in upper case with doubled spaces."""
    path = tmp_path / "renamed.jsonl"
    write_questions(
        [
            Question("t9", "WHAT  about town 1 ?", ["answer-1"], []),
            Question("t8", "What about town 2?", ["answer-2"], []),
        ],
        path,
    )
    return path


def test_refused_before_any_call(tmp_path, town_kb):
    train, out = questions(tmp_path, range(8)), tmp_path / "opt"
    overlay = tmp_path / "made-for-qdrag"
    overlay.mkdir()
    (overlay / "optimized.json").write_text('{"agent": "qdrag"}')
    with ScriptedServer(SCRIPT) as model:
        cases = [
            (base(train, out, town_kb, model, "--roles", "mmapg/planner"), "rag has no such role"),
            (
                base(
                    train,
                    out,
                    town_kb,
                    model,
                    "--test",
                    str(questions(tmp_path, [3, 9], "t.jsonl")),
                ),
                "q3 is a question of",
            ),
            (  # the training questions under new ids, in other case and spacing
                base(train, out, town_kb, model, "--test", str(renamed(tmp_path, train))),
                "t9 asks what",
            ),
            (base(train, out, town_kb, model, "--prompts", str(overlay)), "optimized for qdrag"),
            (
                [
                    "run",
                    "--agent",
                    "rag",
                    "--questions",
                    str(train),
                    "--out",
                    str(tmp_path / "r"),
                    "--kb",
                    str(town_kb),
                    *scripted(model.base_url),
                    "--prompts",
                    str(overlay),
                ],
                "optimized for qdrag, not rag",
            ),
        ]
        for args, message in cases:
            got = hopgraph(*args, cwd=tmp_path)
            assert got.returncode == 2 and message in got.stderr, (args, got.stderr[-400:])
        assert model.calls == 0 and not out.exists()


def test_a_budget_stops_it_and_a_larger_one_resumes_after_kill_9(tmp_path, town_kb):
    train, out = questions(tmp_path, range(N)), tmp_path / "opt"
    second_demo_call = threading.Event()
    seen = []

    def script(body: dict) -> str:
        if "Here are worked examples" in body["messages"][-1]["content"]:
            seen.append(1)
            if len(seen) >= 2:  # the candidate's run answered one question and asks the next
                second_demo_call.set()
        return SCRIPT(body)

    with ScriptedServer(script) as model:
        stopped = hopgraph(*base(train, out, town_kb, model, "--budget-tokens", "1"), cwd=tmp_path)
        assert stopped.returncode == 4 and "budget reached" in stopped.stderr, stopped.stderr
        first = model.calls
        # killed once the first candidate's run has answered a question: that run is in flight
        proc = started(*base(train, out, town_kb, model), cwd=tmp_path)
        assert second_demo_call.wait(120)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        calls = model.calls
        done = hopgraph(*base(train, out, town_kb, model), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    answered = read_predictions(out / "bootstrap" / "predictions.jsonl")
    assert len(answered) == N and first < calls
    # the resume re-asked nothing already answered: bootstrap and the incumbent came from the
    # record, the proposer from the cache, so at most the rest of the round was asked
    record = json.loads((out / "record.json").read_text())
    assert [c["id"] for c in record["candidates"]] == [
        "01-rag.short_answer-demos",
        "01-rag.short_answer-instruction",
    ]
    assert model.calls - calls <= 2 * N
    # and it found what an uninterrupted search finds: the same answers, scores and overlay
    with ScriptedServer(SCRIPT) as model:
        whole = hopgraph(*base(train, tmp_path / "whole", town_kb, model), cwd=tmp_path)
        assert whole.returncode == 0, whole.stderr
    alone = json.loads((tmp_path / "whole" / "record.json").read_text())
    uninterrupted = read_predictions(tmp_path / "whole" / "bootstrap" / "predictions.jsonl")
    assert all(p["answer"] and not p["error"] for p in answered.values())
    assert {q: p["answer"] for q, p in answered.items()} == {
        q: p["answer"] for q, p in uninterrupted.items()
    }
    assert [(c["id"], c["scores"], c["won"]) for c in record["candidates"]] == [
        (c["id"], c["scores"], c["won"]) for c in alone["candidates"]
    ]
    assert record["overlay"] == alone["overlay"].replace(str(tmp_path / "whole"), str(out))


def test_sigterm_stops_it_at_once_with_what_it_found(tmp_path, town_kb):
    """SIGTERM while a model call hangs: optimize stops now with 143 and its record written,
    as Ctrl-C does (before: it waited for the call, then printed LangGraph's traceback)."""
    train, out = questions(tmp_path, range(N)), tmp_path / "opt"
    asked, release = threading.Event(), threading.Event()

    def script(body: dict) -> str:
        asked.set()
        release.wait(120)
        return SCRIPT(body)

    with ScriptedServer(script) as model:
        proc = started(*base(train, out, town_kb, model), cwd=tmp_path)
        assert asked.wait(120)
        proc.send_signal(signal.SIGTERM)
        try:
            _, errs = proc.communicate(timeout=60)
        finally:
            release.set()
    assert proc.returncode == 143, errs
    assert "interrupted" in errs and "Traceback" not in errs, errs
    assert (out / "record.json").exists()


def free_verdict(tmp_path, train, test, kb, model):
    """A search with its verdict and no budget, in ``tmp_path/free``: the folder, its record
    and the tokens it sent before the verdict."""
    free = tmp_path / "free"
    done = hopgraph(*base(train, free, kb, model, "--test", str(test)), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # the console's verdict carries its numbers, or says there is none and why
    assert re.search(
        r"^verdict: \w+ \d\.\d{3} hand-written, \d\.\d{3} optimized \(.+\) on \d+ "
        r"test questions: \d+ better, \d+ worse, sign p "
        r"|^verdict: none; nothing was kept, so the test split answered the hand-written "
        r"prompts only \(\w+ \d",
        done.stderr,
        re.M,
    ), done.stderr
    record = json.loads((free / "record.json").read_text())
    before = sum(record["bootstrap_sent"]) + sum(sum(c["sent"]) for c in record["candidates"])
    return free, record, before


def test_the_verdict_s_second_arm_is_charged_for_the_first(tmp_path, town_kb):
    """The budget left to the optimized arm is what the hand-written arm left, not what was
    left before it (before: the arms' tokens counted only once both ended, so the search spent
    up to a whole arm past its budget and said it finished)."""
    from hopgraph.optimizer.record import sent_tokens as _sent

    train = questions(tmp_path, range(N))
    test = questions(tmp_path, range(N, N + 8), "test.jsonl")

    def arm(out, name):
        return sum(_sent(read_predictions(out / "test" / name / "predictions.jsonl")))

    with ScriptedServer(SCRIPT) as model:
        free, record, before = free_verdict(tmp_path, train, test, town_kb, model)
        hand, opt = arm(free, "hand-written"), arm(free, "optimized")
        assert hand > 0 and opt > 0 and record["spent"]["tokens"] == before + hand + opt
        # room for the hand-written arm and half the optimized one: the second arm must stop
        budget = before + hand + opt // 2
        capped = tmp_path / "capped"
        got = hopgraph(
            *base(
                train, capped, town_kb, model, "--test", str(test), "--budget-tokens", str(budget)
            ),
            cwd=tmp_path,
        )
    assert got.returncode == 4 and "budget reached" in got.stderr, got.stderr[-400:]
    answered = read_predictions(capped / "test" / "optimized" / "predictions.jsonl")
    assert 0 < len(answered) < 8
    spent = json.loads((capped / "record.json").read_text())["spent"]["tokens"]
    assert spent < budget + opt // 2  # the runner stops at its own count (cached calls too)


def test_when_nothing_won_the_optimized_arm_is_the_hand_written_one_asked_once(tmp_path, town_kb):
    """A verdict resumed where its response cache is gone (another machine) asks each test
    question once when nothing won: the optimized arm is the hand-written one, linked, and
    counted once (before: the "optimized" arm, the same prompts, asked again every question the
    first sitting had answered, a method's whole run apiece)."""
    import shutil

    train = questions(tmp_path, range(0, 2 * N, 2))  # all even: all right, so nothing wins
    test_ids = range(2 * N, 2 * N + 16, 2)
    test = questions(tmp_path, test_ids, "test.jsonl")
    asked = []

    def script(body: dict) -> str:
        town = re.findall(r"Question: What about town (\d+)\?", body["messages"][-1]["content"])
        if town and int(town[-1]) in test_ids and "Full answer" in body["messages"][-1]["content"]:
            asked.append(int(town[-1]))
        return SCRIPT(body)

    with ScriptedServer(script) as model:
        _, record, before = free_verdict(tmp_path, train, test, town_kb, model)
        assert record["spent"]["tokens"] == before + sum(record["test"]["sent"])
        hand = sum(record["test"]["sent"])
        asked.clear()
        out = tmp_path / "opt"  # stopped halfway through the hand-written arm, then resumed
        cap = str(before + hand * 3 // 4)
        stopped = hopgraph(
            *base(train, out, town_kb, model, "--test", str(test), "--budget-tokens", cap),
            cwd=tmp_path,
        )
        assert stopped.returncode == 4, stopped.stderr[-400:]
        first = read_predictions(out / "test" / "hand-written" / "predictions.jsonl")
        assert 0 < len(first) < len(test_ids), len(first)
        shutil.rmtree(out / "cache")
        done = hopgraph(*base(train, out, town_kb, model, "--test", str(test)), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    assert sorted(asked) == list(test_ids)
    assert not (out / "test" / "optimized").exists()  # nothing kept: no second arm
    t = json.loads((out / "record.json").read_text())["test"]
    assert t["same_prompts"] and t["n"] == len(test_ids) and t["verdict"] is None
    assert not {"optimized", "better", "worse", "sign_p", "ci", "gap"} & set(t)
    assert sum(t["sent"]) == hand


def test_a_money_budget_stops_it_counting_only_what_reached_the_endpoint(tmp_path, town_kb):
    """The bootstrap's calls are paid; the proposer's call is counted."""
    train, out = questions(tmp_path, range(N)), tmp_path / "opt"
    price = ["--price", "prompt=1000000,completion=1000000"]  # $1 a token
    with ScriptedServer(SCRIPT) as model:
        stopped = hopgraph(
            *base(train, out, town_kb, model, "--budget-usd", "1", *price), cwd=tmp_path
        )
        assert stopped.returncode == 4 and "budget reached" in stopped.stderr, stopped.stderr
        done = hopgraph(
            *base(train, out, town_kb, model, "--budget-usd", "1e9", *price), cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
    record = json.loads((out / "record.json").read_text())
    boot = read_predictions(out / "bootstrap" / "predictions.jsonl").values()
    paid = sum(p["prompt_tokens"] + p["completion_tokens"] for p in boot)
    assert sum(record["bootstrap_sent"]) == paid
    proposal = next(c for c in record["candidates"] if c["kind"] == "instruction")
    assert proposal["sent"][0] > 0  # the proposer's prompt, counted with its run
    assert record["spent"]["usd"] == record["spent"]["tokens"]


def test_an_instruction_naming_a_gold_answer_it_was_shown_is_skipped(tmp_path, town_kb):
    train, out = questions(tmp_path, range(N)), tmp_path / "opt"

    def leaky(body: dict) -> str:
        text = body["messages"][-1]["content"]
        if "You improve the instructions" in text:
            gold = re.findall(r"Gold answer: (answer-\d+)", text)[0]
            return json.dumps({"reasoning": "r", "instruction": f"When unsure, say {gold}."})
        return SCRIPT(body)

    with ScriptedServer(leaky) as model:
        done = hopgraph(*base(train, out, town_kb, model), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    record = json.loads((out / "record.json").read_text())
    (proposal,) = [c for c in record["candidates"] if c["kind"] == "instruction"]
    assert proposal["skipped"].startswith("the instruction names a gold answer it was shown")
    assert not (out / "candidates" / proposal["id"] / "predictions.jsonl").exists()
    assert "skipped (the instruction names" in done.stdout


def test_the_roles_of_an_agent_or_a_graph_of_ones_own_are_its_code_s_roles():
    from pathlib import Path

    from hopgraph.optimizer.search import roles_of

    example = Path(__file__).resolve().parents[1] / "examples" / "self_ask" / "graph.py"
    assert roles_of("rag") == ["rag/answer", "rag/short_answer"]
    assert {"self_ask/next", "self_ask/intermediate"} <= set(roles_of(f"{example}:graph"))
    assert "mmapg/planner" in roles_of("mmapg") and "mmapg/planner" not in roles_of("qdrag")


def test_the_roles_a_module_keeps_in_a_table_are_among_its_roles():
    """MMAPG keeps its two image roles in a dict by kind; ``--roles`` could not name them."""
    from hopgraph.optimizer.search import roles_of

    assert {"mmapg/image_target", "mmapg/image_describe"} <= set(roles_of("mmapg"))


def test_a_demonstration_is_made_only_of_an_answered_call(tmp_path):
    """A call that failed (the server gone mid-question: an ``llm_call`` with an error and no
    reply) is no demonstration; the question's answered call of that role is."""
    from pathlib import Path

    from hopgraph.optimizer.search import Optimizer, Plan

    out = tmp_path / "opt"
    boot = out / "bootstrap"
    (boot / "traces").mkdir(parents=True)
    pred = {
        "id": "q2",
        "answer": "answer-2",
        "gold": ["answer-2"],
        "question": "What about town 2?",
    }
    (boot / "predictions.jsonl").write_text(json.dumps(pred) + "\n")

    inputs = {"question": "What about town 2?", "answer": "It is answer-2."}
    failed = trace_call("rag/short_answer", None, inputs, error="connection refused")
    answered = trace_call("rag/short_answer", "answer-2", inputs)
    (boot / "traces" / "q2.jsonl").write_text(failed + answered)
    plan = Plan("rag", Path("unused.jsonl"), out, ["rag/short_answer"])
    pool = Optimizer(plan, None, None)._pool({"q2": pred}, {"q2"})
    assert [c["output"] for c in pool.calls["rag/short_answer"]] == ["answer-2"]


def test_the_proposer_reads_a_looping_role_s_last_call(tmp_path):
    """For a role called in a loop (MMAPG's planner), the proposer is shown the call that
    ended the loop, whose prompt holds every step before it, not the first step alone."""
    from pathlib import Path

    from hopgraph.optimizer.search import Optimizer, Plan, Pool

    out = tmp_path / "opt"
    boot = out / "bootstrap"
    (boot / "traces").mkdir(parents=True)
    pred = {"id": "q1", "answer": "Ruth", "gold": ["Vale"], "question": "Who founded town 1?"}
    (boot / "predictions.jsonl").write_text(json.dumps(pred) + "\n")
    steps = [f"search: founder of town 1 (try {i})" for i in range(1, 5)]

    def call(i):
        history = "\n".join(f"step {j}: {s}" for j, s in enumerate(steps[:i], 1))
        prompt = [{"role": "user", "content": f"Plan so far:\n{history}"}]
        inputs = {"question": pred["question"]}
        return trace_call("mmapg/planner", steps[i], inputs, messages=prompt)

    (boot / "traces" / "q1.jsonl").write_text("".join(call(i) for i in range(4)))
    opt = Optimizer(Plan("mmapg", Path("unused.jsonl"), out, ["mmapg/planner"]), None, None)
    opt.pool = Pool({"q1"})
    (shown,) = opt._failures("mmapg/planner", {"q1": pred})
    assert shown["reply"] == steps[3]
    assert all(f"step {j}: {s}" in shown["prompt"] for j, s in enumerate(steps[:3], 1))


def test_the_incumbent_on_validation_is_the_bootstrap_s_answers_even_with_no_cache(
    tmp_path, town_kb
):
    """A search resumed where its response cache is gone (another machine) asks no validation
    question again with the hand-written prompts: the bootstrap answered them with those
    (before: a run of the incumbent asked again those the first sitting had answered)."""
    import shutil

    train, out = questions(tmp_path, range(N)), tmp_path / "opt"
    _, val = split([f"q{i}" for i in range(N)], 0.5, 0)
    hand_written = []

    def script(body: dict) -> str:
        text = body["messages"][-1]["content"]
        changed = ("Here are worked examples", INSTRUCTION, "You improve the instructions")
        if "Full answer" in text and not any(c in text for c in changed):  # rag/short_answer
            hand_written.append(text)
        return SCRIPT(body)

    with ScriptedServer(script) as model:
        stopped = hopgraph(
            *base(train, out, town_kb, model, "--budget-tokens", "150"), cwd=tmp_path
        )
        assert stopped.returncode == 4, stopped.stderr
        first = read_predictions(out / "bootstrap" / "predictions.jsonl")
        assert len(first) < N and set(first) & set(val)  # stopped in the bootstrap
        shutil.rmtree(out / "cache")
        done = hopgraph(*base(train, out, town_kb, model), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    assert len(hand_written) == N
    record = json.loads((out / "record.json").read_text())
    boot = read_predictions(out / "bootstrap" / "predictions.jsonl")
    right = sum(boot[q]["answer"] == f"answer-{q[1:]}" for q in val) / len(val)
    scored = [c for c in record["candidates"] if not c.get("skipped")]
    assert scored and all(abs(c["incumbent_mean"] - right) < 1e-4 for c in scored)


def test_its_hours_count_a_sitting_killed_before_the_record_was_written(tmp_path, town_kb):
    """The record's time is its runs' questions' own seconds and its proposals': a bootstrap
    killed (kill -9) before the first save still counts (before: only the last sitting's
    clock, so a bootstrap spread over sittings vanished from the cost)."""
    train, out = questions(tmp_path, range(N)), tmp_path / "opt"
    six = threading.Event()
    asked = []

    def slow(body: dict) -> str:
        if "Full answer" in body["messages"][-1]["content"]:
            asked.append(1)
            if len(asked) >= 6:
                six.set()
        return SCRIPT(body)

    with ScriptedServer(slow, delay=1.0) as model:
        proc = started(*base(train, out, town_kb, model), cwd=tmp_path)
        assert six.wait(120)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert not (out / "record.json").exists()
    first = read_predictions(out / "bootstrap" / "predictions.jsonl")
    killed = sum(p["seconds"] for p in first.values())
    assert len(first) >= 5 and killed >= 10  # two calls of a second each a question
    with ScriptedServer(SCRIPT) as model:
        done = hopgraph(*base(train, out, town_kb, model), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    record = json.loads((out / "record.json").read_text())
    boot = read_predictions(out / "bootstrap" / "predictions.jsonl").values()
    runs = sum(c["seconds"] for c in record["candidates"])
    assert record["seconds"] == round(sum(p["seconds"] for p in boot) + runs, 1)
    assert record["seconds"] >= killed


def test_a_demonstration_set_is_cut_to_what_fits_the_context_window(tmp_path):
    """On the embedded model, demonstrations are dropped, largest first, until they fit its
    window beside the role's longest prompt and a reply (two of QD-C's, with 10 passages
    each, overflowed 4096 tokens); where not one fits, the candidate is skipped. A served
    endpoint's window is unknown here: its set is kept whole."""
    from pathlib import Path

    from hopgraph.config import Context
    from hopgraph.optimizer.search import Candidate, Optimizer, Plan

    out = tmp_path / "opt"
    (out / "bootstrap" / "traces").mkdir(parents=True)
    sizes = {"q1": 900, "q2": 1200, "q3": 1500, "q4": 1800}  # q4 answered wrong
    boot = {
        q: {"id": q, "answer": "right" if q != "q4" else "wrong", "gold": ["right"]} for q in sizes
    }
    (out / "bootstrap" / "predictions.jsonl").write_text(
        "".join(json.dumps(p) + "\n" for p in boot.values())
    )
    for q, n in sizes.items():
        inputs = {"question": q, "answer": "right"}
        line = trace_call("rag/short_answer", "right", inputs, prompt_tokens=n, completion_tokens=4)
        (out / "bootstrap" / "traces" / f"{q}.jsonl").write_text(line)
    plan = Plan("rag", Path("unused.jsonl"), out, ["rag/short_answer"], demos=3)

    def demos(ctx):
        opt = Optimizer(plan, ctx, None)
        opt.pool = opt._pool(boot, set(sizes))
        hand = Candidate("hand-written", "", "", {}, {})
        return opt._make("01-demos", "rag/short_answer", "demos", 0, hand, boot, 1)

    # 4096 - 512 - 1800 = 1784 tokens of room: one demonstration, the smallest of the drawn
    (kept,) = demos(Context(n_ctx=4096, max_tokens=512)).demos["rag/short_answer"]
    assert kept == "q1"
    squeezed = demos(Context(n_ctx=3000, max_tokens=512))
    assert (
        squeezed.skipped.startswith("no demonstration fits")
        and not squeezed.demos["rag/short_answer"]
    )
    served = demos(Context(n_ctx=4096, max_tokens=512, base_url="http://127.0.0.1:9/v1"))
    assert served.demos["rag/short_answer"] == ["q1", "q2", "q3"]


def test_its_cost_is_read_from_its_run_folders_alone(tmp_path):
    """Tokens and seconds come from the prediction lines themselves: a run folder whose
    question file has moved still counts (before: each save joined every line to its
    question file and raised without it)."""
    from hopgraph.optimizer.record import SearchRecord
    from hopgraph.optimizer.search import Plan

    train, out = questions(tmp_path, range(4)), tmp_path / "opt"
    boot = out / "bootstrap"
    boot.mkdir(parents=True)
    gone = tmp_path / "moved.jsonl"
    (boot / "manifest.json").write_text(
        json.dumps({"questions": str(gone), "questions_sha256": "0" * 64})
    )
    line = {"prompt_tokens": 1000, "completion_tokens": 100, "seconds": 2.5}
    (boot / "predictions.jsonl").write_text(
        "".join(json.dumps({"id": f"q{i}", "answer": "x", **line}) + "\n" for i in range(4))
    )
    book = SearchRecord(Plan("rag", train, out, []), on_save=print)
    assert book.spent()["tokens"] == 4 * 1100
    assert book.seconds() == 10.0


def test_a_validation_run_under_way_counts_in_both_tokens_and_hours(tmp_path):
    """A candidate stopped inside its validation run holds no cost of its own yet: its
    folder's questions count in the record's hours as in its tokens (before: in its tokens
    only, so RESULTS.md's hours left out MMAPG's first candidate's answered questions)."""
    from hopgraph.optimizer.record import SearchRecord
    from hopgraph.optimizer.search import Plan

    train, out = questions(tmp_path, range(4)), tmp_path / "opt"
    line = {"prompt_tokens": 1000, "completion_tokens": 100, "seconds": 2.5}
    for run, n in (("bootstrap", 4), ("candidates/01-rag.short_answer-demos", 2)):
        (out / run).mkdir(parents=True)
        (out / run / "predictions.jsonl").write_text(
            "".join(json.dumps({"id": f"q{i}", "answer": "x", **line}) + "\n" for i in range(n))
        )
    book = SearchRecord(Plan("rag", train, out, []), on_save=print)
    book.data["candidates"] = [
        {
            "id": "01-rag.short_answer-demos",
            "scores": {},
            "skipped": "",
            "sent": [0, 0],
            "seconds": 0.0,
        }
    ]
    assert book.spent()["tokens"] == 6 * 1100
    assert book.seconds() == 15.0


def test_a_candidate_whose_validation_run_is_under_way_is_not_shown_as_scored():
    """Stopped inside a candidate's validation run, the record holds it unscored; RESULTS.md
    showed it as a 0.000-to-0.000 tie that lost (MMAPG's first candidate did)."""
    from hopgraph.optimizer.search import render

    candidate = {
        "id": "01-mmapg.planner-demos",
        "role": "mmapg/planner",
        "kind": "demos",
        "scores": {},
        "better": 0,
        "worse": 0,
        "p": 1.0,
        "mean": 0.0,
        "incumbent_mean": 0.0,
        "won": False,
        "tokens": 0,
        "seconds": 0.0,
        "skipped": "",
    }
    record = {"roles": ["mmapg/planner"], "metric": "f1", "alpha": 0.1, "candidates": [candidate]}
    (row,) = [line for line in render([record]) if line.startswith("| 01-")]
    assert "under way" in row and "0.000" not in row and "| no |" not in row


def planner_reply(kind: str) -> str:
    return json.dumps({"analysis": "", "type": kind, "parents": ["Q0"], "instruction": ""})


def test_a_looped_role_s_demonstrations_can_show_the_step_that_ended_its_loop(tmp_path):
    """MMAPG's planner is called in a loop; each question's first call used to be its only
    demonstration, and a first step is never a Stop (on the planner search's 40 pool
    questions, 0 of its 6 candidates were, though 2 of the right answers ended by one). Every
    call is a candidate now, and a set covers the choices the replies made, rarest first."""
    from pathlib import Path

    from hopgraph.config import Context
    from hopgraph.optimizer.search import Candidate, Optimizer, Plan

    out = tmp_path / "opt"
    (out / "bootstrap" / "traces").mkdir(parents=True)
    steps = {
        "q1": ["retrieval", "retrieval", "answer"],
        "q2": ["retrieval", "retrieval", "stop"],
        "q3": ["retrieval", "answer"],
        "q4": ["retrieval", "stop"],
    }
    boot = {
        q: {"id": q, "answer": "Vale" if q != "q4" else "Ruth", "gold": ["Vale"]} for q in steps
    }
    for q, kinds in steps.items():
        inputs = {
            "question": f"Who founded town {q}?",
            "plan": "1. Find the founder.",
            "nodes": [],
            "single_path": False,
            "repeated": None,
        }
        calls = "".join(trace_call("mmapg/planner", planner_reply(k), inputs) for k in kinds)
        (out / "bootstrap" / "traces" / f"{q}.jsonl").write_text(calls)
    plan = Plan("mmapg", Path("unused.jsonl"), out, ["mmapg/planner"], demos=2)
    opt = Optimizer(plan, Context(base_url="http://127.0.0.1:9/v1"), None)
    opt.pool = opt._pool(boot, set(steps))
    calls = opt.pool.calls["mmapg/planner"]
    assert [c["id"] for c in calls] == ["q1", "q1#2", "q1#3", "q2", "q2#2", "q2#3", "q3", "q3#2"]
    assert [c["choice"] for c in calls if c["qid"] == "q2"] == ["retrieval", "retrieval", "stop"]
    hand = Candidate("hand-written", "", "", {}, {})
    for r in range(1, 6):  # whichever the seed draws: the one Stop (q4's was answered wrong)
        cand = opt._make(f"{r:02d}-demos", "mmapg/planner", "demos", 0, hand, boot, r)
        assert "q2#3" in cand.demos["mmapg/planner"] and len(cand.demos["mmapg/planner"]) == 2
    rows = (opt._overlay_of(cand) / "mmapg" / "planner.jsonl").read_text().splitlines()
    assert '"type": "stop"' in "".join(json.loads(row)["output"] for row in rows)


def test_a_role_whose_replies_make_one_choice_or_none_draws_at_random():
    import random

    from hopgraph.optimizer.search import draw_demos

    calls = [{"id": f"q{i}", "qid": f"q{i}", "choice": ""} for i in range(6)]
    assert draw_demos(calls, 3, random.Random(7)) == random.Random(7).sample(calls, 3)
    assert draw_demos(calls[:2], 3, random.Random(7)) == random.Random(7).sample(calls[:2], 2)


def test_a_demonstration_longer_than_its_call_s_prompt_is_measured_by_what_it_renders(tmp_path):
    """A call's inputs can hold more than its prompt showed (MMAPG's planner nodes kept their
    passages before cf36ec4): drawn from such traces, a late planner step rendered to 13,199
    tokens and every validation question overflowed the window. Its cost is its rendered text
    at its own call's characters per token, so it is cut like any demonstration too long."""
    from pathlib import Path

    from hopgraph.config import Context
    from hopgraph.optimizer.search import Candidate, Optimizer, Plan, demo_tokens

    out = tmp_path / "opt"
    (out / "bootstrap" / "traces").mkdir(parents=True)
    boot = {"q1": {"id": "q1", "answer": "right", "gold": ["right"]}}
    (out / "bootstrap" / "predictions.jsonl").write_text(json.dumps(boot["q1"]) + "\n")
    prompt = "Question: q1\nFull answer: right\nShort answer:"
    kept = {"question": "q1", "answer": "right", "passages": "Town 1 was founded by Vale. " * 600}
    line = trace_call(
        "rag/short_answer",
        "right",
        kept,
        prompt_tokens=12,
        completion_tokens=1,
        messages=[{"role": "user", "content": prompt}],
    )
    (out / "bootstrap" / "traces" / "q1.jsonl").write_text(line)
    call = json.loads(line)["data"]
    assert demo_tokens(call) > 4096 and demo_tokens({**call, "messages": []}) == 13
    opt = Optimizer(Plan("rag", Path("u.jsonl"), out, ["rag/short_answer"]), Context(), None)
    opt.pool = opt._pool(boot, {"q1"})
    cand = opt._make(
        "01-demos", "rag/short_answer", "demos", 0, Candidate("h", "", "", {}, {}), boot, 1
    )
    assert cand.skipped.startswith("no demonstration fits")


def searched(tmp_path, scores_of: dict[str, list[float]], incumbent: list[float]):
    """A one-round search folder as a committed record holds it: each candidate's per-question
    validation scores against the incumbent's, decided under the old rule (sign p < 0.1), its
    verdict linked to the hand-written arm; and its Optimizer."""
    from hopgraph.config import Context
    from hopgraph.evals.stats import paired
    from hopgraph.optimizer.search import Optimizer, Plan

    out = tmp_path / "opt"
    cands = []
    for cid, scores in scores_of.items():
        t = paired(incumbent, scores)
        ids = [f"v{i}" for i in range(len(scores))]
        cands.append(
            {
                "id": cid,
                "role": "mmapg/planner",
                "kind": cid.rsplit("-", 1)[1],
                "instructions": {},
                "demos": {"mmapg/planner": [f"{cid}-pool-q"]},
                "scores": dict(zip(ids, scores, strict=True)),
                "better": t.better,
                "worse": t.worse,
                "p": round(t.sign_p, 4),
                "mean": round(t.mean_b, 4),
                "incumbent_mean": round(t.mean_a, 4),
                "won": t.better > t.worse and t.sign_p < 0.1,
            }
        )
        overlay = out / "candidates" / cid / "overlay" / "mmapg"
        overlay.mkdir(parents=True)
        (overlay / "planner.jsonl").write_text(json.dumps({"inputs": {}, "output": cid}) + "\n")
    (out / "test" / "hand-written").mkdir(parents=True)
    record = {
        "agent": "mmapg",
        "roles": ["mmapg/planner"],
        "metric": "f1",
        "alpha": 0.1,
        "seed": 0,
        "candidates": cands,
        "incumbent": "hand-written",
        "seconds": 0.0,
        "stopped": "round 1: no candidate won",
        "overlay_changes": [],
        "splits": {"train": str(tmp_path / "train.jsonl")},
        "test": {"same_prompts": True, "n": 40},
    }
    (out / "record.json").write_text(json.dumps(record))
    return out, Optimizer(Plan("mmapg", tmp_path / "train.jsonl", out, []), Context(), None)


def test_a_candidate_better_by_mean_but_not_significant_is_kept(tmp_path):
    """MMAPG's planner demonstrations scored 0.488 against 0.330 on 20 validation questions,
    4 better and 0 worse: a sign test cannot go below p = 0.125 there, so the old rule
    (p < 0.1) threw them away. Decided anew from the record, they are kept, the sign test
    beside them as information, the stale verdict dropped and its link undone."""
    incumbent = [1.0] * 6 + [0.0] * 14  # 0.30
    demos = [1.0] * 6 + [0.8, 1.0, 0.5, 1.0] + [0.0] * 10  # 4 better, 0 worse: 0.465
    instruction = [1.0] * 6 + [0.6] + [0.0] * 13  # better by 0.03, under one question's 0.05
    scores = {"01-mmapg.planner-demos": demos, "01-mmapg.planner-instruction": instruction}
    out, opt = searched(tmp_path, scores, incumbent)
    assert opt.redecide()
    record = json.loads((out / "record.json").read_text())
    by_id = {c["id"]: c for c in record["candidates"]}
    kept = by_id["01-mmapg.planner-demos"]
    assert kept["won"] and kept["p"] == 0.125 and (kept["better"], kept["worse"]) == (4, 0)
    assert not by_id["01-mmapg.planner-instruction"]["won"]  # within the tie margin
    assert record["incumbent"] == "01-mmapg.planner-demos" and "1/n" in record["keep"]
    assert record["overlay_changes"] == ["mmapg/planner"] and "test" not in record
    assert (out / "overlay" / "mmapg" / "planner.jsonl").read_text() == (
        out / "candidates" / "01-mmapg.planner-demos" / "overlay" / "mmapg" / "planner.jsonl"
    ).read_text()
    assert not (out / "test" / "optimized").exists()  # the verdict answers the kept overlay
    assert not opt.redecide()  # decided: nothing changes a second time


def test_the_committed_searches_are_decided_anew_by_their_script(tmp_path):
    """``benchmarks/optimize_redecide.py`` (what re-decided the committed searches, and what
    ``optimize_hotpot.sh mmapg-verdict`` runs) reads a record and keeps by mean: it must
    import what it reads as the optimizer's helpers move between modules."""
    from pathlib import Path

    incumbent = [1.0] * 6 + [0.0] * 14
    demos = [1.0] * 6 + [0.8, 1.0, 0.5, 1.0] + [0.0] * 10
    out, _ = searched(tmp_path, {"01-mmapg.planner-demos": demos}, incumbent)
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "optimize_redecide.py"
    proc = started(out, script=script)
    said, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert said.startswith(f"{out}: changed, kept 01-mmapg.planner-demos")
    assert json.loads((out / "record.json").read_text())["incumbent"] == "01-mmapg.planner-demos"


def test_a_candidate_within_one_question_s_worth_is_a_tie_and_the_incumbent_stays(tmp_path):
    """One question better by a whole point on 20 is 0.05, exactly one question's worth: a
    tie, not a win; the hand-written prompts stay, and their record compares nothing."""
    incumbent = [1.0] * 6 + [0.0] * 14
    one_better = [1.0] * 7 + [0.0] * 13
    out, opt = searched(tmp_path, {"01-mmapg.planner-demos": one_better}, incumbent)
    opt.redecide()
    record = json.loads((out / "record.json").read_text())
    assert record["incumbent"] == "hand-written" and not record["candidates"][0]["won"]
    assert "no candidate won" in record["stopped"] and record["test"]["same_prompts"]
    assert not (out / "test" / "optimized").exists()


def test_a_verdict_under_way_is_read_on_the_questions_both_arms_answered():
    """With the optimized arm 15 of 40 answered, RESULTS.md compared its mean on 15 with the
    hand-written arm's on 40 ("-0.093 on the 40 test questions"): both are read on the
    questions both have answered, and the line says how many."""
    from hopgraph.optimizer.search import render

    hand = {
        "questions": 40,
        "overall": {"f1": 0.353},
        "per_question": {f"q{i}": {"f1": 1.0 if i >= 15 else 0.2} for i in range(40)},
    }
    opt = {
        "questions": 15,
        "overall": {"f1": 0.26},
        "per_question": {f"q{i}": {"f1": 0.2} for i in range(15)},
    }
    record = {
        "agent": "mmapg",
        "metric": "f1",
        "roles": ["mmapg/planner"],
        "incumbent": "c1",
        "alpha": 0.1,
        "seed": 0,
        "splits": {},
        "bootstrap_sent": [1],
        "candidates": [
            {
                "id": "c1",
                "role": "mmapg/planner",
                "kind": "demos",
                "mean": 0.5,
                "incumbent_mean": 0.3,
                "won": True,
                "better": 4,
                "worse": 0,
                "p": 0.125,
                "scores": {},
                "tokens": 1,
                "seconds": 1.0,
            }
        ],
        "spent": {"tokens": 1},
        "seconds": 1.0,
    }
    (line,) = [x for x in render([record, hand, opt]) if "gap" in x]
    assert "+0.000 on the 15 test questions both arms have answered, of 40" in line, line
    assert "(0.200 -> 0.200)" in line


GOOD_ENOUGH = "Reply with the answer alone."


def wide_script(body: dict) -> str:
    """The first proposal is the losing instruction; every later one (sampled, with a tip) an
    instruction that changes no answer, so it ties the incumbent."""
    if body.get("_template") == "optimize/propose":
        later = (body.get("temperature") or 0) > 0
        return json.dumps(
            {"reasoning": "it guessed", "instruction": GOOD_ENOUGH if later else INSTRUCTION}
        )
    return SCRIPT(body)


def wide(train, out, kb, model, *extra):
    return [
        *base(train, out, kb, model),
        "--candidates",
        "4",
        "--minibatch",
        "4",
        "--demos",
        "2",
        *extra,
    ]


def test_a_wide_search_races_candidates_and_only_the_better_half_answer_all_of_validation(
    tmp_path, town_kb
):
    """Four candidates per role (two demonstration draws, two proposals) and their joint each
    answer a minibatch of 4 validation questions first; the losing instruction (below the
    incumbent there) and the tie (outside the better half) never answer the rest, each saying
    why; the demonstrations win on the whole validation. The second proposal was sampled,
    with a tip, on another sample of failures."""
    from hopgraph.optimizer.search import TIPS

    train, out = questions(tmp_path, range(N)), tmp_path / "opt"
    with ScriptedServer(wide_script) as model:
        done = hopgraph(*wide(train, out, town_kb, model), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        proposals = [
            b
            for b, _ in model.log
            if "You improve the instructions" in b["messages"][-1]["content"]
        ]
    record = json.loads((out / "record.json").read_text())
    by_id = {c["id"]: c for c in record["candidates"]}
    role = "01-rag.short_answer"
    lost, tie = by_id[f"{role}-instruction"], by_id[f"{role}-instruction2"]
    assert lost["stopped"].startswith("below the incumbent on the minibatch"), lost
    assert tie["stopped"].startswith("not among the best"), tie
    for c in (lost, tie):
        assert c["stage"] == "minibatch" and c["minibatch"]["n"] == 4 and not c["scores"]
        assert len(read_predictions(out / "candidates" / c["id"] / "predictions.jsonl")) == 4
    joint = by_id[f"{role}-joint"]
    assert joint["instructions"] == {"rag/short_answer": GOOD_ENOUGH}
    assert joint["demos"] == by_id[f"{role}-demos"]["demos"]
    validated = [c for c in record["candidates"] if c["stage"] == "validation"]
    assert {c["kind"] for c in validated} <= {"demos", "joint"} and len(validated) == 3
    assert all(len(c["scores"]) == 12 and c["won"] for c in validated)
    assert record["incumbent"] == f"{role}-demos" and "successive halving" in record["race"]
    # the second proposal: sampled, with a tip; the first: greedy, without one
    assert len(proposals) == 2
    first, second = (p["messages"][-1]["content"] for p in proposals)
    assert not proposals[0].get("temperature") and proposals[1]["temperature"] == 0.7
    assert TIPS[1] in second and TIPS[1] not in first
    assert tie["tip"] == TIPS[1] and lost["tip"] == ""
    # the console shows the table of candidates, a line per change when piped
    assert f"candidate {role}-instruction | instruction | 0.000 vs" in done.stderr


def test_kill_9_during_a_minibatch_resumes_without_asking_a_finished_question_again(
    tmp_path, town_kb
):
    """Killed while the first candidate answers its minibatch: the resume answers the rest of
    it and goes on, never sending a finished question's prompt again nor writing its line
    twice, and the candidate ends scored on its minibatch and on the whole validation."""
    train, out = questions(tmp_path, range(N)), tmp_path / "opt"
    asked: list[str] = []
    two_answered = threading.Event()

    def script(body: dict) -> str:
        text = body["messages"][-1]["content"]
        if "Here are worked examples" in text and body.get("_template") == "rag/short_answer":
            asked.append(text)
            if len(asked) >= 3:  # two of the minibatch answered, the third asked
                two_answered.set()
        return wide_script(body)

    folder = out / "candidates" / "01-rag.short_answer-demos"
    with ScriptedServer(script) as model:
        proc = started(*wide(train, out, town_kb, model), cwd=tmp_path)
        assert two_answered.wait(120)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        finished = set(read_predictions(folder / "predictions.jsonl"))
        first_sitting = list(asked)
        done = hopgraph(*wide(train, out, town_kb, model), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    assert 2 <= len(finished) < 4
    town = {q: f"Question: What about town {q[1:]}?" for q in finished}
    finished_prompts = [t for t in first_sitting if any(town[q] in t for q in finished)]
    assert len(finished_prompts) == len(finished)
    again = [t for t in asked[len(first_sitting) :] if t in finished_prompts]
    assert not again, f"asked again after the resume: {again}"
    lines = [json.loads(x)["id"] for x in (folder / "predictions.jsonl").open() if x.strip()]
    assert len(lines) == len(set(lines)) == 12
    record = json.loads((out / "record.json").read_text())
    demos = next(c for c in record["candidates"] if c["id"] == folder.name)
    assert demos["minibatch"]["n"] == 4 and demos["stage"] == "validation"


def test_halving_promotes_the_better_half_not_below_the_incumbent():
    from hopgraph.optimizer.search import Candidate, halve

    def cand(cid, mean):
        c = Candidate(cid, "r", "demos", {}, {}, stage="minibatch")
        c.minibatch = {"n": 8, "mean": mean, "incumbent_mean": 0.5, "scores": {}}
        return c

    cands = [cand("a", 0.5), cand("b", 0.75), cand("c", 0.375), cand("d", 0.625), cand("e", 0.5)]
    assert [c.id for c in halve(cands)] == ["b", "d", "a"]  # ties in schedule order
    stopped = {c.id: c.stopped for c in cands}
    assert stopped["c"].startswith("below the incumbent on the minibatch (0.375 against 0.500")
    assert stopped["e"] == "not among the best 3 of 5 on the minibatch"
    assert [c.id for c in halve([cand("x", 0.25)])] == []


def test_a_demonstration_too_long_to_fit_is_cut_to_the_passages_its_reply_used(tmp_path):
    """QD-C's decomposition carries 10 passages: a demonstration of it did not fit the 4096
    window beside the prompt. It is cut to the passages its reply cites or names, renders so
    in the overlay, and the candidate's record says which demonstration was cut."""
    from pathlib import Path

    from hopgraph.config import Context
    from hopgraph.optimizer.search import Candidate, Optimizer, Plan
    from hopgraph.prompts import DEMOS, prompts_for

    role = "qdrag/decompose_qdc"
    out = tmp_path / "opt"
    (out / "bootstrap" / "traces").mkdir(parents=True)
    filler = " ".join(["words about the place and its long history"] * 12)
    contexts = [
        {"id": f"p{i}", "title": f"Town {i}", "text": f"Town {i}: {filler}"} for i in range(1, 11)
    ]
    reply = json.dumps(
        {
            "replacements": [
                {"phrase": "the town", "name": "Town 5", "question": "Where is Town 5?"}
            ],
            "subquestions": ["Where is Town 5 [2]?"],
        }
    )
    boot = {"q1": {"id": "q1", "answer": "right", "gold": ["right"]}}
    (out / "bootstrap" / "predictions.jsonl").write_text(json.dumps(boot["q1"]) + "\n")
    line = trace_call(
        role,
        reply,
        {"question": "Where is the town?", "contexts": contexts},
        prompt_tokens=2600,
        completion_tokens=60,
    )
    (out / "bootstrap" / "traces" / "q1.jsonl").write_text(line)
    opt = Optimizer(
        Plan("qdrag", Path("unused.jsonl"), out, [role], demos=1),
        Context(n_ctx=4096, max_tokens=512),
        None,
    )
    opt.pool = opt._pool(boot, {"q1"})
    hand = Candidate("hand-written", "", "", {}, {})
    cand = opt._make("01-demos", role, "demos", 0, hand, boot, 1)
    assert not cand.skipped and cand.demos[role] == ["q1"] and cand.cut[role] == ["q1"]
    record = json.loads((out / "record.json").read_text())
    assert record["candidates"][0]["cut"] == {role: ["q1"]}
    (row,) = [json.loads(x) for x in (opt._overlay_of(cand) / f"{role}.jsonl").open()]
    assert [c["title"] for c in row["inputs"]["contexts"]] == ["Town 2", "Town 5"]
    shown = prompts_for().render(DEMOS, demos=[row], prompt="")
    assert "[1] Town 2: Town 2" in shown and "Town 7" not in shown and reply in shown
