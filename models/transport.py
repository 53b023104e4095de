"""How a chat request reaches an OpenAI-compatible endpoint: the HTTP side of ``ChatModel``.

Retries are bounded (tenacity) and only on connection errors, timeouts and 5xx; the openai
client's own retries are off. Failures leave as the model layer's errors (``EndpointError``,
``ModelNotServedError``), each with the attempts it took and a short ``call_error`` for the
call's event.

Against the embedded server (``stream=True``) a request is judged by progress, not by one
wall-clock limit: the reply is streamed, the server's keep-alive pings carry a long prefill or a
wait in its queue, and the request fails only when nothing arrives for ``timeout`` seconds, when
no token follows the last one for ``timeout`` seconds, or when the first token takes more than
``FIRST_TOKEN_FACTOR × timeout``. A timed-out request is never re-sent: a batching server
(vLLM) is most likely still working on it, and a re-send would queue behind everything else.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import httpx
import openai
from openai.types.chat import ChatCompletion
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from hopgraph.models.errors import (
    ContextWindowError,
    EndpointError,
    HopgraphModelError,
    ModelNotServedError,
)
from hopgraph.redaction import redacted

Message = dict[str, Any]

FIRST_TOKEN_FACTOR = 10
"""A streamed request waits at most this many ``timeout``s for its first token (prefill, and
its turn on a server that answers one request at a time)."""


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


class Transport:
    """Sends chat completions for one model at ``base_url``, streamed or not, with retries."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "EMPTY",
        timeout: float = 120.0,
        max_retries: int = 2,
        http_client: httpx.Client | None = None,
        stream: bool = False,
        count_prompt_tokens: Callable[[Sequence[Message]], int] | None = None,
        context_window: int = 0,
    ):
        self.base_url = base_url.rstrip("/")
        self.shown_url = redacted(self.base_url)  # what a message names: no credential
        self.model = model
        self.timeout = timeout
        self.max_retries = max(0, max_retries)
        self.stream = stream
        self.count_prompt_tokens = count_prompt_tokens
        """A streamed reply carries no usage; the embedded server's tokenizer counts it."""
        self.context_window = context_window
        """The server's context (n_ctx): a counted prompt of that many tokens is refused."""
        self._http = http_client or httpx.Client(timeout=httpx.Timeout(timeout, connect=5.0))
        self.client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key or "EMPTY",
            max_retries=0,
            # openai's own Timeout (httpx2's): httpx2 2.17 refuses httpx's in its client
            timeout=openai.Timeout(timeout, connect=5.0),
            http_client=http_client,
        )

    def served_models(self) -> list[dict[str, Any]]:
        """``/v1/models`` of the endpoint, as dicts (id, owned_by...)."""
        try:
            page = self.retry(lambda: self.client.models.list())
        except openai.APIConnectionError as e:
            raise EndpointError(f"cannot reach model endpoint {self.shown_url}: {e}") from e
        except openai.APIStatusError as e:
            raise EndpointError(
                f"model endpoint {self.shown_url} answered {e.status_code} to /models"
            ) from e
        return [m.model_dump() for m in page.data]

    def retry(self, fn, *, timeouts: bool = True):  # noqa: ANN001, ANN201 - any call
        """``fn`` sent again up to ``max_retries`` times (so 1 + max_retries attempts) on a
        transient failure; ``timeouts`` False: a timed-out request is not sent again."""
        retrying = Retrying(
            stop=stop_after_attempt(1 + self.max_retries),
            wait=wait_exponential(multiplier=0.5, max=4),
            retry=retry_if_exception(_transient if timeouts else _transient_unless_timeout),
            reraise=True,
        )
        return retrying(fn)

    def chat(
        self, messages: Sequence[Message], kwargs: dict[str, Any], headers: dict[str, str]
    ) -> tuple[ChatCompletion, int]:
        """One chat completion and the attempts it took. A chat request that timed out is never
        sent again (module docstring); a failure raises the model layer's error, carrying
        ``attempts`` and ``call_error``."""
        attempts = 0
        prompt = self.count_prompt_tokens(messages) if self.count_prompt_tokens else 0
        if self.context_window and prompt >= self.context_window:
            message = (
                f"the prompt is {prompt} tokens, more than the context window of "
                f"{self.context_window} that {self.model} is served with (n_ctx): shorten the "
                "question or what it is sent with (fewer contexts, top_k), or raise n_ctx"
            )
            raise _failed(ContextWindowError, message, message, 0)

        def once() -> ChatCompletion:
            nonlocal attempts
            attempts += 1
            if self.stream:
                return self._streamed(messages, kwargs, headers, prompt)
            try:
                return self.client.chat.completions.create(
                    model=self.model,
                    messages=cast(Any, list(messages)),  # OpenAI's message dicts, as sent
                    extra_headers=headers,
                    **kwargs,
                )
            except json.JSONDecodeError as e:
                url = f"{self.base_url}/chat/completions"
                raise _Malformed(message=str(e), request=httpx.Request("POST", url)) from e

        where = f"model endpoint {self.shown_url}"
        try:
            return self.retry(once, timeouts=False), attempts
        except openai.APITimeoutError as e:
            message = f"{where} timed out after {attempts} attempt(s): {e}"
            raise _failed(EndpointError, message, f"timed out: {e}", attempts) from e
        except _Malformed as e:
            message = f"{where} sent a malformed reply (not JSON) after {attempts} attempt(s): {e}"
            raise _failed(EndpointError, message, f"malformed reply: {e}", attempts) from e
        except openai.APIConnectionError as e:
            message = f"cannot reach {where} after {attempts} attempt(s): {e}"
            raise _failed(
                EndpointError, message, f"cannot reach {self.shown_url}: {e}", attempts
            ) from e
        except openai.NotFoundError as e:
            message = f"{self.shown_url} does not serve {self.model!r}: {e}"
            raise _failed(ModelNotServedError, message, str(e), attempts) from e
        except openai.APIStatusError as e:
            message = (
                f"{where} answered HTTP {e.status_code} after {attempts} attempt(s): {e.message}"
            )
            raise _failed(
                EndpointError, message, f"HTTP {e.status_code}: {e.message}", attempts
            ) from e

    def _streamed(
        self,
        messages: Sequence[Message],
        kwargs: dict[str, Any],
        headers: dict[str, str],
        prompt: int,
    ) -> ChatCompletion:
        """One streamed chat completion, judged by progress (module docstring), assembled into
        the ``ChatCompletion`` a plain request returns (``prompt``: its counted tokens)."""
        fields = {k: v for k, v in kwargs.items() if k != "extra_body"}
        body = {
            "model": self.model,
            "messages": list(messages),
            "stream": True,
            **fields,
            **(kwargs.get("extra_body") or {}),
        }  # as the OpenAI client merges extra_body
        url = f"{self.base_url}/chat/completions"
        began = time.monotonic()
        reply, done = _Reply(), False
        try:
            with self._http.stream("POST", url, json=body, headers=headers) as r:
                if r.status_code >= 400:
                    r.read()
                    raise _status_error(r)
                for line in r.iter_lines():
                    now = time.monotonic()
                    self._check_progress(reply, began, now, r.request)
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
                    reply.add(chunk, now)
            if not done:  # the server failed mid-reply (llama.cpp just closes the stream)
                raise openai.APIConnectionError(
                    message=f"the reply stream ended before [DONE], after {reply.tokens} token(s)",
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
        return reply.completion(self.model, prompt, began)

    def _check_progress(self, reply: _Reply, began: float, now: float, request) -> None:  # noqa: ANN001
        """No first token within ``FIRST_TOKEN_FACTOR`` x request_timeout, or no next token
        within request_timeout: the request has stalled."""
        if reply.last_token is None and now - began > self.timeout * FIRST_TOKEN_FACTOR:
            raise _NoProgress(
                request,
                f"no first token after {now - began:.0f}s (limit "
                f"{FIRST_TOKEN_FACTOR} x request_timeout {self.timeout:.0f}s)",
            )
        if reply.last_token is not None and now - reply.last_token > self.timeout:
            raise _NoProgress(
                request,
                f"no token for {now - reply.last_token:.0f}s after {reply.tokens} "
                f"(request_timeout {self.timeout:.0f}s)",
            )


def _failed(
    cls: type[HopgraphModelError], message: str, call_error: str, attempts: int
) -> HopgraphModelError:
    """The model layer's error for a failed request, with what the call's event records."""
    error = cls(message)
    error.call_error, error.attempts = call_error, attempts
    return error


def _status_error(r: httpx.Response) -> openai.APIStatusError:
    """The openai client's error class for an HTTP error status of a streamed request."""
    cls = {404: openai.NotFoundError}.get(r.status_code) or (
        openai.InternalServerError if r.status_code >= 500 else openai.APIStatusError
    )
    return cls(f"Error code: {r.status_code} - {r.text[:300]}", response=r, body=r.text)


@dataclass
class _Reply:
    """A streamed reply as its chunks arrive: text pieces, token logprobs, finish reason, id."""

    text: list[str] = field(default_factory=list)
    logprobs: list[dict[str, Any]] = field(default_factory=list)
    finish: str = "stop"
    tokens: int = 0
    cid: str = "stream"
    last_token: float | None = None
    first_token: float | None = None
    timings: dict[str, Any] = field(default_factory=dict)
    """What the server says it spent (llama.cpp's ``timings``: prompt_ms, predicted_ms)."""

    def add(self, chunk: dict[str, Any], now: float) -> None:
        self.cid = chunk.get("id", self.cid)
        self.timings = chunk.get("timings") or self.timings
        choice = (chunk.get("choices") or [{}])[0]
        piece = (choice.get("delta") or {}).get("content")
        if piece:
            self.text.append(piece)
            self.tokens += 1
            self.last_token = now
            self.first_token = self.first_token or now
        self.logprobs += ((choice.get("logprobs") or {}).get("content")) or []
        self.finish = choice.get("finish_reason") or self.finish

    def completion(self, model: str, prompt: int, began: float) -> ChatCompletion:
        """The ``ChatCompletion`` a plain request would have returned, with the wait for its
        first token (``began``: when it was sent) and the server's own timings."""
        waited = {"first_token_s": round(self.first_token - began, 4)} if self.first_token else {}
        # llama-server counts the tokens it generated (a chunk may carry several, or none of
        # a grammar's); llama-cpp-python's server sends one chunk per token and no count
        made = self.timings.get("predicted_n", self.tokens) if self.timings else self.tokens
        return ChatCompletion.model_validate(
            {
                **({"timings": self.timings} if self.timings else {}),
                **({"hopgraph_wait": waited} if waited else {}),
                "id": self.cid,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": self.finish,
                        "message": {"role": "assistant", "content": "".join(self.text)},
                        "logprobs": {"content": self.logprobs} if self.logprobs else None,
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": made,
                    "total_tokens": prompt + made,
                },
            }
        )


def served_times(resp: Any) -> dict[str, float]:
    """How long a reply waited and what the server spent on it, where known: the wait for
    its first token (a streamed reply), and where the server reports its timings (llama.cpp)
    the time it read the prompt and wrote the reply, so ``queued_s``, the time before the
    server began it (the first-token wait less the prompt's reading), and the prompt tokens it
    read and those it reused from its cache (llama-server's ``prompt_n`` and ``cache_n``)."""
    extra = getattr(resp, "model_extra", None) or {}
    out: dict[str, float] = {}
    wait = (extra.get("hopgraph_wait") or {}).get("first_token_s")
    timings = extra.get("timings") or {}
    if isinstance(wait, int | float):
        out["first_token_s"] = float(wait)
    for key, name in (("prompt_ms", "prompt_s"), ("predicted_ms", "decode_s")):
        if isinstance(timings.get(key), int | float):
            out[name] = round(float(timings[key]) / 1000, 4)
    for key, name in (("prompt_n", "prompt_read"), ("cache_n", "prompt_reused")):
        if isinstance(timings.get(key), int):  # tokens read, and taken from the slot's cache
            out[name] = timings[key]
    if "first_token_s" in out and "prompt_s" in out:
        out["queued_s"] = round(max(0.0, out["first_token_s"] - out["prompt_s"]), 4)
    return out
