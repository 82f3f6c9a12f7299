"""Read what a run logged, through tensorboard's own event-file reader.

``RawEventFileLoader`` yields the records (CRC-checked by tensorboard); each is
parsed as an ``Event`` proto. The legacy ``EventFileLoader`` would also migrate
every event to the new data format, which costs 3x more and tells us nothing more
for scalars written by ``SummaryWriter``.
"""

from __future__ import annotations

from pathlib import Path


def _scalar(value) -> float | None:
    if value.HasField("simple_value"):
        return float(value.simple_value)
    if value.HasField("tensor") and value.tensor.float_val:
        return float(value.tensor.float_val[0])
    return None


def last_scalar(events_file: str | Path, tag: str = "charts/episodic_return") -> tuple[int, float] | None:
    """``(step, value)`` of the last ``tag`` point, or None when never logged or unreadable."""
    from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
    from tensorboard.compat.proto.event_pb2 import Event

    last = None
    try:
        for record in RawEventFileLoader(str(events_file)).Load():
            event = Event.FromString(record)
            for value in event.summary.value:
                if value.tag == tag:
                    scalar = _scalar(value)
                    if scalar is not None:
                        last = (int(event.step), scalar)
    except Exception:  # noqa: BLE001 - a damaged events file is "nothing logged", not a crash
        return last
    return last


def text_summary(events_file: str | Path, tag: str = "hyperparameters") -> str | None:
    """The first text summary logged under ``tag`` (CleanRL's markdown hyperparameter table)."""
    from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
    from tensorboard.compat.proto.event_pb2 import Event

    try:
        for record in RawEventFileLoader(str(events_file)).Load():
            for value in Event.FromString(record).summary.value:
                if value.tag.startswith(tag) and value.HasField("tensor") and value.tensor.string_val:
                    return value.tensor.string_val[0].decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - a damaged events file just has no table
        return None
    return None
