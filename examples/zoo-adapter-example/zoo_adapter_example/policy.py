"""tinyrl's policy as zoo's evaluator and exporter see it (imported only when a policy is loaded: torch)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
from torch import nn

from zoo.policy import ExportSpec
from zoo_adapter_example.train import build


class Greedy(nn.Module):
    """The exported form: the index of the largest logit."""

    def __init__(self, net: nn.Module):
        super().__init__()
        self.net = net

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs).argmax(dim=1)


class TinyPolicy:
    """Greedy actions, or actions sampled from the logits (seeded) in zoo's stochastic mode."""

    is_recurrent = False

    def __init__(self, state: dict, layers: list[tuple[int, int]], spaces: tuple, device: str, seed: int):
        self.observation_space, self.action_space = spaces
        self.device = device
        self.net = build([layers[0][0], *(o for _, o in layers)]).to(device).eval()
        self.net.load_state_dict(state)
        self._generator = torch.Generator().manual_seed(seed)

    def act(
        self, obs_batch: np.ndarray, state: Any = None, deterministic: bool = True
    ) -> tuple[np.ndarray, Any]:
        with torch.no_grad():
            logits = self.net(torch.as_tensor(obs_batch, dtype=torch.float32, device=self.device)).cpu()
        if deterministic:
            return logits.argmax(dim=1).numpy(), None
        probs = torch.softmax(logits, dim=1)
        return torch.multinomial(probs, 1, generator=self._generator).squeeze(1).numpy(), None

    def reset(self, done_mask: np.ndarray) -> None:
        """No state between steps."""

    def export_spec(self) -> ExportSpec:
        from zoo.exporter.obs import obs_layout

        shape, groups = obs_layout(self.observation_space)
        module = Greedy(copy.deepcopy(self.net).cpu().eval())
        return ExportSpec(module, shape, groups, None, baked=["argmax over the logits"])
