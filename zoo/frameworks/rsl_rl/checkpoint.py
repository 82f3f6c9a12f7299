"""rsl_rl policies rebuilt from their weights: the architecture the state dict implies, and the model.

:func:`architecture` reads an ``MLPModel``/``RNNModel``/``CNNModel`` back from the weight shapes of a
5.x state dict (see :mod:`.formats` for how older files are renamed to it): observation and action
sizes, hidden dims, the RNN's type, size and depth, the CNNs' image groups and channels, whether a
normalizer is present. What the weights cannot say comes from the run's config: the activation, the
distribution class, and a CNN's strides, padding and pooling (``cnn_cfg``). It works on real tensors
and on the static ``TensorInfo`` descriptions alike, so ``zoo check`` and the loader read the same.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from zoo.frameworks.rsl_rl.formats import NotRunnerCheckpoint
from zoo.frameworks.rsl_rl.obs import whole_observation

if TYPE_CHECKING:
    from zoo.frameworks.rsl_rl.config import ModelConfig
    from zoo.frameworks.rsl_rl.obs import ObsLayout

_MLP_KEY = re.compile(r"^mlp\.(\d+)\.weight$")
_CONV_KEY = re.compile(r"^cnns\.(.+)\.(\d+)\.weight$")
_RNN_GATES = {4: "lstm", 3: "gru"}
#: rsl_rl.utils.resolve_nn_activation's names.
ACTIVATIONS = (
    "elu",
    "selu",
    "relu",
    "crelu",
    "lrelu",
    "tanh",
    "sigmoid",
    "softplus",
    "gelu",
    "swish",
    "mish",
    "identity",
)
DISTRIBUTIONS = ("GaussianDistribution", "HeteroscedasticGaussianDistribution", "BetaDistribution")


@dataclass(frozen=True)
class Architecture:
    """What ``MLPModel``/``RNNModel``/``CNNModel`` must be built with to take the weights.

    ``obs_dim`` is the observation vector the MLP (or the RNN) reads; for a CNN actor, the MLP's input:
    the 1-D groups and every CNN's flattened output together. ``cnns`` holds, in the model's order, each
    image group and its convs' channels (input first); ``cnn_cfg`` is the config's, as ``CNNModel`` takes it.
    """

    obs_dim: int
    action_dim: int
    hidden_dims: tuple[int, ...]
    activation: str
    obs_normalization: bool
    distribution: dict[str, Any] | None  # distribution_cfg with a class name from DISTRIBUTIONS
    rnn_type: str | None = None
    rnn_hidden_dim: int = 0
    rnn_num_layers: int = 0
    cnns: tuple[tuple[str, tuple[int, ...]], ...] = ()
    cnn_cfg: dict[str, Any] | None = None

    @property
    def cnn_channels(self) -> tuple[tuple[str, int], ...]:
        """``(image group, input channels)`` of each CNN."""
        return tuple((group, channels[0]) for group, channels in self.cnns)

    def summary(self) -> str:
        mlp = "-".join(map(str, (self.rnn_hidden_dim if self.rnn_type else self.obs_dim, *self.hidden_dims)))
        front = ""
        if self.rnn_type:
            front = f"{self.rnn_type.upper()}({self.obs_dim}->{self.rnn_hidden_dim})x{self.rnn_num_layers} + "
        if self.cnns:
            front = "".join(f"CNN {group}({'->'.join(map(str, chans))}) + " for group, chans in self.cnns)
        norm = ", obs normalizer" if self.obs_normalization else ""
        return f"{front}MLP {mlp}-{self.action_dim} ({self.activation}{norm})"


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
        raise NotRunnerCheckpoint(
            f"distribution {cfg_distribution.get('class_name')!r} is not one zoo rebuilds",
            hint=f"supported: {', '.join(DISTRIBUTIONS)}",
        )
    if out_dim % 2:
        raise NotRunnerCheckpoint(f"{name} needs an even MLP output, the checkpoint has {out_dim}")
    return {**cfg_distribution, "class_name": name}, out_dim // 2


def _cnns(state: Mapping[str, Any], cnn_cfg: dict | None) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Each image group's conv channels, in the model's order (the checkpoint keeps ``cnns``' order)."""
    convs: dict[str, list[tuple[int, tuple]]] = {}
    for key, value in state.items():
        if (m := _CONV_KEY.match(key)) and len(value.shape) == 4:  # a norm layer's weight is 1-D or 3-D
            convs.setdefault(m[1], []).append((int(m[2]), tuple(value.shape)))
    if convs and cnn_cfg is None:
        raise NotRunnerCheckpoint(
            f"a CNNModel actor (images {sorted(convs)}) needs the cnn_cfg of the run's config: strides, "
            "padding and pooling are not in the weights",
            hint="keep the run's params/agent.yaml (or cfgs.pkl) beside the checkpoint",
        )
    found = []
    for group, layers in convs.items():
        shapes = [shape for _, shape in sorted(layers)]
        found.append((group, (shapes[0][1], *(shape[0] for shape in shapes))))
    return tuple(found)


def architecture(state: Mapping[str, Any], model: ModelConfig) -> Architecture:
    """Read the model back from the weight shapes; activation, distribution and CNN settings from the config."""
    activation = model.activation
    if activation.lower() not in ACTIVATIONS:
        raise NotRunnerCheckpoint(
            f"activation {activation!r} is not one of rsl_rl's ({', '.join(ACTIVATIONS)})",
            hint="check the actor's activation in the run's config",
        )
    if model.settings.get("state_dependent_std"):
        raise NotRunnerCheckpoint(
            "the config sets state_dependent_std (rsl-rl-lib 3.x): zoo does not rebuild an actor whose MLP "
            "outputs its std",
            hint="not supported; zoo reads its rsl-rl-lib 5.x successor, HeteroscedasticGaussianDistribution",
        )
    cnns = _cnns(state, model.cnn_cfg)
    layers = sorted((int(m[1]), key) for key in state if (m := _MLP_KEY.match(key)))
    if not layers:
        raise NotRunnerCheckpoint(
            f"no actor MLP weights (mlp.N.weight / actor.N.weight) among {sorted(state)[:6]}"
        )
    shapes = [tuple(state[key].shape) for _, key in layers]
    distribution, action_dim = _distribution(state, model.distribution, shapes[-1][0])
    common = dict(
        action_dim=action_dim,
        hidden_dims=tuple(s[0] for s in shapes[:-1]),
        activation=activation.lower(),
        obs_normalization="obs_normalizer._mean" in state,
        distribution=distribution,
    )
    if cnns:
        return Architecture(obs_dim=shapes[0][1], cnns=cnns, cnn_cfg=model.cnn_cfg, **common)
    if "rnn.rnn.weight_ih_l0" not in state:
        return Architecture(obs_dim=shapes[0][1], **common)
    gates, obs_dim = state["rnn.rnn.weight_ih_l0"].shape
    hidden = state["rnn.rnn.weight_hh_l0"].shape[1]
    found = _RNN_GATES.get(gates // hidden) if gates % hidden == 0 else None
    if found is None:
        raise NotRunnerCheckpoint(f"rnn weights of shape {(gates, obs_dim)} are neither an LSTM nor a GRU")
    if model.rnn_type is not None and model.rnn_type != found:
        raise NotRunnerCheckpoint(
            f"the config says rnn_type {model.rnn_type!r}, the weights are a {found.upper()}"
        )
    layers_n = sum(1 for k in state if re.match(r"^rnn\.rnn\.weight_ih_l\d+$", k))
    return Architecture(
        obs_dim=obs_dim, rnn_type=found, rnn_hidden_dim=hidden, rnn_num_layers=layers_n, **common
    )


_EXPECTED: dict[str, dict[str, tuple]] = {}


def state_problems(
    state: Mapping[str, Any], arch: Architecture, layout: ObsLayout | None = None
) -> list[str]:
    """What ``load_state_dict(strict=True)`` of the rebuilt actor would refuse: keys missing, unexpected or
    of another shape (the actor is built on the meta device: no memory, no weights)."""
    key = repr((arch, layout))  # Architecture holds dicts: hashable only as its repr
    if key not in _EXPECTED:
        model = build_model(arch, layout, device="meta")
        _EXPECTED[key] = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    expected = _EXPECTED[key]
    problems = [f"missing {k}" for k in expected if k not in state]
    problems += [f"unexpected {k}" for k in state if k not in expected]
    problems += [
        f"{k} is {tuple(state[k].shape)}, the actor needs {shape}"
        for k, shape in expected.items()
        if k in state and tuple(state[k].shape) != shape
    ]
    return problems


def build_model(arch: Architecture, layout: ObsLayout | None = None, device: str = "cpu"):
    """rsl_rl's own ``MLPModel``/``RNNModel``/``CNNModel`` reading ``layout``'s observation groups (for an
    MLP or RNN, by default, the one group of ``obs_dim``); class names come from zoo's allowlist, never
    the config."""
    import torch
    from rsl_rl.models import CNNModel, MLPModel, RNNModel
    from rsl_rl.modules import distribution as distributions
    from tensordict import TensorDict

    if layout is None:
        assert not arch.cnns, "a CNN actor is built for an env's image shapes"
        layout = whole_observation(arch.obs_dim)
    obs = TensorDict({name: torch.zeros(1, *shape) for name, shape in layout.groups}, batch_size=[1])
    dist = None
    if arch.distribution is not None:
        dist = {**arch.distribution, "class_name": getattr(distributions, arch.distribution["class_name"])}
    kwargs: dict[str, Any] = dict(
        hidden_dims=list(arch.hidden_dims),
        activation=arch.activation,
        obs_normalization=arch.obs_normalization,
        distribution_cfg=dist,
    )
    if arch.rnn_type:
        kwargs.update(
            rnn_type=arch.rnn_type, rnn_hidden_dim=arch.rnn_hidden_dim, rnn_num_layers=arch.rnn_num_layers
        )
    if arch.cnns:
        kwargs["cnn_cfg"] = arch.cnn_cfg
    cls = CNNModel if arch.cnns else RNNModel if arch.rnn_type else MLPModel
    groups = {"actor": [name for name, _ in layout.groups]}
    try:
        with torch.device(device):
            return cls(obs, groups, "actor", arch.action_dim, **kwargs)
    except (TypeError, ValueError, IndexError, KeyError) as exc:  # a cnn_cfg that does not fit, say
        raise NotRunnerCheckpoint(
            f"cannot rebuild the actor: {exc}", hint="check the actor settings in the config"
        ) from None
