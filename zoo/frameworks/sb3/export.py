"""``zoo export`` for SB3: one torch module computing ``model.predict(obs, deterministic=True)``.

The module takes the raw observation as the exporter's float32 input (Dict observations flattened,
see :mod:`zoo.exporter.obs`) and runs what :class:`~zoo.frameworks.sb3.policy.SB3Policy` runs:

1. VecNormalize, when the run has it: ``clip((x - mean) / sqrt(var + epsilon), -clip_obs, clip_obs)``
   per normalized key, in float64 and then cast to float32, as :class:`ObsNormalizer` does.
2. ``policy.obs_to_tensor``'s part: Dict keys back into tensors, channel-last images transposed to
   the channel-first layout the model was saved with (SB3's ``VecTransposeImage``).
3. SB3's own ``policy._predict(obs, deterministic=True)``: ``preprocess_obs`` (images / 255,
   one-hot Discrete and MultiDiscrete values), the network and the deterministic action head.
4. ``BasePolicy.predict``'s postprocessing: actions reshaped to ``(batch, *action_space.shape)``;
   Box actions unscaled from ``[-1, 1]`` when the policy squashes them (SAC, TD3, DDPG, TQC,
   CrossQ, ARS's MLP), else clipped to the bounds (PPO, A2C, TRPO, ARS's linear policy).

RecurrentPPO's module is stateless, as rsl_rl's LSTM export is: ``forward(obs, h, c) -> (actions,
h, c)`` with the actor LSTM's states ``(n_lstm_layers, batch, hidden)``; step 3 is then the actor's
path of ``RecurrentActorCriticPolicy._predict`` with no episode start (the caller zeroes an env's
state when its episode starts). MaskablePPO's module takes no mask: it is ``model.predict(obs)``
without ``action_masks`` (every action allowed), and the sidecar says so in ``left_to_caller``.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
from torch import nn

from zoo.exporter.obs import obs_layout, unflatten_obs
from zoo.frameworks.sb3.actor import NoArgChecks, lstm_actor_step
from zoo.frameworks.sb3.normalize import ObsNormalizer
from zoo.policy import ExportSpec, RecurrentSpec

FORMULA = "clip((x - mean) / sqrt(var + epsilon), -clip_obs, clip_obs)"

#: The deterministic action of each SB3 action distribution, in words.
_HEADS = {
    "CategoricalDistribution": "argmax over action logits",
    "MultiCategoricalDistribution": "argmax over each action dimension's logits",
    "BernoulliDistribution": "rounded Bernoulli probabilities",
    "MaskableCategoricalDistribution": "argmax over action logits",
    "MaskableMultiCategoricalDistribution": "argmax over each action dimension's logits",
    "MaskableBernoulliDistribution": "rounded Bernoulli probabilities",
    "DiagGaussianDistribution": "Gaussian mean action",
    "SquashedDiagGaussianDistribution": "tanh of the Gaussian mean action",
    "StateDependentNoiseDistribution": "gSDE mean action",
}


class _Normalize(nn.Module):
    """One key's VecNormalize statistics, applied in float64 as numpy does."""

    def __init__(self, mean: Any, var: Any, epsilon: float, clip_obs: float):
        super().__init__()
        self.register_buffer("mean", torch.tensor(np.asarray(mean, dtype=np.float64)))
        self.register_buffer("var", torch.tensor(np.asarray(var, dtype=np.float64)))
        self.epsilon, self.clip_obs = epsilon, clip_obs

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = (x.double() - self.mean) / torch.sqrt(self.var + self.epsilon)
        return x.clamp(-self.clip_obs, self.clip_obs).float()


def _copy(policy):
    """A deep copy of an SB3 policy. gSDE's distribution keeps tensors computed from ``log_std`` (its exploration
    matrices, the scale of its ``weights_dist``: non-leaf under autograd), which ``copy.deepcopy`` refuses; the
    deterministic action reads none of them, so the copy takes them detached."""
    memo = {id(t): t.detach().clone() for t in _computed_tensors(getattr(policy, "action_dist", None))}
    return copy.deepcopy(policy, memo)


def _computed_tensors(obj, depth: int = 2) -> list[torch.Tensor]:
    """The non-leaf tensors among ``obj``'s attributes and theirs, ``depth`` levels down."""
    found = []
    for value in vars(obj).values() if hasattr(obj, "__dict__") else ():
        if isinstance(value, torch.Tensor):
            found += [] if value.is_leaf else [value]
        elif depth > 0 and not isinstance(value, nn.Module | type):
            found += _computed_tensors(value, depth - 1)
    return found


class SB3ExportModule(nn.Module):
    """Raw observation -> the actions ``SB3Policy.act(obs, deterministic=True)`` returns."""

    def __init__(self, policy, observation_space, normalizer: ObsNormalizer | None):
        from gymnasium import spaces
        from stable_baselines3.common.preprocessing import is_image_space

        super().__init__()
        self.policy = _copy(policy).cpu()
        self.policy.set_training_mode(False)
        self.is_dict = isinstance(observation_space, spaces.Dict)
        _, self.obs_groups = obs_layout(observation_space)
        saved, raw = _per_key(policy.observation_space), _per_key(observation_space)
        self.channel_last = [k for k, s in saved.items() if is_image_space(s) and raw[k].shape != s.shape]
        stats = _per_key_stats(normalizer)
        self.norm_keys = list(stats)
        self.norms = nn.ModuleList(
            _Normalize(mean, var, normalizer.epsilon, normalizer.clip_obs) for mean, var in stats.values()
        )
        action_space = policy.action_space
        self.action_shape = tuple(action_space.shape or ())
        self.bounds = None
        if isinstance(action_space, spaces.Box):
            self.bounds = "unscale" if policy.squash_output else "clip"
            self.register_buffer("low", torch.tensor(action_space.low))
            self.register_buffer("high", torch.tensor(action_space.high))

    def observation(self, x: torch.Tensor) -> torch.Tensor | dict[str, torch.Tensor]:
        """Steps 1 and 2: the flat raw input as the tensor (or dict of tensors) ``_predict`` takes."""
        obs = unflatten_obs(x, self.obs_groups) if self.is_dict else {"obs": x}
        for key, norm in zip(self.norm_keys, self.norms, strict=True):
            obs[key] = norm(obs[key])
        for key in self.channel_last:
            obs[key] = obs[key].permute(0, 3, 1, 2)
        return obs if self.is_dict else obs["obs"]

    def env_actions(self, actions: torch.Tensor) -> torch.Tensor:
        """Step 4: the action head's output as the env takes it."""
        actions = actions.reshape(-1, *self.action_shape)
        if self.bounds == "unscale":  # BasePolicy.unscale_action
            actions = self.low + 0.5 * (actions + 1.0) * (self.high - self.low)
        elif self.bounds == "clip":
            actions = torch.clamp(actions, self.low, self.high)
        return actions

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with NoArgChecks():
            actions = self.policy._predict(self.observation(x), deterministic=True)
        return self.env_actions(actions)


class SB3RecurrentExportModule(SB3ExportModule):
    """RecurrentPPO's actor, stateless: ``forward(obs, h, c) -> (actions, h, c)``."""

    def forward(
        self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        with NoArgChecks():
            actions, (h, c) = lstm_actor_step(self.policy, self.observation(x), (h, c), deterministic=True)
        return self.env_actions(actions), h, c


def _per_key(space) -> dict:
    from gymnasium import spaces

    return dict(space.spaces) if isinstance(space, spaces.Dict) else {"obs": space}


def _per_key_stats(normalizer: ObsNormalizer | None) -> dict[str, tuple]:
    if normalizer is None:
        return {}
    if normalizer.keys is None:
        return {"obs": (normalizer.mean, normalizer.var)}
    return {key: (normalizer.mean[key], normalizer.var[key]) for key in normalizer.keys}


def _bounds(space) -> str:
    low, high = np.asarray(space.low), np.asarray(space.high)
    if low.size and (low == low.flat[0]).all() and (high == high.flat[0]).all():
        return f"[{low.flat[0].item()}, {high.flat[0].item()}]"
    return f"[{low.tolist()}, {high.tolist()}]"


def _head(policy, algorithm: str | None) -> str:
    """What the policy's deterministic action is, in words."""
    from gymnasium import spaces

    actor = getattr(policy, "actor", policy)  # SAC, TD3, TQC and CrossQ keep their action head in the actor
    dist = getattr(actor, "action_dist", None)
    if dist is not None:
        return _HEADS.get(type(dist).__name__, f"deterministic action of {type(dist).__name__}")
    if hasattr(policy, "q_net"):
        return "argmax over Q-values"
    if hasattr(policy, "quantile_net"):
        return "argmax over the quantiles' mean (QR-DQN Q-values)"
    if algorithm == "ARS":
        if isinstance(policy.action_space, spaces.Discrete):
            return "argmax over action logits"
        kind = "MLP" if policy.net_arch else "linear"
        return f"ARS {kind} policy output{' (tanh)' if policy.squash_output else ''}"
    return "deterministic actor output (tanh)"


def _baked(
    module: SB3ExportModule, policy, normalizer: ObsNormalizer | None, algorithm: str | None
) -> list[str]:
    from gymnasium import spaces
    from stable_baselines3.common.preprocessing import is_image_space

    baked = []
    if normalizer is not None:
        which = f" of {', '.join(normalizer.keys)}" if normalizer.keys else ""
        baked.append(f"VecNormalize observation normalization{which} (clip {normalizer.clip_obs})")
    saved = _per_key(policy.observation_space)
    if module.channel_last:
        baked.append("channel-last image transposed to channel-first")
    if policy.normalize_images and any(is_image_space(s) for s in saved.values()):
        baked.append("image pixels divided by 255")
    if any(isinstance(s, spaces.Discrete | spaces.MultiDiscrete) for s in saved.values()):
        baked.append("one-hot encoding of Discrete/MultiDiscrete observations")
    if isinstance(module, SB3RecurrentExportModule):
        lstm = policy.lstm_actor
        baked.append(f"actor LSTM x{lstm.num_layers} (hidden {lstm.hidden_size})")
    baked.append(_head(policy, algorithm))
    if module.bounds == "unscale":
        baked.append(f"tanh squash rescaled to action bounds {_bounds(policy.action_space)}")
    elif module.bounds == "clip":
        baked.append(f"clip to action bounds {_bounds(policy.action_space)}")
    return baked


#: What MaskablePPO's export leaves to the caller (the sidecar's ``left_to_caller``).
MASKS_LEFT = (
    "action masks are not applied: the file returns MaskablePPO's action with every action allowed "
    "(model.predict without action_masks); where the env forbids actions, check the action "
    "against env.action_masks() yourself, or evaluate the checkpoint, which applies them"
)


def _spec(
    module: SB3ExportModule,
    policy,
    observation_space,
    normalizer: ObsNormalizer | None,
    algorithm: str | None,
    recurrent: RecurrentSpec | None = None,
) -> ExportSpec:
    from stable_baselines3.common.preprocessing import is_image_space

    module = module.eval()
    obs_shape, obs_groups = obs_layout(observation_space)
    normalization = None
    if normalizer is not None:
        normalization = {
            "kind": "sb3_vecnormalize",
            "formula": FORMULA,
            "epsilon": normalizer.epsilon,
            "clip_obs": normalizer.clip_obs,
            "keys": normalizer.keys,
        }
    images = [k for k, s in _per_key(policy.observation_space).items() if is_image_space(s)]
    left = ["pass raw pixel values 0..255 as float32"] if images else []
    if algorithm == "MaskablePPO":
        left.append(MASKS_LEFT)
    if recurrent is not None:
        left.append("zero an env's LSTM state (h, c) when its episode starts (RecurrentPPO's episode_start)")
    return ExportSpec(
        module=module,
        obs_shape=obs_shape,
        obs_groups=obs_groups,
        normalization=normalization,
        baked=_baked(module, policy, normalizer, algorithm),
        left_to_caller=left,
        recurrent=recurrent,
    )


def export_spec(
    policy, observation_space, normalizer: ObsNormalizer | None, algorithm: str | None
) -> ExportSpec:
    """The :class:`ExportSpec` of an SB3 policy module, its raw observation space and VecNormalize."""
    module = SB3ExportModule(policy, observation_space, normalizer)
    return _spec(module, policy, observation_space, normalizer, algorithm)


def recurrent_export_spec(policy, observation_space, normalizer: ObsNormalizer | None) -> ExportSpec:
    """RecurrentPPO's :class:`ExportSpec`: the actor with explicit LSTM state inputs and outputs."""
    lstm = policy.lstm_actor
    module = SB3RecurrentExportModule(policy, observation_space, normalizer)
    recurrent = RecurrentSpec("lstm", int(lstm.num_layers), int(lstm.hidden_size))
    return _spec(module, policy, observation_space, normalizer, "RecurrentPPO", recurrent)
