"""A restricted unpickler: builds only the classes on an explicit allowlist.

Some values exist only as pickles (SB3's policy kwargs, spaces and VecNormalize statistics;
Genesis' ``cfgs.pkl``). They are decoded with this unpickler, which resolves a global only when
``(module, name)`` is on the allowlist the caller passes, plus a few plain builtins. Anything
else raises :class:`RefusedGlobal` naming the global, before any of its code could run.
"""

from __future__ import annotations

import importlib
import io
import pickle
from collections.abc import Iterable
from typing import Any

#: Plain values every allowlist may rebuild: containers and numbers, nothing callable with effects.
SAFE_BUILTINS: frozenset[tuple[str, str]] = frozenset(
    {("builtins", n) for n in ("dict", "list", "tuple", "set", "frozenset", "int", "float", "complex", "bool",
                               "str", "bytes", "bytearray", "slice", "range", "object")}
    | {("collections", "OrderedDict"), ("collections", "defaultdict"), ("collections", "deque"),
       ("_codecs", "encode"), ("copyreg", "_reconstructor")}
)  # fmt: skip


class RefusedGlobal(pickle.UnpicklingError):
    """The pickle asked for a global that is not on the allowlist."""

    def __init__(self, module: str, name: str):
        super().__init__(f"refused to load global {module}.{name}: not on zoo's allowlist")
        self.module, self.name = module, name

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.name}"


class _Restricted(pickle.Unpickler):
    def __init__(self, data: bytes, allowed: frozenset[tuple[str, str]]):
        super().__init__(io.BytesIO(data))
        self._allowed = allowed

    def find_class(self, module: str, name: str) -> Any:
        module = "builtins" if module == "__builtin__" else module  # protocol < 3 spells it the Python 2 way
        if (module, name) not in self._allowed:
            raise RefusedGlobal(module, name)
        return getattr(importlib.import_module(module), name)

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("persistent ids are not allowed in this pickle")


def restricted_loads(data: bytes, allowed: Iterable[tuple[str, str]] = ()) -> Any:
    """Unpickle ``data`` building only :data:`SAFE_BUILTINS` and ``allowed`` globals."""
    return _Restricted(data, SAFE_BUILTINS | frozenset(allowed)).load()
