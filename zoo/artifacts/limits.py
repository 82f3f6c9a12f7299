"""Bounds on what zoo reads from a file it did not write, so that no read is unbounded.

Each bound is far above what the libraries write (a state dict's ``data.pkl`` is a few KiB per
hundred tensors; SB3's ``data`` JSON a few KiB; VecNormalize statistics a few MiB for image
observations) and far below what would stall ``zoo check`` or exhaust memory. A file over a bound is
refused in one line that names the bound, before it is decompressed or read whole.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

from zoo.errors import BrokenFile

#: A pickle read whole and interpreted: ``data.pkl`` of a torch file, ``vecnormalize.pkl``, ``cfgs.pkl``.
MAX_PICKLE_BYTES = 256 << 20
#: JSON and text entries of a model archive (SB3's ``data``, version files).
MAX_TEXT_BYTES = 64 << 20
#: An archive entry is inflated (for its CRC and its content) only up to this size ...
MAX_ENTRY_BYTES = 16 << 30
#: ... and, when it is larger than :data:`RATIO_FLOOR_BYTES`, only up to this compression ratio: deflate
#: reaches ~1000:1 on zeros (a zip bomb), weights and JSON compress less than 10:1.
MAX_RATIO = 200
RATIO_FLOOR_BYTES = 1 << 20
#: Entries in one archive (a torch file has one per tensor storage, plus five).
MAX_ENTRIES = 1 << 20


def mib(n: int) -> str:
    return f"{n / (1 << 20):.0f} MiB" if n < 1 << 30 else f"{n / (1 << 30):.0f} GiB"


def read_model_file(path: Path, max_bytes: int) -> tuple[bytes, int, str | None, str | None]:
    """``(data, size, kind, problem)`` of a model file read the one bounded way: the whole file when it
    holds at most ``max_bytes`` (else its first 4 bytes, enough to say what it is), its size; ``kind`` and
    ``problem`` say why it cannot be read (``missing``, or ``unreadable``: not a regular file, an OS error)."""
    import stat

    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            return b"", 0, "unreadable", "not a regular file"
        with path.open("rb") as fh:
            data = fh.read(max_bytes + 1 if st.st_size <= max_bytes else 4)
    except FileNotFoundError:
        return b"", 0, "missing", "file not found"
    except OSError as exc:
        return b"", 0, "unreadable", exc.strerror or str(exc)
    return data, max(st.st_size, len(data)), None, None


def read_pickle_file(path: Path, what: str, hint: str = "re-save or re-download the file") -> bytes:
    """A pickle file read whole, refused by its size (before it is read) over :data:`MAX_PICKLE_BYTES`."""
    try:
        size = path.stat().st_size
        if size > MAX_PICKLE_BYTES:
            raise BrokenFile(
                f"{path}: {mib(size)}, over zoo's {mib(MAX_PICKLE_BYTES)} bound for {what}", hint=hint
            )
        return path.read_bytes()
    except OSError as exc:
        raise BrokenFile(f"{path}: cannot read: {exc.strerror or exc}") from None


def entry_problem(name: str, size: int, compressed: int, cap: int = MAX_ENTRY_BYTES) -> str | None:
    """Why an archive entry must not be inflated (too large, or a zip bomb's ratio); None when it may."""
    if size > cap:
        return f"{name} inflates to {mib(size)}, over zoo's {mib(cap)} bound"
    if size > RATIO_FLOOR_BYTES and size > MAX_RATIO * max(compressed, 1):
        return f"{name} inflates {size // max(compressed, 1)}:1 ({mib(size)}), a zip bomb's ratio"
    return None


class EntryProblem(Exception):
    """An archive entry that was not read: ``over_bound`` when :func:`entry_problem` refused it, else damaged."""

    def __init__(self, message: str, over_bound: bool = False):
        super().__init__(message)
        self.over_bound = over_bound


def read_entry(zf: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int, keep: bool = True) -> bytes:
    """One entry, bounded before anything is inflated, inflated in 1 MiB blocks with ``zipfile`` checking
    its CRC-32 at the end (``b""`` unless ``keep``: the CRC is checked all the same)."""
    problem = entry_problem(info.filename, info.file_size, info.compress_size, cap)
    if problem:
        raise EntryProblem(problem, over_bound=True)
    chunks = []
    try:
        with zf.open(info) as fh:
            while chunk := fh.read(1 << 20):
                if keep:
                    chunks.append(chunk)
    except zipfile.BadZipFile as exc:
        what = "is corrupted (CRC-32 mismatch)" if "CRC" in str(exc) else f"cannot be read ({exc})"
        raise EntryProblem(f"entry {info.filename} {what}") from None
    except (zlib.error, EOFError, OSError, ValueError, NotImplementedError) as exc:
        raise EntryProblem(f"entry {info.filename} cannot be read: {type(exc).__name__}: {exc}") from None
    return b"".join(chunks)
