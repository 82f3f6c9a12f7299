"""Observation terms baked into an exported policy: ``forward(raw_obs)`` is the whole deployment contract.

A task whose observation is made of terms (zoo's Genesis tasks: base_ang_vel, commands, dof_pos, ...)
computes each term as ``clip(raw * scale)`` before the policy sees it. The contract (DESIGN section 5) is
that the exported model does this itself, so the robot side feeds raw sensor values only. Every
``obs_groups`` entry of a sidecar lists its terms: the task's own, else one term covering the whole group
(scale 1, no clip), which the model applies too (a no-op). No training noise is part of a term: observation
noise (Isaac Lab's corruption) is a training device, and the model is deterministic.

The evaluator's env gives observations the task has already scaled; an exported file with baked terms gets
them back as raw values (:meth:`TermScales.raw`) so that it evaluates on the same task as its checkpoint.
A file exported before terms were baked says nothing of ``obs_terms_baked`` and takes scaled observations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

#: What the sidecar's ``baked`` list says the model does first.
BAKED = (
    "observation terms first: clip(raw * scale) per term of obs_groups (feed raw observations); "
    "no observation noise"
)


def record_terms(obs_groups: dict[str, dict], obs_terms: dict) -> None:
    """Each group's terms into its ``obs_groups`` entry: the task's, when they add up to the group the policy
    reads, else one term of the whole group (scale 1, no clip)."""
    for name, group in obs_groups.items():
        terms = obs_terms.get(name)
        if terms and sum(t.dim for t in terms) == group["dim"]:
            group["terms"] = [t.to_json() for t in terms]
        else:
            group["terms"] = [{"name": name, "start": 0, "dim": group["dim"], "scale": 1.0, "clip": None}]


@dataclass(frozen=True)
class TermScales:
    """Per-value ``scale`` and ``clip`` over the flat input (``clip`` inf: not clipped)."""

    scale: np.ndarray
    clip: np.ndarray

    @classmethod
    def of(cls, obs_groups: dict[str, dict], obs_dim: int) -> TermScales | None:
        """The scales the groups' terms give, or None when every term is the identity (nothing to apply)."""
        scale = np.ones(obs_dim, dtype=np.float32)
        clip = np.full(obs_dim, np.inf, dtype=np.float32)
        for group in obs_groups.values():
            for term in group.get("terms") or []:
                at = slice(group["start"] + term["start"], group["start"] + term["start"] + term["dim"])
                scale[at] = np.asarray(term["scale"], dtype=np.float32)
                if term.get("clip") is not None:
                    clip[at] = float(term["clip"])
        if np.all(scale == 1.0) and np.all(np.isinf(clip)):
            return None
        return cls(scale, clip)

    def apply(self, raw: np.ndarray) -> np.ndarray:
        """What the task computes from raw values: ``clip(raw * scale)``."""
        return np.clip(raw * self.scale, -self.clip, self.clip).astype(np.float32)

    def raw(self, observed: np.ndarray) -> np.ndarray:
        """Raw values the task's observation came from (``observed / scale``; a term scaled by 0 is 0)."""
        safe = np.where(self.scale == 0.0, 1.0, self.scale)
        return np.where(self.scale == 0.0, 0.0, observed / safe).astype(np.float32)

    def module(self, net: Any):
        """``net`` behind the terms: an ``nn.Module`` taking raw observations."""
        import torch

        from zoo.exporter.modules import ObsTermsFirst

        return ObsTermsFirst(net, torch.from_numpy(self.scale), torch.from_numpy(self.clip))


def model_obs(obs: Any, obs_groups: dict[str, dict], scales: TermScales | None) -> Any:
    """A batch of raw observations as the task gives them to the policy (terms applied); Dict ones stay Dicts."""
    if scales is None:
        return obs
    from zoo.exporter.obs import flatten_obs, unflatten_obs

    applied = scales.apply(flatten_obs(obs, obs_groups))
    return unflatten_obs(applied, obs_groups) if isinstance(obs, dict) else applied
