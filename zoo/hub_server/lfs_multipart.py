"""The Hub's multipart LFS transfer: a large object uploaded one part per PUT, then put together.

The LFS batch answer (:meth:`zoo.hub_server.upload_api.UploadApi._upload_actions`) gives an object larger than
``Limits.lfs_part_size`` a ``chunk_size`` (:meth:`~zoo.hub_server.http_limits.Limits.part_size`: larger for
objects that would need more than ``Limits.lfs_max_parts`` parts) and one signed URL per part, plus a
completion URL. Each part is streamed to ``ROOT/parts/OID-EXPIRES-SIG/N`` (a temp file, then a rename;
SIG is the start of the URL's signature, so uploads of one object to two repos never share a folder) and
answered with its sha256 as ETag; the completion POST lists the parts' ETags, and the blob is written from
the parts in order through the usual :class:`zoo.hub_server.blobs.BlobUpload`, which checks the object's sha256
and size before anything appears under ``blobs/``; then the object is the repo's to commit. A failed or abandoned upload leaves only its parts folder, which
:func:`zoo.hub_server.blobs.remove_stale_parts` clears once its URLs have expired (at a server's start, and
by ``zoo hub gc``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from zoo.hub_server.blobs import parts_root
from zoo.hub_server.http_limits import HttpError, body_blocks
from zoo.hub_server.routing import SHA256, Call, HubJson, hub_route
from zoo.hub_server.upload_api import signed_size

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from zoo.hub_server.server import HubServer

_READ = 1 << 20


class MultipartApi:
    """The part PUTs and the completion POST of multipart uploads."""

    def __init__(self, hub: HubServer):
        self.hub, self.storage = hub, hub.storage
        self.root = parts_root(hub.storage.root)

    def routes(self) -> list[BaseRoute]:
        objects = "/{ns}/{name}.git/info/lfs/objects"
        return [
            hub_route(self.hub, f"{objects}/{{oid}}/part/{{number}}", ["PUT"], self.put_part),
            hub_route(self.hub, f"{objects}/complete/{{oid}}", ["POST"], self.complete),
        ]

    def _folder(self, call: Call, oid: str) -> Path:
        """The upload's parts folder; call it after :func:`signed_size` has checked the URL."""
        if not SHA256.fullmatch(oid):
            raise HttpError(400, "the object id must be a lowercase sha256")
        query = call.request.query_params
        return self.root / f"{oid}-{int(query['expires'])}-{query['signature'][:16]}"

    async def put_part(self, call: Call, ns: str, name: str, oid: str, number: str) -> Response:
        """One part, streamed to a temp file and renamed into the upload's folder; its ETag is its sha256.
        Signed like a basic upload URL (the client sends no token with it)."""
        size = signed_size(call, f"{ns}/{name}", oid)
        part, count = self.hub.limits.part_size(size), self.hub.limits.part_count(size)
        if not (number.isascii() and number.isdigit() and len(number) <= 6 and 1 <= int(number) <= count):
            raise HttpError(400, f"part {number[:20]} is not one of parts 1 to {count}")
        number = str(int(number))  # the name the completion looks for ("01" is part 1)
        expected = min(part, size - (int(number) - 1) * part)
        folder = self._folder(call, oid)
        await run_in_threadpool(folder.mkdir, parents=True, exist_ok=True)
        fd, temp = await run_in_threadpool(tempfile.mkstemp, prefix=f".{number}.", dir=folder)
        digest, written = hashlib.sha256(), 0
        try:
            with os.fdopen(fd, "wb") as fh:
                async for block in body_blocks(call.request, expected, self.hub.limits.body_idle_timeout):
                    digest.update(block)
                    written += len(block)
                    await run_in_threadpool(fh.write, block)
            if written != expected:
                raise HttpError(400, f"part {number} has {written} bytes, expected {expected}")
            await run_in_threadpool(os.replace, temp, folder / number)
        finally:
            Path(temp).unlink(missing_ok=True)
        return Response(b"", headers={"ETag": digest.hexdigest()})

    async def complete(self, call: Call, ns: str, name: str, oid: str) -> Response:
        repo_id = f"{ns}/{name}"
        size = signed_size(call, repo_id, oid)
        body = await call.json()
        return await run_in_threadpool(self._complete, call, repo_id, oid, size, body)

    def _complete(self, call: Call, repo_id: str, oid: str, size: int, body: dict[str, Any]) -> Response:
        """Write the blob from its parts in order, checking each part's ETag and the whole object's sha256;
        then the object is the repo's to commit."""
        folder = self._folder(call, oid)
        count = self.hub.limits.part_count(size)
        parts = body.get("parts")
        if body.get("oid") != oid or not isinstance(parts, list) or len(parts) != count:
            raise HttpError(400, f"the completion must list the object's {count} parts")
        with self.storage.open_upload(oid, size) as upload:
            for number, part in enumerate(parts, 1):
                etag = part.get("etag") if isinstance(part, dict) else None
                if not isinstance(part, dict) or part.get("partNumber") != number:
                    raise HttpError(400, f"part {number} is missing from the completion request")
                upload.write_file(folder / str(number), etag)
            upload.finish()
        shutil.rmtree(folder, ignore_errors=True)
        self.storage.grant_lfs(repo_id, oid)
        return HubJson({})
