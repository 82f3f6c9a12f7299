"""The web pages of ``zoo hub serve``: an index of models, a page per model, its commits and pull requests,
a leaderboard per env id, and a login form for private repos. Server-rendered (Jinja2), no scripts.

:func:`web_routes` is added to the app after the API's routes, so the API answers its own paths first;
a page route never matches a path under an API prefix (``/api/...``), and the last route answers a
browser's request for a path nothing else serves with an HTML 404 (a client that does not ask for HTML
still gets the API's JSON ``no route``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.routing import BaseRoute, Match
from starlette.types import Scope

from zoo.hub_server.routing import RESERVED_NAMESPACES, RawPathRoute
from zoo.hub_server.web.pages import WebPages

if TYPE_CHECKING:
    from zoo.hub_server.server import HubServer


class PageRoute(RawPathRoute):
    """A page's route: matched on the raw path like the API's, but not under an API prefix.

    A ``rest`` parameter (``/tree/REV/FOLDER``, ``/blob/REV/PATH``) stays percent-encoded: only there can
    a branch ``feature/x`` (sent as ``feature%2Fx``) be told from the folder ``x`` of branch ``feature``.
    """

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        if match is not Match.NONE and child["path_params"].get("ns") in RESERVED_NAMESPACES:
            return Match.NONE, {}
        if match is not Match.NONE and "rest" in child["path_params"]:
            raw = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
            child["path_params"]["rest"] = raw.split("/", 4)[4]  # /ns/name/tree/REST
        return match, child


class BrowserNotFound(RawPathRoute):
    """The last route: a GET from a browser (it asks for text/html) for a path no route serves."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            return Match.NONE, {}
        accept = dict(scope["headers"]).get(b"accept", b"")
        path = scope["path"]
        if b"text/html" not in accept or path.startswith("/api/") or ".git/" in path:
            return Match.NONE, {}
        return super().matches(scope)


def web_routes(hub: HubServer) -> list[BaseRoute]:
    """The pages' routes, in matching order (fixed paths before ``/{ns}/{name}``)."""
    pages = WebPages(hub)
    get = ["GET", "HEAD"]
    repo = "/{ns}/{name}"
    table = [
        ("/static/{name}", pages.static),
        ("/login", pages.login_form),
        ("/leaderboard", pages.leaderboards),
        ("/leaderboard/{env_id:path}", pages.leaderboard),
        ("/", pages.index),
        (repo, pages.model),
        (f"{repo}/tree/{{rest:path}}", pages.tree),
        (f"{repo}/blob/{{rest:path}}", pages.blob),
        (f"{repo}/commits/{{rev}}", pages.commits),
        (f"{repo}/commit/{{commit_id}}", pages.commit),
        (f"{repo}/discussions", pages.discussions),
        (f"{repo}/discussions/{{number}}", pages.pull_request),
    ]
    routes: list[BaseRoute] = [
        PageRoute(path, pages.endpoint(handler), methods=get) for path, handler in table
    ]
    routes += [
        PageRoute("/login", pages.login, methods=["POST"]),
        PageRoute("/logout", pages.logout, methods=["POST"]),
        BrowserNotFound("/{rest:path}", pages.not_found, methods=get),
    ]
    return routes
