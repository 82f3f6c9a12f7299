"""A pickled policy object (MJRL's ``policy.pickle``): inspected without running it, loaded only if trusted.

A pickle of a user's object is code: unpickling imports its classes and runs their ``__setstate__`` or
``__reduce__``. So the file is followed on zoo's recording pickle machine (:func:`scan_pickles`), which
names every global it would import and imports none; ``zoo check`` reports those names, and the loader
refuses the file (exit 3) unless the user passed ``--trust-pickle``. Only then does ``pickle.loads`` run,
on the very bytes that were scanned.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zoo.artifacts.pickles import UNSAFE_HINT, classify, scan_pickles
from zoo.artifacts.restricted_pickle import SAFE_BUILTINS
from zoo.artifacts.torchfile import NUMPY_GLOBALS
from zoo.errors import BrokenFile, LayoutMismatch, RefusedError, ZooError

#: What a lone file must be named for discovery to take it as a pickled policy (MJRL writes ``.pickle``).
SUFFIXES = (".pickle", ".pkl")
#: Globals that build plain data (containers, numbers, numpy arrays): not the user's classes.
PLAIN = frozenset(f"{module}.{name}" for module, name in SAFE_BUILTINS) | NUMPY_GLOBALS
_TRUST_HINT = (
    "pass --trust-pickle if you trust this file (it runs when it loads); never for a file you downloaded"
)


@dataclass
class PickleFacts:
    """A file as zoo found it: a pickle (its bytes and the globals it names) or some other file."""

    size: int
    is_pickle: bool
    data: bytes = field(default=b"", repr=False)  # the pickle's bytes: what is scanned is what is loaded
    globals: list[tuple[str, str]] = field(default_factory=list)  # (module, name), each once, in order
    scan_error: str | None = None

    @property
    def classes(self) -> list[str]:
        """The globals beyond plain data: the user's classes (and functions) unpickling would import."""
        return classify(self.globals, PLAIN).unknown

    @property
    def dangerous(self) -> list[str]:
        """The globals known to run code or touch the system (``os.system``): never a policy's."""
        return classify(self.globals, PLAIN).dangerous


def read(path: Path) -> PickleFacts:
    """The file's size and, for a pickle (protocol 2 or later: Python 3's ``pickle.dump``), its bytes and
    globals; any other file, and a pickle over zoo's read bound, is left unread past its first byte (a
    user's class may read it: its ``load(path)``)."""
    from zoo.artifacts import limits

    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(1)
    except FileNotFoundError:
        raise BrokenFile(f"{path}: file not found") from None
    except OSError as exc:
        raise BrokenFile(f"{path}: cannot read: {exc.strerror or exc}") from None
    if head != b"\x80":  # the PROTO opcode every protocol 2+ pickle starts with
        return PickleFacts(size, is_pickle=False)
    if size > limits.MAX_PICKLE_BYTES:
        return PickleFacts(
            size,
            True,
            scan_error=f"{limits.mib(size)}, over zoo's {limits.mib(limits.MAX_PICKLE_BYTES)} "
            "bound for a pickled policy",
        )
    data = limits.read_pickle_file(path, "a pickled policy")
    scan = scan_pickles(data)
    return PickleFacts(size, True, data, list(dict.fromkeys(scan.globals)), scan.error)


def problem(facts: PickleFacts, path: Path) -> ZooError | None:
    """Why the file cannot be a pickled policy, trusted or not: not a pickle, a broken one, or plain data."""
    if not facts.is_pickle:
        return LayoutMismatch(
            f"{path}: not a pickle",
            hint="a custom file is a pickled policy object (pickle.dump); "
            "weights your own class reads: add --policy-class module:Class (its load(path) "
            "reads the file)",
        )
    if facts.scan_error:
        return BrokenFile(f"{path}: the pickle cannot be read to its end ({facts.scan_error})")
    if not facts.classes and not facts.dangerous:
        return LayoutMismatch(
            f"{path}: holds plain data (no object with an action method)",
            hint="have a class of yours read it: --policy-class module:Class with a load(path) method",
        )
    return None


def refusal(facts: PickleFacts, path: Path) -> RefusedError:
    """The loader's answer without ``--trust-pickle``: what the file would run, named without running it."""
    if facts.dangerous:
        return RefusedError(
            f"{path}: unsafe pickle, loading it would call {', '.join(facts.dangerous)}", hint=UNSAFE_HINT
        )
    return RefusedError(
        f"{path}: a pickled object; loading it imports {_names(facts.classes)} and runs their code",
        hint=_TRUST_HINT,
    )


def describe_untrusted(facts: PickleFacts) -> str:
    """``zoo check``'s line for a pickle that only ``--trust-pickle`` loads."""
    return f"pickle: needs --trust-pickle (loading it imports {_names(facts.classes)} and runs their code)"


def load_trusted(facts: PickleFacts, path: Path) -> Any:
    """The object, fully unpickled (the user passed ``--trust-pickle``); its failures in one line."""
    from zoo.errors import user_error

    try:
        return pickle.loads(facts.data)  # noqa: S301 - the user trusts this file (--trust-pickle)
    except ModuleNotFoundError as exc:
        raise ZooError(
            f"{path}: unpickling needs the module {exc.name!r}, which is not installed",
            hint="install the library that defined the object (an MJRL policy needs mjrl)",
        ) from None
    except Exception as exc:  # noqa: BLE001 - the object's own code failed while it was rebuilt
        raise user_error(exc, f"pickle.loads of {path.name}", who="your pickled policy") from None


def _names(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" (+{len(names) - 3} more)" if len(names) > 3 else "")
