"""Framework adapters: one package per training library, ``zoo/frameworks/<name>/``, or a plug-in.

Each adapter is an :class:`~zoo.frameworks.base.Adapter`; the registry's ``framework`` field names it.
zoo's own are the packages here (``zoo/frameworks/<name>/``, each with an ``ADAPTER``); a package outside
zoo plugs one in through the entry-point group ``zoo.adapters`` (name: the framework's name, value:
``module:ADAPTER``). :func:`get_adapter` is the one way the core finds an adapter, and
:func:`framework_names` lists them all without importing any. Every per-framework fact the core needs
(extras, packages, doctor's training command) is stated by the adapter. See docs/adding-a-framework.md.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from pathlib import Path
from typing import TYPE_CHECKING

from zoo.errors import ZooError
from zoo.frameworks.base import (
    BEST_MODEL,
    Adapter,
    Checkpoint,
    HubNaming,
    LoadOptions,
    NetworkFlag,
    SavedCheckpoint,
)
from zoo.frameworks.kinds import SpaceKinds, SpaceMismatch

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = [
    "BEST_MODEL",
    "ENTRY_POINT_GROUP",
    "Adapter",
    "Checkpoint",
    "HubNaming",
    "LoadOptions",
    "NetworkFlag",
    "SavedCheckpoint",
    "SpaceKinds",
    "SpaceMismatch",
    "extra_modules",
    "framework_names",
    "get_adapter",
    "plugin_sources",
]

#: The entry-point group third-party adapters register in: ``name = "module:ADAPTER"``.
ENTRY_POINT_GROUP = "zoo.adapters"


@functools.cache
def _builtin() -> tuple[str, ...]:
    """The adapter packages shipped with zoo (listed, not imported)."""
    return tuple(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if m.ispkg)


def _distribution(entry_point: EntryPoint) -> str:
    """The name of the distribution that declares ``entry_point`` (what to fix or uninstall)."""
    dist = getattr(entry_point, "dist", None)
    return dist.name if dist is not None else entry_point.value


@functools.cache
def _plugins() -> dict[str, EntryPoint]:
    """The installed plug-in adapters by framework name, from the installed distributions' metadata (no
    plug-in is imported). A name that a built-in adapter or another plug-in already has is refused.
    When no distribution's entry points name the group (the usual case), ``importlib.metadata`` is not
    asked: building every distribution's entry points costs ``zoo check`` and ``zoo --version`` more than
    the rest of their start-up."""
    from zoo.dist_info import may_declare

    if not may_declare(ENTRY_POINT_GROUP):
        return {}
    from importlib.metadata import entry_points

    found: dict[str, EntryPoint] = {}
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        name, dist = entry_point.name, _distribution(entry_point)
        if name in _builtin():
            raise ZooError(
                f"adapter plug-in {name!r} of {dist} has the name of zoo's built-in {name} adapter",
                hint=f"rename the {ENTRY_POINT_GROUP} entry point in {dist}, or uninstall it",
            )
        if name in found and _distribution(found[name]) != dist:
            raise ZooError(
                f"adapter plug-in {name!r} is declared by both {_distribution(found[name])} and {dist}",
                hint="uninstall one of them",
            )
        found[name] = entry_point
    return found


def framework_names() -> list[str]:
    """Every framework zoo can load: its own adapter packages and the installed plug-ins (none imported)."""
    return sorted({*_builtin(), *_plugins()})


@functools.cache
def get_adapter(framework: str) -> Adapter:
    """The adapter of a framework named in the registry; a clear error for a name with no adapter, and a
    one-line one naming the distribution for a plug-in that fails to load."""
    if framework in _builtin():
        adapter = importlib.import_module(f"zoo.frameworks.{framework}").ADAPTER
        if not isinstance(adapter, Adapter) or adapter.name != framework:
            raise TypeError(f"zoo.frameworks.{framework}.ADAPTER must be an Adapter named {framework!r}")
        return adapter
    entry_point = _plugins().get(framework)
    if entry_point is None:
        raise ZooError(
            f"framework {framework!r} has no adapter in zoo/frameworks/ nor a {ENTRY_POINT_GROUP} plug-in",
            hint=f"known: {', '.join(framework_names())}",
        )
    dist = _distribution(entry_point)
    try:
        adapter = entry_point.load()
    except Exception as exc:  # a third party's import: any failure is that package's, said in one line
        said = str(exc).strip().splitlines()
        raise ZooError(
            f"adapter plug-in {framework!r} of {dist} failed to load ({entry_point.value}): "
            f"{type(exc).__name__}{': ' + said[0] if said else ''}",
            hint=f"fix or reinstall {dist}, or uninstall it",
        ) from None
    if not isinstance(adapter, Adapter) or getattr(adapter, "name", None) != framework:
        raise ZooError(
            f"adapter plug-in {framework!r} of {dist}: {entry_point.value} is not an Adapter named {framework!r}",
            hint=f"the {ENTRY_POINT_GROUP} entry point must name an instance of zoo.frameworks.Adapter",
        )
    return adapter


def extra_modules(extra: str, adapter: Adapter | None = None) -> tuple[str, ...] | None:
    """The modules zoo's extra ``extra`` is known by: an env extra's (:data:`zoo.envs.EXTRA_MODULES`), else the
    adapter's that owns it (``adapter`` is asked first, so that an entry's own extras import no other
    adapter). None: no such extra."""
    from zoo.envs import EXTRA_MODULES

    if extra in EXTRA_MODULES:
        return EXTRA_MODULES[extra]
    if adapter is not None and extra in adapter.extra_modules:
        return adapter.extra_modules[extra]
    for name in framework_names():
        owned = get_adapter(name).extra_modules
        if extra in owned:
            return owned[extra]
    return None


def plugin_sources() -> list[Path]:
    """The Python files of every installed plug-in's top-level package: what ``zoo check``'s memory of verdicts
    stamps beside zoo's own sources, so that a changed plug-in means "read again"."""
    from importlib.util import find_spec

    files: list[Path] = []
    for name in sorted(_plugins()):
        spec = find_spec(type(get_adapter(name)).__module__.split(".")[0])
        if spec is not None and spec.submodule_search_locations:
            files += sorted(
                p for folder in spec.submodule_search_locations for p in Path(folder).rglob("*.py")
            )
        elif spec is not None and spec.origin:
            files.append(Path(spec.origin))
    return files
