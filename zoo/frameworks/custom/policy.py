"""A user's policy object as a zoo :class:`~zoo.policy.Policy`: a batch of observations in, a batch of env
actions out, whichever of the three action methods it has.

- ``get_action(obs)`` (MJRL's): called once per env with that env's observation (MJRL's policies take one
  observation, not a batch), the results stacked. It returns ``[action, info]``; item 0 is the action, except
  in deterministic mode when ``info["evaluation"]`` is there (MJRL samples item 0 and puts the mean there).
- ``predict(obs_batch, deterministic=...)`` (SB3's): the whole batch; it returns ``(actions, state)``.
- ``act(obs_batch)``: the whole batch; it returns the actions, and has no mode (it is called the same way
  for ``--deterministic`` and ``--stochastic``).

Every batch of actions is checked against the env's action space before it is handed back, so the first
check happens before the first ``env.step``: zoo never clips, rounds or reshapes a user's action, it
refuses one that does not fit, in one line naming the class, what it returned and what the space needs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zoo.errors import LayoutMismatch, ZooError
from zoo.frameworks.custom.userclass import call_user

_FIT_HINT = (
    "return one action per observation, inside the env's action space: zoo never clips, rounds or "
    "reshapes one (docs/frameworks/custom.md)"
)


class CustomPolicy:
    """``obj``'s ``method`` as a batch policy on ``env_id``'s spaces; ``name`` and ``who`` word its errors."""

    is_recurrent = False

    def __init__(
        self,
        obj: Any,
        method: str,
        observation_space: Any,
        action_space: Any,
        *,
        name: str,
        env_id: str,
        who: str,
    ) -> None:
        self.obj, self.method, self.name, self.env_id, self.who = obj, method, name, env_id, who
        self.observation_space, self.action_space = observation_space, action_space
        self.batches = 0  # batches of actions returned so far (the first one is checked before any step)

    def act(self, obs_batch: Any, state: Any = None, deterministic: bool = True) -> tuple[np.ndarray, None]:
        n = _batch_size(obs_batch)
        actions = self._actions(obs_batch, n, deterministic)
        problem = action_problem(actions, self.action_space, n)
        if problem:
            which = (
                f"actions in batch {self.batches + 1}" if self.batches else "first actions (before any step)"
            )
            raise LayoutMismatch(
                f"{self.name}.{self.method}'s {which} do not fit {self.env_id}'s action space "
                f"{self.action_space}: {problem}",
                hint=_FIT_HINT,
            )
        self.batches += 1
        return _as_space_dtype(actions, self.action_space), None

    def reset(self, done_mask: np.ndarray) -> None:
        """Nothing to clear: zoo keeps no state for a user's policy."""

    def _actions(self, obs_batch: Any, n: int, deterministic: bool) -> np.ndarray:
        fn = getattr(self.obj, self.method)
        called = f"{self.name}.{self.method}"
        if self.method == "get_action":
            out = [
                self._mjrl_action(
                    call_user(fn, _one(obs_batch, i), called=f"{called}(obs)", who=self.who), deterministic
                )
                for i in range(n)
            ]
            return _stack(out, called)
        if self.method == "predict":
            out = call_user(
                fn,
                obs_batch,
                deterministic=deterministic,
                called=f"{called}(obs, deterministic={deterministic})",
                who=self.who,
            )
            if not isinstance(out, tuple | list) or not out:
                raise ZooError(
                    f"{called} returned a {type(out).__name__}: expected (actions, state), as SB3's "
                    "predict returns",
                    hint=_FIT_HINT,
                )
            return np.asarray(out[0])
        return np.asarray(call_user(fn, obs_batch, called=f"{called}(obs)", who=self.who))

    def _mjrl_action(self, out: Any, deterministic: bool) -> Any:
        """MJRL's ``[action, info]``: item 0 (sampled), or in deterministic mode ``info["evaluation"]`` (the mean)."""
        if not isinstance(out, tuple | list) or not out:
            raise ZooError(
                f"{self.name}.get_action returned a {type(out).__name__}: expected a tuple whose first "
                "item is the action (MJRL: [action, info])",
                hint=_FIT_HINT,
            )
        info = out[1] if len(out) > 1 else None
        if deterministic and isinstance(info, dict) and "evaluation" in info:
            return info["evaluation"]
        return out[0]


def action_problem(actions: np.ndarray, space: Any, n: int) -> str | None:
    """Why a batch of ``n`` actions does not fit ``space`` (None when it fits): shape, dtype, finiteness and
    bounds for a Box, integer indices in range for a Discrete, ``space.contains`` per env for other spaces."""
    from gymnasium import spaces

    if isinstance(space, spaces.Box):
        expected = (n, *space.shape)
        if actions.shape != expected:
            return f"shape {actions.shape}, expected {expected}"
        if not (np.issubdtype(actions.dtype, np.integer) or np.issubdtype(actions.dtype, np.floating)):
            return f"dtype {actions.dtype}, expected numbers ({space.dtype})"
        values = actions.astype(space.dtype)
        if not np.isfinite(values).all():
            return "values that are not finite (nan or inf)"
        low, high = np.broadcast_to(space.low, expected), np.broadcast_to(space.high, expected)
        outside = np.argwhere((values < low) | (values > high))
        if len(outside):
            at = tuple(outside[0])
            return (
                f"{len(outside)} values outside the bounds, the first {values[at]:.4g} (env {at[0]}) not in "
                f"[{low[at]:.4g}, {high[at]:.4g}]"
            )
        return None
    if isinstance(space, spaces.Discrete):
        if actions.shape != (n,):
            return f"shape {actions.shape}, expected {(n,)} (one index per env)"
        if not np.issubdtype(actions.dtype, np.integer):
            return f"dtype {actions.dtype}, expected integers (a Discrete action is an index)"
        last = int(space.start) + int(space.n) - 1
        if ((actions < space.start) | (actions > last)).any():
            return f"values from {actions.min()} to {actions.max()}, outside {int(space.start)}..{last}"
        return None
    if len(actions) != n:
        return f"{len(actions)} actions for {n} observations"
    bad = next((i for i in range(n) if not space.contains(actions[i])), None)
    return None if bad is None else f"env {bad}'s action {actions[bad]!r} is not in the space"


def _as_space_dtype(actions: np.ndarray, space: Any) -> np.ndarray:
    """A Box's actions in its dtype (float64 to float32: exact within the bounds checked); others as given."""
    from gymnasium import spaces

    return actions.astype(space.dtype, copy=False) if isinstance(space, spaces.Box) else actions


def _batch_size(obs: Any) -> int:
    """How many envs a batch of observations holds (a Dict or Tuple observation: its first leaf's length)."""
    if isinstance(obs, dict):
        return _batch_size(next(iter(obs.values())))
    if isinstance(obs, tuple):
        return _batch_size(obs[0])
    return len(obs)


def _one(obs: Any, i: int) -> Any:
    """Env ``i``'s observation out of a batch (Dict and Tuple observations split leaf by leaf)."""
    if isinstance(obs, dict):
        return {key: _one(value, i) for key, value in obs.items()}
    if isinstance(obs, tuple):
        return tuple(_one(value, i) for value in obs)
    return obs[i]


def _stack(actions: list, called: str) -> np.ndarray:
    """Per-env actions as one batch; actions of different shapes are one error."""
    try:
        return np.stack([np.asarray(a) for a in actions])
    except ValueError:
        shapes = sorted({np.shape(a) for a in actions})
        raise ZooError(f"{called} returned actions of different shapes {shapes}", hint=_FIT_HINT) from None
