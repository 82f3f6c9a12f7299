"""The Hub calls ``zoo hub serve`` leaves out, answered ``501`` with the client call's name.

A bare ``404 no route`` would read as "that repo does not exist"; a 501 that names the call
(``HfApi.get_repo_discussions is not supported by zoo hub serve``) says what is missing, and the client
raises it as an ``HfHubHTTPError`` carrying that message. Any other ``/api/...`` path is a 501 too, with
its method and path (the not-found handler of :mod:`zoo.hub_server.routing`); a known path with the wrong
method stays a 405.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.responses import Response

from zoo.hub_server.http_limits import HttpError
from zoo.hub_server.routing import Call, hub_route

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from zoo.hub_server.server import HubServer

_ANY = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]
_REPO = "/api/models/{ns}/{name}"

#: (path, the HfApi calls that send it)
LEFT_OUT: list[tuple[str, str]] = [
    (f"{_REPO}/super-squash/{{rest:path}}", "HfApi.super_squash_history"),
    (f"{_REPO}/discussions", "HfApi.get_repo_discussions / create_discussion / create_pull_request"),
    (f"{_REPO}/discussions/{{rest:path}}", "HfApi discussion calls (comment, merge, change status, rename)"),
    (f"{_REPO}/like", "HfApi.like / unlike"),
    (f"{_REPO}/likers", "HfApi.list_repo_likers"),
    (f"{_REPO}/lfs-files{{rest:path}}", "HfApi.list_lfs_files / permanently_delete_lfs_files"),
    (f"{_REPO}/duplicate", "HfApi.duplicate_repo"),
    (f"{_REPO}/user-access-request/{{rest:path}}", "HfApi access-request calls (gated repos)"),
    (f"{_REPO}/xet-{{rest:path}}", "the Xet protocol (set HF_HUB_DISABLE_XET=1)"),
    ("/api/users/{rest:path}", "HfApi user calls (likes, overview, followers)"),
    ("/api/organizations/{rest:path}", "HfApi organization calls (members, followers, overview)"),
    ("/api/collections{rest:path}", "HfApi collection calls"),
    ("/api/settings/webhooks{rest:path}", "HfApi webhook calls"),
    ("/api/jobs{rest:path}", "HfApi job calls"),
    ("/api/scheduled-jobs{rest:path}", "HfApi scheduled-job calls"),
    ("/api/papers{rest:path}", "HfApi paper calls"),
    ("/api/daily_papers{rest:path}", "HfApi.list_daily_papers"),
    ("/api/models-tags-by-type", "HfApi.get_model_tags"),
    ("/api/inference-endpoints{rest:path}", "Inference Endpoints"),
]


def unsupported_routes(hub: HubServer) -> list[BaseRoute]:
    """Routes answering 501 for :data:`LEFT_OUT`."""

    def left_out(name: str):
        def handler(call: Call, **_: str) -> Response:
            raise HttpError(501, f"{name} is not supported by zoo hub serve")

        return handler

    return [hub_route(hub, path, _ANY, left_out(name)) for path, name in LEFT_OUT]
