"""One chat interface over any OpenAI-compatible endpoint (vLLM, llama.cpp's server, OpenAI).

Backend differences live here and only here (``Dialect``): how structured output is requested,
whether images are accepted. Here are the call kinds (text, structured, P(Yes)) and what each
call reports (an ``LLMCall`` event, the response cache); how a request travels (streaming,
progress timeouts, retries, error mapping) is ``models.transport``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
from PIL import Image
from pydantic import BaseModel, ValidationError

from hopgraph.models.errors import (
    CapabilityError,
    EmbeddedServerError,
    EndpointError,
    HopgraphModelError,
    ModelNotServedError,
    StructuredOutputError,
)
from hopgraph.models.events import EmptyReply, EventSink, Fallback, LLMCall, LLMRequest, emit
from hopgraph.models.images import image_part
from hopgraph.models.response_cache import ResponseCache, request_key
from hopgraph.models.transport import Transport, served_times
from hopgraph.prompts import prompts_for
from hopgraph.redaction import redacted

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)
Message = dict[str, Any]

YES_TOKENS = {"yes"}
NO_TOKENS = {"no"}
P_YES_FALLBACK = 0.5
"""P(Yes) when neither Yes nor No is among the top tokens: maximal uncertainty (logged)."""
FIRST_TOKEN_FACTOR = 10
"""A streamed request waits at most this many ``timeout``s for its first token (prefill, and
its turn on a server that answers one request at a time)."""


@dataclass(frozen=True)
class Dialect:
    """What one kind of server accepts."""

    name: str
    json_schema: bool  # response_format json_schema (else json_object + schema, llama.cpp)
    images: bool


DIALECTS = {
    "vllm": Dialect("vllm", json_schema=True, images=True),
    "openai": Dialect("openai", json_schema=True, images=True),
    "llamacpp": Dialect("llamacpp", json_schema=False, images=False),
}
OWNED_BY = {"vllm": "vllm", "me": "llamacpp", "llamacpp": "llamacpp"}
"""``/v1/models`` ``owned_by`` values that identify a server (llama-cpp-python says "me")."""


VLLM_SAMPLING = {"top_k": -1, "repetition_penalty": 1.0}
"""What we mean and vLLM would otherwise fill from the model's generation_config (its default
``--generation-config auto``; for Qwen2.5-VL top_k 1, top_p 0.001, repetition_penalty 1.05):
no top-k cut, no repetition penalty. -1 disables top-k in every vLLM version."""


def vllm_sampling(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A request's settings with every sampling field vLLM would otherwise take from the
    model's generation_config made explicit: top_p 1 and, in ``extra_body``, top_k and
    repetition_penalty (fields vLLM accepts beyond OpenAI's)."""
    out = dict(kwargs)
    out.setdefault("top_p", 1.0)
    out["extra_body"] = {**VLLM_SAMPLING, **(out.get("extra_body") or {})}
    return out


LLAMACPP_SAMPLING = {
    "top_k": 40,
    "top_p": 0.95,
    "min_p": 0.05,
    "repeat_penalty": 1.0,
    "repeat_last_n": 64,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
}
"""Every sampling field sent to a llama.cpp server, so an answer does not hang on an engine's
defaults. No repeat penalty: the two engines apply one over different windows (llama-server's
reaches into the prompt, so a penalty there bends an answer away from the passage it quotes),
and a greedy extraction wants none. Measured on the demo's rag record (2026-12-04), made by
llama-cpp-python at its default 1.1: llama-server at 1.0 gave the recorded reply for 9 of 10
calls (5 questions, prefix cache on); at 1.1 it changed 7 of 14 answers."""


def llamacpp_sampling(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A request's settings with ``LLAMACPP_SAMPLING`` filled in where the caller set none
    (fields beyond OpenAI's travel in ``extra_body``)."""
    out = dict(kwargs)
    extra = dict(out.get("extra_body") or {})
    for key, value in LLAMACPP_SAMPLING.items():
        if key in ("top_p", "presence_penalty", "frequency_penalty"):
            out.setdefault(key, value)
        else:
            extra.setdefault(key, value)
    out["extra_body"] = extra
    return out


DIALECT_SAMPLING = {"vllm": vllm_sampling, "llamacpp": llamacpp_sampling}
"""What fills in every sampling field a dialect's server would otherwise default."""


def user(
    text: str, images: Iterable[str | Path | Image.Image] = (), max_pixels: int = 0
) -> Message:
    """A user message; images become data-URL content parts (resized to ``max_pixels``). The
    images come first: calls that read the same pages then share them as a prefix, which
    vLLM's prefix cache reuses (their text differs, and follows)."""
    images = list(images)
    if not images:
        return {"role": "user", "content": text}
    kw = {"max_pixels": max_pixels} if max_pixels else {}
    return {
        "role": "user",
        "content": [*(image_part(im, **kw) for im in images), {"type": "text", "text": text}],
    }


def system(text: str) -> Message:
    return {"role": "system", "content": text}


def image_count(messages: Sequence[Message]) -> int:
    return sum(
        p.get("type") == "image_url"
        for m in messages
        if isinstance(m.get("content"), list)
        for p in m["content"]
    )


def has_images(messages: Sequence[Message]) -> bool:
    return image_count(messages) > 0


def extract_json(text: str) -> str:
    """The JSON object in a reply, tolerating code fences and prose around it."""
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    if fenced:
        text = fenced.group(1)
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if start != -1 and end > start else text.strip()


def parse_reply(schema: type[T], text: str) -> T:
    """The reply's JSON object validated by ``schema``. A raw line break or tab inside a JSON
    string (invalid JSON, yet what small models write in long text fields) is read as that
    character rather than sending the reply to repair."""
    body = extract_json(text)
    try:
        return schema.model_validate_json(body)
    except ValidationError as e:
        if not any(err["type"] == "json_invalid" for err in e.errors()):
            raise
        try:
            loose = json.loads(body, strict=False)
        except ValueError:
            raise e from None
    return schema.model_validate(loose)


def capped(text: str, cap: int) -> str:
    """``text`` whole, or its first ``cap`` characters and a marker saying how many were cut."""
    if cap <= 0 or len(text) <= cap:
        return text
    return f"{text[:cap]} [... {len(text) - cap} more characters cut (trace_text_cap {cap})]"


def _image_ref(url: str) -> str:
    """An image part as the trace names it: its media type, size and digest, not its bytes."""
    import hashlib

    head, _, data = url.partition(",")
    if not head.startswith("data:"):
        return url  # a remote URL names itself
    kind, digest = head[5:].split(";")[0], hashlib.sha256(data.encode()).hexdigest()[:16]
    return f"{kind}, {len(data) * 3 // 4} bytes, sha256:{digest}"


def traced_messages(messages: Sequence[Message], cap: int = 0) -> list[Message]:
    """The messages as a trace keeps them: text as sent (``capped``), images by reference."""
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = [
                {
                    "type": "image_url",
                    "image_url": _image_ref(p.get("image_url", {}).get("url", "")),
                }
                if p.get("type") == "image_url"
                else {**p, "text": capped(p.get("text", ""), cap)}
                for p in content
            ]
        elif isinstance(content, str):
            content = capped(content, cap)
        out.append({**m, "content": content})
    return out


def counted_usage(call: LLMCall, resp: Any) -> None:
    """The tokens a reply's ``usage`` says were read and written, onto its call (none where
    the server sends no usage)."""
    if resp.usage is not None:
        call.prompt_tokens = resp.usage.prompt_tokens or 0
        call.completion_tokens = resp.usage.completion_tokens or 0


class ChatModel:
    """A model served at an OpenAI-compatible ``base_url``."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "EMPTY",
        backend: str = "auto",
        timeout: float = 120.0,
        max_retries: int = 2,
        temperature: float = 0.0,
        max_tokens: int = 512,
        max_image_pixels: int = 1024 * 28 * 28,
        prompts_dir: str = "",
        on_event: EventSink | None = None,
        http_client: httpx.Client | None = None,
        stream: bool = False,
        count_prompt_tokens: Callable[[Sequence[Message]], int] | None = None,
        context_window: int = 0,
        cache: ResponseCache | None = None,
        trace_cap: int = 0,
        server: Any = None,
    ):
        self.server = server
        """The embedded server behind ``base_url`` (``models.embedded``), where hopgraph runs
        it: a call that cannot reach it says whether it died, and how."""
        self.base_url = base_url.rstrip("/")
        self.shown_url = redacted(self.base_url)  # what a message names: no credential
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_image_pixels = max_image_pixels
        self.prompts = prompts_for(prompts_dir)
        self.on_event = on_event
        if backend != "auto" and backend not in DIALECTS:
            raise ValueError(f"unknown backend {backend!r}; one of auto, {', '.join(DIALECTS)}")
        self._backend = backend
        self._checked = False
        self._lock = threading.Lock()
        self.cache = cache
        """Greedy replies read back by request (``models.response_cache``), when set."""
        self.trace_cap = trace_cap
        """Characters of each traced message and reply (0: whole; -1: none kept)."""
        self.transport = Transport(
            self.base_url,
            model,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            http_client=http_client,
            stream=stream,
            count_prompt_tokens=count_prompt_tokens,
            context_window=context_window,
        )

    def __repr__(self) -> str:
        return f"ChatModel({self.model!r} at {self.shown_url})"

    # -- endpoint discovery ---------------------------------------------------------------
    def served_models(self) -> list[dict[str, Any]]:
        """``/v1/models`` of the endpoint, as dicts (id, owned_by...)."""
        return self.transport.served_models()

    @property
    def stream(self) -> bool:
        """Whether replies are streamed (the embedded server) and judged by progress."""
        return self.transport.stream

    def check(self) -> None:
        """Verify once that the endpoint answers and serves ``self.model``; detect the backend."""
        if self._checked:
            return
        with self._lock:
            if self._checked:
                return
            served = self.served_models()
            ids = [m["id"] for m in served]
            if self.model not in ids:
                raise ModelNotServedError(
                    f"model {self.model!r} is not served at {self.shown_url}; "
                    f"served: {', '.join(ids) or 'none'}"
                )
            if self._backend == "auto":
                owner = next(m.get("owned_by", "") for m in served if m["id"] == self.model)
                self._backend = OWNED_BY.get(owner, "openai")
            self._checked = True

    @property
    def dialect(self) -> Dialect:
        self.check()
        return DIALECTS[self._backend]

    # -- calls ----------------------------------------------------------------------------
    def complete(
        self,
        messages: Sequence[Message],
        *,
        role: str,
        template: str = "",
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: list[str] | None = None,
        inputs: dict[str, Any] | None = None,
    ) -> str:
        """Plain text reply. ``inputs``: the variables the prompt was rendered from, kept in the
        trace (a demonstration is made of them and the reply)."""
        to_api: dict[str, Any] = {"stop": stop} if stop else {}
        resp = self.request(
            messages,
            role=role,
            template=template,
            kind="text",
            extra=traced_inputs(inputs),
            max_tokens=max_tokens or self.max_tokens,
            temperature=self.temperature if temperature is None else temperature,
            **to_api,
        )
        text = resp.choices[0].message.content or ""
        if not text.strip():  # not re-sent (temperature 0 says the same), but counted
            log.warning("%s: %s gave an empty reply", role, self.model)
            emit(EmptyReply(role, template), self.on_event)
        return text

    def structured(
        self,
        messages: Sequence[Message],
        schema: type[T],
        *,
        role: str,
        template: str = "",
        max_tokens: int | None = None,
        fallback: T | None = None,
        repair: bool = True,
        inputs: dict[str, Any] | None = None,
    ) -> T:
        """A reply validated by ``schema``; one repair attempt, then the role's declared
        ``fallback`` (recorded as a ``fallback`` event, so no malformed reply fails a
        question), or ``StructuredOutputError`` where the role declares none. ``repair``
        False: no repair request (a role whose long replies a re-ask would only cut again)."""
        json_schema = schema.model_json_schema()
        if self.dialect.json_schema:
            fmt = {
                "type": "json_schema",
                "json_schema": {"name": schema.__name__, "schema": json_schema},
            }
        else:  # llama.cpp: grammar-constrained json_object
            fmt = {"type": "json_object", "schema": json_schema}
        convo = list(messages)
        raw = ""
        budget = max_tokens or self.max_tokens
        for attempt in (1, 2) if repair else (1,):
            resp = self.request(
                convo,
                role=role,
                template=template,
                kind="structured",
                max_tokens=budget,
                temperature=self.temperature,
                response_format=fmt,
                extra={"repair": attempt == 2, **traced_inputs(inputs)},
                parse=lambda r: parse_reply(schema, r.choices[0].message.content or "").model_dump(
                    mode="json"
                ),
            )
            raw = resp.choices[0].message.content or ""
            try:
                return parse_reply(schema, raw)
            except (ValidationError, ValueError) as e:
                error = _short_error(e)
            if resp.choices[0].finish_reason == "length":
                # cut at max_tokens (vLLM's xgrammar may spend them on whitespace): the same
                # budget would cut the repair too, so it gets twice the room
                error = f"the reply was cut at {budget} tokens before it ended; {error}"
                budget *= 2
            if attempt == 1 and repair:
                log.info("structured reply for %s did not validate (%s); repairing", role, error)
                ask = self.prompts.render(
                    "common/repair_json", error=error, schema=json.dumps(json_schema)
                )
                convo = [*convo, {"role": "assistant", "content": raw}, user(ask)]
        failure = StructuredOutputError(
            f"{role}: reply from {self.model} does not match {schema.__name__} "
            + ("after one repair" if repair else "(no repair asked)")
            + f": {error}",
            raw=raw,
        )
        if fallback is None:
            raise failure
        emit(
            Fallback(role, str(failure)[:300], fallback.model_dump(), template, raw[:300]),
            self.on_event,
        )
        return fallback

    def p_yes(
        self,
        messages: Sequence[Message],
        *,
        role: str,
        template: str = "",
        inputs: dict[str, Any] | None = None,
    ) -> float:
        """P(Yes) from the first token's top_logprobs: Σp(yes) / (Σp(yes) + Σp(no))."""
        resp = self.request(
            messages,
            role=role,
            template=template,
            kind="p_yes",
            extra=traced_inputs(inputs),
            max_tokens=1,
            temperature=0.0,
            logprobs=True,
            top_logprobs=20,
            parse=p_yes_read,
        )
        p, found = p_yes_from_response(resp)
        if not found:
            log.warning(
                "%s: no Yes/No among the top tokens from %s; P(Yes) falls back to %.1f",
                role,
                self.model,
                P_YES_FALLBACK,
            )
            emit(Fallback(role, "no Yes/No among the top tokens", p, template), self.on_event)
        return p

    def request(
        self,
        messages: Sequence[Message],
        *,
        role: str,
        template: str,
        kind: str,
        check_images: bool = True,
        extra: dict[str, Any] | None = None,
        parse: Callable[[Any], Any] | None = None,
        **kwargs: Any,
    ):
        """One chat completion with bounded retries, reported as an ``llm_call`` event that
        keeps what was sent and replied (``LLMCall``) and, with ``parse``, what the caller reads
        from the reply; extra keyword arguments go to the API as they are (logprobs,
        response_format...)."""
        self._ready()
        if check_images and has_images(messages) and not self.dialect.images:
            raise CapabilityError(
                f"{self.shown_url} ({self.dialect.name}) does not accept image input; "
                "point vlm_base_url/vlm_model at a vision-language model (e.g. vLLM Qwen2.5-VL)"
            )
        kwargs = DIALECT_SAMPLING.get(self.dialect.name, dict)(kwargs)
        extra = dict(extra or {})
        if self.trace_cap < 0:  # content tracing off: no prompt variables either
            extra.pop("inputs", None)
        if pictures := image_count(messages):
            extra["images"] = pictures  # the trace shows which calls saw a picture
        sent = {k: v for k, v in kwargs.items() if k != "extra_body"} | (
            kwargs.get("extra_body") or {}
        )  # as the wire carries them: the client merges extra_body into the body
        content = {
            "messages": traced_messages(messages, self.trace_cap) if self.trace_cap >= 0 else [],
            "sampling": json.loads(json.dumps(sent, default=str)),
        }
        full = request_key(self.model, messages, kwargs)
        extra["request"] = full[:16]  # a resumed question's replayed calls are known by it
        key = ""
        if self.cache is not None and self.cache.cacheable(kwargs):
            key = full
            if (hit := self.cache.get(key)) is not None:
                call = LLMCall(
                    role=role,
                    template=template,
                    model=self.model,
                    kind=kind,
                    extra=extra | {"cached": True},
                    **content,
                )
                return self._replayed(call, hit, parse)
        call = LLMCall(
            role=role, template=template, model=self.model, kind=kind, extra=extra, **content
        )
        # servers ignore these; server logs and scripted test servers read which role asked
        headers = {"X-Hopgraph-Role": role, "X-Hopgraph-Template": template}
        emit(LLMRequest(role, template, extra["request"]))  # to the trace only, not the caller
        call.started = round(time.time(), 4)
        start = time.perf_counter()
        try:
            resp, call.attempts = self.transport.chat(messages, kwargs, headers)
        except HopgraphModelError as e:
            call.error = getattr(e, "call_error", str(e))
            call.attempts = getattr(e, "attempts", 1)
            self._dead_server(e)
            raise
        finally:
            call.latency_s = time.perf_counter() - start
            if call.error is not None:
                emit(call, self.on_event)
        counted_usage(call, resp)
        if served := served_times(resp):  # the waterfall's wait before the server began it
            call.extra["served"] = served
        if key and self.cache is not None:
            self.cache.put(key, self.model, resp)
        self._read(call, resp, parse)
        emit(call, self.on_event)
        return resp

    def _replayed(self, call: LLMCall, hit: Any, parse: Callable[[Any], Any] | None) -> Any:
        """A cached reply, reported as the call it replays (no latency; ``cached`` in extra)."""
        call.started, call.latency_s = round(time.time(), 4), 0.0
        counted_usage(call, hit)
        self._read(call, hit, parse)
        emit(call, self.on_event)
        return hit

    def _ready(self) -> None:
        """``check``, with a dead embedded server named as such."""
        try:
            self.check()
        except EndpointError as e:
            self._dead_server(e)
            raise

    def _dead_server(self, e: Exception) -> None:
        """Where the embedded server behind this model has died, an error saying so (its exit,
        its log's last lines) in place of a bare connection failure."""
        note = self.server.exit_note() if self.server is not None else ""
        if note and isinstance(e, EndpointError):
            raise EmbeddedServerError(f"{note}\n(the call to {self.shown_url} failed: {e})") from e

    def _read(self, call: LLMCall, resp: Any, parse: Callable[[Any], Any] | None) -> None:
        """The reply and what ``parse`` reads from it, into the call's event."""
        if self.trace_cap < 0:  # content tracing off
            return
        call.reply = capped(resp.choices[0].message.content or "", self.trace_cap)
        if parse is not None:
            try:
                call.parsed = parse(resp)
            except (ValidationError, ValueError) as e:
                call.parse_error = _short_error(e)


def traced_inputs(inputs: dict[str, Any] | None) -> dict[str, Any]:
    """A role's template variables as plain JSON for the call's ``extra.inputs`` ({} for none)."""
    if not inputs:
        return {}

    def plain(value: Any) -> Any:
        if hasattr(value, "model_dump"):
            return value.model_dump(mode="json")
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return dataclasses.asdict(value)
        return str(value)

    return {"inputs": json.loads(json.dumps(inputs, default=plain))}


def token_text(token: str) -> str:
    """A token as text: byte-level BPE's "Ġ" and SentencePiece's "▁" (a leading space, as
    some servers return them) read as spaces, then stripped."""
    return token.replace("Ġ", " ").replace("▁", " ").strip()


def token_ids_instead_of_text(resp: Any) -> bool:
    """Whether the server returned top tokens as ``token_id:N`` (vLLM's
    ``--return-tokens-as-token-ids``), which no Yes / No can be read from."""
    choice = resp.choices[0]
    content = getattr(choice.logprobs, "content", None) if choice.logprobs else None
    tops = content[0].top_logprobs if content else []
    return bool(tops) and all(t.token.startswith("token_id:") for t in tops)


def p_yes_read(resp: Any) -> dict[str, Any]:
    """What a P(Yes) call read: the probability and the top logprobs it came from."""
    p, found = p_yes_from_response(resp)
    choice = resp.choices[0]
    content = getattr(choice.logprobs, "content", None) if choice.logprobs else None
    tops = (
        [[t.token, round(t.logprob, 4)] for t in (content[0].top_logprobs or [])] if content else []
    )
    return {"p_yes": p, "yes_or_no_found": found, "top_logprobs": tops}


def p_yes_from_response(resp: Any) -> tuple[float, bool]:
    """(P(Yes), whether Yes/No appeared) from a chat completion with top_logprobs."""
    choice = resp.choices[0]
    content = getattr(choice.logprobs, "content", None) if choice.logprobs else None
    if not content:
        return P_YES_FALLBACK, False
    yes = no = 0.0
    for top in content[0].top_logprobs or []:
        token = token_text(top.token).strip(".,!:;\"'").lower()
        if token in YES_TOKENS:
            yes += math.exp(top.logprob)
        elif token in NO_TOKENS:
            no += math.exp(top.logprob)
    if yes + no == 0.0:
        return P_YES_FALLBACK, False
    return yes / (yes + no), True


def _short_error(e: Exception) -> str:
    if isinstance(e, ValidationError):
        return "; ".join(
            f"{'.'.join(str(x) for x in err['loc']) or 'reply'}: {err['msg']}"
            for err in e.errors()[:5]
        )
    return str(e)[:300]
