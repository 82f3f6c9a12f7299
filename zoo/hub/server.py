"""``zoo hub serve``: a Hugging Face Hub compatible HTTP server, for teams that cannot use huggingface.co.

The standard client talks to it unchanged once pointed at it::

    export HF_ENDPOINT=http://127.0.0.1:8000 HF_HUB_DISABLE_XET=1   # and HF_TOKEN=... with a token file

For model repos it serves what huggingface_hub 2.4 sends for ``create_repo``, ``whoami``,
``upload_folder``/``upload_file``/``create_commit`` (README YAML validation, preupload, git-LFS batch
"basic" uploads, ndjson commits, pull-request refs), ``model_info``, ``list_repo_tree``/``list_repo_files``,
``list_repo_refs``, ``hf_hub_download``/``snapshot_download``/``ModelCard.load`` (HEAD/GET ``resolve`` with
the Hub's ETag, ``X-Repo-Commit``, ``X-Linked-*`` and Range headers) and the ``X-Error-Code`` replies the
client turns into ``RepositoryNotFoundError``, ``RevisionNotFoundError`` and ``EntryNotFoundError``.

Token file (``--token-file``), one token per line, ``#`` starts a comment::

    TOKEN USER [ORG,ORG...]

A token authenticates as USER, who may write to the repos whose namespace is USER or one of the ORGs, and
read the private ones there. Without a token file the server is an open dev server: every request acts as
user ``anonymous``, who may create and write everywhere (``HubServer.open_access``). With one, requests
without a token may read public repos only, writes need a token, and a token not in the file gets 401.
A private repo answers everyone else exactly as a missing repo does (404, ``X-Error-Code: RepoNotFound``),
so its existence does not leak.

Tokens never reach the log: the access log (off unless ``access_log`` is given) has one line per request,
``METHOD PATH STATUS``, without headers or query string (LFS upload URLs carry a signature there).

HTTP lives here (routing, auth, headers); files live in :mod:`zoo.hub.storage`.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import hmac
import json
import re
import secrets
import socketserver
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import parse_qs, quote, unquote, urlsplit

import yaml

from zoo.errors import ZooError
from zoo.hub.storage import (
    DEFAULT_BRANCH,
    CommitConflict,
    Delete,
    EntryNotFound,
    FileEntry,
    HubStorage,
    InvalidInput,
    Operation,
    Put,
    RepoExists,
    RepoMeta,
    RepoNotFound,
    RevisionNotFound,
    StorageError,
    check_name,
    check_path,
    path_view,
)

INVALID_CREDENTIALS = "Invalid credentials in Authorization header"  # the client's cue for "bad token"
LFS_THRESHOLD = 10 * 1024 * 1024  # roughly huggingface.co's rule: files from 10 MiB on go through git-LFS
LFS_PATTERNS = (
    "*.cleanrl_model", "*.pt", "*.pth", "*.bin", "*.ckpt", "*.safetensors", "*.onnx", "*.zip", "*.tar",
    "*.gz", "*.pkl", "*.pickle", "*.npy", "*.npz", "*.h5", "*.msgpack", "*.mp4", "*tfevents*",
)  # fmt: skip
UPLOAD_URL_TTL = 3600
RESERVED_NAMESPACES = frozenset({"api", "datasets", "spaces", "kernels", "buckets", "models"})
_JSON_LIMIT = 16 << 20
_COMMIT_LIMIT = 512 << 20
_CHUNK = 1 << 20
_POLL = 0.1  # seconds between the accept loop's shutdown checks: how long stop() may wait
_YAML_BLOCK = re.compile(r"^(\s*---[\r\n]+)([\S\s]*?)([\r\n]+---(\r\n|\n|$))")
_RANGE = re.compile(r"bytes=(\d*)-(\d*)")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_COMMIT_PREFIX = re.compile(r"[0-9a-fA-F]{5,40}")
_HOST = re.compile(r"[A-Za-z0-9.:\[\]-]+")
_JSON, _LFS_JSON = "application/json", "application/vnd.git-lfs+json"


# ---------------------------------------------------------------------------------------------- tokens
@dataclass(frozen=True)
class TokenInfo:
    """Who a token authenticates as, and the namespaces (user and orgs) they may write to."""

    user: str
    orgs: tuple[str, ...] = ()

    def owns(self, namespace: str) -> bool:
        return namespace == self.user or namespace in self.orgs


ANONYMOUS = TokenInfo("anonymous")


def load_tokens(path: Path) -> dict[str, TokenInfo]:
    """Parse a token file (``TOKEN USER [ORG,ORG...]`` per line, ``#`` comments).

    A bad file is a one-line :class:`ZooError` naming the file and line, never the token itself.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ZooError(f"cannot read token file {path}: {getattr(exc, 'strerror', None) or exc}") from exc
    tokens: dict[str, TokenInfo] = {}
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split("#", 1)[0].split()
        if fields:
            token, info = _token_line(fields, f"token file {path}, line {number}")
            if token in tokens:
                raise ZooError(f"token file {path}, line {number}: the same token appears twice")
            tokens[token] = info
    if not tokens:
        raise ZooError(f"token file {path} has no tokens", hint="one per line: TOKEN USER [ORG,ORG...]")
    return tokens


def _token_line(fields: list[str], where: str) -> tuple[str, TokenInfo]:
    if len(fields) not in (2, 3):
        raise ZooError(f"{where}: expected 'TOKEN USER [ORG,ORG...]'")
    token, user, *rest = fields
    orgs = tuple(rest[0].split(",")) if rest else ()
    if len(token) < 8 or not token.isascii():
        raise ZooError(f"{where}: a token must be at least 8 ASCII characters")
    for name in (user, *orgs):
        try:
            check_name(name, "user or org name")
        except InvalidInput as exc:
            raise ZooError(f"{where}: {exc}") from None
    return token, TokenInfo(user, orgs)


# ---------------------------------------------------------------------------------------------- content
def card_metadata(text: str) -> dict[str, Any]:
    """A README's YAML front matter as JSON-safe data ({} without one); ValueError with a one-line reason."""
    match = _YAML_BLOCK.match(text)
    if not match:
        return {}
    try:
        data = yaml.safe_load(match.group(2))
    except yaml.YAMLError as exc:
        raise ValueError("invalid YAML in the README.md metadata: " + " ".join(str(exc).split())) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError("the README.md metadata must be a YAML mapping (key: value)")
    return json.loads(json.dumps(data, default=str))  # dates and the like become strings


def upload_mode(path: str, size: int, sample: bytes) -> str:
    """'lfs' for large, binary or weight-like files, 'regular' (inline in the commit) for small text."""
    name = path.rsplit("/", 1)[-1].lower()
    if size >= LFS_THRESHOLD or b"\0" in sample or any(fnmatch.fnmatch(name, p) for p in LFS_PATTERNS):
        return "lfs"
    return "regular"


def card_tags(card: dict[str, Any]) -> list[str]:
    """The model's tags as the Hub derives them: the card's tags, its library and its license."""
    tags = card.get("tags") or []
    tags = [tags] if isinstance(tags, str) else list(tags)
    if isinstance(card.get("library_name"), str):
        tags.append(card["library_name"])
    if isinstance(card.get("license"), str):
        tags.append(f"license:{card['license']}")
    return list(dict.fromkeys(t for t in tags if isinstance(t, str)))


def tree_paths(files: dict[str, FileEntry], folder: str, recursive: bool) -> list[str]:
    """Files and folders under ``folder`` ('' for the root): direct children, or all with ``recursive``."""
    prefix = f"{folder}/" if folder else ""
    found: set[str] = set()
    for path in files:
        if not path.startswith(prefix):
            continue
        parts = path[len(prefix) :].split("/")
        depth = len(parts) if recursive else 1
        found.update(prefix + "/".join(parts[: i + 1]) for i in range(depth))
    return sorted(found)


def parse_range(header: str, size: int) -> tuple[int, int] | None:
    """``Range: bytes=a-b`` (also ``a-`` and ``-n``) as an inclusive (start, end); None to send it all.

    Several ranges are answered with the whole file, which RFC 9110 allows.
    """
    match = _RANGE.fullmatch(header.strip())
    if not match or match.group(1) == match.group(2) == "":
        return None
    first, last = match.groups()
    if first:
        start, end = int(first), min(int(last), size - 1) if last else size - 1
    else:
        start, end = max(size - int(last), 0), size - 1
    if start >= size or start > end or (not first and int(last) == 0):
        raise HttpError(416, f"range {header} is not satisfiable for {size} bytes",
                        headers={"Content-Range": f"bytes */{size}"})  # fmt: skip
    return start, end


# ---------------------------------------------------------------------------------------------- errors
class HttpError(Exception):
    """An error reply: JSON ``{"error": message, **extra}`` plus the Hub's X-Error-* headers."""

    def __init__(
        self,
        status: int,
        message: str,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ):
        super().__init__(message)
        self.status, self.message, self.code = status, message, code
        self.headers = headers or {}
        self.extra = extra or {}


_STORAGE_STATUS: dict[type[StorageError], tuple[int, str | None]] = {
    RepoNotFound: (404, "RepoNotFound"),
    RevisionNotFound: (404, "RevisionNotFound"),
    EntryNotFound: (404, "EntryNotFound"),
    RepoExists: (409, None),
    CommitConflict: (412, None),
    InvalidInput: (400, None),
}


def _from_storage(exc: StorageError) -> HttpError:
    status, code = _STORAGE_STATUS.get(type(exc), (400, None))
    return HttpError(status, str(exc), code)


# ---------------------------------------------------------------------------------------------- server
class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    hub: HubServer

    def server_bind(self) -> None:
        """Skip HTTPServer's reverse DNS lookup of the host: it can hang for seconds on an air-gapped box."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


class HubServer:
    """The Hub protocol over ``root``; ``start()`` serves from a daemon thread, ``serve_forever()`` blocks."""

    def __init__(
        self,
        root: Path,
        host: str = "127.0.0.1",
        port: int = 0,
        token_file: Path | None = None,
        *,
        access_log: TextIO | None = None,
    ):
        try:
            self.storage = HubStorage(Path(root))
        except OSError as exc:
            raise ZooError(f"cannot use {root} as hub storage: {exc.strerror or exc}") from exc
        self.tokens = load_tokens(token_file) if token_file is not None else {}
        self.open_access = token_file is None
        self.host, self.port = host, port
        self.url = ""
        self._access_log = access_log
        self._log_lock = threading.Lock()
        self._secret = secrets.token_bytes(32)  # signs LFS upload URLs, which the client PUTs without auth
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._serving = False  # set before the loop runs: shutdown() would wait forever for a loop never run

    def start(self) -> HubServer:
        httpd = self._bind()
        self._serving = True
        self._thread = threading.Thread(
            target=httpd.serve_forever, args=(_POLL,), name="zoo-hub", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        httpd = self._bind()
        self._serving = True
        httpd.serve_forever(_POLL)

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        if self._serving:
            httpd.shutdown()
            self._serving = False
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        httpd.server_close()

    def __enter__(self) -> HubServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _bind(self) -> _HTTPServer:
        if self._httpd is None:
            try:
                self._httpd = _HTTPServer((self.host, self.port), _Handler)
            except OSError as exc:
                raise ZooError(f"cannot listen on {self.host}:{self.port}: {exc.strerror or exc}") from exc
            self._httpd.hub = self
            self.url = f"http://{self.host}:{self._httpd.server_address[1]}"
        return self._httpd

    # ------------------------------------------------------------------------------------------ policy
    def authenticate(self, authorization: str | None) -> TokenInfo | None:
        """The caller; None for an anonymous request. A token that is not in the file is a 401."""
        if self.open_access:
            return ANONYMOUS
        if not authorization:
            return None
        scheme, _, token = authorization.partition(" ")
        given = token.strip().encode()
        if scheme.lower() == "bearer" and given:
            for known, info in self.tokens.items():
                if hmac.compare_digest(known.encode(), given):
                    return info
        raise HttpError(401, INVALID_CREDENTIALS)

    def may_write(self, caller: TokenInfo | None, namespace: str) -> bool:
        return self.open_access or (caller is not None and caller.owns(namespace))

    def upload_signature(self, repo_id: str, oid: str, size: int, expires: int) -> str:
        message = f"{repo_id}\n{oid}\n{size}\n{expires}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def log(self, line: str) -> None:
        if self._access_log is not None:
            self._write(self._access_log, line)

    def report(self, text: str) -> None:
        """A server bug (a traceback): to the access log if there is one, else stderr, never swallowed."""
        self._write(self._access_log or sys.stderr, text)

    def _write(self, stream: TextIO, text: str) -> None:
        with self._log_lock:
            stream.write(text + "\n")
            stream.flush()


# ---------------------------------------------------------------------------------------------- routes
_ANY = ("GET", "HEAD", "POST", "PUT", "DELETE")
_REPO = r"(?P<ns>[^/]+)/(?P<name>[^/]+?)"
_ROUTES: list[tuple[tuple[str, ...], re.Pattern[str], str]] = [
    (methods, re.compile(pattern), handler)
    for methods, pattern, handler in (
        (("GET",), r"/api/whoami-v2", "_whoami"),
        (("POST",), r"/api/repos/create", "_create_repo"),
        (("POST",), r"/api/validate-yaml", "_validate_yaml"),
        (_ANY, r"(?:/api)?/(?:datasets|spaces|kernels|buckets)/.*", "_unsupported_type"),
        (_ANY, rf"/api/models/{_REPO}/xet-(?:read|write)-token(?:/.*)?", "_no_xet"),
        (("GET",), rf"/api/models/{_REPO}(?:/revision/(?P<rev>[^/]+))?", "_model_info"),
        (("GET",), rf"/api/models/{_REPO}/tree/(?P<rev>[^/]+)(?:/(?P<path>.*))?", "_tree"),
        (("GET",), rf"/api/models/{_REPO}/refs", "_refs"),
        (("POST",), rf"/api/models/{_REPO}/preupload/(?P<rev>[^/]+)", "_preupload"),
        (("POST",), rf"/api/models/{_REPO}/commit/(?P<rev>[^/]+)", "_commit"),
        (("POST",), rf"/{_REPO}\.git/info/lfs/objects/batch", "_lfs_batch"),
        (("POST",), rf"/{_REPO}\.git/info/lfs/objects/verify", "_lfs_verify"),
        (("PUT",), rf"/{_REPO}\.git/info/lfs/objects/(?P<oid>[0-9a-f]{{64}})", "_lfs_upload"),
        (("GET", "HEAD"), rf"/{_REPO}/resolve/(?P<rev>[^/]+)/(?P<path>.+)", "_resolve"),
    )
]


def _route(method: str, path: str) -> tuple[str, dict[str, str]]:
    """The handler method's name and its arguments (URL-decoded; ``ns``/``name`` become ``repo_id``)."""
    allowed = False
    for methods, pattern, handler in _ROUTES:
        match = pattern.fullmatch(path)
        if match and method not in methods:
            allowed = True
        elif match:
            params = {key: unquote(value) for key, value in match.groupdict().items() if value is not None}
            if "ns" in params:
                params["repo_id"] = f"{params.pop('ns')}/{params.pop('name')}"
            return handler, params
    if allowed:
        raise HttpError(405, f"{method} is not allowed on {path}")
    raise HttpError(404, f"no route {path}")


class _Handler(BaseHTTPRequestHandler):
    """One request: route, authenticate, answer JSON or bytes; HTTP/1.1 keep-alive, bodies always drained."""

    server: _HTTPServer
    caller: TokenInfo | None
    protocol_version = "HTTP/1.1"
    server_version = "zoo-hub"
    timeout = 120  # an idle keep-alive connection holds a thread; let it go after a while

    def do_GET(self) -> None:
        self._dispatch()

    do_HEAD = do_POST = do_PUT = do_DELETE = do_GET

    @property
    def hub(self) -> HubServer:
        return self.server.hub

    @property
    def storage(self) -> HubStorage:
        return self.server.hub.storage

    # ------------------------------------------------------------------------------------------ plumbing
    def _dispatch(self) -> None:
        self._started = self._body_done = False
        try:
            self._handle()
        except (ConnectionError, TimeoutError):
            self.close_connection = True  # the client went away, possibly while we sent an error

    def _handle(self) -> None:
        url = urlsplit(self.path)
        self._query = parse_qs(url.query)
        try:
            handler, params = _route(self.command, url.path)
            self.caller = self.hub.authenticate(self.headers.get("Authorization"))
            getattr(self, handler)(**params)
        except HttpError as exc:
            self._send_error(exc)
        except StorageError as exc:
            self._send_error(_from_storage(exc))
        except (ConnectionError, TimeoutError):
            raise
        except Exception:
            self.hub.report(traceback.format_exc().rstrip())
            self._send_error(HttpError(500, "internal server error"))

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """One line per request, ``METHOD PATH STATUS``: no headers, no query string, so no secrets."""
        self.hub.log(f"{self.command} {urlsplit(self.path).path} {getattr(code, 'value', code)}")

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the base class, whose messages may quote raw request data."""

    def _flag(self, name: str) -> bool:
        values = self._query.get(name)
        return bool(values) and values[-1].lower() in ("1", "true", "yes")

    def _base_url(self) -> str:
        """The address the client used (its Host header), for URLs it must be able to reach back."""
        host = self.headers.get("Host", "")
        return f"http://{host}" if _HOST.fullmatch(host) else self.hub.url

    def _has_body(self) -> bool:
        return "Transfer-Encoding" in self.headers or self.headers.get("Content-Length", "0") not in ("", "0")

    def _body_chunks(self, limit: int) -> Iterator[bytes]:
        """The request body as it arrives (Content-Length or chunked encoding), at most ``limit`` bytes."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            yield from self._chunked_body(limit)
        else:
            try:
                remaining = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                raise HttpError(400, "bad Content-Length") from None
            if remaining > limit:
                raise HttpError(413, f"request body over {limit} bytes")
            yield from self._read_exactly(remaining)
        self._body_done = True

    def _read_exactly(self, size: int) -> Iterator[bytes]:
        """``size`` bytes of the body in chunks; a body that ends early is a 400."""
        while size:
            chunk = self.rfile.read(min(size, _CHUNK))
            if not chunk:
                raise HttpError(400, "request body ended early")
            size -= len(chunk)
            yield chunk

    def _chunked_body(self, limit: int) -> Iterator[bytes]:
        total = 0
        while True:
            try:
                size = int(self.rfile.readline(1024).split(b";")[0].strip(), 16)
            except ValueError:
                raise HttpError(400, "malformed chunked request body") from None
            if size == 0:
                break
            total += size
            if total > limit:
                raise HttpError(413, f"request body over {limit} bytes")
            yield from self._read_exactly(size)
            self.rfile.readline(16)  # the CRLF closing the chunk
        while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
            pass  # trailers

    def _json_body(self) -> dict[str, Any]:
        try:
            data = json.loads(b"".join(self._body_chunks(_JSON_LIMIT)) or b"{}")
        except ValueError:
            raise HttpError(400, "request body is not valid JSON") from None
        if not isinstance(data, dict):
            raise HttpError(400, "request body must be a JSON object")
        return data

    def _start(self, status: int, headers: dict[str, str], length: int) -> None:
        self._started = True
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(length))
        self.end_headers()

    def _send_json(
        self, data: Any, status: int = 200, headers: dict[str, str] | None = None, content_type: str = _JSON
    ) -> None:
        body = json.dumps(data).encode()
        self._start(status, {"Content-Type": content_type, **(headers or {})}, len(body))
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_error(self, exc: HttpError) -> None:
        if self._started:  # too late for an error reply: drop the connection, the client sees a cut
            self.close_connection = True
            return
        if self._has_body() and not self._body_done:
            self.close_connection = True  # the unread body would be taken for the next request
        headers = {"X-Error-Message": " ".join(exc.message.encode("ascii", "replace").decode().split())}
        if exc.code:
            headers["X-Error-Code"] = exc.code
        self._send_json({"error": exc.message, **exc.extra}, exc.status, {**headers, **exc.headers})

    # ------------------------------------------------------------------------------------------ access
    def _readable(self, repo_id: str) -> RepoMeta:
        """The repo's metadata, if the caller may read it; a private repo is 'not found' to others."""
        meta = self.storage.repo_meta(repo_id)
        if meta.private and not self.hub.may_write(self.caller, repo_id.split("/")[0]):
            raise RepoNotFound(f"repo {repo_id} not found")
        return meta

    def _writer(self, namespace: str) -> TokenInfo:
        """The caller, if they may write to ``namespace``; 401 without a token, 403 with someone else's."""
        if self.hub.may_write(self.caller, namespace):
            return self.caller or ANONYMOUS
        if self.caller is None:
            raise HttpError(401, "authentication required to write: set HF_TOKEN to a token of this server")
        raise HttpError(403, f"user {self.caller.user} may not write to namespace {namespace}")

    def _writable(self, repo_id: str) -> TokenInfo:
        self._readable(repo_id)
        return self._writer(repo_id.split("/")[0])

    # ------------------------------------------------------------------------------------------ api
    def _whoami(self) -> None:
        if self.caller is None:
            raise HttpError(401, INVALID_CREDENTIALS)
        user, orgs = self.caller.user, self.caller.orgs
        self._send_json({
            "type": "user", "id": user, "name": user, "fullname": user, "isPro": False,
            "orgs": [{"type": "org", "name": org, "fullname": org} for org in orgs],
            "auth": {"type": "access_token", "accessToken": {"displayName": "zoo-hub", "role": "write"}},
        })  # fmt: skip

    def _create_repo(self) -> None:
        body = self._json_body()
        if (body.get("type") or "model") != "model":
            raise HttpError(400, f"zoo hub serve hosts model repos only, not {body.get('type')}s")
        namespace = body.get("organization") or (self.caller.user if self.caller else None)
        if namespace is None:
            raise HttpError(401, "authentication required to create a repo: set HF_TOKEN")
        name = body.get("name")
        if not isinstance(name, str) or not isinstance(namespace, str):
            raise HttpError(400, "'name' (and 'organization', if given) must be strings")
        check_name(name, "repo name")
        if check_name(namespace, "namespace") in RESERVED_NAMESPACES:
            raise HttpError(400, f"namespace {namespace} is reserved")
        owner = self._writer(namespace)
        repo_id = f"{namespace}/{name}"
        private = body.get("visibility") == "private" or body.get("private") is True
        url = f"{self._base_url()}/{repo_id}"
        try:
            self.storage.create_repo(repo_id, owner.user, private)
        except RepoExists:  # with the url, so that create_repo(exist_ok=True) can answer it
            raise HttpError(409, f"model repo {repo_id} already exists", extra={"url": url}) from None
        self._send_json({"url": url, "name": repo_id, "id": repo_id})

    def _validate_yaml(self) -> None:
        content = self._json_body().get("content")
        if not isinstance(content, str):
            raise HttpError(400, "'content' must be the README text")
        try:
            card_metadata(content)
        except ValueError as exc:  # the client reads "errors" to explain the refusal
            raise HttpError(400, str(exc), extra={"errors": [{"message": str(exc)}]}) from None
        self._send_json({"errors": [], "warnings": []})

    def _unsupported_type(self) -> None:
        raise HttpError(400, "zoo hub serve hosts model repos only (no datasets, spaces, kernels or buckets)")

    def _no_xet(self, repo_id: str) -> None:
        raise HttpError(400, "this server does not speak Xet: set HF_HUB_DISABLE_XET=1 in the client")

    def _model_info(self, repo_id: str, rev: str = DEFAULT_BRANCH) -> None:
        meta = self._readable(repo_id)
        commit = self.storage.resolve(repo_id, rev)
        card = self._card(commit.files.get("README.md"))
        blobs = self._flag("blobs")
        info = {
            "_id": repo_id, "id": repo_id, "modelId": repo_id, "author": repo_id.split("/")[0],
            "sha": commit.id, "lastModified": commit.date, "createdAt": meta.created_at,
            "private": meta.private, "gated": False, "disabled": False, "downloads": 0, "likes": 0,
            "library_name": card.get("library_name"), "pipeline_tag": card.get("pipeline_tag"),
            "tags": card_tags(card),
            "siblings": [_sibling(path, entry, blobs) for path, entry in sorted(commit.files.items())],
        }  # fmt: skip
        if card:
            info["cardData"] = card
        self._send_json(info)

    def _card(self, readme: FileEntry | None) -> dict[str, Any]:
        """The README's metadata for ``cardData``; a README that does not parse simply has none."""
        if readme is None or readme.size > _JSON_LIMIT:
            return {}
        try:
            return card_metadata(self.storage.read_blob(readme).decode("utf-8", "replace"))
        except ValueError:
            return {}

    def _tree(self, repo_id: str, rev: str, path: str = "") -> None:
        self._readable(repo_id)
        commit = self.storage.resolve(repo_id, rev)
        folder = path.strip("/")
        paths = tree_paths(commit.files, folder, self._flag("recursive"))
        if folder and not paths:
            raise HttpError(
                404, f"folder {folder} not found at {rev}", "EntryNotFound", {"X-Repo-Commit": commit.id}
            )
        last = self.storage.last_commits(repo_id, commit, paths) if self._flag("expand") else {}
        items = []
        for item_path in paths:
            item = _tree_item(item_path, commit.files)
            if item_path in last:
                change = last[item_path]
                item["lastCommit"] = {"id": change.id, "title": change.title, "date": change.date}
            items.append(item)
        self._send_json(items)

    def _refs(self, repo_id: str) -> None:
        self._readable(repo_id)
        refs = self.storage.refs(repo_id)

        prs = sorted(refs["pr"].items(), key=lambda item: int(item[0]))
        data: dict[str, Any] = {
            "branches": [_ref(b, f"refs/heads/{b}", t) for b, t in sorted(refs["heads"].items())],
            "converts": [],
            "tags": [],
        }
        if self._flag("include_prs"):
            data["pullRequests"] = [_ref(f"refs/pr/{n}", f"refs/pr/{n}", t) for n, t in prs]
        self._send_json(data)

    # ------------------------------------------------------------------------------------------ uploads
    def _preupload(self, repo_id: str, rev: str) -> None:
        self._writable(repo_id)
        commit = self.storage.resolve(repo_id, rev)
        files = self._json_body().get("files")
        if not isinstance(files, list):
            raise HttpError(400, "'files' must be a list of {path, size, sample}")
        answer = []
        for item in files:
            try:
                path, size, sample = item["path"], int(item["size"]), base64.b64decode(item.get("sample", ""))
            except (KeyError, TypeError, ValueError, AttributeError):
                raise HttpError(400, "each file needs a path, a size and a base64 sample") from None
            existing = commit.files.get(path)
            answer.append({
                "path": path, "uploadMode": upload_mode(path, size, sample), "shouldIgnore": False,
                "oid": existing.etag if existing else None,
            })  # fmt: skip
        self._send_json({"files": answer, "commitOid": commit.id})

    def _lfs_batch(self, repo_id: str) -> None:
        self._writable(repo_id)
        body = self._json_body()
        if body.get("operation") != "upload":
            raise HttpError(400, "only the LFS 'upload' operation is supported; download with /resolve")
        objects = body.get("objects")
        if not isinstance(objects, list):
            raise HttpError(400, "'objects' must be a list of {oid, size}")
        answer = [self._lfs_object(repo_id, obj) for obj in objects]
        self._send_json(
            {"transfer": "basic", "objects": answer, "hash_algo": "sha256"}, content_type=_LFS_JSON
        )

    def _lfs_object(self, repo_id: str, obj: Any) -> dict[str, Any]:
        """Upload instructions for one object: none if the blob is stored, else PUT and verify URLs."""
        oid, size = (obj.get("oid"), obj.get("size")) if isinstance(obj, dict) else (None, None)
        if not (isinstance(oid, str) and _SHA256.fullmatch(oid) and isinstance(size, int) and size >= 0):
            message = "oid must be a lowercase sha256 and size a non-negative integer"
            return {"oid": str(oid), "size": size if isinstance(size, int) else 0,
                    "error": {"code": 422, "message": message}}  # fmt: skip
        if self.storage.has_blob(oid, size):
            return {"oid": oid, "size": size}
        expires = int(time.time()) + UPLOAD_URL_TTL
        signature = self.hub.upload_signature(repo_id, oid, size, expires)
        base = f"{self._base_url()}/{quote(repo_id)}.git/info/lfs/objects"
        upload = f"{base}/{oid}?size={size}&expires={expires}&signature={signature}"
        return {
            "oid": oid, "size": size, "authenticated": True,
            "actions": {"upload": {"href": upload, "expires_in": UPLOAD_URL_TTL},
                        "verify": {"href": f"{base}/verify"}},
        }  # fmt: skip

    def _lfs_upload(self, repo_id: str, oid: str) -> None:
        """The PUT of an LFS object. The client sends no token here: the signed URL is the authorization."""
        size = self._signed_size(repo_id, oid)
        declared = self.headers.get("Content-Length")
        if declared is not None and declared != str(size):
            raise HttpError(400, f"Content-Length {declared} does not match the announced size {size}")
        self.storage.store_blob(self._body_chunks(size), sha256=oid, size=size)
        self._send_json({})

    def _signed_size(self, repo_id: str, oid: str) -> int:
        """The size a valid, unexpired upload URL announces; 403 for anything else."""
        try:
            size, expires = int(self._query["size"][-1]), int(self._query["expires"][-1])
            expected = self.hub.upload_signature(repo_id, oid, size, expires)
            if hmac.compare_digest(self._query["signature"][-1], expected) and expires >= time.time():
                return size
        except (KeyError, ValueError):
            pass
        raise HttpError(403, "upload URL is invalid or expired; ask the LFS batch endpoint for a new one")

    def _lfs_verify(self, repo_id: str) -> None:
        self._writable(repo_id)
        body = self._json_body()
        oid, size = body.get("oid"), body.get("size")
        if not (isinstance(oid, str) and isinstance(size, int) and self.storage.has_blob(oid, size)):
            raise HttpError(404, f"LFS object {oid} of {size} bytes is not stored")
        self._send_json({})

    def _commit(self, repo_id: str, rev: str) -> None:
        author = self._writable(repo_id)
        header, ops = self._commit_payload(b"".join(self._body_chunks(_COMMIT_LIMIT)))
        summary, description = str(header.get("summary") or "").strip(), str(header.get("description") or "")
        parent = header.get("parentCommit")
        if not summary:
            raise HttpError(400, "the commit message (summary) is empty")
        if parent is not None and not (isinstance(parent, str) and _COMMIT_PREFIX.fullmatch(parent)):
            raise HttpError(400, "parentCommit must be a commit id (5 to 40 hex digits)")
        commit, pr_number = self.storage.commit(
            repo_id, rev, ops,
            message=summary + (f"\n\n{description}" if description.strip() else ""),
            author=author.user, parent_commit=parent, create_pr=self._flag("create_pr"),
        )  # fmt: skip
        base = f"{self._base_url()}/{repo_id}"
        self._send_json({
            "success": True, "commitOid": commit.id, "commitUrl": f"{base}/commit/{commit.id}",
            "pullRequestUrl": f"{base}/discussions/{pr_number}" if pr_number else None,
        })  # fmt: skip

    def _commit_payload(self, data: bytes) -> tuple[dict[str, Any], list[Operation]]:
        """The ndjson commit body: a header line, then one line per file added or deleted."""
        header: dict[str, Any] = {}
        ops: list[Operation] = []
        for number, line in enumerate(data.splitlines(), 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                key, value = item["key"], item["value"]
                if key == "header":
                    header = dict(value)
                else:
                    ops.append(self._operation(key, value))
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise HttpError(400, f"commit line {number} is malformed ({type(exc).__name__})") from None
        return header, ops

    def _operation(self, key: str, value: dict[str, Any]) -> Operation:
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
            return Put(check_path(value["path"]), self.storage.lfs_file(value["oid"], value.get("size")))
        if key in ("deletedFile", "deletedFolder"):
            return Delete(check_path(value["path"].rstrip("/")), folder=key == "deletedFolder")
        raise HttpError(400, f"unsupported commit operation {key!r}")

    # ------------------------------------------------------------------------------------------ files
    def _resolve(self, repo_id: str, rev: str, path: str) -> None:
        """A file's bytes, with the headers hf_hub_download reads from the HEAD before it GETs."""
        self._readable(repo_id)
        commit = self.storage.resolve(repo_id, rev)
        entry = commit.files.get(path)
        if entry is None:
            raise HttpError(404, f"{path} not found at {rev}", "EntryNotFound", {"X-Repo-Commit": commit.id})
        headers = {
            "ETag": f'"{entry.etag}"', "X-Repo-Commit": commit.id, "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
        }  # fmt: skip
        if entry.lfs:
            headers.update({"X-Linked-Etag": f'"{entry.sha256}"', "X-Linked-Size": str(entry.size)})
        span = parse_range(self.headers["Range"], entry.size) if self.headers.get("Range") else None
        start, end = span or (0, entry.size - 1)
        if span:
            headers["Content-Range"] = f"bytes {start}-{end}/{entry.size}"
        self._start(206 if span else 200, headers, end - start + 1)
        if self.command != "HEAD":
            self._copy_blob(entry, start, end - start + 1)

    def _copy_blob(self, entry: FileEntry, start: int, length: int) -> None:
        with self.storage.open_blob(entry) as fh:
            fh.seek(start)
            while length > 0:
                chunk = fh.read(min(length, _CHUNK))
                if not chunk:
                    raise ConnectionError("blob shorter than its entry")  # drop the connection, never pad
                self.wfile.write(chunk)
                length -= len(chunk)


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


def _tree_item(path: str, files: dict[str, FileEntry]) -> dict[str, Any]:
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
