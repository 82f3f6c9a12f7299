"""Pickle opcode scanning and a metadata-only restricted unpickler.

``scan_globals`` walks the opcode stream (``pickletools.genops``) and lists
every global a pickle would import, including ``STACK_GLOBAL`` references whose
names come from earlier (possibly memoized) string pushes. Nothing is executed.

``read_torch_pickle`` then unpickles a torch ``data.pkl`` with an allowlist
that maps tensor-rebuild calls to :class:`TensorInfo` records, so keys, shapes
and dtypes are known without torch and without running any code.
"""

from __future__ import annotations

import io
import pickle
import pickletools
from collections import OrderedDict
from dataclasses import dataclass

#: Globals that can run code or touch the system when a pickle is loaded.
DANGEROUS_MODULES = {
    "os", "posix", "nt", "subprocess", "sys", "shutil", "socket", "runpy", "importlib", "pty",
    "webbrowser", "ctypes", "multiprocessing", "code", "commands", "pickle", "_pickle", "marshal",
    "types", "operator", "functools", "asyncio", "requests", "urllib", "http", "pip",
}  # fmt: skip
DANGEROUS_BUILTINS = {
    "eval", "exec", "compile", "open", "getattr", "setattr", "delattr", "__import__", "globals",
    "locals", "vars", "input", "breakpoint", "memoryview", "apply", "execfile",
}  # fmt: skip

#: What torch.load(weights_only=True) accepts for a state dict of plain tensors.
_DTYPES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8", "BoolStorage": "bool",
}  # fmt: skip
ITEMSIZE = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4,
            "int16": 2, "int8": 1, "uint8": 1, "bool": 1}  # fmt: skip
_INT_OPS = {"INT", "LONG", "LONG1", "LONG4", "BININT", "BININT1", "BININT2"}
_STRING_OPS = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "STRING", "BINSTRING",
               "SHORT_BINSTRING"}  # fmt: skip


class PickleTruncated(Exception):
    """The opcode stream ended before STOP: the file is cut short."""


def is_dangerous(module: str, name: str) -> bool:
    root = module.split(".")[0]
    if root in DANGEROUS_MODULES:
        return True
    return root in {"builtins", "__builtin__"} and name in DANGEROUS_BUILTINS


@dataclass
class PickleScan:
    """What one pickle in a byte stream references, and where it ends."""

    globals: list[tuple[str, str]]
    end: int  # offset just past the STOP opcode
    first_int: int | None  # the first integer pushed (torch's legacy magic number)


def scan_pickle(data: bytes, start: int = 0) -> PickleScan:
    """Walk one pickle's opcodes from ``start``; list every global it would import. Nothing runs."""
    found: list[tuple[str, str]] = []
    memo: dict[int, object] = {}
    recent: list[object] = []  # values pushed by string / memo-get ops, newest last
    first_int = None
    stream = io.BytesIO(data)
    stream.seek(start)
    try:
        for opcode, arg, pos in pickletools.genops(stream):
            name = opcode.name
            if name in _STRING_OPS:
                recent.append(arg)
            elif name in _INT_OPS and first_int is None:
                first_int = int(arg)
            elif name in ("BINGET", "LONG_BINGET", "GET"):
                recent.append(memo.get(int(arg)))
            elif name in ("BINPUT", "LONG_BINPUT", "PUT"):
                memo[int(arg)] = recent[-1] if recent else None
            elif name == "MEMOIZE":
                memo[len(memo)] = recent[-1] if recent else None
            elif name in ("GLOBAL", "INST"):
                module, _, attr = str(arg).partition(" ")
                found.append((module, attr))
            elif name == "STACK_GLOBAL":
                if len(recent) >= 2 and all(isinstance(v, str) for v in recent[-2:]):
                    found.append((str(recent[-2]), str(recent[-1])))
                else:
                    found.append(("<unknown>", "<stack_global>"))
            elif name == "STOP":
                return PickleScan(found, pos + 1, first_int)
    except ValueError as exc:
        raise PickleTruncated(str(exc)) from None
    raise PickleTruncated("no STOP opcode")


def scan_globals(data: bytes) -> list[tuple[str, str]]:
    """Every ``(module, name)`` the (first) pickle in ``data`` would import, in order."""
    return scan_pickle(data).globals


@dataclass(frozen=True)
class TensorInfo:
    """A tensor as described by a checkpoint, never materialised."""

    shape: tuple[int, ...]
    dtype: str
    storage_key: str
    storage_numel: int

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True)
class _Storage:
    dtype: str
    key: str
    numel: int


def _rebuild_tensor(storage, _offset, size, _stride, *_rest):
    return TensorInfo(tuple(int(s) for s in size), storage.dtype, storage.key, storage.numel)


def _rebuild_parameter(data, *_rest):
    return data


class _DtypeMarker(str):
    """Stands for a ``torch.*Storage`` class (or a dtype) in a persistent id."""


class DisallowedGlobal(Exception):
    """The pickle references a global outside the tensor allowlist."""

    def __init__(self, module: str, name: str):
        super().__init__(f"{module}.{name}")
        self.module, self.name = module, name


class _MetadataUnpickler(pickle.Unpickler):
    """Builds containers and :class:`TensorInfo` records; refuses every other global."""

    _ALLOWED = {
        ("collections", "OrderedDict"): OrderedDict,
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    }

    def find_class(self, module, name):
        if (module, name) in self._ALLOWED:
            return self._ALLOWED[(module, name)]
        if module == "torch" and name in _DTYPES:
            return _DtypeMarker(_DTYPES[name])
        if module == "torch" and name in ITEMSIZE:
            return _DtypeMarker(name)
        raise DisallowedGlobal(module, name)

    def persistent_load(self, pid):
        # ('storage', storage_type, key, location, numel)
        if isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage":
            dtype = pid[1] if isinstance(pid[1], str) else "unknown"
            return _Storage(str(dtype), str(pid[2]), int(pid[4]))
        raise pickle.UnpicklingError(f"unsupported persistent id {pid!r}")


def read_torch_pickle(data: bytes) -> object:
    """Unpickle a torch ``data.pkl`` into plain containers and :class:`TensorInfo`."""
    return _MetadataUnpickler(io.BytesIO(data)).load()
