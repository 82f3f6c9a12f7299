"""The Hub API's core routes behind ``zoo hub serve`` (uploads, commits, downloads, model info), and
what every route shares: :class:`Call`, :func:`hub_route`, the access log, safe response headers and the
Hub's error replies.
:func:`zoo.hub_server.asgi.create_app` puts them together with the other route modules.

Only bytes move on the event loop. A handler that is a plain function runs whole in a worker thread
(storage reads, YAML, JSON); an ``async`` handler reads its body with the bounds of
:mod:`zoo.hub_server.http_limits` and hands each piece of storage work to a thread. So a slow client, or a
request with much to compute, delays nobody else.

Routes match the path as the client sent it, percent-encoded (:class:`RawPathRoute`): the client quotes
a revision whole (``refs%2Fpr%2F1``), so its slashes must not split path segments. A web UI adds its
routes to the same app.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import inspect
import json
import logging
import mimetypes
import re
import time
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from zoo.hub.card_header import card_metadata
from zoo.hub_server.http_limits import (
    HttpError,
    body_blocks,
    body_lines,
    check_head,
    parse_json_object,
    read_body,
    read_form,
)
from zoo.hub_server.logs import ACCESS, ERRORS, PUSH, file_list, printable
from zoo.hub_server.protocol import (
    ANONYMOUS,
    INVALID_CREDENTIALS,
    TokenInfo,
    card_tags,
    tree_paths,
    upload_mode,
)
from zoo.hub_server.sessions import SESSION_COOKIE
from zoo.hub_server.storage import (
    DEFAULT_BRANCH,
    Commit,
    CommitConflict,
    Delete,
    EntryNotFound,
    FileEntry,
    Forbidden,
    HubStorage,
    InvalidInput,
    Operation,
    Put,
    RefExists,
    RepoExists,
    RepoLfs,
    RepoMeta,
    RepoNotFound,
    RevisionNotFound,
    StorageError,
    check_name,
    check_path,
    lfs_pointer,
    path_view,
)

if TYPE_CHECKING:
    from zoo.hub_server.server import HubServer

UPLOAD_URL_TTL = 3600
#: Namespaces no repo may take: the API's own path prefixes and the web pages' (zoo.hub_server.web).
RESERVED_NAMESPACES = frozenset(
    {"api", "datasets", "spaces", "kernels", "buckets", "models", "leaderboard", "login", "logout", "static"}
)
_SHA256 = re.compile(r"[0-9a-f]{64}")
_COMMIT_PREFIX = re.compile(r"[0-9a-fA-F]{5,40}")
_HOST = re.compile(r"[A-Za-z0-9.:\[\]-]+")
_LFS_JSON = "application/vnd.git-lfs+json"
_ANY = ["GET", "HEAD", "POST", "PUT", "DELETE"]

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
    path = _raw_path(request.scope)
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
                    printable(_raw_path(scope)),
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


def _raw_path(scope: Scope) -> str:
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
        printable(_raw_path(request.scope)),
        "\n  ".join(printable(line) for line in lines),
    )


# ---------------------------------------------------------------------------------------------- api
class HubApi:
    """The Hub API's handlers over one server's storage; :meth:`routes` lists them in matching order."""

    def __init__(self, hub: HubServer):
        self.hub, self.storage = hub, hub.storage

    def routes(self) -> list[BaseRoute]:
        repo, api = "{ns}/{name}", "/api/models/{ns}/{name}"
        table: list[tuple[str, list[str], Handler]] = [
            ("/api/whoami-v2", ["GET"], self.whoami),
            ("/api/repos/create", ["POST"], self.create_repo),
            ("/api/validate-yaml", ["POST"], self.validate_yaml),
            *[
                (f"{prefix}/{kind}/{{rest:path}}", _ANY, self.unsupported_type)
                for prefix in ("/api", "")
                for kind in ("datasets", "spaces", "kernels", "buckets")
            ],
            *[
                (f"{api}/xet-{mode}-token{tail}", _ANY, self.no_xet)
                for mode in ("read", "write")
                for tail in ("", "/{rest:path}")
            ],
            (api, ["GET"], self.model_info),
            (f"{api}/revision/{{rev}}", ["GET"], self.model_info),
            (f"{api}/tree/{{rev}}", ["GET"], self.tree),
            (f"{api}/tree/{{rev}}/{{path:path}}", ["GET"], self.tree),
            (f"{api}/refs", ["GET"], self.refs),
            (f"{api}/branch/{{branch}}", ["POST"], self.create_branch),
            (f"{api}/preupload/{{rev}}", ["POST"], self.preupload),
            (f"{api}/commit/{{rev}}", ["POST"], self.commit),
            (f"/{repo}.git/info/lfs/objects/batch", ["POST"], self.lfs_batch),
            (f"/{repo}.git/info/lfs/objects/verify", ["POST"], self.lfs_verify),
            (f"/{repo}.git/info/lfs/objects/{{oid}}", ["PUT"], self.lfs_upload),
            (f"/{repo}/resolve/{{rev}}/{{path:path}}", ["GET", "HEAD"], self.resolve),
            (f"/{repo}/raw/{{rev}}/{{path:path}}", ["GET", "HEAD"], self.raw),
        ]
        return [hub_route(self.hub, path, methods, handler) for path, methods, handler in table]

    # ------------------------------------------------------------------------------------------ api
    def whoami(self, call: Call) -> Response:
        if call.caller is None:
            raise HttpError(401, INVALID_CREDENTIALS)
        user, orgs = call.caller.user, call.caller.orgs
        return HubJson(
            {
                "type": "user",
                "id": user,
                "name": user,
                "fullname": user,
                "isPro": False,
                "orgs": [{"type": "org", "name": org, "fullname": org} for org in orgs],
                "auth": {"type": "access_token", "accessToken": {"displayName": "zoo-hub", "role": "write"}},
            }
        )

    async def create_repo(self, call: Call) -> Response:
        return await run_in_threadpool(self._create_repo, call, await call.json())

    def _create_repo(self, call: Call, body: dict[str, Any]) -> Response:
        if (body.get("type") or "model") != "model":
            raise HttpError(400, f"zoo hub serve hosts model repos only, not {body.get('type')}s")
        namespace = body.get("organization") or (call.caller.user if call.caller else None)
        if namespace is None:
            raise HttpError(401, "authentication required to create a repo: set HF_TOKEN")
        name = body.get("name")
        if not isinstance(name, str) or not isinstance(namespace, str):
            raise HttpError(400, "'name' (and 'organization', if given) must be strings")
        check_name(name, "repo name")
        if check_name(namespace, "namespace") in RESERVED_NAMESPACES:
            raise HttpError(400, f"namespace {namespace} is reserved")
        owner = call.writer(namespace)
        repo_id = f"{namespace}/{name}"
        private = body.get("visibility") == "private" or body.get("private") is True
        url = f"{call.base_url()}/{repo_id}"
        try:
            self.storage.create_repo(repo_id, owner.user, private)
        except RepoExists:  # with the url, so that create_repo(exist_ok=True) can answer it
            raise HttpError(409, f"model repo {repo_id} already exists", extra={"url": url}) from None
        self.hub.index.refresh(repo_id)
        return HubJson({"url": url, "name": repo_id, "id": repo_id})

    async def validate_yaml(self, call: Call) -> Response:
        content = (await call.json()).get("content")
        if not isinstance(content, str):
            raise HttpError(400, "'content' must be the README text")
        try:
            await run_in_threadpool(card_metadata, content)
        except ValueError as exc:  # the client reads "errors" to explain the refusal
            raise HttpError(400, str(exc), extra={"errors": [{"message": str(exc)}]}) from None
        return HubJson({"errors": [], "warnings": []})

    def unsupported_type(self, call: Call, rest: str) -> Response:
        raise HttpError(400, "zoo hub serve hosts model repos only (no datasets, spaces, kernels or buckets)")

    def no_xet(self, call: Call, ns: str, name: str, rest: str = "") -> Response:
        raise HttpError(400, "this server does not speak Xet: set HF_HUB_DISABLE_XET=1 in the client")

    def model_info(self, call: Call, ns: str, name: str, rev: str = DEFAULT_BRANCH) -> Response:
        repo_id = f"{ns}/{name}"
        meta = call.readable(repo_id)
        commit = self.storage.resolve(repo_id, rev)
        card = self.hub.index.card(commit.files.get("README.md"))
        blobs = call.flag("blobs")
        info = {
            "_id": repo_id,
            "id": repo_id,
            "modelId": repo_id,
            "author": ns,
            "sha": commit.id,
            "lastModified": commit.date,
            "createdAt": meta.created_at,
            "private": meta.private,
            "gated": False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "library_name": card.get("library_name"),
            "pipeline_tag": card.get("pipeline_tag"),
            "tags": card_tags(card),
            "siblings": [_sibling(path, entry, blobs) for path, entry in sorted(commit.files.items())],
        }
        if card:
            info["cardData"] = card
        return HubJson(info)

    def tree(self, call: Call, ns: str, name: str, rev: str, path: str = "") -> Response:
        repo_id = f"{ns}/{name}"
        call.readable(repo_id)
        commit = self.storage.resolve(repo_id, rev)
        folder = path.strip("/")
        paths = tree_paths(commit.files, folder, call.flag("recursive"))
        if folder and not paths:
            raise HttpError(
                404, f"folder {folder} not found at {rev}", "EntryNotFound", {"X-Repo-Commit": commit.id}
            )
        return HubJson(tree_items(self.storage, repo_id, commit, paths, call.flag("expand")))

    def refs(self, call: Call, ns: str, name: str) -> Response:
        repo_id = f"{ns}/{name}"
        call.readable(repo_id)
        refs = self.storage.refs(repo_id)
        prs = sorted(refs["pr"].items(), key=lambda item: int(item[0]))
        data: dict[str, Any] = {
            "branches": [_ref(b, f"refs/heads/{b}", t) for b, t in sorted(refs["heads"].items())],
            "converts": [],
            "tags": [_ref(t, f"refs/tags/{t}", c) for t, c in sorted(refs["tags"].items())],
        }
        if call.flag("include_prs"):
            data["pullRequests"] = [_ref(f"refs/pr/{n}", f"refs/pr/{n}", t) for n, t in prs]
        return HubJson(data)

    async def create_branch(self, call: Call, ns: str, name: str, branch: str) -> Response:
        """``HfApi.create_branch``: 409 if it exists, as huggingface.co answers (``exist_ok`` reads it)."""
        repo_id = f"{ns}/{name}"
        await run_in_threadpool(call.writable, repo_id)
        start = (await call.json()).get("startingPoint")
        if start is not None and not isinstance(start, str):
            raise HttpError(400, "'startingPoint' must be a revision (a branch, refs/pr/N or a commit id)")
        await run_in_threadpool(self.storage.create_branch, repo_id, branch, start)
        return HubJson({})

    # ------------------------------------------------------------------------------------------ uploads
    async def preupload(self, call: Call, ns: str, name: str, rev: str) -> Response:
        repo_id = f"{ns}/{name}"
        await run_in_threadpool(call.writable, repo_id)
        return await run_in_threadpool(self._preupload, repo_id, rev, await call.json())

    def _preupload(self, repo_id: str, rev: str, body: dict[str, Any]) -> Response:
        commit = self.storage.resolve(repo_id, rev)
        files = body.get("files")
        if not isinstance(files, list):
            raise HttpError(400, "'files' must be a list of {path, size, sample}")
        answer = []
        for item in files:
            try:
                path, size, sample = item["path"], int(item["size"]), base64.b64decode(item.get("sample", ""))
            except (KeyError, TypeError, ValueError, AttributeError):
                raise HttpError(400, "each file needs a path, a size and a base64 sample") from None
            existing = commit.files.get(path)
            answer.append(
                {
                    "path": path,
                    "uploadMode": upload_mode(path, size, sample),
                    "shouldIgnore": False,
                    "oid": existing.etag if existing else None,
                }
            )
        return HubJson({"files": answer, "commitOid": commit.id})

    async def lfs_batch(self, call: Call, ns: str, name: str) -> Response:
        """The LFS batch endpoint, for uploads: per object, nothing to do if this repo already has it (its
        record, and the blob), else signed upload URLs. So an object stored for another repo reads as
        absent here: the client uploads its bytes, which proves it has them."""
        repo_id = f"{ns}/{name}"
        await run_in_threadpool(call.writable, repo_id)
        body = await call.json()
        if body.get("operation") != "upload":
            raise HttpError(400, "only the LFS 'upload' operation is supported; download with /resolve")
        objects, most = body.get("objects"), self.hub.limits.lfs_batch_objects
        if not isinstance(objects, list):
            raise HttpError(400, "'objects' must be a list of {oid, size}")
        if len(objects) > most:
            raise HttpError(413, f"over {most} objects in one LFS batch request; send them in several")
        answer = await run_in_threadpool(self._lfs_answer, call, repo_id, objects)
        parts = any("header" in obj.get("actions", {}).get("upload", {}) for obj in answer)
        return HubJson(
            {"transfer": "multipart" if parts else "basic", "objects": answer, "hash_algo": "sha256"},
            media_type=_LFS_JSON,
        )

    def _lfs_answer(self, call: Call, repo_id: str, objects: list[Any]) -> list[dict[str, Any]]:
        """One answer per object, each checked before any URL is made: a malformed object, one over
        ``lfs_max_size`` and the objects past ``lfs_batch_parts`` part URLs in all get an error (422)."""
        limits, budget, answer = self.hub.limits, self.hub.limits.lfs_batch_parts, []
        for obj in objects:
            oid, size = (obj.get("oid"), obj.get("size")) if isinstance(obj, dict) else (None, None)
            if not (isinstance(oid, str) and _SHA256.fullmatch(oid) and type(size) is int and size >= 0):
                answer.append(
                    _lfs_error(oid, size, "oid must be a lowercase sha256 and size a non-negative integer")
                )
            elif size > limits.lfs_max_size:
                answer.append(
                    _lfs_error(
                        oid,
                        size,
                        f"LFS object of {size} bytes is over the "
                        f"{size_text(limits.lfs_max_size)} this server accepts per file (its "
                        "operator can raise it: zoo hub serve --max-lfs-size)",
                    )
                )
            elif self.storage.lfs_ready(repo_id, oid, size):
                answer.append({"oid": oid, "size": size})
            elif (parts := limits.part_count(size) if size > limits.lfs_part_size else 0) > budget:
                answer.append(
                    _lfs_error(
                        oid,
                        size,
                        f"this LFS batch needs over {limits.lfs_batch_parts} upload "
                        "parts in all: upload these files in several commits",
                    )
                )
            else:
                budget -= parts
                answer.append(self._upload_actions(call, repo_id, oid, size))
        return answer

    def _upload_actions(self, call: Call, repo_id: str, oid: str, size: int) -> dict[str, Any]:
        """Signed PUT and verify URLs for one object; above ``lfs_part_size``, the Hub's multipart
        transfer: one PUT per part (at most ``lfs_max_parts``), then a completion POST."""
        expires = int(time.time()) + UPLOAD_URL_TTL
        signed = f"size={size}&expires={expires}&signature={self.hub.upload_signature(repo_id, oid, size, expires)}"
        base = f"{call.base_url()}/{quote(repo_id)}.git/info/lfs/objects"
        upload: dict[str, Any] = {"href": f"{base}/{oid}?{signed}", "expires_in": UPLOAD_URL_TTL}
        limits = self.hub.limits
        if size > limits.lfs_part_size:
            upload["href"] = f"{base}/complete/{oid}?{signed}"
            upload["header"] = {
                "chunk_size": str(limits.part_size(size)),
                **{str(n): f"{base}/{oid}/part/{n}?{signed}" for n in range(1, limits.part_count(size) + 1)},
            }
        return {
            "oid": oid,
            "size": size,
            "authenticated": True,
            "actions": {"upload": upload, "verify": {"href": f"{base}/verify"}},
        }

    async def lfs_upload(self, call: Call, ns: str, name: str, oid: str) -> Response:
        """The PUT of an LFS object, streamed to storage: the client sends no token here, the signed URL is
        the authorization, and the size it announces bounds the body. Once verified, the object is the
        repo's to commit (even when the same bytes were stored already, for another repo)."""
        if not _SHA256.fullmatch(oid):
            raise HttpError(404, f"no route {_raw_path(call.request.scope)}")
        repo_id = f"{ns}/{name}"
        size = signed_size(call, repo_id, oid)
        declared = call.request.headers.get("content-length")
        if declared is not None and declared != str(size):
            raise HttpError(
                400,
                f"Content-Length {declared} does not match the announced size {size}",
                headers={"Connection": "close"},
            )
        upload = await run_in_threadpool(self.storage.open_upload, oid, size)
        try:
            async for block in body_blocks(call.request, size, self.hub.limits.body_idle_timeout):
                await run_in_threadpool(upload.write, block)
            await run_in_threadpool(upload.finish)
        finally:
            upload.close()  # two syscalls, here: a cancelled request must not keep its temp file
        await run_in_threadpool(self.storage.grant_lfs, repo_id, oid)
        return HubJson({})

    async def lfs_verify(self, call: Call, ns: str, name: str) -> Response:
        repo_id = f"{ns}/{name}"
        await run_in_threadpool(call.writable, repo_id)
        body = await call.json()
        oid, size = body.get("oid"), body.get("size")
        if not (
            isinstance(oid, str)
            and _SHA256.fullmatch(oid)
            and type(size) is int
            and await run_in_threadpool(self.storage.lfs_ready, repo_id, oid, size)
        ):
            raise HttpError(404, f"that LFS object is not stored for {repo_id}")
        return HubJson({})

    async def commit(self, call: Call, ns: str, name: str, rev: str) -> Response:
        """An ndjson commit, read line by line: each inline file is stored as its line arrives."""
        repo_id = f"{ns}/{name}"
        author = await run_in_threadpool(call.writable, repo_id)
        header: dict[str, Any] = {}
        ops: list[Operation] = []
        number, lfs = 0, RepoLfs(self.storage, repo_id)
        async for line in body_lines(call.request, self.hub.limits):
            number += 1
            if line.strip():
                item = await run_in_threadpool(self._commit_line, lfs, number, line)
                if isinstance(item, dict):
                    header = item
                else:
                    ops.append(item)
        return await run_in_threadpool(self._apply_commit, call, repo_id, rev, author, header, ops)

    def _commit_line(self, lfs: RepoLfs, number: int, line: bytes) -> dict[str, Any] | Operation:
        """One ndjson line: the header (a dict) or one file added or deleted."""
        try:
            item = json.loads(line)
            key, value = item["key"], item["value"]
            return dict(value) if key == "header" else self._operation(lfs, key, value)
        except RecursionError:
            raise HttpError(400, f"commit line {number} is nested too deeply") from None
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise HttpError(400, f"commit line {number} is malformed ({type(exc).__name__})") from None

    def _operation(self, lfs: RepoLfs, key: str, value: dict[str, Any]) -> Operation:
        if key == "file":
            if value.get("encoding", "base64") != "base64":
                raise HttpError(400, "inline files must be base64-encoded")
            path, data = check_path(value["path"]), base64.b64decode(value["content"], validate=True)
            if path == "README.md":
                try:
                    card_metadata(data.decode("utf-8", "replace"))
                except ValueError as exc:
                    raise HttpError(400, str(exc)) from None
            return Put(path, self.storage.regular_file(data))
        if key == "lfsFile":
            if value.get("algo", "sha256") != "sha256":
                raise HttpError(400, "LFS objects are addressed by sha256")
            size = value.get("size")
            if size is not None and type(size) is not int:
                raise HttpError(400, "an lfsFile's size must be an integer")
            return Put(check_path(value["path"]), self.storage.lfs_file(lfs, value["oid"], size))
        if key in ("deletedFile", "deletedFolder"):
            return Delete(check_path(value["path"].rstrip("/")), folder=key == "deletedFolder")
        raise HttpError(400, f"unsupported commit operation {key!r}")

    def _apply_commit(
        self,
        call: Call,
        repo_id: str,
        rev: str,
        author: TokenInfo,
        header: dict[str, Any],
        ops: list[Operation],
    ) -> Response:
        summary, description = str(header.get("summary") or "").strip(), str(header.get("description") or "")
        parent = header.get("parentCommit")
        if not summary:
            raise HttpError(400, "the commit message (summary) is empty")
        if parent is not None and not (isinstance(parent, str) and _COMMIT_PREFIX.fullmatch(parent)):
            raise HttpError(400, "parentCommit must be a commit id (5 to 40 hex digits)")
        commit, pr_number = self.storage.commit(
            repo_id,
            rev,
            ops,
            message=summary + (f"\n\n{description}" if description.strip() else ""),
            author=author.user,
            parent_commit=parent,
            create_pr=call.flag("create_pr"),
        )
        self.hub.index.refresh(repo_id)
        changes = [
            f"+{op.path}" if isinstance(op, Put) else f"-{op.path}{'/' if op.folder else ''}" for op in ops
        ]
        PUSH.info(
            "commit %s %s %s user=%s files=%d: %s",
            repo_id,
            printable(f"refs/pr/{pr_number}" if pr_number else rev),
            commit.id[:12],
            printable(author.user),
            len(ops),
            file_list(changes),
        )
        base = f"{call.base_url()}/{repo_id}"
        return HubJson(
            {
                "success": True,
                "commitOid": commit.id,
                "commitUrl": f"{base}/commit/{commit.id}",
                "pullRequestUrl": f"{base}/discussions/{pr_number}" if pr_number else None,
            }
        )

    # ------------------------------------------------------------------------------------------ files
    def _entry(self, call: Call, repo_id: str, rev: str, path: str) -> tuple[Commit, FileEntry]:
        call.readable(repo_id)
        commit = self.storage.resolve(repo_id, rev)
        entry = commit.files.get(path)
        if entry is None:
            raise HttpError(404, f"{path} not found at {rev}", "EntryNotFound", {"X-Repo-Commit": commit.id})
        return commit, entry

    def raw(self, call: Call, ns: str, name: str, rev: str, path: str) -> Response:
        """A file as git holds it, as the Hub's /raw/ answers: the content of a regular file, the pointer
        of an LFS one; always as plain text, so no upload renders as a page of this server."""
        commit, entry = self._entry(call, f"{ns}/{name}", rev, path)
        body = lfs_pointer(entry.sha256, entry.size) if entry.lfs else self.storage.read_blob(entry)
        headers = {"ETag": f'"{entry.git_sha1}"', "X-Repo-Commit": commit.id, **_UNTRUSTED_CONTENT}
        return Response(body, headers=headers, media_type="text/plain; charset=utf-8")

    def resolve(self, call: Call, ns: str, name: str, rev: str, path: str) -> Response:
        """A file's bytes (Starlette's FileResponse: Range, 206, 416, HEAD), with the headers
        hf_hub_download reads from the HEAD before it GETs. Images, videos and text get their type, for
        the web pages' <img> and <video>; nothing else does, so no upload runs as a script or a page."""
        repo_id = f"{ns}/{name}"
        commit, entry = self._entry(call, repo_id, rev, path)
        headers = {"ETag": f'"{entry.etag}"', "X-Repo-Commit": commit.id, **_UNTRUSTED_CONTENT}
        if entry.lfs:
            headers.update({"X-Linked-Etag": f'"{entry.sha256}"', "X-Linked-Size": str(entry.size)})
        blob = self.storage.blob_path(entry.sha256)
        stat = blob.stat()
        if stat.st_size != entry.size:  # never send a length the commit does not promise
            raise RuntimeError(f"blob {entry.sha256} has {stat.st_size} bytes, its commit says {entry.size}")
        return FileResponse(blob, headers=headers, media_type=safe_media_type(path), stat_result=stat)


#: Headers on every file served from a repo: never sniffed into a script, never run as a page.
_UNTRUSTED_CONTENT = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "sandbox; default-src 'none'",
}
_SAFE_MEDIA_TYPES = frozenset(
    {
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
        "video/mp4",
        "video/webm",
        "text/plain",
        "text/markdown",
        "application/json",
    }
)


def safe_media_type(path: str) -> str:
    """The type a repo file is served with: its own for media and plain data, else octet-stream (an
    HTML or SVG file from a repo must never render as a page of this server)."""
    guessed = mimetypes.guess_type(path, strict=False)[0]
    if guessed in _SAFE_MEDIA_TYPES:
        return f"{guessed}; charset=utf-8" if guessed.startswith("text/") else guessed
    return "application/octet-stream"


def _lfs_error(oid: Any, size: Any, message: str) -> dict[str, Any]:
    """A batch answer's refusal of one object (422, the git-LFS code for an object it cannot take)."""
    return {
        "oid": oid if isinstance(oid, str) else "",
        "size": size if type(size) is int else 0,
        "error": {"code": 422, "message": message},
    }


def size_text(size: int) -> str:
    """A limit in bytes as people write it: ``50 GiB`` when it is whole GiB (or TiB, MiB, KiB)."""
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} bytes"


def signed_size(call: Call, repo_id: str, oid: str) -> int:
    """The size a valid, unexpired upload URL (of :meth:`HubApi._lfs_object`) announces; 403 otherwise."""
    query = call.request.query_params
    try:
        size, expires = int(query["size"]), int(query["expires"])
        expected = call.hub.upload_signature(repo_id, oid, size, expires)
        if hmac.compare_digest(query["signature"], expected) and expires >= time.time():
            return size
    except (KeyError, ValueError):
        pass
    raise HttpError(403, "upload URL is invalid or expired; ask the LFS batch endpoint for a new one")


def _ref(name: str, ref: str, target: str) -> dict[str, str]:
    return {"name": name, "ref": ref, "targetCommit": target}


def _sibling(path: str, entry: FileEntry, blobs: bool) -> dict[str, Any]:
    """A ``siblings`` item of model_info; sizes and LFS details only when asked (``files_metadata``)."""
    if not blobs:
        return {"rfilename": path}
    item: dict[str, Any] = {"rfilename": path, "size": entry.size, "blobId": entry.git_sha1}
    if entry.lfs:
        item["lfs"] = {"size": entry.size, "sha256": entry.sha256, "pointerSize": entry.pointer_size}
    return item


def tree_items(
    storage: HubStorage, repo_id: str, commit: Commit, paths: list[str], expand: bool
) -> list[dict]:
    """Tree listing items of ``paths`` (``list_repo_tree``, ``get_paths_info``); with ``expand``, each with
    the commit that last changed it."""
    last = storage.last_commits(repo_id, commit, paths) if expand else {}
    items = []
    for path in paths:
        item = tree_item(path, commit.files)
        if path in last:
            change = last[path]
            item["lastCommit"] = {"id": change.id, "title": change.title, "date": change.date}
        items.append(item)
    return items


def tree_item(path: str, files: dict[str, FileEntry]) -> dict[str, Any]:
    """A tree listing item: a file with its git oid (and LFS details), or a folder with a content hash."""
    entry = files.get(path)
    if entry is None:
        listing = "".join(f"{p} {e.git_sha1}\n" for p, e in path_view(files, path))
        oid = hashlib.sha1(listing.encode()).hexdigest()
        return {"type": "directory", "oid": oid, "size": 0, "path": path}
    item: dict[str, Any] = {"type": "file", "oid": entry.git_sha1, "size": entry.size, "path": path}
    if entry.lfs:
        item["lfs"] = {"oid": entry.sha256, "size": entry.size, "pointerSize": entry.pointer_size}
    return item
