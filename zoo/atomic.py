"""Write files so that readers see the old content or the new, never half of one.

One rule (build beside the destination, then rename), and the tools that follow it:

- :func:`write_text_atomic` / :func:`write_json_atomic` for one file, :func:`copy_file_atomic` for a copy
  of exactly the bytes that were hashed;
- :func:`append_line` for logs of one record per line (``evals.jsonl``), where a reader must never see
  a record half written run into the next one;
- :func:`private_workdir` for results made of several files (an export and its sidecar, a staged
  push): a hidden folder next to the destination that holds an ``flock`` while in use, so the folders
  a killed process leaves behind are recognised (nobody holds their lock) and removed by the next run;
- :func:`check_writable` to refuse an output path before minutes of work, not after.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from zoo.errors import FileChanged, ZooError

_LOCK = ".lock"
#: A work folder without its lock file is stale after this long (the lock is taken right after mkdtemp).
_UNLOCKED_GRACE_S = 60.0


@contextlib.contextmanager
def _replacing(path: Path, binary: bool = False) -> Iterator[IO]:
    """A temp file beside ``path`` for the block to write; fsynced and renamed over ``path`` when the block
    ends, removed if it raises (``path`` is then as it was)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write to a temp file in the same folder, fsync, then rename over ``path``."""
    path = Path(path)
    with _replacing(path) as fh:
        fh.write(text)
    return path


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """:func:`write_text_atomic` for bytes (a PNG)."""
    path = Path(path)
    with _replacing(path, binary=True) as fh:
        fh.write(data)
    return path


def write_json_atomic(path: str | os.PathLike, data: Any) -> Path:
    """``data`` as strict JSON (:func:`zoo.strict_json.dumps`: a NaN is an error, never a token)."""
    from zoo.strict_json import dumps

    return write_text_atomic(path, dumps(data, what=str(path), indent=2) + "\n")


def copy_file_atomic(src: str | os.PathLike, dst: str | os.PathLike, sha256: str | None = None) -> Path:
    """Copy ``src`` to a temp file beside ``dst``, fsync, then rename over ``dst``.

    With ``sha256``, the copy must have that digest: a source rewritten since it was hashed (a trainer
    saving over the file it was evaluated from) raises :class:`FileChanged` and leaves ``dst`` as it was,
    so that a copy is never of other bytes than the ones that were measured.
    """
    import hashlib

    dst = Path(dst)
    digest = hashlib.sha256()
    with _replacing(dst, binary=True) as out, open(src, "rb") as inp:
        for chunk in iter(lambda: inp.read(1 << 20), b""):
            digest.update(chunk)
            out.write(chunk)
        if sha256 is not None and digest.hexdigest() != sha256:
            raise FileChanged(f"{src} changed while it was copied")
        os.chmod(
            out.fileno(), stat.S_IMODE(os.stat(src).st_mode)
        )  # the source's permission bits, as copymode
    return dst


def append_line(path: str | os.PathLike, line: str) -> None:
    """Append ``line`` (no newline in it) to a log of one record per line, with one ``write`` and fsync.

    Readers see whole lines; the one damage a crash can do is a last line cut short, which readers skip
    and which this function closes with a newline before appending, so it never runs into the next record.
    """
    with open(path, "a+b") as fh:
        fh.seek(0, os.SEEK_END)
        torn = False
        if fh.tell() > 0:
            fh.seek(-1, os.SEEK_END)
            torn = fh.read(1) != b"\n"
        fh.write((b"\n" if torn else b"") + line.encode("utf-8") + b"\n")
        fh.flush()
        os.fsync(fh.fileno())


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
