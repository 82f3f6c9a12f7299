"""rsl_rl checkpoints: the actor's state dict in rsl-rl-lib 5.x naming, and its architecture.

``OnPolicyRunner.save`` writes ``{actor_state_dict, critic_state_dict, optimizer_state_dict, iter,
infos}`` (5.x): the actor's keys are ``obs_normalizer.{_mean,_var,_std,count}``, ``mlp.{i}.*``,
``distribution.{std_param|log_std_param}`` and, for ``RNNModel``, ``rnn.rnn.*``. Older runners
(rsl-rl-lib < 4, which Isaac Lab, Genesis and legged_gym used for years) wrote ``model_state_dict``
of an ``ActorCritic[Recurrent]``: ``actor.{i}.*``, ``std``/``log_std``, ``actor_obs_normalizer.*``,
``memory_a.rnn.*`` (and ``obs_norm_state_dict`` beside it in 2.x). :func:`actor_state` maps both to
the 5.x names, and :func:`architecture` reads the model back from the weight shapes, so one loader
serves both; it works on real tensors and on the static ``TensorInfo`` descriptions alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zoo.errors import LayoutMismatch

#: Old ``ActorCritic`` key prefix -> 5.x ``MLPModel``/``RNNModel`` prefix; critic keys are dropped.
_LEGACY_PREFIXES = (("actor_obs_normalizer.", "obs_normalizer."), ("memory_a.", "rnn."), ("actor.", "mlp."))
_LEGACY_PARAMS = {"std": "distribution.std_param", "log_std": "distribution.log_std_param"}
_CRITIC_PREFIXES = ("critic.", "critic_obs_normalizer.", "memory_c.")
_MLP_KEY = re.compile(r"^mlp\.(\d+)\.weight$")
_RNN_GATES = {4: "lstm", 3: "gru"}
#: rsl_rl.utils.resolve_nn_activation's names.
ACTIVATIONS = ("elu", "selu", "relu", "crelu", "lrelu", "tanh", "sigmoid", "softplus", "gelu", "swish",
               "mish", "identity")  # fmt: skip
DISTRIBUTIONS = ("GaussianDistribution", "HeteroscedasticGaussianDistribution", "BetaDistribution")


class NotRunnerCheckpoint(LayoutMismatch):
    """The file is not an rsl_rl runner checkpoint zoo can read."""

    default_hint = "is this a model_{iter}.pt of rsl_rl's OnPolicyRunner, next to its own config?"


def _describe(obj: Any) -> str:
    if isinstance(obj, Mapping):
        return f"a dict with keys {sorted(map(str, obj))[:6]}"
    return f"a {type(obj).__name__}"


def actor_state(checkpoint: Any) -> tuple[dict[str, Any], str]:
    """``(actor state dict in 5.x names, which layout the file had)``."""
    if isinstance(checkpoint, Mapping) and isinstance(checkpoint.get("actor_state_dict"), Mapping):
        return dict(checkpoint["actor_state_dict"]), "actor_state_dict"
    if isinstance(checkpoint, Mapping) and isinstance(checkpoint.get("model_state_dict"), Mapping):
        state = {}
        for key, value in checkpoint["model_state_dict"].items():
            if key.startswith(_CRITIC_PREFIXES):
                continue
            new = _LEGACY_PARAMS.get(key)
            for old, prefix in _LEGACY_PREFIXES:
                if new is None and key.startswith(old):
                    new = prefix + key[len(old) :]
            state[new or key] = value
        norm = checkpoint.get("obs_norm_state_dict")
        if isinstance(norm, Mapping):  # rsl-rl-lib 2.x kept the normalizer outside the model
            state.update({f"obs_normalizer.{k}": v for k, v in norm.items()})
        return state, "model_state_dict (legacy ActorCritic)"
    if isinstance(checkpoint, Mapping) and "student_state_dict" in checkpoint:
        raise NotRunnerCheckpoint(
            "a distillation checkpoint (student/teacher): zoo evaluates PPO actors only"
        )
    raise NotRunnerCheckpoint(
        f"not an rsl_rl checkpoint: expected a dict with 'actor_state_dict' or 'model_state_dict', "
        f"this one holds {_describe(checkpoint)}",
        hint="is this a model_{iter}.pt written by rsl_rl's OnPolicyRunner?",
    )


@dataclass(frozen=True)
class Architecture:
    """What ``MLPModel``/``RNNModel`` must be built with to take the weights."""

    obs_dim: int
    action_dim: int
    hidden_dims: tuple[int, ...]
    activation: str
    obs_normalization: bool
    distribution: dict[str, Any] | None  # distribution_cfg with a class name from DISTRIBUTIONS
    rnn_type: str | None = None
    rnn_hidden_dim: int = 0
    rnn_num_layers: int = 0

    def summary(self) -> str:
        mlp = "-".join(map(str, (self.rnn_hidden_dim if self.rnn_type else self.obs_dim, *self.hidden_dims)))
        rnn = ""
        if self.rnn_type:
            rnn = f"{self.rnn_type.upper()}({self.obs_dim}->{self.rnn_hidden_dim})x{self.rnn_num_layers} + "
        norm = ", obs normalizer" if self.obs_normalization else ""
        return f"{rnn}MLP {mlp}-{self.action_dim} ({self.activation}{norm})"


def _distribution(
    state: Mapping[str, Any], cfg_distribution: dict | None, out_dim: int
) -> tuple[dict | None, int]:
    """The distribution config and action dim: from the parameters present, else from the config."""
    if "distribution.std_param" in state:
        return {"class_name": "GaussianDistribution", "std_type": "scalar"}, out_dim
    if "distribution.log_std_param" in state:
        return {"class_name": "GaussianDistribution", "std_type": "log"}, out_dim
    if cfg_distribution is None:
        return None, out_dim
    name = str(cfg_distribution.get("class_name", "")).rpartition(":")[2].rpartition(".")[2]
    if name not in DISTRIBUTIONS[1:]:
        raise NotRunnerCheckpoint(f"distribution {cfg_distribution.get('class_name')!r} is not one zoo rebuilds",
                             hint=f"supported: {', '.join(DISTRIBUTIONS)}")  # fmt: skip
    if out_dim % 2:
        raise NotRunnerCheckpoint(f"{name} needs an even MLP output, the checkpoint has {out_dim}")
    return {**cfg_distribution, "class_name": name}, out_dim // 2


def architecture(state: Mapping[str, Any], activation: str, rnn_type: str | None,
                 cfg_distribution: dict | None) -> Architecture:  # fmt: skip
    """Read the model back from the weight shapes; activation and distribution come from the config."""
    if activation.lower() not in ACTIVATIONS:
        raise NotRunnerCheckpoint(f"activation {activation!r} is not one of rsl_rl's ({', '.join(ACTIVATIONS)})",
                             hint="check the actor's activation in the run's config")  # fmt: skip
    if any(k.startswith("cnns.") for k in state):
        raise NotRunnerCheckpoint(
            "a CNNModel actor (image observations): zoo rebuilds MLPModel and RNNModel only"
        )
    layers = sorted((int(m[1]), key) for key in state if (m := _MLP_KEY.match(key)))
    if not layers:
        raise NotRunnerCheckpoint(
            f"no actor MLP weights (mlp.N.weight / actor.N.weight) among {sorted(state)[:6]}"
        )
    shapes = [tuple(state[key].shape) for _, key in layers]
    distribution, action_dim = _distribution(state, cfg_distribution, shapes[-1][0])
    common = dict(action_dim=action_dim, hidden_dims=tuple(s[0] for s in shapes[:-1]),
                  activation=activation.lower(), obs_normalization="obs_normalizer._mean" in state,
                  distribution=distribution)  # fmt: skip
    if "rnn.rnn.weight_ih_l0" not in state:
        return Architecture(obs_dim=shapes[0][1], **common)
    gates, obs_dim = state["rnn.rnn.weight_ih_l0"].shape
    hidden = state["rnn.rnn.weight_hh_l0"].shape[1]
    found = _RNN_GATES.get(gates // hidden) if gates % hidden == 0 else None
    if found is None:
        raise NotRunnerCheckpoint(f"rnn weights of shape {(gates, obs_dim)} are neither an LSTM nor a GRU")
    if rnn_type is not None and rnn_type != found:
        raise NotRunnerCheckpoint(f"the config says rnn_type {rnn_type!r}, the weights are a {found.upper()}")
    layers_n = sum(1 for k in state if re.match(r"^rnn\.rnn\.weight_ih_l\d+$", k))
    return Architecture(
        obs_dim=obs_dim, rnn_type=found, rnn_hidden_dim=hidden, rnn_num_layers=layers_n, **common
    )


_EXPECTED: dict[str, dict[str, tuple]] = {}


def state_problems(state: Mapping[str, Any], arch: Architecture) -> list[str]:
    """What ``load_state_dict(strict=True)`` of the rebuilt actor would refuse: keys missing, unexpected or
    of another shape (the actor is built on the meta device: no memory, no weights)."""
    key = repr(arch)  # Architecture holds a dict: hashable only as its repr
    if key not in _EXPECTED:
        _EXPECTED[key] = {k: tuple(v.shape) for k, v in build_model(arch, device="meta").state_dict().items()}
    expected = _EXPECTED[key]
    problems = [f"missing {k}" for k in expected if k not in state]
    problems += [f"unexpected {k}" for k in state if k not in expected]
    problems += [f"{k} is {tuple(state[k].shape)}, the actor needs {shape}" for k, shape in expected.items()
                 if k in state and tuple(state[k].shape) != shape]  # fmt: skip
    return problems


def build_model(arch: Architecture, device: str = "cpu"):
    """rsl_rl's own ``MLPModel``/``RNNModel``; class names come from zoo's allowlist, never the config."""
    import torch
    from rsl_rl.models import MLPModel, RNNModel
    from rsl_rl.modules import distribution as distributions
    from tensordict import TensorDict

    obs = TensorDict({"policy": torch.zeros(1, arch.obs_dim)}, batch_size=[1])
    dist = None
    if arch.distribution is not None:
        dist = {**arch.distribution, "class_name": getattr(distributions, arch.distribution["class_name"])}
    kwargs: dict[str, Any] = dict(hidden_dims=list(arch.hidden_dims), activation=arch.activation,
                                  obs_normalization=arch.obs_normalization,
                                  distribution_cfg=dist)  # fmt: skip
    if arch.rnn_type:
        kwargs.update(
            rnn_type=arch.rnn_type, rnn_hidden_dim=arch.rnn_hidden_dim, rnn_num_layers=arch.rnn_num_layers
        )
    cls = RNNModel if arch.rnn_type else MLPModel
    try:
        with torch.device(device):
            return cls(obs, {"actor": ["policy"]}, "actor", arch.action_dim, **kwargs)
    except (TypeError, ValueError) as exc:
        raise NotRunnerCheckpoint(
            f"cannot rebuild the actor: {exc}", hint="check the actor settings in the config"
        ) from None
