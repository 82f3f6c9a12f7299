"""Which globals a pickle would import, found by running the pickle machine with nothing behind it.

An opcode walk that guesses ``STACK_GLOBAL``'s operands from "recent string pushes" is evaded by a
``POP``, a ``DUP``, a memo slot written after a ``POP``, a ``FRAME`` that ends inside an opcode, or an
``INT`` written in hex. Instead, :func:`scan_pickles` runs CPython's reference pickle machine
(``pickle._Unpickler``, the pure-Python one: its memo is a dict, so a huge memo index costs nothing,
unlike the C unpickler's array) with ``find_class`` overridden to *record* each ``(module, name)`` and
hand back :class:`Inert`, a class whose instances absorb every call, attribute and item operation. The
stack and memo are the real ones, so the globals recorded are the ones ``pickle`` would import; nothing
a pickle names is imported and nothing it calls runs. Hardened further: ``EXT1/2/4`` (which consult
``copyreg``'s process-wide registry instead of ``find_class``) and a ``BYTEARRAY8`` longer than the
input are refused, and any exception means "incomplete": the caller fails closed.

:func:`classify` then turns the globals into a verdict against an allowlist: a global on it is fine,
a known-dangerous one is "unsafe", and every other one is "unknown" (zoo cannot check it without
running it). Both are errors; only the words differ.
"""

from __future__ import annotations

import _compat_pickle
import io
import pickle
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

#: What zoo says about a pickle that names a known-dangerous global, wherever it is found.
UNSAFE_HINT = "do not load it: it runs code when it is loaded"
#: Modules whose globals can run code, touch files, the network or other processes when a pickle calls them.
DANGEROUS_MODULES = frozenset(
    {
        "os",
        "posix",
        "nt",
        "subprocess",
        "sys",
        "shutil",
        "socket",
        "runpy",
        "importlib",
        "pty",
        "webbrowser",
        "ctypes",
        "multiprocessing",
        "code",
        "codeop",
        "commands",
        "pickle",
        "_pickle",
        "cPickle",
        "marshal",
        "types",
        "operator",
        "_operator",
        "functools",
        "asyncio",
        "requests",
        "urllib",
        "urllib2",
        "http",
        "httplib",
        "ftplib",
        "smtplib",
        "telnetlib",
        "pip",
        "setuptools",
        "distutils",
        "pdb",
        "bdb",
        "timeit",
        "trace",
        "profile",
        "cProfile",
        "dill",
        "cloudpickle",
        "joblib",
        "tempfile",
        "signal",
        "threading",
        "_thread",
        "torch.hub",
        "torch.package",
        "torch.jit",
        "torch.serialization",
        "torch._C",
        "torch.ops",
        "numpy.lib.npyio",
        "numpy.testing",
        "_posixsubprocess",
    }
)
#: Names that are dangerous whichever module (``builtins``, ``numpy``, ``torch``, ...) they come from.
DANGEROUS_NAMES = frozenset(
    {
        "eval",
        "exec",
        "execfile",
        "compile",
        "open",
        "getattr",
        "setattr",
        "delattr",
        "__import__",
        "globals",
        "locals",
        "vars",
        "input",
        "breakpoint",
        "apply",
        "load",
        "loads",
        "fromfile",
        "loadtxt",
        "genfromtxt",
        "system",
        "popen",
        "spawn",
        "run_path",
        "import_module",
    }
)


class Inert:
    """What every global and persistent id of a scanned pickle becomes: absorbs any operation, holds nothing.

    It must be a class (``NEWOBJ`` calls ``cls.__new__``); its methods take ``*args`` because
    ``BUILD``/``APPENDS`` on the class itself call them unbound. No ``__eq__``: hashing stays identity.
    """

    __slots__ = ()

    def __new__(cls, *args: object, **kwargs: object) -> Inert:
        return object.__new__(Inert)

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def __call__(self, *args: object, **kwargs: object) -> Inert:
        return object.__new__(Inert)

    def __getattr__(self, name: str) -> Inert:
        if name.startswith("__"):
            raise AttributeError(name)
        return object.__new__(Inert)

    def __setattr__(self, name: str, value: object) -> None:
        pass

    def __setstate__(*args: object) -> None:
        pass

    def __setitem__(*args: object) -> None:
        pass

    def append(*args: object) -> None:
        pass

    def extend(*args: object) -> None:
        pass

    def add(*args: object) -> None:
        pass

    def __repr__(self) -> str:
        return "<Inert>"


class HardenedUnpickler(pickle._Unpickler):
    """The pure-Python pickle machine minus its two ways around ``find_class`` and its one pre-allocation.

    Shared by the scanner below and by :mod:`zoo.artifacts.restricted_pickle`.
    """

    #: Opcode -> handler, each called with the machine itself (typeshed types it with the C ``Unpickler``).
    dispatch: ClassVar[dict[int, Callable[[Any], None]]] = dict(pickle._Unpickler.dispatch)

    if TYPE_CHECKING:  # the pure-Python machine's working state, which typeshed does not declare

        def read(self, n: int) -> bytes: ...
        def append(self, value: object) -> None: ...
        def load_build(self) -> None: ...

        stack: list[Any]

    def __init__(self, file: io.BytesIO, limit: int):
        super().__init__(file, encoding="ASCII")
        self._limit = limit

    def get_extension(self, code: int) -> None:
        raise pickle.UnpicklingError(f"extension code {code} (EXT opcode) refused: it bypasses the allowlist")

    def _load_bytearray8(self) -> None:
        (size,) = struct.unpack("<Q", self.read(8))
        if size > self._limit:
            raise pickle.UnpicklingError(f"BYTEARRAY8 of {size} bytes in a {self._limit}-byte pickle")
        self.append(bytearray(self.read(size)))

    dispatch[pickle.BYTEARRAY8[0]] = _load_bytearray8


def _capturing(key: tuple[str, str], calls: list[tuple[tuple[str, str], tuple[object, ...]]]) -> type:
    """An :class:`Inert` class that records the arguments it is called with (``REDUCE``, ``NEWOBJ``)."""

    class Captured(Inert):
        __slots__ = ()

        # Any, not Captured: the object built is a plain Inert (only the call is recorded), and mypy
        # wants __new__ to return its own class or Any.
        def __new__(cls, *args: object, **kwargs: object) -> Any:
            calls.append((key, args))
            return object.__new__(Inert)

    return Captured


class _Recorder(HardenedUnpickler):
    def __init__(self, file: io.BytesIO, limit: int, scan: PickleScan, capture: frozenset[tuple[str, str]]):
        super().__init__(file, limit)
        self._scan, self._capture = scan, capture

    def find_class(self, module: str, name: str) -> type:
        self._scan.globals.append((module, name))
        if (module, name) in self._capture:
            return _capturing((module, name), self._scan.calls)
        return Inert

    def persistent_load(self, pid: object) -> type:
        return Inert


@dataclass
class PickleScan:
    """The globals of ``count`` consecutive pickles, in order; ``error`` when the scan could not finish."""

    globals: list[tuple[str, str]] = field(default_factory=list)
    #: ``((module, name), args)`` of each call of a global the scan was asked to capture.
    calls: list[tuple[tuple[str, str], tuple[object, ...]]] = field(default_factory=list)
    error: str | None = None
    end: int = 0  # offset just past the last pickle scanned

    @property
    def complete(self) -> bool:
        return self.error is None

    def names(self) -> list[str]:
        return list(dict.fromkeys(f"{m}.{n}" for m, n in self.globals))


def scan_pickles(
    data: bytes, count: int = 1, capture: frozenset[tuple[str, str]] = frozenset()
) -> PickleScan:
    """Run ``count`` pickles of ``data`` (from its start) through the recording machine. Nothing is imported.

    The arguments of every call of a global in ``capture`` are recorded too (as the machine built them:
    plain values, or :class:`Inert` where they came from other globals), for a caller that must check
    them (SB3's pickled tensors hand ``torch.storage._load_from_bytes`` a whole torch file)."""
    scan = PickleScan()
    stream = io.BytesIO(data)
    for _ in range(count):
        try:
            _Recorder(stream, len(data), scan, capture).load()
        except RecursionError:
            scan.error = "nested too deeply"
        except Exception as exc:  # noqa: BLE001 - any failure means "could not follow it to the end"
            scan.error = f"{type(exc).__name__}: {exc}"[:200]
        if scan.error:
            break
        scan.end = stream.tell()
        if scan.end >= len(data):
            break
    return scan


def normalized(module: str, name: str) -> tuple[str, str]:
    """What a protocol < 3 load imports for a Python 2 name (``__builtin__.set`` is ``builtins.set``)."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def is_dangerous(module: str, name: str) -> bool:
    """A global known to run code or touch the system (the raw name, and what Python 2 names map to)."""
    for mod, attr in {(module, name), normalized(module, name)}:
        parts = [*mod.split("."), *attr.split(".")]
        dotted = {".".join(parts[: i + 1]) for i in range(len(parts))}
        if dotted & DANGEROUS_MODULES or parts[-1] in DANGEROUS_NAMES:
            return True
        if len(attr.split(".")) > 1 and any(p in DANGEROUS_MODULES for p in attr.split(".")):
            return True  # a dotted name reaching a module through an attribute (``torch``, ``os.system``)
    return False


@dataclass(frozen=True)
class GlobalVerdict:
    dangerous: list[str]
    unknown: list[str]

    @property
    def ok(self) -> bool:
        return not (self.dangerous or self.unknown)


def classify(found: Iterable[tuple[str, str]], allowed: frozenset[str]) -> GlobalVerdict:
    """Dangerous globals, then every other one not on ``allowed`` (``"module.name"`` strings), each once."""
    dangerous, unknown = [], []
    for module, name in dict.fromkeys(found):
        shown = f"{module}.{name}"
        if is_dangerous(module, name):
            dangerous.append(shown)
        elif shown not in allowed and "{}.{}".format(*normalized(module, name)) not in allowed:
            unknown.append(shown)
    return GlobalVerdict(dangerous, unknown)
