"""A role is one declaration: its template, the variables the template is given, its reply
schema and its fallback. The JSON shape a structured role's template shows is drawn from the
schema (``{{ shape }}``, ``reply_shape``), so each template, rendered, shows exactly its schema's
fields (nested ones included); each role's declared inputs are its template's variables; a
call giving a variable its role does not declare is refused, naming it."""

import importlib
import json
import pkgutil
import re

import pytest
from jinja2 import meta
from jinja2.sandbox import SandboxedEnvironment
from pydantic import BaseModel

import hopgraph.agents
import hopgraph.optimizer
from hopgraph.agents import mmapg, qdrag
from hopgraph.agents.role import Role, reply_shape, roles_in
from hopgraph.config import Context
from hopgraph.prompts import Prompts, _Placeholder

CTX = Context(base_url="http://scripted.test/v1", model="scripted")


def roles() -> list[Role]:
    """Every role the package declares: the methods' (agents/) and the optimizer's proposer."""
    found = {}
    for package in (hopgraph.agents, hopgraph.optimizer):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            found |= {r.template: r for r in roles_in(module)}
    return list(found.values())


def fields(schema: type[BaseModel]) -> set[str]:
    """Every field name of ``schema`` and of the models its fields hold (in lists too)."""
    names = set()
    for name, field in schema.model_fields.items():
        names.add(name)
        for inner in re.findall(r"<class '([\w.]+)'>", repr(field.annotation)) + [
            getattr(a, "__qualname__", "") for a in getattr(field.annotation, "__args__", ())
        ]:
            model = _model(schema, inner)
            if model is not None:
                names |= fields(model)
    return names


def _model(schema: type[BaseModel], name: str) -> type[BaseModel] | None:
    module = importlib.import_module(schema.__module__)
    found = getattr(module, name.rsplit(".", 1)[-1], None)
    return found if isinstance(found, type) and issubclass(found, BaseModel) else None


def rendered(role: Role) -> str:
    """The role's shipped template rendered as a call renders it, with placeholder values for
    its inputs (every branch a placeholder opens) and its reply shape."""
    env = SandboxedEnvironment(undefined=_Placeholder, trim_blocks=True, lstrip_blocks=True)
    shape = {"shape": role.shape} if role.schema is not None else {}
    return env.from_string(Prompts.shipped(role.template).read_text()).render(**shape)


def shown_keys(text: str) -> set[str] | None:
    """The keys of the JSON shape a prompt shows (None where it shows none)."""
    lines = [ln for ln in text.splitlines() if '{"' in ln]
    return {k for ln in lines for k in re.findall(r'"(\w+)":', ln)} if lines else None


BY_EXAMPLES = {"mmapg/triplets"}
"""Templates that show their shape through examples in a variable: checked on the examples."""


def test_every_structured_roles_prompt_shows_the_shape_drawn_from_its_schema():
    structured = [r for r in roles() if r.schema is not None]
    assert len(structured) >= 14
    for role in structured:
        if role.template in BY_EXAMPLES:
            continue
        text = rendered(role)
        assert role.shape in text, f"{role.template} does not show {{{{ shape }}}}"
        assert shown_keys(text) == fields(role.schema), (role.template, shown_keys(text))


def test_a_field_added_to_a_schema_reaches_the_prompt_with_no_template_edited():
    class Graded(mmapg.Examination):
        confidence: bool = False

    role = Role("examiner", "mmapg/examine_text", inputs=mmapg.EXAMINE_TEXT.inputs, schema=Graded)
    text = role.render(CTX, instruction="Who founded Town 3?", title="Town 3", text="...")
    assert '{"facts": "...", "helps": true | false, "confidence": true | false}' in text


def test_reply_shape_shows_choices_lists_nested_models_and_declared_values():
    assert reply_shape(qdrag.QDCOutput) == (
        '{"replacements": [{"reference": "...", "entity": "...", "substituted": "..."}], '
        '"subquestions": ["...", "..."]}'
    )
    assert reply_shape(mmapg.Split).endswith('"image_kind": "targeted" | "descriptive" | "none"}')
    assert '"type": "..."' in reply_shape(mmapg.PlannerStep)


def test_what_a_shape_declares_is_not_sent_as_the_json_schema():
    """``Shown`` is for the prompt only: the schema in the request and in a repair prompt is
    the one the fields' types give."""
    schema = json.dumps(mmapg.PlannerStep.model_json_schema())
    assert "..." not in schema and '"enum": ["question", "retrieval", "answer", "stop"]' in schema
    assert "Ans_of_Q1" not in json.dumps(qdrag.QDRPlan.model_json_schema())


def test_each_roles_declared_inputs_are_its_templates_variables():
    env = Prompts().env
    for role in roles():
        used = meta.find_undeclared_variables(env.parse(Prompts.shipped(role.template).read_text()))
        assert set(role.inputs) == used - {"shape"}, (role.template, sorted(used))


def test_a_role_given_a_variable_it_does_not_declare_is_refused_naming_it():
    with pytest.raises(TypeError, match=r"mmapg/examine_text.*is given instructions.*instruction"):
        mmapg.EXAMINE_TEXT.render(CTX, instructions="typo", title="t", text="x")


def test_triplet_examples_have_the_triplet_schemas_shape():
    for example in mmapg.EXAMPLES:
        mmapg.TRIPLETS.schema.model_validate_json(json.dumps({"facts": example["facts"]}))


def test_a_template_showing_a_json_shape_belongs_to_a_role_with_a_schema():
    """A text role whose template asks for JSON would be parsed by hand somewhere: declare it."""
    text_roles = [r for r in roles() if r.schema is None]
    asks_json = [
        r.template for r in text_roles if shown_keys(Prompts.shipped(r.template).read_text())
    ]
    assert asks_json == []


def test_a_role_holds_the_demonstrations_its_overlay_gives_and_renders_them(tmp_path):
    demo = {
        "inputs": {
            "instruction": "Who founded Town 3?",
            "title": "Town 3",
            "text": "Ann founded Town 3.",
        },
        "output": '{"facts": "Ann founded Town 3.", "helps": true}',
    }
    (tmp_path / "mmapg").mkdir()
    (tmp_path / "mmapg" / "examine_text.jsonl").write_text(json.dumps(demo) + "\n")
    ctx = Context(base_url=CTX.base_url, model=CTX.model, prompts_dir=str(tmp_path))
    assert mmapg.EXAMINE_TEXT.demos(ctx) == [demo] and mmapg.EXAMINE_TEXT.demos(CTX) == []
    text = mmapg.EXAMINE_TEXT.render(ctx, instruction="Who built Town 4?", title="Town 4", text="")
    example, task = text.split("Now the task itself.")
    assert 'Reply: {"facts": "Ann founded Town 3.", "helps": true}' in example
    assert mmapg.EXAMINE_TEXT.shape in task and "Town 4" in task
