"""The rl_games config a run was trained with, read without executing anything.

rl_games itself writes no config beside its checkpoints. Isaac Lab's ``rl_games/train.py`` dumps the agent config
(``{params: {seed, algo, model, network, config, env}}``) to ``params/agent.yaml``; for a plain run, the user's own
training yaml (the same ``params:`` document) is given with ``--model-config``. Both are read by
:func:`zoo.safeyaml.read` (Python tags never built), and only plain values are used: nothing in them is run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zoo import safeyaml
from zoo.artifacts.runs import note_read
from zoo.errors import BrokenFile, LayoutMismatch

AGENT_YAML = Path("params") / "agent.yaml"
ENV_YAML = Path("params") / "env.yaml"
_GYM_ID = re.compile(r"^(?:[\w.-]+/)?[\w.:-]+-v\d+$")
#: rl_games' ActivationsFactory names (network_builder.py), which zoo rebuilds.
ACTIVATIONS = ("relu", "tanh", "sigmoid", "elu", "selu", "swish", "gelu", "softplus", "None")


def _section(data: dict, *keys: str) -> dict[str, Any]:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None  # type: ignore[assignment]
    return data if isinstance(data, dict) else {}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass
class RunConfig:
    """What zoo uses of an rl_games ``params:`` document; ``source`` is None when the run has none."""

    source: str | None = None
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def known(self) -> bool:
        return self.source is not None

    @property
    def config(self) -> dict[str, Any]:
        return _section(self.params, "config")

    @property
    def network(self) -> dict[str, Any]:
        return _section(self.params, "network")

    @property
    def algo(self) -> str | None:
        name = _section(self.params, "algo").get("name")
        return str(name) if name is not None else None

    @property
    def model_name(self) -> str | None:
        name = _section(self.params, "model").get("name")
        return str(name) if name is not None else None

    @property
    def activation(self) -> str | None:
        value = _section(self.network, "mlp").get("activation")
        return str(value) if value is not None else None

    @property
    def mu_activation(self) -> str:
        return str(_section(self.network, "space", "continuous").get("mu_activation", "None"))

    @property
    def sigma_activation(self) -> str:
        return str(_section(self.network, "space", "continuous").get("sigma_activation", "None"))

    @property
    def clip_actions(self) -> bool:
        """The player rescales ``clamp(mu, -1, 1)`` to the action bounds unless ``config.clip_actions`` is false."""
        return self.config.get("clip_actions", True) is not False

    @property
    def env_clip_observations(self) -> float | None:
        """Isaac Lab's ``RlGamesVecEnvWrapper`` clamps observations to +-``params.env.clip_observations``."""
        return _number(_section(self.params, "env").get("clip_observations"))

    @property
    def env_clip_actions(self) -> float | None:
        """Isaac Lab's wrapper reports the action space as ``Box(-clip_actions, clip_actions)`` (``params.env``)."""
        return _number(_section(self.params, "env").get("clip_actions"))

    @property
    def seed(self) -> int | None:
        seed = self.params.get("seed")
        return seed if isinstance(seed, int) and not isinstance(seed, bool) else None

    @property
    def env_id(self) -> str | None:
        """The gymnasium id ``config.env_config.name`` or ``config.env_name`` names (Isaac Lab's ``rlgpu``: none)."""
        for value in (_section(self.config, "env_config").get("name"), self.config.get("env_name")):
            if isinstance(value, str) and _GYM_ID.match(value):
                return value
        return None

    def unsupported(self) -> str | None:
        """What in the network section zoo does not rebuild (the weights say the rest)."""
        net = self.network
        if net.get("name", "actor_critic") != "actor_critic":
            return f"network {net.get('name')!r} (zoo rebuilds rl_games' actor_critic MLP)"
        for key in ("rnn", "cnn"):
            if net.get(key):
                return f"a network with an {key} section"
        if _section(net, "mlp").get("d2rl"):
            return "a D2RL MLP (d2rl: True)"
        if _section(net, "space", "multi_discrete"):
            return "a multi_discrete action space"
        for what, name in (("activation", self.activation), ("mu_activation", self.mu_activation)):
            if name is not None and name not in ACTIVATIONS:
                return f"{what} {name!r} (rl_games' are {', '.join(ACTIVATIONS)})"
        return None


def read_params(path: Path) -> RunConfig:
    """An rl_games yaml (``params:`` at the top, as rl_games' runner and Isaac Lab take it)."""
    data = safeyaml.read(path, tags="config")
    if not isinstance(data, dict):
        raise BrokenFile(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    params = data.get("params")
    if not isinstance(params, dict):
        raise LayoutMismatch(
            f"{path}: not an rl_games config (no 'params:' mapping at the top)",
            hint="give the yaml rl_games was trained with (params: {algo, model, network, config})",
        )
    return RunConfig(str(path), params)


def run_config(run_dir: Path, model_config: Path | None = None) -> RunConfig:
    """``model_config`` when given, else the run's ``params/agent.yaml`` (noted as read), else none."""
    if model_config is not None:
        return read_params(model_config)
    note_read(run_dir / AGENT_YAML)
    if (run_dir / AGENT_YAML).is_file():
        config = read_params(run_dir / AGENT_YAML)
        return RunConfig(str(AGENT_YAML), config.params)
    return RunConfig()
