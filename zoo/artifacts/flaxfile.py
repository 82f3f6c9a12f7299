"""Static reading of a file written by ``flax.serialization.to_bytes``: its parameters, without jax or flax.

CleanRL's JAX scripts save ``--save-model`` output this way (``q_state.params`` for DQN,
``[vars(args), params]`` for C51, ``[actor_params, qf1_params, ...]`` for TD3 and DDPG,
``[vars(args), [network_params, actor_params, critic_params]]`` for the EnvPool PPO), under the same
``.cleanrl_model`` name as the torch scripts. flax 0.12's writer (``flax/serialization.py``):

* ``to_bytes`` turns the object into a state dict (``to_state_dict``): dicts keep their keys as strings,
  lists and tuples become dicts keyed ``"0"``, ``"1"``, ..., namedtuples and flax dataclasses dicts of
  their fields; anything else (numbers, strings, None, arrays) stays as it is.
* ``msgpack_serialize`` packs that with ``msgpack.packb(..., default=_msgpack_ext_pack)``: an array (numpy
  or jax) is extension type 1, whose payload is itself msgpack, ``(shape, dtype.name, arr.tobytes("C"))``;
  a numpy scalar is type 3, the same payload with shape ``()``; a Python complex is type 2, ``(real, imag)``.
* an array over ``MAX_CHUNK_SIZE`` (1 GiB, msgpack's 2 GiB limit for one object, halved) is written as
  ``{"__msgpack_chunked_array__": True, "shape": {"0": d0, ...}, "chunks": {"0": flat0, ...}}``, 1-D
  chunks of at most 1 GiB that ``msgpack_restore`` concatenates and reshapes.

:func:`read_flax_file` decodes this with the real ``msgpack`` library (flax's own dependency) and numpy:
no pickle, no jax, nothing from the file is ever called. What flax's ``msgpack_restore`` would accept from
a crafted file, zoo bounds: the file is read whole only up to :data:`MAX_FLAX_BYTES`; msgpack's declared
lengths are capped (:data:`MAX_CONTAINER_LEN`, so that a 5-byte header cannot make msgpack allocate a
list of four billion slots) and containers are counted as they are built (:data:`MAX_ENTRIES`); nesting
stops at :data:`MAX_DEPTH`; every array's bytes must match its shape and dtype exactly, so the arrays
never hold more than the file does. The worst crafted file costs about 300 MB of memory while it is read
(msgpack builds the entries of up to 1024 open containers before zoo can count them).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from zoo.artifacts.limits import mib
from zoo.artifacts.torchfile import UNREADABLE_HINT
from zoo.errors import BrokenFile

#: A flax file is read whole (msgpack needs its bytes in memory): far above CleanRL's models (a few MiB for
#: Atari), and above one chunked array (flax chunks arrays over 1 GiB), far below what exhausts memory.
MAX_FLAX_BYTES = 2 << 30
#: Entries one msgpack map or array may declare. ``to_bytes`` writes one map entry per submodule, parameter
#: or ``vars(args)`` field (tens), and no msgpack arrays at all outside an array's payload.
MAX_CONTAINER_LEN = 1 << 12
#: Entries of all maps and arrays together (a CleanRL model has a few hundred).
MAX_ENTRIES = 1 << 20
#: Nesting depth of the state dict (CleanRL's deepest, the EnvPool PPO, is 5; a chunked array adds 2).
MAX_DEPTH = 64
#: One string: a key or a ``vars(args)`` value.
MAX_STR_BYTES = 1 << 20
#: numpy's own bound on an array's dimensions (NPY_MAXDIMS).
MAX_NDIM = 64

#: flax's ``_MsgpackExtType``.
EXT_NDARRAY, EXT_COMPLEX, EXT_NPSCALAR = 1, 2, 3
#: The key flax's ``_chunk`` marks a chunked array with.
CHUNKED = "__msgpack_chunked_array__"
#: dtype names (``arr.dtype.name``) a parameter can have: numpy's numeric types and bool ...
NUMPY_DTYPES = frozenset(
    {"bool", "float16", "float32", "float64", "complex64", "complex128"}
    | {f"{sign}int{bits}" for sign in ("", "u") for bits in (8, 16, 32, 64)}
)
#: ... and jax's narrow floats and ints, which are ml_dtypes types (flax reads bfloat16 as jax's own).
ML_DTYPES = frozenset(
    {
        "bfloat16",
        "float4_e2m1fn",
        "float6_e2m3fn",
        "float6_e3m2fn",
        "float8_e3m4",
        "float8_e4m3",
        "float8_e4m3b11fnuz",
        "float8_e4m3fn",
        "float8_e4m3fnuz",
        "float8_e5m2",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
        "int2",
        "int4",
        "uint2",
        "uint4",
    }
)
#: Map keys msgpack can give back (flax writes only strings).
_KEYS = (str, int, float, bytes, type(None))
#: Leaves of a state dict: plain msgpack values, and what flax's extension types decode to.
_LEAVES = (str, int, float, bytes, type(None), complex, np.ndarray, np.generic)
_ZIP, _PICKLE_PROTOCOLS = b"PK\x03\x04", range(2, 6)
_OVER = re.compile(r"(\d+) exceeds max_(str|bin|array|map|ext)_len\((\d+)\)")
_WHAT = {
    "str": ("string", "bytes"),
    "bin": ("byte string", "bytes"),
    "array": ("array", "items"),
    "map": ("map", "entries"),
    "ext": ("extension", "bytes"),
}


def _first_bytes() -> frozenset[int]:
    """Bytes a flax file starts with: a map (what ``to_bytes`` writes for a state dict), an array (a list
    given to ``msgpack_serialize``) or an extension (one array or scalar given to ``to_bytes``)."""
    maps_arrays = range(0x80, 0xA0)  # fixmap, fixarray
    return frozenset([*maps_arrays, 0xDC, 0xDD, 0xDE, 0xDF, 0xC7, 0xC8, 0xC9, *range(0xD4, 0xD9)])


_STARTS = _first_bytes()


@dataclass
class FlaxFileInfo:
    """What a flax msgpack file holds, read without jax or flax."""

    path: Path
    size: int
    kind: str  # flax-msgpack | empty | not-msgpack | truncated | missing | unreadable
    #: The state dict msgpack_restore gives: dicts (lists stay ``{"0": ..., "1": ...}``, as flax writes them),
    #: numpy arrays (read-only views of the file's bytes, as flax's own; chunked arrays reassembled), numpy
    #: scalars, complex and plain msgpack values. None unless the file was read whole.
    content: Any = None
    problem: str | None = None  # one line: why the file is unusable

    @property
    def decoded(self) -> bool:
        """``content`` is the file's state dict (a file may hold None: this says whether it was read)."""
        return self.kind == "flax-msgpack" and self.problem is None


class _Refused(Exception):
    """The file breaks flax's format or zoo's bounds; the message is the finding."""


# ---------------------------------------------------------------------------------------------- extensions
def _dtype(name: bytes) -> np.dtype:
    """The dtype flax's ``_dtype_from_name`` would give for ``name``, if it is one a parameter can have."""
    text = name.decode("ascii", "replace")
    if text in NUMPY_DTYPES:
        return np.dtype(text)
    if text in ML_DTYPES:
        try:
            import ml_dtypes  # numpy's extension types for jax's narrow dtypes (onnx depends on it)
        except ImportError:
            raise _Refused(f"an array of dtype {text}, which needs the ml_dtypes package") from None
        dtype: np.dtype[Any] = np.dtype(getattr(ml_dtypes, text))
        return dtype
    raise _Refused(
        f"an array of dtype {text[:40]!r}, which is not a numeric dtype flax writes for parameters"
    )


def _shape(value: Any, what: str) -> tuple[int, ...]:
    """A shape as flax writes it: a sequence of at most :data:`MAX_NDIM` non-negative integers."""
    if not isinstance(value, list | tuple) or len(value) > MAX_NDIM:
        raise _Refused(f"{what} has no valid shape (a list of at most {MAX_NDIM} integers)")
    if not all(type(d) is int and d >= 0 for d in value):
        raise _Refused(f"{what} has a shape that is not non-negative integers: {str(value)[:60]}")
    return tuple(value)


def _payload(data: bytes, max_array_len: int, raw: bool) -> Any:
    """An extension's inner msgpack (flax packs arrays and complex numbers as nested msgpack), bounded
    by the payload itself: no maps, no extensions, no string longer than a dtype name."""
    try:
        return msgpack.unpackb(
            data,
            raw=raw,
            max_array_len=max_array_len,
            max_map_len=0,
            max_ext_len=0,
            max_str_len=64,
            max_bin_len=len(data),
        )
    except (ValueError, TypeError) as exc:
        raise _Refused(f"an extension's payload is not flax's ({_short(exc)})") from None


def _ndarray(data: bytes) -> np.ndarray:
    """flax's ``_ndarray_from_bytes``: ``(shape, dtype name, C-order bytes)``, the bytes checked against
    the shape and dtype before numpy sees them."""
    triple = _payload(data, max(MAX_NDIM, 3), raw=True)
    if not (
        isinstance(triple, list)
        and len(triple) == 3
        and isinstance(triple[1], bytes)
        and isinstance(triple[2], bytes)
    ):
        raise _Refused("an array extension is not flax's (shape, dtype, bytes) triple")
    shape_value, name, buffer = triple
    dtype = _dtype(name)
    shape = _shape(shape_value, f"a {dtype.name} array")
    need = math.prod(shape) * dtype.itemsize
    if len(buffer) != need:
        raise _Refused(
            f"a {dtype.name} array of shape {shape} holds {len(buffer)} bytes, its shape needs {need}"
        )
    try:
        return np.frombuffer(buffer, dtype=dtype).reshape(shape)
    except ValueError as exc:  # a zero-size shape numpy refuses ("array is too big")
        raise _Refused(f"a {dtype.name} array of shape {str(shape)[:60]}: {_short(exc)}") from None


def _complex(data: bytes) -> complex:
    pair = _payload(data, 2, raw=False)
    if not (isinstance(pair, list) and len(pair) == 2 and all(type(x) in (int, float) for x in pair)):
        raise _Refused("a complex extension is not flax's (real, imag) pair")
    return complex(pair[0], pair[1])


class _Decoder:
    """msgpack's hooks: flax's extension types decoded, every container counted as msgpack builds it."""

    def __init__(self) -> None:
        self.entries = 0

    def _count(self, n: int) -> None:
        self.entries += n
        if self.entries > MAX_ENTRIES:
            raise _Refused(f"more than {MAX_ENTRIES} msgpack entries, over zoo's bound (a crafted file)")

    def ext(self, code: int, data: bytes) -> Any:
        self._count(1)
        if code == EXT_NDARRAY:
            return _ndarray(data)
        if code == EXT_NPSCALAR:
            array = _ndarray(data)
            if array.shape != ():
                raise _Refused(f"a numpy scalar extension holds an array of shape {array.shape}")
            return array[()]
        if code == EXT_COMPLEX:
            return _complex(data)
        raise _Refused(
            f"msgpack extension type {code}, which flax does not write (1 array, 2 complex, 3 numpy scalar)"
        )

    def container(self, value: dict[Any, Any] | list[Any]) -> dict[Any, Any] | list[Any]:
        self._count(len(value))
        return value


# ---------------------------------------------------------------------------------------------- structure
def _indexed(value: Any, what: str) -> list[Any]:
    """flax's ``_dict_to_tuple``: the values of a dict keyed ``"0"`` ... ``"n-1"``, in order."""
    items = as_sequence(value) if isinstance(value, dict) else None
    if items is None:
        raise _Refused(f"a chunked array's {what} is not a dict keyed '0', '1', ...")
    return items


def _unchunk(value: dict[str, Any]) -> np.ndarray:
    """flax's ``_unchunk``, after checking the chunks are 1-D arrays of one dtype that fill the shape."""
    if set(value) != {CHUNKED, "shape", "chunks"} or value[CHUNKED] is not True:
        raise _Refused(f"a chunked array ({CHUNKED}) not laid out as flax writes it")
    shape = _shape(_indexed(value["shape"], "shape"), "a chunked array")
    chunks = _indexed(value["chunks"], "chunks")
    if not chunks or not all(isinstance(c, np.ndarray) and c.ndim == 1 for c in chunks):
        raise _Refused("a chunked array whose chunks are not 1-D arrays")
    if len({c.dtype for c in chunks}) != 1:
        raise _Refused("a chunked array whose chunks differ in dtype")
    held, need = sum(c.size for c in chunks), math.prod(shape)
    if held != need:
        raise _Refused(f"a chunked array of shape {shape} holds {held} elements, its shape needs {need}")
    return np.concatenate(chunks).reshape(shape)


def _settle(value: Any, depth: int) -> Any:
    """The decoded tree checked (depth, key and leaf types) and its chunked arrays reassembled, in place
    as flax's ``_unchunk_array_leaves_in_place`` does."""
    if depth > MAX_DEPTH:
        raise _Refused(f"nested more than {MAX_DEPTH} levels deep, over zoo's bound")
    if isinstance(value, dict):
        if CHUNKED in value:
            return _unchunk(value)
        for key, item in value.items():
            if not isinstance(key, _KEYS):
                raise _Refused(f"a map key of type {type(key).__name__}, which flax does not write")
            value[key] = _settle(item, depth + 1)
        return value
    if isinstance(value, list):
        for i, item in enumerate(value):
            value[i] = _settle(item, depth + 1)
        return value
    if isinstance(value, _LEAVES):
        return value
    if isinstance(value, msgpack.Timestamp):
        raise _Refused("a msgpack timestamp (extension type -1), which flax does not write")
    raise _Refused(f"a value of type {type(value).__name__}, which flax does not write")


def _short(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:120] or type(exc).__name__


def _msgpack_problem(exc: ValueError | TypeError | RecursionError) -> tuple[str, str]:
    """(kind, problem) for an error msgpack raised on the file itself."""
    args = exc.args  # msgpack 1.0.0's pure-Python unpacker leaves its bound messages unformatted
    unformatted = len(args) == 3 and isinstance(args[0], str) and args[0].count("%s") == 2
    text = args[0] % args[1:] if unformatted else _short(exc)
    if isinstance(exc, msgpack.ExtraData):
        extra = len(exc.extra)
        return "flax-msgpack", f"{extra} trailing byte{'s' * (extra != 1)} after the top object"
    if isinstance(exc, msgpack.OutOfData) or "incomplete input" in text:
        return "truncated", "msgpack data is cut short"
    if isinstance(exc, msgpack.StackError | RecursionError):
        return "flax-msgpack", f"nested more than {MAX_DEPTH} levels deep, over zoo's bound"
    over = _OVER.search(text)
    if over:
        declared, (noun, unit), cap = over[1], _WHAT[over[2]], over[3]
        if int(declared) <= int(cap):  # msgpack reports no length for an extension refused before its data
            return "flax-msgpack", f"declares a msgpack {noun} over zoo's bound of {cap} {unit}"
        return "flax-msgpack", f"declares a msgpack {noun} of {declared} {unit}, over zoo's bound of {cap}"
    if isinstance(exc, UnicodeDecodeError):
        return "flax-msgpack", "a msgpack string that is not UTF-8"
    if isinstance(exc, msgpack.FormatError):
        return "flax-msgpack", "not valid msgpack (a reserved type byte)"
    if isinstance(exc, TypeError):
        return "flax-msgpack", f"a map key msgpack cannot use ({text})"
    return "flax-msgpack", f"not valid msgpack ({text})"


def _not_flax(head: bytes) -> str | None:
    """Why bytes starting with ``head`` are not a flax file; None when they start as one does."""
    if head.startswith(_ZIP):
        return "a zip archive (torch.save writes these), not flax msgpack"
    if head[:1] == b"\x80" and len(head) > 1 and head[1] in _PICKLE_PROTOCOLS:
        return f"a pickle (protocol {head[1]}), not flax msgpack"
    if head[0] not in _STARTS:
        return (
            f"not flax msgpack (it starts with byte 0x{head[0]:02x}, not a msgpack map, array or extension)"
        )
    return None


def _decode(info: FlaxFileInfo, data: bytes | memoryview) -> None:
    hooks = _Decoder()
    try:
        top = msgpack.unpackb(
            data,
            ext_hook=hooks.ext,
            object_hook=hooks.container,
            list_hook=hooks.container,
            raw=False,
            strict_map_key=False,
            max_str_len=MAX_STR_BYTES,
            max_bin_len=MAX_FLAX_BYTES,
            max_array_len=MAX_CONTAINER_LEN,
            max_map_len=MAX_CONTAINER_LEN,
            max_ext_len=MAX_FLAX_BYTES,
        )
        info.content = _settle(top, 0)
    except _Refused as exc:
        info.problem = str(exc)
    except (ValueError, TypeError, RecursionError) as exc:
        info.kind, info.problem = _msgpack_problem(exc)
    except MemoryError:
        info.problem = "decoding it ran out of memory"
    if info.problem:
        info.content = None


# ---------------------------------------------------------------------------------------------- entry points
def read_flax_bytes(data: bytes | memoryview, label: Path, size: int | None = None) -> FlaxFileInfo:
    """A flax file's bytes (in memory) described; every outcome is a value, never an exception."""
    size = len(data) if size is None else size
    info = FlaxFileInfo(label, size, "flax-msgpack")
    if not data:
        info.kind, info.problem = "empty", "file is empty"
    elif problem := _not_flax(bytes(data[:4])):
        info.kind, info.problem = "not-msgpack", problem
    elif size > MAX_FLAX_BYTES or len(data) > MAX_FLAX_BYTES:
        info.problem = f"{mib(max(size, len(data)))}, over zoo's {mib(MAX_FLAX_BYTES)} bound for a flax file"
    else:
        _decode(info, data)
    return info


def read_flax_file(path: str | Path) -> FlaxFileInfo:
    """Describe a flax msgpack file: its state dict, or why it is unusable. Never raises; never imports
    jax or flax; reads at most :data:`MAX_FLAX_BYTES` (a larger file only its first bytes)."""
    from zoo.artifacts.limits import read_model_file

    path = Path(path)
    data, size, kind, problem = read_model_file(path, MAX_FLAX_BYTES)
    if kind is not None:
        return FlaxFileInfo(path, 0, kind, problem=problem)
    return read_flax_bytes(data, path, size)


def refuse_broken(info: FlaxFileInfo) -> None:
    """Raise :class:`BrokenFile` (one line, exit 1) for a file that is not a readable flax file."""
    if info.kind == "unreadable":
        raise BrokenFile(f"cannot read {info.path}: {info.problem}", hint=UNREADABLE_HINT)
    if not info.decoded:
        raise BrokenFile(f"{info.path}: {info.problem or info.kind}")


# ---------------------------------------------------------------------------------------------- helpers
def as_sequence(value: Any) -> list[Any] | None:
    """The list a dict keyed ``"0"`` ... ``"n-1"`` stands for (how ``to_bytes`` writes lists and tuples:
    ``[vars(args), params]`` comes back as ``{"0": args, "1": params}``); a list as it is; else None."""
    if isinstance(value, list):
        return value
    if not isinstance(value, dict) or not value or any(not isinstance(k, str) for k in value):
        return None
    if set(value) != {str(i) for i in range(len(value))}:
        return None
    return [value[str(i)] for i in range(len(value))]


def tensor_shapes(content: Any, prefix: str = "") -> dict[str, tuple[int, ...]]:
    """Every array in a state dict by its dotted path (``"params.Dense_0.kernel"``; list items by index,
    ``"1.params.Dense_0.kernel"`` for ``[vars(args), params]``) and its shape, for comparing with a model.

    Only arrays: numpy scalars and plain values (``vars(args)``) are not parameters. A top-level array is
    keyed ``prefix`` itself.
    """
    shapes: dict[str, tuple[int, ...]] = {}
    _collect(content, prefix, shapes, 0)
    return shapes


def _collect(value: Any, path: str, shapes: dict[str, tuple[int, ...]], depth: int) -> None:
    if isinstance(value, np.ndarray):
        shapes[path] = tuple(int(d) for d in value.shape)
    elif depth <= MAX_DEPTH and isinstance(value, dict | list):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            _collect(item, f"{path}.{key}" if path else str(key), shapes, depth + 1)
