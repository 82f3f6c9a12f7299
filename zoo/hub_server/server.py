"""``zoo hub serve``: a Hugging Face Hub compatible HTTP server, for teams that cannot use huggingface.co.

The standard client talks to it unchanged once pointed at it::

    export HF_ENDPOINT=http://127.0.0.1:8000 HF_HUB_DISABLE_XET=1   # and HF_TOKEN=... with a token file

For model repos it serves what huggingface_hub 2.4 sends for ``create_repo``, ``whoami``,
``upload_folder``/``upload_file``/``create_commit`` (README YAML validation, preupload, git-LFS batch
"basic" uploads, ndjson commits, pull-request refs), ``model_info``, ``list_repo_tree``/``list_repo_files``,
``list_repo_refs``, ``create_branch``, ``hf_hub_download``/``snapshot_download``/``ModelCard.load``
(HEAD/GET ``resolve`` with the Hub's ETag, ``X-Repo-Commit``, ``X-Linked-*`` and Range headers) and the
``X-Error-Code`` replies the client turns into ``RepositoryNotFoundError``, ``RevisionNotFoundError`` and
``EntryNotFoundError``. :mod:`zoo.hub_server.repo_api` adds what a team does with its repos (``list_models``,
``hf repos ls``, branches and tags, commit history, ``get_paths_info``, ``delete_repo``, ``move_repo``,
``update_repo_settings``), :mod:`zoo.hub_server.lfs_multipart` the multipart LFS transfer, :mod:`zoo.hub_server.web` the
web pages; :mod:`zoo.hub_server.unsupported` answers the rest with a 501 that names the call.

Token file (``--token-file``), one token per line, ``#`` starts a comment::

    TOKEN USER [ORG,ORG...]

A token authenticates as USER, who may write to the repos whose namespace is USER or one of the ORGs, and
read the private ones there. Without a token file the server is an open dev server: every request acts as
user ``anonymous``, who may create and write everywhere (``HubServer.open_access``). With one, requests
without a token may read public repos only, writes need a token, and a token not in the file gets 401.
A private repo answers everyone else exactly as a missing repo does (404, ``X-Error-Code: RepoNotFound``),
so its existence does not leak.

Tokens never reach the log (:mod:`zoo.hub_server.logs`): one line per request, ``METHOD PATH STATUS TIME user=USER``,
without headers or query string (LFS upload URLs carry a signature there), one per commit and one per
re-evaluation event, on Python loggers under ``zoo.hub`` that ``zoo hub serve --log-level`` prints.

The stack: uvicorn (h11) runs one event loop in a thread of its own (``start``) or in the caller's
(``serve_forever``); :mod:`zoo.hub_server.asgi` is the Starlette app (its routes in the route modules, their shared auth and headers in :mod:`zoo.hub_server.routing`) and runs storage work
in worker threads; :mod:`zoo.hub_server.http_limits` bounds what one request may cost; files live in
:mod:`zoo.hub_server.storage`. This module holds the users, the content rules and the server's lifecycle.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib.util
import re
import secrets
import signal
import socket
import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from zoo.errors import ZooError
from zoo.hub_server.http_limits import HttpError, Limits
from zoo.hub_server.index import HubIndex
from zoo.hub_server.protocol import ANONYMOUS, INVALID_CREDENTIALS, TokenInfo, load_tokens
from zoo.hub_server.sessions import Sessions
from zoo.hub_server.storage import HubStorage

if TYPE_CHECKING:
    import uvicorn

    from zoo.hub_server.reevaluate import Reevaluator


_PUBLIC_URL = re.compile(r"https?://[A-Za-z0-9.-]+(?::\d{1,5})?")
#: What the ``server`` extra installs (pyproject.toml): the web stack, which the client (zoo.hub) never needs.
SERVER_MODULES = ("starlette", "uvicorn", "markdown_it", "nh3")


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signal.SIGTERM)


def check_public_url(url: str) -> str:
    """``--public-url``: the scheme, host and port clients reach the server at (a TLS proxy's), with no
    path: the routes are served from the root. The server builds the URLs it hands out (LFS uploads, repo
    URLs) from it instead of the request's Host header, which a proxy may not pass on."""
    url = url.rstrip("/")
    if not _PUBLIC_URL.fullmatch(url):
        raise ZooError(
            f"invalid public URL {url!r}: give the scheme, host and port only",
            hint="e.g. --public-url https://hub.lab.example",
        )
    return url


def require_server_extra() -> None:
    """Refuse, in one line naming the install command, when a module of the ``server`` extra is missing:
    checked before the storage folder is touched, so a base install serves nothing and writes nothing."""
    for module in SERVER_MODULES:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a finder that refuses the name, or a module without a spec
            found = False
        if not found:
            raise ZooError(
                f"zoo hub serve needs the server extra ({module} is not installed): "
                "pip install 'rl-zoo-hub[server]'"
            )


class HubServer:
    """The Hub protocol over ``root``; ``start()`` serves from a daemon thread, ``serve_forever()`` blocks.

    ``serve_forever`` in the main thread lets uvicorn handle SIGINT and SIGTERM: requests in flight get
    ``limits.shutdown_grace`` seconds, then the signal goes on (KeyboardInterrupt for Ctrl-C,
    ``SystemExit(143)`` for SIGTERM, once the re-evaluation worker has stopped).
    """

    def __init__(
        self,
        root: Path,
        host: str = "127.0.0.1",
        port: int = 0,
        token_file: Path | None = None,
        *,
        limits: Limits | None = None,
        public_url: str | None = None,
        reevaluate: bool = False,
        reevaluate_timeout: float | None = None,
    ):
        require_server_extra()
        self.tokens = load_tokens(token_file) if token_file is not None else {}
        self.open_access = token_file is None
        self.limits = limits or Limits()
        try:
            self.storage = HubStorage(Path(root))
            self.index = HubIndex(self.storage, self.may_read, self.limits.json_body)
        except (OSError, sqlite3.Error) as exc:
            raise ZooError(
                f"cannot use {root} as hub storage: {getattr(exc, 'strerror', None) or exc}"
            ) from exc
        self.sessions = Sessions(self.authenticate)
        self.host, self.port = host, port
        self.url = ""
        self.public_url = check_public_url(public_url) if public_url else None  # behind a TLS proxy
        self._secret = secrets.token_bytes(32)  # signs LFS upload URLs, which the client PUTs without auth
        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.reevaluator: Reevaluator | None = None
        if reevaluate:  # opt-in: the server evaluates each new main head itself (zoo.hub_server.reevaluate)
            from zoo.hub_server.reevaluate import DEFAULT_TIMEOUT, Reevaluator

            self.reevaluator = Reevaluator(self, timeout=reevaluate_timeout or DEFAULT_TIMEOUT)

    def bind(self) -> HubServer:
        """Listen on host:port now, so that ``url`` is known (port 0 picks one) before serving starts."""
        if self._socket is None:
            try:
                self._socket = socket.create_server((self.host, self.port))
            except OSError as exc:
                raise ZooError(f"cannot listen on {self.host}:{self.port}: {exc.strerror or exc}") from exc
            self.url = f"http://{self.host}:{self._socket.getsockname()[1]}"
        return self

    def start(self) -> HubServer:
        server, sock = self._uvicorn()
        if self.reevaluator is not None:
            self.reevaluator.start()
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="zoo-hub", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 30
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise ZooError(f"the hub server on {self.url} did not start")
            time.sleep(0.005)
        return self

    def serve_forever(self) -> None:
        """Serve until SIGINT or SIGTERM. uvicorn re-raises the signal once requests in flight are done;
        SIGTERM is then turned into ``SystemExit(143)`` (the exit status of a SIGTERM'd process), so that
        the re-evaluation worker still stops and kills an evaluation in flight before the process ends."""
        server, sock = self._uvicorn()
        in_main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGTERM, _exit_on_sigterm) if in_main else None
        if self.reevaluator is not None:
            self.reevaluator.start()
        try:
            server.run(sockets=[sock])
        finally:
            self._server = self._socket = None
            if self.reevaluator is not None:
                self.reevaluator.stop()
            if in_main:
                signal.signal(signal.SIGTERM, previous)

    def stop(self) -> None:
        """Stop serving: no new connections, requests in flight get ``limits.shutdown_grace`` seconds."""
        server, self._server = self._server, None
        if server is not None:
            server.should_exit = True
        if self._thread is not None:
            self._thread.join(self.limits.shutdown_grace + 10)
            self._thread = None
        sock, self._socket = self._socket, None
        if sock is not None:
            sock.close()  # uvicorn closed it if it served; this is for one that never did
        if self.reevaluator is not None:
            self.reevaluator.stop()

    def __enter__(self) -> HubServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _uvicorn(self) -> tuple[uvicorn.Server, socket.socket]:
        """A uvicorn server for the app, on the bound socket: h11 only, no websockets, no lifespan, and the
        limits of :mod:`zoo.hub_server.http_limits`. uvicorn's own logs are off: the access log is ours
        (:mod:`zoo.hub_server.logs`), the app reports its own errors, and what uvicorn would add is a traceback for
        each request that stop() cancels after the grace period."""
        import uvicorn

        from zoo.hub_server.asgi import create_app
        from zoo.hub_server.http_limits import h11_protocol

        if self._server is not None:
            raise ZooError(f"the hub server on {self.url} is already serving")
        self.bind()
        assert self._socket is not None
        config = uvicorn.Config(
            create_app(self),
            http=h11_protocol(self.limits.head_timeout),
            loop="asyncio",
            ws="none",
            lifespan="off",
            interface="asgi3",
            log_config=None,
            log_level="critical",
            access_log=False,
            proxy_headers=False,
            server_header=False,
            headers=[("server", "zoo-hub")],
            h11_max_incomplete_event_size=self.limits.header_bytes,
            timeout_keep_alive=self.limits.keep_alive,
            timeout_graceful_shutdown=self.limits.shutdown_grace,  # type: ignore[arg-type]
        )
        self._server = uvicorn.Server(config)
        return self._server, self._socket

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

    def may_read(self, caller: TokenInfo | None, namespace: str) -> bool:
        """Whether ``caller`` may see the private repos of ``namespace``: those who may write there."""
        return self.may_write(caller, namespace)

    def upload_signature(self, repo_id: str, oid: str, size: int, expires: int) -> str:
        message = f"{repo_id}\n{oid}\n{size}\n{expires}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()
