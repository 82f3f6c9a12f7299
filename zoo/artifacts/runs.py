"""The run record every framework's discovery produces, and filters over it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any


@dataclass
class Run:
    """One training run (or a lone model file) found on disk."""

    framework: str
    path: Path  # the run dir, or the model file when given one alone
    run_name: str | None = None
    env_id: str | None = None
    exp_name: str | None = None
    seed: int | None = None
    started_at: int | None = None  # unix time from the run name
    model_file: Path | None = None
    other_model_files: list[Path] = field(default_factory=list)
    events_file: Path | None = None
    videos: dict[str, int] = field(default_factory=dict)  # "train"/"eval" -> number of mp4 files
    eval_json: Path | None = None
    name_problem: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Plain JSON values (built field by field: ``asdict`` deep-copies, and ``zoo check`` does this per run)."""
        data = {f: getattr(self, f) for f in _FIELDS}
        for key in _PATHS:
            data[key] = str(data[key]) if data[key] is not None else None
        data["other_model_files"] = [str(p) for p in self.other_model_files]
        data["videos"] = dict(self.videos)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Run:
        """The run :meth:`to_json` described (``zoo check``'s remembered verdicts hold it)."""
        fields = {**data, **{k: Path(data[k]) if data[k] is not None else None for k in _PATHS}}
        fields["other_model_files"] = [Path(p) for p in data["other_model_files"]]
        return cls(**fields)


_PATHS = ("path", "model_file", "events_file", "eval_json")
_FIELDS = tuple(f.name for f in fields(Run))


@dataclass(frozen=True)
class RunFilter:
    """``--exp-name`` / ``--env-id`` / ``--seed``: narrow discovery to the run a user means."""

    exp_name: str | None = None
    env_id: str | None = None
    seed: int | None = None

    def active(self) -> bool:
        return any(v is not None for v in (self.exp_name, self.env_id, self.seed))

    def matches(self, run: Run | dict[str, Any]) -> bool:
        """Does the run (or its :meth:`Run.to_json`) match every filter given? A run's env id that names the
        module registering it (``myosuite:myoElbowPose1D6MRandom-v0``) matches the bare id too."""
        fields = run if isinstance(run, dict) else vars(run)
        env_id = fields["env_id"]
        return (
            (self.exp_name is None or fields["exp_name"] == self.exp_name)
            and (self.env_id is None or self.env_id in (env_id, env_id and env_id.rpartition(":")[2]))
            and (self.seed is None or fields["seed"] == self.seed)
        )

    def describe(self) -> str:
        flags = {"exp_name": "--exp-name", "env_id": "--env-id", "seed": "--run-seed"}
        parts = [f"{flags[k]} {v}" for k, v in vars(self).items() if v is not None]
        return " ".join(parts)


class Listings:
    """The folders discovery listed (each listed once) and the files whose content it read."""

    def __init__(self) -> None:
        self.folders: dict[str, list[os.DirEntry[str]] | OSError] = {}
        self.names: dict[str, frozenset[str]] = {}
        self.subdirs: dict[tuple[str, str], list[Path]] = {}  # (walk root, folder) -> what scan_tree descends
        self.files: set[str] = set()

    def inputs(self) -> list[str]:
        """What a discovery result depends on: a folder's listing changes its mtime, a file's content its stamp."""
        return sorted(self.folders) + sorted(self.files)


_LISTINGS: Listings | None = None


@contextlib.contextmanager
def shared_listings() -> Iterator[Listings]:
    """Within the block, :func:`listdir` lists each folder once, however many adapters walk the tree,
    and what discovery read is recorded (for ``zoo check``'s memo of discoveries)."""
    global _LISTINGS
    outer = _LISTINGS
    _LISTINGS = outer or Listings()
    try:
        yield _LISTINGS
    finally:
        _LISTINGS = outer


def listdir(folder: str | os.PathLike[str]) -> list[os.DirEntry[str]]:
    """``list(os.scandir(folder))``, remembered inside :func:`shared_listings` (errors too)."""
    if _LISTINGS is None:
        return list(os.scandir(folder))
    key = os.fspath(folder)
    if key not in _LISTINGS.folders:
        try:
            _LISTINGS.folders[key] = list(os.scandir(key))
        except OSError as exc:
            _LISTINGS.folders[key] = exc
    found = _LISTINGS.folders[key]
    if isinstance(found, OSError):
        raise found
    return found


def listed_names(folder: str | os.PathLike[str]) -> frozenset[str]:
    """The names in ``folder`` (none when it cannot be listed), built once per folder inside
    :func:`shared_listings`."""
    key = os.fspath(folder)
    if _LISTINGS is not None and key in _LISTINGS.names:
        return _LISTINGS.names[key]
    try:
        names = frozenset(e.name for e in listdir(key))
    except OSError:
        names = frozenset()
    if _LISTINGS is not None:
        _LISTINGS.names[key] = names
    return names


def note_read(path: str | os.PathLike[str]) -> None:
    """Discovery looked inside ``path`` (a zip's directory, an ``args.yml``): its result depends on it."""
    if _LISTINGS is not None:
        _LISTINGS.files.add(os.fspath(path))


#: The prefix of TensorBoard's event files (``events.out.tfevents.{time}.{host}...``).
EVENTS_PREFIX = "events.out.tfevents."


def run_files(folder: Path, entries: list[os.DirEntry[str]] | None = None) -> tuple[Path | None, Path | None]:
    """``(events file, eval.json)`` of a run folder, from its listing (``entries``, else :func:`listdir`'s; none
    when it cannot be listed): the last TensorBoard events file by name (the newest: a resumed training writes
    another) and the eval.json ``zoo eval`` wrote there."""
    if entries is None:
        try:
            entries = listdir(folder)
        except OSError:
            entries = []
    events = [e.name for e in entries if e.name.startswith(EVENTS_PREFIX) and not is_folder(e)]
    evaluated = any(e.name == "eval.json" for e in entries)
    return (folder / max(events) if events else None), (folder / "eval.json" if evaluated else None)


def is_folder(entry: os.DirEntry[str]) -> bool:
    """``entry.is_dir()``, False for a symlink that loops (``DirEntry`` raises there).

    Discovery takes every non-folder with a model's name as the model: a dangling or looping link
    then fails inspection with its real reason instead of reading as "no model in the run dir".
    """
    try:
        return entry.is_dir()
    except OSError:
        return False


def scan_tree(root: Path) -> Iterator[tuple[Path, list[os.DirEntry[str]], list[Path]]]:
    """Depth-first ``(folder, entries, subdirs)`` in name order, from directory listings only.

    Like ``os.walk(topdown=True)``: a caller that recognises a run in ``folder`` clears ``subdirs``
    so that its insides are not searched again. Hidden folders and ``videos/`` are skipped. Sorted by
    name strings (comparing ``Path`` objects costs ten times more on a tree of 10,000 runs).
    A symlinked folder is followed once when it leads out of ``root``; one leading back inside (a
    loop, or a second name for a run the walk finds anyway) is skipped.
    """
    followed: set[str] = set()
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = listdir(folder)
        except OSError:
            continue
        subdirs = list(_subdirs(root, folder, entries, followed))
        yield folder, entries, subdirs
        stack.extend(reversed(subdirs))


def _subdirs(root: Path, folder: Path, entries: list[os.DirEntry[str]], followed: set[str]) -> list[Path]:
    """The folders :func:`scan_tree` descends into from ``folder``, in name order; worked out once per
    walk root inside :func:`shared_listings` (every adapter walks the same tree)."""
    key = (os.fspath(root), os.fspath(folder))
    if _LISTINGS is not None and key in _LISTINGS.subdirs:
        return _LISTINGS.subdirs[key]
    names = sorted(e.name for e in entries if not e.name.startswith(".") and e.name != "videos")
    by_name = {e.name: e for e in entries}
    subdirs = [folder / name for name in names if _descend(by_name[name], root, followed)]
    if _LISTINGS is not None:
        _LISTINGS.subdirs[key] = subdirs
    return subdirs


def _descend(entry: os.DirEntry[str], root: Path, followed: set[str]) -> bool:
    """Is ``entry`` a folder to walk into? Plain folders are; symlinks only to a new place outside ``root``."""
    if not entry.is_symlink():
        return entry.is_dir(follow_symlinks=False)
    target = os.path.realpath(entry.path)
    inside = os.path.realpath(root)
    if not os.path.isdir(target) or target in followed or os.path.commonpath([target, inside]) == inside:
        return False
    followed.add(target)
    return True
