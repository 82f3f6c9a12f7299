"""Static verification of a torch-saved file: what it holds, whether it is safe, whether it will load.

``inspect_torch_file`` never imports torch and never runs a pickle. For the zip format that
``torch.save`` writes it checks the archive the way torch's reader does (one folder prefix, a
version record, no shifted offsets, no duplicate or TorchScript entries, only methods torch
reads), verifies every entry's CRC-32 (torch never does: a flipped byte would load silently),
and runs ``data.pkl`` through :mod:`zoo.artifacts.weights_only`, the static twin of torch's
weights-only unpickler, checking every tensor against its storage record. Every read is bounded
(:mod:`zoo.artifacts.limits`).

The verdict on what a pickle names comes from :mod:`zoo.artifacts.pickles`: a global outside
:data:`ALLOWED` is an error, a known-dangerous one "unsafe". When every global is allowed but the
twin does not model how it is used (numpy values, sparse or quantized tensors, torch's legacy
format), ``confirm`` says so and torch's own loader decides (:func:`confirm_loads`).

``load_checkpoint`` is the one loader every adapter uses: this verification first, then
``torch.load(weights_only=True)`` (numpy's scalar, dtype and array reconstructors allowlisted).
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from zoo.artifacts import finite, limits, weights_only
from zoo.artifacts.pickles import UNSAFE_HINT, classify, scan_pickles
from zoo.artifacts.zipcheck import end_records_problem
from zoo.errors import BrokenFile, RefusedError, ZooError

if TYPE_CHECKING:
    import numpy as np

_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_PICKLE_START = (b"\x80", b"(", b"}", b"]", b"c", b"K", b"J", b"\x8a")
_VERSION = re.compile(rb"\s*\+?(\d+)")

#: numpy values torch.save writes (arrays, scalars, dtypes; numpy 2 and numpy 1 spellings): zoo's loader
#: allowlists them for torch's weights-only unpickler, whose defaults refuse them.
NUMPY_GLOBALS = frozenset(
    {
        f"{core}.{name}"
        for core in ("numpy._core.multiarray", "numpy.core.multiarray")
        for name in ("scalar", "_reconstruct")
    }
    | {"numpy.dtype", "numpy.ndarray"}
)
#: Further globals on torch's default weights-only allowlist that the static twin does not model.
TORCH_UNMODELLED = frozenset(
    {
        f"torch._utils._rebuild_{k}"
        for k in (
            "sparse_tensor",
            "qtensor",
            "nested_tensor",
            "meta_tensor_no_storage",
            "wrapper_subclass",
            "device_tensor_from_numpy",
            "device_tensor_from_cpu_tensor",
        )
    }
    | {"torch.serialization._get_layout", "collections.Counter"}
    | {
        f"torch.{q}"
        for q in (
            "per_tensor_affine",
            "per_channel_affine",
            "per_tensor_symmetric",
            "per_channel_symmetric",
            "per_channel_affine_float_qparams",
            "QInt8Storage",
            "QUInt8Storage",
            "QInt32Storage",
            "QUInt4x2Storage",
            "QUInt2x4Storage",
            "qint8",
            "quint8",
            "qint32",
            "quint4x2",
            "quint2x4",
        )
    }
)
#: What zoo says about a model file it cannot open (permissions, a symlink that loops or points nowhere).
UNREADABLE_HINT = "check the file's permissions, or where its symlink points"
#: What zoo says about a file naming a global outside :data:`ALLOWED` (never "pass --trust-pickle").
UNKNOWN_HINT = "zoo loads weights only: re-save them with torch.save(model.state_dict()); see docs/check.md"
#: Everything a torch checkpoint may name and still be loaded by zoo: see docs/check.md.
ALLOWED = weights_only.MODELLED | NUMPY_GLOBALS | TORCH_UNMODELLED


@dataclass
class TorchFileInfo:
    """What a model file is, without loading it."""

    path: Path
    size: int
    kind: str  # torch-zip | torch-legacy | pickle | empty | not-torch | truncated | missing
    globals: list[str] = field(default_factory=list)
    dangerous: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # outside ALLOWED: zoo cannot check them
    content: object = None  # decoded structure with TensorInfo leaves (torch-zip, verified statically)
    problem: str | None = None  # why the loader would fail
    confirm: str | None = None  # why only torch's loader can tell (every global allowed, use not modelled)
    notes: list[str] = field(default_factory=list)
    nonfinite: list[finite.NonFinite] = field(default_factory=list)  # weights holding NaN or Inf

    @property
    def is_safe(self) -> bool:
        return not (self.dangerous or self.unknown)

    @property
    def decoded(self) -> bool:
        """``content`` holds the file's structure (a pickled None is None: this says whether it was read)."""
        return (
            self.is_safe
            and not self.problem
            and self.kind not in ("empty", "not-torch", "truncated", "missing", "unreadable")
        )

    @property
    def verified(self) -> bool:
        """The static verification is conclusive: ``torch.load(weights_only=True)`` will succeed."""
        return self.kind == "torch-zip" and self.is_safe and not (self.problem or self.confirm)


# ---------------------------------------------------------------------------------------------- zip
class _Broken(Exception):
    """The archive breaks one of torch's reader rules (or zoo's bounds); the message is the finding."""


def _records(zf: zipfile.ZipFile) -> tuple[str, dict[str, zipfile.ZipInfo]]:
    """The archive's folder prefix and entries by name, after torch's container rules."""
    infos = zf.infolist()
    if not infos:
        raise _Broken("zip archive holds no files")
    if len(infos) > limits.MAX_ENTRIES:
        raise _Broken(f"zip archive holds {len(infos)} entries, over zoo's bound of {limits.MAX_ENTRIES}")
    if min(i.header_offset for i in infos) != 0:
        raise _Broken("bytes before the archive: torch's reader does not find its entries")
    prefix, slash, _ = infos[0].filename.partition("/")
    if not slash:
        raise _Broken(f"first entry {infos[0].filename!r} is not in a folder, as torch.save writes")
    seen: set[str] = set()
    for info in infos:
        if not info.filename.startswith(prefix + "/"):
            raise _Broken(f"entry {info.filename!r} is outside the archive folder {prefix}/")
        if info.filename.casefold() in seen:
            raise _Broken(f"entry {info.filename!r} appears twice (which copy torch reads is undefined)")
        seen.add(info.filename.casefold())
        if info.flag_bits & 0x61:  # encrypted, patched data, strong encryption: miniz reads none of them
            raise _Broken(f"entry {info.filename!r} is encrypted or patched data, which torch cannot read")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise _Broken(
                f"entry {info.filename!r} uses compression method {info.compress_type}, which torch cannot read"
            )
    records = {i.filename[len(prefix) + 1 :]: i for i in infos}
    if "constants.pkl" in records:
        raise _Broken("a TorchScript archive (constants.pkl): torch.load refuses it, torch.jit.load runs it")
    if "data.pkl" not in records:
        raise _Broken("zip archive without data.pkl (not a torch file)")
    return prefix, records


def _entry(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int, raw: memoryview | None, keep: bool = True
) -> bytes:
    """An entry's bytes, CRC-checked; bounded before anything is inflated (``b""`` unless ``keep``).

    With the archive in memory (``raw``), a stored entry (what torch writes) is sliced out and checked
    with ``zlib.crc32`` directly: the same check ``zipfile`` makes, without its per-entry file objects,
    which dominate ``zoo check`` on many small checkpoints. Anything unusual takes ``zipfile``'s path.
    """
    fast = _stored_slice(raw, info) if raw is not None else None
    if fast is None:
        try:
            return limits.read_entry(zf, info, cap, keep)
        except limits.EntryProblem as exc:
            raise _Broken(str(exc)) from None
    problem = limits.entry_problem(info.filename, info.file_size, info.compress_size, cap)
    if problem:
        raise _Broken(problem)
    if info.CRC is not None and zlib.crc32(fast) != info.CRC:
        raise _Broken(f"entry {info.filename} is corrupted (CRC-32 mismatch)")
    return bytes(fast) if keep else b""


def _stored_slice(raw: memoryview, info: zipfile.ZipInfo) -> memoryview | None:
    """A stored entry's bytes read off its local header (a view: no copy), or None when the header is
    not the plain case."""
    at = info.header_offset
    if info.compress_type != zipfile.ZIP_STORED or raw[at : at + 4].tobytes() != b"PK\x03\x04":
        return None
    name_len, extra_len = struct.unpack_from("<HH", raw, at + 26)
    encoding = "utf-8" if info.flag_bits & 0x800 else "cp437"
    if raw[at + 30 : at + 30 + name_len] != info.orig_filename.encode(encoding, "replace"):
        return None
    start = at + 30 + name_len + extra_len
    data = raw[start : start + info.compress_size]
    return data if len(data) == info.compress_size == info.file_size else None


def _metadata_problem(
    zf: zipfile.ZipFile, records: dict[str, zipfile.ZipInfo], raw: memoryview | None
) -> str | None:
    """The version, byteorder, alignment and serialization-id records, as torch's reader parses them."""
    version = records.get(".data/version") or records.get("version")
    if version is None:
        return "no version record (torch's reader needs one)"

    def text(info: zipfile.ZipInfo) -> bytes:
        return _entry(zf, info, 4096, raw)

    match = _VERSION.match(text(version))
    if not match or not 1 <= int(match[1]) <= 10:
        return f"version record {text(version)[:20]!r} is not a file format version torch reads (1-10)"
    if "byteorder" in records and text(records["byteorder"]) not in (b"little", b"big"):
        return "byteorder record is neither 'little' nor 'big'"
    if ".storage_alignment" in records:
        try:
            int(text(records[".storage_alignment"]))
        except ValueError:
            return ".storage_alignment record is not an integer"
    if ".data/serialization_id" in records:
        try:
            text(records[".data/serialization_id"]).decode("utf-8")
        except UnicodeDecodeError:
            return ".data/serialization_id record is not UTF-8"
    return None


def _inspect_zip(info: TorchFileInfo, source: IO[bytes], raw: memoryview | None = None) -> None:
    """Verify a torch zip read from ``source`` (a seekable binary file of ``info.size`` bytes; ``raw``, its
    bytes, when the whole file is in memory)."""
    info.kind = "torch-zip"
    try:
        problem = end_records_problem(source, info.size)
        if problem:
            info.kind = "truncated" if problem.startswith("zip archive is cut short") else info.kind
            info.problem = problem
            return
        zf = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError, struct.error) as exc:
        info.problem = f"zip archive is corrupt ({str(exc)[:80] or type(exc).__name__})"
        return
    with zf:
        try:
            _verify_zip(info, zf, raw)
        except _Broken as exc:
            info.problem = str(exc)


def _verify_zip(info: TorchFileInfo, zf: zipfile.ZipFile, raw: memoryview | None) -> None:
    _prefix, records = _records(zf)
    if all(i.CRC == 0 for i in records.values() if i.file_size):
        info.notes.append(
            "the archive records no CRC-32 checksums (saved with set_crc32_options(False)): "
            "corruption cannot be detected"
        )
        for record in records.values():
            record.CRC = None  # type: ignore[assignment]  # zipfile then skips the check (typeshed: CRC is an int)
    problem = _metadata_problem(zf, records, raw)
    if problem:
        raise _Broken(problem)
    data = _entry(zf, records["data.pkl"], limits.MAX_PICKLE_BYTES, raw)

    def storage(dtype: str, key: str, numel: int) -> weights_only._Storage:
        record = records.get(f"data/{key}")
        if record is None:
            raise weights_only.NotLoadable(f"storage {key} is missing from the archive")
        need = numel * weights_only.ITEMSIZE[dtype]
        if record.file_size != need:
            raise weights_only.NotLoadable(
                f"storage {key} holds {record.file_size} bytes, its {numel} {dtype} elements need {need}"
            )
        return weights_only.make_storage(dtype, key, need)

    try:
        info.content, info.globals = _twin(data, records, storage)
    except (weights_only.NotLoadable, weights_only.NotModelled) as exc:
        _judge_pickles(info, data, 1, exc)
        if info.problem:
            return  # a file refused for its globals still has its CRCs checked: --trust-pickle loads it
    version = ".data/version" if ".data/version" in records else "version"
    checked = {"data.pkl", version, "byteorder", ".storage_alignment", ".data/serialization_id"}  # read above
    views = _float_tensors(info.content) if info.decoded else {}
    big = "byteorder" in records and _entry(zf, records["byteorder"], 4096, raw) == b"big"
    for name, record in records.items():
        if name not in checked:
            wanted = views.get(name.removeprefix("data/")) if name.startswith("data/") else None
            data = _entry(zf, record, limits.MAX_ENTRY_BYTES, raw, keep=bool(wanted))
            if wanted:
                info.nonfinite += _nonfinite(data, wanted, big)


#: The dtypes whose values can be NaN or Inf, as numpy reads them (bfloat16 by its bits).
_CHECKED = {"float16", "float32", "float64", "complex64", "complex128", "bfloat16"}


def _float_tensors(content: object) -> dict[str, list[tuple[str, weights_only.TensorInfo]]]:
    """Floating-point tensors with values, by storage key, with their names (optimizer states left out);
    remembered per decoded structure, which :data:`_TWIN_MEMO` shares between identical ``data.pkl`` files."""
    remembered = _FLOAT_MEMO.get(id(content))
    if remembered is not None and remembered[0] is content:
        return remembered[1]
    found: dict[str, list[tuple[str, weights_only.TensorInfo]]] = {}
    for name, leaf in finite.leaves(content):
        if isinstance(leaf, weights_only.TensorInfo) and leaf.dtype in _CHECKED and leaf.numel:
            found.setdefault(leaf.storage_key, []).append((name, leaf))
    if len(_FLOAT_MEMO) > 4096:
        _FLOAT_MEMO.clear()
    _FLOAT_MEMO[id(content)] = (content, found)
    return found


#: :func:`_float_tensors` by ``id(content)``, the content kept alive beside its result (so an id is never reused).
_FLOAT_MEMO: dict[int, tuple[object, dict[str, list[tuple[str, weights_only.TensorInfo]]]]] = {}


def _nonfinite(
    data: bytes, tensors: list[tuple[str, weights_only.TensorInfo]], big: bool
) -> list[finite.NonFinite]:
    """The tensors viewing one storage's bytes that hold NaN or Inf (each view's bounds were verified).

    The whole storage is looked at once first: when it is finite (nearly always), so are its views."""
    import numpy as np

    def values(name: str) -> np.ndarray:
        dtype = _NUMPY_DTYPES.get((name, big))
        if dtype is None:
            order: Literal[">", "<"] = ">" if big else "<"
            dtype = np.dtype(f"{order}u2") if name == "bfloat16" else np.dtype(name).newbyteorder(order)
            _NUMPY_DTYPES[(name, big)] = dtype
        return np.frombuffer(data, dtype, count=len(data) // dtype.itemsize)

    def bad(name: str, view: np.ndarray) -> int:
        return finite.count_bfloat16(view) if name == "bfloat16" else finite.count(view)

    kinds = {tensor.dtype for _, tensor in tensors}
    if len(kinds) == 1 and not bad(next(iter(kinds)), values(next(iter(kinds)))):
        return []
    found = []
    for name, tensor in tensors:
        whole = values(tensor.dtype)
        view = np.lib.stride_tricks.as_strided(
            whole[tensor.offset :], tensor.shape, tuple(s * whole.itemsize for s in tensor.stride)
        )
        count = bad(tensor.dtype, view)
        if count:
            found.append(finite.NonFinite(name, count, tensor.numel))
    return found


#: numpy dtypes by (torch dtype name, big-endian), made once.
_NUMPY_DTYPES: dict[tuple[str, bool], np.dtype[Any]] = {}


#: Twin results by ``data.pkl`` content and storage sizes. The runs of one experiment save byte-identical
#: ``data.pkl`` files (same module, same shapes), so a tree of hundreds of them is interpreted once.
_TWIN_MEMO: dict[tuple[bytes, tuple[tuple[str, int], ...]], tuple[object, list[str]] | Exception] = {}


def _twin(
    data: bytes,
    records: dict[str, zipfile.ZipInfo],
    storage: Callable[[str, str, int], weights_only._Storage],
) -> tuple[object, list[str]]:
    """``weights_only.load`` memoized by sha256 (a cryptographic key: a crafted pickle cannot collide);
    the decoded structure is shared between files, and nothing downstream changes it."""
    import hashlib

    sizes = tuple(sorted((n, r.file_size) for n, r in records.items() if n.startswith("data/")))
    key = (hashlib.sha256(data).digest(), sizes)
    if key not in _TWIN_MEMO:
        if len(_TWIN_MEMO) > 4096:
            _TWIN_MEMO.clear()
        try:
            _TWIN_MEMO[key] = weights_only.load(data, storage)
        except (weights_only.NotLoadable, weights_only.NotModelled) as exc:
            _TWIN_MEMO[key] = exc
    found = _TWIN_MEMO[key]
    if isinstance(found, Exception):
        raise found
    return found


def _judge_pickles(info: TorchFileInfo, data: bytes, count: int, twin: Exception | None) -> None:
    """The verdict when the twin could not decide: what do the pickles really name?"""
    scan = scan_pickles(data, count)
    info.globals = scan.names()
    verdict = classify(scan.globals, ALLOWED)
    info.dangerous, info.unknown = verdict.dangerous, verdict.unknown
    if not verdict.ok:
        return
    if not scan.complete:
        info.problem = f"the pickle cannot be followed to its end ({scan.error})"
    elif isinstance(twin, weights_only.NotLoadable):
        info.problem = str(twin)
    else:
        info.confirm = str(twin) if twin else f"{info.kind} format"


# ---------------------------------------------------------------------------------------------- pickle streams
def _inspect_pickle_stream(info: TorchFileInfo, head: bytes) -> None:
    """torch's legacy format (magic number, protocol, system info, object, storage keys; then raw storages),
    or a plain pickle. Only the pickles are read (``head``, bounded); the raw storages never are."""
    first = scan_pickles(head, 1)
    legacy = first.complete and first.globals == [] and head.startswith(b"\x80\x02\x8a\x0a")
    legacy = legacy and int.from_bytes(head[4:14], "little") == _LEGACY_MAGIC
    info.kind = "torch-legacy" if legacy else "pickle"
    _judge_pickles(info, head, 5 if legacy else 1, None)
    if info.kind == "pickle" and info.confirm:
        info.confirm, info.problem = None, "a plain pickle, not a torch file (torch.load cannot read it)"


# ---------------------------------------------------------------------------------------------- entry points
def inspect_torch_file(path: str | Path) -> TorchFileInfo:
    """Describe a model file statically; every outcome is a value, never an exception."""
    path = Path(path)
    head, size, kind, problem = limits.read_model_file(path, limits.MAX_PICKLE_BYTES)
    if kind is not None:
        return TorchFileInfo(path, 0, kind, problem=problem)
    info = TorchFileInfo(path, size, "not-torch")
    if not head:
        info.kind, info.problem = "empty", "file is empty"
    elif head[:4] == b"PK\x03\x04" and len(head) == size:
        _inspect_zip(info, io.BytesIO(head), memoryview(head))
    elif head[:4] == b"PK\x03\x04":
        try:
            with path.open("rb") as fh:
                _inspect_zip(info, fh)
        except OSError as exc:
            info.problem = f"cannot read: {exc.strerror or exc}"
    elif head[:1] in _PICKLE_START:
        if len(head) < size:
            with path.open("rb") as fh:
                head = fh.read(limits.MAX_PICKLE_BYTES)
        _inspect_pickle_stream(info, head)
    else:
        info.problem = "not a torch file (neither a torch zip archive nor a pickle)"
    return info


def inspect_torch_bytes(data: bytes, label: Path) -> TorchFileInfo:
    """The same verification for a torch file held in memory (SB3's ``policy.pth`` inside its zip)."""
    info = TorchFileInfo(label, len(data), "not-torch")
    if not data:
        info.kind, info.problem = "empty", "file is empty"
    elif data[:4] == b"PK\x03\x04":
        _inspect_zip(info, io.BytesIO(data), memoryview(data))
    elif data[:1] in _PICKLE_START:
        _inspect_pickle_stream(info, data[: limits.MAX_PICKLE_BYTES])
    else:
        info.problem = "not a torch file (neither a torch zip archive nor a pickle)"
    return info


def refuse_unsafe(info: TorchFileInfo, trust_pickle: bool) -> None:
    """Raise for a broken file, or one naming globals zoo cannot check, unless the user trusts it.

    Every adapter calls this before ``torch.load``: the static verification decides, and the loader never
    sees a file it refused.
    """
    if info.kind == "unreadable":
        raise BrokenFile(f"cannot read {info.path}: {info.problem}", hint=UNREADABLE_HINT)
    broken = info.problem and (info.is_safe or trust_pickle)  # else the refusal below is what matters most
    if info.kind in ("missing", "empty", "not-torch", "truncated") or broken:
        raise BrokenFile(f"{info.path}: {info.problem or info.kind}")
    if trust_pickle:
        return
    if info.dangerous:
        raise RefusedError(
            f"{info.path}: unsafe pickle, loading it would call {', '.join(info.dangerous)}", hint=UNSAFE_HINT
        )
    if info.unknown:
        raise RefusedError(
            f"{info.path}: holds {', '.join(info.unknown)}, which zoo cannot check without running it",
            hint=UNKNOWN_HINT,
        )


def _numpy_safe_globals() -> list[object]:
    """The objects behind :data:`NUMPY_GLOBALS` (and each dtype's class, which torch BUILDs), for torch."""
    import numpy as np
    from numpy._core import multiarray

    dtypes = [getattr(np.dtypes, n) for n in dir(np.dtypes) if n.endswith("DType")]
    return [
        multiarray.scalar,
        multiarray._reconstruct,
        np.dtype,
        np.ndarray,
        *dtypes,
        (multiarray.scalar, "numpy.core.multiarray.scalar"),
        (multiarray._reconstruct, "numpy.core.multiarray._reconstruct"),
    ]


def torch_load(source: str | Path | IO[bytes], *, weights_only: bool = True) -> Any:
    """``torch.load`` on the CPU with numpy's reconstructors allowlisted; one-line errors."""
    import pickle

    import torch

    try:
        with torch.serialization.safe_globals(_numpy_safe_globals()):
            return torch.load(source, map_location="cpu", weights_only=weights_only)
    except (
        pickle.UnpicklingError,
        RuntimeError,
        EOFError,
        ValueError,
        OSError,
        TypeError,
        KeyError,
        IndexError,
        AttributeError,
        AssertionError,
        UnicodeDecodeError,
        MemoryError,
    ) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ZooError(f"torch.load failed: {first[:300]}", hint="re-save or re-download the file") from None


def confirm_with_torch(info: TorchFileInfo) -> str | None:
    """For a file the static check could not decide: torch's loader's verdict (None when it loads).

    What torch loaded becomes ``info.content``, so that layouts and shapes are checked on it as usual.
    """
    try:
        info.content = torch_load(info.path)
    except ZooError as exc:
        return exc.message
    info.nonfinite = finite.in_arrays(info.content)
    return None


def confirm_bytes(data: bytes) -> str | None:
    """:func:`confirm_with_torch` for a torch file held in memory (a member of SB3's zip): torch's verdict."""
    try:
        torch_load(io.BytesIO(data))
    except ZooError as exc:
        return exc.message
    return None


def load_checkpoint(path: Path, info: TorchFileInfo, trust_pickle: bool = False) -> Any:
    """The verified file through ``torch.load(weights_only=True)``; full unpickling only when trusted and needed."""
    refuse_unsafe(info, trust_pickle)
    try:
        return torch_load(path, weights_only=info.is_safe or not trust_pickle)
    except ZooError as exc:
        raise ZooError(f"{path}: {exc.message}", exc.hint) from None
