"""Model classes of CleanRL's PyTorch experiments, key-for-key compatible.

These mirror the ``nn.Module`` classes inside CleanRL's single-file training
scripts so that their saved state dicts load without depending on the
``cleanrl`` package (whose wheel cannot be installed on Python 3.11). The
constructor signature is CleanRL's: ``Model(envs)`` where ``envs`` is the
vector env (anything with ``single_observation_space``,
``single_action_space`` and a batched ``action_space``). Attribute and buffer
names must not change: the tests compare them with the wheel's classes.

A class that reads frames says so with ``observation_kind = "image"``; the others read vectors (the
adapter's fit check compares this with the env's observations before building one:
:mod:`zoo.frameworks.kinds`).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def _obs_dim(envs) -> int:
    return int(np.array(envs.single_observation_space.shape).prod())


def _act_dim(envs) -> int:
    return int(np.prod(envs.single_action_space.shape))


def _nature_cnn_trunk(out_features: int) -> list[nn.Module]:
    return [
        nn.Conv2d(4, 32, 8, stride=4),
        nn.ReLU(),
        nn.Conv2d(32, 64, 4, stride=2),
        nn.ReLU(),
        nn.Conv2d(64, 64, 3, stride=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(3136, 512),
        nn.ReLU(),
        nn.Linear(512, out_features),
    ]


def _mlp_trunk(in_features: int, out_features: int) -> list[nn.Module]:
    return [
        nn.Linear(in_features, 120),
        nn.ReLU(),
        nn.Linear(120, 84),
        nn.ReLU(),
        nn.Linear(84, out_features),
    ]


class QNetwork(nn.Module):
    """``dqn.py``: MLP Q-network, ``forward(obs) -> q_values``."""

    def __init__(self, envs):
        super().__init__()
        self.network = nn.Sequential(*_mlp_trunk(_obs_dim(envs), envs.single_action_space.n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x)


class AtariQNetwork(nn.Module):
    """``dqn_atari.py``: Nature-CNN Q-network on 4 stacked 84x84 frames (uint8)."""

    observation_kind = "image"

    def __init__(self, envs):
        super().__init__()
        self.network = nn.Sequential(*_nature_cnn_trunk(envs.single_action_space.n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x / 255.0)


class _C51Head(nn.Module):
    """Shared C51 logic: logits -> per-action distributions -> expected Q."""

    scale_input: float = 1.0

    def __init__(self, envs, trunk: list[nn.Module], n_atoms: int, v_min: float, v_max: float):
        super().__init__()
        self.n_atoms = n_atoms
        self.register_buffer("atoms", torch.linspace(v_min, v_max, steps=n_atoms))
        self.n = envs.single_action_space.n
        self.network = nn.Sequential(*trunk)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Expected Q-values, shape ``(batch, n_actions)``."""
        logits = self.network(x / self.scale_input)
        pmfs = torch.softmax(logits.view(-1, self.n, self.n_atoms), dim=2)
        return (pmfs * self.atoms).sum(2)


class C51QNetwork(_C51Head):
    """``c51.py``: MLP distributional Q-network."""

    def __init__(self, envs, n_atoms: int = 101, v_min: float = -100, v_max: float = 100):
        n = envs.single_action_space.n
        super().__init__(envs, _mlp_trunk(_obs_dim(envs), n * n_atoms), n_atoms, v_min, v_max)


class C51AtariQNetwork(_C51Head):
    """``c51_atari.py``: Nature-CNN distributional Q-network."""

    observation_kind = "image"
    scale_input = 255.0

    def __init__(self, envs, n_atoms: int = 101, v_min: float = -100, v_max: float = 100):
        n = envs.single_action_space.n
        super().__init__(envs, _nature_cnn_trunk(n * n_atoms), n_atoms, v_min, v_max)


class PPOContinuousAgent(nn.Module):
    """``ppo_continuous_action.py``: separate actor/critic MLPs, state-independent log std."""

    def __init__(self, envs):
        super().__init__()
        obs_dim, act_dim = _obs_dim(envs), _act_dim(envs)
        self.critic = nn.Sequential(
            nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1)
        )
        self.actor_mean = nn.Sequential(
            nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, act_dim)
        )
        self.actor_logstd = nn.Parameter(torch.zeros(1, act_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The mean action (the deterministic policy)."""
        return self.actor_mean(x)


class ContinuousQNetwork(nn.Module):
    """``ddpg``/``td3_continuous_action.py``: critic ``Q(s, a)``; saved but not used to act."""

    def __init__(self, envs):
        super().__init__()
        self.fc1 = nn.Linear(_obs_dim(envs) + _act_dim(envs), 256)
        self.fc2 = nn.Linear(256, 256)
        self.fc3 = nn.Linear(256, 1)

    def forward(self, x: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        x = torch.cat([x, a], 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def saved_shape_alternatives(model: nn.Module) -> dict[str, tuple[tuple[int, ...], ...]]:
    """State-dict key -> the other shapes a saved file may hold for it, which ``load_state_dict`` takes.

    Collected from every submodule's ``_saved_shape_alternatives()`` (keys prefixed as in the state dict),
    so ``zoo check`` (:func:`zoo.frameworks.cleanrl.checkpoint.expected_shapes`) and the loader accept
    exactly the same shapes. Works on the meta device: only shapes are read.
    """
    found: dict[str, tuple[tuple[int, ...], ...]] = {}
    for prefix, module in model.named_modules():
        own = getattr(module, "_saved_shape_alternatives", None)
        if own is None:
            continue
        for name, shapes in own().items():
            found[f"{prefix}.{name}" if prefix else name] = shapes
    return found


class DeterministicActor(nn.Module):
    """``ddpg``/``td3_continuous_action.py``: tanh actor rescaled to the action bounds.

    ``action_scale``/``action_bias`` are buffers of shape ``(1, act_dim)``: CleanRL computed them from
    the *vector* env's batched action space (``env.action_space``, one env) in ``ddpg_continuous_action``
    and in ``td3_continuous_action`` up to 35896b1f. Since 9d709007 ("Add TD3 and SAC support for vec
    envs", 2025-01-23) ``td3_continuous_action`` computes them from ``env.single_action_space``: shape
    ``(act_dim,)``. Both load: a ``(act_dim,)`` buffer is reshaped to ``(1, act_dim)`` on load, which
    broadcasts in :meth:`forward` to the same actions.
    """

    #: Buffers CleanRL has saved both as ``(1, act_dim)`` and as ``(act_dim,)``.
    RESHAPED_BUFFERS = ("action_scale", "action_bias")

    def __init__(self, envs):
        super().__init__()
        self.fc1 = nn.Linear(_obs_dim(envs), 256)
        self.fc2 = nn.Linear(256, 256)
        self.fc_mu = nn.Linear(256, _act_dim(envs))
        high, low = envs.action_space.high, envs.action_space.low
        self.register_buffer("action_scale", torch.tensor((high - low) / 2.0, dtype=torch.float32))
        self.register_buffer("action_bias", torch.tensor((high + low) / 2.0, dtype=torch.float32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.fc2(F.relu(self.fc1(x))))
        return torch.tanh(self.fc_mu(x)) * self.action_scale + self.action_bias

    def _saved_shape_alternatives(self) -> dict[str, tuple[tuple[int, ...], ...]]:
        """``(act_dim,)`` for the ``(1, act_dim)`` buffers (td3_continuous_action since 9d709007)."""
        return {name: (tuple(getattr(self, name).shape[1:]),) for name in self.RESHAPED_BUFFERS}

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # ``Module.load_state_dict`` passes its own copy of the mapping: replacing entries is safe.
        alternatives = self._saved_shape_alternatives()
        for name in self.RESHAPED_BUFFERS:
            value = state_dict.get(prefix + name)
            if value is not None and tuple(value.shape) in alternatives[name]:
                state_dict[prefix + name] = value.reshape(getattr(self, name).shape)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class ResidualBlock(nn.Module):
    """IMPALA residual block (``qdagger_dqn_atari_impalacnn.py``)."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv0 = nn.Conv2d(channels, channels, kernel_size=3, padding=1)
        self.conv1 = nn.Conv2d(channels, channels, kernel_size=3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv1(F.relu(self.conv0(F.relu(x))))


class ConvSequence(nn.Module):
    """IMPALA conv + max-pool + two residual blocks."""

    def __init__(self, input_shape: tuple[int, int, int], out_channels: int):
        super().__init__()
        self._input_shape = input_shape
        self._out_channels = out_channels
        self.conv = nn.Conv2d(input_shape[0], out_channels, kernel_size=3, padding=1)
        self.res_block0 = ResidualBlock(out_channels)
        self.res_block1 = ResidualBlock(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(self.conv(x), kernel_size=3, stride=2, padding=1)
        return self.res_block1(self.res_block0(x))

    def get_output_shape(self) -> tuple[int, int, int]:
        _c, h, w = self._input_shape
        return (self._out_channels, (h + 1) // 2, (w + 1) // 2)


class ImpalaQNetwork(nn.Module):
    """``qdagger_dqn_atari_impalacnn.py``: IMPALA-CNN student Q-network."""

    observation_kind = "image"

    def __init__(self, envs):
        super().__init__()
        shape = tuple(envs.single_observation_space.shape)
        layers: list[nn.Module] = []
        for out_channels in (16, 32, 32):
            seq = ConvSequence(shape, out_channels)
            shape = seq.get_output_shape()
            layers.append(seq)
        layers += [
            nn.Flatten(),
            nn.ReLU(),
            nn.Linear(shape[0] * shape[1] * shape[2], 256),
            nn.ReLU(),
            nn.Linear(256, envs.single_action_space.n),
        ]
        self.network = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x / 255.0)
