"""Write files so that readers see the old content or the new, never half of one.

Three tools, one rule (build beside the destination, then rename):

- :func:`write_text_atomic` / :func:`write_json_atomic` for one file;
- :func:`private_workdir` for results made of several files (an export and its sidecar, a staged
  push): a hidden folder next to the destination that holds an ``flock`` while in use, so the folders
  a killed process leaves behind are recognised (nobody holds their lock) and removed by the next run;
- :func:`check_writable` to refuse an output path before minutes of work, not after.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from zoo.errors import ZooError

_LOCK = ".lock"
#: A work folder without its lock file is stale after this long (the lock is taken right after mkdtemp).
_UNLOCKED_GRACE_S = 60.0


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write to a temp file in the same folder, fsync, then rename over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json_atomic(path: str | os.PathLike, data: Any) -> Path:
    return write_text_atomic(path, json.dumps(data, indent=2) + "\n")


def check_writable(path: Path, what: str, *, folder: bool = False) -> None:
    """Raise a one-line :class:`ZooError` unless ``path`` (a file, or a ``folder``) could be written.

    The nearest existing ancestor must be a folder we may write in; when the parent exists, a probe
    file is created and removed there, which also catches read-only mounts and pseudo filesystems.
    Nothing is left behind.
    """
    path = Path(path)
    if path.exists() and path.is_dir() != folder:
        kind = "file" if folder else "folder"
        raise ZooError(f"{what} {path} is a {kind}", hint=f"give a {'folder' if folder else 'file'} name")
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ZooError(f"cannot write {what} {path}: {ancestor} is a file, not a folder",
                       hint=f"choose another {what}")  # fmt: skip
    try:
        if ancestor == path.parent:
            fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe", dir=ancestor)
            os.close(fd)
            os.unlink(probe)
        elif not os.access(ancestor, os.W_OK | os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
    except OSError as exc:
        raise ZooError(
            f"cannot write {what} {path}: {exc.strerror or exc}", hint=f"choose another {what}"
        ) from None


def _remove_stale(parent: Path, prefix: str) -> None:
    """Remove ``prefix*`` work folders in ``parent`` whose owner is gone (their lock is free)."""
    try:
        entries = [
            e for e in os.scandir(parent) if e.name.startswith(prefix) and e.is_dir(follow_symlinks=False)
        ]
    except OSError:
        return
    for entry in entries:
        try:
            fd = os.open(os.path.join(entry.path, _LOCK), os.O_RDWR)
        except FileNotFoundError:
            with contextlib.suppress(OSError):
                if time.time() - entry.stat(follow_symlinks=False).st_mtime > _UNLOCKED_GRACE_S:
                    shutil.rmtree(entry.path, ignore_errors=True)
            continue
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # a live process is working in it
        else:
            shutil.rmtree(entry.path, ignore_errors=True)
        finally:
            os.close(fd)


@contextlib.contextmanager
def private_workdir(parent: Path, prefix: str) -> Iterator[Path]:
    """A fresh hidden folder in ``parent`` (same filesystem: results move out by rename), removed on exit.

    It holds an exclusive ``flock`` while in use; stale folders of the same prefix left by a process
    that was killed are removed first. ``prefix`` should start with a dot, so that discovery skips it.
    """
    parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(parent, prefix)
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    fd = os.open(path / _LOCK, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        os.close(fd)
