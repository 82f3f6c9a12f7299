"""Static inspection of a torch-saved file: what it holds, whether it is safe.

``inspect_torch_file`` never imports torch and never runs a pickle. It reads the
zip central directory, scans ``data.pkl`` for globals, decodes tensor
descriptions through the metadata unpickler, and checks that each storage
record in the archive is as large as its tensors claim (a cut-short file
fails here, not halfway through an eval).
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zoo.artifacts.pickles import (
    ITEMSIZE,
    DisallowedGlobal,
    PickleTruncated,
    TensorInfo,
    is_dangerous,
    read_torch_pickle,
    scan_globals,
    scan_pickle,
)
from zoo.errors import RefusedError, ZooError

_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_PICKLE_START = (b"\x80", b"(", b"}", b"]", b"c")


@dataclass
class TorchFileInfo:
    """What a model file is, without loading it."""

    path: Path
    size: int
    kind: str  # torch-zip | torch-legacy | pickle | empty | not-torch | truncated | missing
    globals: list[tuple[str, str]] = field(default_factory=list)
    dangerous: list[str] = field(default_factory=list)
    disallowed: list[str] = field(default_factory=list)
    content: object = None  # decoded structure with TensorInfo leaves (torch-zip, safe only)
    problem: str | None = None

    @property
    def is_safe(self) -> bool:
        return not self.dangerous

    @property
    def weights_only_ok(self) -> bool:
        """Static verdict: holds only what ``torch.load(weights_only=True)`` decodes."""
        return (
            self.kind == "torch-zip"
            and not self.dangerous
            and not self.disallowed
            and self.content is not None
        )


def _find_data_pkl(zf: zipfile.ZipFile) -> str | None:
    for name in zf.namelist():
        if name.endswith("data.pkl") and name.count("/") == 1:
            return name
    return None


def _storage_problems(zf: zipfile.ZipFile, prefix: str, content: object) -> str | None:
    sizes = {info.filename: info.file_size for info in zf.infolist()}
    for tensor in iter_tensors(content):
        entry = f"{prefix}data/{tensor.storage_key}"
        need = tensor.storage_numel * ITEMSIZE.get(tensor.dtype, 1)
        if entry not in sizes:
            return f"storage {tensor.storage_key} missing from the archive"
        if sizes[entry] < need:
            return f"storage {tensor.storage_key} holds {sizes[entry]} bytes, tensors need {need}"
    return None


def iter_tensors(obj: object):
    """Every :class:`TensorInfo` inside a decoded structure."""
    if isinstance(obj, TensorInfo):
        yield obj
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from iter_tensors(value)
    elif isinstance(obj, list | tuple):
        for value in obj:
            yield from iter_tensors(value)


def _classify_globals(info: TorchFileInfo, found: list[tuple[str, str]]) -> None:
    info.globals = found
    info.dangerous = sorted({f"{m}.{n}" for m, n in found if is_dangerous(m, n)})


def _inspect_zip(info: TorchFileInfo) -> None:
    """Only the central directory and ``data.pkl`` are read: tensor data never leaves the disk."""
    try:
        zf = zipfile.ZipFile(info.path)
    except zipfile.BadZipFile:
        info.kind, info.problem = "truncated", "zip archive is cut short (no central directory)"
        return
    with zf:
        pkl_name = _find_data_pkl(zf)
        if pkl_name is None:
            info.kind, info.problem = "not-torch", "zip archive without data.pkl (not a torch file)"
            return
        try:
            data = zf.read(pkl_name)
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            info.kind, info.problem = "truncated", f"cannot read {pkl_name}: {exc}"
            return
        info.kind = "torch-zip"
        try:
            _classify_globals(info, scan_globals(data))
        except PickleTruncated:
            info.kind, info.problem = "truncated", "data.pkl is cut short"
            return
        if info.dangerous:
            return
        try:
            info.content = read_torch_pickle(data)
        except DisallowedGlobal as exc:
            info.disallowed.append(f"{exc.module}.{exc.name}")
            return
        except Exception as exc:  # noqa: BLE001 - any decoding failure is a finding, not a crash
            info.problem = f"data.pkl does not decode: {exc}"
            return
        info.problem = _storage_problems(zf, pkl_name[: -len("data.pkl")], info.content)
        if info.problem:
            info.kind = "truncated"


def _inspect_pickle_stream(info: TorchFileInfo, raw: bytes) -> None:
    """A plain pickle, or torch's legacy format: five pickles (magic number first), then raw storages."""
    found: list[tuple[str, str]] = []
    offset, legacy = 0, False
    for index in range(5):
        try:
            scan = scan_pickle(raw, offset)
        except PickleTruncated:
            if index == 0:
                info.kind, info.problem = "truncated", "pickle stream is cut short"
            break
        found += scan.globals
        legacy = legacy or (index == 0 and scan.first_int == _LEGACY_MAGIC)
        offset = scan.end
        if not legacy or offset >= len(raw):
            break
    if info.kind != "truncated":
        info.kind = "torch-legacy" if legacy else "pickle"
    _classify_globals(info, found)


def inspect_torch_file(path: str | Path) -> TorchFileInfo:
    """Describe a model file statically; every outcome is a value, never an exception."""
    path = Path(path)
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            magic = fh.read(4)
    except FileNotFoundError:
        return TorchFileInfo(path, 0, "missing", problem="file not found")
    except OSError as exc:
        return TorchFileInfo(path, 0, "missing", problem=f"cannot read: {exc.strerror}")
    info = TorchFileInfo(path, size, "not-torch")
    if not magic:
        info.kind, info.problem = "empty", "file is empty"
    elif magic == b"PK\x03\x04":
        _inspect_zip(info)
    elif magic[:1] in _PICKLE_START:
        _inspect_pickle_stream(info, path.read_bytes())
    else:
        info.problem = "not a torch file (neither a torch zip archive nor a pickle)"
    return info


def refuse_unsafe(info: TorchFileInfo, trust_pickle: bool) -> None:
    """Raise for a broken file, or one that would run code or needs full unpickling, unless trusted.

    Every adapter calls this before ``torch.load``: the static scan decides, the loader never sees
    a file it refused.
    """
    if info.kind in ("missing", "empty", "not-torch", "truncated") or (info.problem and not info.disallowed):
        raise ZooError(f"{info.path}: {info.problem or info.kind}")
    if trust_pickle:
        return
    if info.dangerous:
        raise RefusedError(
            f"{info.path}: unsafe pickle, loading it would call {', '.join(info.dangerous)}",
            hint="do not load it; only if you trust its source, pass --trust-pickle",
        )
    if not info.weights_only_ok:
        what = ", ".join(info.disallowed) or f"{info.kind} format"
        raise RefusedError(
            f"{info.path}: holds objects torch's weights-only loader refuses ({what})",
            hint="only if you trust its source, pass --trust-pickle",
        )


def load_checkpoint(path: Path, info: TorchFileInfo, trust_pickle: bool = False) -> Any:
    """``torch.load`` with ``weights_only=True``; full unpickling only when trusted and needed."""
    import pickle

    import torch

    refuse_unsafe(info, trust_pickle)
    weights_only = info.weights_only_ok or not trust_pickle
    try:
        return torch.load(path, map_location="cpu", weights_only=weights_only)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ZooError(f"{path}: torch.load failed: {first}") from None
