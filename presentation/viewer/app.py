"""``hopgraph view``'s web app (Starlette): the page and its two assets from the package (no
CDN), and a read-only JSON API over ``presentation.viewer``. A strict Content-Security-Policy
(scripts and styles only from this server) backs the page's rule of writing every trace text
as text, so a passage or reply holding ``<script>`` or ``onerror=`` never runs.

Off loopback each request needs one of ``HOPGRAPH_API_KEYS``: in ``x-api-key``, a bearer token,
or the cookie ``/?key=KEY`` sets once (a browser cannot send a header on navigation)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from hopgraph.graphs.auth import LOOPBACK, as_host, key_check, sent_key, valid_key
from hopgraph.harness.bounded import TooLarge
from hopgraph.harness.cost import Price
from hopgraph.presentation.viewer import (
    RunView,
    optimize_search,
    page_folders,
    page_image,
    pair,
    pair_question,
    run_ids,
    search_ids,
    unreadable,
)
from hopgraph.redaction import redacted

STATIC = Path(__file__).parent / "static"
ASSETS = {"app.js": "text/javascript", "app.css": "text/css"}
COOKIE = "hopgraph_key"
SECURITY = {
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


class Viewer:
    """The runs under the folders one ``hopgraph view`` serves, each by its id (``run_ids``):
    a link names a folder, not a place in a list, and a run folder written meanwhile is listed
    at the next look (the folders are walked again at most every ``RESCAN_S`` seconds)."""

    RESCAN_S = 2.0

    def __init__(self, roots: list[Path], price: Price | None = None) -> None:
        self.roots, self.price = list(roots), price
        self._scanning = threading.Lock()  # requests are answered in worker threads
        self.views: dict[str, RunView] = {}
        self.searches: dict[str, Path] = {}
        self._scanned = float("-inf")
        self._scan()

    def _scan(self) -> dict[str, RunView]:
        with self._scanning:
            return self._scan_now()

    def _scan_now(self) -> dict[str, RunView]:
        if time.monotonic() - self._scanned >= self.RESCAN_S:
            known = {v.path: v for v in self.views.values()}  # a run keeps its read rows
            self.views = {
                rid: known.get(path) or RunView(path, self.price)
                for rid, path in run_ids(self.roots).items()
            }
            self.searches = search_ids({rid: v.path for rid, v in self.views.items()})
            self._scanned = time.monotonic()
        return self.views

    def run(self, request: Request, key: str = "run") -> tuple[str, RunView]:
        rid = request.query_params.get(key, "")
        views = self._scan()
        if rid not in views:
            self._scanned = float("-inf")  # written a moment ago: look again before refusing
            views = self._scan()
        if rid not in views:
            raise LookupError(f"no run {rid!r} here: this viewer serves {', '.join(views)}")
        return rid, views[rid]

    def summaries(self) -> list[dict[str, Any]]:
        """Every run's row; one whose files cannot be read is listed with why, the rest as
        they are."""
        out = []
        for rid, r in self._scan().items():
            try:
                row = r.summary(rid)
                json.dumps(row, allow_nan=False)  # a NaN in one run never fails every run's list
                out.append(row)
            except Exception as e:  # noqa: BLE001 - shown on its row, not a 500 for every run
                out.append(unreadable(r.path, rid, e))
        return out

    # the JSON API: each answers a request's query parameters; a LookupError becomes a 404

    def api_runs(self, request: Request) -> Any:
        return self.summaries()

    def api_questions(self, request: Request) -> Any:
        rid, run = self.run(request)
        return {"run": run.summary(rid), "rows": run.rows()}

    def api_question(self, request: Request) -> Any:
        (_, run), qid = self.run(request), request.query_params.get("id", "")
        try:
            return run.question(qid)
        except KeyError:
            raise LookupError(f"no question {qid!r} in {run.path}") from None

    def api_optimizations(self, request: Request) -> Any:
        self._scan()
        return [{"id": sid, "path": str(path)} for sid, path in self.searches.items()]

    def api_optimization(self, request: Request) -> Any:
        self._scan()
        sid = request.query_params.get("id", "")
        if sid not in self.searches:
            raise LookupError(f"no optimize search {sid!r} here")
        run_of = {v.path.resolve(): rid for rid, v in self.views.items()}
        return optimize_search(self.searches[sid], run_of)

    def api_search(self, request: Request) -> Any:
        return self.run(request)[1].search(request.query_params.get("q", ""))

    def api_nodes(self, request: Request) -> Any:
        return self.run(request)[1].nodes()

    def api_page(self, request: Request) -> Any:
        (_, run), qid = self.run(request), request.query_params.get("id", "")
        cid = request.query_params.get("cid", "")
        try:
            folders = page_folders(self.roots, run.manifest())
            path = page_image(run.trace(qid), run.prediction(qid), cid, folders)
        except KeyError:
            raise LookupError(f"no cited page image {cid!r} for {qid!r}") from None
        return FileResponse(path, headers=SECURITY)

    def api_compare(self, request: Request) -> Any:
        (_, a), (_, b) = self.run(request, "a"), self.run(request, "b")
        return pair(a, b, request.query_params.get("metric", "f1"))

    def api_compare_question(self, request: Request) -> Any:
        (_, a), (_, b) = self.run(request, "a"), self.run(request, "b")
        qid = request.query_params.get("id", "")
        try:
            return pair_question(a, b, qid)
        except KeyError:
            raise LookupError(f"neither run traced question {qid!r}") from None


API = (
    "runs",
    "questions",
    "question",
    "search",
    "nodes",
    "page",
    "compare",
    "compare_question",
    "optimizations",
    "optimization",
)


def _json(value: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(value, status_code=status, headers=SECURITY)


def _endpoint(handler):  # noqa: ANN001, ANN202 - a Viewer.api_* method
    """The handler run in a worker thread, off the event loop: a question whose files are slow
    or large to read never stalls another request (each reads at most ``bounded``'s limit)."""

    async def endpoint(request: Request) -> Response:
        try:
            out = await run_in_threadpool(handler, request)
        except LookupError as e:
            return _json({"detail": str(e).strip("'\"")}, 404)
        except TooLarge as e:
            return _json({"detail": redacted(str(e))}, 413)
        except Exception as e:  # a damaged file: JSON naming it, which the page shows
            return _json({"detail": redacted(f"{type(e).__name__}: {e}")}, 500)
        return out if isinstance(out, Response) else _json(out)

    return endpoint


def build_app(viewer: Viewer, host: str = "127.0.0.1", keys: list[str] | None = None) -> Starlette:
    """The app over ``viewer``'s runs; ``keys``: the API keys a request must carry (None: no
    check, loopback only, where a request naming another Host is refused: DNS rebinding)."""

    async def page(request: Request) -> Response:
        if keys and request.query_params.get("key"):  # the key moves into a cookie, off the URL
            out = RedirectResponse("/", status_code=303)
            out.set_cookie(COOKIE, request.query_params["key"], httponly=True, samesite="strict")
            return out
        return FileResponse(STATIC / "index.html", media_type="text/html", headers=SECURITY)

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS:
            return _json({"detail": f"no asset {name}"}, 404)
        return FileResponse(STATIC / name, media_type=ASSETS[name], headers=SECURITY)

    routes = [
        Route("/", page),
        Route("/assets/{name}", asset),
        *(Route(f"/api/{name}", _endpoint(getattr(viewer, f"api_{name}"))) for name in API),
    ]
    if keys:  # a key a rebinding page cannot know guards it; clients name the host as they reach it
        return _key_check(Starlette(routes=routes), keys)
    names = list(dict.fromkeys([*LOOPBACK, *map(as_host, LOOPBACK), as_host(host)]))
    return Starlette(
        routes=routes, middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=names)]
    )


def _key_check(inner: Starlette, keys: list[str]):  # noqa: ANN202 - an ASGI app
    """A request without one of ``keys`` (header, bearer, or the cookie ``/?key=KEY`` set) gets
    401."""
    from http.cookies import SimpleCookie

    def why(headers: dict, scope: dict) -> str | None:
        cookie = SimpleCookie(headers.get("cookie", "")).get(COOKIE)
        query = scope.get("path") == "/" and _query_key(scope)
        given = sent_key(headers) or (cookie.value if cookie else "") or query or ""
        if valid_key(given, keys):
            return None
        return "a valid API key is needed (x-api-key, or open /?key=KEY once)"

    return key_check(inner, why)


def _query_key(scope: dict) -> str:
    from urllib.parse import parse_qs

    return (parse_qs(scope.get("query_string", b"").decode()).get("key") or [""])[0]
