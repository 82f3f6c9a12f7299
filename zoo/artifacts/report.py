"""What ``zoo check`` says about one run: a status, one reason, one fix."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zoo.artifacts.runs import Run

OK, WARNING, ERROR = "ok", "warning", "error"
_RANK = {OK: 0, WARNING: 1, ERROR: 2}


@dataclass
class RunReport:
    """The verdict on one run. The first error (else first warning) is the reason shown."""

    run: Run
    status: str = OK
    reason: str = "ready to evaluate"
    hint: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def flag(self, status: str, reason: str, hint: str | None = None) -> None:
        """Record a finding; keep the most severe (first among equals) as the headline."""
        if _RANK[status] > _RANK[self.status]:
            self.status, self.reason, self.hint = status, reason, hint
        elif status != OK:
            self.notes.append(reason if not hint else f"{reason} ({hint})")

    def to_json(self) -> dict:
        return {
            "status": self.status, "reason": self.reason, "hint": self.hint,
            "run": self.run.to_json(), "details": self.details, "notes": self.notes,
        }  # fmt: skip


_BROKEN = ("empty", "not-torch", "truncated", "missing")


def flag_torch_file(report: RunReport, info, label: str | None = None,
                    not_torch_hint: str = "is this a model file of this framework?") -> bool:  # fmt: skip
    """Flag what the static scan of a torch file found; True when ``weights_only`` loading will take it.

    One verdict for every adapter: an unsafe pickle and a broken file are errors, anything torch's
    weights-only loader would refuse is a warning that ``zoo eval`` needs ``--trust-pickle``.
    """
    where, prefix = (f" in {label}", f"{label}: ") if label else ("", "")
    if info.dangerous:
        report.details["dangerous_globals"] = info.dangerous
        report.flag(ERROR, f"unsafe pickle{where}: loading would call {', '.join(info.dangerous)}",
                    "do not load it; zoo eval refuses it unless --trust-pickle")  # fmt: skip
        return False
    if info.kind in _BROKEN or info.problem:
        hint = "re-save or re-download the file" if info.kind == "truncated" else not_torch_hint
        report.flag(ERROR, f"{prefix}{info.kind}: {info.problem}", hint)
        return False
    if not info.weights_only_ok:
        what = ", ".join(info.disallowed) or f"{info.kind} format"
        report.flag(
            WARNING, f"{prefix}not loadable with weights_only=True ({what})", "zoo eval needs --trust-pickle"
        )
        return False
    return True


def verify_weights_only_load(report: RunReport, paths: list) -> None:
    """Confirm the static verdict with torch's own weights-only loader (mmap: no tensor copies)."""
    import torch

    for path in paths:
        try:
            torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            report.details["weights_only"] = False
            report.flag(ERROR, f"torch.load(weights_only=True) failed on {path.name}: {first}",
                        "re-save or re-download the file")  # fmt: skip
