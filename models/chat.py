"""One chat interface over any OpenAI-compatible endpoint (vLLM, llama.cpp's server, OpenAI).

Backend differences live here and only here (``Dialect``): how structured output is requested,
whether images are accepted. Every call reports an ``LLMCall`` event. Retries are bounded
(tenacity) and only on connection errors, timeouts and 5xx; the openai client's own retries are off.

Against the embedded server (``stream=True``) a request is judged by progress, not by one
wall-clock limit: the reply is streamed, the server's keep-alive pings carry a long prefill or a
wait in its queue, and the request fails only when nothing arrives for ``timeout`` seconds, when
no token follows the last one for ``timeout`` seconds, or when the first token takes more than
``FIRST_TOKEN_FACTOR × timeout``. A timed-out request is never re-sent there: the server would
still be working on it, and a retry would queue behind it.
"""

from __future__ import annotations

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
import openai
from openai.types.chat import ChatCompletion
from PIL import Image
from pydantic import BaseModel, ValidationError
from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from hopgraph.models.errors import (
    CapabilityError,
    EndpointError,
    ModelNotServedError,
    StructuredOutputError,
)
from hopgraph.models.events import EmptyReply, EventSink, Fallback, LLMCall, emit
from hopgraph.models.images import image_part
from hopgraph.models.response_cache import ResponseCache, request_key
from hopgraph.prompts import prompts_for

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


_IMAGE_REJECTED = re.compile(r"image|aspect ratio|must be larger than factor|height|width", re.I)


def _transient(exc: BaseException) -> bool:
    """Worth sending again: a connection error, a timeout, a 5xx, except a 5xx that refuses
    the request's image (Qwen2.5-VL's processor answers a tiny or extreme image with HTTP 500,
    and it will refuse it again)."""
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    return (
        isinstance(exc, openai.APIStatusError)
        and exc.status_code >= 500
        and not _IMAGE_REJECTED.search(str(exc.message))
    )


class _NoProgress(openai.APITimeoutError):
    """A streamed request that stopped making progress; the message says how."""

    def __init__(self, request: httpx.Request, message: str):
        openai.APIConnectionError.__init__(self, message=message, request=request)


class _Malformed(openai.APIConnectionError):
    """A reply body that is not the JSON it should be (cut short on the way): re-sent."""


def _transient_unless_timeout(exc: BaseException) -> bool:
    return _transient(exc) and not isinstance(exc, openai.APITimeoutError)


def extract_json(text: str) -> str:
    """The JSON object in a reply, tolerating code fences and prose around it."""
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    if fenced:
        text = fenced.group(1)
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if start != -1 and end > start else text.strip()


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
        cache: ResponseCache | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_image_pixels = max_image_pixels
        self.max_retries = max(0, max_retries)
        self.timeout = timeout
        self.prompts = prompts_for(prompts_dir)
        self.on_event = on_event
        if backend != "auto" and backend not in DIALECTS:
            raise ValueError(f"unknown backend {backend!r}; one of auto, {', '.join(DIALECTS)}")
        self._backend = backend
        self._checked = False
        self._lock = threading.Lock()
        self.stream = stream
        self.count_prompt_tokens = count_prompt_tokens
        """A streamed reply carries no usage; the embedded server's tokenizer counts it."""
        self.cache = cache
        """Greedy replies read back by request (``models.response_cache``), when set."""
        self._http = http_client or httpx.Client(timeout=httpx.Timeout(timeout, connect=5.0))
        self.client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key or "EMPTY",
            max_retries=0,
            timeout=httpx.Timeout(timeout, connect=5.0),
            http_client=http_client,
        )

    def __repr__(self) -> str:
        return f"ChatModel({self.model!r} at {self.base_url})"

    # -- endpoint discovery ---------------------------------------------------------------
    def served_models(self) -> list[dict[str, Any]]:
        """``/v1/models`` of the endpoint, as dicts (id, owned_by...)."""
        try:
            page = self._retry(lambda: self.client.models.list())
        except openai.APIConnectionError as e:
            raise EndpointError(f"cannot reach model endpoint {self.base_url}: {e}") from e
        except openai.APIStatusError as e:
            raise EndpointError(
                f"model endpoint {self.base_url} answered {e.status_code} to /models"
            ) from e
        return [m.model_dump() for m in page.data]

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
                    f"model {self.model!r} is not served at {self.base_url}; "
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
    ) -> str:
        """Plain text reply."""
        resp = self.request(
            messages,
            role=role,
            template=template,
            kind="text",
            max_tokens=max_tokens or self.max_tokens,
            temperature=self.temperature if temperature is None else temperature,
            **({"stop": stop} if stop else {}),
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
                extra={"repair": attempt == 2},
            )
            raw = resp.choices[0].message.content or ""
            try:
                return schema.model_validate_json(extract_json(raw))
            except (ValidationError, ValueError) as e:
                error = _short_error(e)
            if resp.choices[0].finish_reason == "length":
                # cut at max_tokens (vLLM's xgrammar may spend them on whitespace): the same
                # budget would cut the repair too, so it gets twice the room
                error = f"the reply was cut at {budget} tokens before it ended; {error}"
                budget *= 2
            if attempt == 1 and repair:
                log.info("structured reply for %s did not validate (%s); repairing", role, error)
                repair = self.prompts.render(
                    "common/repair_json", error=error, schema=json.dumps(json_schema)
                )
                convo = [*convo, {"role": "assistant", "content": raw}, user(repair)]
        failure = StructuredOutputError(
            f"{role}: reply from {self.model} does not match {schema.__name__} after one "
            f"repair: {error}",
            raw=raw,
        )
        if fallback is None:
            raise failure
        emit(
            Fallback(role, str(failure)[:300], fallback.model_dump(), template, raw[:300]),
            self.on_event,
        )
        return fallback

    def p_yes(self, messages: Sequence[Message], *, role: str, template: str = "") -> float:
        """P(Yes) from the first token's top_logprobs: Σp(yes) / (Σp(yes) + Σp(no))."""
        resp = self.request(
            messages,
            role=role,
            template=template,
            kind="p_yes",
            max_tokens=1,
            temperature=0.0,
            logprobs=True,
            top_logprobs=20,
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

    # -- plumbing ---------------------------------------------------------------------------
    def _retry(self, fn, *, timeouts: bool = True):
        """``fn`` sent again up to ``max_retries`` times (so 1 + max_retries attempts) on a
        transient failure; ``timeouts`` False: a timed-out request is not sent again."""
        retrying = Retrying(
            stop=stop_after_attempt(1 + self.max_retries),
            wait=wait_exponential(multiplier=0.5, max=4),
            retry=retry_if_exception(_transient if timeouts else _transient_unless_timeout),
            reraise=True,
        )
        return retrying(fn)

    def _streamed(
        self, messages: Sequence[Message], kwargs: dict[str, Any], headers: dict[str, str]
    ) -> ChatCompletion:
        """One streamed chat completion, judged by progress (module docstring), assembled into
        the ``ChatCompletion`` a plain request returns."""
        body = {"model": self.model, "messages": list(messages), "stream": True, **kwargs}
        url = f"{self.base_url}/chat/completions"
        began = time.monotonic()
        last_token: float | None = None
        text: list[str] = []
        logprobs: list[dict[str, Any]] = []
        finish, tokens, cid, done = "stop", 0, "stream", False
        try:
            with self._http.stream("POST", url, json=body, headers=headers) as r:
                if r.status_code >= 400:
                    r.read()
                    raise _status_error(r)
                for line in r.iter_lines():
                    now = time.monotonic()
                    if last_token is None and now - began > self.timeout * FIRST_TOKEN_FACTOR:
                        raise _NoProgress(
                            r.request, f"no first token after {now - began:.0f}s (limit "
                            f"{FIRST_TOKEN_FACTOR} x request_timeout {self.timeout:.0f}s)"
                        )  # fmt: skip
                    if last_token is not None and now - last_token > self.timeout:
                        raise _NoProgress(
                            r.request, f"no token for {now - last_token:.0f}s after {tokens} "
                            f"(request_timeout {self.timeout:.0f}s)"
                        )  # fmt: skip
                    if not line.startswith("data:"):
                        continue  # keep-alive ping (an SSE comment) or blank separator
                    data = line[5:].strip()
                    if data == "[DONE]":
                        done = True
                        break
                    chunk = json.loads(data)
                    if "error" in chunk:
                        raise openai.InternalServerError(
                            str(chunk["error"]), response=r, body=chunk["error"]
                        )
                    cid = chunk.get("id", cid)
                    choice = (chunk.get("choices") or [{}])[0]
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        text.append(piece)
                        tokens += 1
                        last_token = now
                    logprobs += ((choice.get("logprobs") or {}).get("content")) or []
                    finish = choice.get("finish_reason") or finish
            if not done:  # the server failed mid-reply (llama.cpp just closes the stream)
                raise openai.APIConnectionError(
                    message=f"the reply stream ended before [DONE], after {tokens} token(s)",
                    request=r.request,
                )
        except httpx.TimeoutException as e:
            raise _NoProgress(
                e.request, f"nothing from the server for {self.timeout:.0f}s (request_timeout)"
            ) from e
        except json.JSONDecodeError as e:
            raise _Malformed(message=str(e), request=httpx.Request("POST", url)) from e
        except httpx.TransportError as e:
            request = getattr(e, "request", None) or httpx.Request("POST", url)
            raise openai.APIConnectionError(message=str(e), request=request) from e
        prompt = self.count_prompt_tokens(messages) if self.count_prompt_tokens else 0
        return ChatCompletion.model_validate(
            {
                "id": cid,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": self.model,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": finish,
                        "message": {"role": "assistant", "content": "".join(text)},
                        "logprobs": {"content": logprobs} if logprobs else None,
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": tokens,
                    "total_tokens": prompt + tokens,
                },
            }
        )

    def request(
        self,
        messages: Sequence[Message],
        *,
        role: str,
        template: str,
        kind: str,
        check_images: bool = True,
        extra: dict[str, Any] | None = None,
        **kwargs: Any,
    ):
        """One chat completion with bounded retries, reported as an ``llm_call`` event; extra
        keyword arguments go to the API as they are (logprobs, response_format...)."""
        self.check()
        if check_images and has_images(messages) and not self.dialect.images:
            raise CapabilityError(
                f"{self.base_url} ({self.dialect.name}) does not accept image input; "
                "point vlm_base_url/vlm_model at a vision-language model (e.g. vLLM Qwen2.5-VL)"
            )
        if self.dialect.name == "vllm":
            kwargs = vllm_sampling(kwargs)
        extra = dict(extra or {})
        if pictures := image_count(messages):
            extra["images"] = pictures  # the trace shows which calls saw a picture
        key = ""
        if self.cache is not None and self.cache.cacheable(kwargs):
            key = request_key(self.model, messages, kwargs)
            if (hit := self.cache.get(key)) is not None:
                call = LLMCall(role=role, template=template, model=self.model, kind=kind,
                               extra=extra | {"cached": True})  # fmt: skip
                call.started, call.latency_s = round(time.time(), 4), 0.0
                if hit.usage is not None:
                    call.prompt_tokens = hit.usage.prompt_tokens or 0
                    call.completion_tokens = hit.usage.completion_tokens or 0
                emit(call, self.on_event)
                return hit
        call = LLMCall(role=role, template=template, model=self.model, kind=kind, extra=extra)
        # servers ignore these; server logs and scripted test servers read which role asked
        headers = {"X-Hopgraph-Role": role, "X-Hopgraph-Template": template}
        attempts = 0

        def once():
            nonlocal attempts
            attempts += 1
            if self.stream:
                return self._streamed(messages, kwargs, headers)
            try:
                return self.client.chat.completions.create(
                    model=self.model, messages=list(messages), extra_headers=headers, **kwargs
                )
            except json.JSONDecodeError as e:
                url = f"{self.base_url}/chat/completions"
                raise _Malformed(message=str(e), request=httpx.Request("POST", url)) from e

        start = time.perf_counter()
        call.started = round(time.time(), 4)
        try:
            # a chat request that timed out is never sent again: a batching server (vLLM) is
            # most likely still working on it, and a re-send queues behind everything else
            # (request_timeout is the knob); the embedded server's stream times out on
            # progress, which a re-send would not make either
            resp = self._retry(once, timeouts=False)
        except openai.APITimeoutError as e:
            call.error = f"timed out: {e}"
            raise EndpointError(
                f"model endpoint {self.base_url} timed out after {attempts} attempt(s): {e}"
            ) from e
        except _Malformed as e:
            call.error = f"malformed reply: {e}"
            raise EndpointError(
                f"model endpoint {self.base_url} sent a malformed reply (not JSON) after "
                f"{attempts} attempt(s): {e}"
            ) from e
        except openai.APIConnectionError as e:
            call.error = f"cannot reach {self.base_url}: {e}"
            raise EndpointError(
                f"cannot reach model endpoint {self.base_url} after {attempts} attempt(s): {e}"
            ) from e
        except openai.NotFoundError as e:
            call.error = str(e)
            raise ModelNotServedError(f"{self.base_url} does not serve {self.model!r}: {e}") from e
        except openai.APIStatusError as e:
            call.error = f"HTTP {e.status_code}: {e.message}"
            raise EndpointError(
                f"model endpoint {self.base_url} answered HTTP {e.status_code} after "
                f"{attempts} attempt(s): {e.message}"
            ) from e
        except RetryError as e:  # pragma: no cover - reraise=True makes this unreachable
            raise EndpointError(str(e)) from e
        finally:
            call.latency_s = time.perf_counter() - start
            call.attempts = attempts
            if call.error is not None:
                emit(call, self.on_event)
        if resp.usage is not None:
            call.prompt_tokens = resp.usage.prompt_tokens or 0
            call.completion_tokens = resp.usage.completion_tokens or 0
        if key:
            self.cache.put(key, self.model, resp)
        emit(call, self.on_event)
        return resp


def _status_error(r: httpx.Response) -> openai.APIStatusError:
    """The openai client's error class for an HTTP error status of a streamed request."""
    cls = {404: openai.NotFoundError}.get(r.status_code) or (
        openai.InternalServerError if r.status_code >= 500 else openai.APIStatusError
    )
    return cls(f"Error code: {r.status_code} - {r.text[:300]}", response=r, body=r.text)


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
