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
