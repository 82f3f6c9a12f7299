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
