"""A fault-injecting HTTP proxy on loopback, between a client and a (scripted) endpoint.

``faults(n, body) -> kind | None`` decides for the n-th chat request (1-based) what goes
wrong: ``reset`` (the connection is torn down with an RST, no response), ``500``, ``slow``
(the answer comes ``slow`` seconds late, past the client's timeout), ``truncated`` (a
complete HTTP response whose JSON body is cut in half) or ``empty`` (the model's reply becomes
the empty string). ``/models`` always passes. ``chat_requests`` counts what reached the proxy,
``forwarded`` what reached the endpoint.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

import httpx
from scripted_server import LoopbackServer


class FaultProxy(LoopbackServer):
    def __init__(
        self,
        upstream: str,
        faults: Callable[[int, dict], str | None],
        *,
        slow: float = 3.0,
    ):
        self.upstream = upstream.rstrip("/")
        self.faults, self.slow = faults, slow
        self.chat_requests = self.forwarded = 0
        self.injected: list[str] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _reply(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                with contextlib.suppress(OSError):  # the client gave up
                    self.wfile.write(data)

            def do_GET(self):  # noqa: N802 - http.server's name
                r = httpx.get(proxy.upstream + self.path.removeprefix("/v1"))
                self._reply(r.status_code, r.content)

            def do_POST(self):  # noqa: N802
                raw = self.rfile.read(int(self.headers["content-length"]))
                body = json.loads(raw)
                with proxy._lock:
                    proxy.chat_requests += 1
                    n = proxy.chat_requests
                kind = proxy.faults(n, body)
                if kind:
                    with proxy._lock:
                        proxy.injected.append(kind)
                if kind == "reset":
                    self.connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
                    self.connection.close()
                    self.close_connection = True
                    return
                if kind == "500":
                    self._reply(500, b'{"error": {"message": "injected server error"}}')
                    return
                if kind == "slow":
                    time.sleep(proxy.slow)
                with proxy._lock:
                    proxy.forwarded += 1
                r = httpx.post(
                    proxy.upstream + self.path.removeprefix("/v1"),
                    content=raw,
                    timeout=60,
                    headers={"content-type": "application/json"},
                )
                data = r.content
                if kind == "truncated":
                    data = data[: len(data) // 2]
                elif kind == "empty":
                    reply = r.json()
                    reply["choices"][0]["message"]["content"] = ""
                    data = json.dumps(reply).encode()
                self._reply(r.status_code, data)

        self.serve(Handler)
