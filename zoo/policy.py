"""The one abstraction shared by every framework, the evaluator and the exporter."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np


class Policy(Protocol):
    """Maps a batch of raw observations to a batch of env actions.

    ``deterministic=False`` means the framework's published eval mode (epsilon-greedy
    for Q-networks, sampled actions for Gaussian policies, exploration noise for
    deterministic actors), drawn from the policy's own seeded generator so that the
    same seed gives the same result, bit for bit.

    Policies that can be exported also provide ``export_spec() -> ExportSpec``.

    A policy that acts on the env's action masks (MaskablePPO) sets ``uses_action_masks = True``;
    the evaluator then calls ``act(obs, state, deterministic, action_masks=masks)`` each step, with
    ``masks`` every sub-env's ``action_masks()`` stacked (bool, ``(num_envs, ...)``). Policies that
    do not set it are called without masks and never query the env for them.

    A gymnasium rollout on the CPU may go on in forked processes (:mod:`zoo.lanes`), each calling ``act`` on
    the full-width batch and keeping its own rows: a policy must compute each row from that row alone (and its
    own state), and draw a batch's randomness by the batch's shape, not its values. A policy holding what does
    not survive a fork (a thread it needs, a device handle) sets ``forks_safely = False``.
    """

    observation_space: Any
    action_space: Any
    is_recurrent: bool

    def act(
        self, obs_batch: np.ndarray, state: Any = None, deterministic: bool = True
    ) -> tuple[np.ndarray, Any]: ...

    def reset(self, done_mask: np.ndarray) -> None: ...


@dataclass(frozen=True)
class RecurrentSpec:
    """The recurrent core of a policy: state tensors are ``(num_layers, batch, hidden_dim)``."""

    rnn_type: str  # "lstm" (h and c) or "gru" (h only)
    num_layers: int
    hidden_dim: int


@dataclass
class ExportSpec:
    """What a policy hands the exporter: a plain torch module plus the facts the sidecar records.

    ``module`` runs on the CPU in eval mode and computes ``act(obs, deterministic=True)`` from the
    raw observation, with everything in between baked in (the framework's observation normalizer,
    image scaling, the action head and action rescaling). Its input is one float32 tensor of shape
    ``(batch, *obs_shape)``; Dict observations arrive flattened, group after group in ``obs_groups``
    order (see :func:`zoo.exporter.obs.flatten_obs`). Discrete policies return int64 indices.

    Recurrent policies (``recurrent`` set) have ``forward(obs, h, c) -> (actions, h, c)``; a GRU
    ignores ``c`` and returns it unchanged. The exporter adds the state handling for each format.
    """

    module: Any
    obs_shape: tuple[int, ...]
    obs_groups: dict[str, dict]  # {name: {"start", "dim", "shape"[, "terms"]}}, in input order
    normalization: dict | None  # the baked observation normalizer: {"kind", "formula", ...}; None: none
    baked: list[str] = field(default_factory=list)  # what the module does after the network, in words
    left_to_caller: list[str] = field(default_factory=list)  # what a deployment must still do itself
    recurrent: RecurrentSpec | None = None
