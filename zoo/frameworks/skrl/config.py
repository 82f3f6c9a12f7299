"""The policy's architecture and preprocessor settings, read from YAML without executing it.

skrl's checkpoints hold weights only: the activation functions, the output expression, conv
strides and the scaler's ``epsilon``/``clip_threshold`` live in the agent config (Isaac Lab dumps
it to ``params/agent.yaml``; skrl's ``Runner`` takes the same dict). skrl builds models from that
config with ``exec``/``eval`` of generated source, so a planted config could run code there;
zoo instead reads it with :func:`zoo.safeyaml.read` (no Python tag is built) and accepts only a
closed vocabulary (:mod:`zoo.frameworks.skrl.instantiator`).

A model config, for runs without ``params/agent.yaml`` (``zoo eval/export --model-config``), is a
YAML file holding either a whole agent config (``models:``), a ``policy:`` section, or the policy
section itself, e.g.::

    class: GaussianMixin
    network: [{name: net, input: OBSERVATIONS, layers: [64, 64], activations: relu}]
    output: 2 * tanh(ACTIONS)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zoo import safeyaml
from zoo.errors import UnsupportedError, ZooError
from zoo.frameworks.skrl.instantiator import (
    NetworkDecl,
    RnnDecl,
    bad_config,
    parse_network,
    parse_output,
    parse_rnn,
)

POLICY_CLASSES = {
    "gaussianmixin": "gaussian",
    "multivariategaussianmixin": "multivariate_gaussian",
    "categoricalmixin": "categorical",
    "deterministicmixin": "deterministic",
}
GENERATION_2, GENERATION_1 = "skrl 2.x", "skrl 1.x"


@dataclass
class PolicySpec:
    """What the weights do not say: the declared network, activations, output ops, clipping flags."""

    kind: str = "gaussian"  # gaussian | multivariate_gaussian | categorical | deterministic
    network: NetworkDecl = field(default_factory=NetworkDecl)
    rnn: RnnDecl | None = None
    output: list[tuple[str, float | str]] = field(default_factory=list)  # ("act", name) / ("scale", c)
    output_text: str = "ACTIONS"
    clip_actions: bool = False
    clip_mean_actions: bool = False
    clip_log_std: bool = True
    min_log_std: float = -20.0
    max_log_std: float = 2.0
    unnormalized_log_prob: bool = True  # categorical: the output is logits (else probabilities)
    shared: bool = False
    source: str = "none"

    @property
    def known(self) -> bool:
        """Whether a config described the policy at all (else only the weights' shapes are known)."""
        return self.source != "none"

    def activation_for(self, hidden: int) -> list[str]:
        """One activation per hidden layer of a network whose layers come from the weights."""
        activations = self.network.activations
        if activations is None:
            raise ZooError(
                "the policy's activation functions are unknown (no params/agent.yaml beside checkpoints/)",
                hint="write a model config (see docs/frameworks/skrl.md) and pass zoo eval --model-config PATH",
            )
        if isinstance(activations, str):
            return [activations] * hidden
        if len(activations) == 1:
            return list(activations) * hidden
        if len(activations) != hidden:
            raise ZooError(f"model config lists {len(activations)} activations for {hidden} hidden layers")
        return list(activations)


@dataclass
class ScalerSpec:
    """``RunningStandardScaler`` constructor arguments (not saved in the checkpoint)."""

    epsilon: float = 1e-8
    clip_threshold: float = 5.0


def policy_spec(section: Any, source: str, shared: bool = False) -> PolicySpec:
    """Validate one ``models.policy`` section (skrl's model-instantiator format, or its flat form)."""
    if not isinstance(section, dict):
        raise bad_config(source, "the policy section is not a mapping")
    cls = str(section.get("class", "GaussianMixin")).lower()
    if cls not in POLICY_CLASSES:
        raise bad_config(
            source,
            f"policy class {section.get('class')!r} is not supported (GaussianMixin, "
            "MultivariateGaussianMixin, CategoricalMixin, DeterministicMixin)",
        )
    output_text = str(section.get("output", "ACTIONS"))
    flags = {}
    for key, default in (
        ("clip_actions", False),
        ("clip_mean_actions", False),
        ("clip_log_std", True),
        ("unnormalized_log_prob", True),
    ):
        value = section.get(key, default)
        if not isinstance(value, bool):
            raise bad_config(source, f"{key} must be true or false, got {value!r}")
        flags[key] = value
    bounds = {}
    for key, default in (("min_log_std", -20.0), ("max_log_std", 2.0)):
        value = section.get(key, default)
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise bad_config(source, f"{key} must be a number, got {value!r}")
        bounds[key] = float(value)
    return PolicySpec(
        kind=POLICY_CLASSES[cls],
        network=parse_network(section, source),
        rnn=parse_rnn(section.get("rnn"), source),
        output=parse_output(output_text, source),
        output_text=output_text,
        shared=shared,
        source=source,
        **flags,
        **bounds,
    )


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
            raise bad_config(source, f"{key}_kwargs.{name} must be a number, got {value!r}")
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
    generation: str | None = None  # the skrl generation the config is written for, when it says


def _inputs(models: dict) -> set[str]:
    """The tokens (OBSERVATIONS, STATES) the models' networks read."""
    found = set()
    for section in models.values():
        for container in (section.get("network") or []) if isinstance(section, dict) else []:
            text = str(container.get("input", "")) if isinstance(container, dict) else ""
            found.update(token for token in ("OBSERVATIONS", "STATES") if token in text)
    return found


def config_generation(agent: dict, models: dict) -> str | None:
    """skrl 2.x names the observation scaler ``observation_preprocessor`` and the observation input
    ``OBSERVATIONS``; skrl 1.x called observations "states" everywhere."""
    inputs = _inputs(models)
    if any(key.startswith("observation_preprocessor") for key in agent) or "OBSERVATIONS" in inputs:
        return GENERATION_2
    return GENERATION_1 if "STATES" in inputs else None


def check_policy_input(spec: PolicySpec, generation: str | None) -> None:
    """In skrl 2.x, ``STATES`` is the privileged state of an asymmetric actor-critic, which an env's
    observations do not give; in 1.x it was the observations' name."""
    if spec.network.input == "STATES" and generation == GENERATION_2:
        raise UnsupportedError(
            "the policy reads STATES (skrl 2.x's privileged state), which zoo cannot give it from observations",
            hint="zoo evaluates policies that read OBSERVATIONS (the critic may read STATES)",
        )


def _from_document(doc: Any, source: str) -> RunConfig:
    if not isinstance(doc, dict):
        raise bad_config(source, "expected a mapping")
    agent = doc.get("agent") if isinstance(doc.get("agent"), dict) else {}
    models = doc.get("models")
    if isinstance(models, dict):
        return RunConfig(
            policy_spec(models.get("policy"), source, shared=models.get("separate", True) is False),
            agent,
            str(agent["class"]).lower() if "class" in agent else None,
            config_generation(agent, models),
        )
    section = doc.get("policy", doc)
    return RunConfig(
        policy_spec(section, source), agent, generation=config_generation(agent, {"policy": section})
    )


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
