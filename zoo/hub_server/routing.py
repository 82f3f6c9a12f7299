"""What every route of ``zoo hub serve`` shares: :class:`Call` (one request as a handler sees it),
:func:`hub_route`, the access log, safe response headers and the Hub's error replies.

The route groups build on it: :mod:`zoo.hub_server.model_api` (who am I, repos, model info, trees, refs),
:mod:`zoo.hub_server.upload_api` (preupload, LFS, commits), :mod:`zoo.hub_server.file_api` (downloads),
:mod:`zoo.hub_server.repo_api`, :mod:`zoo.hub_server.lfs_multipart`, :mod:`zoo.hub_server.unsupported` and
:mod:`zoo.hub_server.web`; :func:`zoo.hub_server.asgi.create_app` puts them together.

Only bytes move on the event loop. A handler that is a plain function runs whole in a worker thread
(storage reads, YAML, JSON); an ``async`` handler reads its body with the bounds of
:mod:`zoo.hub_server.http_limits` and hands each piece of storage work to a thread. So a slow client, or a
request with much to compute, delays nobody else.

Routes match the path as the client sent it, percent-encoded (:class:`RawPathRoute`): the client quotes
a revision whole (``refs%2Fpr%2F1``), so its slashes must not split path segments. A web UI adds its
routes to the same app.
"""

from __future__ import annotations

import inspect
import json
import logging
import re
import time
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from zoo.hub_server.http_limits import HttpError, check_head, parse_json_object, read_body, read_form
from zoo.hub_server.logs import ACCESS, ERRORS, printable
from zoo.hub_server.protocol import ANONYMOUS, TokenInfo
from zoo.hub_server.sessions import SESSION_COOKIE
from zoo.hub_server.store_records import (
    CommitConflict,
    EntryNotFound,
    Forbidden,
    InvalidInput,
    RefExists,
    RepoExists,
    RepoMeta,
    RepoNotFound,
    RevisionNotFound,
    StorageError,
)

if TYPE_CHECKING:
    from zoo.hub_server.server import HubServer

#: Namespaces no repo may take: the API's own path prefixes and the web pages' (zoo.hub_server.web).
RESERVED_NAMESPACES = frozenset(
    {"api", "datasets", "spaces", "kernels", "buckets", "models", "leaderboard", "login", "logout", "static"}
)
#: An LFS object id: a lowercase sha256.
SHA256 = re.compile(r"[0-9a-f]{64}")
_HOST = re.compile(r"[A-Za-z0-9.:\[\]-]+")

_STORAGE_STATUS: dict[type[StorageError], tuple[int, str | None]] = {
    RepoNotFound: (404, "RepoNotFound"),
    RevisionNotFound: (404, "RevisionNotFound"),
    EntryNotFound: (404, "EntryNotFound"),
    Forbidden: (403, None),
    RepoExists: (409, None),
    RefExists: (409, None),
    CommitConflict: (412, None),
    InvalidInput: (400, None),
}


# ---------------------------------------------------------------------------------------------- errors
class HubJson(JSONResponse):
    """JSON as the stdlib writes it: a card's ``.nan`` stays NaN, as huggingface.co sends it."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content).encode()


def error_response(exc: HttpError) -> Response:
    """The Hub's error reply: ``{"error": ...}``, and the message and code in X-Error-* headers (ASCII, one
    line: a message may quote what the client sent)."""
    headers = {"X-Error-Message": header_text(exc.message)}
    if exc.code:
        headers["X-Error-Code"] = exc.code
    return HubJson({"error": exc.message, **exc.extra}, exc.status, {**headers, **exc.headers})


def header_text(text: str) -> str:
    """``text`` as a header value h11 writes: ASCII (others become '?'), runs of whitespace and control
    characters one space, no space at either end."""
    return " ".join(_CONTROLS.sub(" ", text.encode("ascii", "replace").decode()).split())


_CONTROLS = re.compile(r"[\x00-\x1f\x7f]")
_CONTROL_BYTES = re.compile(rb"[\x00-\x1f\x7f]+")


async def _on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HttpError)
    return error_response(exc)


async def _on_storage_error(request: Request, exc: Exception) -> Response:
    status, code = _STORAGE_STATUS.get(type(exc), (400, None))
    return error_response(HttpError(status, str(exc), code))


async def _on_starlette_error(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (no route, wrong method) in the Hub's shape."""
    assert isinstance(exc, HTTPException)
    path = raw_path(request.scope)
    if exc.status_code == 404 and path.startswith("/api/"):  # a Hub call this server leaves out
        return error_response(
            HttpError(501, f"{request.method} {path} is not a call zoo hub serve implements")
        )
    messages = {404: f"no route {path}", 405: f"{request.method} is not allowed on {path}"}
    return error_response(
        HttpError(exc.status_code, messages.get(exc.status_code, exc.detail), headers=dict(exc.headers or {}))
    )


EXCEPTION_HANDLERS: dict[Any, Callable[[Request, Exception], Any]] = {
    HttpError: _on_http_error,
    StorageError: _on_storage_error,
    HTTPException: _on_starlette_error,
}


# ---------------------------------------------------------------------------------------------- routes
class RawPathRoute(Route):
    """A Route matched against the percent-encoded path; its parameters are decoded after the match."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http":
            return Match.NONE, {}
        raw = scope.get("raw_path") or scope["path"].encode()
        match, child = super().matches({**scope, "path": raw.decode("latin-1"), "root_path": ""})
        if match is not Match.NONE:
            child["path_params"] = {key: unquote(value) for key, value in child["path_params"].items()}
        return match, child


class AccessLog:
    """One line per request on ``zoo.hub.access`` (:mod:`zoo.hub_server.logs`): method, path, status, time and
    user; no headers and no query string, so no secrets. The path is escaped: no request writes a line.
    The line is written before the answer's last bytes are sent, so whoever has the answer finds it
    logged; a request that ends without an answer is logged when it ends."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started, status, logged = time.perf_counter(), 0, False

        def log() -> None:
            nonlocal logged
            if not logged:
                logged = True
                failed = not status or (status >= 500 and status != 501)  # 501: a call left out, by design
                ACCESS.log(
                    logging.ERROR if failed else logging.INFO,
                    "%s %s %s %.1f ms user=%s",
                    scope["method"],
                    printable(raw_path(scope)),
                    status or "-",
                    1000 * (time.perf_counter() - started),
                    printable(scope.get(USER_KEY) or "-"),
                )

        async def send_logged(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                log()
            await send(message)

        try:
            await self.app(scope, receive, send_logged)
        finally:
            log()


class SafeHeaders:
    """Every response header value without control characters, whatever a route put there: h11 refuses to
    write a NUL or a line break, and the client would get a dropped connection instead of an answer."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_safe(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [
                    (name, _CONTROL_BYTES.sub(b" ", value).strip(b" \t"))
                    for name, value in message.get("headers", ())
                ]
            await send(message)

        await self.app(scope, receive, send_safe)


def raw_path(scope: Scope) -> str:
    return (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")


# ---------------------------------------------------------------------------------------------- calls
class Call:
    """One request as a handler sees it: the caller, the query, the body, and the access rules."""

    def __init__(self, hub: HubServer, request: Request, caller: TokenInfo | None):
        self.hub, self.request, self.caller = hub, request, caller
        self.storage = hub.storage

    def flag(self, name: str) -> bool:
        value = self.request.query_params.get(name)
        return value is not None and value.lower() in ("1", "true", "yes")

    def base_url(self) -> str:
        """The address the client used (its Host header), for URLs it must be able to reach back; the
        configured public URL behind a TLS proxy, whose clients reach back over https."""
        if self.hub.public_url:
            return self.hub.public_url
        host = self.request.headers.get("host", "")
        return f"http://{host}" if _HOST.fullmatch(host) else self.hub.url

    async def json(self) -> dict[str, Any]:
        """The JSON object body: read here within the limits, parsed in a worker thread."""
        limits = self.hub.limits
        data = await read_body(self.request, limits.json_body, limits.body_idle_timeout)
        return await run_in_threadpool(parse_json_object, data)

    async def form(self) -> dict[str, list[str]]:
        """An ``application/x-www-form-urlencoded`` body (paths-info), within the limits."""
        return await read_form(
            self.request, self.hub.limits.json_body, self.hub.limits.body_idle_timeout, 10_000
        )

    def readable(self, repo_id: str) -> RepoMeta:
        """The repo's metadata, if the caller may read it; a private repo is 'not found' to others."""
        meta = self.storage.repo_meta(repo_id)
        if meta.private and not self.hub.may_write(self.caller, repo_id.split("/")[0]):
            raise RepoNotFound(f"repo {repo_id} not found")
        return meta

    def writer(self, namespace: str) -> TokenInfo:
        """The caller, if they may write to ``namespace``; 401 without a token, 403 with someone else's."""
        if self.hub.may_write(self.caller, namespace):
            return self.caller or ANONYMOUS
        if self.caller is None:
            raise HttpError(401, "authentication required to write: set HF_TOKEN to a token of this server")
        raise HttpError(403, f"user {self.caller.user} may not write to namespace {namespace}")

    def writable(self, repo_id: str) -> TokenInfo:
        self.readable(repo_id)
        return self.writer(repo_id.split("/")[0])


Handler = Callable[..., Any]


def hub_route(hub: HubServer, path: str, methods: list[str], handler: Handler) -> RawPathRoute:
    """One route of the server: matched on the raw path, authenticated, errors in the Hub's shape."""
    return RawPathRoute(path, _endpoint(hub, handler), methods=methods)


#: Where :func:`caller_of` leaves the caller's name in the request's scope, for :class:`AccessLog`.
USER_KEY = "zoo.user"


def caller_of(hub: HubServer, request: Request) -> TokenInfo | None:
    """Who sends ``request``: its bearer token, else (for a page, a link or a <video> of a logged-in
    browser, which can only send cookies) its session cookie on GET and HEAD."""
    authorization = request.headers.get("authorization")
    if authorization or request.method not in ("GET", "HEAD"):
        caller = hub.authenticate(authorization)
    else:
        session = hub.sessions.caller(request.cookies.get(SESSION_COOKIE))
        caller = session if session is not None else hub.authenticate(None)
    request.scope[USER_KEY] = caller.user if caller else None  # for the access log
    return caller


def _endpoint(hub: HubServer, handler: Handler) -> Callable[[Request], Any]:
    """The Starlette endpoint for a handler: bound the head, authenticate, then run it (a plain function
    in a worker thread); an unexpected exception is reported with its traceback and answered 500."""
    is_async = inspect.iscoroutinefunction(handler)

    async def endpoint(request: Request) -> Response:
        try:
            check_head(request, hub.limits.header_bytes)
            call = Call(hub, request, caller_of(hub, request))
            if is_async:
                return await handler(call, **request.path_params)
            return await run_in_threadpool(handler, call, **request.path_params)
        except (HttpError, StorageError, HTTPException):
            raise
        except ClientDisconnect:
            raise HttpError(400, "request body ended early") from None
        except Exception:
            report_bug(request)
            raise HttpError(500, "internal server error") from None

    return endpoint


def report_bug(request: Request) -> None:
    """Log the exception being handled, a server bug, with its traceback on ``zoo.hub.error``; its lines
    are indented and escaped, so that none of it reads as a record of its own."""
    lines = traceback.format_exc().rstrip().splitlines()
    ERRORS.error(
        "%s %s\n  %s",
        request.method,
        printable(raw_path(request.scope)),
        "\n  ".join(printable(line) for line in lines),
    )
