"""skrl's model-instantiator vocabulary (``network``, ``input``, ``output``), parsed without running it.

skrl's ``skrl.utils.model_instantiators.torch`` turns a model section into Python source and
``exec``\\ s it: every ``network`` item becomes an ``nn.Sequential`` "container" of its ``layers``
(``linear``, ``conv2d``, ``flatten``), each followed by its activation (not after ``flatten``);
the output layer (``ACTIONS`` units) is appended to the last container and the ``output``
expression applied to it. zoo reads the same vocabulary as data: containers that chain (each
reads the one before), the first reading ``OBSERVATIONS`` (or skrl 1.x's ``STATES``), optionally
``permute``\\ d (image observations, NHWC to NCHW); anything else is one error line.

``rnn`` is zoo's own key, not skrl's: skrl's recurrent models (``PPO_RNN``) are classes a user
writes, following skrl's documented pattern (an ``nn.GRU``/``nn.LSTM`` over the observations, then
an MLP on its output); ``rnn: {class: GRU}`` in a model config says that the policy is one of them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import Any

from zoo.errors import ZooError

ACTIVATIONS = ("elu", "relu", "leaky_relu", "selu", "tanh", "sigmoid", "softplus", "softsign")
RNN_CLASSES = ("gru", "lstm")
INPUTS = ("OBSERVATIONS", "STATES")


def bad_config(source: str, what: str) -> ZooError:
    return ZooError(f"{source}: {what}", hint="see docs/frameworks/skrl.md for the supported model configs")


@dataclass(frozen=True)
class LayerDecl:
    """One layer a config declares, with the activation skrl puts after it."""

    kind: str  # linear | conv2d | flatten
    size: int | None = None  # out_features / out_channels
    in_size: int | None = None  # in_features / in_channels, when the config gives them (non-lazy layers)
    kernel: tuple[int, int] | None = None
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int] | str = (0, 0)  # or "same" / "valid"
    bias: bool = True
    activation: str | None = None

    def describe(self) -> str:
        if self.kind == "conv2d":
            return f"conv2d({self.size}, {self.kernel[0]}x{self.kernel[1]})"
        return str(self.size) if self.kind == "linear" else "flatten"


@dataclass(frozen=True)
class RnnDecl:
    """The recurrent core a model config declares (zoo's ``rnn`` key); unset sizes come from the weights."""

    rnn_type: str  # gru | lstm
    num_layers: int | None = None
    hidden_size: int | None = None


@dataclass(frozen=True)
class NetworkDecl:
    """A policy's ``network``: its input and, when the items list them, its layers in forward order."""

    input: str = "OBSERVATIONS"  # OBSERVATIONS | STATES
    permute: tuple[int, ...] | None = None
    layers: list[LayerDecl] | None = None  # None: sizes from the weights, activations below
    activations: list[str] | str | None = None  # for layers=None: one name for all hidden layers, or one each


def activation(name: Any, source: str) -> str:
    if not isinstance(name, str) or name.lower() not in ACTIVATIONS:
        raise bad_config(source, f"activation {name!r} is not one of {', '.join(ACTIVATIONS)}")
    return name.lower()


def parse_output(text: Any, source: str) -> list[tuple[str, float | str]]:
    """``ACTIONS`` / ``tanh(ACTIONS)`` / ``2 * tanh(ACTIONS)`` as ops applied to the last layer, innermost first."""
    if not isinstance(text, str):
        raise bad_config(source, f"output {text!r} is not an expression")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise bad_config(source, f"output {text!r} does not parse") from None

    def walk(node: ast.AST) -> list[tuple[str, float | str]]:
        if isinstance(node, ast.Name) and node.id == "ACTIONS":
            return []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 1:
            return [*walk(node.args[0]), ("act", activation(node.func.id, source))]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            for const, other in ((node.left, node.right), (node.right, node.left)):
                if isinstance(const, ast.Constant) and isinstance(const.value, int | float):
                    return [*walk(other), ("scale", float(const.value))]
        raise bad_config(
            source, f"output {text!r} is not supported (use ACTIONS, act(ACTIONS), number * ...)"
        )

    return walk(tree)


def parse_input(text: Any, source: str) -> tuple[str, tuple[int, ...] | None]:
    """``(token, permutation)`` of ``OBSERVATIONS`` or ``permute(OBSERVATIONS, (0, 3, 1, 2))``."""
    supported = "OBSERVATIONS, or permute(OBSERVATIONS, (0, 3, 1, 2)) for images"
    try:
        node = ast.parse(str(text).strip(), mode="eval").body
    except SyntaxError:
        raise bad_config(source, f"network input {text!r} does not parse") from None
    permutation = None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "permute":
        dims = node.args[1] if len(node.args) == 2 else None
        if not isinstance(dims, ast.Tuple | ast.List) or not all(
            isinstance(d, ast.Constant) and type(d.value) is int for d in dims.elts
        ):
            raise bad_config(source, f"network input {text!r}: permute needs a tuple of dims")
        permutation = tuple(d.value for d in dims.elts)
        if sorted(permutation) != list(range(len(permutation))) or permutation[0] != 0:
            raise bad_config(
                source, f"network input {text!r}: {permutation} does not permute the batch-first dims"
            )
        node = node.args[0]
    if not isinstance(node, ast.Name) or node.id not in INPUTS:
        raise bad_config(source, f"network input {text!r} is not supported ({supported})")
    return node.id, permutation


def _pair(value: Any, what: str, source: str) -> tuple[int, int]:
    pair = [value, value] if type(value) is int else value
    if (
        not isinstance(pair, list | tuple)
        or len(pair) != 2
        or not all(type(v) is int and v >= 0 for v in pair)
    ):
        raise bad_config(source, f"conv2d {what} must be an int or two ints, got {value!r}")
    return int(pair[0]), int(pair[1])


def _size(value: Any, what: str, source: str) -> int:
    if type(value) is not int or value <= 0:
        raise bad_config(source, f"{what} must be a positive int, got {value!r}")
    return value


def _flag(value: Any, what: str, source: str) -> bool:
    if not isinstance(value, bool):
        raise bad_config(source, f"{what} must be true or false, got {value!r}")
    return value


def _linear(args: Any, source: str) -> LayerDecl:
    """skrl's ``linear`` forms: ``64``, ``[64, bias]``, ``{out_features|features, bias|use_bias, in_features}``."""
    if isinstance(args, list):
        args = dict(zip(("out_features", "bias"), args, strict=False))
    if type(args) is int:
        args = {"out_features": args}
    if not isinstance(args, dict):
        raise bad_config(source, f"linear layer {args!r} is not supported")
    args = {{"features": "out_features", "use_bias": "bias"}.get(k, k): v for k, v in args.items()}
    in_size = args.get("in_features")
    return LayerDecl(
        "linear",
        _size(args.get("out_features"), "linear out_features", source),
        None if in_size is None else _size(in_size, "linear in_features", source),
        bias=_flag(args.get("bias", True), "linear bias", source),
    )


def _conv2d(args: Any, source: str) -> LayerDecl:
    """skrl's ``conv2d`` forms: ``[out_channels, kernel_size, stride, padding, bias]`` or the same as a dict."""
    if isinstance(args, list):
        args = dict(zip(("out_channels", "kernel_size", "stride", "padding", "bias"), args, strict=False))
    if not isinstance(args, dict):
        raise bad_config(source, f"conv2d layer {args!r} is not supported")
    args = {
        {"features": "out_channels", "strides": "stride", "use_bias": "bias"}.get(k, k): v
        for k, v in args.items()
    }
    unknown = set(args) - {"out_channels", "in_channels", "kernel_size", "stride", "padding", "bias"}
    if unknown:
        raise bad_config(source, f"conv2d argument {sorted(unknown)[0]!r} is not supported")
    padding = args.get("padding", 0)
    if isinstance(padding, str):
        if padding.lower() not in ("same", "valid"):
            raise bad_config(source, f"conv2d padding {padding!r} is not supported (ints, same, valid)")
        padding = padding.lower()
    else:
        padding = _pair(padding, "padding", source)
    in_size = args.get("in_channels")
    return LayerDecl(
        "conv2d",
        _size(args.get("out_channels"), "conv2d out_channels", source),
        None if in_size is None else _size(in_size, "conv2d in_channels", source),
        kernel=_pair(args.get("kernel_size"), "kernel_size", source),
        stride=_pair(args.get("stride", 1), "stride", source),
        padding=padding,
        bias=_flag(args.get("bias", True), "conv2d bias", source),
    )


def _flatten(args: Any, source: str) -> LayerDecl:
    if isinstance(args, list):
        args = dict(zip(("start_dim", "end_dim"), args, strict=False))
    if not isinstance(args, dict) or args.get("start_dim", 1) != 1 or args.get("end_dim", -1) != -1:
        raise bad_config(
            source, f"flatten {args!r} is not supported (only the default start_dim 1, end_dim -1)"
        )
    return LayerDecl("flatten")


def _layer(raw: Any, source: str) -> LayerDecl:
    if type(raw) is int:
        return _linear(raw, source)
    if raw == "flatten":
        return LayerDecl("flatten")
    if isinstance(raw, dict) and len(raw) == 1:
        kind, args = next(iter(raw.items()))
        parse = {"linear": _linear, "conv2d": _conv2d, "flatten": _flatten}.get(str(kind).lower())
        if parse is not None:
            return parse(args, source)
    raise bad_config(source, f"layer {raw!r} is not supported (an int, linear, conv2d or flatten)")


def _with_activations(layers: list[LayerDecl], raw: Any, source: str) -> list[LayerDecl]:
    """skrl's rule: one name for every layer, a list of one, one per layer, or none at all."""
    names = [raw] * len(layers) if isinstance(raw, str) else raw
    if names is None or names == []:
        names = [None] * len(layers)
    elif isinstance(names, list) and len(names) == 1:
        names = names * len(layers)
    if not isinstance(names, list) or len(names) != len(layers):
        raise bad_config(
            source, f"{len(raw) if isinstance(raw, list) else raw!r} activations for {len(layers)} layers"
        )
    return [
        layer
        if layer.kind == "flatten" or name is None
        else replace(layer, activation=activation(name, source))
        for layer, name in zip(layers, names, strict=True)
    ]


def _flat_activations(raw: Any, source: str) -> list[str] | str | None:
    if isinstance(raw, list):
        return [activation(a, source) for a in raw] if raw else None
    return None if raw is None else activation(raw, source)


def parse_network(section: dict, source: str) -> NetworkDecl:
    """The ``network`` of a policy section, or the flat form (``layers``/``activations`` in the section)."""
    network = section.get("network")
    if network is None:
        layers = section.get("layers")
        if layers is None:
            return NetworkDecl(activations=_flat_activations(section.get("activations"), source))
        if not isinstance(layers, list) or not all(type(x) is int or isinstance(x, dict) for x in layers):
            raise bad_config(source, f"layers must be a list of linear layer sizes, got {layers!r}")
        return NetworkDecl(
            layers=_with_activations([_layer(x, source) for x in layers], section.get("activations"), source)
        )
    if not isinstance(network, list) or not network or not all(isinstance(c, dict) for c in network):
        raise bad_config(source, "network must be a list of containers ({name, input, layers, activations})")
    token, permutation = parse_input(network[0].get("input", "OBSERVATIONS"), source)
    if len(network) == 1 and "layers" not in network[0]:
        return NetworkDecl(
            token, permutation, activations=_flat_activations(network[0].get("activations"), source)
        )
    layers: list[LayerDecl] = []
    for before, container in zip([None, *network], network, strict=False):
        if before is not None and str(container.get("input")) != str(before.get("name")):
            raise bad_config(
                source,
                f"container {container.get('name')!r} reads {container.get('input')!r}; zoo "
                "rebuilds networks whose containers chain (each reads the one before)",
            )
        raw = container.get("layers")
        if not isinstance(raw, list) or not raw:
            raise bad_config(source, f"container {container.get('name')!r} lists no layers")
        layers += _with_activations(
            [_layer(x, source) for x in raw], container.get("activations", []), source
        )
    return NetworkDecl(token, permutation, layers)


def parse_rnn(raw: Any, source: str) -> RnnDecl | None:
    """``rnn: GRU`` or ``rnn: {class: LSTM, num_layers: 1, hidden_size: 64}``."""
    if raw is None:
        return None
    section = {"class": raw} if isinstance(raw, str) else raw
    name = section.get("class") if isinstance(section, dict) else None
    if not isinstance(name, str) or name.lower() not in RNN_CLASSES:
        raise bad_config(source, f"rnn class {name!r} is not supported (GRU, LSTM)")
    sizes = {
        key: _size(section[key], f"rnn {key}", source)
        for key in ("num_layers", "hidden_size")
        if key in section
    }
    return RnnDecl(name.lower(), **sizes)
