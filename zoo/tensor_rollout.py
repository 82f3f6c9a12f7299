"""The evaluator's tensor path: a batched tensor env (:mod:`zoo.tensor_env`) rolled out on its device.

The same rules as the gymnasium path (:mod:`zoo.evaluator`): env ``i`` contributes its quota of
episodes (:func:`zoo.episodes.episode_quotas`), episodes are reported in env order, the same seed
gives the same episodes. What differs is where the bookkeeping lives: observations, actions, the
running returns and lengths, the per-env counts and quotas, the recorded episodes, success flags and
recurrent-state resets are all tensors on the env's device. The host copies nothing during the
rollout; every ``sync_every`` steps it reads one scalar (how many quota episodes are done) to know
when to stop and to report progress, and when every quota is filled it copies the recorded
episodes once.

A tensor env resets a finished env inside ``step`` (rsl_rl's ``VecEnv``), so the observation that
comes back is already the new episode's first: recurrent state is zeroed for exactly the envs that
are done, as rsl_rl's runner does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from zoo.episodes import Episode, episode_quotas
from zoo.errors import ZooError
from zoo.tensor_env import as_groups, box_group, check_fit, check_step, observation_groups

#: Steps between the two host reads of a rollout (the filled check): a GPU queues that many steps
#: without waiting for the host; an env overshoots its quota by at most this many steps.
SYNC_EVERY = 16


def _time_limit(env) -> int | None:
    """The env's ``max_episode_length``, when it has one: rsl_rl's ``VecEnv`` allows an int or a tensor
    (one limit per env; the longest counts). Read once, before the rollout."""
    import torch

    limit = getattr(env, "max_episode_length", None)
    return None if limit is None else int(torch.as_tensor(limit).max())


def tensor_rollout(policy, env, episodes: int, deterministic: bool, where: str,
                   on_episode: Callable[[int], None] | None = None) -> list[Episode]:  # fmt: skip
    """Step ``env`` with ``policy.act_tensor`` until every env has filled its quota; the episodes in env order."""
    import torch

    num_envs, device = int(env.num_envs), str(env.device)
    if not hasattr(policy, "act_tensor"):
        policy = HostBridge(policy, device)
    quotas_host = episode_quotas(episodes, num_envs)
    max_quota = int(quotas_host.max())
    quotas = torch.as_tensor(quotas_host, device=device)
    rows = torch.arange(num_envs, device=device)
    returns = torch.zeros(num_envs, max_quota, dtype=torch.float64, device=device)
    lengths = torch.zeros(num_envs, max_quota, dtype=torch.int64, device=device)
    successes = torch.full((num_envs, max_quota), -1, dtype=torch.int8, device=device)  # -1: not reported
    running_return = torch.zeros(num_envs, dtype=torch.float64, device=device)
    running_length = torch.zeros(num_envs, dtype=torch.int64, device=device)
    counts = torch.zeros(num_envs, dtype=torch.int64, device=device)

    obs = env.reset() if callable(getattr(env, "reset", None)) else env.get_observations()
    obs = observation_groups(obs, device, where)
    check_fit(obs, policy.observation_space, where)
    state, step, reported = None, 0, 0
    limit = _time_limit(env)
    # every env fills its quota within max_quota + 1 time limits (the first episode may start mid-way)
    max_steps = None if limit is None else (max_quota + 1) * (limit + 1) + SYNC_EVERY
    with torch.inference_mode():
        while True:
            actions, state = policy.act_tensor(obs, state, deterministic)
            result = env.step(actions)
            if step == 0:
                check_step(result, num_envs, device, where)
            next_obs, rewards, dones, extras = result
            obs = observation_groups(next_obs, device, where) if step == 0 else as_groups(next_obs)
            done = dones.reshape(num_envs).to(torch.bool)
            running_return += rewards.reshape(num_envs).to(torch.float64)
            running_length += 1
            record = done & (counts < quotas)
            slot = counts.clamp(max=max_quota - 1)
            returns[rows, slot] = torch.where(record, running_return, returns[rows, slot])
            lengths[rows, slot] = torch.where(record, running_length, lengths[rows, slot])
            success = extras.get("is_success")
            if success is not None:
                flag = success.reshape(num_envs).to(torch.int8).clamp(0, 1)
                successes[rows, slot] = torch.where(record, flag, successes[rows, slot])
            counts += done
            running_return.masked_fill_(done, 0.0)
            running_length.masked_fill_(done, 0)
            if policy.is_recurrent:
                policy.reset_tensor(done)
            step += 1
            if step % SYNC_EVERY == 0:
                finished = int(torch.minimum(counts, quotas).sum())  # the one host read: a scalar
                if on_episode is not None and finished > reported:
                    on_episode(finished)
                    reported = finished
                if finished >= episodes:
                    break
                if max_steps is not None and step > max_steps:
                    raise ZooError(f"{where}: {episodes - finished} episodes still running after {step} steps, "
                                   f"beyond the env's max_episode_length ({limit})",
                                   hint="the env must reset done envs itself and report them in dones")  # fmt: skip
    return _episodes(quotas_host, returns, lengths, successes)


class HostBridge:
    """A policy that acts on numpy arrays (an exported file on onnxruntime, a gymnasium-only framework)
    stepped on a tensor env: each step's observation crosses to the host and the actions back. The
    only path on which rollout data leaves the device, and only for such policies."""

    def __init__(self, policy, device: str):
        from gymnasium.spaces import Dict

        self.policy, self.device = policy, device
        self.is_recurrent, self.observation_space = policy.is_recurrent, policy.observation_space
        self.groups = (
            list(policy.observation_space.spaces) if isinstance(policy.observation_space, Dict) else None
        )

    def act_tensor(self, obs: dict, state: Any, deterministic: bool):
        import numpy as np
        import torch

        if self.groups is None:
            batch = obs[box_group(obs)].cpu().numpy()
        else:
            batch = {name: obs[name].cpu().numpy() for name in self.groups}
        actions, state = self.policy.act(batch, state, deterministic)
        return torch.as_tensor(np.asarray(actions), device=self.device), state

    def reset_tensor(self, done) -> None:
        self.policy.reset(done.cpu().numpy())


def _episodes(quotas, returns, lengths, successes) -> list[Episode]:
    """The recorded episodes, env after env: the one copy of the results to the host."""
    returns, lengths, successes = returns.cpu(), lengths.cpu(), successes.cpu()
    out = []
    for i, quota in enumerate(quotas.tolist()):
        for k in range(quota):
            flag = int(successes[i, k])
            out.append(Episode(i, float(returns[i, k]), int(lengths[i, k]), None if flag < 0 else bool(flag)))
    return out
