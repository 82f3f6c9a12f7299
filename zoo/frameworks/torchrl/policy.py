"""A TorchRL actor as zoo's evaluator and exporter see it (imported when a policy is loaded: torch)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from zoo.frameworks.torchrl.network import TorchRLActor
from zoo.policy import ExportSpec


class TorchRLPolicy:
    """TorchRL's deterministic action (``ExplorationType.DETERMINISTIC``), or in zoo's stochastic mode a
    TanhNormal sample: ``loc + scale * noise`` through the same squashing, the scale TorchRL's
    ``AddStateIndependentNormalScale`` gives (``exp`` of its parameter). A ``QValueActor`` acts greedily either
    way: TorchRL explores with a separate ``EGreedyModule`` that a checkpoint's policy does not hold."""

    is_recurrent = False

    def __init__(self, actor: TorchRLActor, spaces: tuple, device: str, seed: int):
        self.observation_space, self.action_space = spaces
        self.device = device
        self.actor = actor.to(device).eval()
        self._generator = torch.Generator(device=device).manual_seed(seed)

    def act(
        self, obs_batch: np.ndarray, state: Any = None, deterministic: bool = True
    ) -> tuple[np.ndarray, Any]:
        obs = torch.as_tensor(np.asarray(obs_batch), dtype=torch.float32, device=self.device)
        obs = obs.reshape(len(obs), -1)
        with torch.inference_mode():
            actions = self.actor(obs) if deterministic or self.actor.qvalue else self._sample(obs)
        out = actions.cpu().numpy()
        if not self.actor.qvalue:
            out = out.reshape(len(out), *self.action_space.shape)
        return out, state

    def _sample(self, obs: torch.Tensor) -> torch.Tensor:
        from zoo.errors import UnsupportedError

        actor = self.actor
        if actor.scale_param.numel() == 0:
            raise UnsupportedError(
                "zoo samples TanhNormal actions only with AddStateIndependentNormalScale (a "
                "NormalParamExtractor's scale mapping is not in the checkpoint)",
                hint="evaluate with --deterministic",
            )
        loc = actor.loc_of(actor.features(obs))
        scale = actor.scale_param.exp().expand_as(loc)
        noise = torch.randn(loc.shape, generator=self._generator, device=self.device)
        return actor.squash(loc + scale * noise)

    def reset(self, done_mask: np.ndarray) -> None:
        """No state between steps."""

    def export_spec(self) -> ExportSpec:
        """The very module ``act`` uses (deterministic), on a CPU copy: normalizer, clip, MLP and head baked."""
        from zoo.exporter.obs import obs_layout

        module = copy.deepcopy(self.actor).cpu().eval()
        for param in module.parameters():
            param.requires_grad_(False)
        shape, groups = obs_layout(self.observation_space)
        baked = []
        normalization = None
        if module.has_norm:
            formula = "(x - loc) / scale" if module.standard_normal else "x * scale + loc"
            baked.append(f"TorchRL ObservationNorm {formula}")
            normalization = {
                "kind": "torchrl_observation_norm",
                "formula": formula,
                "loc": module.obs_loc.tolist(),
                "scale": module.obs_scale.tolist(),
            }
        if module.has_clip:
            baked.append(f"ClipTransform to [{module.clip_low:g}, {module.clip_high:g}]")
            if normalization is not None:
                normalization["clip"] = [module.clip_low, module.clip_high]
        if module.qvalue:
            baked.append("argmax of the Q-values (QValueActor, int64)")
        else:
            bounds = f" rescaled to [{module.low.tolist()}, {module.high.tolist()}]" if module.affine else ""
            baked.append(f"TanhNormal deterministic sample: tanh of the loc{bounds}")
        return ExportSpec(module, shape, groups, normalization, baked=baked, left_to_caller=[])
