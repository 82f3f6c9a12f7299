"""zoo's errors: each class knows its exit code and its usual fix.

Every expected failure is a :class:`ZooError` whose message is the single line a user sees. The CLI
prints ``error: <message>`` (plus ``hint: <hint>``) and exits with the class's ``exit_code``; no
traceback ever reaches a user for an expected failure. Library callers catch the class they care about
(``except zoo.errors.RefusedError``) instead of parsing messages.

========================  ====  =================================================================
class                     exit  meaning
========================  ====  =================================================================
:class:`ZooError`         1     a problem was found or the operation failed (the base class)
:class:`BrokenFile`       1     a file is cut short, corrupt, malformed or over a read bound
:class:`LayoutMismatch`   1     a file is sound but not laid out as its framework writes it
:class:`FileChanged`      1     a file changed while zoo read it (a trainer saving over it)
:class:`UnsupportedError` 1     zoo cannot do this yet, or a needed optional extra is missing
:class:`NetworkError`     1     the hub could not be reached, or refused the request
:class:`WriteError`       1     an output could not be written: a full disk, a read-only mount, no access
:class:`RolloutError`     1     a rollout gave no honest score: NaN actions, the env raised, a bound
:class:`UsageError`       2     flags that contradict each other or name nothing
:class:`RefusedError`     3     a guardrail said no: an untrusted pickle, no consent to the network
========================  ====  =================================================================
"""

from __future__ import annotations

import errno
import os

EXIT_OK, EXIT_PROBLEM, EXIT_USAGE, EXIT_REFUSED = 0, 1, 2, 3


class ZooError(Exception):
    """An expected failure: bad input, missing file, refused operation."""

    exit_code: int = EXIT_PROBLEM
    default_hint: str | None = None

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint if hint is not None else self.default_hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} ({self.hint})"


class BrokenFile(ZooError):
    """A file that is not what it claims to be: cut short, corrupt, malformed, or over a bound."""

    default_hint = "re-save or re-download the file"


class LayoutMismatch(ZooError):
    """A readable file whose structure is not what its framework writes (or the registry describes)."""


class FileChanged(ZooError):
    """A file was rewritten while zoo read it: a trainer saved over the checkpoint being copied."""

    default_hint = "it is read again when it is evaluated again"


class UnsupportedError(ZooError):
    """Something zoo does not do (yet), or cannot do without an optional extra."""


class NetworkError(ZooError):
    """The hub could not be reached, or answered with an error."""

    default_hint = "check the network, HF_ENDPOINT, or that the hub is running"


class WriteError(ZooError):
    """An output could not be written. The disk, the mount or the permissions are the cause, and the
    message names the file and says which, so that a full disk never reads as a bug in zoo."""

    default_hint = "choose another output path"

    #: errno values that always mean the disk or the mount, wherever they are raised
    DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})

    @classmethod
    def of(cls, exc: OSError, path: object = None) -> WriteError:
        """The one line for ``exc``, raised while writing ``path`` (or the file the error names)."""
        path = path if path is not None else exc.filename
        what = f"cannot write {path}" if path is not None else "a write failed"
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return cls(
                f"{what}: no space left on {'its' if path is not None else 'the'} disk",
                hint="free some space, or write elsewhere",
            )
        if exc.errno == errno.EROFS:
            return cls(f"{what}: the file system is mounted read-only")
        return cls(f"{what}: {exc.strerror or exc}")


class RolloutError(ZooError):
    """A rollout that cannot give an honest score: the policy acted from NaN or infinite values, the env raised
    or paid a non-finite reward, or the wall-time budget ran out (:mod:`zoo.rollout_guard`). Nothing is
    recorded."""


class UsageError(ZooError):
    """Flags or arguments that contradict each other or name nothing: exit code 2."""

    exit_code = EXIT_USAGE


class RefusedError(ZooError):
    """A guardrail said no (untrusted pickle, missing consent): exit code 3."""

    exit_code = EXIT_REFUSED


#: zoo's own files: never the place a user's error is reported at.
_ZOO_SOURCE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def user_error(exc: BaseException, called: str, who: str = "your policy class") -> ZooError:
    """One line for an exception raised by the user's code: the exception, what zoo called, and the line
    of the user's code it came from (the innermost frame outside the installed libraries)."""
    import sysconfig
    import traceback

    first = (str(exc).strip().splitlines() or [""])[0][:300]
    frames = traceback.extract_tb(exc.__traceback__)
    skipped = (_ZOO_SOURCE, *{sysconfig.get_paths()[key] for key in ("stdlib", "purelib", "platlib")})
    mine = [f for f in frames if not f.filename.startswith(skipped)]
    frame = (mine or frames)[-1] if frames else None
    where = f"{os.path.basename(frame.filename)}:{frame.lineno}, in {frame.name}; " if frame else ""
    return ZooError(
        f"{who} raised: {type(exc).__name__}{': ' + first if first else ''}",
        hint=f"{where}zoo called {called}",
    )
