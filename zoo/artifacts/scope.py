"""How far an inspection may reach beyond reading bytes: the one switch ``zoo doctor`` turns.

``zoo check`` compares a model's spaces with its eval env, which means building that env (never
stepping it). ``zoo doctor`` promises more: it creates an env only when asked (``--probe-env``),
and then creates and resets it once, closes it, and reports what it saw. The adapters do not know
which command asked; they call :func:`env_spaces` and the scope in force decides.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

#: How the spaces of an eval env are found: ``probe(spec) -> (observation_space, action_space)``, or
#: None when no env may be created (the comparison is then skipped, not failed).
Spaces = tuple[Any, Any]
SpaceProbe = Callable[[Any], Spaces | None]

_PROBE: ContextVar[SpaceProbe | None | str] = ContextVar("zoo_space_probe", default="default")


def env_spaces(spec: Any) -> Spaces | None:
    """The eval env's spaces as the scope allows: zoo's probe by default, the scope's own, or None."""
    probe = _PROBE.get()
    if probe == "default":
        from zoo.envs import probe_spaces

        return probe_spaces(spec)
    return probe(spec) if callable(probe) else None


@contextlib.contextmanager
def space_probe(probe: SpaceProbe | None) -> Iterator[None]:
    """Within the block, inspections find env spaces with ``probe`` (None: they create no env)."""
    token = _PROBE.set(probe)
    try:
        yield
    finally:
        _PROBE.reset(token)
