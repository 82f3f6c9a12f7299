"""Tianshou's pickled objects read as data: the pickle machine runs, no class it names is imported or called.

Tianshou's high-level API saves the whole ``Algorithm`` object (``policy.pt``, ``torch.save`` of the object)
and its experiment config (``experiment.pkl``), and its examples pickle a ``RunningMeanStd`` (``obs_rms``):
every one names Tianshou's classes, so ``torch.load(weights_only=True)`` refuses them and a full unpickle would
import and run Tianshou (and whatever else the file names). This reader runs them on zoo's hardened pickle
machine (:class:`~zoo.artifacts.pickles.HardenedUnpickler`, the one the recording scan and the restricted
unpickler use) with ``find_class`` answering a :class:`Record` type for every allowed global: a plain class
that only keeps what the pickle hands it (constructor arguments, ``__setstate__``'s state, items). Nothing is
imported, no constructor, ``__setstate__`` or ``__reduce__`` of the file's classes runs. Tensors become
:class:`~zoo.artifacts.weights_only.TensorInfo` descriptions, checked against their storage records with
the weights-only twin's own rule, and are read from the archive as raw bytes only when asked for.

What the reader takes is bounded by an allowlist of *names* (:data:`WEIGHT_FILE_MODULES`): a global outside
it is refused before the machine goes on, a known-dangerous one (:func:`~zoo.artifacts.pickles.is_dangerous`)
always. ``getattr`` is the one builtin with effects Tianshou's files use (a nested class, a bound method):
here it only names a further :class:`Record` type, and is refused on anything that is not a record.
"""

from __future__ import annotations

import io
import math
import pickle
import zipfile
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from zoo.artifacts import limits, weights_only
from zoo.artifacts.pickles import UNSAFE_HINT, HardenedUnpickler, is_dangerous, normalized
from zoo.artifacts.weights_only import TensorInfo
from zoo.errors import BrokenFile, RefusedError

if TYPE_CHECKING:
    import numpy as np  # imported where arrays are made: the adapter is imported by commands that read none

#: Module prefixes whose globals a Tianshou weights file (``policy.pt``, ``policy.pth``, ``env_obs_rms.pkl``)
#: may name: Tianshou's own classes, the torch modules and optimizers they hold, gymnasium's spaces, numpy's
#: arrays and random state. Each becomes a :class:`Record`; none is imported.
WEIGHT_FILE_MODULES = (
    "tianshou.",
    "torch.nn.modules.",
    "torch.nn.parameter",
    "torch.optim.",
    "gymnasium.spaces.",
    "numpy",
)
#: Globals with a meaning the reader gives them (the rest of an allowed module's globals are records).
_TENSOR_REBUILDS = {
    "torch._utils._rebuild_tensor_v2",
    "torch._utils._rebuild_tensor",
    "torch._utils._rebuild_parameter",
}
_PLAIN = {
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "dict"): dict,
    ("builtins", "list"): list,
    ("builtins", "tuple"): tuple,
    ("collections", "OrderedDict"): OrderedDict,
    ("collections", "defaultdict"): defaultdict,
}
#: What a config pickle (``experiment.pkl``) may name besides :data:`WEIGHT_FILE_MODULES`: the user's own
#: env factory class is part of it, so any global that is not known to be dangerous is kept as a record.
ANY_SAFE_NAME = ("",)


class Record:
    """An object of a class the pickle names, as data: its class name, constructor arguments, state, items."""

    qualname: ClassVar[str] = ""

    def __new__(cls, *args: object, **kwargs: object) -> Record:
        inst = object.__new__(cls)
        object.__setattr__(inst, "args", args)
        object.__setattr__(inst, "state", None)
        object.__setattr__(inst, "items", {})
        object.__setattr__(inst, "listed", [])
        return inst

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def __setstate__(self, state: object) -> None:
        object.__setattr__(self, "state", state)

    def __setitem__(self, key: object, value: object) -> None:
        self.items[key] = value  # type: ignore[attr-defined]

    def append(self, value: object) -> None:
        self.listed.append(value)  # type: ignore[attr-defined]

    def extend(self, values: Iterable[object]) -> None:
        self.listed.extend(values)  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"<{self.qualname}>"

    def attrs(self) -> dict[str, Any]:
        """The instance's attributes: ``__setstate__``'s dict (a ``(dict, slots)`` pair merged), else {}."""
        state = self.state  # type: ignore[attr-defined]
        if isinstance(state, tuple) and len(state) == 2 and isinstance(state[0], dict | None):
            merged = dict(state[0] or {})
            merged.update(state[1] if isinstance(state[1], dict) else {})
            return merged
        return state if isinstance(state, dict) else {}

    def get(self, name: str, default: Any = None) -> Any:
        return self.attrs().get(name, default)


def is_record(value: object, qualname: str | None = None) -> bool:
    """Whether ``value`` is a record (of ``qualname``, or of a class whose name ends with ``.qualname``)."""
    if not isinstance(value, Record):
        return False
    return qualname is None or value.qualname == qualname or value.qualname.endswith("." + qualname)


def record_type(qualname: str) -> type[Record]:
    """A fresh :class:`Record` subclass standing for the global ``qualname``."""
    return type(qualname.rpartition(".")[2] or "Record", (Record,), {"qualname": qualname, "__slots__": ()})


def _getattr_of(types: dict[str, type[Record]]):
    def named(owner: object, name: object) -> type[Record]:
        """``getattr(owner, name)`` of a record (a nested class, a bound method): a further record type."""
        if not isinstance(name, str):
            raise pickle.UnpicklingError("getattr with a name that is not a string refused")
        if isinstance(owner, type) and issubclass(owner, Record) or isinstance(owner, Record):
            base = owner.qualname
        else:
            raise pickle.UnpicklingError(f"getattr on a {type(owner).__name__} refused (records only)")
        key = f"{base}.{name}"
        return types.setdefault(key, record_type(key))

    return named


class RefusedName(pickle.UnpicklingError):
    def __init__(self, qualname: str, dangerous: bool):
        super().__init__(qualname)
        self.qualname, self.dangerous = qualname, dangerous


class _Reader(HardenedUnpickler):
    """The hardened pickle machine with records for globals and storage descriptions for persistent ids."""

    def __init__(self, data: bytes, allowed: tuple[str, ...], storages: dict[str, int] | None):
        super().__init__(io.BytesIO(data), len(data))
        self._allowed, self._storages = allowed, storages
        self._types: dict[str, type[Record]] = {}
        self._seen: dict[str, weights_only._Storage] = {}
        self.names: list[str] = []

    def find_class(self, module: str, name: str) -> Any:
        module, name = normalized(module, name)
        qualname = f"{module}.{name}"
        if qualname not in self.names:
            self.names.append(qualname)
        if (module, name) in _PLAIN:
            return _PLAIN[(module, name)]
        if (module, name) == ("builtins", "getattr"):
            return _getattr_of(self._types)
        if (module, name) == ("_codecs", "encode"):
            return _latin1
        if qualname in _TENSOR_REBUILDS and self._storages is not None:
            return _rebuild_parameter if name == "_rebuild_parameter" else _rebuild_tensor
        if module == "torch" and name.endswith("Storage") and self._storages is not None:
            return self._types.setdefault(qualname, record_type(qualname))
        if is_dangerous(module, name) or not any(qualname.startswith(p) for p in self._allowed):
            raise RefusedName(qualname, is_dangerous(module, name))
        return self._types.setdefault(qualname, record_type(qualname))

    def persistent_load(self, pid: Any) -> Any:
        if self._storages is None:
            raise pickle.UnpicklingError("persistent ids are not allowed in this pickle")
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"persistent id {pid!r:.60} is not a torch storage")
        kind, key, _location, numel = pid[1:]
        dtype = weights_only.STORAGE_DTYPES.get(getattr(kind, "qualname", "").rpartition(".")[2])
        if dtype is None or type(numel) is not int:
            raise pickle.UnpicklingError(f"persistent id {pid!r:.60} is not a torch storage")
        key = str(key)
        if key not in self._seen:
            size = self._storages.get(key)
            if size is None or size != numel * weights_only.ITEMSIZE[dtype]:
                raise pickle.UnpicklingError(f"storage {key} does not match its record in the archive")
            self._seen[key] = weights_only.make_storage(dtype, key, size)
        return self._seen[key]


def _latin1(text: object, encoding: object = "latin1") -> bytes:
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError("_codecs.encode other than of a string to latin1 refused")
    return text.encode("latin1")


def _rebuild_tensor(
    storage: object, offset: object, size: object, stride: object, *rest: object
) -> TensorInfo:
    try:
        return weights_only._rebuild(storage, offset, size, stride, rest[0] if rest else False)
    except weights_only.NotLoadable as exc:
        raise pickle.UnpicklingError(str(exc)) from None


def _rebuild_parameter(data: object, requires_grad: object = False, *rest: object) -> TensorInfo:
    if not isinstance(data, TensorInfo):
        raise pickle.UnpicklingError("a parameter of something other than a tensor")
    return data


@dataclass
class Loaded:
    """A pickle read as data: the root object and the globals it named; ``storages`` back its tensors."""

    root: Any
    names: list[str]
    path: Path
    storages: dict[str, str] = field(default_factory=dict)  # storage key -> its entry in the torch zip
    big_endian: bool = False

    def array(self, info: TensorInfo) -> np.ndarray:
        """The tensor's values, copied out of its storage's bytes (offset, shape and strides as recorded). Only
        the storages of the tensors asked for are read: a policy file holds optimizer states too."""
        import numpy as np

        dtype = np.dtype(info.dtype if info.dtype != "bfloat16" else "uint16")
        try:
            with zipfile.ZipFile(self.path) as zf:
                entry = zf.getinfo(self.storages[info.storage_key])
                data = limits.read_entry(zf, entry, limits.MAX_ENTRY_BYTES)
        except (KeyError, zipfile.BadZipFile, OSError, limits.EntryProblem) as exc:
            raise BrokenFile(f"{self.path}: storage {info.storage_key} cannot be read ({exc})") from None
        raw = np.frombuffer(data, dtype.newbyteorder(">" if self.big_endian else "<"))
        strided = np.lib.stride_tricks.as_strided(
            raw[info.offset :], info.shape, tuple(s * dtype.itemsize for s in info.stride), writeable=False
        )
        return np.ascontiguousarray(strided).astype(dtype.newbyteorder("="))


def _refusal(exc: RefusedName, path: Path, what: str) -> RefusedError:
    if exc.dangerous:
        return RefusedError(f"{path}: unsafe pickle, loading it would call {exc.qualname}", hint=UNSAFE_HINT)
    return RefusedError(
        f"{path}: {what} names {exc.qualname}, which is not one of Tianshou's classes zoo reads as data",
        hint="zoo reads Tianshou's own files; see docs/frameworks/tianshou.md",
    )


def _run(data: bytes, path: Path, allowed: tuple[str, ...], storages: dict[str, int] | None, what: str):
    reader = _Reader(data, allowed, storages)
    try:
        root = reader.load()
    except RefusedName as exc:
        raise _refusal(exc, path, what) from None
    except RecursionError:
        raise BrokenFile(f"{path}: {what} is nested too deeply") from None
    except Exception as exc:  # noqa: BLE001 - a broken pickle is a finding, not a crash
        raise BrokenFile(f"{path}: {what} does not decode: {type(exc).__name__}: {str(exc)[:100]}") from None
    return root, reader.names


def read_pickle(path: Path, allowed: tuple[str, ...] = WEIGHT_FILE_MODULES) -> Loaded:
    """A plain pickle file (``experiment.pkl``, ``env_obs_rms.pkl``) read as data."""
    data = limits.read_pickle_file(path, path.name)
    root, names = _run(data, path, allowed, None, "the pickle")
    return Loaded(root, names, path)


def read_torch_object(path: Path) -> Loaded:
    """A ``torch.save`` zip of an object (``policy.pt``): ``data.pkl`` read as data, its storages named.
    The caller has verified the archive (:func:`~zoo.artifacts.torchfile.inspect_torch_file`: CRCs, bounds)."""
    try:
        with zipfile.ZipFile(path) as zf:
            records = {info.filename.partition("/")[2]: info for info in zf.infolist()}
            if "data.pkl" not in records:
                raise BrokenFile(f"{path}: zip archive without data.pkl (not a torch file)")
            data = limits.read_entry(zf, records["data.pkl"], limits.MAX_PICKLE_BYTES)
            keys = {name[5:]: info for name, info in records.items() if name.startswith("data/")}
            root, names = _run(
                data, path, WEIGHT_FILE_MODULES, {k: i.file_size for k, i in keys.items()}, "data.pkl"
            )
            big = "byteorder" in records and limits.read_entry(zf, records["byteorder"], 64) == b"big"
    except (zipfile.BadZipFile, OSError, limits.EntryProblem) as exc:
        raise BrokenFile(f"{path}: {exc}") from None
    return Loaded(root, names, path, {key: info.filename for key, info in keys.items()}, big)


#: numpy's dtype names a recorded array or scalar may have (numbers and bools; never objects).
_NUMERIC_KINDS = "biuf"
_RECONSTRUCT = ("numpy._core.multiarray._reconstruct", "numpy.core.multiarray._reconstruct")
_SCALAR = ("numpy._core.multiarray.scalar", "numpy.core.multiarray.scalar")


class Numpy:
    """numpy values a pickle recorded (``_reconstruct`` + state, ``scalar(dtype, bytes)``), rebuilt from their
    bytes; a record of any other form, or of an object dtype, is refused."""

    def __init__(self, path: Path):
        self.path = path

    def _bad(self, what: str) -> BrokenFile:
        return BrokenFile(f"{self.path}: {what} is not a numpy number array zoo reads")

    def dtype(self, record: object) -> np.dtype:
        import numpy as np

        if not is_record(record, "numpy.dtype") or not isinstance(record, Record):
            raise self._bad("a dtype")
        args, state = record.args, record.state  # type: ignore[attr-defined]
        if not args or not isinstance(args[0], str) or len(args[0]) > 8:
            raise self._bad("a dtype")
        try:
            dtype = np.dtype(args[0])
        except (TypeError, ValueError):
            raise self._bad(f"dtype {args[0]!r}") from None
        order = state[1] if isinstance(state, tuple) and len(state) > 1 else "="
        if dtype.kind not in _NUMERIC_KINDS or order not in ("<", ">", "|", "="):
            raise self._bad(f"dtype {args[0]!r}")
        if order == "<":
            return dtype.newbyteorder("<")
        return dtype.newbyteorder(">") if order == ">" else dtype

    def array(self, record: object) -> np.ndarray:
        import numpy as np

        if not isinstance(record, Record) or record.qualname not in _RECONSTRUCT:
            raise self._bad(f"a {short_name(record)}")
        state = record.state  # type: ignore[attr-defined]
        if not (isinstance(state, tuple) and len(state) == 5):
            raise self._bad("an array's state")
        _version, shape, dtype_record, fortran, raw = state
        dtype = self.dtype(dtype_record)
        if not (isinstance(shape, tuple) and all(type(d) is int and d >= 0 for d in shape)):
            raise self._bad("an array's shape")
        count = math.prod(shape)  # Python integers: a huge shape cannot wrap around to match the data
        if not isinstance(raw, bytes) or len(raw) != count * dtype.itemsize:
            raise self._bad("an array's data")
        values = np.frombuffer(raw, dtype).reshape(shape, order="F" if fortran else "C")
        return values.astype(dtype.newbyteorder("="))

    def number(self, value: object) -> float | int:
        import numpy as np

        if isinstance(value, bool | int | float):
            return value
        if not isinstance(value, Record) or value.qualname not in _SCALAR:
            raise self._bad(f"a {short_name(value)}")
        args = value.args  # type: ignore[attr-defined]
        if len(args) != 2 or not isinstance(args[1], bytes):
            raise self._bad("a scalar")
        dtype = self.dtype(args[0])
        if len(args[1]) != dtype.itemsize:
            raise self._bad("a scalar")
        return np.frombuffer(args[1], dtype)[0].item()


def short_name(value: object) -> str:
    return value.qualname if isinstance(value, Record) else type(value).__name__
