"""Read what a run logged: TensorBoard event files, every record CRC-checked, in constant memory.

An events file is a TFRecord stream: ``length (u64) | masked crc32c(length) | payload | masked
crc32c(payload)``, each payload an ``Event`` protobuf. tensorboard's own reader checks the CRCs with
a pure-Python crc32c (one loop step per byte), which makes ``zoo check`` on a cluster's ``runs/``
spend most of its time there. This reader frames the records itself (the format is four fields),
checks each CRC with ``google-crc32c`` (C), and parses with tensorboard's ``Event`` only the records
whose payload contains the tag's bytes. Like tensorboard, it stops at the first truncated or corrupt
record and keeps what came before: a damaged file is "logged so far", never an exception.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

#: A decoded ``tensorboard.compat.proto.event_pb2.Event`` (protobuf messages carry no static types).
_Event = Any

_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")
_MASK_DELTA = 0xA282EAD8
#: A record longer than this is skipped unread (a histogram or image summary, never a scalar).
MAX_RECORD = 64 << 20
#: Logs up to this size are read whole (a CleanRL run's log is a few hundred KiB).
READ_WHOLE = 16 << 20
#: Payloads mentioning a tag kept while reading: the last scalar is almost always in the last one.
_RECENT = 16


def _masked(crc: Callable[[bytes], int], data: bytes) -> int:
    value = crc(data)
    return (((value >> 15) | (value << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def _payloads(
    path: str | Path, needle: bytes, damaged: Callable[[str], None] | None = None
) -> Iterator[bytes]:
    """The verified payloads that contain ``needle``, in file order, until the first damaged record.

    A log up to :data:`READ_WHOLE` bytes is read at once and framed in memory (one read instead of three
    per record); a larger one is read record by record, so memory never holds more than one record.
    ``damaged`` is told, in a few words, why reading stopped before the end of the file (if it did).
    """
    say = damaged or (lambda _why: None)
    import google_crc32c

    crc = google_crc32c.value
    try:
        with open(path, "rb") as fh:
            if os.fstat(fh.fileno()).st_size <= READ_WHOLE:
                yield from _framed(fh.read(), crc, needle, say)
                return
            while len(header := fh.read(12)) == 12:
                length, header_crc = _HEADER.unpack(header)
                if _masked(crc, header[:8]) != header_crc:
                    say(f"corrupt record at byte {fh.tell() - 12}")
                    return
                if length > MAX_RECORD:
                    fh.seek(length + 4, 1)
                    continue
                payload, footer = fh.read(length), fh.read(4)
                if len(footer) < 4 or _masked(crc, payload) != _FOOTER.unpack(footer)[0]:
                    say("cut short" if len(footer) < 4 else "corrupt record")
                    return
                if needle in payload:
                    yield payload
            if header:
                say("cut short")
    except OSError as exc:
        say(f"unreadable ({exc.strerror or type(exc).__name__})")
        return


def _framed(
    data: bytes, crc: Callable[[bytes], int], needle: bytes, say: Callable[[str], None] = lambda _why: None
) -> Iterator[bytes]:
    """:func:`_payloads` over a file's bytes; the CRC masking is inlined (this loop runs per record)."""
    at, end, delta = 0, len(data), _MASK_DELTA
    unpack_header, unpack_footer = _HEADER.unpack_from, _FOOTER.unpack_from
    while at + 12 <= end:
        length, header_crc = unpack_header(data, at)
        value = crc(data[at : at + 8])
        if ((((value >> 15) | (value << 17)) + delta) & 0xFFFFFFFF) != header_crc or at + 16 + length > end:
            say(f"corrupt record at byte {at}" if at + 16 + length <= end else f"cut short at byte {at}")
            return
        payload = data[at + 12 : at + 12 + length]
        value = crc(payload)
        if ((((value >> 15) | (value << 17)) + delta) & 0xFFFFFFFF) != unpack_footer(data, at + 12 + length)[
            0
        ]:
            say(f"corrupt record at byte {at}")
            return
        if needle in payload:
            yield payload
        at += 16 + length
    if at != end:
        say(f"cut short at byte {at}")


def _events(path: str | Path, needle: bytes) -> Iterator[_Event]:
    yield from _decoded(_payloads(path, needle))


def _scalar(value: Any) -> float | None:
    if value.HasField("simple_value"):
        return float(value.simple_value)
    if value.HasField("tensor") and value.tensor.float_val:
        return float(value.tensor.float_val[0])
    return None


def last_scalar(events_file: str | Path, tag: str) -> tuple[int, float] | None:
    """``(step, value)`` of the last ``tag`` point, or None when never logged or unreadable.

    Every record is framed and CRC-checked, but only the last few that mention the tag are parsed (a
    run's log holds thousands of points; the answer is in the last one). Only when none of those holds
    the scalar (its name was text, say) is every mention parsed.
    """
    from collections import deque

    recent = deque(_payloads(events_file, tag.encode()), maxlen=_RECENT)
    found = _last_in(_decoded(reversed(recent)), tag)
    if found is None and len(recent) == _RECENT:
        found = _last_in(reversed(list(_events(events_file, tag.encode()))), tag)
    return found


def scalars(events_file: str | Path, tag: str, problems: list[str] | None = None) -> list[tuple[int, float]]:
    """Every ``(step, value)`` point logged under ``tag``, in file order (a learning curve).

    The same framing and CRC checks as :func:`last_scalar`; a damaged or cut-short file gives the points
    before the damage, and an unreadable one none. When ``problems`` is given, a line saying why reading
    stopped early (if it did) is appended to it.
    """
    points: list[tuple[int, float]] = []
    why: list[str] = []
    for event in _decoded(_payloads(events_file, tag.encode(), why.append)):
        for value in event.summary.value:
            if value.tag == tag and (scalar := _scalar(value)) is not None:
                points.append((int(event.step), scalar))
    if why and problems is not None:
        problems.append(f"events file {why[0]}: {len(points)} {tag} points read before it")
    return points


def _decoded(payloads: Iterable[bytes]) -> Iterator[_Event]:
    from google.protobuf.message import DecodeError
    from tensorboard.compat.proto.event_pb2 import Event

    for payload in payloads:
        try:
            yield Event.FromString(payload)
        except DecodeError:
            return


def _last_in(events_newest_first: Iterable[_Event], tag: str) -> tuple[int, float] | None:
    for event in events_newest_first:
        for value in reversed(event.summary.value):
            if value.tag == tag and (scalar := _scalar(value)) is not None:
                return int(event.step), scalar
    return None


def text_summary(events_file: str | Path, tag: str = "hyperparameters") -> str | None:
    """The first text summary logged under ``tag`` (CleanRL's markdown hyperparameter table)."""
    for event in _events(events_file, tag.encode()):
        for value in event.summary.value:
            if value.tag.startswith(tag) and value.HasField("tensor") and value.tensor.string_val:
                text: str = value.tensor.string_val[0].decode("utf-8", "replace")
                return text
    return None
