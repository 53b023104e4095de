"""A scripted OpenAI-compatible endpoint at the HTTP interface (httpx.MockTransport).

The real ``ChatModel`` and the real openai client run unchanged; only the wire is scripted.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

from hopgraph.models.chat import ChatModel

Reply = str | dict | Callable[[dict], Any] | Exception


def completion(
    content: str = "",
    *,
    top: list[tuple[str, float]] | None = None,
    prompt_tokens: int = 7,
    completion_tokens: int = 3,
) -> dict:
    """An OpenAI chat.completion body, with first-token top_logprobs when ``top`` is given."""
    logprobs = None
    if top is not None:
        first = top[0] if top else ("", 0.0)
        logprobs = {
            "content": [
                {
                    "token": first[0],
                    "logprob": first[1],
                    "bytes": None,
                    "top_logprobs": [{"token": t, "logprob": lp, "bytes": None} for t, lp in top],
                }
            ]
        }
    return {
        "id": "cmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "logprobs": logprobs,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


class ScriptedEndpoint:
    """Serves ``/models`` and answers each chat request with the next scripted reply."""

    def __init__(self, replies: list[Reply], *, model: str = "scripted", owned_by: str = "vllm"):
        self.replies = list(replies)
        self.model = model
        self.owned_by = owned_by
        self.requests: list[dict] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/models"):
            return httpx.Response(
                200,
                json={
                    "object": "list",
                    "data": [{"id": self.model, "object": "model", "owned_by": self.owned_by}],
                },
            )
        body = json.loads(request.content)
        self.requests.append(body)
        if not self.replies:
            raise AssertionError("scripted endpoint ran out of replies")
        reply = self.replies.pop(0)
        if callable(reply):
            reply = reply(body)
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, httpx.Response):
            return reply
        if isinstance(reply, str):
            reply = completion(reply)
        return httpx.Response(200, json=reply)

    def model_client(self, **kw: Any) -> ChatModel:
        client = httpx.Client(transport=httpx.MockTransport(self.handler))
        kw.setdefault("max_retries", 2)
        return ChatModel("http://scripted.test/v1", self.model, http_client=client, **kw)
