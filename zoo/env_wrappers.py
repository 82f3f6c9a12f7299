"""Env wrappers a run's own config names (rl_zoo3's ``env_wrapper``), built only from an allowlist.

A training config that names a wrapper class is a request to import and run that class. zoo does so
for the well-known classes below, each a gymnasium wrapper whose constructor only stores its
arguments and whose steps only transform observations, actions or rewards; any other class is
refused with one line naming it, and runs only when the user names it too (``--trust-wrapper
module.Class``: it is user code, imported and run as is).

A wrapper is a :class:`WrapperRef`: its dotted class name and its keyword arguments, frozen so that an
:class:`~zoo.envs.EnvSpec` holding it stays hashable (the spaces of a spec are probed once) and
serializable (an exported policy's sidecar records the stack it was trained behind).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from zoo.errors import RefusedError, ZooError

_ATARI = "stable_baselines3.common.atari_wrappers"
_RLZOO = "rl_zoo3.wrappers"
_GYM = "gymnasium.wrappers"

#: The classes a config may name without --trust-wrapper, and why running them is harmless.
ALLOWED: dict[str, str] = {
    **{
        f"{_ATARI}.{name}": "SB3's Atari preprocessing (DeepMind's, as in the Nature DQN paper)"
        for name in (
            "AtariWrapper",
            "NoopResetEnv",
            "MaxAndSkipEnv",
            "EpisodicLifeEnv",
            "FireResetEnv",
            "WarpFrame",
            "ClipRewardEnv",
            "StickyActionEnv",
        )
    },
    "sb3_contrib.common.wrappers.TimeFeatureWrapper": "adds the remaining-time feature (sb3-contrib)",
    "sb3_contrib.common.wrappers.time_feature.TimeFeatureWrapper": "the same class, by its module",
    "rl_zoo3.wrappers.TimeFeatureWrapper": "sb3-contrib's TimeFeatureWrapper, as rl_zoo3 re-exports it",
    **{
        f"{_RLZOO}.{name}": "rl_zoo3's own wrapper: observation/action/reward transforms"
        for name in (
            "HistoryWrapper",
            "HistoryWrapperObsDict",
            "FrameSkip",
            "MaskVelocityWrapper",
            "TruncatedOnSuccessWrapper",
            "ActionNoiseWrapper",
            "ActionSmoothingWrapper",
            "DelayedRewardWrapper",
            "YAMLCompatResizeObservation",
        )
    },
    **{
        f"{_GYM}.{name}": "gymnasium's own wrapper"
        for name in (
            "TimeLimit",
            "ClipAction",
            "RescaleAction",
            "FlattenObservation",
            "FilterObservation",
            "GrayscaleObservation",
            "ResizeObservation",
            "ReshapeObservation",
            "DtypeObservation",
            "RescaleObservation",
            "TimeAwareObservation",
            "FrameStackObservation",
            "MaxAndSkipObservation",
            "AtariPreprocessing",
            "StickyAction",
        )
    },
    **{
        f"minigrid.wrappers.{name}": "MiniGrid's observation wrapper"
        for name in ("FlatObsWrapper", "ImgObsWrapper", "OneHotPartialObsWrapper", "RGBImgObsWrapper")
    },
    "zoo.env_wrappers.StackedFrames": "zoo's frame stack with SB3 VecFrameStack's semantics",
}

#: The trust flag, as every refusal names it.
TRUST_FLAG = "--trust-wrapper"


def freeze(value: Any) -> Any:
    """A hashable copy of YAML/JSON data: mappings become sorted pairs, lists tuples."""
    if isinstance(value, dict):
        return tuple(sorted((str(k), freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    return value


def thaw_kwargs(pairs: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    """Frozen keyword arguments back as a dict (nested values stay tuples: wrappers take sequences)."""
    return {key: value for key, value in pairs}


@dataclass(frozen=True)
class WrapperRef:
    """One wrapper of an env stack: ``module.Class`` and its keyword arguments (frozen)."""

    name: str
    kwargs: tuple[tuple[str, Any], ...] = ()

    def to_json(self) -> dict:
        return {"class": self.name, "kwargs": jsonable(thaw_kwargs(self.kwargs))}

    @classmethod
    def from_json(cls, data: dict) -> WrapperRef:
        return cls(str(data["class"]), freeze(dict(data.get("kwargs") or {})))


def jsonable(value: Any) -> Any:
    """Frozen or YAML data as JSON holds it: tuples back to lists (for sidecars and check's details)."""
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [jsonable(v) for v in value]
    return value


def describe(ref: WrapperRef) -> str:
    """One wrapper in words, for a deployment to redo it: ``module.Class(key=value)``; zoo's own frame stack
    by what it does."""
    kwargs = thaw_kwargs(ref.kwargs)
    if ref.name == "zoo.env_wrappers.StackedFrames":
        return (
            f"SB3 VecFrameStack: the last {kwargs.get('n_stack')} observations on the channel axis (last for "
            "channel-last images), zeros before an episode's first"
        )
    return f"{ref.name}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})"


def refuse_untrusted(refs: Iterable[WrapperRef], trusted: Iterable[str], where: str) -> None:
    """Raise for the first wrapper neither on the allowlist nor named by the user."""
    trusted = set(trusted)
    for ref in refs:
        if ref.name not in ALLOWED and ref.name not in trusted:
            raise RefusedError(
                f"{where} names the env wrapper {ref.name}, which is not on zoo's allowlist",
                hint=f"if you trust that code, pass {TRUST_FLAG} {ref.name} (it runs it); "
                "see docs/frameworks/sb3.md for the allowlist",
            )


def _import(name: str) -> type:
    module_name, _, class_name = name.rpartition(".")
    if not module_name:
        raise ZooError(f"env wrapper {name!r} is not a dotted module.Class name")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ZooError(
            f"env wrapper {name}: cannot import {module_name} ({exc})",
            hint="install the package that provides it (rl_zoo3's: the rlzoo3 extra)",
        ) from None
    cls = getattr(module, class_name, None)
    if not isinstance(cls, type):
        raise ZooError(f"env wrapper {name}: {module_name} has no class {class_name}")
    return cls


def apply(env: Any, refs: Iterable[WrapperRef], trusted: Iterable[str] = ()) -> Any:
    """``env`` behind each wrapper in order; the allowlist is checked again here, where the code runs."""
    refs = list(refs)
    refuse_untrusted(refs, trusted, "the env spec")
    for ref in refs:
        cls = _import(ref.name)
        kwargs = thaw_kwargs(ref.kwargs)
        try:
            inspect.signature(cls).bind(env, **kwargs)
        except TypeError as exc:
            raise ZooError(
                f"env wrapper {ref.name}: {exc}", hint="check the wrapper's arguments in the run's config"
            ) from None
        env = cls(env, **kwargs)
    return env


def __getattr__(name: str) -> Any:
    """``StackedFrames``, built on first use so that importing zoo imports neither gymnasium nor SB3."""
    if name == "StackedFrames":
        return _stacked_frames_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@lru_cache(maxsize=1)
def _stacked_frames_class() -> type:
    import gymnasium as gym
    import numpy as np
    from stable_baselines3.common.vec_env.stacked_observations import StackedObservations

    class StackedFrames(gym.Wrapper):
        """SB3's ``VecFrameStack`` for one env: the last ``n_stack`` observations, zeros before the first.

        SB3 stacks along the channel axis (last for channel-last images, first for channel-first ones,
        the last axis for vectors) and starts each episode from zeros; gymnasium's
        ``FrameStackObservation`` adds a new leading axis and repeats the reset observation. A policy
        trained behind ``VecFrameStack`` must see SB3's stack, so this runs SB3's own
        ``StackedObservations`` on a batch of one.
        """

        def __init__(self, env, n_stack: int, channels_order: str | None = None):
            super().__init__(env)
            self.stack = StackedObservations(1, int(n_stack), env.observation_space, channels_order)
            self.observation_space = self.stack.stacked_observation_space

        def reset(self, **kwargs):
            obs, info = self.env.reset(**kwargs)
            return _first(self.stack.reset(_batch(obs))), info

        def step(self, action):
            obs, reward, terminated, truncated, info = self.env.step(action)
            # the episode's end is handled by the next reset, as VecFrameStack's is by its auto-reset
            stacked, _ = self.stack.update(_batch(obs), np.zeros(1, dtype=bool), [{}])
            return _first(stacked), reward, terminated, truncated, info

    StackedFrames.__module__ = __name__
    return StackedFrames


def _batch(obs: Any) -> Any:
    import numpy as np

    return {k: v[None] for k, v in obs.items()} if isinstance(obs, dict) else np.asarray(obs)[None]


def _first(obs: Any) -> Any:
    return {k: v[0].copy() for k, v in obs.items()} if isinstance(obs, dict) else obs[0].copy()
