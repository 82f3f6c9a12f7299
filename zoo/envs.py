"""Evaluation environments: one factory, a few named wrapper presets.

A registry entry names a preset (``env: {wrappers: atari}``); this module turns
``(env_id, preset)`` into the exact wrapper stack the training script used, on
gymnasium 1.x. ``RecordEpisodeStatistics`` always sits directly on the raw env
so that returns are the raw game score, whatever reward shaping or episodic-life
trick the training stack adds on top.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from zoo.errors import ZooError

#: Env families that need an optional extra, recognised by id without importing gymnasium.
MUJOCO_ENVS = (
    "Ant", "HalfCheetah", "Hopper", "Humanoid", "HumanoidStandup", "InvertedDoublePendulum",
    "InvertedPendulum", "Pusher", "Reacher", "Swimmer", "Walker2d",
)  # fmt: skip
PRESETS = ("classic", "normalized_continuous", "atari")

#: What each preset's wrappers do to observations and actions, which a deployed (exported) policy
#: must reproduce itself; the exporter writes these into the sidecar's ``left_to_caller``.
PRESET_DEPLOYMENT_NOTES = {
    "classic": [],
    "normalized_continuous": [
        "normalize observations with running mean/variance (gymnasium NormalizeObservation) and clip to "
        "+-10: the training script did not save these statistics, so they are not in the file",
        "clip actions to the action bounds (gymnasium ClipAction)",
    ],
    "atari": [
        "Atari preprocessing: no-op reset (up to 30), max-pool and skip 4 frames, fire on reset, 84x84 "
        "grayscale, stack the last 4 frames; pass pixel values 0..255 as float32",
    ],
}


def extras_for_env(env_id: str) -> list[str]:
    """Optional dependency groups an env id needs (cheap: no imports)."""
    base = env_id.split("/")[-1].split("-v")[0]
    if base in MUJOCO_ENVS:
        return ["mujoco"]
    if env_id.startswith("ALE/") or "NoFrameskip" in env_id:
        return ["atari"]
    return []


def missing_modules_for_extras(extras: list[str]) -> list[str]:
    """Extras whose import module is absent (find_spec, nothing imported)."""
    from importlib.util import find_spec

    module = {"mujoco": "mujoco", "atari": "ale_py", "video": "moviepy"}
    return [e for e in extras if e in module and find_spec(module[e]) is None]


@dataclass(frozen=True)
class EnvSpec:
    """What the evaluator needs to build one env: id, preset and video settings."""

    env_id: str
    preset: str = "classic"
    video_dir: str | None = None


def _record_video(env, video_dir: str):
    """RecordVideo whose failures (no renderer, no encoder, no GL) become one warning, never a failed eval."""
    from gymnasium.wrappers import RecordVideo

    class _WarnOnFailure(RecordVideo):
        broken = False

        def _give_up(self, exc: Exception) -> None:
            if not self.broken:
                warnings.warn(f"video capture stopped: {exc}", stacklevel=2)
            self.broken, self.recording, self.recorded_frames = True, False, []

        def start_recording(self, video_name: str) -> None:
            if not self.broken:
                super().start_recording(video_name)

        def _capture_frame(self) -> None:
            try:
                super()._capture_frame()
            except Exception as exc:  # noqa: BLE001 - any render error must not fail the eval
                self._give_up(exc)

        def stop_recording(self) -> None:
            try:
                super().stop_recording()
            except Exception as exc:  # noqa: BLE001 - any encoder error must not fail the eval
                self._give_up(exc)

    try:
        return _WarnOnFailure(env, video_dir, episode_trigger=lambda _: True, disable_logger=True)
    except Exception as exc:  # noqa: BLE001
        warnings.warn(f"video capture disabled: {exc}", stacklevel=2)
        return env


def _make_base(spec: EnvSpec, record: bool):
    import gymnasium as gym

    if spec.preset == "atari":
        _import_ale()
    kwargs = {"render_mode": "rgb_array"} if record else {}
    try:
        env = gym.make(spec.env_id, **kwargs)
    except gym.error.Error as exc:
        extras = extras_for_env(spec.env_id)
        hint = f" (install the extra: pip install 'rl-zoo-hub[{extras[0]}]')" if extras else ""
        raise ZooError(f"cannot create env {spec.env_id!r}: {exc}{hint}") from None
    except ImportError as exc:
        raise ZooError(f"cannot create env {spec.env_id!r}: {exc}") from None
    if record:
        env = _record_video(env, spec.video_dir)
    return env


def _import_ale() -> None:
    try:
        import ale_py  # noqa: F401 - registers the ALE envs with gymnasium
    except ImportError:
        raise ZooError("Atari envs need the atari extra: pip install 'rl-zoo-hub[atari]'") from None


def _wrap(env, preset: str):
    import gymnasium as gym
    import numpy as np

    if preset == "classic":
        return gym.wrappers.RecordEpisodeStatistics(env)
    if preset == "normalized_continuous":
        # CleanRL ppo_continuous_action: the observation normalizer is not saved with the
        # model, so (like CleanRL's own eval) statistics are re-estimated online.
        env = gym.wrappers.FlattenObservation(env)
        env = gym.wrappers.RecordEpisodeStatistics(env)
        env = gym.wrappers.ClipAction(env)
        env = gym.wrappers.NormalizeObservation(env)
        return gym.wrappers.TransformObservation(
            env, lambda obs: np.clip(obs, -10, 10), env.observation_space
        )
    if preset == "atari":
        from stable_baselines3.common.atari_wrappers import (
            ClipRewardEnv,
            EpisodicLifeEnv,
            FireResetEnv,
            MaxAndSkipEnv,
            NoopResetEnv,
        )

        env = gym.wrappers.RecordEpisodeStatistics(env)
        env = NoopResetEnv(env, noop_max=30)
        env = MaxAndSkipEnv(env, skip=4)
        env = EpisodicLifeEnv(env)
        if "FIRE" in env.unwrapped.get_action_meanings():
            env = FireResetEnv(env)
        env = ClipRewardEnv(env)
        env = gym.wrappers.ResizeObservation(env, (84, 84))
        env = gym.wrappers.GrayscaleObservation(env)
        return gym.wrappers.FrameStackObservation(env, 4)
    raise ZooError(f"unknown env preset {preset!r}; known: {', '.join(PRESETS)}")


def env_factory(spec: EnvSpec, index: int) -> Callable:
    """A thunk for the vector env; only env 0 records video."""

    def thunk():
        return _wrap(_make_base(spec, record=spec.video_dir is not None and index == 0), spec.preset)

    return thunk


def make_vector_env(spec: EnvSpec, num_envs: int):
    """A SyncVectorEnv: on few cores it beats AsyncVectorEnv by 2-9x for these envs."""
    import gymnasium as gym

    if spec.video_dir is not None:
        os.environ.setdefault("MUJOCO_GL", "egl")
    return gym.vector.SyncVectorEnv([env_factory(spec, i) for i in range(num_envs)])


def env_spec_for(entry, env_id: str, video_dir: str | None = None) -> EnvSpec:
    """A registry entry's eval env: its preset on ``env_id`` (every adapter's ``env_spec``)."""
    return EnvSpec(env_id=env_id, preset=entry.env["wrappers"], video_dir=video_dir)


def probe_spaces(spec: EnvSpec):
    """``(single_observation_space, single_action_space)`` of the wrapped env, built once per env and preset."""
    return _probe(spec.env_id, spec.preset)


@lru_cache(maxsize=64)
def _probe(env_id: str, preset: str):
    env = env_factory(EnvSpec(env_id, preset), 0)()
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()
