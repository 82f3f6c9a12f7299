"""The Hub API's upload calls behind ``zoo hub serve``: ``preupload``, the git-LFS batch, PUT and verify
endpoints (signed upload URLs: the client PUTs without its token), and ndjson commits, each inline file
stored as its line arrives. Objects past ``lfs_part_size`` go through :mod:`zoo.hub_server.lfs_multipart`."""

from __future__ import annotations

import base64
import hmac
import json
import re
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response
from starlette.routing import BaseRoute

from zoo.hub.card_header import card_metadata
from zoo.hub_server.http_limits import HttpError, body_blocks, body_lines
from zoo.hub_server.lfs_access import RepoLfs
from zoo.hub_server.logs import PUSH, file_list, printable
from zoo.hub_server.protocol import TokenInfo, upload_mode
from zoo.hub_server.routing import SHA256, Call, Handler, HubJson, hub_route, raw_path
from zoo.hub_server.store_records import Delete, Operation, Put, check_path

if TYPE_CHECKING:
    from zoo.hub_server.server import HubServer

UPLOAD_URL_TTL = 3600
_COMMIT_PREFIX = re.compile(r"[0-9a-fA-F]{5,40}")
_LFS_JSON = "application/vnd.git-lfs+json"


class UploadApi:
    """Handlers for uploads and commits over one server's storage; :meth:`routes` in matching order."""

    def __init__(self, hub: HubServer):
        self.hub, self.storage = hub, hub.storage

    def routes(self) -> list[BaseRoute]:
        repo, api = "{ns}/{name}", "/api/models/{ns}/{name}"
        table: list[tuple[str, list[str], Handler]] = [
            (f"{api}/preupload/{{rev}}", ["POST"], self.preupload),
            (f"{api}/commit/{{rev}}", ["POST"], self.commit),
            (f"/{repo}.git/info/lfs/objects/batch", ["POST"], self.lfs_batch),
            (f"/{repo}.git/info/lfs/objects/verify", ["POST"], self.lfs_verify),
            (f"/{repo}.git/info/lfs/objects/{{oid}}", ["PUT"], self.lfs_upload),
        ]
        return [hub_route(self.hub, path, methods, handler) for path, methods, handler in table]

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
            if not (isinstance(oid, str) and SHA256.fullmatch(oid) and type(size) is int and size >= 0):
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
        if not SHA256.fullmatch(oid):
            raise HttpError(404, f"no route {raw_path(call.request.scope)}")
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
            and SHA256.fullmatch(oid)
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
    """The size a valid, unexpired upload URL (of :meth:`UploadApi._upload_actions`) announces; 403 otherwise."""
    query = call.request.query_params
    try:
        size, expires = int(query["size"]), int(query["expires"])
        expected = call.hub.upload_signature(repo_id, oid, size, expires)
        if hmac.compare_digest(query["signature"], expected) and expires >= time.time():
            return size
    except (KeyError, ValueError):
        pass
    raise HttpError(403, "upload URL is invalid or expired; ask the LFS batch endpoint for a new one")
