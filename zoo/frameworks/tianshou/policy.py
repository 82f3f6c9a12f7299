"""A Tianshou actor rebuilt in plain torch, behind zoo's Policy protocol, and its export.

:class:`TianshouActor` computes, from the raw observation, what Tianshou's own evaluation hands the env:

1. the observation normalizer of the run (``env_obs_rms.pkl``, Tianshou's ``VectorEnvNormObs``):
   ``clip((obs - mean) / sqrt(var + eps), -clip_max, clip_max)``, in the statistics' dtype (float32: the
   same correctly rounded operations as Tianshou's numpy, so the same bits);
2. the network (``Net``/``MLP`` layers in module order);
3. the head: ``argmax`` (DQN's Q-values, a categorical's mode), or the Gaussian's mode ``mu``
   (``max_action * tanh(mu)`` for a bounded actor) mapped as ``Policy.map_action`` does: clipped to [-1, 1]
   (or ``tanh``), then scaled to the action space's bounds.

Stochastic mode is Tianshou's own: epsilon-greedy with the policy's ``eps_inference`` for DQN, a sample of
``Normal(mu, exp(sigma_param))`` (then the same mapping) for a Gaussian, a categorical sample for a
discrete actor; drawn from the policy's seeded generator.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from zoo.errors import UnsupportedError
from zoo.frameworks.tianshou.model import Actor, ObsNorm
from zoo.policy import ExportSpec


def _activation(name: str, arguments: tuple[tuple[str, Any], ...]):
    kwargs = {key: value for key, value in arguments if value is not None}
    return getattr(torch.nn, name)(**kwargs)


def build_actor(actor: Actor, weights: dict[str, np.ndarray], norm: ObsNorm | None):
    """The :class:`TianshouActor` module of ``actor`` with ``weights`` (arrays by tensor key)."""
    steps: list[torch.nn.Module] = []
    for layer in actor.layers:
        if layer.kind == "linear":
            assert layer.weight is not None
            weight = torch.as_tensor(weights[layer.weight])
            linear = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=layer.bias is not None)
            with torch.no_grad():
                linear.weight.copy_(weight)
                if layer.bias is not None:
                    linear.bias.copy_(torch.as_tensor(weights[layer.bias]))
            steps.append(linear)
        elif layer.kind == "activation":
            assert layer.name is not None
            steps.append(_activation(layer.name, layer.arguments))
        elif layer.kind == "flatten":
            steps.append(torch.nn.Flatten(1))
        elif layer.kind == "softmax":
            steps.append(torch.nn.Softmax(dim=-1))
    return TianshouActor(torch.nn.Sequential(*steps), actor, norm).eval()


class TianshouActor(torch.nn.Module):
    """obs -> normalizer -> network -> Tianshou's deterministic action (int64 indices or float actions)."""

    def __init__(self, body, actor: Actor, norm: ObsNorm | None):
        super().__init__()
        self.body = body
        self.argmax = actor.head == "argmax"
        self.normalized = norm is not None
        self.norm_float64 = bool(norm is not None and norm.mean.dtype == np.float64)
        dtype = torch.float64 if self.norm_float64 else torch.float32
        mean = norm.mean if norm is not None else np.zeros(1)
        std = np.sqrt(norm.var + norm.eps) if norm is not None else np.ones(1)
        self.register_buffer("mean", torch.as_tensor(mean, dtype=dtype))
        self.register_buffer("std", torch.as_tensor(std, dtype=dtype))
        self.clip = float(norm.clip_max) if norm is not None and norm.clip_max else 0.0
        self.bounded = not actor.unbounded
        self.max_action = float(actor.max_action)
        self.bound = actor.bound_method or ""
        self.scaling = actor.scaling and actor.action is not None and actor.action.kind == "Box"
        low = actor.action.low if self.scaling and actor.action is not None else None
        high = actor.action.high if self.scaling and actor.action is not None else None
        self.register_buffer(
            "low", torch.as_tensor(low if low is not None else np.zeros(1), dtype=torch.float32)
        )
        self.register_buffer(
            "high", torch.as_tensor(high if high is not None else np.ones(1), dtype=torch.float32)
        )

    def features(self, obs):
        """The network's output for raw observations (normalized first, as the run's env did)."""
        x = obs
        if self.normalized:
            x = x.to(self.mean.dtype)
            x = (x - self.mean) / self.std
            if self.clip:
                x = torch.clamp(x, -self.clip, self.clip)
        return self.body(x.to(torch.float32))

    def mapped(self, mu):
        """A Gaussian's action as ``Policy.map_action`` hands it to the env."""
        if self.bound == "clip":
            mu = torch.clamp(mu, -1.0, 1.0)
        elif self.bound == "tanh":
            mu = torch.tanh(mu)
        if self.scaling:
            mu = self.low + (self.high - self.low) * (mu + 1.0) / 2.0
        return mu

    def mode(self, out):
        """The bounded actor's ``max_action * tanh(mu)`` (the distribution's mode, before the mapping)."""
        return self.max_action * torch.tanh(out) if self.bounded else out

    def forward(self, obs):
        out = self.features(obs)
        if self.argmax:
            return out.argmax(dim=1)
        return self.mapped(self.mode(out))


class TianshouPolicy:
    """A :class:`zoo.policy.Policy` over a rebuilt Tianshou actor."""

    is_recurrent = False

    def __init__(
        self,
        module: TianshouActor,
        actor: Actor,
        observation_space,
        action_space,
        device: str,
        seed: int,
        sigma: np.ndarray | None,
        epsilon: float,
    ):
        self.device = torch.device(device)
        self.module = module.to(self.device)
        self.actor = actor
        self.observation_space = observation_space
        self.action_space = action_space
        self.sigma = (
            None if sigma is None else torch.as_tensor(sigma, dtype=torch.float32, device=self.device)
        )
        self.epsilon = epsilon
        self._generator = torch.Generator(device=self.device).manual_seed(seed)

    def act(
        self, obs_batch: np.ndarray, state: Any = None, deterministic: bool = True
    ) -> tuple[np.ndarray, Any]:
        obs = torch.as_tensor(np.asarray(obs_batch), dtype=torch.float32, device=self.device)
        with torch.inference_mode():
            if deterministic:
                return self.module(obs).cpu().numpy(), state
            return self._sample(obs).cpu().numpy(), state

    def _sample(self, obs):
        out = self.module.features(obs)
        if self.actor.head == "argmax" and self.actor.policy_class == "DiscreteQLearningPolicy":
            greedy = out.argmax(dim=1)
            n = out.shape[1]
            draw = torch.rand(len(out), generator=self._generator, device=self.device) < self.epsilon
            random = torch.randint(n, (len(out),), generator=self._generator, device=self.device)
            return torch.where(draw, random, greedy)
        if self.actor.head == "argmax":
            probs = out if self.actor.softmax else torch.softmax(out, dim=-1)
            return torch.multinomial(probs, 1, generator=self._generator).squeeze(1)
        if self.sigma is None:
            raise UnsupportedError(
                "stochastic actions of an actor with a conditioned sigma are not rebuilt",
                hint="evaluate with --deterministic",
            )
        mu = self.module.mode(out)
        noise = torch.randn(mu.shape, generator=self._generator, device=self.device)
        return self.module.mapped(mu + self.sigma.exp().view(1, -1) * noise)

    def reset(self, done_mask: np.ndarray) -> None:
        """Feed-forward: nothing to reset."""

    def export_spec(self) -> ExportSpec:
        """The very module ``act`` runs, on a CPU copy, with the normalizer and action mapping baked in."""
        module = copy.deepcopy(self.module).cpu().eval()
        shape = tuple(int(d) for d in self.observation_space.shape)
        groups = {"obs": {"start": 0, "dim": int(np.prod(shape)), "shape": list(shape)}}
        baked = []
        normalization = None
        if module.normalized:
            normalization = {
                "kind": "tianshou_running_mean_std",
                "formula": "clip((x - mean) / sqrt(var + eps), -clip_max, clip_max)",
                "clip_max": module.clip or None,
            }
            baked.append("RunningMeanStd observation normalization (env_obs_rms.pkl)")
        if module.argmax:
            baked.append("argmax of the Q-values (int64)" if self.actor.head == "argmax" else "argmax")
        else:
            baked.append("Gaussian mode mu" + ("" if module.bounded else " (unbounded actor)"))
            if module.bounded:
                baked.append(f"max_action * tanh (max_action {module.max_action:g})")
            if module.bound:
                baked.append(f"action_bound_method {module.bound}")
            if module.scaling:
                baked.append(f"action scaling to [{module.low.tolist()}, {module.high.tolist()}]")
        return ExportSpec(module, shape, groups, normalization, baked=baked)
