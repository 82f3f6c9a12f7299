"""The ASGI app of ``zoo hub serve``: every route module of :mod:`zoo.hub_server`, in matching order.

Its own module because the route modules (:mod:`zoo.hub_server.repo_api`, :mod:`zoo.hub_server.lfs_multipart`,
:mod:`zoo.hub_server.unsupported`, :mod:`zoo.hub_server.web`) build on :mod:`zoo.hub_server.routing`; putting them together there
would make each import the other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.middleware import Middleware

from zoo.hub_server.file_api import FileApi
from zoo.hub_server.lfs_multipart import MultipartApi
from zoo.hub_server.model_api import ModelApi
from zoo.hub_server.repo_api import RepoApi
from zoo.hub_server.routing import EXCEPTION_HANDLERS, AccessLog, SafeHeaders
from zoo.hub_server.unsupported import unsupported_routes
from zoo.hub_server.upload_api import UploadApi
from zoo.hub_server.web import web_routes

if TYPE_CHECKING:
    from zoo.hub_server.server import HubServer


def create_app(hub: HubServer) -> Starlette:
    """The ASGI app for ``hub``: the Hub API, the web pages, the access log, response headers without control
    characters, and every API error as the Hub's JSON reply. The order is the matching order: the repo admin and list calls and the core API
    (fixed ``/api/`` prefixes), the multipart uploads, the 501s for Hub calls left out, then the pages,
    whose ``/{ns}/{name}`` would match much."""
    routes = [
        *RepoApi(hub).routes(),
        *ModelApi(hub).routes(),
        *UploadApi(hub).routes(),
        *FileApi(hub).routes(),
        *MultipartApi(hub).routes(),
    ]
    app = Starlette(
        routes=[*routes, *unsupported_routes(hub), *web_routes(hub)],
        middleware=[Middleware(AccessLog), Middleware(SafeHeaders)],
        exception_handlers=EXCEPTION_HANDLERS,
    )
    app.router.redirect_slashes = False  # the Hub answers a path as given; a redirect would hide a 404
    return app
