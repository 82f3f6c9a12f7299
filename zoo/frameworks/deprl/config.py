"""A DEP-RL run's ``config.yaml``, read as data: the env id, the action scaling and the network width.

deprl writes the config with ``yaml.dump`` and runs it back: ``tonic.header`` is ``exec``'d, ``tonic.agent``,
``tonic.environment`` and ``tonic.trainer`` are ``eval``'d (``deprl.load``, ``deprl.main``), and deprl reads the
file with ``yaml.FullLoader``. zoo reads it with :func:`zoo.safeyaml.read` (no Python tag is built) and never runs
a string of it: the environment string is parsed by :mod:`ast` (which compiles nothing) and only a call of tonic's
``Gym`` builder whose arguments are literals (:func:`ast.literal_eval` of each) is taken. ``mpo_args.hidden_size``
is a plain number. Anything else is a one-line error naming ``--env-id``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zoo import safeyaml
from zoo.errors import BrokenFile, LayoutMismatch, UnsupportedError

CONFIG = "config.yaml"
#: Bytes of config.yaml zoo reads: deprl's are about 1-2 KB.
MAX_CONFIG_BYTES = 256 << 10
#: Characters of the environment string zoo parses: a call with a few literal arguments.
MAX_ENVIRONMENT_CHARS = 2000
#: tonic's builders of gym envs, as the configs name them (``deprl.environments`` re-exports tonic's).
GYM_BUILDERS = frozenset(
    {"deprl.environments.Gym", "tonic.environments.Gym", "deprl.vendor.tonic.environments.Gym"}
)
#: ``build_environment``'s own parameters; other keywords go to ``gym.make``.
BUILD_ARGS = ("terminal_timeouts", "time_feature", "max_episode_steps", "scaled_actions")
#: ``custom_model_mpo``'s default width when ``mpo_args`` names none (``TunedMPO.set_params``).
DEFAULT_HIDDEN = 256
_ENV_HINT = "pass --env-id"


@dataclass
class RunConfig:
    """What zoo takes from ``config.yaml``: never code, only the values these strings hold as literals."""

    path: Path
    env_id: str
    scaled_actions: bool = True  # tonic's default: actions in [-1, 1] rescaled to the env's bounds
    hidden_size: int | None = None  # mpo_args.hidden_size (None: not given, deprl's 256)
    seed: int | None = None
    make_kwargs: dict[str, Any] = field(default_factory=dict)  # keywords deprl passes to gym.make
    env_args: dict[str, Any] = field(default_factory=dict)  # attributes deprl sets on the env
    dep: bool = False  # the agent is wrapped in deprl.custom_agents.dep_factory (DEP exploration)
    max_episode_steps: Any = "default"


def _config_error(path: Path, what: str) -> LayoutMismatch:
    return LayoutMismatch(f"{path.parent.name}/{CONFIG}: {what}", _ENV_HINT)


def _dotted(node: ast.expr) -> str | None:
    """``a.b.C`` of a name or attribute chain; None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _literal(node: ast.expr, what: str, path: Path) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise _config_error(
            path, f"tonic.environment's {what} is not a literal (zoo runs none of it)"
        ) from None


def parse_environment(text: Any, path: Path) -> tuple[str, dict[str, Any]]:
    """``(env id, keywords)`` of ``deprl.environments.Gym('<id>', scaled_actions=..., ...)``, parsed, never run."""
    if not isinstance(text, str) or not text.strip():
        raise _config_error(path, "no tonic.environment string")
    if len(text) > MAX_ENVIRONMENT_CHARS:
        raise _config_error(
            path, f"tonic.environment is {len(text)} characters (zoo parses up to {MAX_ENVIRONMENT_CHARS})"
        )
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise _config_error(path, "tonic.environment is not a call zoo can parse") from None
    call = tree.body
    builder = _dotted(call.func) if isinstance(call, ast.Call) else None
    if not isinstance(call, ast.Call) or builder is None:
        raise _config_error(path, "tonic.environment is not a call of tonic's Gym builder")
    if builder not in GYM_BUILDERS:
        raise UnsupportedError(
            f"{path.parent.name}/{CONFIG}: tonic.environment builds its env with {builder[:80]}; zoo evaluates "
            "gym envs (deprl.environments.Gym)",
            hint="see docs/frameworks/deprl.md",
        )
    args = [_literal(node, "argument", path) for node in call.args]
    keywords: dict[str, Any] = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            raise _config_error(path, "tonic.environment passes **keywords (zoo runs none of it)")
        keywords[keyword.arg] = _literal(keyword.value, f"{keyword.arg}=", path)
    name = args[0] if args else keywords.pop("name", None)
    if not isinstance(name, str) or len(args) > 1 or not re.fullmatch(r"[\w./:-]{1,200}", name):
        raise _config_error(path, "tonic.environment names no env id as its one string argument")
    return name, keywords


def _mapping(value: Any, key: str, path: Path) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BrokenFile(f"{path.parent.name}/{CONFIG}: {key} is a {type(value).__name__}, not a mapping")
    return value


def read_config(path: Path) -> RunConfig:
    """``config.yaml`` of a run (or of a baseline deprl.load_baseline fetched)."""
    doc = safeyaml.read(path, max_bytes=MAX_CONFIG_BYTES)
    if not isinstance(doc, dict) or not isinstance(doc.get("tonic"), dict):
        raise _config_error(path, "no tonic: mapping (is this deprl's config.yaml?)")
    tonic = doc["tonic"]
    env_id, keywords = parse_environment(tonic.get("environment"), path)
    scaled = keywords.pop("scaled_actions", True)
    if not isinstance(scaled, bool):
        raise _config_error(path, f"tonic.environment's scaled_actions is {scaled!r}, not True or False")
    if keywords.pop("time_feature", False):
        raise UnsupportedError(
            f"{path.parent.name}/{CONFIG}: the env is built with time_feature=True (tonic appends the time to each "
            "observation); zoo's eval env has no such feature",
            hint="see docs/frameworks/deprl.md",
        )
    keywords.pop("terminal_timeouts", None)  # where episodes end in training, not in evaluation
    max_steps = keywords.pop("max_episode_steps", "default")
    mpo = _mapping(doc.get("mpo_args"), "mpo_args", path)
    hidden = mpo.get("hidden_size")
    if hidden is not None and (isinstance(hidden, bool) or not isinstance(hidden, int) or hidden < 1):
        raise _config_error(path, f"mpo_args.hidden_size is {hidden!r}, not a positive integer")
    seed = tonic.get("seed")
    agent = tonic.get("agent")
    return RunConfig(
        path,
        env_id,
        scaled_actions=scaled,
        hidden_size=hidden,
        seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
        make_kwargs=keywords,
        env_args=_mapping(doc.get("env_args"), "env_args", path),
        dep=isinstance(agent, str) and "dep_factory(" in agent,
        max_episode_steps=max_steps,
    )
