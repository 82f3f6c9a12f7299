"""The policy's architecture: what the config declares, matched layer by layer against the weights.

skrl checkpoints hold state dicts only. The weights give the order (state-dict order is the model's
registration order) and the sizes of every ``nn.Linear``/``nn.Conv2d`` and of a recurrent core
(``{prefix}.weight_ih_l{k}``: 3 gates a GRU, 4 an LSTM). The config gives what they cannot: the
activations, conv strides and padding, where ``flatten`` sits, the output expression. Where both
speak they must agree, or zoo refuses the run in one line instead of rebuilding a different model.

Everything here reads ``.shape`` only, so ``zoo check`` (static tensor descriptions, no torch) and
``zoo eval`` (real tensors) share it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zoo.errors import UnsupportedError, ZooError
from zoo.frameworks.skrl.checkpoint import Normalizer
from zoo.frameworks.skrl.config import PolicySpec
from zoo.frameworks.skrl.instantiator import LayerDecl

_RNN_WEIGHT = re.compile(r"^(?P<prefix>.+)\.weight_ih_l(?P<layer>\d+)(?P<suffix>.*)$")
_RNN_PARAMS = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
_GATES = {3: "gru", 4: "lstm"}


@dataclass(frozen=True)
class Layer:
    """One layer on the policy's path, in forward order."""

    kind: str  # linear | conv2d | flatten
    prefix: str = ""  # state-dict prefix of its weight (and bias)
    shape: tuple[int, ...] = ()  # the weight's shape: (out, in) or (out, in, kh, kw)
    bias: bool = False
    stride: tuple[int, int] | None = (1, 1)  # None: not known (no config)
    padding: tuple[int, int] | str = (0, 0)
    activation: str | None = None

    @property
    def in_size(self) -> int:
        return self.shape[1]

    @property
    def out_size(self) -> int:
        return self.shape[0]


@dataclass(frozen=True)
class Recurrent:
    """The recurrent core in front of the MLP (skrl's documented ``PPO_RNN`` model pattern)."""

    rnn_type: str  # gru | lstm
    prefix: str
    num_layers: int
    input_size: int
    hidden_size: int
    bias: bool


@dataclass(frozen=True)
class Architecture:
    layers: list[Layer]  # the last one is the output layer
    rnn: Recurrent | None = None
    permute: tuple[int, ...] | None = None  # the network input's dims (image observations, NHWC -> NCHW)

    @property
    def weighted(self) -> list[Layer]:
        return [layer for layer in self.layers if layer.kind != "flatten"]

    @property
    def convolutional(self) -> bool:
        return self.layers[0].kind == "conv2d"

    @property
    def flat_input(self) -> int | None:
        """The flat observation size the policy takes (None for conv layers: it depends on the image)."""
        if self.rnn is not None:
            return self.rnn.input_size
        return None if self.convolutional else self.layers[0].in_size

    def sizes(self) -> list[int]:
        """Input size (features, channels or the RNN's input), then each weighted layer's output size."""
        first = self.rnn.input_size if self.rnn else self.weighted[0].in_size
        return [first, *(layer.out_size for layer in self.weighted)]

    def keys(self) -> set[str]:
        """The state-dict keys the rebuilt policy reads."""
        keys = {f"{layer.prefix}.weight" for layer in self.weighted}
        keys |= {f"{layer.prefix}.bias" for layer in self.weighted if layer.bias}
        if self.rnn:
            params = _RNN_PARAMS if self.rnn.bias else _RNN_PARAMS[:2]
            keys |= {f"{self.rnn.prefix}.{p}_l{k}" for p in params for k in range(self.rnn.num_layers)}
        return keys


def _describe(layers: list[Any]) -> str:
    """``[conv2d(8, 3x3), 32]``: layer sizes as a config lists them."""
    return (
        "["
        + ", ".join(layer.describe() if isinstance(layer, LayerDecl) else str(layer) for layer in layers)
        + "]"
    )


def _weight_described(shape: tuple[int, ...]) -> str:
    return f"conv2d({shape[0]}, {shape[2]}x{shape[3]})" if len(shape) == 4 else str(shape[0])


def _weighted(policy: Mapping) -> list[tuple[str, tuple[int, ...]]]:
    """``(prefix, weight shape)`` of every linear and conv layer, in state-dict order.

    A shared model (``models.separate: false``) holds the value head too: its ``value_layer``
    is not on the policy's path.
    """
    names = list(policy)
    skip_value = any(n.startswith("policy_layer.") for n in names)
    found = []
    for name in names:
        shape = tuple(int(d) for d in policy[name].shape)
        prefix = name[: -len(".weight")]
        if name.endswith(".weight") and len(shape) in (2, 4) and not (skip_value and prefix == "value_layer"):
            found.append((prefix, shape))
    if not found:
        raise ZooError(
            "the policy holds no linear layer", hint="only MLP, CNN and RNN policies are supported"
        )
    return found


def _contradiction(spec: PolicySpec, what: str) -> ZooError:
    return ZooError(f"{spec.source} {what}", hint="is the config from this run?")


def _recurrent(policy: Mapping, spec: PolicySpec) -> Recurrent | None:
    matches = [m for key in policy if (m := _RNN_WEIGHT.match(key))]
    if not matches:
        if spec.rnn is not None:
            raise _contradiction(
                spec, f"declares an rnn ({spec.rnn.rnn_type.upper()}), the policy holds none"
            )
        return None
    prefixes = sorted({m["prefix"] for m in matches})
    if len(prefixes) > 1 or any(m["suffix"] for m in matches) or f"{prefixes[0]}.weight_hr_l0" in policy:
        raise UnsupportedError(
            f"the policy's recurrent layers ({', '.join(prefixes)}) are not one "
            "unidirectional GRU or LSTM without projection",
            hint="zoo rebuilds skrl's documented RNN pattern: one nn.GRU/nn.LSTM, then an MLP",
        )
    prefix = prefixes[0]
    hidden = int(policy[f"{prefix}.weight_hh_l0"].shape[1])
    rnn_type = _GATES.get(int(policy[f"{prefix}.weight_ih_l0"].shape[0]) // hidden)
    if rnn_type is None:
        raise UnsupportedError(
            f"{prefix} is a plain nn.RNN, not a GRU or LSTM", hint="zoo rebuilds GRU and LSTM cores"
        )
    core = Recurrent(
        rnn_type,
        prefix,
        len(matches),
        int(policy[f"{prefix}.weight_ih_l0"].shape[1]),
        hidden,
        f"{prefix}.bias_ih_l0" in policy,
    )
    if spec.known and spec.rnn is None:
        raise ZooError(
            f"the policy holds a {rnn_type.upper()} ({prefix}.*), but {spec.source} declares no rnn",
            hint=f"if it follows skrl's RNN pattern (the {rnn_type.upper()} reads the observations, an "
            f"MLP its output), add 'rnn: {{class: {rnn_type.upper()}}}' (docs/frameworks/skrl.md)",
        )
    if spec.rnn is not None:
        declared = (spec.rnn.rnn_type, spec.rnn.num_layers or core.num_layers, spec.rnn.hidden_size or hidden)
        if declared != (rnn_type, core.num_layers, hidden):
            raise _contradiction(
                spec,
                f"declares a {declared[0].upper()} of {declared[1]} layer(s) x {declared[2]}, "
                f"the weights hold a {rnn_type.upper()} of {core.num_layers} x {hidden}",
            )
    return core


def _declared_layers(policy: Mapping, spec: PolicySpec, weighted: list) -> list[Layer]:
    """The config's layers, each matched with its weights; the output layer appended."""
    declared = spec.network.layers
    assert declared is not None
    with_weights = [d for d in declared if d.kind != "flatten"]
    if len(weighted) != len(with_weights) + 1 or any(
        d.size != shape[0]
        or d.kind != ("conv2d" if len(shape) == 4 else "linear")
        or (d.kernel is not None and d.kernel != shape[2:])
        or d.in_size not in (None, shape[1])
        for d, (_, shape) in zip(with_weights, weighted, strict=False)
    ):
        hidden = [_weight_described(shape) for _, shape in weighted[:-1]]
        raise _contradiction(
            spec, f"declares hidden layers {_describe(with_weights)}, the weights have {_describe(hidden)}"
        )
    pairs = iter(weighted)
    layers = []
    for decl in declared:
        if decl.kind == "flatten":
            layers.append(Layer("flatten"))
            continue
        prefix, shape = next(pairs)
        if decl.bias != (f"{prefix}.bias" in policy):
            raise _contradiction(
                spec, f"declares {prefix} {'with' if decl.bias else 'without'} a bias, the weights differ"
            )
        layers.append(Layer(decl.kind, prefix, shape, decl.bias, decl.stride, decl.padding, decl.activation))
    prefix, shape = next(pairs)
    return [*layers, Layer("linear", prefix, shape, f"{prefix}.bias" in policy)]


def _inferred_layers(policy: Mapping, spec: PolicySpec, weighted: list, strict: bool) -> list[Layer]:
    """Layers from the weights alone (configs that give activations only); conv strides are then unknown."""
    if strict and any(len(shape) == 4 for _, shape in weighted):
        raise ZooError(
            "the policy has conv2d layers, whose stride and padding the weights do not say",
            hint="zoo needs the network's layers from params/agent.yaml or --model-config "
            "(see docs/frameworks/skrl.md)",
        )
    hidden = len(weighted) - 1
    activations = (
        spec.activation_for(hidden) if strict or spec.network.activations is not None else [None] * hidden
    )
    layers = []
    for i, (prefix, shape) in enumerate(weighted):
        if len(shape) == 2 and layers and layers[-1].kind == "conv2d":
            layers.append(Layer("flatten"))
        kind, stride = ("conv2d", None) if len(shape) == 4 else ("linear", (1, 1))
        layers.append(
            Layer(
                kind,
                prefix,
                shape,
                f"{prefix}.bias" in policy,
                stride,
                activation=activations[i] if i < hidden else None,
            )
        )
    return layers


def _chain_problem(layers: list[Layer], rnn: Recurrent | None) -> str | None:
    previous: Layer | None = None
    for layer in layers:
        if layer.kind == "flatten":
            previous = layer
            continue
        if previous is not None and previous.kind == "conv2d" and layer.kind == "linear":
            return f"{layer.prefix} (linear) follows a conv2d layer without a flatten between"
        if previous is not None and previous.kind in ("linear", "flatten") and layer.kind == "conv2d":
            return f"{layer.prefix} (conv2d) follows a {previous.kind} layer"
        if previous is not None and previous.kind == layer.kind and previous.out_size != layer.in_size:
            return f"{previous.prefix} gives {previous.out_size}, {layer.prefix} takes {layer.in_size}"
        previous = layer
    first = layers[0]
    if rnn is not None and (first.kind != "linear" or first.in_size != rnn.hidden_size):
        return f"{rnn.prefix} gives {rnn.hidden_size}, {first.prefix} takes {first.in_size}"
    return None


def architecture(policy: Mapping, spec: PolicySpec, strict: bool = True) -> Architecture:
    """The policy's layers, matched against ``spec``. ``strict`` (loading) also requires everything the
    forward pass needs; ``zoo check`` passes ``strict=False`` to inspect runs that have no config."""
    rnn = _recurrent(policy, spec)
    weighted = _weighted(policy)
    if spec.network.layers is not None:
        layers = _declared_layers(policy, spec, weighted)
    else:
        layers = _inferred_layers(policy, spec, weighted, strict)
    problem = _chain_problem(layers, rnn)
    if problem:
        raise ZooError(
            f"policy layers do not chain: {problem}", hint="only MLP, CNN and RNN policies are supported"
        )
    if spec.network.permute is not None and layers[0].kind != "conv2d":
        raise UnsupportedError(
            f"{spec.source}: a permuted input feeds conv2d layers, this network starts with a linear one"
        )
    return Architecture(layers, rnn, spec.network.permute)


def unused_keys(policy: Mapping, arch: Architecture, spec: PolicySpec) -> list[str]:
    """Keys the rebuilt policy would not use (a sign of an architecture zoo cannot rebuild)."""
    allowed = arch.keys() | {"log_std_parameter"}
    if spec.shared or any(k.startswith("policy_layer.") for k in policy):
        allowed |= {"value_layer.weight", "value_layer.bias"}
    return [k for k in policy if k not in allowed]


def _conv_output(arch: Architecture, image: tuple[int, ...]) -> int | None:
    """The flattened size the conv layers give for an image of ``(channels, height, width)``."""
    height, width = image[1:]
    channels = image[0]
    for layer in arch.layers:
        if layer.kind != "conv2d":
            break
        if layer.stride is None:
            return None
        kernel, padding = layer.shape[2:], layer.padding
        if padding == "valid":
            padding = (0, 0)
        if padding != "same":
            height = (height + 2 * padding[0] - kernel[0]) // layer.stride[0] + 1
            width = (width + 2 * padding[1] - kernel[1]) // layer.stride[1] + 1
        channels = layer.out_size
    return channels * height * width


def _input_problems(arch: Architecture, obs_space: Any) -> list[str]:
    import numpy as np

    obs_shape = tuple(int(d) for d in obs_space.shape or ())
    obs_dim = int(np.prod(obs_shape))
    if arch.rnn is not None:
        taken = arch.rnn.input_size
        return (
            []
            if taken == obs_dim
            else [f"policy ({arch.rnn.rnn_type.upper()}) takes {taken} inputs, the env observes {obs_dim}"]
        )
    if not arch.convolutional:
        taken = arch.layers[0].in_size
        return [] if taken == obs_dim else [f"policy takes {taken} inputs, the env observes {obs_dim}"]
    if len(obs_shape) != 3:
        return [f"conv2d layers need image observations (3 dims), the env observes shape {list(obs_shape)}"]
    image = tuple(obs_shape[d - 1] for d in arch.permute[1:]) if arch.permute else obs_shape
    if image[0] != arch.layers[0].in_size:
        return [
            f"policy's first conv2d takes {arch.layers[0].in_size} channels, the env's images "
            f"{'(permuted) ' if arch.permute else ''}have {image[0]} (shape {list(obs_shape)})"
        ]
    flattened = _conv_output(arch, image)
    linear = next(layer for layer in arch.layers if layer.kind == "linear")
    if flattened is not None and flattened != linear.in_size:
        return [
            f"policy's conv2d layers give {flattened} features for {list(obs_shape)} images, {linear.prefix} takes {linear.in_size}"
        ]
    return []


def shape_problems(
    policy: Mapping, arch: Architecture, spaces: tuple, kind: str, norm: Normalizer | None
) -> list[str]:
    """Lines for each way the policy (and its observation scaler) does not fit the env's spaces of the kinds it
    acts on (a categorical policy on a Box is the adapter's fit check's, before this: :mod:`zoo.frameworks.kinds`)."""
    import numpy as np
    from gymnasium import spaces as gym_spaces

    obs_space, act_space = spaces
    problems = _input_problems(arch, obs_space)
    obs_dim = int(np.prod(obs_space.shape or ()))
    if norm is not None and tuple(norm.state["running_mean"].shape) != (obs_dim,):
        problems.append(
            f"{norm.key} has size {tuple(norm.state['running_mean'].shape)}, the env observes {obs_dim}"
        )
    out = arch.layers[-1].out_size
    if isinstance(act_space, gym_spaces.Discrete):
        if out != int(act_space.n):
            problems.append(f"policy gives {out} action logits, the env has {int(act_space.n)} actions")
    elif isinstance(act_space, gym_spaces.Box):
        act_dim = int(np.prod(act_space.shape))
        if out != act_dim:
            problems.append(f"policy gives {out} actions, the env takes {act_dim}")
        log_std = policy.get("log_std_parameter")
        if (
            kind is not None
            and kind.endswith("gaussian")
            and log_std is not None
            and tuple(log_std.shape) != (act_dim,)
        ):
            problems.append(f"log_std_parameter is {tuple(log_std.shape)}, the env needs ({act_dim},)")
    else:
        problems.append(f"the env's {type(act_space).__name__} action space is not supported (Box, Discrete)")
    return problems
