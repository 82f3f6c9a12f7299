"""The Hub API's downloads behind ``zoo hub serve``: ``/resolve/`` (what ``hf_hub_download`` reads:
ETag, ``X-Repo-Commit``, ``X-Linked-*``, Range) and ``/raw/``, each served so that no upload runs as a
script or renders as a page of this server."""

from __future__ import annotations

import mimetypes
from typing import TYPE_CHECKING

from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute

from zoo.hub_server.http_limits import HttpError
from zoo.hub_server.routing import Call, Handler, hub_route
from zoo.hub_server.store_records import Commit, FileEntry, lfs_pointer

if TYPE_CHECKING:
    from zoo.hub_server.server import HubServer


class FileApi:
    """Handlers for file downloads over one server's storage; :meth:`routes` in matching order."""

    def __init__(self, hub: HubServer):
        self.hub, self.storage = hub, hub.storage

    def routes(self) -> list[BaseRoute]:
        repo = "{ns}/{name}"
        table: list[tuple[str, list[str], Handler]] = [
            (f"/{repo}/resolve/{{rev}}/{{path:path}}", ["GET", "HEAD"], self.resolve),
            (f"/{repo}/raw/{{rev}}/{{path:path}}", ["GET", "HEAD"], self.raw),
        ]
        return [hub_route(self.hub, path, methods, handler) for path, methods, handler in table]

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
