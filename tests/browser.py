"""Headless Chromium driven over the DevTools protocol, for tests that type and press keys
(``--dump-dom`` only reads a page): open a URL, wait for the app's ``data-state="ready"``,
type into the focused element, press a key, evaluate an expression."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


class Browser:
    """One headless Chromium and its first page."""

    def __init__(self) -> None:
        self.profile = Path(tempfile.mkdtemp(prefix="hopgraph-chromium-"))
        self.proc = subprocess.Popen(
            [
                CHROMIUM,
                *FLAGS,
                f"--user-data-dir={self.profile}",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
            assert time.monotonic() < deadline and self.proc.poll() is None, "no chromium"
            time.sleep(0.05)
        port = port_file.read_text().split()[0]
        import httpx

        pages = httpx.get(f"http://127.0.0.1:{port}/json/list").json()
        page = next(p for p in pages if p["type"] == "page")
        self._connection = connect(page["webSocketDebuggerUrl"], max_size=None)
        self.ws = self._connection.__enter__()
        self.ids = itertools.count(1)

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        n = next(self.ids)
        self.ws.send(json.dumps({"id": n, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=60))
            if msg.get("id") == n:
                assert "error" not in msg, msg
                return msg.get("result", {})

    def eval(self, expression: str) -> Any:
        out = self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        return out["result"].get("value")

    def ready(self, timeout: float = 30) -> None:
        """Wait for the app to have rendered its view (``data-state="ready"``)."""
        deadline = time.monotonic() + timeout
        while self.eval("document.getElementById('app')?.dataset.state") != "ready":
            assert time.monotonic() < deadline, self.eval("document.body.innerText")
            time.sleep(0.05)

    def open(self, url: str) -> None:
        self.send("Page.navigate", url=url)
        time.sleep(0.1)
        self.ready()

    def type(self, text: str) -> None:
        for ch in text:
            self.send("Input.dispatchKeyEvent", type="keyDown", text=ch, key=ch)
            self.send("Input.dispatchKeyEvent", type="keyUp", key=ch)

    def press(self, key: str) -> None:
        codes = {"ArrowRight": 39, "ArrowLeft": 37, "j": 74, "k": 75}
        self.send(
            "Input.dispatchKeyEvent",
            type="keyDown",
            key=key,
            text=key if len(key) == 1 else "",
            windowsVirtualKeyCode=codes.get(key, 0),
        )
        self.send(
            "Input.dispatchKeyEvent", type="keyUp", key=key, windowsVirtualKeyCode=codes.get(key, 0)
        )

    def close(self) -> None:
        self._connection.__exit__(None, None, None)
        self.proc.terminate()
        self.proc.wait(timeout=30)
        shutil.rmtree(self.profile, ignore_errors=True)
