"""``zoo doctor``: the preflight checks, and the command line a handoff records."""

from __future__ import annotations

from pathlib import Path

import click

from zoo import defaults
from zoo.cli import options as opt
from zoo.cli.render import err, print_json, render_checks, render_environment


@click.command("doctor")
@click.option(
    "--framework",
    metavar="NAME",
    default=None,
    help="Check this framework's setup: an adapter zoo has or an installed plug-in (without it: what is "
    "installed, every framework listed).",
)
@click.option(
    "--policy",
    type=click.Path(path_type=Path),
    default=None,
    help="A model file or run dir: it exists, and its content loads (read without running it).",
)
@click.option(
    "--config",
    type=click.Path(path_type=Path),
    default=None,
    help="A YAML experiment config: fields, types and the guardrail (see docs/doctor.md).",
)
@click.option(
    "--launcher",
    type=click.Choice(["local", "hydra-local", "submitit", "slurm"]),
    default=None,
    help="How the run would launch [the config's, else local].",
)
@click.option(
    "--probe-env", is_flag=True, help="Create and reset the env once to read its spaces (never stepped)."
)
@click.option("--env-id", "--env", "env_id", default=None, help="The env id [the policy's or the config's].")
@opt.env_module
@click.option("--exp-name", default=None, help="Experiment name (registry) when the path does not say.")
@click.option(
    "--policy-class",
    default=None,
    metavar="MODULE:CLASS",
    help="--framework custom: your policy class; its module is found, not imported.",
)
@opt.seed
@click.option(
    "--episodes", "-n", type=click.IntRange(min=1), default=None, help="Eval episodes [registry default]."
)
@click.option(
    "--max-timesteps",
    type=click.IntRange(min=1),
    default=defaults.GUARDRAIL_MAX_TIMESTEPS,
    show_default=True,
    help="Guardrail: env steps per run.",
)
@click.option(
    "--max-envs",
    type=click.IntRange(min=1),
    default=defaults.GUARDRAIL_MAX_ENVS,
    show_default=True,
    help="Guardrail: parallel envs per run.",
)
@click.option(
    "--max-wall-minutes",
    type=click.FloatRange(min=0, min_open=True),
    default=defaults.GUARDRAIL_MAX_WALL_MINUTES,
    show_default=True,
    help="Guardrail: wall time per run.",
)
@click.option(
    "--max-gpus",
    type=click.IntRange(min=0),
    default=defaults.GUARDRAIL_MAX_GPUS,
    show_default=True,
    help="Guardrail: GPUs per run.",
)
@click.option(
    "--max-runs",
    type=click.IntRange(min=1),
    default=defaults.GUARDRAIL_MAX_RUNS,
    show_default=True,
    help="Guardrail: runs a sweep may launch.",
)
@click.option(
    "--allow-launcher",
    "allow_launchers",
    multiple=True,
    type=click.Choice(["local", "hydra-local", "submitit", "slurm"]),
    help="Guardrail: also allow this launcher [local, hydra-local]. Repeatable.",
)
@click.option(
    "--handoff",
    "handoff_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write handoff.json and HANDOFF.md (a plan for a human to run) into this folder.",
)
@opt.as_json
@click.pass_context
def doctor_cmd(
    ctx,
    framework,
    policy,
    config,
    launcher,
    probe_env,
    env_id,
    env_module,
    exp_name,
    policy_class,
    seed,
    episodes,
    max_timesteps,
    max_envs,
    max_wall_minutes,
    max_gpus,
    max_runs,
    allow_launchers,
    handoff_dir,
    as_json,
) -> None:
    """Preflight: check packages, files, a config and spaces before anything is loaded or launched.

    Exit 0: every requested check passed (and the config is within the guardrail); 1: a requirement is
    missing or invalid; 2: usage error; 3: the config exceeds or evades the guardrail. Doctor installs,
    downloads, unpickles, trains and launches nothing, and writes nothing but --handoff. No exit code
    authorizes training.
    """
    from zoo import api
    from zoo.doctor.config import Guardrail

    guardrail = Guardrail(
        max_timesteps=max_timesteps,
        max_envs=max_envs,
        max_wall_minutes=max_wall_minutes,
        max_gpus=max_gpus,
        max_runs=max_runs,
        allowed_launchers=tuple(dict.fromkeys([*Guardrail.allowed_launchers, *allow_launchers])),
    )
    diagnosis = api.diagnose(
        framework=framework,
        policy=policy,
        config=config,
        launcher=launcher,
        probe_env=probe_env,
        env_id=env_id,
        env_module=env_module,
        exp_name=exp_name,
        seed=seed,
        episodes=episodes,
        policy_class=policy_class,
        guardrail=guardrail,
        handoff=handoff_dir,
        command=_given_options(ctx),
        registry=ctx.obj.get("registry"),
    )
    if as_json:
        print_json(diagnosis.to_json())
    elif framework is None:
        render_environment(diagnosis.environment)
    else:
        render_checks(diagnosis)
    if diagnosis.handoff and not as_json:
        err().print(f"handoff: {', '.join(diagnosis.handoff)} (a plan: nothing was run)")
    ctx.exit(diagnosis.exit_code)


def _given_options(ctx: click.Context) -> list[str]:
    """The options typed on the command line, as arguments (a handoff records the command that made it)."""
    from click.core import ParameterSource

    args: list[str] = []
    for param in ctx.command.params:
        if (
            not isinstance(param, click.Option)
            or ctx.get_parameter_source(param.name) != ParameterSource.COMMANDLINE
        ):
            continue
        name = max(param.opts, key=len)
        value = ctx.params[param.name]
        if param.is_flag:
            args.append(name)
        else:
            args += [item for v in (value if param.multiple else [value]) for item in (name, str(v))]
    return args
