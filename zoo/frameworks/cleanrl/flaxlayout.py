"""CleanRL's JAX checkpoints: a flax msgpack file split into the parts the registry names.

A ``layout: {kind: flax}`` entry says where each part's params sit in the restored tree
(``paths: {part: "dotted.path"}``, ``""`` for the whole file; list items are ``"0"``, ``"1"``, ...,
as ``flax.serialization.to_bytes`` writes them) and, for scripts that save ``vars(args)`` beside
the params, where those are (``args_path``) and which of them the network needs (``model_kwargs``).
The parts are then checked and built by the registry's model classes, torch ports of the flax
modules (:mod:`zoo.frameworks.cleanrl.flax_models`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from zoo.errors import LayoutMismatch

if TYPE_CHECKING:
    from zoo.registry import Entry

_HINT = "check --exp-name, or that the file was written by this experiment's script"


def entry_problem(raw: dict) -> tuple[str, str] | None:
    """The flax-specific fields of a CleanRL entry: every part has a path, the format says msgpack."""
    layout = raw["layout"]
    if raw.get("format") != "flax-msgpack":
        return "format", "layout kind 'flax' files are 'flax-msgpack'"
    paths = layout.get("paths")
    if not isinstance(paths, dict) or set(paths) != set(layout["parts"]):
        return "layout.paths", "expected {part: dotted path in the file} for every layout part"
    if not all(isinstance(p, str) for p in paths.values()):
        return "layout.paths", "each path is a string ('' for the whole file, '0' for a list's first item)"
    if "args_path" in layout and not isinstance(layout["args_path"], str):
        return "layout.args_path", "expected a dotted path string"
    return None


def at_path(tree: Any, path: str, what: str) -> Any:
    """The subtree at a dotted ``path`` (``""``: the tree itself)."""
    node = tree
    for key in filter(None, path.split(".")):
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            found = sorted(map(str, node))[:6] if isinstance(node, Mapping) else type(node).__name__
            raise LayoutMismatch(f"{what}: no {path!r} in the file (found {found})", _HINT)
    return node


def split(entry: Entry, content: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Per-part params trees and the model kwargs stored in ``vars(args)``."""
    layout = entry.layout
    if not isinstance(content, Mapping):
        raise LayoutMismatch(
            f"{entry.name} files hold a tree of params, this one holds a {type(content).__name__}", _HINT
        )
    parts = {part: at_path(content, layout["paths"][part], entry.name) for part in layout["parts"]}
    kwargs: dict[str, Any] = {}
    if "args_path" in layout:
        args = at_path(content, layout["args_path"], entry.name)
        missing = [
            k for k in layout.get("model_kwargs", []) if not isinstance(args, Mapping) or k not in args
        ]
        if missing:
            raise LayoutMismatch(f"{entry.name} file lacks {', '.join(missing)} in its saved args", _HINT)
        kwargs = {k: _plain(args[k]) for k in layout.get("model_kwargs", [])}
    return parts, kwargs


def _plain(value: Any) -> Any:
    """A saved arg as a Python number (msgpack may hand back numpy scalars)."""
    return value.item() if hasattr(value, "item") else value


def port(entry: Entry, part: str):
    """The registry's torch port class for ``part`` (a :class:`~zoo.frameworks.cleanrl.flax_models.FlaxPort`)."""
    from zoo.frameworks.cleanrl.checkpoint import model_class

    return model_class(entry, part)


def fit_problem(entry: Entry, parts: dict[str, Any], kwargs: dict, spaces: tuple) -> tuple[str, str] | None:
    """``(where, problem)`` for the first param of any part whose key or shape the port does not take."""
    from zoo.artifacts.flaxfile import tensor_shapes

    for part, tree in parts.items():
        expected = port(entry, part).flax_shapes(*spaces, **kwargs)
        found = tensor_shapes(tree)
        problems = [f"missing {k}" for k in expected if k not in found]
        problems += [
            f"{k} is {found[k]} in the file, the env needs {expected[k]}"
            for k in expected
            if k in found and found[k] != expected[k]
        ]
        problems += [f"unexpected {k}" for k in found if k not in expected]
        if problems:
            more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
            return (f" in {part}" if len(parts) > 1 else ""), f"{problems[0]}{more}"
    return None


def build(entry: Entry, part: str, tree: Any, spaces: tuple, kwargs: dict, device: str):
    """The torch port of ``part``, its weights copied from the flax params, on ``device``."""
    return port(entry, part).from_flax(tree, *spaces, **kwargs).to(device)
