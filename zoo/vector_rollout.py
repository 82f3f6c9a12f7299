"""The gymnasium rollout loop: a :class:`~zoo.policy.Policy` steps a vector env until every sub-env has
filled its episode quota (:func:`zoo.episodes.episode_quotas`).

The loop is written for a *lane*: sub-envs ``[lo, hi)`` of the rollout's vector env. The sequential
rollout is the one lane that holds them all; :mod:`zoo.lanes` splits the sub-envs across forked
processes, one lane each, so that the cores step envs and run the policy at the same time. Whatever
its width, a lane calls the policy on the **full-width** batch (its own rows fresh, the other lanes'
rows as they last were): the same shapes give the same kernels and the same draws from the policy's
generator, so its own rows get exactly the actions the sequential loop computes for them, and a
rollout's episodes do not depend on how it was split.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from zoo.episodes import Episode, episode_quotas
from zoo.policy import Policy
from zoo.rollout_guard import CUT_INFO, Deadline, check_returns, env_error, require_finite

_CUT_MASK = f"_{CUT_INFO}"  # the vector env's mask of the sub-envs whose info has the key


class Quotas:
    """Per-env episode quotas and the episodes each env finished, fed one vector step's ``info`` at a time."""

    def __init__(self, episodes: int, num_envs: int, on_episode: Callable[[int], None] | None):
        self.episodes, self.on_episode = episodes, on_episode
        self.quotas = episode_quotas(episodes, num_envs)
        self.counts = np.zeros(num_envs, dtype=np.int64)
        self.per_env: list[list[Episode]] = [[] for _ in range(num_envs)]
        self.finished = 0

    def filled(self, lo: int = 0, hi: int | None = None) -> bool:
        """Whether envs ``[lo, hi)`` (all of them by default) have each finished their quota."""
        return bool((self.counts[lo:hi] >= self.quotas[lo:hi]).all())

    def record(self, info: dict, offset: int = 0) -> list[Episode]:
        """The episodes that ended in this step of the vector env whose first sub-env is env ``offset``, kept
        (those within their env's quota) and returned."""
        if "_episode" not in info:
            return []
        has_success = info.get("_is_success")
        cut = info.get(_CUT_MASK)
        kept = []
        for j in np.flatnonzero(info["_episode"]):
            i = offset + j
            if self.counts[i] < self.quotas[i]:
                success = bool(info["is_success"][j]) if has_success is not None and has_success[j] else None
                episode = Episode(
                    int(i),
                    float(info["episode"]["r"][j]),
                    int(info["episode"]["l"][j]),
                    success,
                    truncated=cut is not None and bool(cut[j]),
                )
                self.add(episode)
                kept.append(episode)
            else:
                self.counts[i] += 1
        return kept

    def add(self, episode: Episode) -> None:
        """Keep one episode of env ``episode.env_index`` (one a lane process reported, or one recorded here)."""
        i = episode.env_index
        self.per_env[i].append(episode)
        self.counts[i] += 1
        self.finished += 1
        if self.on_episode is not None:
            self.on_episode(self.finished)

    def in_env_order(self) -> list[Episode]:
        return [e for env_episodes in self.per_env for e in env_episodes]


class Lane:
    """Sub-envs ``[lo, hi)`` of a rollout, stepped by ``envs`` (the whole vector env, or a vector env over those
    sub-envs alone), with the full-width observations, recurrent state and action masks the policy is called on.

    It also times its env steps and its policy calls, which is what :func:`zoo.lanes.lanes_now` decides from."""

    def __init__(self, policy: Policy, envs, obs: Any, deterministic: bool, log: Quotas, who: str):
        self.policy, self.envs, self.obs, self.deterministic = policy, envs, obs, deterministic
        self.log, self.who = log, who
        self.lo, self.hi = 0, envs.num_envs
        self.width = envs.num_envs
        self.masked = getattr(policy, "uses_action_masks", False)
        self.masks: np.ndarray | None = None
        self.state: Any = None
        self.prev_done = np.zeros(self.width, dtype=bool)
        self.steps = 0
        self.env_seconds = self.policy_seconds = 0.0
        #: the last step's actions (full width): whether they are one array decides whether a split is possible
        self.actions: Any = None

    def narrowed(self, envs, lo: int) -> Lane:
        """This lane's rollout from here on, for sub-envs ``[lo, lo + envs.num_envs)`` stepped by ``envs``."""
        lane = Lane.__new__(Lane)
        lane.__dict__.update(self.__dict__)
        lane.envs, lane.lo, lane.hi = envs, lo, lo + envs.num_envs
        return lane

    @property
    def filled(self) -> bool:
        return self.log.filled(self.lo, self.hi)

    def step_within(self, deadline: Deadline) -> list[Episode]:
        """:meth:`step`, then the rollout's budget: past it with this lane's episodes unfinished, the rollout
        fails (every lane's loop goes through here)."""
        found = self.step()
        if deadline.passed() and not self.filled:
            raise deadline.error(self.log.finished, self.log.episodes, self.steps)
        return found

    def step(self) -> list[Episode]:
        """One step of this lane's envs; the episodes it finished that count."""
        lo, hi, whole = self.lo, self.hi, self.hi - self.lo == self.width
        start = time.perf_counter()
        if self.masked:
            masks = action_masks(self.envs)
            if whole or self.masks is None:
                self.masks = masks
            else:
                self.masks[lo:hi] = masks
            masked: Any = self.policy  # its act takes the masks too (the Policy protocol's docstring)
            actions, self.state = masked.act(
                self.obs, self.state, self.deterministic, action_masks=self.masks
            )
        else:
            actions, self.state = self.policy.act(self.obs, self.state, self.deterministic)
        if type(actions) is np.ndarray and actions.dtype.kind == "f":
            require_finite(actions, "actions")
        self.actions = actions
        stepped = time.perf_counter()
        try:
            obs, _rew, terminated, truncated, info = self.envs.step(actions if whole else actions[lo:hi])
        except Exception as exc:  # noqa: BLE001 - whatever the env raises is the env's, said in one line
            raise env_error(exc, self.who, f"step(actions) at step {self.steps + 1}") from None
        self.env_seconds += time.perf_counter() - stepped
        self.policy_seconds += stepped - start
        self.steps += 1
        if whole:
            self.obs = obs
        else:
            set_rows(self.obs, lo, obs)
        found = self.log.record(info, lo)
        if self.policy.is_recurrent:
            # NEXT_STEP autoreset: an env done at step t ignores the action of step t+1 and returns
            # its reset observation then, so recurrent state is cleared after both steps.
            done = np.zeros(self.width, dtype=bool)
            done[lo:hi] = np.logical_or(terminated, truncated)
            if (done | self.prev_done).any():
                self.policy.reset(done | self.prev_done)
            self.prev_done = done
        return found


def set_rows(full: Any, lo: int, part: Any) -> None:
    """Write a lane's batch ``part`` into rows ``[lo, lo + len(part))`` of the full-width batch ``full``
    (arrays, or dicts of them as Dict observation spaces give)."""
    if isinstance(full, dict):
        for key, value in full.items():
            set_rows(value, lo, part[key])
    else:
        full[lo : lo + len(part)] = part


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
    lanes: int | None = None,
) -> list[Episode]:
    """Step ``envs`` with ``policy`` until every sub-env has filled its quota, within ``max_seconds`` (None: the
    default budget). Float actions are checked finite before the env gets them; ``who`` names the env in the
    error when it raises.

    ``lanes``: processes to split the sub-envs across (:mod:`zoo.lanes`); None lets the first steps decide
    (split where it pays, on the cores this process may use), 1 never splits. The episodes are the same."""
    from zoo import lanes as lanes_

    log = Quotas(episodes, envs.num_envs, on_episode)
    with Deadline(max_seconds) as deadline:
        try:
            obs, _ = envs.reset(seed=seed)
        except Exception as exc:  # noqa: BLE001 - whatever the env raises is the env's, said in one line
            raise env_error(exc, who, f"reset(seed={seed})") from None
        lane = Lane(policy, envs, obs, deterministic, log, who)
        count, started = lanes_.lane_count(lanes, envs.num_envs), time.perf_counter()
        while not lane.filled:
            lane.step_within(deadline)
            if count > 1 and lanes_.probed(lane, started, forced=lanes is not None):
                count = lanes_.lanes_now(lane, count, forced=lanes is not None)
                if count > 1:
                    lanes_.run_lanes(lane, count, deadline)
                    break
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
