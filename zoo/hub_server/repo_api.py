"""The Hub API's repo management and list calls: what a team does with repos once they are pushed.

``list_models`` (author, search, tags, sort, limit, ``full``, ``cardData``) and ``hf repos ls`` read the
SQLite index (:mod:`zoo.hub_server.index`); branches, tags, commit history, ``get_paths_info``, and
``delete_repo``, ``move_repo`` and ``update_repo_settings`` work on the store and then refresh the
repo's index row. ``lfs-files/duplicate`` is how the client copies an LFS file across repos
(``CommitOperationCopy(src_repo_id=...)``): it makes the object the target repo's to commit, provided
the caller may read the source repo and one of its commits names the object. Long lists are paged as the Hub pages them: a ``Link: <...>; rel="next"`` header, which
the client's ``paginate`` follows.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from zoo.hub_server.http_limits import HttpError
from zoo.hub_server.index import RepoRow
from zoo.hub_server.lfs_access import RepoLfs
from zoo.hub_server.model_api import tree_items
from zoo.hub_server.protocol import tree_paths
from zoo.hub_server.routing import RESERVED_NAMESPACES, SHA256, Call, HubJson, hub_route
from zoo.hub_server.store_records import Commit, InvalidInput, RepoNotFound, check_name

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from zoo.hub_server.server import HubServer

MODELS_PAGE = 1000
COMMITS_PAGE = 100


class RepoApi:
    """Handlers for repo administration and listing over one server; :meth:`routes` in matching order."""

    def __init__(self, hub: HubServer):
        self.hub, self.storage, self.index = hub, hub.storage, hub.index

    def routes(self) -> list[BaseRoute]:
        api = "/api/models/{ns}/{name}"
        table = [
            ("/api/models", ["GET"], self.list_models),
            ("/api/settings/repositories", ["GET"], self.list_user_repos),
            ("/api/organizations/{ns}/settings/repositories", ["GET"], self.list_user_repos),
            ("/api/repos/delete", ["DELETE"], self.delete_repo),
            ("/api/repos/move", ["POST"], self.move_repo),
            (f"{api}/settings", ["PUT"], self.update_settings),
            (f"{api}/branch/{{branch}}", ["DELETE"], self.delete_branch),
            (f"{api}/tag/{{rev}}", ["POST"], self.create_tag),
            (f"{api}/tag/{{tag}}", ["DELETE"], self.delete_tag),
            (f"{api}/commits/{{rev}}", ["GET"], self.list_commits),
            (f"{api}/paths-info/{{rev}}", ["POST"], self.paths_info),
            (f"{api}/lfs-files/duplicate", ["POST"], self.duplicate_lfs),
            (f"{api}/auth-check", ["GET"], self.auth_check),
        ]
        return [hub_route(self.hub, path, methods, handler) for path, methods, handler in table]

    # ------------------------------------------------------------------------------------------ lists
    def list_models(self, call: Call) -> Response:
        query = call.request.query_params
        direction = _int(query.get("direction", "-1"), "direction")
        try:
            rows = self.index.search(
                call.caller,
                author=query.get("author"),
                search=query.get("search"),
                tags=query.getlist("filter"),
                sort=query.get("sort") or "lastModified",
                direction=direction,
            )
        except ValueError as exc:
            raise HttpError(400, str(exc)) from None
        full, card_data = call.flag("full"), call.flag("cardData") or call.flag("full")
        return _paged(call, rows, MODELS_PAGE, lambda row: self._model_item(row, full, card_data))

    def _model_item(self, row: RepoRow, full: bool, card_data: bool) -> dict[str, Any]:
        item: dict[str, Any] = {
            "_id": row.repo_id,
            "id": row.repo_id,
            "modelId": row.repo_id,
            "author": row.author,
            "sha": row.sha,
            "lastModified": row.last_modified,
            "createdAt": row.created_at,
            "private": row.private,
            "gated": False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "library_name": row.library_name,
            "pipeline_tag": row.pipeline_tag,
            "tags": row.tags,
        }
        if full:
            try:
                files = self.storage.load_commit(row.repo_id, row.sha).files
            except (RepoNotFound, OSError):  # deleted since the query: list what the index knew
                files = {}
            item["siblings"] = [{"rfilename": path} for path in sorted(files)]
        if card_data and row.card:
            item["cardData"] = row.card
        return item

    def list_user_repos(self, call: Call, ns: str | None = None) -> Response:
        """``hf repos ls``: the caller's (or an org's) model repos with their size."""
        namespace = ns or (call.caller.user if call.caller else None)
        if namespace is None:
            raise HttpError(401, "authentication required to list your repos: set HF_TOKEN")
        rows = self.index.search(call.caller, author=namespace, sort="id", direction=1)
        total = sum(row.size for row in rows) or 1
        return _paged(
            call,
            rows,
            MODELS_PAGE,
            lambda row: {
                "id": row.repo_id,
                "type": "model",
                "updatedAt": row.last_modified,
                "visibility": "private" if row.private else "public",
                "storage": row.size,
                "storagePercent": 100 * row.size / total,
            },
        )

    def list_commits(self, call: Call, ns: str, name: str, rev: str) -> Response:
        repo_id = f"{ns}/{name}"
        call.readable(repo_id)
        head = self.storage.resolve(repo_id, rev)
        formatted = "formatted" in call.request.query_params.getlist("expand[]")
        return _paged(
            call,
            list(self.storage.history(repo_id, head)),
            COMMITS_PAGE,
            lambda commit: _commit_item(commit, formatted),
        )

    async def paths_info(self, call: Call, ns: str, name: str, rev: str) -> Response:
        """``get_paths_info`` (also how the client finds what a copy operation copies): the given paths
        that exist at ``rev``, files with their LFS details, folders with their tree id."""
        form = await call.form()
        return await run_in_threadpool(self._paths_info, call, f"{ns}/{name}", rev, form)

    def _paths_info(self, call: Call, repo_id: str, rev: str, form: dict[str, list[str]]) -> Response:
        call.readable(repo_id)
        commit = self.storage.resolve(repo_id, rev)
        folders = set(tree_paths(commit.files, "", recursive=True))
        wanted = list(dict.fromkeys(path.strip("/") for path in form.get("paths", [])))
        found = [path for path in wanted if path in folders]
        expand = form.get("expand", ["false"])[-1].lower() in ("1", "true")
        items = tree_items(self.storage, repo_id, commit, found, expand)
        for item in items:  # the client copies an LFS file across repos only if it has an "xetHash"
            if "lfs" in item:  # this server has no Xet: the sha256 is the handle it hands back
                item["xetHash"] = item["lfs"]["oid"]
        return HubJson(items)

    async def duplicate_lfs(self, call: Call, ns: str, name: str) -> Response:
        """``POST /api/models/SRC/lfs-files/duplicate`` (huggingface_hub sends it before a commit that copies
        LFS files from SRC): ``{"target": {"type": "model", "name": DST}, "files": [{"sha256", ...}]}``.
        Each object the caller may copy (SRC readable, DST writable, the object an LFS file of a commit of
        SRC) becomes DST's to commit; nothing is copied, blobs are shared. The others are listed under
        ``failed``, as the Hub answers, with the same reason whether or not the object is stored elsewhere."""
        body = await call.json()
        return await run_in_threadpool(self._duplicate_lfs, call, f"{ns}/{name}", body)

    def _duplicate_lfs(self, call: Call, src: str, body: dict[str, Any]) -> Response:
        call.readable(src)
        target, files, most = body.get("target"), body.get("files"), self.hub.limits.lfs_batch_objects
        if not (
            isinstance(target, dict)
            and isinstance(target.get("name"), str)
            and target["name"].count("/") == 1
            and (target.get("type") or "model") == "model"
        ):
            raise HttpError(400, '\'target\' must be {"type": "model", "name": "NAMESPACE/NAME"}')
        if not isinstance(files, list) or not all(isinstance(item, dict) for item in files):
            raise HttpError(400, "'files' must be a list of {\"sha256\": ...}")
        if len(files) > most:
            raise HttpError(413, f"over {most} files in one duplicate request; send them in several")
        dst = target["name"]
        call.writable(dst)
        failed: list[dict[str, str]] = []
        source = RepoLfs(self.storage, src)
        for sha256 in dict.fromkeys(item.get("sha256") for item in files):
            if not (isinstance(sha256, str) and SHA256.fullmatch(sha256)):
                failed.append(
                    {"sha256": sha256[:64] if isinstance(sha256, str) else "", "error": "not a sha256"}
                )
            elif not source.named(sha256):
                failed.append({"sha256": sha256, "error": f"not an LFS file of {src}"})
            else:
                try:
                    self.storage.grant_lfs(dst, sha256)
                except InvalidInput as exc:  # named, yet its blob is missing: zoo hub verify says so
                    failed.append({"sha256": sha256, "error": str(exc)})
        return HubJson({"failed": failed})

    def auth_check(self, call: Call, ns: str, name: str) -> Response:
        call.readable(f"{ns}/{name}")
        return HubJson({})

    # ------------------------------------------------------------------------------------------ refs
    async def create_tag(self, call: Call, ns: str, name: str, rev: str) -> Response:
        """``HfApi.create_tag``: 409 if the tag exists, which ``exist_ok`` reads."""
        repo_id = f"{ns}/{name}"
        await run_in_threadpool(call.writable, repo_id)
        tag = (await call.json()).get("tag")
        if not isinstance(tag, str) or not tag:
            raise HttpError(400, "'tag' must be the new tag's name")
        await run_in_threadpool(self.storage.create_tag, repo_id, tag, rev)
        return HubJson({})

    def delete_tag(self, call: Call, ns: str, name: str, tag: str) -> Response:
        call.writable(f"{ns}/{name}")
        self.storage.delete_tag(f"{ns}/{name}", tag)
        return HubJson({})

    def delete_branch(self, call: Call, ns: str, name: str, branch: str) -> Response:
        call.writable(f"{ns}/{name}")
        self.storage.delete_branch(f"{ns}/{name}", branch)
        return HubJson({})

    # ------------------------------------------------------------------------------------------ repos
    async def delete_repo(self, call: Call) -> Response:
        return await run_in_threadpool(self._delete_repo, call, await call.json())

    def _delete_repo(self, call: Call, body: dict[str, Any]) -> Response:
        _model_type(body)
        name, namespace = (
            body.get("name"),
            body.get("organization") or (call.caller.user if call.caller else None),
        )
        if not isinstance(name, str) or not isinstance(namespace, str):
            raise HttpError(
                401 if namespace is None else 400, "'name' (and 'organization') must name the repo"
            )
        repo_id = f"{namespace}/{name}"
        call.writable(repo_id)
        self.storage.delete_repo(repo_id)
        self.index.refresh(repo_id)
        return HubJson({})

    async def move_repo(self, call: Call) -> Response:
        return await run_in_threadpool(self._move_repo, call, await call.json())

    def _move_repo(self, call: Call, body: dict[str, Any]) -> Response:
        _model_type(body)
        src, dst = body.get("fromRepo"), body.get("toRepo")
        if not (isinstance(src, str) and isinstance(dst, str) and dst.count("/") == 1):
            raise HttpError(400, "'fromRepo' and 'toRepo' must be repo ids (namespace/name)")
        namespace, name = dst.split("/")
        check_name(name, "repo name")
        if check_name(namespace, "namespace") in RESERVED_NAMESPACES:
            raise HttpError(400, f"namespace {namespace} is reserved")
        call.writable(src)
        call.writer(namespace)
        self.storage.move_repo(src, dst)
        self.index.refresh(src)
        self.index.refresh(dst)
        return HubJson({})

    async def update_settings(self, call: Call, ns: str, name: str) -> Response:
        return await run_in_threadpool(self._update_settings, call, f"{ns}/{name}", await call.json())

    def _update_settings(self, call: Call, repo_id: str, body: dict[str, Any]) -> Response:
        """``update_repo_settings``: visibility (``private`` or ``visibility``); gating is not served."""
        call.writable(repo_id)
        if body.get("gated") not in (None, False):
            raise HttpError(400, "zoo hub serve has no gated repos: make the repo private instead")
        private = body.get("private")
        if "visibility" in body:
            if body["visibility"] not in ("public", "private"):
                raise HttpError(400, "visibility must be 'public' or 'private' here")
            private = body["visibility"] == "private"
        if private is not None:
            if not isinstance(private, bool):
                raise HttpError(400, "'private' must be true or false")
            self.storage.set_private(repo_id, private)
            self.index.refresh(repo_id)
        return HubJson({})


def _model_type(body: dict[str, Any]) -> None:
    if (body.get("type") or "model") != "model":
        raise HttpError(400, f"zoo hub serve hosts model repos only, not {body.get('type')}s")


def _int(value: str, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise HttpError(400, f"{what} must be an integer, not {value!r}") from None


def _paged(call: Call, items: Sequence[Any], page: int, render: Any) -> Response:
    """One page of ``items`` (``limit`` per page, at most ``page``; ``cursor`` = the offset), with the
    Hub's ``Link`` header to the next page when there is one."""
    query = call.request.query_params
    size = min(max(_int(query.get("limit", str(page)), "limit"), 1), page)
    offset = max(_int(query.get("cursor", "0"), "cursor"), 0)
    chunk = items[offset : offset + size]
    headers = {}
    if offset + size < len(items):
        params = [(k, v) for k, v in query.multi_items() if k != "cursor"] + [("cursor", str(offset + size))]
        url = f"{call.base_url()}{call.request.url.path}?{urlencode(params)}"
        headers["Link"] = f'<{url}>; rel="next"'
    return HubJson([render(item) for item in chunk], headers=headers)


def _commit_item(commit: Commit, formatted: bool) -> dict[str, Any]:
    """A ``list_repo_commits`` item: the title is the summary line, the message what follows it."""
    body = commit.message.split("\n", 1)[1].strip() if "\n" in commit.message else ""
    item: dict[str, Any] = {
        "id": commit.id,
        "title": commit.title,
        "message": body,
        "authors": [{"user": commit.author, "avatar": None}],
        "date": commit.date,
    }
    if formatted:
        item["formatted"] = {"title": escape(commit.title), "message": escape(body)}
    return item
