"""Deterministic, seeded, vectorized rollouts -> :class:`EvalResult` -> ``eval.json``.

The evaluator knows nothing about frameworks: it steps a gymnasium vector env
with a :class:`zoo.policy.Policy`. Episodes are counted with per-env quotas
(env ``i`` contributes ``N // K`` episodes, plus one for the first ``N % K``
envs): counting the first ``N`` episodes to finish would over-sample short
episodes and bias the mean down. Returns come from ``RecordEpisodeStatistics``
directly on the raw env, so reward clipping or episodic-life tricks in the
training stack never leak into the reported score. The loop itself is :mod:`zoo.vector_rollout`; where it pays it
goes on in several processes at once (:mod:`zoo.lanes`), with the same episodes. Every rollout is bounded and checked by the rules of
:mod:`zoo.rollout_guard`: a step bound per episode, a wall-time budget, finite actions and returns, and an
env that raises named as the cause.
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

import numpy as np

from zoo.envs import EnvSpec, make_vector_env, reset_restores
from zoo.episodes import Episode, episode_quotas
from zoo.policy import Policy
from zoo.rollout_guard import gym_env_label
from zoo.tensor_env import TensorEnvSpec
from zoo.vector_rollout import action_masks, rollout
from zoo.version import __version__

__all__ = ["EvalResult", "action_masks", "episode_quotas", "evaluate", "resolve_device", "rollout"]


@dataclass
class EvalResult:
    """Everything ``eval.json`` records (DESIGN.md section 4)."""

    task: str
    checkpoint: str
    exp_name: str | None
    framework: str | None
    num_episodes: int
    num_envs: int
    seed: int
    deterministic: bool
    device: str
    episodes: list[Episode]
    wall_clock_seconds: float
    evaluated_at: str = field(default_factory=lambda: _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"))
    zoo_version: str = __version__
    settings: dict = field(default_factory=dict)
    source: dict | None = None
    #: sha256 of the model file's bytes, read before it was loaded: what a sweep's resume and a hub's "verified"
    #: compare (None for a policy class with no file).
    model_sha256: str | None = None
    videos: list[str] = field(default_factory=list)  # replays written (--capture-video), in episode order
    warnings: list[str] = field(default_factory=list)  # what went wrong on the side (a video not recorded)

    @property
    def metrics(self) -> dict:
        returns = np.array([e.return_ for e in self.episodes], dtype=np.float64)
        lengths = np.array([e.length for e in self.episodes], dtype=np.float64)
        successes = [e.success for e in self.episodes if e.success is not None]
        return {
            "return_mean": float(returns.mean()),
            "return_std": float(returns.std()),
            "return_min": float(returns.min()),
            "return_max": float(returns.max()),
            "length_mean": float(lengths.mean()),
            "success_rate": float(np.mean(successes)) if successes else None,
        }

    def to_json(self) -> dict:
        data = asdict(self)
        data["episodes"] = [e.to_json() for e in self.episodes]
        data["metrics"] = self.metrics
        order = [
            "task",
            "checkpoint",
            "model_sha256",
            "source",
            "exp_name",
            "framework",
            "num_episodes",
            "num_envs",
            "metrics",
            "episodes",
            "wall_clock_seconds",
            "seed",
            "deterministic",
            "device",
            "settings",
            "videos",
            "evaluated_at",
            "zoo_version",
        ]
        return {k: data[k] for k in order}


@contextmanager
def single_cpu_thread(device: str):
    """One intra-op thread while stepping on the CPU.

    Eval batches are tiny (one observation per env); torch's thread pool then costs
    more than it saves, and on a small machine its threads fight the envs for
    cores (measured: 8x slower per forward pass under load).
    """
    import torch

    if device != "cpu":
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when a GPU is usable, else ``cpu``; ``cuda`` without one is an error."""
    import torch

    from zoo.errors import UnsupportedError

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise UnsupportedError(
            "--device cuda asked for, but no CUDA device is available", hint="use --device cpu"
        )
    return device


def evaluate(
    policy: Policy,
    spec: EnvSpec | TensorEnvSpec,
    *,
    episodes: int,
    num_envs: int,
    seed: int,
    deterministic: bool,
    checkpoint: str,
    exp_name: str | None,
    framework: str | None,
    device: str,
    settings: dict | None = None,
    source: dict | None = None,
    model_sha256: str | None = None,
    on_episode: Callable[[int], None] | None = None,
    envs=None,
    max_seconds: float | None = None,
    lanes: int | None = None,
) -> EvalResult:
    """Run the rollouts and time them; an env built here is always closed, also on failure. A gymnasium ``spec``
    is stepped as a vector env on the host; a :class:`~zoo.tensor_env.TensorEnvSpec` on its device. Each episode
    runs at most ``spec.max_steps`` steps (None: the env's own limit, else the default cap) and the rollout at
    most ``max_seconds`` (None: the default budget); see :mod:`zoo.rollout_guard`.

    ``envs``: an env of ``spec`` that the caller built and keeps for many evaluations (``zoo watch``, which
    must not rebuild the simulator per checkpoint): a vector env (:func:`~zoo.envs.make_vector_env`) of a
    spec whose seeded reset restores everything (:func:`~zoo.envs.reset_restores`), or a tensor env that
    can be reseeded (:func:`~zoo.tensor_env.reseeds`). It starts from the state a fresh one with ``seed``
    would, so the episodes are a fresh env's, and is left open; no other env is taken.

    ``lanes``: processes a gymnasium rollout may be split across (:mod:`zoo.lanes`; None: chosen by its first
    steps, 1: never split); the episodes do not depend on it. A policy on an accelerator, and a rollout that
    records a video, are never split."""
    from zoo.tensor_env import reseeds

    num_envs = max(1, min(num_envs, episodes))
    # an inference engine's own record (--engine onnxruntime: which engine, and its parity evidence)
    settings = {**(settings or {}), **getattr(policy, "engine_record", {})}
    keepable = reseeds(envs) if isinstance(spec, TensorEnvSpec) else reset_restores(spec)
    if envs is not None and (not keepable or envs.num_envs != num_envs):
        raise ValueError(f"a kept env must be a {num_envs}-env env of {spec.env_id} that a seed restores")
    if isinstance(spec, TensorEnvSpec):
        wall, result_episodes = _tensor_rollouts(
            policy, spec, episodes, num_envs, seed, deterministic, device, on_episode, envs, max_seconds
        )
    else:
        kept, who = envs is not None, gym_env_label(spec.env_id)
        envs = envs if kept else make_vector_env(spec, num_envs)
        try:
            with single_cpu_thread(device):
                start = time.perf_counter()
                result_episodes = rollout(
                    policy,
                    envs,
                    episodes,
                    seed,
                    deterministic,
                    on_episode,
                    max_seconds=max_seconds,
                    who=who,
                    lanes=lanes if device == "cpu" and spec.video_dir is None else 1,
                )
                wall = time.perf_counter() - start
        finally:
            if not kept:
                envs.close()
    return EvalResult(
        task=spec.env_id,
        checkpoint=checkpoint,
        exp_name=exp_name,
        framework=framework,
        num_episodes=episodes,
        num_envs=num_envs,
        seed=seed,
        deterministic=deterministic,
        device=device,
        episodes=result_episodes,
        wall_clock_seconds=round(wall, 3),
        settings=settings or {},
        source=source,
        model_sha256=model_sha256,
    )


def _tensor_rollouts(
    policy: Policy,
    spec: TensorEnvSpec,
    episodes: int,
    num_envs: int,
    seed: int,
    deterministic: bool,
    device: str,
    on_episode: Callable[[int], None] | None,
    kept=None,
    max_seconds: float | None = None,
) -> tuple[float, list[Episode]]:
    """Build the tensor env (the user's factory runs here), roll it out on ``device``, close it: the
    rollout's seconds and episodes. The clock runs from the built env to the last episode (a
    simulator's kernel compilation and a replay's encoding at close are not rollout time). A ``kept``
    env is reseeded instead of built, and left open."""
    import torch

    from zoo.tensor_env import build
    from zoo.tensor_rollout import tensor_rollout

    torch.manual_seed(seed)  # for a user's env that draws from torch's global generator
    if kept is not None:
        kept.reseed(seed)
        start = time.perf_counter()
        episodes_ = tensor_rollout(
            policy,
            kept,
            episodes,
            deterministic,
            spec.where,
            on_episode,
            max_steps=spec.max_steps,
            max_seconds=max_seconds,
        )
        return time.perf_counter() - start, episodes_
    env = build(spec, num_envs, device, seed)
    try:
        start = time.perf_counter()
        episodes_ = tensor_rollout(
            policy,
            env,
            episodes,
            deterministic,
            spec.where,
            on_episode,
            max_steps=spec.max_steps,
            max_seconds=max_seconds,
        )
        wall = time.perf_counter() - start
    finally:
        close = getattr(env, "close", None)
        if callable(close):
            close()
        if spec.video_log is not None:
            spec.video_log.written.extend(getattr(env, "videos_written", ()))
            spec.video_log.failures.extend(getattr(env, "video_failures", ()))
    return wall, episodes_
