"""The Hub API's core repo calls behind ``zoo hub serve``: ``whoami``, ``create_repo``, README YAML
validation, ``model_info``, tree listings, refs and ``create_branch``, and the refusals of repo types and Xet
this server does not speak."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response
from starlette.routing import BaseRoute

from zoo.hub.card_header import card_metadata
from zoo.hub_server.http_limits import HttpError
from zoo.hub_server.protocol import INVALID_CREDENTIALS, card_tags, tree_paths
from zoo.hub_server.routing import RESERVED_NAMESPACES, Call, Handler, HubJson, hub_route
from zoo.hub_server.storage import HubStorage
from zoo.hub_server.store_records import DEFAULT_BRANCH, Commit, FileEntry, RepoExists, check_name, path_view

if TYPE_CHECKING:
    from zoo.hub_server.server import HubServer

_ANY = ["GET", "HEAD", "POST", "PUT", "DELETE"]


class ModelApi:
    """Handlers for the core repo calls over one server's storage; :meth:`routes` in matching order."""

    def __init__(self, hub: HubServer):
        self.hub, self.storage = hub, hub.storage

    def routes(self) -> list[BaseRoute]:
        api = "/api/models/{ns}/{name}"
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
        ]
        return [hub_route(self.hub, path, methods, handler) for path, methods, handler in table]

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
