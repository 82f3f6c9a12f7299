"""skrl policies rebuilt in plain torch: scaler, MLP, output expression, eval-mode clipping.

The computation follows skrl 2.x step by step, so that the actions match bit for bit:

- ``RunningStandardScaler``: ``clamp((x - mean.float()) / (sqrt(var.float()) + epsilon), -clip, clip)``
  (skrl's defaults ``epsilon=1e-8``, ``clip_threshold=5``);
- the MLP: every hidden layer followed by its activation, the output layer by the output
  expression (``ACTIONS``, ``tanh(ACTIONS)``, ``2 * tanh(ACTIONS)``, ...);
- ``GaussianMixin`` in eval (``stochastic_evaluation=False``, skrl's default): the mean action,
  clamped to the action bounds only when ``clip_mean_actions``; stochastic mode samples
  ``Normal(mean, exp(clamp(log_std)))`` and clamps when ``clip_actions``;
- ``DeterministicMixin``: the output, clamped when ``clip_actions``.

skrl's env wrapper passes actions to the env without clipping, and neither does zoo.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zoo.frameworks.skrl.checkpoint import Linear, Normalizer
from zoo.frameworks.skrl.config import PolicySpec, ScalerSpec


def build_module(policy_state, layers: list[Linear], spec: PolicySpec, norm: Normalizer | None,
                 scaler: ScalerSpec):  # fmt: skip
    """An ``nn.Module`` mapping raw observations to skrl's (mean) actions, weights loaded."""
    import torch
    from torch import nn

    activations = spec.activation_for(len(layers) - 1)
    functions = {
        "elu": nn.functional.elu, "relu": nn.functional.relu, "leaky_relu": nn.functional.leaky_relu,
        "selu": nn.functional.selu, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
        "softplus": nn.functional.softplus, "softsign": nn.functional.softsign,
    }  # fmt: skip

    class SkrlMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.linears = nn.ModuleList(
                nn.Linear(x.in_features, x.out_features, bias=x.bias) for x in layers
            )
            if norm is not None:
                self.register_buffer("running_mean", norm.state["running_mean"].clone().to(torch.float64))
                self.register_buffer(
                    "running_variance", norm.state["running_variance"].clone().to(torch.float64)
                )

        def normalize(self, x):
            if norm is None:
                return x
            std = torch.sqrt(self.running_variance.float()) + scaler.epsilon
            return torch.clamp(
                (x - self.running_mean.float()) / std, -scaler.clip_threshold, scaler.clip_threshold
            )

        def forward(self, obs):
            x = self.normalize(obs)
            for i, linear in enumerate(self.linears):
                x = linear(x)
                if i < len(self.linears) - 1:
                    x = functions[activations[i]](x)
            for op, arg in spec.output:
                x = functions[arg](x) if op == "act" else x * arg
            return x

    module = SkrlMLP()
    module.scaler = scaler  # the constants normalize() uses, for the export sidecar
    with torch.no_grad():
        for linear, layer in zip(module.linears, layers, strict=True):
            linear.weight.copy_(policy_state[f"{layer.prefix}.weight"])
            if layer.bias:
                linear.bias.copy_(policy_state[f"{layer.prefix}.bias"])
    return module.eval()


class SkrlPolicy:
    """A :class:`zoo.policy.Policy` over a rebuilt skrl policy model."""

    is_recurrent = False

    def __init__(self, module, spec: PolicySpec, log_std, observation_space, action_space, device: str,
                 seed: int):  # fmt: skip
        import torch

        self.device = torch.device(device)
        self.module = module.to(self.device)
        self.spec = spec
        self.log_std = None if log_std is None else log_std.to(self.device, torch.float32)
        self.observation_space = observation_space
        self.action_space = action_space
        self._low = torch.as_tensor(action_space.low, dtype=torch.float32, device=self.device)
        self._high = torch.as_tensor(action_space.high, dtype=torch.float32, device=self.device)
        self._generator = torch.Generator(device=self.device).manual_seed(seed)

    def _clamp(self, x):
        import torch

        return torch.clamp(x, min=self._low, max=self._high)

    def act(
        self, obs_batch: np.ndarray, state: Any = None, deterministic: bool = True
    ) -> tuple[np.ndarray, Any]:
        import torch

        with torch.inference_mode():
            obs = torch.as_tensor(np.asarray(obs_batch), dtype=torch.float32, device=self.device)
            out = self.module(obs.reshape(len(obs), -1))
            if self.spec.kind == "deterministic":
                actions = self._clamp(out) if self.spec.clip_actions else out
            else:
                mean = self._clamp(out) if self.spec.clip_mean_actions else out
                actions = mean
                if not deterministic and self.log_std is not None:
                    log_std = self.log_std
                    if self.spec.clip_log_std:
                        log_std = torch.clamp(log_std, self.spec.min_log_std, self.spec.max_log_std)
                    noise = torch.randn(mean.shape, generator=self._generator, device=self.device)
                    actions = mean + log_std.exp() * noise
                    actions = self._clamp(actions) if self.spec.clip_actions else actions
            shape = (len(obs), *self.action_space.shape)
            return actions.reshape(shape).cpu().numpy(), state

    def reset(self, done_mask: np.ndarray) -> None:
        """Feed-forward policies carry no state between steps."""

    def _clamps(self) -> bool:
        return self.spec.clip_actions if self.spec.kind == "deterministic" else self.spec.clip_mean_actions

    def export_spec(self):
        """The rebuilt skrl model (scaler included) on a CPU copy, with the eval-mode clamp when skrl applies one."""
        import copy

        from zoo.exporter.modules import ClampedActions
        from zoo.exporter.obs import obs_layout
        from zoo.policy import ExportSpec

        module = copy.deepcopy(self.module).cpu().eval()
        obs_shape, groups = obs_layout(self.observation_space, "policy")
        baked = ["Gaussian mean" if self.spec.kind != "deterministic" else "deterministic actor output"]
        if self.spec.output:
            baked.append("output " + " ".join(f"{op} {arg}" for op, arg in self.spec.output))
        low, high = (self._low.cpu(), self._high.cpu()) if self._clamps() else (None, None)
        if low is not None:
            baked.append(f"clamp to the action bounds [{low.tolist()}, {high.tolist()}]")
        left = [] if low is not None else ["skrl passes actions to the env unclipped; the env applies its own "
                                           "action scaling and clipping"]  # fmt: skip
        normalization = None
        if getattr(module, "running_mean", None) is not None:
            normalization = {"kind": "skrl_running_standard_scaler",
                             "formula": "clamp((x - mean) / (sqrt(var) + epsilon), -clip_threshold, clip_threshold)",
                             "epsilon": module.scaler.epsilon, "clip_threshold": module.scaler.clip_threshold}  # fmt: skip
            baked.insert(0, "RunningStandardScaler observation normalization")
        wrapped = ClampedActions(module, low, high, tuple(self.action_space.shape))
        return ExportSpec(wrapped, obs_shape, groups, normalization, baked=baked, left_to_caller=left)
