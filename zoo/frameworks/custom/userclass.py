"""The user's policy class (``--policy-class module:Class``): named, imported, constructed, called.

It is user code, so nothing here runs until the policy is loaded, and each failure is one line: the
reference's shape is checked before anything is imported; a module that does not import, a name that
is not there or not a class is a usage error (exit 2); a class zoo cannot call (its constructor, its
action method) and any exception the user's code raises are errors (exit 1) that say where.

How the class is constructed is read from its signature, never found by calling it one way and then
the other: a ``TypeError`` raised inside the user's ``__init__`` is the user's bug and is reported as
such, not taken for "wrong signature, try the next one".
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zoo.errors import UsageError, ZooError, user_error

#: ``module.path:Class`` (a nested class as ``module:Outer.Inner``).
_REF = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
#: The action methods zoo calls, in the order it looks for them (docs/frameworks/custom.md says how).
ACTION_METHODS = ("get_action", "predict", "act")
#: The constructor signatures zoo knows, by the names of their first two parameters.
CONSTRUCTORS = {("env", "seed"): "env", ("observation_space", "action_space"): "spaces"}
_CONTRACT_HINT = "see docs/frameworks/custom.md for the two constructors and three action methods zoo calls"
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def parse_policy_class(ref: str) -> str:
    """``module:Class`` checked for shape (nothing imported): the one form ``--policy-class`` takes."""
    if not _REF.fullmatch(ref):
        raise UsageError(
            f"--policy-class {ref!r}: expected module:Class",
            hint="for example --policy-class my_policies:PendulumPD (the module importable: on "
            "sys.path or PYTHONPATH)",
        )
    return ref


def import_class(ref: str) -> type:
    """The class ``ref`` names, imported (the user's module runs here, and only here)."""
    module_name, _, qualname = parse_policy_class(ref).partition(":")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(
            f"--policy-class {ref}: cannot import {module_name!r} ({exc})",
            hint="name an importable module:Class (the module on sys.path or PYTHONPATH, for "
            "example PYTHONPATH=.)",
        ) from None
    except Exception as exc:  # noqa: BLE001 - the user's module failed while it ran: one line, theirs
        raise user_error(exc, f"import {module_name}") from None
    for part in qualname.split("."):
        if not hasattr(found, part):
            close = difflib.get_close_matches(part, [n for n in dir(found) if not n.startswith("_")], n=1)
            raise UsageError(
                f"--policy-class {ref}: {getattr(found, '__name__', module_name)!r} has no {part!r}",
                hint=f"did you mean {close[0]}?" if close else f"name a class defined in {module_name}",
            )
        found = getattr(found, part)
    if not inspect.isclass(found):
        raise UsageError(
            f"--policy-class {ref}: {qualname} is a {type(found).__name__}, not a class",
            hint="name the class: zoo constructs it for the env",
        )
    return found


def constructor_kind(cls: type) -> str:
    """``"env"`` for ``cls(env, seed)``, ``"spaces"`` for ``cls(observation_space, action_space)``: read from
    the names of its first two positional parameters (any further parameter must have a default)."""
    try:
        params = list(inspect.signature(cls).parameters.values())
    except (TypeError, ValueError):
        raise ZooError(
            f"{cls.__qualname__}: zoo cannot read its constructor's signature", hint=_CONTRACT_HINT
        ) from None
    positional = [p for p in params if p.kind in _POSITIONAL]
    kind = CONSTRUCTORS.get(tuple(p.name for p in positional[:2]))
    rest = [p for p in params if p not in positional[:2]]
    required = [p.name for p in rest if p.default is inspect.Parameter.empty and p.kind not in _VARIADIC]
    shown = f"{cls.__qualname__}{inspect.signature(cls)}"
    hint = "name its first two parameters env, seed or observation_space, action_space; default any others"
    if kind is None:
        raise ZooError(f"{shown} takes neither (env, seed) nor (observation_space, action_space)", hint=hint)
    if required:
        raise ZooError(
            f"{shown}: zoo passes only the first two, and {', '.join(required)} has no default", hint=hint
        )
    return kind


def action_method(obj: Any, name: str) -> str:
    """The first of :data:`ACTION_METHODS` that ``obj`` (a class, or a loaded object) has."""
    for method in ACTION_METHODS:
        if callable(getattr(obj, method, None)):
            return method
    raise ZooError(
        f"{name} has none of get_action(obs), predict(obs, deterministic=...), act(obs)", hint=_CONTRACT_HINT
    )


def construct(cls: type, kind: str, make_env: Callable[[], Any], spaces: tuple, seed: int) -> Any:
    """An instance of ``cls``: given one eval env (closed once the constructor returns) and the seed, or the
    eval env's spaces."""
    if kind == "spaces":
        return call_user(cls, *spaces, called=f"{cls.__qualname__}(observation_space, action_space)")
    env = make_env()
    try:
        return call_user(cls, env, seed, called=f"{cls.__qualname__}(env, seed={seed})")
    finally:
        env.close()


def load_weights(policy: Any, path: Path) -> None:
    """``policy.load(path)``: the user's class reads its own file (zoo does not open it)."""
    name = type(policy).__qualname__
    if not callable(getattr(policy, "load", None)):
        raise ZooError(
            f"{name} has no load(path) method to read {path}",
            hint="add load(self, path), or drop TARGET to evaluate the class as constructed",
        )
    call_user(policy.load, str(path), called=f"{name}.load({str(path)!r})")


def call_user(fn: Callable, *args: Any, called: str, who: str = "your policy class", **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, an exception it raises turned into :func:`user_error`'s one line."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - whatever the user's code raises is reported as theirs
        raise user_error(exc, called, who) from None


def seed_user_code(seed: int) -> None:
    """Seed the global generators a user's code draws from (``random``, numpy's, torch's) with the eval
    seed before it is constructed or unpickled: its own randomness (MJRL samples with ``np.random``) then
    repeats with the seed, as every other policy's does."""
    import random

    import numpy as np
    import torch  # zoo's own dependency, imported already by the device check

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
