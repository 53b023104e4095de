"""``Role``: one LLM call site, declared once as a signature (DSPy's idea): its template, the
variables the template is given, its reply schema, the fallback for a reply that stays
malformed, and (from a prompt overlay) its demonstrations. It renders the template by name with
the reply's JSON shape drawn from the schema (``reply_shape``), sends it to the LLM (or to the
VLM when pictures go with it), labels the call in the trace, and applies the declared policy
for malformed output: one repair, then the fallback, recorded as a ``fallback`` event. Every
role in ``agents/`` is one of these, so none repeats the plumbing."""

from __future__ import annotations

import json
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Any, Literal

from pydantic import BaseModel

from hopgraph.config import Context
from hopgraph.models import ChatModel, chat_model, question_model, system, user
from hopgraph.prompts import Prompts, prompts_for

CALLER_HANDLES: Any = None
"""The fallback declared by a role whose caller handles a malformed reply itself (it gets the
``StructuredOutputError``): MMAPG's planner mends the step, triplet extraction reports the
passage and salvages what was complete."""


@dataclass(frozen=True)
class Shown:
    """How a schema field's value appears in its role's reply shape where its type alone would
    say too little (``Annotated[str, Shown("<name>")]``): a JSON value, shown as written. It is
    pydantic metadata that the JSON schema sent to the endpoint does not carry."""

    value: Any


@cache
def reply_shape(schema: type[BaseModel]) -> str:
    """The one-line JSON shape a template shows for ``schema`` (its ``{{ shape }}``): each field
    in order, as its ``Shown`` value, else by type: a string ``"..."``, a boolean
    ``true | false``, a choice its options joined by ``|``, a list one item, a model its fields.
    Drawn once per schema (every structured call renders it)."""
    fields = (
        f"{json.dumps(name)}: {_shown(f.annotation, f.metadata)}"
        for name, f in schema.model_fields.items()
    )
    return "{" + ", ".join(fields) + "}"


def _shown(annotation: Any, metadata: Sequence[Any] = ()) -> str:
    hint = next((m for m in metadata if isinstance(m, Shown)), None)
    if hint is not None:
        return json.dumps(hint.value, ensure_ascii=False)
    if typing.get_origin(annotation) is typing.Annotated:
        inner, *extra = typing.get_args(annotation)
        return _shown(inner, extra)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is str:
        return '"..."'
    if annotation is bool:
        return "true | false"
    if origin is Literal:
        return " | ".join(json.dumps(a) for a in args)
    if origin is list:
        return f"[{_shown(args[0])}]"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return reply_shape(annotation)
    raise TypeError(f"reply_shape: no shape for a field of type {annotation!r}; give it Shown(...)")


DeclaredFallback = BaseModel | Callable[[Mapping[str, Any]], BaseModel] | None
"""A reply schema's instance, a function of the call's variables giving one, or
``CALLER_HANDLES``."""


@dataclass(frozen=True)
class Role:
    name: str
    """The call's label in the trace (``role``)."""
    template: str
    """``<method>/<name>``, rendered from ``prompts/`` or the user's overlay."""
    inputs: tuple[str, ...] = ()
    """The variables the template is given: a call giving any other is refused, naming it
    (``tests/test_role_schemas.py`` holds each list to its template's variables). A call's
    inputs are what its trace keeps and what a demonstration of it holds."""
    system: str = ""
    """A system template sent before the user message, if the role has one."""
    schema: type[BaseModel] | None = None
    """The reply's shape for ``structured``; its template shows it as ``{{ shape }}``
    (``reply_shape``)."""
    fallback: DeclaredFallback = CALLER_HANDLES
    """What ``structured`` gives for a reply still malformed after its repair: an instance of
    ``schema``, a function of the call's variables giving one (a reply that says nothing keeps
    what the call was given), or ``CALLER_HANDLES``."""

    @property
    def shape(self) -> str:
        """The JSON shape of the reply, from ``schema``."""
        if self.schema is None:
            raise TypeError(f"role {self.name} ({self.template}) declares no reply schema")
        return reply_shape(self.schema)

    def source(self) -> str:
        """The template the role ships, with its reply shape drawn in: what the model reads
        around the variables (shown to ``hopgraph optimize``'s proposer)."""
        text = Prompts.shipped(self.template).read_text(encoding="utf-8")
        return text.replace("{{ shape }}", self.shape) if self.schema is not None else text

    def demos(self, ctx: Context) -> list[dict[str, Any]]:
        """The demonstrations the prompt overlay holds for this role (``<template>.jsonl``)."""
        return prompts_for(ctx.prompts_dir).demos(self.template)

    def render(self, ctx: Context, **variables: Any) -> str:
        if undeclared := sorted(set(variables) - set(self.inputs)):
            raise TypeError(
                f"role {self.name} ({self.template}) is given {', '.join(undeclared)}, which it "
                f"does not declare; its inputs: {', '.join(self.inputs) or 'none'}"
            )
        shape = {"shape": self.shape} if self.schema is not None else {}
        return prompts_for(ctx.prompts_dir).render(self.template, **variables, **shape)

    def messages(self, ctx: Context, pictures: Sequence[str] = (), **variables: Any) -> list:
        head = [system(prompts_for(ctx.prompts_dir).render(self.system))] if self.system else []
        return [*head, user(self.render(ctx, **variables), list(pictures), ctx.max_image_pixels)]

    def model(self, ctx: Context, pictures: Sequence[str] = ()) -> ChatModel:
        """The LLM, or the VLM when pictures go with the call (refused where none is set)."""
        return question_model(ctx, list(pictures), self.name) if pictures else chat_model(ctx)

    def complete(
        self,
        ctx: Context,
        *,
        pictures: Sequence[str] = (),
        model: ChatModel | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        **variables: Any,
    ) -> str:
        """The reply's text. ``model``: a model the caller chose (MAB-DQA's page reader);
        ``temperature``: a sampling role's (QDARF's plans), else the model's own."""
        return (model or self.model(ctx, pictures)).complete(
            self.messages(ctx, pictures, **variables),
            role=self.name,
            template=self.template,
            max_tokens=max_tokens,
            temperature=temperature,
            inputs=variables,
        )

    def structured(
        self,
        ctx: Context,
        *,
        pictures: Sequence[str] = (),
        max_tokens: int | None = None,
        repair: bool = True,
        **variables: Any,
    ) -> Any:
        """A reply validated by the role's ``schema``, else (after one repair) its declared
        ``fallback``, recorded."""
        if self.schema is None:
            raise TypeError(f"role {self.name} ({self.template}) declares no reply schema")
        fallback = self.fallback
        if fallback is not None and not isinstance(fallback, BaseModel):
            fallback = fallback(variables)
        return self.model(ctx, pictures).structured(
            self.messages(ctx, pictures, **variables),
            self.schema,
            role=self.name,
            template=self.template,
            max_tokens=max_tokens,
            fallback=fallback,
            repair=repair,
            inputs=variables,
        )

    def p_yes(
        self,
        ctx: Context,
        *,
        pictures: Sequence[str] = (),
        model: ChatModel | None = None,
        **variables: Any,
    ) -> float:
        """P(Yes) of the rendered question, from the first token's log-probabilities."""
        return (model or self.model(ctx, pictures)).p_yes(
            self.messages(ctx, pictures, **variables),
            role=self.name,
            template=self.template,
            inputs=variables,
        )


def roles_in(module: ModuleType) -> list[Role]:
    """The roles a module declares, at its top level or in its tables (a dict of roles)."""
    found = []
    for value in vars(module).values():
        found += [
            v
            for v in (value.values() if isinstance(value, dict) else [value])
            if isinstance(v, Role)
        ]
    return found
