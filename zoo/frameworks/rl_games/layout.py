"""rl_games' ``actor_critic`` model as its checkpoint states it, read without torch (``zoo check`` imports this).

``model`` is the ``ModelA2C*.Network`` state dict, every key prefixed ``_orig_mod.`` when rl_games compiled the
model (``torch_compile``, on by default): ``a2c_network.actor_mlp.{2i}.*`` (Linear, activation, ...), the head
``a2c_network.logits.*`` (discrete) or ``a2c_network.mu.*`` with ``a2c_network.sigma`` (``fixed_sigma``: a
log-std parameter) or ``sigma.*`` (a Linear), the critic (``critic_mlp.*``, ``value.*``; unused), and the
normalizers ``running_mean_std.{running_mean,running_var,count}`` (float64) and ``value_mean_std.*``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zoo.errors import LayoutMismatch, UnsupportedError

PREFIX = "_orig_mod."
NET = "a2c_network."
_ACTOR = re.compile(r"^a2c_network\.actor_mlp\.(\d+)\.(weight|bias)$")
#: Keys of the critic and the value normalizer: in the file, never in the actor.
_CRITIC = ("a2c_network.critic_mlp.", "a2c_network.value.", "value_mean_std.")
#: rl_games' SAC agent saves these modules instead of ``model`` (``sac_agent.get_weights``).
_SAC = ("actor", "critic", "critic_target")
NORM = ("running_mean_std.running_mean", "running_mean_std.running_var", "running_mean_std.count")
EPSILON = 1e-5  # RunningMeanStd's default epsilon
CLAMP = 5.0  # RunningMeanStd clamps normalized observations to +-5


class NotRlGamesModel(LayoutMismatch):
    default_hint = "is this a .pth that rl_games' A2C/PPO agent saved (nn/*.pth)?"


@dataclass(frozen=True)
class Architecture:
    """The actor the weights imply: sizes, head and normalizer (activations come from the config)."""

    obs_dim: int
    hidden: tuple[int, ...]
    actions: int
    discrete: bool
    fixed_sigma: bool
    normalize_input: bool
    compiled: bool  # the keys carried torch.compile's ``_orig_mod.`` prefix

    def summary(self) -> str:
        head = "logits" if self.discrete else "mu" + (" + fixed log-std" if self.fixed_sigma else " + sigma")
        sizes = "-".join(map(str, (self.obs_dim, *self.hidden, self.actions)))
        return f"MLP {sizes} ({head}{', obs normalizer' if self.normalize_input else ''})"


def model_state(checkpoint: Any) -> tuple[dict[str, Any], bool]:
    """The ``model`` dict of a checkpoint, ``_orig_mod.`` stripped (as ``torch_ext.load_checkpoint`` does), and
    whether it was there."""
    if isinstance(checkpoint, Mapping) and all(isinstance(checkpoint.get(k), Mapping) for k in _SAC):
        raise UnsupportedError(
            "an rl_games SAC checkpoint (actor, critic, critic_target): zoo reads the A2C/PPO agents",
            hint="zoo reads rl_games' a2c_continuous and a2c_discrete agents (see docs/frameworks/rl_games.md)",
        )
    if not isinstance(checkpoint, Mapping) or not isinstance(checkpoint.get("model"), Mapping):
        keys = (
            sorted(map(str, checkpoint))[:6] if isinstance(checkpoint, Mapping) else type(checkpoint).__name__
        )
        raise NotRlGamesModel(
            f"not an rl_games checkpoint: expected a dict with a 'model' dict, found {keys}"
        )
    model = {str(k): v for k, v in checkpoint["model"].items()}
    compiled = bool(model) and all(k.startswith(PREFIX) for k in model)
    return ({k.removeprefix(PREFIX): v for k, v in model.items()}, compiled)


def architecture(state: Mapping[str, Any], compiled: bool) -> Architecture:
    """Read the actor from the weight shapes; a key the rebuilt actor would not use is refused, named."""
    layers = sorted((int(m[1]), k) for k in state if (m := _ACTOR.match(k)) and m[2] == "weight")
    heads = [h for h in ("logits", "mu") if f"{NET}{h}.weight" in state]
    if len(heads) != 1:
        raise NotRlGamesModel(f"no single action head (a2c_network.logits or .mu) among {sorted(state)[:6]}")
    head = heads[0]
    known = {k for _, k in layers} | {k.replace(".weight", ".bias") for _, k in layers}
    known |= {
        f"{NET}{head}.weight",
        f"{NET}{head}.bias",
        f"{NET}sigma",
        f"{NET}sigma.weight",
        f"{NET}sigma.bias",
    }
    known |= set(NORM)
    unused = sorted(k for k in state if k not in known and not k.startswith(_CRITIC))
    if unused:
        raise UnsupportedError(
            f"the model holds tensors zoo's rebuilt actor does not use: {', '.join(unused[:3])}",
            hint="zoo rebuilds rl_games' MLP actor_critic (no RNN, CNN or D2RL); see docs/frameworks/rl_games.md",
        )
    shapes = [tuple(state[k].shape) for _, k in layers]
    head_shape = tuple(state[f"{NET}{head}.weight"].shape)
    if len(head_shape) != 2 or any(len(s) != 2 for s in shapes):
        raise NotRlGamesModel(f"the actor's weights are not 2-D: {[*shapes, head_shape]}")
    obs_dim = shapes[0][1] if shapes else head_shape[1]
    hidden = tuple(s[0] for s in shapes)
    expected_in = obs_dim
    for i, (out_size, in_size) in enumerate([*shapes, head_shape]):
        if in_size != expected_in:
            raise NotRlGamesModel(
                f"actor layer {i} takes {in_size} inputs, the layer before gives {expected_in}"
            )
        expected_in = out_size
    normalize = NORM[0] in state
    if normalize and tuple(state[NORM[0]].shape) != (obs_dim,):
        raise NotRlGamesModel(
            f"running_mean_std is {tuple(state[NORM[0]].shape)}, the actor reads {obs_dim} observations"
        )
    return Architecture(
        obs_dim=obs_dim,
        hidden=hidden,
        actions=head_shape[0],
        discrete=head == "logits",
        fixed_sigma=f"{NET}sigma" in state,
        normalize_input=normalize,
        compiled=compiled,
    )
