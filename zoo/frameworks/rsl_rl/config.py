"""A run's training config, read without executing anything.

Isaac Lab and mjlab dump the runner config to ``params/agent.yaml`` (and the env config to
``params/env.yaml``) with ``yaml.dump``, so tuples appear as ``!!python/tuple``; they are read by
:func:`zoo.safeyaml.read` (tuples become lists, every other Python tag stays unbuilt: ``None``).
Genesis pickles ``[env_cfg, obs_cfg, reward_cfg, command_cfg, train_cfg]`` (plain dicts) to
``cfgs.pkl``; it is decoded by :func:`~zoo.artifacts.restricted_pickle.checked_loads` with no
extra allowlist, so a pickle asking for any other global is refused, naming it, before it runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zoo import safeyaml
from zoo.artifacts.runs import note_read
from zoo.errors import BrokenFile

AGENT_YAML = Path("params") / "agent.yaml"
ENV_YAML = Path("params") / "env.yaml"
CFGS_PKL = "cfgs.pkl"
#: Keys of an env config that may name a gymnasium id, first match wins.
_ENV_ID_KEYS = ("env_id", "task", "id", "env_name", "task_name")
_GYM_ID = re.compile(r"^(?:[\w.-]+/)?[\w.:-]+-v\d+$")


@dataclass(frozen=True)
class ModelConfig:
    """The settings of the policy's model (``actor:`` or ``student:``; ``policy:`` before rsl-rl-lib 4)."""

    settings: dict[str, Any]
    obs_groups: list[str] | None  # the observation groups the policy reads, None when the config omits them

    @property
    def activation(self) -> str:
        """rsl_rl's default is elu when the config does not say."""
        return str(self.settings.get("activation", "elu"))

    @property
    def rnn_type(self) -> str | None:
        value = self.settings.get("rnn_type")
        return str(value).lower() if value is not None else None

    @property
    def distribution(self) -> dict[str, Any] | None:
        value = self.settings.get("distribution_cfg")
        return value if isinstance(value, dict) else None

    @property
    def cnn_cfg(self) -> dict[str, Any] | None:
        """``CNNModel``'s ``cnn_cfg``: one CNN's settings, or one per image group."""
        value = self.settings.get("cnn_cfg")
        return value if isinstance(value, dict) else None


@dataclass
class RunConfig:
    """What zoo uses from a run's config; ``source`` is None when the run has none."""

    source: str | None = None
    agent: dict[str, Any] = field(default_factory=dict)
    env: dict[str, Any] = field(default_factory=dict)
    cfgs: list[dict[str, Any]] | None = None  # Genesis' whole cfgs.pkl list, when that is the config

    def model(self, role: str) -> ModelConfig:
        """The config of the policy's model, ``role`` being ``actor`` (PPO) or ``student`` (Distillation).

        rsl-rl-lib 4+ names the section and the observation set after the role; older versions keep the
        actor-critic or student-teacher settings in ``policy:`` and the policy's observations in
        ``obs_groups["policy"]``."""
        section = next((v for k in (role, "policy") if isinstance(v := self.agent.get(k), dict)), {})
        groups = self.agent.get("obs_groups")
        groups = groups if isinstance(groups, dict) else {}
        names = next((v for k in (role, "policy") if isinstance(v := groups.get(k), list)), None)
        return ModelConfig(section, [str(n) for n in names] if names else None)

    @property
    def algorithm(self) -> str | None:
        algo = self.agent.get("algorithm")
        return str(algo.get("class_name")) if isinstance(algo, dict) and algo.get("class_name") else None

    @property
    def seed(self) -> int | None:
        # at the top (Isaac Lab's agent cfg, Genesis's train_cfg), else under "runner"
        runner = self.agent.get("runner")
        seed = self.agent.get("seed", runner.get("seed") if isinstance(runner, dict) else None)
        return seed if isinstance(seed, int) and not isinstance(seed, bool) else None

    @property
    def clip_actions(self) -> float | None:
        """Isaac Lab's wrapper clamps actions to ``[-clip_actions, clip_actions]`` (agent cfg); Genesis envs
        do it themselves from ``env_cfg['clip_actions']``."""
        for value in (self.agent.get("clip_actions"), self.env.get("clip_actions")):
            if isinstance(value, int | float) and not isinstance(value, bool):
                return float(value)
        return None

    @property
    def unknown_task(self) -> str | None:
        """Why a Genesis ``cfgs.pkl`` names no env: what it holds, in a few words (None: not that case)."""
        if self.cfgs is None or self.env_id is not None:
            return None
        from zoo.tasks.cfgs import describe_unknown

        return f"{CFGS_PKL} describes a task zoo does not define ({describe_unknown(self.cfgs)})"

    @property
    def env_id(self) -> str | None:
        """A gymnasium id the env config names, zoo's tensor task a Genesis ``cfgs.pkl`` describes, else
        None (then ``zoo eval --env-id`` is needed)."""
        if self.cfgs is not None:
            from zoo.tasks.cfgs import recognize

            task = recognize(self.cfgs)
            if task:
                return task
        for key in _ENV_ID_KEYS:
            value = self.env.get(key)
            if isinstance(value, str) and _GYM_ID.match(value):
                return value
        return None


def read_yaml(path: Path) -> dict[str, Any]:
    """A config dump (``!!python/tuple`` read as a list, other Python tags never built): a mapping."""
    data = safeyaml.read(path, tags="config")
    if not isinstance(data, dict):
        raise BrokenFile(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def read_run_config(run_dir: Path) -> RunConfig:
    """The config beside the checkpoints: ``params/agent.yaml`` first, then ``cfgs.pkl`` (noted as read: discovery
    takes a run's env id and seed from them)."""
    for name in (AGENT_YAML, ENV_YAML, CFGS_PKL):
        note_read(run_dir / name)
    if (run_dir / AGENT_YAML).is_file():
        env_path = run_dir / ENV_YAML
        env = read_yaml(env_path) if env_path.is_file() else {}
        return RunConfig(str(AGENT_YAML), read_yaml(run_dir / AGENT_YAML), env)
    if (run_dir / CFGS_PKL).is_file():
        from zoo.tasks.cfgs import read_cfgs

        cfgs = read_cfgs(run_dir / CFGS_PKL)  # [env_cfg, obs_cfg, reward_cfg, command_cfg, train_cfg]
        return RunConfig(CFGS_PKL, cfgs[-1], cfgs[0], cfgs)
    return RunConfig()
