"""What ``zoo check`` says about one run: a status, one reason, one fix."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from zoo.artifacts.runs import Run

if TYPE_CHECKING:
    from zoo.artifacts.finite import NonFinite
    from zoo.artifacts.torchfile import TorchFileInfo

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

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reason": self.reason,
            "hint": self.hint,
            "run": self.run.to_json(),
            "details": self.details,
            "notes": self.notes,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunReport:
        return cls(
            Run.from_json(data["run"]),
            data["status"],
            data["reason"],
            data["hint"],
            data["details"],
            data["notes"],
        )

    def json_text(self) -> str:
        from zoo.strict_json import dumps

        return dumps(self.to_json(), what="the --json output")


class RememberedReport:
    """A verdict read back from ``zoo check``'s memo: its JSON is kept for output and parsed only when a
    field is asked for, so that re-checking 10,000 unchanged runs builds no objects at all."""

    def __init__(self, status: str, text: str):
        self.status, self._text = status, text

    @functools.cached_property
    def _report(self) -> RunReport:
        return RunReport.from_json(json.loads(self._text))

    def __getattr__(self, name: str) -> Any:  # run, reason, hint, details, notes
        return getattr(self._report, name)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self._text)
        return data

    def json_text(self) -> str:
        return self._text


_BROKEN = ("empty", "not-torch", "truncated", "missing", "unreadable")


def flag_torch_file(
    report: RunReport,
    info: TorchFileInfo,
    label: str | None = None,
    not_torch_hint: str = "is this a model file of this framework?",
) -> bool:
    """Flag what the verification of a torch file found; True when zoo's loader will take the file.

    One verdict for every adapter, never a warning about a global: one that runs code is an unsafe
    pickle, one outside zoo's allowlist is a global zoo cannot check, and a broken file is broken. When
    the static check could not decide (numpy values, torch's legacy format), torch's own weights-only
    loader is asked; only then is torch imported.
    """
    from zoo.artifacts.pickles import UNSAFE_HINT
    from zoo.artifacts.torchfile import UNKNOWN_HINT, UNREADABLE_HINT, confirm_with_torch

    where, prefix = (f" in {label}", f"{label}: ") if label else ("", "")
    report.details["weights_only"] = False
    for note in info.notes:
        report.flag(WARNING, f"{prefix}{note}", "re-save the file with torch.save's defaults")
    if info.dangerous:
        report.details["dangerous_globals"] = info.dangerous
        report.flag(
            ERROR, f"unsafe pickle{where}: loading would call {', '.join(info.dangerous)}", UNSAFE_HINT
        )
        return False
    if info.unknown:
        report.details["unknown_globals"] = info.unknown
        report.flag(
            ERROR,
            f"{prefix}holds {', '.join(info.unknown)}, which zoo cannot check without running it",
            UNKNOWN_HINT,
        )
        return False
    if info.kind == "unreadable":
        report.flag(ERROR, f"{prefix}cannot read {info.path.name}: {info.problem}", UNREADABLE_HINT)
        return False
    if info.kind in _BROKEN or info.problem:
        hint = not_torch_hint if info.kind in ("not-torch", "pickle") else "re-save or re-download the file"
        kind = info.kind if info.kind in _BROKEN else "broken file"
        report.flag(ERROR, f"{prefix}{kind}: {info.problem or info.kind}", hint)
        return False
    if info.confirm:
        failed = confirm_with_torch(info)
        if failed:
            report.flag(ERROR, f"{prefix}{failed}", "re-save or re-download the file")
            return False
        report.notes.append(f"{prefix}verified by torch's weights-only loader ({info.confirm})")
    report.details["weights_only"] = True
    flag_nonfinite(report, info.nonfinite, prefix)
    return True


def flag_nonfinite(report: RunReport, found: list[NonFinite], prefix: str = "") -> None:
    """An error naming the tensors that hold NaN or Inf (the loader takes them: the policy would act on
    garbage), the first tensors' counts in ``details["non_finite"]``."""
    from zoo.artifacts import finite

    if not found:
        return
    listed = report.details.setdefault("non_finite", [])
    listed += [{**f.to_json(), "tensor": f"{prefix}{f.name}"} for f in found[: finite.SHOWN - len(listed)]]
    report.flag(ERROR, f"{prefix}{finite.describe(found)}", finite.HINT)
