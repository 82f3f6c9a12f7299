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

import struct
from collections.abc import Callable, Iterator
from pathlib import Path

_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")
_MASK_DELTA = 0xA282EAD8
#: A record longer than this is skipped unread (a histogram or image summary, never a scalar).
MAX_RECORD = 64 << 20


def _masked(crc: Callable[[bytes], int], data: bytes) -> int:
    value = crc(data)
    return (((value >> 15) | (value << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def _payloads(path: str | Path, needle: bytes) -> Iterator[bytes]:
    """The verified payloads that contain ``needle``, in file order, until the first damaged record."""
    import google_crc32c

    crc = google_crc32c.value
    try:
        with open(path, "rb") as fh:
            while len(header := fh.read(12)) == 12:
                length, header_crc = _HEADER.unpack(header)
                if _masked(crc, header[:8]) != header_crc:
                    return
                if length > MAX_RECORD:
                    fh.seek(length + 4, 1)
                    continue
                payload, footer = fh.read(length), fh.read(4)
                if len(footer) < 4 or _masked(crc, payload) != _FOOTER.unpack(footer)[0]:
                    return
                if needle in payload:
                    yield payload
    except OSError:
        return


def _events(path: str | Path, needle: bytes):
    from google.protobuf.message import DecodeError
    from tensorboard.compat.proto.event_pb2 import Event

    for payload in _payloads(path, needle):
        try:
            yield Event.FromString(payload)
        except DecodeError:
            return


def _scalar(value) -> float | None:
    if value.HasField("simple_value"):
        return float(value.simple_value)
    if value.HasField("tensor") and value.tensor.float_val:
        return float(value.tensor.float_val[0])
    return None


def last_scalar(events_file: str | Path, tag: str = "charts/episodic_return") -> tuple[int, float] | None:
    """``(step, value)`` of the last ``tag`` point, or None when never logged or unreadable."""
    last = None
    for event in _events(events_file, tag.encode()):
        for value in event.summary.value:
            if value.tag == tag:
                scalar = _scalar(value)
                if scalar is not None:
                    last = (int(event.step), scalar)
    return last


def text_summary(events_file: str | Path, tag: str = "hyperparameters") -> str | None:
    """The first text summary logged under ``tag`` (CleanRL's markdown hyperparameter table)."""
    for event in _events(events_file, tag.encode()):
        for value in event.summary.value:
            if value.tag.startswith(tag) and value.HasField("tensor") and value.tensor.string_val:
                return value.tensor.string_val[0].decode("utf-8", "replace")
    return None
