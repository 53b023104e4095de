import re

import pytest

from hopgraph.prompts import PromptError, Prompts, PromptSecurityError


def test_builtin_template_renders():
    text = Prompts().render("direct/answer", question="Who?")
    assert "Who?" in text


def test_user_folder_overrides_by_method_path_and_by_flat_name(tmp_path):
    (tmp_path / "direct").mkdir()
    (tmp_path / "direct" / "answer.j2").write_text("MINE {{ question }}")
    assert Prompts(tmp_path).render("direct/answer", question="q") == "MINE q"
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "system.j2").write_text("FLAT")
    assert Prompts(flat).render("direct/system") == "FLAT"
    # templates the folder does not override still come from the built-ins
    assert "Question:" in Prompts(flat).render("direct/answer", question="q")


def test_missing_variable_names_template_and_variable():
    with pytest.raises(PromptError, match=r"direct/answer.*'question'"):
        Prompts().render("direct/answer")


def test_missing_template_is_named():
    with pytest.raises(PromptError, match="nope/none"):
        Prompts().render("nope/none")


def test_invalid_template_reports_line(tmp_path):
    (tmp_path / "bad.j2").write_text("ok\n{% if %}")
    with pytest.raises(PromptError, match="line 2"):
        Prompts(tmp_path).render("x/bad")


@pytest.mark.parametrize(
    "source",
    [
        "{{ ''.__class__.__mro__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ cycler.__init__.__globals__ }}",
        "{{ q.__class__.__base__ }}",
    ],
)
def test_unsafe_template_is_refused(tmp_path, source):
    (tmp_path / "evil.j2").write_text(source)
    with pytest.raises(PromptSecurityError, match="unsafe"):
        Prompts(tmp_path).render("x/evil", q="s", cycler=object())


def test_missing_user_folder_is_an_error(tmp_path):
    with pytest.raises(PromptError, match="not found"):
        Prompts(tmp_path / "absent")


def test_used_templates_are_hashed(tmp_path):
    p = Prompts()
    p.render("direct/system")
    assert len(p.used["direct/system"]) == 64


def test_demonstrations_beside_a_template_render_first_and_are_hashed_with_it(tmp_path):
    import json

    passages = [{"title": "Town 1", "text": "Fact 1 about town 1."}]
    demo = {
        "inputs": {"question": "Where is town 1?", "contexts": passages},
        "output": "In the north [1].",
    }
    plain = Prompts(tmp_path)
    before = plain.render("rag/answer", question="Where is town 2?", contexts=passages)
    digest = plain.digest("rag/answer")
    (tmp_path / "rag").mkdir()
    (tmp_path / "rag" / "answer.jsonl").write_text(json.dumps(demo) + "\n")
    shown = Prompts(tmp_path)
    shown.check_overrides()
    text = shown.render("rag/answer", question="Where is town 2?", contexts=passages)
    assert text.startswith("Here are worked examples") and text.endswith(before)
    assert "question: Where is town 1?" in text and "[1] Town 1: Fact 1 about town 1." in text
    assert "Reply: In the north [1]." in text
    assert shown.used["rag/answer"] == shown.digest("rag/answer") != digest


def test_a_demonstration_of_graph_nodes_renders_every_field_it_holds(tmp_path):
    """A planner's inputs hold the graph's nodes (mappings with neither title nor text) and a
    mapping or None beside them; the partial failed on the first (MMAPG's planner search lost
    its first candidate's five questions to it)."""
    import json

    from hopgraph.agents.mmapg import PLANNER

    node = {
        "id": "Q0",
        "type": "question",
        "instruction": "",
        "content": "Who built town 1?",
        "parents": [],
        "calls": 1,
    }
    step = {
        "id": "R1",
        "type": "retrieval",
        "instruction": "Find who built town 1",
        "content": "Ann built town 1.",
        "parents": ["Q0"],
    }
    demo = {
        "inputs": {
            "question": "Who built town 1?",
            "plan": "1. Find the builder.",
            "nodes": [node, step],
            "single_path": False,
            "repeated": None,
        },
        "output": '{"type": "stop", "parents": ["R1"], "instruction": ""}',
    }
    (tmp_path / "mmapg").mkdir()
    (tmp_path / "mmapg" / "planner.jsonl").write_text(json.dumps(demo) + "\n")
    prompts = Prompts(tmp_path)
    prompts.check_overrides()
    told = {"type": "retrieval", "instruction": "Find it", "of": "R1", "found": "Ann"}
    text = prompts.render(
        "mmapg/planner",
        question="Who built town 2?",
        plan="1. Find it.",
        nodes=[node],
        single_path=False,
        repeated=told,
        shape=PLANNER.shape,
    )
    assert "[1] id: Q0; type: question; content: Who built town 1?; calls: 1" in text
    assert (
        "[2] id: R1; type: retrieval; instruction: Find who built town 1; content: Ann built "
        "town 1.; parents: Q0" in text
    )
    assert "single_path: False" in text and "repeated:" not in text.split("Now the task")[0]


def test_a_demonstration_the_partial_cannot_render_is_refused_before_a_run(tmp_path):
    """An overlay's own demonstrations partial that a demonstration cannot satisfy is refused
    once, naming the file and the demonstration, not by every question of the run."""
    import json

    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "demos.j2").write_text(
        "{% for d in demos %}{{ d.inputs.contexts[0].title }}: {{ d.output }}\n{% endfor %}"
        "{{ prompt }}"
    )
    (tmp_path / "rag").mkdir()
    demo = {
        "inputs": {"question": "Where is town 1?", "contexts": [{"text": "North."}]},
        "output": "North.",
    }
    (tmp_path / "rag" / "answer.jsonl").write_text(json.dumps(demo) + "\n")
    with pytest.raises(PromptError, match=r"answer\.jsonl demonstration 1 does not render"):
        Prompts(tmp_path).check_overrides()


@pytest.mark.parametrize(
    "name, line, message",
    [
        ("rag/answer.jsonl", "{not json", "line 1 is not JSON"),
        ("rag/answer.jsonl", '{"inputs": {}}', 'line 1: a demonstration is {"inputs"'),
        ("rag/nothing.jsonl", '{"inputs": {}, "output": ""}', "to no template"),
        (
            "rag/answer.jsonl",
            '{"inputs": {"gold": "x"}, "output": ""}',
            "gives gold, which rag/answer is never given",
        ),
    ],
)
def test_a_bad_demonstrations_file_is_refused_naming_it(tmp_path, name, line, message):
    (tmp_path / "rag").mkdir()
    (tmp_path / name).write_text(line + "\n")
    with pytest.raises(PromptError, match=re.escape(message)):
        Prompts(tmp_path).check_overrides()


@pytest.mark.parametrize(
    "source",
    [
        "{% include '/etc/passwd' %}",
        "{% include '../../../../../../../../etc/passwd' %}",
        "{% extends '/etc/hostname' %}",
        "{% import '../../../../../../../../etc/passwd' as x %}",
    ],
)
def test_an_overlay_reads_no_file_outside_the_template_folders(tmp_path, source):
    """An include / extends / import of a path is refused when the overlay is checked (naming
    the file and line) and again when it renders: the host's files never reach a prompt."""
    (tmp_path / "direct").mkdir()
    (tmp_path / "direct" / "answer.j2").write_text("{{ question }}\n" + source)
    with pytest.raises(PromptError, match=r"answer\.j2 line 2: .*(path|leaves)"):
        Prompts(tmp_path).check_overrides()
    with pytest.raises(PromptSecurityError) as refused:
        Prompts(tmp_path).render("direct/answer", question="q")
    assert "root:" not in str(refused.value)


def test_a_template_linked_out_of_the_overlay_is_refused(tmp_path):
    outside = tmp_path / "outside.j2"
    outside.write_text("SECRET {{ question }}")
    overlay = tmp_path / "overlay"
    (overlay / "direct").mkdir(parents=True)
    (overlay / "direct" / "answer.j2").symlink_to(outside)
    with pytest.raises(PromptError, match="lies outside the folders it may be read from"):
        Prompts(overlay).check_overrides()
    assert "SECRET" not in Prompts(overlay).render("direct/answer", question="q")


@pytest.mark.parametrize("how", ["demos linked", "folder linked", "template hard", "demos hard"])
def test_demonstrations_or_a_method_folder_from_outside_the_overlay_are_refused(tmp_path, how):
    """An overlay's demonstrations file linked to one elsewhere, or a whole method folder
    linked out of it, was read into prompts, requests and traces (the check covered ``.j2``
    files only); a hard link to a file elsewhere passes any path check and is refused by its
    link count."""
    import json
    import os

    outside = tmp_path / "outside"
    outside.mkdir()
    demo = {"inputs": {"question": "SECRET"}, "output": "SECRET"}
    (outside / "answer.jsonl").write_text(json.dumps(demo) + "\n")
    (outside / "answer.j2").write_text("SECRET {{ question }}")
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    if how == "folder linked":
        (overlay / "direct").symlink_to(outside)
    else:
        (overlay / "direct").mkdir()
        name = "answer.jsonl" if how.startswith("demos") else "answer.j2"
        if how.endswith("linked"):
            (overlay / "direct" / name).symlink_to(outside / name)
        else:
            os.link(outside / name, overlay / "direct" / name)
    with pytest.raises(PromptError, match="outside the folders|hard link"):
        Prompts(overlay).check_overrides()
    try:
        shown = Prompts(overlay).render("direct/answer", question="q")
    except PromptError:
        shown = ""
    assert "SECRET" not in shown


def test_an_overlay_may_include_its_own_and_the_shipped_templates_by_name(tmp_path):
    (tmp_path / "direct").mkdir()
    (tmp_path / "direct" / "part.j2").write_text("PART")
    (tmp_path / "direct" / "answer.j2").write_text(
        "{% include 'direct/part.j2' %} {% include 'common/yes_no.j2' ignore missing %}"
        " {{ question }}"
    )
    assert Prompts(tmp_path).render("direct/answer", question="q").startswith("PART")


def test_a_computed_or_missing_include_is_refused_before_a_run(tmp_path):
    (tmp_path / "direct").mkdir()
    (tmp_path / "direct" / "answer.j2").write_text(
        "{{ question }}{% include question %}\n{% include 'direct/nothing.j2' %}"
    )
    with pytest.raises(PromptError) as refused:
        Prompts(tmp_path).check_overrides()
    assert "line 1: a template is named by a computed value" in str(refused.value)
    assert "line 2: no template 'direct/nothing.j2'" in str(refused.value)


def test_prompts_export_refuses_a_name_that_is_a_path(tmp_path):
    with pytest.raises(PromptError, match="path, not a template name"):
        Prompts().source_path("/etc/passwd")
    with pytest.raises(PromptError, match="leaves the template folders"):
        Prompts().source_path("../../etc/passwd")
