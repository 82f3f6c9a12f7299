"""Policies written the ways ``--policy-class`` takes them, for tests/test_custom_policy.py (importable as
``custom_policies``: conftest puts tests/ on sys.path).

Two constructors x three action methods, each acting by the same rule on CartPole-v1 (Discrete) and
Pendulum-v1 (Box); an MJRL-style object to pickle; and classes that break the contract one way each.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from gymnasium import spaces


def control(obs: np.ndarray, action_space) -> np.ndarray | int:
    """One observation's action: push the cart under the pole (CartPole), a clipped PD torque (Pendulum)."""
    if isinstance(action_space, spaces.Discrete):
        return int(obs[2] + 0.5 * obs[3] > 0)
    angle = np.arctan2(obs[1], obs[0])
    torque = -(2.0 * angle + 0.5 * obs[2])
    return np.clip(np.array([torque], dtype=np.float32), action_space.low, action_space.high)


def sampled(mean, action_space):
    """MJRL's sampled action: the mean plus Gaussian noise (np.random), kept inside the space."""
    if isinstance(action_space, spaces.Discrete):
        return int(np.random.randint(action_space.n))
    noisy = mean + 0.3 * np.random.randn(*np.shape(mean))
    return np.clip(noisy, action_space.low, action_space.high).astype(np.float32)


# ----------------------------------------------------------------------------- the two constructors
class _ByEnv:
    def __init__(self, env, seed):
        self.action_space = env.action_space
        self.seed = seed
        self.env_type = type(env).__name__  # one env (zoo's wrapper stack), not a vector env


class _BySpaces:
    def __init__(self, observation_space, action_space):
        self.observation_space, self.action_space = observation_space, action_space


# ----------------------------------------------------------------------------- the three action methods
class _GetAction:
    """MJRL's contract: one observation in, ``[sampled action, info]`` out, the mean in ``info["evaluation"]``."""

    def get_action(self, obs):
        mean = control(obs, self.action_space)
        return [sampled(mean, self.action_space), {"mean": mean, "log_std": np.zeros(1), "evaluation": mean}]


class _Predict:
    """SB3's contract: a batch in, ``(actions, state)`` out."""

    def predict(self, obs, deterministic=False):
        actions = np.stack([np.asarray(control(o, self.action_space)) for o in obs])
        return actions, None


class _Act:
    """A batch in, the batch of actions out."""

    def act(self, obs):
        return np.stack([np.asarray(control(o, self.action_space)) for o in obs])


class EnvGetAction(_ByEnv, _GetAction):
    pass


class EnvPredict(_ByEnv, _Predict):
    pass


class EnvAct(_ByEnv, _Act):
    pass


class SpacesGetAction(_BySpaces, _GetAction):
    pass


class SpacesPredict(_BySpaces, _Predict):
    pass


class SpacesAct(_BySpaces, _Act):
    pass


class WithLoad(_BySpaces, _Act):
    """Reads its gain from the file zoo names as TARGET (``load(path)``)."""

    gain = 1.0

    def load(self, path):
        self.gain = json.loads(Path(path).read_text())["gain"]

    def act(self, obs):
        return np.clip(self.gain * super().act(obs), self.action_space.low, self.action_space.high)


# ----------------------------------------------------------------------------- pickled (MJRL style)
class MJRLStylePolicy:
    """mjrl.policies.gaussian_mlp.MLP as zoo sees it: numpy parameters, ``get_action(one observation)``."""

    def __init__(self):
        self.action_space = spaces.Box(-2.0, 2.0, (1,), np.float32)
        self.log_std = np.full(1, -1.0, dtype=np.float32)

    def get_action(self, obs):
        mean = control(obs, self.action_space)
        return [sampled(mean, self.action_space), {"mean": mean, "log_std": self.log_std, "evaluation": mean}]


def make_canary_policy(path: str) -> MJRLStylePolicy:
    """Unpickling a :class:`CanaryPolicy` calls this: the file it creates proves the pickle ran."""
    Path(path).touch()
    return MJRLStylePolicy()


class CanaryPolicy:
    """Pickles to a call of :func:`make_canary_policy`: a policy whose loading leaves a trace."""

    def __init__(self, path: Path):
        self.path = str(path)

    def __reduce__(self):
        return (make_canary_policy, (self.path,))


# ----------------------------------------------------------------------------- broken contracts
class WrongShape(_BySpaces):
    def act(self, obs):
        return np.zeros((len(obs), 2), dtype=np.float32)


class OutOfBounds(_BySpaces):
    def act(self, obs):
        return np.full((len(obs), 1), 5.0, dtype=np.float32)


class FloatDiscrete(_BySpaces):
    def act(self, obs):
        return np.full(len(obs), 0.7)


class NotFinite(_BySpaces):
    def act(self, obs):
        return np.full((len(obs), 1), np.nan, dtype=np.float32)


class LateOutOfBounds(_BySpaces):
    """In bounds for two batches, then not: every batch is checked, not only the first."""

    calls = 0

    def act(self, obs):
        LateOutOfBounds.calls += 1
        return np.full((len(obs), 1), 0.0 if LateOutOfBounds.calls <= 2 else 9.0, dtype=np.float32)


class BareGetAction(_BySpaces):
    def get_action(self, obs):
        return control(obs, self.action_space)  # the action alone, not [action, info]


class NoActionMethod(_BySpaces):
    def forward(self, obs):
        return obs


class ThreeArgs:
    def __init__(self, env, seed, config):
        self.config = config

    def act(self, obs):
        return obs


class OtherNames:
    def __init__(self, obs_space, act_space):
        self.act_space = act_space

    def act(self, obs):
        return obs


class RaisesInInit:
    def __init__(self, observation_space, action_space):
        raise TypeError("boom from __init__")

    def act(self, obs):
        return obs


class RaisesInAct(_BySpaces):
    def act(self, obs):
        raise ValueError("boom from act")
