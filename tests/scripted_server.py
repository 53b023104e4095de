"""A scripted OpenAI-compatible HTTP server on loopback, for tests and benchmarks.

It answers ``/v1/models`` and ``/v1/chat/completions`` with ``reply(body) -> str`` (or a
float: P(Yes) for a logprobs request), optionally after a delay, so graphs, the runner and
subprocesses use the real client path end to end. A ``stream`` request is answered as
llama-cpp-python's server does: headers at once, an SSE comment ping every ``ping`` seconds
while the delay (its prefill) lasts, then one ``data:`` chunk per word, ``stall`` seconds of
silence after the first one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def by_template(replies: dict, default: str = "") -> Callable[[dict], str]:
    """A reply script keyed by the template each request names (hopgraph sends it as the
    X-Hopgraph-Template header): a string, or a function of the request body."""

    def reply(body: dict) -> str:
        found = replies.get(body.get("_template", ""), default)
        return found(body) if callable(found) else found

    return reply


def deterministic_reply(body: dict) -> str:
    """Same prompt, same reply: a short answer, or a cited sentence, or Yes."""
    text = json.dumps(body["messages"])
    if body.get("logprobs"):
        return "Yes"
    question = re.search(r"Question: (.*?)(?:\\n|$)", text)
    key = hashlib.sha1((question.group(1) if question else text).encode()).hexdigest()[:6]
    if "Short answer" in text:
        return f"answer-{key}"
    return f"The answer is answer-{key} [1][2]."


class LoopbackServer:
    """An HTTP handler class served on 127.0.0.1 in a daemon thread, as a context manager."""

    def serve(self, handler: type[BaseHTTPRequestHandler], port: int = 0) -> None:
        ThreadingHTTPServer.allow_reuse_address = True
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class ScriptedServer(LoopbackServer):
    def __init__(
        self,
        reply: Callable[[dict], str] = deterministic_reply,
        *,
        delay: float = 0.0,
        model: str = "scripted",
        port: int = 0,
        ping: float = 0.0,
        stall: float = 0.0,
        per_token: float = 0.0,
        slots: int = 0,
        timings: dict | None = None,
    ):
        """``per_token`` and ``slots`` make it a latency model of a batching server: each call
        costs ``delay + per_token x tokens`` (tokens estimated as characters / 4, and reported
        as its usage), with at most ``slots`` calls served at once. ``timings``: what a
        streamed reply's last chunk says the server spent, as llama.cpp's does."""
        self.reply, self.delay, self.model = reply, delay, model
        self.timings = timings
        self.ping, self.stall = ping, stall
        self.per_token = per_token
        self._slots = threading.BoundedSemaphore(slots) if slots else None
        self.calls = 0
        self.log: list[tuple[dict, str]] = []
        """Each chat request's body as received and the reply text sent for it."""
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, obj: dict, status: int = 200) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                with contextlib.suppress(OSError):  # the client gave up (a timeout under test)
                    self.wfile.write(data)

            def do_GET(self):  # noqa: N802 - http.server's name
                self._send(
                    {
                        "object": "list",
                        "data": [{"id": server.model, "object": "model", "owned_by": "vllm"}],
                    }
                )

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                body["_template"] = self.headers.get("X-Hopgraph-Template", "")
                with server._lock:
                    server.calls += 1
                if server.delay and not body.get("stream") and not server.per_token:
                    time.sleep(server.delay)
                try:
                    content = server.reply(body)
                except Exception as e:  # noqa: BLE001 - a failing script is a server error
                    self._send({"error": {"message": str(e)}}, status=500)
                    return
                usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
                if server.per_token:  # the latency model
                    n_in = len(json.dumps(body["messages"])) // 4
                    n_out = 1 if body.get("logprobs") else len(str(content)) // 4 + 1
                    usage = {
                        "prompt_tokens": n_in,
                        "completion_tokens": n_out,
                        "total_tokens": n_in + n_out,
                    }
                    with server._slots or contextlib.nullcontext():
                        time.sleep(server.delay + server.per_token * (n_in + n_out))
                if body.get("stream"):
                    server._logged(body, str(content))
                    self._stream(str(content))
                    return
                top = None
                if body.get("logprobs"):
                    # a float reply is P(Yes): Yes and No both among the top tokens
                    if isinstance(content, float):
                        p = min(max(content, 1e-6), 1 - 1e-6)
                        tokens = [("Yes", math.log(p)), ("No", math.log(1 - p))]
                        content = "Yes" if p >= 0.5 else "No"
                    else:
                        tokens = [(content, -0.1)]
                    top = {
                        "content": [
                            {
                                "token": content,
                                "logprob": -0.1,
                                "bytes": None,
                                "top_logprobs": [
                                    {"token": t, "logprob": lp, "bytes": None} for t, lp in tokens
                                ],
                            }
                        ]
                    }
                server._logged(body, content)
                self._send(
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "created": 0,
                        "model": server.model,
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "logprobs": top,
                                "message": {"role": "assistant", "content": content},
                            }
                        ],
                        "usage": usage,
                    }
                )

            def _wait(self, seconds: float) -> None:
                """Silence, or keep-alive pings when the server sends them."""
                began = time.monotonic()
                while time.monotonic() - began < seconds:
                    if server.ping:
                        self.wfile.write(b": ping\r\n\r\n")
                        self.wfile.flush()
                    time.sleep(min(server.ping or seconds, seconds))

            def _stream(self, content: str) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                try:
                    self._wait(server.delay)
                    words = content.split(" ")
                    for i, word in enumerate(words):
                        piece = word if i == 0 else " " + word
                        chunk = {
                            "id": "s",
                            "choices": [
                                {"index": 0, "delta": {"content": piece}, "finish_reason": None}
                            ],
                        }
                        self.wfile.write(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
                        self.wfile.flush()
                        if i == 0:
                            self._wait(server.stall)
                    if server.timings:
                        last = {
                            "id": "s",
                            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                            "timings": server.timings,
                        }
                        self.wfile.write(f"data: {json.dumps(last)}\r\n\r\n".encode())
                    self.wfile.write(b"data: [DONE]\r\n\r\n")
                except OSError:  # the client gave up
                    pass

        self.serve(Handler, port)

    def _logged(self, body: dict, content: str) -> None:
        with self._lock:
            self.log.append(({k: v for k, v in body.items() if k != "_template"}, content))
