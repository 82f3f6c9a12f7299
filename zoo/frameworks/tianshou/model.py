"""The acting network of a Tianshou algorithm, taken from its records as data (layers, tensors, action facts).

Tianshou 2.x policies zoo rebuilds (``policy.pt`` of the high-level API holds the whole ``Algorithm``):

- ``DiscreteQLearningPolicy`` (DQN, double DQN): its ``model`` is a ``DiscreteActor`` (``preprocess`` ``Net``,
  then the ``last`` ``MLP``) or a ``Net`` with an action head; the action is ``argmax`` of the Q-values.
- ``ProbabilisticActorPolicy`` (PPO, A2C, NPG, TRPO, REINFORCE) over a ``ContinuousActorProbabilistic``:
  the deterministic action is the Gaussian's mode, ``mu`` (``max_action * tanh(mu)`` unless the actor is
  ``unbounded``), then the policy's ``map_action``: ``action_bound_method`` ``clip`` (to [-1, 1]) or
  ``tanh``, then, with ``action_scaling``, ``low + (high - low) * (a + 1) / 2``.
- the same policy over a ``DiscreteActor`` (discrete PPO/A2C): the categorical's mode, ``argmax``.

A network is ``Net``/``MLP`` modules of ``Linear`` layers and activations, read in their module order. The
activation is a class *name* mapped to ``torch.nn`` through :data:`ACTIVATIONS`; anything else (dueling or
distributional heads, recurrent or convolutional layers, a conditioned sigma is fine: the mode ignores it)
is refused with what it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from zoo.artifacts.weights_only import TensorInfo
from zoo.errors import UnsupportedError
from zoo.frameworks.tianshou.objects import Record, is_record

if TYPE_CHECKING:
    import numpy as np  # only named in annotations: the adapter is imported by commands that read no array

#: Activation classes (``torch.nn.modules.activation``) zoo rebuilds, with the attributes their output depends on.
ACTIVATIONS: dict[str, tuple[str, ...]] = {
    "ReLU": (),
    "Tanh": (),
    "ELU": ("alpha",),
    "LeakyReLU": ("negative_slope",),
    "Sigmoid": (),
    "SiLU": (),
    "GELU": ("approximate",),
    "Mish": (),
    "Softplus": ("beta", "threshold"),
}
_HINT = "zoo rebuilds Tianshou's Net/MLP of Linear layers (see docs/frameworks/tianshou.md)"


@dataclass(frozen=True)
class Layer:
    """One step of the network: ``linear`` (the tensors' keys), an ``activation`` (name, arguments), ``flatten``."""

    kind: str
    weight: str | None = None
    bias: str | None = None
    name: str | None = None
    arguments: tuple[tuple[str, Any], ...] = ()


@dataclass
class Space:
    """A gymnasium space as the policy recorded it: ``Discrete`` (``n``) or ``Box`` (shape, low, high)."""

    kind: str
    shape: tuple[int, ...]
    n: int | None = None
    low: np.ndarray | None = None
    high: np.ndarray | None = None


@dataclass
class Actor:
    """What acts: the layers from observation to the head's input, and how the head maps it to an action."""

    algorithm: str  # the Algorithm's class name (DQN, PPO, ...)
    policy_class: str  # DiscreteQLearningPolicy, ProbabilisticActorPolicy
    head: str  # "argmax" (Q-values or categorical), "gaussian" (the mode, then map_action)
    layers: list[Layer]
    tensors: dict[str, TensorInfo]
    observation: Space | None
    action: Space | None
    unbounded: bool = True
    max_action: float = 1.0
    bound_method: str | None = None
    scaling: bool = False
    softmax: bool = False
    deterministic_eval: bool = False
    notes: list[str] = field(default_factory=list)

    def sizes(self) -> list[int]:
        """Input, hidden and output widths of the linear layers."""
        linears = [
            self.tensors[layer.weight] for layer in self.layers if layer.kind == "linear" and layer.weight
        ]
        return [linears[0].shape[1], *(t.shape[0] for t in linears)] if linears else []

    def activations(self) -> list[str]:
        return [layer.name or "" for layer in self.layers if layer.kind == "activation"]


def child(record: Record, name: str) -> Any:
    """A module's submodule (``_modules``) or attribute ``name``."""
    modules = record.get("_modules") or {}
    return modules[name] if name in modules else record.get(name)


def short(record: object) -> str:
    return record.qualname.rpartition(".")[2] if isinstance(record, Record) else type(record).__name__


def _refuse(what: str) -> UnsupportedError:
    return UnsupportedError(f"policy holds {what}, which zoo does not rebuild", hint=_HINT)


class _Walk:
    """Flattens nested ``Net``/``MLP``/``Sequential`` modules into :class:`Layer` steps, keeping the tensors."""

    def __init__(self) -> None:
        self.layers: list[Layer] = []
        self.tensors: dict[str, TensorInfo] = {}

    def module(self, record: object, prefix: str) -> None:
        if not isinstance(record, Record):
            raise _refuse(f"a {type(record).__name__} where a module belongs ({prefix})")
        kind, modules = short(record), record.get("_modules") or {}
        if kind == "Sequential":
            for name, sub in modules.items():
                self.module(sub, f"{prefix}.{name}")
        elif kind == "Linear":
            params = record.get("_parameters") or {}
            weight, bias = params.get("weight"), params.get("bias")
            if not isinstance(weight, TensorInfo) or len(weight.shape) != 2:
                raise _refuse(f"a Linear layer without a 2-d weight ({prefix})")
            self.tensors[f"{prefix}.weight"] = weight
            if isinstance(bias, TensorInfo):
                self.tensors[f"{prefix}.bias"] = bias
            self.layers.append(
                Layer("linear", f"{prefix}.weight", f"{prefix}.bias" if bias is not None else None)
            )
        elif kind in ACTIVATIONS and record.qualname.startswith("torch.nn.modules.activation."):
            args = tuple((a, _plain(record.get(a))) for a in ACTIVATIONS[kind])
            self.layers.append(Layer("activation", name=kind, arguments=args))
        elif kind == "Identity" and record.qualname.startswith("torch.nn.modules.linear."):
            return
        elif kind == "MLP" and record.qualname.startswith("tianshou."):
            if record.get("flatten_input", True):
                self.layers.append(Layer("flatten"))
            self.module(modules.get("model"), f"{prefix}.model")
        elif kind == "Net" and record.qualname.startswith("tianshou."):
            self._net(record, prefix)
        else:
            raise _refuse(f"a {record.qualname} module ({prefix})")

    def _net(self, record: Record, prefix: str) -> None:
        if record.get("use_dueling"):
            raise _refuse("a dueling Net (Q and V heads)")
        if (record.get("num_atoms") or 1) != 1:
            raise _refuse("a distributional Net (num_atoms > 1)")
        self.module(child(record, "model"), f"{prefix}.model")
        if record.get("softmax"):
            self.layers.append(Layer("softmax"))


def _plain(value: object) -> Any:
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    raise _refuse(f"an activation argument of type {type(value).__name__}")


def _walk(*parts: tuple[object, str]) -> _Walk:
    walk = _Walk()
    for record, prefix in parts:
        walk.module(record, prefix)
    return walk


def actor_of(algorithm: object, arrays: Any) -> Actor:
    """The acting network of an ``Algorithm`` record. ``arrays`` turns numpy records into arrays (spaces)."""
    if not isinstance(algorithm, Record) or not algorithm.qualname.startswith("tianshou.algorithm."):
        raise UnsupportedError(
            f"policy.pt holds a {short(algorithm)}, not a Tianshou Algorithm",
            hint="zoo reads the policy.pt Tianshou's high-level API saves (see docs/frameworks/tianshou.md)",
        )
    policy = child(algorithm, "policy")
    if not isinstance(policy, Record):
        raise _refuse(f"a {short(algorithm)} without a policy module")
    observation = space_of(policy.get("observation_space"), arrays)
    action = space_of(policy.get("action_space"), arrays)
    common = dict(
        algorithm=short(algorithm), policy_class=short(policy), observation=observation, action=action
    )
    if is_record(policy, "DiscreteQLearningPolicy"):
        model = child(policy, "model")
        walk = _discrete(model)
        return Actor(**common, head="argmax", layers=walk.layers, tensors=walk.tensors)  # type: ignore[arg-type]
    if is_record(policy, "ProbabilisticActorPolicy") or is_record(policy, "DiscreteActorPolicy"):
        actor = child(policy, "actor")
        deterministic = bool(policy.get("deterministic_eval"))
        if is_record(actor, "DiscreteActor"):
            walk = _discrete(actor)
            return Actor(
                **common,  # type: ignore[arg-type]
                head="argmax",
                layers=walk.layers,
                tensors=walk.tensors,
                deterministic_eval=deterministic,
            )
        if is_record(actor, "ContinuousActorProbabilistic"):
            return _gaussian(actor, policy, common, deterministic)
        raise _refuse(f"a {short(actor)} actor")
    raise _refuse(f"a {short(policy)} policy")


def _discrete(model: object) -> _Walk:
    if is_record(model, "DiscreteActor"):
        assert isinstance(model, Record)
        walk = _walk((child(model, "preprocess"), "preprocess"), (child(model, "last"), "last"))
        if model.get("softmax_output"):
            walk.layers.append(Layer("softmax"))
        return walk
    if is_record(model, "Net"):
        return _walk((model, "net"))
    raise _refuse(f"a {short(model)} Q-network")


def _gaussian(actor: Record, policy: Record, common: dict, deterministic: bool) -> Actor:
    preprocess = child(actor, "preprocess")
    if not is_record(preprocess, "Net"):
        raise _refuse(f"a {short(preprocess)} actor body")
    walk = _walk((preprocess, "preprocess"), (child(actor, "mu"), "mu"))
    max_action = actor.get("max_action", 1.0)
    bound = policy.get("action_bound_method")
    if bound not in (None, "clip", "tanh") or not isinstance(max_action, int | float):
        raise _refuse(f"action_bound_method {bound!r} or max_action {max_action!r}")
    return Actor(
        **common,
        head="gaussian",
        layers=walk.layers,
        tensors=walk.tensors,
        unbounded=bool(actor.get("_unbounded", False)),
        max_action=float(max_action),
        bound_method=bound,
        scaling=bool(policy.get("action_scaling")),
        deterministic_eval=deterministic,
    )


def space_of(record: object, arrays: Any) -> Space | None:
    """A recorded gymnasium ``Box`` or ``Discrete`` as a :class:`Space` (None for anything else)."""
    if is_record(record, "gymnasium.spaces.discrete.Discrete"):
        assert isinstance(record, Record)
        n = arrays.number(record.get("n"))
        return Space("Discrete", (), n=int(n))
    if is_record(record, "gymnasium.spaces.box.Box"):
        assert isinstance(record, Record)
        low, high = arrays.array(record.get("low")), arrays.array(record.get("high"))
        shape = tuple(int(d) for d in record.get("_shape") or low.shape)
        return Space("Box", shape, low=low, high=high)
    return None


# ---------------------------------------------------------------------------------------------- low-level runs
#: What a model config of a low-level run says, with the mujoco examples' values as defaults (all of them build
#: ``Net(hidden_sizes, activation=nn.Tanh)`` and ``ContinuousActorProbabilistic(unbounded=True)``, and their
#: policy maps actions with ``action_scaling=True``, ``action_bound_method="clip"`` unless told otherwise).
MODEL_CONFIG_KEYS = ("activation", "unbounded", "max_action", "action_bound_method", "action_scaling")
_ACTOR = "policy.actor."


@dataclass(frozen=True)
class ModelConfig:
    """The architecture facts a low-level ``policy.pth`` does not hold (``--model-config``)."""

    activation: str
    unbounded: bool = True
    max_action: float = 1.0
    action_bound_method: str | None = "clip"
    action_scaling: bool = True
    source: str = ""


def read_model_config(path: Any) -> ModelConfig:
    """``--model-config``: a YAML mapping of :data:`MODEL_CONFIG_KEYS` (zoo's bounded reader, no tags)."""
    from zoo import safeyaml
    from zoo.errors import UsageError

    data = safeyaml.read(path)
    hint = f"a mapping of {', '.join(MODEL_CONFIG_KEYS)} (see docs/frameworks/tianshou.md)"
    if not isinstance(data, dict):
        raise UsageError(f"{path}: --model-config must be a mapping", hint=hint)
    unknown = sorted(str(k) for k in data if k not in MODEL_CONFIG_KEYS)
    if unknown:
        raise UsageError(f"{path}: unknown key {unknown[0]!r} in --model-config", hint=hint)
    activation = data.get("activation")
    if activation not in ACTIVATIONS or ACTIVATIONS[activation]:
        plain = ", ".join(name for name, args in ACTIVATIONS.items() if not args)
        raise UsageError(f"{path}: activation {activation!r:.60} is not one of {plain}", hint=hint)
    bound = data.get("action_bound_method", "clip")
    if bound not in (None, "clip", "tanh"):
        raise UsageError(f"{path}: action_bound_method {bound!r:.60} is not clip, tanh or null", hint=hint)
    flags = {key: data.get(key, default) for key, default in (("unbounded", True), ("action_scaling", True))}
    max_action = data.get("max_action", 1.0)
    if not all(isinstance(v, bool) for v in flags.values()) or type(max_action) not in (int, float):
        raise UsageError(f"{path}: unbounded and action_scaling are booleans, max_action a number", hint=hint)
    return ModelConfig(
        activation, flags["unbounded"], float(max_action), bound, flags["action_scaling"], str(path)
    )


def low_level_actor(state: dict[str, Any], config: ModelConfig | None, algorithm: str) -> Actor:
    """The Gaussian actor of a low-level ``policy.pth``'s ``model`` (the algorithm's state dict): the
    ``Net``'s hidden ``Linear`` layers (each followed by the activation the config names; None: unknown), then
    ``mu``. What the config says is the head's mapping."""
    preprocess = _ACTOR + "preprocess.model.model."
    hidden = sorted(
        {
            int(k[len(preprocess) :].split(".")[0])
            for k in state
            if k.startswith(preprocess) and k.endswith(".weight")
        }
    )
    mu = sorted(
        {
            int(k[len(_ACTOR + "mu.model.") :].split(".")[0])
            for k in state
            if k.startswith(_ACTOR + "mu.model.") and k.endswith(".weight")
        }
    )
    if not hidden or len(mu) != 1:
        raise _refuse(
            "a low-level policy.pth other than a ContinuousActorProbabilistic over a Net (keys policy.actor.*)"
        )
    layers, tensors = [], {}
    for index in hidden:
        key = f"{preprocess}{index}"
        tensors[f"{key}.weight"] = state[f"{key}.weight"]
        bias = f"{key}.bias" if f"{key}.bias" in state else None
        if bias:
            tensors[bias] = state[bias]
        layers += [
            Layer("linear", f"{key}.weight", bias),
            Layer("activation", name=config.activation if config else None),
        ]
    key = f"{_ACTOR}mu.model.{mu[0]}"
    tensors[f"{key}.weight"] = state[f"{key}.weight"]
    bias = f"{key}.bias" if f"{key}.bias" in state else None
    if bias:
        tensors[bias] = state[bias]
    layers.append(Layer("linear", f"{key}.weight", bias))
    if not all(isinstance(t, TensorInfo) and len(t.shape) in (1, 2) for t in tensors.values()):
        raise _refuse("a low-level actor whose weights are not 1-d or 2-d tensors")
    return Actor(
        algorithm=algorithm,
        policy_class="ProbabilisticActorPolicy",
        head="gaussian",
        layers=layers,
        tensors=tensors,
        observation=None,
        action=None,
        unbounded=config.unbounded if config else True,
        max_action=config.max_action if config else 1.0,
        bound_method=config.action_bound_method if config else "clip",
        scaling=config.action_scaling if config else True,
    )


@dataclass
class ObsNorm:
    """Tianshou's ``RunningMeanStd`` as its ``norm`` applies it."""

    mean: np.ndarray
    var: np.ndarray
    eps: float
    clip_max: float | None
