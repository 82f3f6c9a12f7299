"""A static twin of ``torch.load(weights_only=True)``'s unpickler: same opcodes, globals and type rules.

torch (2.13, ``torch/_weights_only_unpickler.py``) unpickles a checkpoint's ``data.pkl`` with a small
interpreter of its own: 33 pickle opcodes (protocol 2; anything else is "Unsupported operand"), an
allowlist of globals, and type rules for what REDUCE, NEWOBJ, BUILD, APPEND(S) and SETITEM(S) may
act on. This module runs the same loop over the same bytes without importing torch; instead of
tensors it builds :class:`TensorInfo` descriptions, checking each one against its storage record the
way torch's ``_load`` and ``Tensor.set_`` do (record size, offset, sizes, strides).

It is deliberately narrower than torch in one way: of torch's 144 allowed globals it models the ones
``torch.save`` writes for tensors, parameters, state dicts and plain Python values
(:data:`MODELLED`). A file that uses another allowed global (a sparse or quantized tensor, numpy
values under ``torch.serialization.safe_globals``) raises :class:`NotModelled`: the static answer is
"unknown", and the real loader decides. Everything else it reports is what torch would say:
:class:`NotLoadable` carries the reason torch's loader fails.
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

#: Element sizes of the dtypes a storage class or ``torch.<dtype>`` names.
ITEMSIZE = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "complex128": 16,
    "complex64": 8,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "float8_e5m2": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2fnuz": 1,
    "float8_e4m3fnuz": 1,
}
#: ``torch.<Name>Storage`` (and ``torch.cuda.<Name>Storage``: the location is ignored on load) -> dtype.
STORAGE_DTYPES = {
    "DoubleStorage": "float64",
    "FloatStorage": "float32",
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",
    "ComplexDoubleStorage": "complex128",
    "ComplexFloatStorage": "complex64",
    "LongStorage": "int64",
    "IntStorage": "int32",
    "ShortStorage": "int16",
    "CharStorage": "int8",
    "ByteStorage": "uint8",
    "BoolStorage": "bool",
}
_FLOATING = {"float64", "float32", "float16", "bfloat16", "complex128", "complex64"} | {
    d for d in ITEMSIZE if d.startswith("float8")
}


class NotLoadable(Exception):
    """torch's weights-only loader would refuse this pickle; the message says why, in one line."""


class NotModelled(Exception):
    """torch may load this (a global or form the twin does not model); only the real loader can tell."""


@dataclass(frozen=True)
class TensorInfo:
    """A tensor as a checkpoint describes it, never materialised."""

    shape: tuple[int, ...]
    dtype: str
    storage_key: str
    storage_numel: int
    requires_grad: bool = False
    offset: int = 0  # in elements of ``dtype``, into the storage
    stride: tuple[int, ...] = ()  # in elements; () for a tensor without elements

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True)
class _Global:
    """An allowed global on the stack (not called until REDUCE says so)."""

    path: str


@dataclass(frozen=True)
class _Storage:
    dtype: str
    key: str
    nbytes: int


@dataclass(frozen=True)
class _Dtype:
    name: str


#: Globals the twin models; every one is on torch's default allowlist.
MODELLED: frozenset[str] = frozenset(
    {f"torch.{name}" for name in STORAGE_DTYPES}
    | {f"torch.cuda.{name}" for name in STORAGE_DTYPES}
    | {f"torch.{name}" for name in ITEMSIZE}
    | {
        "torch.storage.UntypedStorage",
        "torch.Size",
        "torch.device",
        "torch.Tensor",
        "torch.nn.parameter.Parameter",
    }
    | {
        f"torch._utils._rebuild_{v}"
        for v in ("tensor", "tensor_v2", "tensor_v3", "parameter", "parameter_with_state")
    }
    | {
        "torch._tensor._rebuild_from_type_v2",
        "collections.OrderedDict",
        "builtins.set",
        "builtins.complex",
        "builtins.bytearray",
        "_codecs.encode",
    }
)
#: Modules torch blocks outright, whatever its allowlist says.
_BLOCKED = {"sys", "os", "posix", "nt"}
_DEVICE_TYPES = {"cpu", "cuda", "mps", "meta", "xpu", "xla", "hip", "hpu", "mtia", "ipu", "privateuseone"}


def _dtype_of_storage(path: str) -> str | None:
    if path == "torch.storage.UntypedStorage":
        return "uint8"
    name = path.rpartition(".")[2]
    return STORAGE_DTYPES.get(name) if path in (f"torch.{name}", f"torch.cuda.{name}") else None


def _ints(value: object, what: str) -> tuple[int, ...]:
    if not isinstance(value, tuple | list) or not all(type(v) is int for v in value):
        raise NotLoadable(f"tensor {what} must be a sequence of integers, got {type(value).__name__}")
    if any(v < 0 for v in value):
        raise NotLoadable(f"tensor {what} {tuple(value)} has a negative entry")
    return tuple(value)


def _rebuild(
    storage: object,
    offset: object,
    size: object,
    stride: object,
    requires_grad: object = False,
    dtype: str | None = None,
) -> TensorInfo:
    """``Tensor.set_(storage, offset, size, stride)``: the view must lie inside the storage."""
    if not isinstance(storage, _Storage):
        raise NotLoadable(f"a tensor rebuilt from a {type(storage).__name__}, not a storage")
    if type(offset) is not int or offset < 0:
        raise NotLoadable(f"tensor storage offset {offset!r} is invalid")
    shape, strides = _ints(size, "size"), _ints(stride, "stride")
    if not strides and shape:  # () means contiguous
        contiguous: list[int] = []
        step = 1
        for dim in reversed(shape):
            contiguous.insert(0, step)
            step *= dim
        strides = tuple(contiguous)
    if len(strides) != len(shape):
        raise NotLoadable(f"unequal size length ({len(shape)}) and stride length ({len(strides)})")
    dtype = dtype or storage.dtype
    if all(shape):
        needed = (offset + 1 + sum((d - 1) * s for d, s in zip(shape, strides, strict=True))) * ITEMSIZE[
            dtype
        ]
        if needed > storage.nbytes:
            raise NotLoadable(
                f"a tensor of shape {shape} needs {needed} bytes of storage {storage.key}, which holds {storage.nbytes}"
            )
    if requires_grad not in (True, False):
        raise NotLoadable(f"requires_grad {requires_grad!r} is not a bool")
    if requires_grad and dtype not in _FLOATING:
        raise NotLoadable("only tensors of floating point and complex dtype can require gradients")
    return TensorInfo(
        shape,
        dtype,
        storage.key,
        storage.nbytes // ITEMSIZE[storage.dtype],
        bool(requires_grad),
        offset,
        tuple(strides),
    )


def _hooks(value: object) -> None:
    if value is not None and not (isinstance(value, dict) and not value):
        raise NotModelled("a tensor with serialized backward hooks")


def _call(func: _Global, args: tuple[Any, ...]) -> object:
    """REDUCE of a modelled global, with torch's effect (or failure) on these arguments (any values a pickle
    holds: a call that does not take them raises TypeError or ValueError, as in torch)."""
    path = func.path
    try:
        if path in ("torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor_v3"):
            v3 = path.endswith("v3")
            if len(args) < (7 if v3 else 6) or len(args) > (8 if v3 else 7):
                raise NotLoadable(f"{path.rpartition('.')[2]}() got {len(args)} arguments")
            _hooks(args[5])
            dtype = None
            if v3:
                if not isinstance(args[6], _Dtype) or args[6].name not in ITEMSIZE:
                    raise NotModelled(f"{path} with dtype {args[6]!r}")
                dtype = args[6].name
            return _rebuild(args[0], args[1], args[2], args[3], args[4], dtype)
        if path == "torch._utils._rebuild_tensor":
            if len(args) != 4:
                raise NotLoadable(f"_rebuild_tensor() got {len(args)} arguments")
            return _rebuild(*args)
        if path in ("torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state"):
            if len(args) != (4 if path.endswith("state") else 3) or not isinstance(args[0], TensorInfo):
                raise NotModelled(f"{path} of {type(args[0]).__name__ if args else 'nothing'}")
            _hooks(args[2])
            if args[1] and args[0].dtype not in _FLOATING:
                raise NotLoadable("only tensors of floating point and complex dtype can require gradients")
            return args[0]
        if path == "torch._tensor._rebuild_from_type_v2":
            func_, new_type, inner, _state = args
            if not (
                isinstance(func_, _Global)
                and new_type in (_Global("torch.Tensor"), _Global("torch.nn.parameter.Parameter"))
                and isinstance(inner, tuple)
            ):
                raise NotModelled("_rebuild_from_type_v2 of a tensor subclass")
            return _call(func_, inner)
        if path == "collections.OrderedDict":
            return OrderedDict(*args)
        if path == "builtins.set":
            return set(*args) if not args or isinstance(args[0], list | tuple | set) else _not_modelled(path)
        if path == "builtins.complex":
            return complex(*args)
        if path == "builtins.bytearray" and args and isinstance(args[0], bytes | str):
            return bytearray(*args)
        if (
            path == "_codecs.encode"
            and len(args) == 2
            and isinstance(args[0], str)
            and args[1] in ("latin1", "latin-1")
        ):
            return args[0].encode("latin1")
        if path == "torch.Size":
            return _ints(args[0] if args else (), "size")
        if path == "torch.device":
            return _device(args)
    except (TypeError, ValueError) as exc:
        raise NotLoadable(f"{path}{args!r:.80} fails: {exc}") from None
    return _not_modelled(path)


def _not_modelled(path: str) -> NoReturn:
    raise NotModelled(f"{path} called in a form torch.save does not write")


def _device(args: tuple[object, ...]) -> str:
    text = args[0] if args else None
    if not isinstance(text, str) or text.split(":")[0] not in _DEVICE_TYPES:
        raise NotLoadable(f"torch.device{args!r:.60} is not a device")
    return text if len(args) == 1 else f"{text}:{args[1]}"


class _Twin:
    """The interpreter loop; ``storage(dtype, key, numel)`` resolves a persistent id against the archive.

    It walks the bytes with an index and keeps the stack in a local variable (both refreshed around
    MARK): ``zoo check`` runs this once per checkpoint, so each opcode costs about a microsecond. A
    stack or memo read that fails (IndexError, KeyError) or an argument cut short (struct.error) is
    what torch's loop would fail on too, and becomes :class:`NotLoadable`.
    """

    def __init__(self, data: bytes, storage: Callable[[str, str, int], _Storage]):
        self.data = data
        self.storage = storage
        self.storages: dict[str, _Storage] = {}  # the first reference to a key fixes its dtype and size
        self.globals: list[str] = []
        self.memo: dict[int, object] = {}

    def text(self, raw: bytes, errors: str = "strict") -> str:
        try:
            return raw.decode("utf-8", errors)
        except UnicodeDecodeError:
            raise NotLoadable("data.pkl holds a string that is not UTF-8 (UnicodeDecodeError)") from None

    def glob(self, pos: int) -> tuple[_Global | _Dtype, int]:
        """GLOBAL's two lines (torch cuts the last byte of each, newline or not), and where the next opcode is."""
        lines = []
        for _ in range(2):
            end = self.data.find(b"\n", pos)
            end = len(self.data) if end < 0 else end + 1
            lines.append(self.text(self.data[pos : end - 1]))
            pos = end
        module, name = lines
        module = "builtins" if module == "__builtin__" else module
        path = f"{module}.{name}"
        self.globals.append(path)
        if module in _BLOCKED or path not in MODELLED:
            raise NotModelled(path)  # the caller's global scan gives the verdict on it
        return (_Dtype(name) if module == "torch" and name in ITEMSIZE else _Global(path)), pos

    def persistent(self, pid: object) -> _Storage:
        if type(pid) is not tuple:
            raise NotLoadable(f"persistent id is a {type(pid).__name__}, torch needs a storage tuple")
        tag = (
            pid[0].decode("ascii", "replace")
            if pid and isinstance(pid[0], bytes)
            else pid[0]
            if pid
            else None
        )
        if tag != "storage" or len(pid) != 5:
            raise NotLoadable(f"persistent id {pid!r:.60} is not ('storage', type, key, location, numel)")
        kind, key, _location, numel = pid[1:]
        dtype = _dtype_of_storage(kind.path) if isinstance(kind, _Global) else None
        if dtype is None:
            raise NotLoadable(f"persistent id names {kind!r:.60}, which is not a storage type")
        if type(numel) is not int and numel is not True or numel < 0:
            raise NotLoadable(f"storage numel {numel!r} is not a non-negative integer")
        key = f"{key}"
        if key not in self.storages:
            self.storages[key] = self.storage(dtype, key, int(numel))
        return self.storages[key]

    def run(self) -> object:
        try:
            return self._loop()
        except (IndexError, struct.error):
            raise NotLoadable(
                "data.pkl is cut short, or pops from an empty stack or MARK (torch fails too)"
            ) from None
        except KeyError as exc:
            raise NotLoadable(f"data.pkl reads memo slot {exc}, which was never set (KeyError)") from None

    def _loop(self) -> object:  # noqa: C901 - one branch per opcode, the frequent ones first
        data, memo, marks = self.data, self.memo, []
        stack: list[object] = []
        pos = 0
        while True:
            code = data[pos]
            pos += 1
            if code == 0x71:  # BINPUT
                memo[data[pos]] = stack[-1]
                pos += 1
            elif code == 0x58:  # BINUNICODE
                (size,) = struct.unpack_from("<I", data, pos)
                raw = data[pos + 4 : pos + 4 + size]
                if len(raw) != size:
                    raise IndexError
                stack.append(self.text(raw, "surrogatepass"))
                pos += 4 + size
            elif code == 0x4B:  # BININT1
                stack.append(data[pos])
                pos += 1
            elif code == 0x68:  # BINGET
                stack.append(memo[data[pos]])
                pos += 1
            elif code in (0x85, 0x86, 0x87):  # TUPLE1..3
                n = code - 0x84
                if len(stack) < n:
                    raise IndexError
                stack[-n:] = [tuple(stack[-n:])]
            elif code == 0x28:  # MARK
                marks.append(stack)
                stack = []
            elif code == 0x74:  # TUPLE
                items, stack = stack, marks.pop()
                stack.append(tuple(items))
            elif code == 0x63:  # GLOBAL
                value, pos = self.glob(pos)
                stack.append(value)
            elif code == 0x51:  # BINPERSID
                stack.append(self.persistent(stack.pop()))
            elif code == 0x52:  # REDUCE
                args, func = stack.pop(), stack[-1]
                if not isinstance(func, _Global) or not isinstance(args, tuple | list):
                    raise NotLoadable(f"REDUCE of {type(func).__name__}: not an allowed function")
                stack[-1] = _call(func, tuple(args))
            elif code in _CONSTANTS:
                stack.append(_CONSTANTS[code]())
            elif code in (0x73, 0x75):  # SETITEM, SETITEMS
                if code == 0x73:
                    item, key = stack.pop(), stack.pop()
                    items = [key, item]
                else:
                    items, stack = stack, marks.pop()
                target = stack[-1]
                if not isinstance(target, dict) or type(target) not in (dict, OrderedDict):
                    raise NotLoadable(f"SETITEM on a {type(target).__name__}: torch sets items only on dicts")
                if len(items) % 2:
                    raise NotLoadable("SETITEMS with an odd number of items (IndexError)")
                try:
                    for i in range(0, len(items), 2):
                        target[items[i]] = items[i + 1]
                except TypeError:
                    raise NotLoadable("a dict key is unhashable (TypeError)") from None
            elif code in (0x61, 0x65):  # APPEND, APPENDS
                if code == 0x61:
                    items = [stack.pop()]
                else:
                    items, stack = stack, marks.pop()
                if type(stack[-1]) is not list:
                    raise NotLoadable(f"APPEND to a {type(stack[-1]).__name__}: torch appends only to lists")
                stack[-1].extend(items)
            elif code == 0x62:  # BUILD
                state, inst = stack.pop(), stack[-1]
                if type(inst) is not OrderedDict:
                    raise (NotModelled if isinstance(inst, TensorInfo) else NotLoadable)(
                        f"BUILD on {type(inst).__name__}: torch builds only tensors, parameters and OrderedDicts"
                    )
                if not isinstance(state, dict):
                    raise NotLoadable(f"OrderedDict state is a {type(state).__name__}, not a dict")
            elif code == 0x81:  # NEWOBJ
                args, cls = stack.pop(), stack.pop()
                if cls == _Global("collections.OrderedDict") and args == ():
                    stack.append(OrderedDict())
                elif isinstance(cls, _Global):
                    raise NotModelled(f"NEWOBJ of {cls.path}")
                else:
                    raise NotLoadable(f"NEWOBJ of {type(cls).__name__}: not an allowed class")
            elif code == 0x4A:  # BININT
                stack.append(struct.unpack_from("<i", data, pos)[0])
                pos += 4
            elif code == 0x4D:  # BININT2
                stack.append(struct.unpack_from("<H", data, pos)[0])
                pos += 2
            elif code == 0x47:  # BINFLOAT
                stack.append(struct.unpack_from(">d", data, pos)[0])
                pos += 8
            elif code == 0x8A:  # LONG1
                size = data[pos]
                raw = data[pos + 1 : pos + 1 + size]
                if len(raw) != size:
                    raise IndexError
                stack.append(int.from_bytes(raw, "little", signed=True))
                pos += 1 + size
            elif code == 0x55:  # SHORT_BINSTRING
                size = data[pos]
                raw = data[pos + 1 : pos + 1 + size]
                if len(raw) != size:
                    raise IndexError
                stack.append(self.text(raw))
                pos += 1 + size
            elif code == 0x6A:  # LONG_BINGET
                stack.append(memo[struct.unpack_from("<I", data, pos)[0]])
                pos += 4
            elif code == 0x72:  # LONG_BINPUT
                memo[struct.unpack_from("<I", data, pos)[0]] = stack[-1]
                pos += 4
            elif code == 0x80:  # PROTO
                pos += 1
            elif code == 0x2E:  # STOP
                return stack.pop()
            else:
                raise NotLoadable(
                    f"pickle opcode {bytes([code])!r} (protocol {_protocol_of(code)}) is not one "
                    "torch's weights-only loader supports"
                )


_CONSTANTS: dict[int, Callable[[], object]] = {
    0x4E: lambda: None,
    0x89: lambda: False,
    0x88: lambda: True,
    0x29: tuple,
    0x5D: list,
    0x7D: dict,
    0x8F: set,
}


def _protocol_of(code: int) -> str:
    if code >= 0x8C:
        return "4+"
    if code >= 0x80:
        return "2"
    return "0/1"


def load(data: bytes, storage: Callable[[str, str, int], _Storage]) -> tuple[object, list[str]]:
    """``(decoded object, globals in order)`` of a ``data.pkl``; raises :class:`NotLoadable` or :class:`NotModelled`.

    ``storage(dtype, key, numel)`` is called once per storage key and must return a ``_Storage`` of the
    record's real size, or raise :class:`NotLoadable` when the archive cannot back it.
    """
    twin = _Twin(data, storage)
    return twin.run(), twin.globals


def make_storage(dtype: str, key: str, nbytes: int) -> _Storage:
    return _Storage(dtype, key, nbytes)
