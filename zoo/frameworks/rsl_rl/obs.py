"""From a gymnasium observation to the observation groups an rsl_rl model reads.

rsl_rl models take a TensorDict of named observation groups: the run config's ``obs_groups`` names
the ones the policy reads (``{"actor": ["policy", "camera"]}``), 1-D groups are concatenated in that
order and normalized, and each image group ``(C, H, W)`` goes through its own CNN (the ``cnns.{group}``
weights). zoo's envs are gymnasium envs: a Dict observation provides the groups by key; any other
observation is the one group the policy reads (flattened when that group is 1-D). An MLP or RNN actor
of a Box env reads the whole observation, flattened, as Isaac Lab's concatenated ``policy`` group.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zoo.frameworks.rsl_rl.checkpoint import Architecture

#: rsl_rl's fallback when the config's obs_groups lack the policy's set (``resolve_obs_groups``).
DEFAULT_GROUP = "policy"


@dataclass(frozen=True)
class ObsLayout:
    """The model's observation groups ``(name, per-env shape)``, 1-D ones first, each in the model's order.

    ``from_dict``: the env's observation is a Dict holding each group under its name; otherwise the whole
    observation is the single group.
    """

    vectors: tuple[tuple[str, tuple[int]], ...]
    images: tuple[tuple[str, tuple[int, int, int]], ...] = ()
    from_dict: bool = False

    @property
    def groups(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        return (*self.vectors, *self.images)

    def tensordict(self, obs_batch: Any, device):
        """A batch of env observations as the TensorDict the model reads."""
        import numpy as np
        import torch
        from tensordict import TensorDict

        def group(values: Any, shape: tuple[int, ...]):
            x = torch.as_tensor(np.asarray(values), dtype=torch.float32, device=device)
            return x.reshape(x.shape[0], *shape)

        if self.from_dict:
            groups = {name: group(obs_batch[name], shape) for name, shape in self.groups}
        else:
            ((name, shape),) = self.groups
            groups = {name: group(obs_batch, shape)}
        batch = next(iter(groups.values())).shape[0]
        return TensorDict(groups, batch_size=[batch], device=device)

    def from_tensors(self, groups: dict):
        """A tensor env's ``{group: tensor}`` (on the model's device) as the TensorDict the model reads."""
        import torch
        from tensordict import TensorDict

        from zoo.errors import LayoutMismatch

        missing = [name for name, _ in self.groups if name not in groups]
        if missing:
            raise LayoutMismatch(
                f"the policy reads the observation groups {missing}, the env gives {sorted(groups)}",
                hint="check the env (or --env-factory) against the run's obs_groups",
            )
        batch = next(iter(groups.values())).shape[0]
        picked = {name: groups[name].to(torch.float32).reshape(batch, *shape) for name, shape in self.groups}
        return TensorDict(picked, batch_size=[batch], device=picked[self.groups[0][0]].device)


def whole_observation(obs_dim: int) -> ObsLayout:
    """The one 1-D group an MLP or RNN actor reads when no env says more (``zoo check`` without an env)."""
    return ObsLayout(vectors=((DEFAULT_GROUP, (obs_dim,)),))


def _shape(space) -> tuple[int, ...]:
    return tuple(int(n) for n in (space.shape or ()))


def _flat(space) -> tuple[int]:
    return (math.prod(_shape(space)),)


def _policy_groups(keys: list[str], configured: list[str] | None, role: str) -> list[str]:
    """The groups the policy reads: the config's, else rsl_rl's fallback (a group named as the set, else policy)."""
    if configured:
        return configured
    return [role] if role in keys else [DEFAULT_GROUP]


def env_layout(
    space, arch: Architecture, configured: list[str] | None, role: str, env_id: str
) -> ObsLayout | str:
    """The layout of ``env_id``'s observation ``space`` for the model, or why the model cannot read it."""
    from gymnasium import spaces

    images = dict(arch.cnn_channels)
    if not isinstance(space, spaces.Dict):
        if not images:
            dim = _flat(space)
            if dim[0] != arch.obs_dim:
                return f"the actor takes {arch.obs_dim} observations, {env_id} gives {dim[0]}"
            return whole_observation(arch.obs_dim)
        vectors = [g for g in _policy_groups([], configured, role) if g not in images]
        if len(images) != 1 or vectors:
            return (
                f"the actor reads the groups {[*vectors, *images]}: {env_id} must give a Dict observation "
                f"with these keys, it gives {type(space).__name__}{_shape(space)}"
            )
        ((name, channels),) = images.items()
        return _image_problem(name, space, channels) or ObsLayout((), ((name, _shape(space)),))
    keys = list(space.spaces)
    wanted = _policy_groups(keys, configured, role)
    missing = [g for g in [*wanted, *images] if g not in keys]
    if missing:
        return f"the actor reads the observation groups {missing}, {env_id}'s Dict holds {keys}"
    unread = [g for g in images if g not in wanted]
    if unread:
        return f"the checkpoint has CNNs for {unread}, which the config's policy groups {wanted} do not name"
    for name, channels in images.items():
        problem = _image_problem(name, space[name], channels)
        if problem:
            return problem
    vectors = tuple((g, _flat(space[g])) for g in wanted if g not in images)
    dim = sum(shape[0] for _, shape in vectors)
    if not images and dim != arch.obs_dim:
        return f"the actor takes {arch.obs_dim} observations, {env_id}'s groups {wanted} give {dim}"
    return ObsLayout(vectors, tuple((g, _shape(space[g])) for g in images), from_dict=True)


def _image_problem(name: str, space, channels: int) -> str | None:
    shape = _shape(space)
    if len(shape) != 3:
        return f"the CNN of {name!r} takes images (channels, height, width), the env gives {shape}"
    if shape[0] != channels:
        return f"the CNN of {name!r} takes {channels}-channel images, the env's are {shape}"
    return None
