"""One exception type whose message is the single line a user sees.

The CLI prints ``error: <message>`` (plus ``hint: <hint>`` when set) and exits
with ``exit_code``; no traceback ever reaches a user for an expected failure.
"""

from __future__ import annotations

EXIT_OK, EXIT_PROBLEM, EXIT_USAGE, EXIT_REFUSED = 0, 1, 2, 3


class ZooError(Exception):
    """An expected failure: bad input, missing file, refused operation."""

    def __init__(self, message: str, hint: str | None = None, exit_code: int = EXIT_PROBLEM):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} ({self.hint})"


class RefusedError(ZooError):
    """A guardrail said no (untrusted pickle, missing consent): exit code 3."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message, hint, exit_code=EXIT_REFUSED)


class BrokenFile(ZooError):
    """A file that is not what it claims to be: cut short, corrupt, malformed, or over a bound."""

    def __init__(self, message: str, hint: str | None = "re-save or re-download the file"):
        super().__init__(message, hint)
