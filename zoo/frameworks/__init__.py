"""Framework adapters: one package per training library, ``zoo/frameworks/<name>/``.

Each package's ``ADAPTER`` is an :class:`~zoo.frameworks.base.Adapter`; the registry's ``framework``
field names the package. :func:`get_adapter` is the one way the core finds an adapter, and
:func:`framework_names` lists the installed ones. Adding a framework is one package here, its
registry entries, its extra in ``pyproject.toml``, its docs page and its tests: see
docs/adding-a-framework.md.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from pathlib import Path

from zoo.errors import ZooError
from zoo.frameworks.base import BEST_MODEL, Adapter, Checkpoint, HubNaming, LoadOptions, SavedCheckpoint
from zoo.frameworks.kinds import SpaceKinds, SpaceMismatch

__all__ = [
    "BEST_MODEL",
    "Adapter",
    "Checkpoint",
    "HubNaming",
    "LoadOptions",
    "SavedCheckpoint",
    "SpaceKinds",
    "SpaceMismatch",
    "framework_names",
    "get_adapter",
]


def framework_names() -> list[str]:
    """The adapter packages shipped with zoo (listed, not imported)."""
    here = Path(__file__).parent
    return sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.ispkg)


@functools.cache
def get_adapter(framework: str) -> Adapter:
    """The adapter of a framework named in the registry; a clear error for a name with no package."""
    if framework not in framework_names():
        raise ZooError(
            f"framework {framework!r} has no adapter in zoo/frameworks/",
            hint=f"known: {', '.join(framework_names())}",
        )
    adapter = importlib.import_module(f"zoo.frameworks.{framework}").ADAPTER
    if not isinstance(adapter, Adapter) or adapter.name != framework:
        raise TypeError(f"zoo.frameworks.{framework}.ADAPTER must be an Adapter named {framework!r}")
    return adapter
