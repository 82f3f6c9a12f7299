"""A project's experiment config, checked before anyone launches it: fields, types, and the guardrail.

The config is a YAML file the project owns (docs/doctor.md shows one). ``zoo doctor --config``
reads it with zoo's safe YAML reader and never hands it to Hydra or a launcher: it only says whether
the run it describes is complete and *bounded*. The guardrail's defaults fit one experiment on one
workstation; flags raise them. A config is over the guardrail when a value is larger than its cap,
and *evades* it when it leaves a bound open (no step budget, an infinite wall time, a Hydra sweep or
a cluster launcher hidden in the ``hydra:`` / ``defaults:`` sections). Passing the guardrail does
not authorize training: it means a human can read the plan and run it knowingly.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from zoo import defaults
from zoo.errors import BrokenFile, UsageError

LAUNCHERS = ("local", "hydra-local", "submitit", "slurm")
#: Launchers that put work on other machines: over the guardrail unless allowed by name.
CLUSTER_LAUNCHERS = ("submitit", "slurm")


@dataclass(frozen=True)
class Guardrail:
    """The bounds of a run doctor calls "bounded" (each one a ``zoo doctor`` flag)."""

    max_timesteps: int = defaults.GUARDRAIL_MAX_TIMESTEPS  # env steps over all envs
    max_envs: int = defaults.GUARDRAIL_MAX_ENVS
    max_wall_minutes: float = defaults.GUARDRAIL_MAX_WALL_MINUTES
    max_gpus: int = defaults.GUARDRAIL_MAX_GPUS
    max_runs: int = defaults.GUARDRAIL_MAX_RUNS  # a multirun sweep is this many runs or fewer
    allowed_launchers: tuple[str, ...] = ("local", "hydra-local")

    def to_json(self) -> dict:
        return {**asdict(self), "allowed_launchers": list(self.allowed_launchers)}


#: The fields a config must give, with their types; ``(int, float)`` accepts either.
REQUIRED: dict[str, type | tuple[type, ...]] = {
    "framework": str,
    "algorithm": str,
    "env_id": str,
    "seed": int,
    "total_timesteps": int,
    "num_envs": int,
    "wall_time_minutes": (int, float),
    "output_dir": str,
}
OPTIONAL: dict[str, type | tuple[type, ...]] = {
    "device": str,
    "gpus": int,
    "launcher": str,
    "checkpoint_every": int,
    "eval": dict,
    "sweep": dict,
    "hyperparams": dict,
    "script": str,
    "capture_video": bool,
    "push_to_hub": bool,
    "hydra": dict,
    "defaults": list,
}
EVAL_FIELDS: dict[str, type | tuple[type, ...]] = {
    "every": int,
    "episodes": int,
    "seed": int,
    "max_steps": int,
}


@dataclass
class ConfigReport:
    """What doctor found in a config: the problems (exit 1), what exceeds or evades the guardrail (exit 3)."""

    path: Path
    values: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    over: list[str] = field(default_factory=list)

    @property
    def runs(self) -> int:
        """How many runs the config launches: the product of its sweep's value lists."""
        return math.prod(
            len(v) if isinstance(v, list) else 1 for v in (self.values.get("sweep") or {}).values()
        )


def _type_name(expected: type | tuple[type, ...]) -> str:
    names = [t.__name__ for t in (expected if isinstance(expected, tuple) else (expected,))]
    return " or ".join(
        {
            "str": "a string",
            "int": "an integer",
            "float": "a number",
            "dict": "a mapping",
            "list": "a list",
            "bool": "true/false",
        }[n]
        for n in names
    )


def _typed(value: Any, expected: type | tuple[type, ...]) -> bool:
    if isinstance(value, bool) and expected is not bool:
        return False  # YAML's true is not a step count
    return isinstance(value, expected)


def _fields(values: dict, schema: dict, where: str, report: ConfigReport, required: bool) -> None:
    for key, expected in schema.items():
        if key not in values or values[key] is None:
            if required:
                report.problems.append(f"{where}{key}: missing (expected {_type_name(expected)})")
            continue
        if not _typed(values[key], expected):
            report.problems.append(f"{where}{key}: {values[key]!r} is not {_type_name(expected)}")


def read_config(path: Path, launcher: str | None = None) -> ConfigReport:
    """Parse and type-check ``path``; ``launcher`` (``--launcher``) overrides the config's own."""
    from zoo import safeyaml
    from zoo.frameworks import framework_names

    if not path.is_file():
        raise UsageError(f"--config {path}: no such file", hint="give the experiment's YAML config")
    try:
        values = safeyaml.read(path)
    except BrokenFile as exc:
        report = ConfigReport(path)
        report.problems.append(f"not valid YAML: {exc.message}")
        return report
    report = ConfigReport(path, values if isinstance(values, dict) else {})
    if not isinstance(values, dict):
        report.problems.append("the config must be a YAML mapping of fields (see docs/doctor.md)")
        return report
    _fields(values, REQUIRED, "", report, required=True)
    _fields(values, OPTIONAL, "", report, required=False)
    known = set(REQUIRED) | set(OPTIONAL)
    report.problems += [
        f"{key}: unknown field (known: {', '.join(sorted(known))})" for key in values if key not in known
    ]
    if isinstance(values.get("framework"), str) and values["framework"] not in framework_names():
        report.problems.append(
            f"framework: {values['framework']!r} is not one of {', '.join(framework_names())}"
        )
    if launcher is not None:
        report.values["launcher"] = launcher
    chosen = report.values.get("launcher", "local")
    if isinstance(chosen, str) and chosen not in LAUNCHERS:
        report.problems.append(f"launcher: {chosen!r} is not one of {', '.join(LAUNCHERS)}")
    if isinstance(values.get("eval"), dict):
        _fields(values["eval"], EVAL_FIELDS, "eval.", report, required=False)
    sweep = values.get("sweep")
    if isinstance(sweep, dict):
        report.problems += [
            f"sweep.{k}: {v!r} is not a list of values"
            for k, v in sweep.items()
            if not isinstance(v, list) or not v
        ]
    return report


def _hidden_sweep(values: dict) -> list[str]:
    """Hydra settings that launch more (or elsewhere) than the config's own fields say."""
    found = []
    hydra = values.get("hydra") if isinstance(values.get("hydra"), dict) else {}
    if str(hydra.get("mode", "")).upper() == "MULTIRUN":
        found.append("hydra.mode: MULTIRUN launches a sweep (give it as sweep: so that it is counted)")
    sweeper = hydra.get("sweeper") if isinstance(hydra.get("sweeper"), dict) else {}
    if sweeper.get("params"):
        found.append("hydra.sweeper.params launches a sweep (give it as sweep: so that it is counted)")
    for item in values.get("defaults") or []:
        text = str(item)
        if "hydra/launcher" in text and not any(local in text for local in ("basic", "joblib")):
            found.append(
                f"defaults: {text} selects a cluster launcher (set launcher: instead, so that it is checked)"
            )
    return found


def apply_guardrail(report: ConfigReport, guardrail: Guardrail) -> None:
    """Fill ``report.over`` with each value over its cap and each bound the config leaves open."""
    if report.problems:
        return  # a config that does not parse cannot be measured
    v = report.values
    checks = [  # (field, value, cap, flag, whether 0 is a bound)
        ("total_timesteps", v["total_timesteps"], guardrail.max_timesteps, "--max-timesteps", False),
        ("num_envs", v["num_envs"], guardrail.max_envs, "--max-envs", False),
        (
            "wall_time_minutes",
            v["wall_time_minutes"],
            guardrail.max_wall_minutes,
            "--max-wall-minutes",
            False,
        ),
        ("gpus", v.get("gpus", 0), guardrail.max_gpus, "--max-gpus", True),
        ("runs (sweep)", report.runs, guardrail.max_runs, "--max-runs", False),
    ]
    for name, value, cap, flag, zero_bounds in checks:
        if not math.isfinite(value) or value < 0 or (value == 0 and not zero_bounds):
            # -1 "until stopped", 0 "no limit", .inf: the conventions for "unbounded"
            report.over.append(f"{name}: {value} leaves the run unbounded (give a finite bound above 0)")
        elif value > cap:
            report.over.append(f"{name}: {value:g} exceeds the guardrail's {cap:g} (raise it with {flag})")
    launcher = v.get("launcher", "local")
    if launcher not in guardrail.allowed_launchers:
        report.over.append(
            f"launcher: {launcher} runs jobs on a cluster, outside the guardrail "
            f"(allow it with --allow-launcher {launcher})"
        )
    report.over += _hidden_sweep(v)
