"""CleanRL checkpoint layouts, expected shapes and safe loading.

One set of functions serves both ``zoo check`` (on the static description of a
file, :class:`~zoo.artifacts.pickles.TensorInfo` leaves, no torch) and ``zoo
eval`` (on real tensors): the registry's ``layout`` says how the training script
wrote the file, and :func:`split_parts` turns either form into per-part state
dicts plus the model kwargs saved beside them.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from zoo.errors import LayoutMismatch, ZooError

if TYPE_CHECKING:
    from zoo.registry import Entry


def _is_state_dict(obj: Any) -> bool:
    return isinstance(obj, Mapping) and bool(obj) and all(hasattr(v, "shape") for v in obj.values())


def _describe(obj: Any) -> str:
    if _is_state_dict(obj):
        return f"a state dict of {len(obj)} tensors"
    if isinstance(obj, Mapping):
        return f"a dict with keys {sorted(map(str, obj))[:6]}"
    if isinstance(obj, tuple | list):
        return f"a {type(obj).__name__} of {len(obj)} items"
    return f"a {type(obj).__name__}"


def split_parts(entry: Entry, obj: Any) -> tuple[dict[str, Mapping], dict[str, Any]]:
    """Per-part state dicts and model kwargs, following ``entry.layout``."""
    layout, parts = entry.layout, entry.parts
    expected = {
        "state_dict": "a plain state dict",
        "dict": f"a dict with {layout.get('weights_key')!r} and {layout.get('args_key')!r}",
        "tuple": f"a tuple of {len(parts)} state dicts ({', '.join(parts)})",
    }[layout["kind"]]
    wrong = LayoutMismatch(
        f"{entry.name} files hold {expected}, this one holds {_describe(obj)}",
        hint="check --exp-name, or that the file was written by this experiment's script",
    )
    if layout["kind"] == "state_dict":
        if not _is_state_dict(obj):
            raise wrong
        return {parts[0]: obj}, {}
    if layout["kind"] == "dict":
        if not isinstance(obj, Mapping) or not _is_state_dict(obj.get(layout["weights_key"])):
            raise wrong
        args = obj.get(layout["args_key"])
        args = args if isinstance(args, Mapping) else {}
        missing = [k for k in layout.get("model_kwargs", []) if k not in args]
        if missing:
            raise LayoutMismatch(f"{entry.name} file lacks {', '.join(missing)} in {layout['args_key']!r}")
        return {parts[0]: obj[layout["weights_key"]]}, {k: args[k] for k in layout.get("model_kwargs", [])}
    if not isinstance(obj, tuple | list) or len(obj) != len(parts) or not all(map(_is_state_dict, obj)):
        raise wrong
    return dict(zip(parts, obj, strict=True)), {}


def model_class(entry: Entry, part: str) -> type:
    module, _, name = entry.model[part].partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ZooError(
            f"registry entry {entry.name!r}: model {entry.model[part]!r} not importable: {exc}"
        ) from None


def vector_env_view(observation_space, action_space) -> SimpleNamespace:
    """What CleanRL's model constructors read from ``envs`` (a 1-env vector env)."""
    from gymnasium.vector.utils import batch_space

    return SimpleNamespace(
        single_observation_space=observation_space,
        single_action_space=action_space,
        observation_space=batch_space(observation_space, 1),
        action_space=batch_space(action_space, 1),
    )


def build_model(entry: Entry, part: str, spaces: tuple, kwargs: Mapping[str, Any], device: str = "cpu"):
    import torch

    with torch.device(device):
        return model_class(entry, part)(vector_env_view(*spaces), **dict(kwargs))


class Shape(tuple):
    """A state-dict key's shape in the registry's model class, plus the other shapes its loader takes.

    A plain ``tuple`` of the model's own shape (so it compares and prints as one); ``alternatives`` are
    the shapes older or newer CleanRL scripts saved for the same key, which the model class reshapes on
    ``load_state_dict`` (:func:`zoo.frameworks.cleanrl.models.saved_shape_alternatives`).
    """

    alternatives: tuple[tuple[int, ...], ...]

    def __new__(cls, shape, alternatives=()) -> Shape:
        self = super().__new__(cls, tuple(shape))
        self.alternatives = tuple(tuple(a) for a in alternatives if tuple(a) != tuple(shape))
        return self

    def accepts(self, shape) -> bool:
        shape = tuple(shape)
        return shape == tuple(self) or shape in self.alternatives

    def describe(self) -> str:
        return " or ".join(str(s) for s in (tuple(self), *self.alternatives))


def expected_shapes(entry: Entry, part: str, spaces: tuple, kwargs: Mapping[str, Any]) -> dict[str, Shape]:
    """State-dict shapes the registry's model class has for these spaces (meta device: no memory), each
    with the alternative shapes the class's loader also accepts for that key."""
    from zoo.frameworks.cleanrl.models import saved_shape_alternatives

    model = build_model(entry, part, spaces, kwargs, device="meta")
    alternatives = saved_shape_alternatives(model)
    return {k: Shape(v.shape, alternatives.get(k, ())) for k, v in model.state_dict().items()}


def shape_problems(found: Mapping[str, Any], expected: Mapping[str, tuple]) -> list[str]:
    """Human lines for each key missing, unexpected or of a shape the loader does not take."""
    problems = []
    for key, shape in expected.items():
        if key not in found:
            problems.append(f"missing {key}")
            continue
        shape = shape if isinstance(shape, Shape) else Shape(shape)
        if not shape.accepts(found[key].shape):
            problems.append(
                f"{key} is {tuple(found[key].shape)} in the file, the env needs {shape.describe()}"
            )
    problems += [f"unexpected {key}" for key in found if key not in expected]
    return problems
