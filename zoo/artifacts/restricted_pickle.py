"""A restricted unpickler: builds only the classes on an explicit allowlist, with bounded arguments.

Some values exist only as pickles (SB3's policy kwargs, spaces and VecNormalize statistics;
Genesis' ``cfgs.pkl``). They are decoded with this unpickler, which resolves a global only when
``(module, name)`` is on the allowlist the caller passes, plus a few plain builtins. Anything
else raises :class:`RefusedGlobal` naming the global, before any of its code could run.

It runs on :class:`~zoo.artifacts.pickles.HardenedUnpickler` (the pure-Python pickle machine, its
memo a dict, ``EXT`` codes refused), and the builtins it allows are wrapped so that a pickle cannot
make them allocate: ``bytes(10**10)`` or ``list(range(10**10))`` is refused, not attempted.
"""

from __future__ import annotations

import builtins
import importlib
import io
import pickle
import sys
from collections.abc import Callable, Iterable
from typing import Any

from zoo.artifacts.pickles import UNSAFE_HINT, HardenedUnpickler, classify, scan_pickles
from zoo.errors import BrokenFile, RefusedError

#: Plain values every allowlist may rebuild: containers and numbers, nothing callable with effects.
SAFE_BUILTINS: frozenset[tuple[str, str]] = frozenset(
    {
        ("builtins", n)
        for n in (
            "dict",
            "list",
            "tuple",
            "set",
            "frozenset",
            "int",
            "float",
            "complex",
            "bool",
            "str",
            "bytes",
            "bytearray",
            "slice",
            "range",
            "object",
        )
    }
    | {
        ("collections", "OrderedDict"),
        ("collections", "defaultdict"),
        ("collections", "deque"),
        ("_codecs", "encode"),
        ("copyreg", "_reconstructor"),
    }
)
#: Builtins that allocate what their argument says: only data already in the pickle may fill them.
_SIZED = {"bytes", "bytearray", "list", "tuple", "set", "frozenset", "str", "dict"}
_MATERIAL = (list, tuple, set, frozenset, dict, str, bytes, bytearray)


class RefusedGlobal(pickle.UnpicklingError):
    """The pickle asked for a global that is not on the allowlist."""

    def __init__(self, module: str, name: str):
        super().__init__(f"refused to load global {module}.{name}: not on zoo's allowlist")
        self.module, self.name = module, name

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.name}"


def _bounded(builtin: type) -> Callable[..., Any]:
    """``builtin(*args)`` only when its argument is data the pickle already holds (no counts, no ranges)."""

    def build(*args: Any) -> Any:
        if args and not isinstance(args[0], _MATERIAL):
            raise pickle.UnpicklingError(f"{builtin.__name__}() of a {type(args[0]).__name__} refused")
        return builtin(*args)

    return build


def _reconstruct_empty(subtype: Any, shape: Any, dtype: Any) -> Any:
    """numpy's array reconstructor as numpy's own ``__reduce__`` calls it: an empty array, filled by BUILD."""
    from numpy._core.multiarray import _reconstruct

    if tuple(shape) != (0,):
        raise pickle.UnpicklingError(f"numpy _reconstruct of shape {shape!r} refused (numpy writes (0,))")
    return _reconstruct(subtype, shape, dtype)


_GUARDED: dict[tuple[str, str], Callable[..., Any]] = {
    **{("builtins", n): _bounded(getattr(builtins, n)) for n in _SIZED},
    **{
        (core, "_reconstruct"): _reconstruct_empty
        for core in ("numpy._core.multiarray", "numpy.core.multiarray")
    },
}


def _check_dtype_state(dtype: Any, state: Any) -> None:
    """Refuse a numpy dtype state other than the one numpy writes for that dtype (its byte order aside).

    ``BUILD`` hands a dtype's ``__setstate__`` flags, sizes and fields unchecked: a bool dtype told it holds
    object references makes numpy fail later, while freeing an array, in a way it can only print (a
    traceback beside ``zoo check``'s verdict)."""
    expected = dtype.__reduce__()[2]
    same = (
        isinstance(state, tuple)
        and len(state) == len(expected)
        and state[1] in ("<", ">", "|", "=")
        and all(
            type(a) is type(b) and a == b
            for i, (a, b) in enumerate(zip(state, expected, strict=True))
            if i != 1
        )
    )
    if not same:
        raise pickle.UnpicklingError(
            f"numpy dtype state {state!r:.80} is not the one numpy writes for {dtype}"
        )


class _Restricted(HardenedUnpickler):
    dispatch = dict(HardenedUnpickler.dispatch)

    def __init__(self, data: bytes, allowed: frozenset[tuple[str, str]]):
        super().__init__(io.BytesIO(data), len(data))
        self._allowed = allowed

    def load_build(self) -> None:
        numpy = sys.modules.get("numpy")  # without numpy imported, no dtype can be on the stack
        if numpy is not None and len(self.stack) >= 2 and isinstance(self.stack[-2], numpy.dtype):
            _check_dtype_state(self.stack[-2], self.stack[-1])
        super().load_build()

    dispatch[pickle.BUILD[0]] = load_build

    def find_class(self, module: str, name: str) -> Any:
        module = "builtins" if module == "__builtin__" else module  # protocol < 3 spells it the Python 2 way
        if (module, name) not in self._allowed:
            raise RefusedGlobal(module, name)
        if (module, name) in _GUARDED:
            return _GUARDED[(module, name)]
        return getattr(importlib.import_module(module), name)

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("persistent ids are not allowed in this pickle")


def restricted_loads(data: bytes, allowed: Iterable[tuple[str, str]] = ()) -> Any:
    """Unpickle ``data`` building only :data:`SAFE_BUILTINS` and ``allowed`` globals."""
    return _Restricted(data, SAFE_BUILTINS | frozenset(allowed)).load()


class UnknownGlobal(RefusedError):
    """:func:`checked_loads` refused a global outside the allowlist (one that does not run code)."""

    def __init__(self, message: str, hint: str, module: str):
        super().__init__(message, hint)
        self.module = module


def checked_loads(
    data: bytes,
    allowed: Iterable[tuple[str, str]],
    path: object,
    *,
    unknown_hint: str,
    part: str | None = None,
) -> Any:
    """``data`` read the one way zoo reads a pickle it must decode: the recording scan first (a global
    that runs code is an unsafe pickle, whatever the allowlist), then :func:`restricted_loads`. Every
    failure is one error naming ``path`` (and ``part`` of it, such as ``data['policy_kwargs']``)."""
    dangerous = classify(scan_pickles(data).globals, frozenset()).dangerous
    if dangerous:
        head = (
            f"unsafe pickle in {part}: loading would call" if part else "unsafe pickle, loading it would call"
        )
        raise RefusedError(f"{path}: {head} {', '.join(dangerous)}", hint=UNSAFE_HINT)
    what = part or "the pickle"
    try:
        return restricted_loads(data, allowed)
    except RefusedGlobal as exc:
        raise UnknownGlobal(
            f"{path}: {f'{part} ' if part else ''}holds {exc.qualname}, which zoo cannot check "
            "without running it",
            unknown_hint,
            exc.module,
        ) from None
    except RecursionError:
        raise BrokenFile(f"{path}: {what} is nested too deeply") from None
    except Exception as exc:  # noqa: BLE001 - a broken pickle is a finding, not a crash
        raise BrokenFile(f"{path}: {what} does not decode: {type(exc).__name__}: {str(exc)[:100]}") from None
