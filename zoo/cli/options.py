"""The ``zoo`` command's options, defined once: one name, one meaning, in every command that takes it.

``--seed`` is always the evaluation seed (envs and the policy's own randomness) and ``--run-seed``
always the training seed that picks a run (or a hub repo). Spellings of earlier releases stay as
hidden aliases for one release and say what to type instead.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import click

from zoo.defaults import DEFAULT_MAX_SECONDS, DEFAULT_MAX_STEPS, MAX_SECONDS_LIMIT

Decorator = Callable[[Callable], Callable]


def _stack(*decorators: Decorator) -> Decorator:
    def apply(func: Callable) -> Callable:
        for decorator in reversed(decorators):
            func = decorator(func)
        return func

    return apply


def alias(old: str, new: str, dest: str, **kind) -> Decorator:
    """A hidden ``old`` spelling of option ``new``: its value fills ``dest`` when ``new`` was not given,
    with a note saying what to type instead."""
    key = f"zoo.alias.{dest}"

    def remember(ctx: click.Context, _param: click.Parameter, value) -> None:
        if value is not None:
            click.echo(f"note: {old} is now {new}; {old} will be removed in the next release", err=True)
            ctx.meta[key] = value

    def apply(func: Callable) -> Callable:
        @functools.wraps(func)
        def command(*args, **kwargs):
            if kwargs.get(dest) in (None, False) and key in click.get_current_context().meta:
                kwargs[dest] = click.get_current_context().meta[key]
            return func(*args, **kwargs)

        return click.option(old, f"{dest}_alias", hidden=True, expose_value=False, callback=remember, **kind)(
            command
        )

    return apply


exp_name = click.option(
    "--exp-name",
    default=None,
    help="Which experiment (a registry name): what one run or model file is, or the runs "
    "to pick in a folder of several.",
)
env_id = click.option(
    "--env-id",
    default=None,
    help="Which env id: what one run or model file is for, or the runs to pick in a folder of several.",
)
run_seed = click.option(
    "--run-seed", type=int, default=None, help="Which training seed: the run to pick in a folder of several."
)
#: Which run, in the same words for every command that takes a PATH (eval, export, push, check): in a path
#: that holds one run (a run dir, a model file) --exp-name/--env-id say what it is, among several runs they
#: pick (zoo eval --all and zoo check go through every run picked).
target_options = _stack(exp_name, env_id, run_seed)
#: ``zoo check``'s: the same, and the earlier spelling of --run-seed (its --seed picked a run: one release more).
check_target_options = _stack(target_options, alias("--seed", "--run-seed", "run_seed", type=int))

seed = click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Evaluation seed: of the envs and of the policy's own randomness.",
)
episodes = _stack(
    click.option(
        "--episodes", "-n", type=click.IntRange(min=1), default=None, help="Episodes [registry default]."
    ),
    alias("--eval-episodes", "--episodes", "episodes", type=click.IntRange(min=1)),
)
num_envs = click.option(
    "--num-envs", type=click.IntRange(min=1), default=8, show_default=True, help="Vectorized envs."
)
device = click.option(
    "--device",
    type=click.Choice(["auto", "cpu", "cuda"]),
    default="auto",
    show_default=True,
    help="Where the policy runs (exported files: the CPU).",
)
mode = click.option(
    "--deterministic/--stochastic",
    default=None,
    help="Greedy/mean actions, or the registry's published eval mode [registry default].",
)
capture_video = click.option(
    "--capture-video",
    is_flag=True,
    help="Record env 0's episodes (a failure only warns; the paths are printed).",
)
trust_pickle = click.option(
    "--trust-pickle", is_flag=True, help="Allow full unpickling of a file you trust. Never for downloads."
)
trust_wrapper = click.option(
    "--trust-wrapper",
    "trust_wrappers",
    multiple=True,
    metavar="MODULE.CLASS",
    help="Run this env wrapper class that the run's config names but zoo's allowlist "
    "does not (its code runs). Repeatable.",
)
env_factory = click.option(
    "--env-factory",
    default=None,
    metavar="MODULE:FUNCTION",
    help="Evaluate on your own batched tensor env: FUNCTION(num_envs=, device=, seed=) "
    "returns it (your code runs; see docs/tensor-envs.md).",
)
env_module = click.option(
    "--env-module",
    default=None,
    metavar="MODULE",
    help="Import MODULE to register the env id first (e.g. myosuite); the same as "
    "--env-id MODULE:ID, gymnasium's syntax.",
)
policy_class = click.option(
    "--policy-class",
    default=None,
    metavar="MODULE:CLASS",
    help="Evaluate your own policy class: built as CLASS(env, seed) or CLASS(observation_space, "
    "action_space), acting with get_action, predict or act; TARGET is then optional, or a "
    "file its load(path) reads (your code runs; see docs/frameworks/custom.md).",
)
model_config = click.option(
    "--model-config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="YAML with the policy architecture when the checkpoint has none (skrl: params/agent.yaml format).",
)
engine = click.option(
    "--engine",
    type=click.Choice(["torch", "onnxruntime"]),
    default="torch",
    show_default=True,
    help="What computes the actions: torch (exact), or onnxruntime (the policy exported in "
    "memory, proven to act the same on the run's observations first; deterministic only).",
)
#: ``zoo eval FOLDER --all``: every run under the folder, resumable, on this process or on Ray.
sweep_options = _stack(
    click.option(
        "--all",
        "sweep",
        is_flag=True,
        help="Evaluate every run under TARGET (a folder), each writing its own eval.json; "
        "--exp-name/--env-id/--run-seed narrow them.",
    ),
    click.option(
        "--force",
        is_flag=True,
        help="With --all: evaluate again runs whose eval.json was made from the same model bytes "
        "and settings (skipped otherwise).",
    ),
    click.option(
        "--executor",
        type=click.Choice(["local", "ray"]),
        default="local",
        show_default=True,
        help="With --all: run in this process, or as Ray actors (the ray extra; docs/scale-out.md).",
    ),
    click.option(
        "--address",
        default=None,
        metavar="HOST:PORT",
        help="With --executor ray: the Ray cluster to use [a local Ray started for the sweep].",
    ),
    click.option(
        "--num-cpus",
        type=click.IntRange(min=1),
        default=None,
        help="With --executor ray: workers, one CPU each [every CPU Ray has].",
    ),
    click.option(
        "--num-gpus",
        type=click.FloatRange(min=0),
        default=0,
        help="With --executor ray: GPUs shared by the workers (runs evaluate on cuda) [0].",
    ),
)
as_json = click.option("--json", "as_json", is_flag=True, help="Machine-readable output on stdout.")
quiet = click.option("--quiet", "-q", is_flag=True, help="Only errors and warnings.")
hf_entity = click.option(
    "--hf-entity",
    default=None,
    envvar="ZOO_HF_ENTITY",
    help="Hub user or org for the registry's repo pattern (env: ZOO_HF_ENTITY).",
)
revision = click.option("--revision", default=None, help="Hub branch, tag or commit [main].")
#: Consent to read the hub (``zoo enjoy`` downloads a model; ``zoo push``'s dry run lists the repo to compare).
allow_download = click.option(
    "--allow-download",
    is_flag=True,
    help="Consent to read the hub: enjoy downloads a model not found locally or "
    "cached; push's dry run compares with the repo.",
)


def out(help_text: str) -> Decorator:
    return click.option(
        "--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), default=None, help=help_text
    )


#: What bounds a rollout (zoo.rollout_guard, its defaults in zoo.defaults): eval, enjoy, watch, sweeps and leaderboard --eval take both.
bounds = _stack(
    click.option(
        "--max-steps",
        type=click.IntRange(min=1),
        default=None,
        metavar="N",
        help="Steps an episode may run; one cut there is recorded as truncated [the env's own time "
        f"limit, else {DEFAULT_MAX_STEPS:,}].",
    ),
    click.option(
        "--max-seconds",
        type=click.FloatRange(min=0, min_open=True, max=MAX_SECONDS_LIMIT),
        default=None,
        metavar="SECONDS",
        help="Wall-time budget of an evaluation's rollouts; one not finished by then "
        f"fails and writes nothing [{DEFAULT_MAX_SECONDS:g}].",
    ),
)

#: How one evaluation runs: zoo eval and zoo enjoy take exactly these.
eval_options = _stack(seed, episodes, num_envs, device, mode, capture_video, bounds)


#: The flags that fill a :class:`~zoo.frameworks.LoadOptions`, by their click names (``--trust-wrapper`` fills
#: ``trusted_wrappers``); the flags of :class:`~zoo.eval_settings.EvalSettings` are named as its fields.
_LOAD_FLAGS = ("trust_pickle", "trust_wrappers", "env_factory", "policy_class", "model_config", "engine")


def typed(**fixed) -> Decorator:
    """Gathers the evaluation flags a command was given into one ``settings`` (an
    :class:`~zoo.eval_settings.EvalSettings`) and its loading flags into one ``load`` (a
    :class:`~zoo.frameworks.LoadOptions`), built once here and carried as they are through :mod:`zoo.api`: a new
    evaluation setting is a field there and a flag here. ``fixed``: settings the command has no flag for (``zoo
    push`` evaluates on the CPU). Goes below ``click.pass_context``, so that aliases have filled their flags."""

    def apply(func: Callable) -> Callable:
        @functools.wraps(func)
        def command(*args, **kwargs):
            from dataclasses import fields

            from zoo.eval_settings import EvalSettings
            from zoo.frameworks import LoadOptions

            given = {f.name: kwargs.pop(f.name) for f in fields(EvalSettings) if f.name in kwargs}
            if given or fixed:
                kwargs["settings"] = EvalSettings(**given, **fixed)
            load = {name: kwargs.pop(name) for name in _LOAD_FLAGS if name in kwargs}
            if load:
                load["trusted_wrappers"] = frozenset(load.pop("trust_wrappers", ()))
                kwargs["load"] = LoadOptions(**load)
            return func(*args, **kwargs)

        return command

    return apply
