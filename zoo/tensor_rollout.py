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

The bounds and checks of :mod:`zoo.rollout_guard` hold here too, without host reads of their own: actions
are summed on the device (a NaN or infinity makes the sum so) and the sum rides in the filled check's one
scalar; the wall-time budget is looked at on the same steps. When the env's own ``max_episode_length`` ends
every episode before the step bound would, the bound adds no work to a step.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from zoo.episodes import Episode, episode_quotas
from zoo.errors import ZooError
from zoo.rollout_guard import DEFAULT_MAX_STEPS, Deadline, check_returns, env_error, nonfinite_actions
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


def tensor_rollout(
    policy,
    env,
    episodes: int,
    deterministic: bool,
    where: str,
    on_episode: Callable[[int], None] | None = None,
    *,
    max_steps: int | None = None,
    max_seconds: float | None = None,
) -> list[Episode]:
    """Step ``env`` with ``policy.act_tensor`` until every env has filled its quota; the episodes in env order.

    Each episode runs at most ``max_steps`` steps (None: the env's ``max_episode_length``, else the default cap)
    and the rollout at most ``max_seconds`` (:mod:`zoo.rollout_guard`). A tensor env resets its envs itself, so
    an episode the bound cuts is recorded (truncated) and the env's steps after it are not counted until the
    env ends that episode; its next episode is then counted from its first step."""
    import torch

    num_envs, device, who = int(env.num_envs), str(env.device), f"the env ({where})"
    if not hasattr(policy, "act_tensor"):
        policy = HostBridge(policy, device)
    quotas_host = episode_quotas(episodes, num_envs)
    max_quota = int(quotas_host.max())
    quotas = torch.as_tensor(quotas_host, device=device)
    rows = torch.arange(num_envs, device=device)
    returns = torch.zeros(num_envs, max_quota, dtype=torch.float64, device=device)
    lengths = torch.zeros(num_envs, max_quota, dtype=torch.int64, device=device)
    successes = torch.full((num_envs, max_quota), -1, dtype=torch.int8, device=device)  # -1: not reported
    truncs = torch.zeros(num_envs, max_quota, dtype=torch.bool, device=device)
    running_return = torch.zeros(num_envs, dtype=torch.float64, device=device)
    running_length = torch.zeros(num_envs, dtype=torch.int64, device=device)
    counts = torch.zeros(num_envs, dtype=torch.int64, device=device)
    draining = torch.zeros(num_envs, dtype=torch.bool, device=device)  # cut, not yet ended by the env
    action_sum = torch.zeros((), dtype=torch.float64, device=device)  # NaN or infinite once an action was

    try:
        obs = env.reset() if callable(getattr(env, "reset", None)) else env.get_observations()
    except Exception as exc:  # noqa: BLE001 - whatever the env raises is the env's, said in one line
        raise env_error(exc, who, "reset()") from None
    obs = observation_groups(obs, device, where)
    check_fit(obs, policy.observation_space, where)
    state, step, reported = None, 0, 0
    limit = _time_limit(env)
    bound = max_steps if max_steps is not None else (limit if limit is not None else DEFAULT_MAX_STEPS)
    cut_at = None if limit is not None and limit <= bound else bound  # None: the env ends every episode first
    # every env fills its quota within max_quota + 1 episodes' steps (the first episode may start mid-way); a
    # cut episode's steps include the env's own end of it (its limit, or as long again as the bound)
    per_episode = limit if cut_at is None else cut_at + (limit or cut_at)
    most_steps = (max_quota + 1) * (per_episode + 1) + SYNC_EVERY
    check_actions = None
    with torch.inference_mode(), Deadline(max_seconds) as deadline:
        while True:
            actions, state = policy.act_tensor(obs, state, deterministic)
            if check_actions is None:
                check_actions = actions.is_floating_point()
            if check_actions:
                action_sum += actions.sum(dtype=torch.float64)
            try:
                result = env.step(actions)
            except Exception as exc:  # noqa: BLE001
                raise env_error(exc, who, f"step(actions) at step {step + 1}") from None
            if step == 0:
                check_step(result, num_envs, device, where)
            next_obs, rewards, dones, extras = result
            obs = observation_groups(next_obs, device, where) if step == 0 else as_groups(next_obs)
            done = dones.reshape(num_envs).to(torch.bool)
            if cut_at is None:
                running_return += rewards.reshape(num_envs).to(torch.float64)
                running_length += 1
                ended, cut = done, None
            else:
                running_return += torch.where(draining, 0.0, rewards.reshape(num_envs).to(torch.float64))
                running_length += ~draining
                cut = ~draining & ~done & (running_length >= cut_at)
                ended = (done & ~draining) | cut
                draining = (draining | cut) & ~done
            record = ended & (counts < quotas)
            slot = counts.clamp(max=max_quota - 1)
            returns[rows, slot] = torch.where(record, running_return, returns[rows, slot])
            lengths[rows, slot] = torch.where(record, running_length, lengths[rows, slot])
            if cut is not None:
                truncs[rows, slot] = torch.where(record, cut, truncs[rows, slot])
            success = extras.get("is_success")
            if success is not None:
                flag = success.reshape(num_envs).to(torch.int8).clamp(0, 1)
                successes[rows, slot] = torch.where(record, flag, successes[rows, slot])
            counts += ended
            restart = ended if cut is None else done | cut
            running_return.masked_fill_(restart, 0.0)
            running_length.masked_fill_(restart, 0)
            if policy.is_recurrent:
                policy.reset_tensor(done)
            step += 1
            if step % SYNC_EVERY == 0:
                finished = _read(
                    torch.minimum(counts, quotas).sum(), action_sum if check_actions else None, step
                )
                if on_episode is not None and finished > reported:
                    on_episode(finished)
                    reported = finished
                if finished >= episodes:
                    break
                if deadline.passed():
                    raise deadline.error(finished, episodes, step)
                if step > most_steps:
                    raise _stalled(where, episodes - finished, step, limit, cut_at)
    found = _episodes(quotas_host, returns, lengths, successes, truncs)
    check_returns(found)
    return found


def _read(finished, action_sum, step: int) -> int:
    """The one host read of a sync step, one scalar: how many quota episodes are done, made NaN when
    ``action_sum`` (if given) is not finite (``x * 0`` is 0 for a finite ``x``, NaN for NaN or infinity)."""
    import torch

    if action_sum is None:
        return int(finished)
    value = float(finished.to(torch.float64) + action_sum * 0)
    if not math.isfinite(value):
        raise nonfinite_actions(step)
    return int(value)


def _stalled(where: str, running: int, step: int, limit: int | None, cut_at: int | None) -> ZooError:
    """The error for episodes that outlast every bound: the env does not end them (reset and report them)."""
    if cut_at is None:
        return ZooError(
            f"{where}: {running} episodes still running after {step} steps, "
            f"beyond the env's max_episode_length ({limit})",
            hint="the env must reset done envs itself and report them in dones",
        )
    return ZooError(
        f"{where}: {running} episodes still running after {step} steps: the env did not end the "
        f"episodes --max-steps {cut_at} cut, and a tensor env resets its envs itself",
        hint="give the env a max_episode_length and report its time-outs in dones, or ask for at most "
        "one episode per env (--episodes no more than --num-envs)",
    )


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


def _episodes(quotas, returns, lengths, successes, truncs) -> list[Episode]:
    """The recorded episodes, env after env: the one copy of the results to the host."""
    returns, lengths, successes, truncs = returns.cpu(), lengths.cpu(), successes.cpu(), truncs.cpu()
    out = []
    for i, quota in enumerate(quotas.tolist()):
        for k in range(quota):
            flag = int(successes[i, k])
            out.append(
                Episode(
                    i,
                    float(returns[i, k]),
                    int(lengths[i, k]),
                    None if flag < 0 else bool(flag),
                    truncated=bool(truncs[i, k]),
                )
            )
    return out
