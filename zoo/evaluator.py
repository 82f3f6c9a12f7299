"""Deterministic, seeded, vectorized rollouts -> :class:`EvalResult` -> ``eval.json``.

The evaluator knows nothing about frameworks: it steps a gymnasium vector env
with a :class:`zoo.policy.Policy`. Episodes are counted with per-env quotas
(env ``i`` contributes ``N // K`` episodes, plus one for the first ``N % K``
envs): counting the first ``N`` episodes to finish would over-sample short
episodes and bias the mean down. Returns come from ``RecordEpisodeStatistics``
directly on the raw env, so reward clipping or episodic-life tricks in the
training stack never leak into the reported score. Every rollout is bounded and checked by the rules of
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
from zoo.rollout_guard import CUT_INFO, Deadline, check_returns, env_error, gym_env_label, require_finite
from zoo.tensor_env import TensorEnvSpec
from zoo.version import __version__

_CUT_MASK = f"_{CUT_INFO}"  # the vector env's mask of the sub-envs whose info has the key


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


class _Quotas:
    """Per-env episode quotas and the episodes each env finished, fed one vector step's ``info`` at a time."""

    def __init__(self, episodes: int, num_envs: int, on_episode: Callable[[int], None] | None):
        self.episodes, self.on_episode = episodes, on_episode
        self.quotas = episode_quotas(episodes, num_envs)
        self.counts = np.zeros(num_envs, dtype=np.int64)
        self.per_env: list[list[Episode]] = [[] for _ in range(num_envs)]
        self.finished = 0

    @property
    def filled(self) -> bool:
        return self.finished >= self.episodes

    def record(self, info: dict, offset: int = 0) -> None:
        """The episodes that ended in this step of the vector env whose first sub-env is env ``offset``."""
        if "_episode" not in info:
            return
        has_success = info.get("_is_success")
        cut = info.get(_CUT_MASK)
        for j in np.flatnonzero(info["_episode"]):
            i = offset + j
            if self.counts[i] < self.quotas[i]:
                success = bool(info["is_success"][j]) if has_success is not None and has_success[j] else None
                self.per_env[i].append(
                    Episode(
                        int(i),
                        float(info["episode"]["r"][j]),
                        int(info["episode"]["l"][j]),
                        success,
                        truncated=cut is not None and bool(cut[j]),
                    )
                )
                self.finished += 1
                if self.on_episode is not None:
                    self.on_episode(self.finished)
            self.counts[i] += 1

    def in_env_order(self) -> list[Episode]:
        return [e for env_episodes in self.per_env for e in env_episodes]


def rollout(
    policy: Policy,
    envs,
    episodes: int,
    seed: int,
    deterministic: bool,
    on_episode: Callable[[int], None] | None = None,
    *,
    max_seconds: float | None = None,
    who: str = "the env",
) -> list[Episode]:
    """Step ``envs`` with ``policy`` until every sub-env has filled its quota, within ``max_seconds`` (None: the
    default budget). Float actions are checked finite before the env gets them; ``who`` names the env in the
    error when it raises."""
    num_envs = envs.num_envs
    log = _Quotas(episodes, num_envs, on_episode)
    state = None
    prev_done = np.zeros(num_envs, dtype=bool)
    masked = getattr(policy, "uses_action_masks", False)
    steps = 0
    with Deadline(max_seconds) as deadline:
        try:
            obs, _ = envs.reset(seed=seed)
        except Exception as exc:  # noqa: BLE001 - whatever the env raises is the env's, said in one line
            raise env_error(exc, who, f"reset(seed={seed})") from None
        while not log.filled:
            if masked:
                actions, state = policy.act(obs, state, deterministic, action_masks=action_masks(envs))
            else:
                actions, state = policy.act(obs, state, deterministic)
            if type(actions) is np.ndarray and actions.dtype.kind == "f":
                require_finite(actions, "actions")
            try:
                obs, _rew, terminated, truncated, info = envs.step(actions)
            except Exception as exc:  # noqa: BLE001
                raise env_error(exc, who, f"step(actions) at step {steps + 1}") from None
            steps += 1
            log.record(info)
            if deadline.passed() and not log.filled:
                raise deadline.error(log.finished, episodes, steps)
            if policy.is_recurrent:
                # NEXT_STEP autoreset: an env done at step t ignores the action of step t+1 and returns
                # its reset observation then, so recurrent state is cleared after both steps.
                done = np.logical_or(terminated, truncated)
                if (done | prev_done).any():
                    policy.reset(done | prev_done)
                prev_done = done
    found = log.in_env_order()
    check_returns(found)
    return found


def action_masks(envs) -> np.ndarray:
    """Every sub-env's ``action_masks()`` stacked, ``(num_envs, ...)`` bool: the valid actions of this step."""
    from zoo.errors import ZooError

    try:
        masks = envs.call("action_masks")
    except AttributeError:
        raise ZooError(
            "the policy acts on action masks, but the env has no action_masks() method",
            hint="evaluate it on the env it was trained on (with its action-mask wrapper)",
        ) from None
    return np.stack([np.asarray(m, dtype=bool) for m in masks])


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
) -> EvalResult:
    """Run the rollouts and time them; an env built here is always closed, also on failure. A gymnasium ``spec``
    is stepped as a vector env on the host; a :class:`~zoo.tensor_env.TensorEnvSpec` on its device. Each episode
    runs at most ``spec.max_steps`` steps (None: the env's own limit, else the default cap) and the rollout at
    most ``max_seconds`` (None: the default budget); see :mod:`zoo.rollout_guard`.

    ``envs``: an env of ``spec`` that the caller built and keeps for many evaluations (``zoo watch``, which
    must not rebuild the simulator per checkpoint): a vector env (:func:`~zoo.envs.make_vector_env`) of a
    spec whose seeded reset restores everything (:func:`~zoo.envs.reset_restores`), or a tensor env that
    can be reseeded (:func:`~zoo.tensor_env.reseeds`). It starts from the state a fresh one with ``seed``
    would, so the episodes are a fresh env's, and is left open; no other env is taken."""
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
                    policy, envs, episodes, seed, deterministic, on_episode, max_seconds=max_seconds, who=who
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
