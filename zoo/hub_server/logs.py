"""What ``zoo hub serve`` tells its operator: Python loggers under ``zoo.hub``, one line per event.

The loggers keep the ``zoo.hub`` names the operator configures (docs/hub-serve.md) though the server's
modules live in :mod:`zoo.hub_server`: the names are the interface, not the module path.

- ``zoo.hub.access``: one line per request, ``METHOD PATH STATUS TIME user=USER`` (INFO; ERROR for a
  server error: a 5xx other than the 501 of a Hub call left out, or no answer at all).
  The path is the one the client sent, percent-encoded, without its query string (LFS upload URLs carry
  their signature there); no header is logged, so no token is.
- ``zoo.hub.push``: one line per commit: repo, revision, new commit id, user, and the files it changed.
- ``zoo.hub.reevaluate``: ``--reevaluate``'s queue: a commit queued, started, finished with its outcome
  (WARNING when it failed or was skipped), and the ``zoo eval`` command it ran (DEBUG).
- ``zoo.hub.error``: a server bug, with its traceback (ERROR).

Every text a client chose (paths, repo ids, file names, a failed evaluation's reason) goes through
:func:`printable` first, so that no request can write a line of its own into the log (log injection).
Nothing is printed until :func:`log_to_stderr` (``zoo hub serve --log-level``) or the embedding program
configures logging; Python's last-resort handler still prints errors to stderr.
"""

from __future__ import annotations

import logging
import sys
import time
import unicodedata
from collections.abc import Iterable

ACCESS = logging.getLogger("zoo.hub.access")
PUSH = logging.getLogger("zoo.hub.push")
REEVALUATE = logging.getLogger("zoo.hub.reevaluate")
ERRORS = logging.getLogger("zoo.hub.error")

LEVELS = ("debug", "info", "warning", "error")
#: Files a push line names before it says "and N more": a commit may change thousands.
PUSH_FILES_SHOWN = 20
_UNSAFE = {"Cc", "Cf", "Zl", "Zp"}  # controls, format characters (bidi overrides), line/paragraph separators


def printable(text: str) -> str:
    """``text`` with every control, format or line-separator character escaped (``\\n``, ``\\x00``,
    ``\\u202e``), and a backslash doubled, so that the escapes cannot be forged either."""
    if text.isprintable() and "\\" not in text:
        return text
    out = []
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif unicodedata.category(char) in _UNSAFE:
            out.append(char.encode("unicode_escape").decode("ascii"))
        else:
            out.append(char)
    return "".join(out)


def file_list(changes: Iterable[str]) -> str:
    """Changed files (``+path``, ``-path``) for a push line, at most :data:`PUSH_FILES_SHOWN` of them."""
    changes = list(changes)
    shown = " ".join(printable(change) for change in changes[:PUSH_FILES_SHOWN])
    more = len(changes) - PUSH_FILES_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


class _Kind(logging.Filter):
    """Adds ``kind``: the logger's name under ``zoo.hub`` (access, push, reevaluate, error)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.kind = record.name.removeprefix("zoo.hub.")
        return True


def log_to_stderr(level: str = "info") -> logging.Handler:
    """Print the ``zoo.hub`` loggers' lines at ``level`` and above to stderr, with a UTC timestamp
    (``zoo hub serve --log-level``); returns the handler. Not passed on to the root logger, so an
    embedding program's own configuration does not print each line twice."""
    if level not in LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LEVELS)}, not {level!r}")
    handler = logging.StreamHandler(sys.stderr)
    formatter = logging.Formatter("%(asctime)s %(levelname)s %(kind)s %(message)s", "%Y-%m-%dT%H:%M:%SZ")
    formatter.converter = time.gmtime
    handler.setFormatter(formatter)
    handler.addFilter(_Kind())
    root = logging.getLogger("zoo.hub")
    root.addHandler(handler)
    root.setLevel(level.upper())
    root.propagate = False
    return handler
