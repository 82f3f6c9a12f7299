"""The policy's architecture and preprocessor settings, read from YAML without executing it.

skrl's checkpoints hold weights only: the activation functions, the output expression and the
scaler's ``epsilon``/``clip_threshold`` live in the agent config (Isaac Lab dumps it to
``params/agent.yaml``; skrl's ``Runner`` takes the same dict). skrl builds models from that
config with ``exec``/``eval`` of generated source, so a planted config could run code there;
zoo instead reads it with :func:`zoo.safeyaml.read` (no Python tag is built) and accepts only a
closed vocabulary (linear layers, named activations, ``ACTIONS`` wrapped in activations or scaled
by a number).

A model config for runs without ``params/agent.yaml`` (``zoo eval --model-config``, later
``zoo eval --model-config``) is a YAML file holding either a whole agent config (``models:``),
a ``policy:`` section, or the policy section itself, e.g.::

    class: GaussianMixin
    network: [{name: net, input: OBSERVATIONS, layers: [64, 64], activations: relu}]
    output: 2 * tanh(ACTIONS)
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zoo import safeyaml
from zoo.errors import ZooError

ACTIVATIONS = ("elu", "relu", "leaky_relu", "selu", "tanh", "sigmoid", "softplus", "softsign")
POLICY_CLASSES = {"gaussianmixin": "gaussian", "deterministicmixin": "deterministic"}


@dataclass
class PolicySpec:
    """What the weights do not say: per-layer activations, output ops and clipping flags."""

    kind: str = "gaussian"  # gaussian | deterministic
    layers: list[int] | None = None  # hidden sizes the config declares (checked against the weights)
    activations: list[str] | str | None = None  # one name for every hidden layer, or one per layer
    output: list[tuple[str, float | str]] = field(default_factory=list)  # ("act", name) / ("scale", c)
    output_text: str = "ACTIONS"
    clip_actions: bool = False
    clip_mean_actions: bool = False
    clip_log_std: bool = True
    min_log_std: float = -20.0
    max_log_std: float = 2.0
    shared: bool = False
    source: str = "none"

    def activation_for(self, hidden: int) -> list[str]:
        """One activation per hidden layer; raises when the config cannot say."""
        if self.activations is None:
            raise ZooError(
                "the policy's activation functions are unknown (no params/agent.yaml beside checkpoints/)",
                hint="write a model config (see docs/frameworks/skrl.md) and pass zoo eval --model-config PATH",
            )
        if isinstance(self.activations, str):
            return [self.activations] * hidden
        if len(self.activations) == 1:
            return list(self.activations) * hidden
        if len(self.activations) != hidden:
            raise ZooError(
                f"model config lists {len(self.activations)} activations for {hidden} hidden layers"
            )
        return list(self.activations)


@dataclass
class ScalerSpec:
    """``RunningStandardScaler`` constructor arguments (not saved in the checkpoint)."""

    epsilon: float = 1e-8
    clip_threshold: float = 5.0


def _bad(source: str, what: str) -> ZooError:
    return ZooError(f"{source}: {what}", hint="see docs/frameworks/skrl.md for the supported model configs")


def _activation(name: Any, source: str) -> str:
    if not isinstance(name, str) or name.lower() not in ACTIVATIONS:
        raise _bad(source, f"activation {name!r} is not one of {', '.join(ACTIVATIONS)}")
    return name.lower()


def parse_output(text: Any, source: str) -> list[tuple[str, float | str]]:
    """``ACTIONS`` / ``tanh(ACTIONS)`` / ``2 * tanh(ACTIONS)`` as ops applied to the last layer, innermost first."""
    if not isinstance(text, str):
        raise _bad(source, f"output {text!r} is not an expression")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise _bad(source, f"output {text!r} does not parse") from None

    def walk(node: ast.AST) -> list[tuple[str, float | str]]:
        if isinstance(node, ast.Name) and node.id == "ACTIONS":
            return []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 1:
            return [*walk(node.args[0]), ("act", _activation(node.func.id, source))]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            for const, other in ((node.left, node.right), (node.right, node.left)):
                if isinstance(const, ast.Constant) and isinstance(const.value, int | float):
                    return [*walk(other), ("scale", float(const.value))]
        raise _bad(source, f"output {text!r} is not supported (use ACTIONS, act(ACTIONS), number * ...)")

    return walk(tree)


def _layers(raw: Any, source: str) -> list[int]:
    sizes = []
    for layer in raw if isinstance(raw, list) else [None]:
        if isinstance(layer, dict) and len(layer) == 1 and str(next(iter(layer))).lower() == "linear":
            layer = next(iter(layer.values()))
            layer = layer.get("out_features", layer.get("features")) if isinstance(layer, dict) else layer
        if not isinstance(layer, int) or isinstance(layer, bool) or layer <= 0:
            raise _bad(source, f"layers must be a list of linear layer sizes, got {raw!r}")
        sizes.append(layer)
    return sizes


def policy_spec(section: Any, source: str, shared: bool = False) -> PolicySpec:
    """Validate one ``models.policy`` section (skrl's model-instantiator format, or its flat form)."""
    if not isinstance(section, dict):
        raise _bad(source, "the policy section is not a mapping")
    cls = str(section.get("class", "GaussianMixin")).lower()
    if cls not in POLICY_CLASSES:
        raise _bad(
            source,
            f"policy class {section.get('class')!r} is not supported (GaussianMixin, DeterministicMixin)",
        )
    network = section.get("network")
    if network is not None:
        if not isinstance(network, list) or len(network) != 1 or not isinstance(network[0], dict):
            raise _bad(source, "only a single-container network (one item under network:) is supported")
        body = network[0]
        if str(body.get("input", "OBSERVATIONS")) not in ("OBSERVATIONS", "STATES"):
            raise _bad(source, f"network input {body.get('input')!r} is not supported (OBSERVATIONS)")
    else:
        body = section
    activations = body.get("activations")
    if isinstance(activations, list):
        activations = [_activation(a, source) for a in activations] if activations else None
    elif activations is not None:
        activations = _activation(activations, source)
    output_text = str(section.get("output", "ACTIONS"))
    flags = {}
    for key, default in (("clip_actions", False), ("clip_mean_actions", False), ("clip_log_std", True)):
        value = section.get(key, default)
        if not isinstance(value, bool):
            raise _bad(source, f"{key} must be true or false, got {value!r}")
        flags[key] = value
    bounds = {}
    for key, default in (("min_log_std", -20.0), ("max_log_std", 2.0)):
        value = section.get(key, default)
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise _bad(source, f"{key} must be a number, got {value!r}")
        bounds[key] = float(value)
    return PolicySpec(
        kind=POLICY_CLASSES[cls], layers=_layers(body["layers"], source) if "layers" in body else None,
        activations=activations, output=parse_output(output_text, source), output_text=output_text,
        shared=shared, source=source, **flags, **bounds,
    )  # fmt: skip


def scaler_spec(agent: Any, key: str, source: str) -> ScalerSpec:
    """Epsilon and clip threshold from ``agent.<key>_kwargs`` (skrl's defaults when absent)."""
    kwargs = None
    if isinstance(agent, dict):  # a 1.x config names the observation scaler state_preprocessor
        keys = (key, "observation_preprocessor", "state_preprocessor")
        kwargs = next((agent[f"{k}_kwargs"] for k in keys if agent.get(f"{k}_kwargs")), None)
    spec = ScalerSpec()
    for name in ("epsilon", "clip_threshold"):
        value = (
            (kwargs or {}).get(name, getattr(spec, name)) if isinstance(kwargs, dict) else getattr(spec, name)
        )
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise _bad(source, f"{key}_kwargs.{name} must be a number, got {value!r}")
        setattr(spec, name, float(value))
    return spec


def read_yaml(path: Path) -> Any:
    """An agent config (Isaac Lab dumps tuples as ``!!python/tuple``): no Python tag is ever built."""
    return safeyaml.read(path, tags="config")


@dataclass
class RunConfig:
    """Everything zoo takes from YAML for one run."""

    policy: PolicySpec
    agent: dict
    algorithm: str | None = None  # agent.class of the agent config


def _from_document(doc: Any, source: str) -> RunConfig:
    if not isinstance(doc, dict):
        raise _bad(source, "expected a mapping")
    agent = doc.get("agent") if isinstance(doc.get("agent"), dict) else {}
    models = doc.get("models")
    if isinstance(models, dict):
        return RunConfig(
            policy_spec(models.get("policy"), source, shared=models.get("separate", True) is False),
            agent, str(agent["class"]).lower() if "class" in agent else None,
        )  # fmt: skip
    return RunConfig(policy_spec(doc.get("policy", doc), source), agent)


def agent_yaml(experiment_dir: Path | None) -> Path | None:
    if experiment_dir is None or not experiment_dir.is_dir():
        return None
    path = experiment_dir / "params" / "agent.yaml"
    return path if path.is_file() else None


def run_config(experiment_dir: Path | None, model_config: str | os.PathLike | None = None) -> RunConfig:
    """The explicit model config, else ``params/agent.yaml``, else an empty spec (shapes only)."""
    if model_config:
        path = Path(model_config)
        return _from_document(read_yaml(path), str(path))
    path = agent_yaml(experiment_dir)
    if path is not None:
        return _from_document(read_yaml(path), str(path))
    return RunConfig(PolicySpec(), {})
