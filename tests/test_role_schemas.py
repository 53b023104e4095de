"""Every structured role declares its reply schema, and the JSON shape its template shows the
model names exactly that schema's fields (nested ones included): a field added to a schema and
not to its template, or the other way round, fails here before any model sees it."""

import importlib
import json
import pkgutil
import re

from pydantic import BaseModel

import hopgraph.agents
from hopgraph.agents.role import Role
from hopgraph.prompts import Prompts


def roles() -> list[Role]:
    found = {}
    for info in pkgutil.iter_modules(hopgraph.agents.__path__):
        module = importlib.import_module(f"hopgraph.agents.{info.name}")
        for value in vars(module).values():
            pairs = value.values() if isinstance(value, dict) else [value]
            for v in pairs:
                role = v[0] if isinstance(v, tuple) and v and isinstance(v[0], Role) else v
                if isinstance(role, Role):
                    found[role.template] = role
    return list(found.values())


def fields(schema: type[BaseModel]) -> set[str]:
    """Every field name of ``schema`` and of the models its fields hold (in lists too)."""
    names = set()
    for name, field in schema.model_fields.items():
        names.add(name)
        for inner in re.findall(r"<class '([\w.]+)'>", repr(field.annotation)) + [
            getattr(a, "__qualname__", "") for a in getattr(field.annotation, "__args__", ())
        ]:  # fmt: skip
            model = _model(schema, inner)
            if model is not None:
                names |= fields(model)
    return names


def _model(schema: type[BaseModel], name: str) -> type[BaseModel] | None:
    module = importlib.import_module(schema.__module__)
    found = getattr(module, name.rsplit(".", 1)[-1], None)
    return found if isinstance(found, type) and issubclass(found, BaseModel) else None


def shown_keys(template: str) -> set[str] | None:
    """The keys of the JSON shape a template shows (None where it shows its shape by
    examples passed in, as triplet extraction does)."""
    lines = [ln for ln in Prompts.shipped(template).read_text().splitlines() if '{"' in ln]
    return {k for ln in lines for k in re.findall(r'"(\w+)":', ln)} if lines else None


BY_EXAMPLES = {"mmapg/triplets"}
"""Templates that show their shape through examples in a variable: checked on the examples."""


def test_every_structured_roles_template_shows_its_schemas_fields():
    structured = [r for r in roles() if r.schema is not None]
    assert len(structured) >= 13
    for role in structured:
        if role.template in BY_EXAMPLES:
            continue
        keys = shown_keys(role.template)
        assert keys is not None, f"{role.template} shows no JSON shape for {role.schema.__name__}"
        assert keys == fields(role.schema), (role.template, keys, fields(role.schema))


def test_triplet_examples_have_the_triplet_schemas_shape():
    from hopgraph.agents.mmapg import EXAMPLES, TRIPLETS

    for example in EXAMPLES:
        TRIPLETS.schema.model_validate_json(json.dumps({"facts": example["facts"]}))


def test_a_template_showing_a_json_shape_belongs_to_a_role_with_a_schema():
    """A text role whose template asks for JSON would be parsed by hand somewhere: declare it."""
    text_roles = [r for r in roles() if r.schema is None]
    asks_json = [r.template for r in text_roles if shown_keys(r.template)]
    assert asks_json == []
