"""What one request may cost ``zoo hub serve``, and the code that holds every request to it.

The server is one event loop (uvicorn, h11) that only moves bytes; storage and parsing run in worker
threads. So the costs to bound are the ones a client controls: how much it sends (body sizes, header
size), how slowly it sends it (a request head or body trickled to hold a connection: "slowloris"), and
how much work its bytes cause (YAML and JSON parsing, bounded in :mod:`zoo.safeyaml` and here).
Each limit below is a refusal a client can meet, with the status it gets; docs/hub-serve.md lists them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

if TYPE_CHECKING:
    from starlette.requests import Request

_BLOCK = 1 << 20  # bytes handed to a worker thread at once: few thread hops, bounded memory per upload


@dataclass(frozen=True)
class Limits:
    """The bounds of one request; the defaults fit what huggingface_hub 2.4 sends, with a wide margin."""

    #: JSON bodies (413): the largest is /api/validate-yaml, which carries a whole README.
    json_body: int = 16 << 20
    #: One ndjson commit (413): inline files are small text (10 MiB and up go through LFS).
    commit_body: int = 512 << 20
    #: One ndjson line, i.e. one inline file in base64 (413): held in memory while it is stored.
    commit_line: int = 32 << 20
    #: Request line plus headers: huggingface_hub sends well under 1 KiB. A head that arrives in pieces
    #: is cut by h11 at this size (uvicorn answers 400); one that came whole is refused with 431.
    header_bytes: int = 64 << 10
    #: Seconds to send the request line and headers once started (the connection is closed).
    head_timeout: float = 10.0
    #: Seconds without any body byte (408): a body that stalls holds nothing longer than this.
    body_idle_timeout: float = 30.0
    #: Seconds an idle keep-alive connection stays open: longer than httpx's 5 s pool expiry, so the
    #: client always closes first and never sends a request on a connection the server is closing.
    keep_alive: int = 15
    #: The largest LFS object the batch endpoint accepts (422 for that object, before any URL is made):
    #: ``zoo hub serve --max-lfs-size``. huggingface.co's own limit per file is 50 GB.
    lfs_max_size: int = 50 << 30
    #: LFS objects larger than this are uploaded in parts of this size (the Hub's multipart transfer), so
    #: that a dropped connection costs one part, not the whole file.
    lfs_part_size: int = 64 << 20
    #: The most parts one object is uploaded in, the Hub's (S3's) cap: a larger object gets larger parts.
    lfs_max_parts: int = 10_000
    #: Objects in one LFS batch request (413): huggingface_hub sends at most 256.
    lfs_batch_objects: int = 1000
    #: Part URLs in one LFS batch answer, all objects together (422 for the objects past it): the answer
    #: is built in memory. 20,000 parts of 64 MiB are 1.25 TiB in one commit.
    lfs_batch_parts: int = 20_000
    #: Seconds stop() waits for requests in flight before it cancels them.
    shutdown_grace: float = 5.0

    def part_size(self, size: int) -> int:
        """The part size of a multipart upload of ``size`` bytes: ``lfs_part_size``, or larger (whole MiB)
        where that would need more than ``lfs_max_parts`` parts. A function of the size alone, so the part
        PUTs and the completion find the parts the batch answer announced."""
        least = -(-size // self.lfs_max_parts)
        return max(self.lfs_part_size, -(-least // (1 << 20)) * (1 << 20))

    def part_count(self, size: int) -> int:
        return -(-size // self.part_size(size))


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


def check_head(request: Request, limit: int) -> None:
    """431 for a request line plus headers over ``limit`` bytes.

    h11 bounds only the head it is still waiting for (``h11_max_incomplete_event_size``): one that
    arrives whole in a single socket read (asyncio reads up to 256 KiB) is parsed, and is refused here.
    """
    scope = request.scope
    size = len(scope["method"]) + len(scope.get("raw_path") or b"") + len(scope["query_string"])
    size += sum(len(name) + len(value) + 4 for name, value in scope["headers"])
    if size > limit:
        raise HttpError(431, f"request headers over {limit} bytes", headers={"Connection": "close"})


def _too_large(limit: int, what: str) -> HttpError:
    # Connection: close, so the client stops sending a body nobody reads (h11 then closes after the reply)
    return HttpError(413, f"{what} over {limit} bytes", headers={"Connection": "close"})


async def body_blocks(request: Request, limit: int, idle_timeout: float) -> AsyncIterator[bytes]:
    """The request body in blocks of about 1 MiB as it arrives, at most ``limit`` bytes (413 beyond:
    at once from Content-Length, or when a chunked body gets there), with at most ``idle_timeout``
    seconds between two reads (408)."""
    if int(request.headers.get("content-length") or 0) > limit:  # h11 has checked it is digits
        raise _too_large(limit, "request body")
    import anyio

    chunks = request.stream().__aiter__()
    pending, total = bytearray(), 0
    while True:
        try:
            with anyio.fail_after(idle_timeout):
                chunk = await anext(chunks)
        except StopAsyncIteration:
            break
        except TimeoutError:
            raise HttpError(
                408, f"no request body data for {idle_timeout:g} s", headers={"Connection": "close"}
            ) from None
        total += len(chunk)
        if total > limit:
            raise _too_large(limit, "request body")
        pending += chunk
        if len(pending) >= _BLOCK:
            yield bytes(pending)
            pending.clear()
    if pending:
        yield bytes(pending)


async def read_body(request: Request, limit: int, idle_timeout: float) -> bytes:
    """The whole body, within the bounds of :func:`body_blocks`."""
    return b"".join([block async for block in body_blocks(request, limit, idle_timeout)])


async def read_form(
    request: Request, limit: int, idle_timeout: float, max_fields: int
) -> dict[str, list[str]]:
    """An ``application/x-www-form-urlencoded`` body (paths-info, the login form), within the bounds of
    :func:`body_blocks` and at most ``max_fields`` fields; 400 for anything that is not form text."""
    data = await read_body(request, limit, idle_timeout)
    try:
        return parse_qs(data.decode("utf-8"), keep_blank_values=True, max_num_fields=max_fields)
    except (UnicodeDecodeError, ValueError):
        raise HttpError(400, "the form body is not valid UTF-8 form data") from None


async def body_lines(request: Request, limits: Limits) -> AsyncIterator[bytes]:
    """An ndjson body line by line (without the newline), so that memory holds one line, not the body."""
    buffer, scanned = bytearray(), 0
    async for block in body_blocks(request, limits.commit_body, limits.body_idle_timeout):
        buffer += block
        while (end := buffer.find(b"\n", scanned)) >= 0:
            yield _line(buffer[:end], limits.commit_line)
            del buffer[: end + 1]
            scanned = 0
        scanned = len(buffer)
        _line(buffer, limits.commit_line)  # a line still arriving may not grow past the limit either
    if buffer:
        yield _line(buffer, limits.commit_line)


def _line(line: bytearray, limit: int) -> bytes:
    if len(line) > limit:
        raise _too_large(limit, "a commit line")
    return bytes(line)


def parse_json_object(data: bytes, what: str = "request body") -> dict[str, Any]:
    """A JSON object, or a 400 that says why: never a 500, whatever the bytes (deep nesting included)."""
    try:
        value = json.loads(data or b"{}")
    except RecursionError:  # json's C parser counts its depth against the recursion limit
        raise HttpError(400, f"{what} is nested too deeply") from None
    except ValueError:
        raise HttpError(400, f"{what} is not valid JSON") from None
    if not isinstance(value, dict):
        raise HttpError(400, f"{what} must be a JSON object")
    return value


def h11_protocol(head_timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol plus a deadline for the request head, which uvicorn does not have.

    uvicorn times out idle keep-alive connections, but a client that has sent part of a request line or
    headers may take forever with the rest; each such connection holds a socket. Here a connection must
    complete its request head within ``head_timeout`` seconds of its first byte (of opening, for the
    first request), or it is closed.
    """
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeadDeadlineH11Protocol(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)  # type: ignore[arg-type]
            self._watch_head()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._watch_head()

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_head_timer()
            super().connection_lost(exc)

        def _watch_head(self) -> None:
            """Arm the deadline while a request head is awaited (h11 IDLE), disarm it once one is in."""
            waiting = self.conn.their_state is h11.IDLE and not self.transport.is_closing()
            if waiting and self._head_timer is None:
                self._head_timer = self.loop.call_later(head_timeout, self._head_expired)
            elif not waiting:
                self._cancel_head_timer()

        def _cancel_head_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_expired(self) -> None:
            self._head_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.conn.send(h11.ConnectionClosed())
                self.transport.close()

    return HeadDeadlineH11Protocol
