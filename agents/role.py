"""``Role``: one LLM call site. It renders its template by name, sends it to the LLM (or to the
VLM when pictures go with it), labels the call in the trace, and applies the role's declared
policy for malformed output: one repair, then the role's fallback, recorded as a ``fallback``
event. Every role in ``agents/`` is one of these, so none repeats the plumbing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from hopgraph.config import Context
from hopgraph.models import ChatModel, chat_model, question_model, system, user
from hopgraph.prompts import prompts_for

CALLER_HANDLES: Any = None
"""The fallback declared by a role whose caller handles a malformed reply itself (it gets the
``StructuredOutputError``): MMAPG's planner mends the step, triplet extraction reports the
passage and salvages what was complete."""


@dataclass(frozen=True)
class Role:
    name: str
    """The call's label in the trace (``role``)."""
    template: str
    """``<method>/<name>``, rendered from ``prompts/`` or the user's overlay."""
    system: str = ""
    """A system template sent before the user message, if the role has one."""
    schema: type[BaseModel] | None = None
    """The reply's shape for ``structured``: the JSON its template asks for
    (``tests/test_role_schemas.py`` holds each template's shape to it)."""

    def render(self, ctx: Context, **variables: Any) -> str:
        return prompts_for(ctx.prompts_dir).render(self.template, **variables)

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
        schema: type[BaseModel] | None = None,
        *,
        fallback: Any,
        pictures: Sequence[str] = (),
        max_tokens: int | None = None,
        repair: bool = True,
        **variables: Any,
    ) -> Any:
        """A reply validated by the role's ``schema``, else (after one repair) ``fallback``
        (an instance of it, or ``CALLER_HANDLES``), recorded. ``schema``: for a role declared
        without one (a method of one's own written before roles declared theirs)."""
        schema = schema or self.schema
        if schema is None:
            raise TypeError(f"role {self.name} ({self.template}) declares no reply schema")
        return self.model(ctx, pictures).structured(
            self.messages(ctx, pictures, **variables),
            schema,
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
            self.messages(ctx, pictures, **variables), role=self.name, template=self.template,
            inputs=variables,
        )  # fmt: skip
