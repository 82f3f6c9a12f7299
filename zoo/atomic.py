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
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from zoo.errors import FileChanged, WriteError, ZooError

_LOCK = ".lock"
#: A work folder without its lock file is stale after this long (the lock is taken right after mkdtemp).
_UNLOCKED_GRACE_S = 60.0


def umask() -> int:
    """The process's umask, read without changing it where Linux says it (``/proc/self/status``; setting
    it to read it back would race with other threads creating files)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def plain_mode(folder: bool = False) -> int:
    """The mode ``open`` (or ``mkdir``) would give a new file (folder): 0o666 (0o777) less the umask. Temp
    files and folders start at 0o600/0o700, so what zoo renames into place gets this mode first."""
    return (0o777 if folder else 0o666) & ~umask()


#: Device files and pipes an output is written *through* (``--out /dev/null``, ``/dev/stdout``, a shell's
#: ``>(jq .)``): renaming a temp file over them would replace the device node with a regular file.
_STREAMS = (stat.S_ISCHR, stat.S_ISFIFO)
#: Names of an open file descriptor: always written through, also when the descriptor is a regular file
#: (``zoo eval --out /dev/stdout > eval.json``: replacing the file would leave the shell's descriptor on the
#: old one).
_DESCRIPTOR = re.compile(r"/dev/(stdout|stderr|fd/\d+)|/proc/(self|\d+)/fd/\d+")


def _destination(path: Path) -> tuple[Path, bool]:
    """Where a write of ``path`` goes, and whether it streams into it rather than replacing it.

    A symlink is followed (the link stays, its target is replaced); a character device or a pipe, or a
    link to one, is written through; a regular file or a new name is replaced atomically. Anything else
    (a folder, a socket, a block device) is refused with one line, before any work.
    """
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # a new name (its folder is checked where it is made)
        return (path.resolve() if path.is_symlink() else path), False  # or a link to a name still free
    except OSError as exc:
        raise WriteError(f"cannot write {path}: {exc.strerror or exc}") from None
    if _DESCRIPTOR.fullmatch(os.path.abspath(path)):
        return path, True
    if stat.S_ISREG(mode):
        return (path.resolve() if path.is_symlink() else path), False
    if any(kind(mode) for kind in _STREAMS):
        return path, True
    kind = "folder" if stat.S_ISDIR(mode) else "socket" if stat.S_ISSOCK(mode) else "block device"
    raise WriteError(f"cannot write {path}: it is a {kind}, not a file", hint="give a file name")


@contextlib.contextmanager
def _replacing(path: Path, binary: bool = False, mode: int | None = None) -> Iterator[IO]:
    """A file object for the block to write ``path`` with.

    Normally a temp file beside ``path``, fsynced, given ``mode`` or the mode a plain write would give (an
    existing file's own, else the umask's) and renamed over ``path`` when the block ends; removed if it raises
    (``path`` is then as it was). A device or a pipe (:func:`_destination`) is written through instead.
    An ``OSError`` (a full disk, a read-only mount) becomes a one-line :class:`WriteError` naming the file.
    """
    target, stream = _destination(path)
    try:
        if stream:
            with open(target, "wb" if binary else "w", encoding=None if binary else "utf-8") as fh:
                yield fh
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode is None:
            try:
                mode = stat.S_IMODE(os.stat(target).st_mode)
            except FileNotFoundError:
                mode = plain_mode()
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8") as fh:
                yield fh
                fh.flush()
                os.fchmod(fh.fileno(), mode)
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise WriteError.of(exc, path) from None


def renamed_into(path: Path, what: str) -> Path:
    """The regular file that a result built elsewhere (an export and its sidecar) is renamed onto for
    ``path``: ``path`` itself, or a symlink's target. A device, a pipe, a folder or a socket is refused with
    one line, since a rename would replace it with a file."""
    target, stream = _destination(Path(path))
    if stream:
        raise WriteError(
            f"cannot write {what} {path}: it is a device or a pipe, and this output is a file",
            hint="give a file name",
        )
    return target


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
    with (
        open(src, "rb") as inp,
        _replacing(dst, binary=True, mode=stat.S_IMODE(os.fstat(inp.fileno()).st_mode)) as out,
    ):
        for chunk in iter(lambda: inp.read(1 << 20), b""):
            digest.update(chunk)
            out.write(chunk)
        if sha256 is not None and digest.hexdigest() != sha256:
            raise FileChanged(f"{src} changed while it was copied")
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

    A file is judged as the writers above will treat it (:func:`_destination`): a device or a pipe must be
    writable, a folder or a socket is refused. Otherwise the nearest existing ancestor must be a folder we
    may write in; when the parent exists, a probe file is created and removed there, which also catches
    read-only mounts and pseudo filesystems. Nothing is left behind.
    """
    path = Path(path)
    if folder and path.exists() and not path.is_dir():
        raise ZooError(f"{what} {path} is a file", hint="give a folder name")
    if not folder:
        if path.is_dir():
            raise ZooError(f"{what} {path} is a folder", hint="give a file name")
        target, stream = _destination(path)
        if stream:
            if not os.access(target, os.W_OK):
                raise WriteError(f"cannot write {what} {path}: permission denied")
            return
        path = target
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ZooError(
            f"cannot write {what} {path}: {ancestor} is a file, not a folder", hint=f"choose another {what}"
        )
    try:
        if ancestor == path.parent:
            fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe", dir=ancestor)
            os.close(fd)
            os.unlink(probe)
        elif not os.access(ancestor, os.W_OK | os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
    except OSError as exc:
        raise WriteError(
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
