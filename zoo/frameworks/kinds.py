"""Space kinds: what a policy acts on and reads, compared with an env's before any shape is.

A policy for discrete actions meets a continuous env (a CNN meets vector observations) in every
command that checks or loads it: ``zoo check --env-id``, ``eval``, ``enjoy``, ``export``, ``watch``,
``doctor --probe-env``. Each adapter states its policy's :class:`SpaceKinds`, and its fit check
(:meth:`zoo.frameworks.base.Adapter.fitting_spaces`, which is :meth:`SpaceKinds.fitting`) compares them
with the eval env's spaces first, so that the mismatch is one line naming both kinds, never the error a
model constructor raises on a space it was not written for (``'Box' object has no attribute 'n'``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from zoo.errors import LayoutMismatch

if TYPE_CHECKING:
    from zoo.artifacts.scope import Spaces

#: An action space kind (gymnasium's class name) in the words of an error's hint.
ACTION_WORDS = {
    "Discrete": "discrete",
    "Box": "continuous",
    "MultiDiscrete": "multi-discrete",
    "MultiBinary": "binary",
}


class SpaceMismatch(LayoutMismatch):
    """A policy meets an env whose spaces are of another kind than the ones it acts on or reads."""


def action_kind(space: Any) -> str:
    """An action space's kind: gymnasium's class name (``Discrete``, ``Box``, ``MultiDiscrete``...)."""
    return type(space).__name__


def observation_kind(space: Any) -> str:
    """An observation space's kind: ``image`` (a Box of three dimensions, frames with channels),
    ``vector`` (any other Box), else gymnasium's class name (``Dict``, ``Discrete``...)."""
    from gymnasium import spaces

    if isinstance(space, spaces.Box):
        return "image" if len(space.shape) == 3 else "vector"
    return type(space).__name__


def space_text(space: Any) -> str:
    """A space in a few characters: a Box by its shape (its bounds fill a screen), others as gymnasium
    prints them."""
    from gymnasium import spaces

    if isinstance(space, spaces.Box):
        return f"Box{space.shape}"
    if isinstance(space, spaces.Dict):
        return "Dict(" + ", ".join(f"{k}: {space_text(v)}" for k, v in space.spaces.items()) + ")"
    return str(space)


@dataclass(frozen=True)
class SpaceKinds:
    """The kinds of space a policy acts on and reads; None: any (the adapter cannot tell, or the
    policy takes several, and the shape comparison that follows decides)."""

    action: str | None = None  # an action_kind: "Discrete", "Box"...
    observation: str | None = None  # an observation_kind: "vector", "image"...
    #: Who says so, when not the experiment itself (skrl: "a gaussian policy, as agent.yaml says"): the error names it.
    said_by: str | None = None

    @classmethod
    def of(cls, observation_space: Any, action_space: Any) -> SpaceKinds:
        """The kinds of the spaces a model was saved with (an SB3 zip states them)."""
        return cls(action_kind(action_space), observation_kind(observation_space))

    def fitting(self, spec: Any, name: str, env_id: str) -> Spaces | None:
        """``spec``'s ``(observation_space, action_space)``, refused in one line when they are not of these kinds;
        None when the inspection scope creates no env (:mod:`zoo.artifacts.scope`) or ``spec`` is the user's
        tensor env, which is not built before the rollout. An env a preset cannot wrap (the atari preset on
        CartPole) is refused by its kinds as the env was made, when they differ."""
        from zoo.artifacts.scope import env_spaces
        from zoo.envs import PresetMismatch

        try:
            spaces = env_spaces(spec)
        except PresetMismatch as exc:
            raise self.mismatch(name, env_id, exc.spaces) or exc from None
        problem = spaces and self.mismatch(name, env_id, spaces)
        if problem:
            raise problem
        return spaces

    def mismatch(self, name: str, env_id: str, spaces: Spaces) -> SpaceMismatch | None:
        """The one-line error when ``env_id``'s ``(observation_space, action_space)`` are of other kinds
        than ``name`` (the experiment) acts on and reads; None when they are of the same kinds."""
        observation_space, action_space = spaces
        name = f"{name} ({self.said_by})" if self.said_by else name
        if self.action is not None and action_kind(action_space) != self.action:
            words = ACTION_WORDS.get(self.action, self.action)
            return SpaceMismatch(
                f"{name} acts on a {self.action} action space; {env_id}'s is {space_text(action_space)}",
                hint=f"evaluate it on an env with {words} actions",
            )
        found = observation_kind(observation_space)
        if self.observation is not None and found != self.observation:
            return SpaceMismatch(
                f"{name} reads {self.observation} observations; {env_id}'s are {found} "
                f"observations, {space_text(observation_space)}",
                hint=f"evaluate it on an env with {self.observation} observations",
            )
        return None
